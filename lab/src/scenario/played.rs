//! An event as the runner played it: when, on which host its target resolved to, and why
//! it failed if it did.

use serde::Serialize;

/// An event as the runner played it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlayedEvent {
    /// Its index in the file (`event[i]`).
    pub index: usize,
    /// When it was played, ms after t=0.
    pub t_ms: i64,
    /// Its action's name (`power-off`).
    pub action: String,
    /// The host it acted on, resolved (`@leader` → the leader's host).
    pub host: Option<String>,
    /// The VM it acted on.
    pub vm: Option<String>,
    /// The event in words.
    pub text: String,
    /// Why it could not be played (or was accepted when it had to be refused).
    pub error: Option<String>,
    /// The fleet's refusal, when the event allowed or expected one.
    pub refused: Option<String>,
}

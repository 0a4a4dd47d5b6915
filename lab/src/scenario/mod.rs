//! The HA scenario runner behind `pvefleet-lab sim run FILE`: a scenario file (a fleet, events at
//! times, expectations) played against real coordinator and agent processes with simulated
//! PVE, started by [`crate::Lab`]; a timeline of what happened, safety invariants checked on
//! every sample, expectations judged, recovery figures measured. docs/scenarios.md describes
//! the format, the invariants and the figures.
//!
//! ```text
//!  file ─parse+validate─▶ Scenario ─runner─▶ Lab (members, PVE simulators, agents)
//!                                     │  Stage: events ─▶ power, signals, nftables, faults
//!                                     │  sampler ─Sample/200 ms─▶ Timeline · Invariants ·
//!                                     ▼                            expectations · figures
//!                                  Outcome ─report─▶ header, timeline, verdict | JSON
//! ```
//!
//! Pure: [`mod@file`], `validate`, [`mod@read`] (but for its one file read), [`model`],
//! [`duration`], [`sample`], [`timeline`], [`invariants`], [`expect`], [`figures`],
//! [`played`], [`outcome`], [`report`]. Effects: [`isolation`] (the private network
//! namespace), `bring_up`, [`sampler`], [`stage`], [`runner`] (which tells an [`Observer`]).

mod bring_up;
pub mod disturbance;
pub mod duration;
pub mod error;
pub mod expect;
pub mod figures;
pub mod file;
pub mod invariants;
pub mod isolation;
pub mod load;
pub mod model;
pub mod observer;
pub mod outcome;
pub mod played;
pub mod preload;
pub mod read;
pub mod report;
pub mod runner;
pub mod sample;
pub mod sampler;
pub mod stage;
pub mod timeline;
mod validate;

#[cfg(test)]
mod tests;

pub use error::ScenarioError;
pub use isolation::Isolation;
pub use model::{Action, Check, Expectation, Scenario, Target};
pub use observer::Observer;
pub use outcome::{End, Outcome};
pub use read::{load, parse};
pub use runner::{RunOptions, run};
pub use timeline::TimelineEntry;

//! [`PollPolicy`]: how a client polls a running task (back-off between polls, how much log a
//! failure keeps). Its own file because both the client (which carries one) and the task
//! waiting (which follows it) need it.

use std::time::Duration;

/// How often a running task is polled.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PollPolicy {
    /// First delay between polls.
    pub initial: Duration,
    /// Multiplier per poll.
    pub factor: f64,
    /// Largest delay between polls.
    pub max: Duration,
    /// Lines of log kept in a [`PveError::TaskFailed`](crate::PveError::TaskFailed).
    pub log_tail: u32,
}

impl Default for PollPolicy {
    fn default() -> Self {
        Self {
            initial: Duration::from_millis(50),
            factor: 1.5,
            max: Duration::from_secs(2),
            log_tail: 20,
        }
    }
}

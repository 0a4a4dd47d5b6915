//! When a failed call is tried again, and how long to wait in between.
//!
//! Only what is safe is retried: reads (GET) on any transient failure, and every method when
//! the connection could not be made (nothing was sent). Creates are the one write retried after
//! an ambiguous failure, because a VMID can exist only once and [`crate::Client`] recognizes its
//! own earlier attempt (see `create_retry`).

use std::time::Duration;

use crate::error::PveError;
use crate::request::Method;

/// Exponential back-off with a cap.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// Total attempts including the first (1 = no retry).
    pub attempts: u32,
    /// Delay before the first retry.
    pub initial: Duration,
    /// Multiplier per retry.
    pub factor: f64,
    /// Upper bound of one delay.
    pub max: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            attempts: 5,
            initial: Duration::from_millis(200),
            factor: 2.0,
            max: Duration::from_secs(5),
        }
    }
}

impl RetryPolicy {
    /// Never retry.
    pub fn none() -> Self {
        Self {
            attempts: 1,
            ..Self::default()
        }
    }

    /// The delay before retry number `n` (1-based).
    pub fn delay(&self, n: u32) -> Duration {
        let exp = self
            .factor
            .powi(i32::try_from(n.saturating_sub(1)).unwrap_or(i32::MAX));
        let d = self.initial.as_secs_f64() * exp;
        Duration::from_secs_f64(d.min(self.max.as_secs_f64()))
    }

    /// Whether `err` on a call of `method` may be retried.
    pub fn retryable(method: Method, err: &PveError) -> bool {
        if err.is_connect() {
            return true;
        }
        method.is_idempotent_read() && err.is_transient()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_grow_and_cap() {
        let p = RetryPolicy::default();
        assert_eq!(p.delay(1), Duration::from_millis(200));
        assert_eq!(p.delay(2), Duration::from_millis(400));
        assert_eq!(p.delay(10), Duration::from_secs(5));
    }

    #[test]
    fn only_safe_calls_are_retryable() {
        let connect = PveError::Connect {
            endpoint: "e".into(),
            reason: "refused".into(),
        };
        let lost = PveError::Transport {
            endpoint: "e".into(),
            method: "POST",
            path: "/x".into(),
            reason: "reset".into(),
        };
        let busy = PveError::Api {
            method: "GET",
            path: "/x".into(),
            status: 503,
            reason: "Service Unavailable".into(),
            message: "Service Unavailable".into(),
            errors: Default::default(),
        };
        let real = PveError::Api {
            method: "GET",
            path: "/x".into(),
            status: 500,
            reason: "VM 100 not running".into(),
            message: "VM 100 not running".into(),
            errors: Default::default(),
        };
        assert!(RetryPolicy::retryable(Method::Post, &connect));
        assert!(!RetryPolicy::retryable(Method::Post, &lost));
        assert!(RetryPolicy::retryable(Method::Get, &lost));
        assert!(RetryPolicy::retryable(Method::Get, &busy));
        assert!(!RetryPolicy::retryable(Method::Post, &busy));
        assert!(!RetryPolicy::retryable(Method::Get, &real));
    }
}

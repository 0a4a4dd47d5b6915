//! A VIP health check's verdict over time, with keepalived's `track_script` semantics: a check
//! that is down goes up after `rise` consecutive successes, one that is up goes down after
//! `fall` consecutive failures. A single flap therefore never moves a VIP, and a host that
//! starts is down until it has passed `rise` times (it must earn the VIP).
//!
//! ```text
//!   Down ──(rise successes in a row)──▶ Up ──(fall failures in a row)──▶ Down
//!   (a result of the other kind resets the count)
//! ```

/// How many results in a row flip a verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RiseFall {
    /// Successes in a row that make a down check up (keepalived's default: 1).
    pub rise: u32,
    /// Failures in a row that make an up check down (keepalived's default: 1).
    pub fall: u32,
}

impl RiseFall {
    /// The allowed range of both counts.
    pub const RANGE: std::ops::RangeInclusive<u32> = 1..=100;

    /// Checks both counts.
    ///
    /// # Errors
    /// A message naming the field and the allowed range.
    pub fn validate(self) -> Result<(), String> {
        for (field, value) in [("rise", self.rise), ("fall", self.fall)] {
            if !Self::RANGE.contains(&value) {
                return Err(format!(
                    "{field} = {value} is not allowed: expected {} to {} consecutive results",
                    Self::RANGE.start(),
                    Self::RANGE.end()
                ));
            }
        }
        Ok(())
    }
}

/// The verdict of one check on one host, fed its results in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Health {
    up: bool,
    /// Results in a row against the current verdict.
    against: u32,
}

impl Default for Health {
    /// Down: a host earns a VIP by passing `rise` checks.
    fn default() -> Health {
        Health {
            up: false,
            against: 0,
        }
    }
}

impl Health {
    /// Whether the check is up.
    pub fn is_up(self) -> bool {
        self.up
    }

    /// The verdict after one more result; `true` if the verdict flipped.
    pub fn record(&mut self, passed: bool, counts: RiseFall) -> bool {
        if passed == self.up {
            self.against = 0;
            return false;
        }
        self.against += 1;
        let needed = if self.up { counts.fall } else { counts.rise };
        if self.against >= needed {
            self.up = passed;
            self.against = 0;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const COUNTS: RiseFall = RiseFall { rise: 2, fall: 3 };

    fn feed(results: &[bool]) -> Vec<bool> {
        let mut h = Health::default();
        results
            .iter()
            .map(|&r| {
                h.record(r, COUNTS);
                h.is_up()
            })
            .collect()
    }

    #[test]
    fn a_check_rises_after_rise_successes_and_falls_after_fall_failures() {
        assert!(!Health::default().is_up(), "a new host must earn the VIP");
        assert_eq!(feed(&[true, true]), [false, true]);
        assert_eq!(
            feed(&[true, true, false, false, false]),
            [false, true, true, true, false]
        );
    }

    #[test]
    fn a_result_of_the_other_kind_resets_the_count() {
        // Two failures, a success, two failures: never three in a row, stays up.
        let up = feed(&[true, true, false, false, true, false, false]);
        assert!(up[1..].iter().all(|&u| u), "{up:?}");
        // Down: success, failure, success: never two in a row, stays down.
        assert_eq!(feed(&[true, false, true]), [false, false, false]);
    }

    #[test]
    fn a_flip_is_reported_once() {
        let mut h = Health::default();
        let counts = RiseFall { rise: 1, fall: 1 };
        assert!(h.record(true, counts));
        assert!(!h.record(true, counts));
        assert!(h.record(false, counts));
        assert!(!h.record(false, counts));
    }

    #[test]
    fn counts_outside_their_range_are_refused_by_name() {
        assert!(COUNTS.validate().is_ok());
        let e = RiseFall { rise: 0, fall: 3 }.validate().unwrap_err();
        assert!(e.starts_with("rise = 0"), "{e}");
        let e = RiseFall { rise: 1, fall: 101 }.validate().unwrap_err();
        assert!(e.starts_with("fall = 101"), "{e}");
    }
}

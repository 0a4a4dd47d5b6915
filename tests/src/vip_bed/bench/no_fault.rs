//! Watching the pvefleet testbed while no fault is played: how often the VIP changed owner
//! (its epoch, +1 at every change of owner, read from the leader with `pvefleet vip ls`), and
//! what the client saw (the longest time without an answer, the most hosts answering or
//! holding at once). With a [`Hog`](super::hog::Hog) running this is the "no spurious move
//! under load" check of docs/design/vips.md: a move there is a lease a majority saw lapse.
//!
//! The epoch is compared between polls, so a move and a move back between two polls still
//! count twice. A poll that fails (the CLI timing out on a saturated machine) is counted, not
//! fatal; a probe or sampler that stops is.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use crate::vip_bed::VipBed;
use crate::vip_bed::error::BedError;
use crate::vip_bed::record::Stats;

/// What a watch saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Watched {
    /// How long it watched.
    pub length: Duration,
    /// The epoch at the first and at the last successful poll.
    pub epochs: Option<(u64, u64)>,
    /// Owner changes counted from the epoch, poll to poll.
    pub moves: u64,
    /// The owners seen, in order of first sight.
    pub owners: Vec<String>,
    /// Polls made, and how many failed.
    pub polls: (usize, usize),
    /// What the record shows over the watch.
    pub stats: Stats,
}

/// Watches `bed` for `length`, asking the leader every `every`.
///
/// # Errors
/// [`BedError`] if a probe, the sampler or a responder stopped.
pub fn watch(bed: &mut VipBed, length: Duration, every: Duration) -> Result<Watched, BedError> {
    let from = bed.record.mark("watch without fault");
    let started = Instant::now();
    let end = started + length;
    let mut watched = Watched {
        length,
        epochs: None,
        moves: 0,
        owners: Vec::new(),
        polls: (0, 0),
        stats: Stats::default(),
    };
    let mut seen = BTreeSet::new();
    let mut next = started;
    // Bounded: one poll per `every` until the end (a slow poll only makes fewer).
    while Instant::now() < end {
        bed.check_watchers()?;
        watched.polls.0 += 1;
        match bed.vip_status() {
            Ok(status) => {
                let epoch = status.vip.epoch;
                watched.epochs = Some(match watched.epochs {
                    None => (epoch, epoch),
                    Some((first, last)) => {
                        watched.moves += epoch.saturating_sub(last);
                        (first, epoch)
                    }
                });
                if let Some(owner) = status.owner_name
                    && seen.insert(owner.clone())
                {
                    watched.owners.push(owner);
                }
            }
            Err(_) => watched.polls.1 += 1,
        }
        next += every;
        let now = Instant::now();
        if next > now {
            std::thread::sleep((next.min(end)) - now);
        } else {
            next = now;
        }
    }
    let to = bed.record.mark("watch ends");
    watched.length = started.elapsed();
    watched.stats = bed.record.stats(from, to);
    Ok(watched)
}

//! The two orders the scheduler imposes: hosts by (name, id) before anything else (so sums,
//! and thus choices, do not depend on the caller's order), and the explanation's order after
//! (scored hosts best first, then excluded hosts; ties by name, then id; see
//! [`super::explain`]'s `rank`, which this order equals).
//!
//! Both run once per placement over every host, so they avoid what costs there: a call into
//! libc's `memcmp` for every pair of names, and moving whole verdicts around while sorting
//! (the verdicts are built in their final order instead, from a sorted list of small keys).

use std::cmp::Ordering;

use super::inputs::HostView;
use super::topsis::Scores;

/// Hosts sorted by (name, id), stably (hosts equal in both keep the caller's order).
pub(crate) struct SortedHosts<'a> {
    /// The hosts in order.
    pub hosts: Vec<&'a HostView>,
    /// Whether two hosts share both name and id (then [`Self::group`] matters).
    duplicates: bool,
}

impl<'a> SortedHosts<'a> {
    /// Sorts `hosts`; a list already in order (the usual case: the caller keeps its views
    /// sorted) costs one comparison per host.
    pub(crate) fn of(hosts: &'a [HostView]) -> SortedHosts<'a> {
        let mut sorted: Vec<&HostView> = hosts.iter().collect();
        let mut duplicates = false;
        let mut in_order = true;
        for pair in sorted.windows(2) {
            match host_cmp(pair[0], pair[1]) {
                Ordering::Less => {}
                Ordering::Equal => duplicates = true,
                Ordering::Greater => {
                    in_order = false;
                    break;
                }
            }
        }
        if !in_order {
            sorted.sort_by(|a, b| host_cmp(a, b));
            duplicates = sorted
                .windows(2)
                .any(|pair| host_cmp(pair[0], pair[1]) == Ordering::Equal);
        }
        SortedHosts {
            hosts: sorted,
            duplicates,
        }
    }

    /// The position of the first host with the same name and id as the host at `index`: hosts
    /// of one group tie in the explanation's order.
    fn group(&self, index: usize) -> usize {
        if !self.duplicates {
            return index;
        }
        let host = self.hosts[index];
        let mut first = index;
        while first > 0 && host_cmp(self.hosts[first - 1], host) == Ordering::Equal {
            first -= 1;
        }
        first
    }
}

/// By name, then id.
fn host_cmp(a: &HostView, b: &HostView) -> Ordering {
    name_cmp(&a.name, &b.name).then(a.id.cmp(&b.id))
}

/// `a.cmp(b)`, comparing eight bytes at a time: names are short, and a call into `memcmp`
/// costs more than comparing them.
fn name_cmp(a: &str, b: &str) -> Ordering {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let (left, _) = a.as_chunks::<8>();
    let (right, _) = b.as_chunks::<8>();
    for (x, y) in left.iter().zip(right) {
        // Big-endian: the first differing byte decides, as in lexicographic order.
        match u64::from_be_bytes(*x).cmp(&u64::from_be_bytes(*y)) {
            Ordering::Equal => {}
            unequal => return unequal,
        }
    }
    // At least one of the rests is shorter than eight bytes.
    let done = left.len().min(right.len()) * 8;
    let (a, b) = (&a[done..], &b[done..]);
    a.iter()
        .zip(b)
        .find(|(x, y)| x != y)
        .map_or_else(|| a.len().cmp(&b.len()), |(x, y)| x.cmp(y))
}

/// A scored host's place in the explanation: higher closeness first, then the host's
/// position (which is by name, then id).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Scored {
    /// The host's position in [`SortedHosts::hosts`].
    pub host: usize,
    /// Where its scores are in the [`Scores`].
    pub row: usize,
}

/// Sorts scored hosts best first, ties by name, then id (the hosts' order). `scored` comes in
/// the hosts' order.
pub(crate) fn sort_scored(scored: &mut Vec<Scored>, scores: &Scores) {
    const POSITION_BITS: u32 = 24;
    let keys: Option<Vec<u64>> = (scored.len() < 1 << POSITION_BITS)
        .then(|| {
            scored
                .iter()
                .enumerate()
                .map(|(position, s)| {
                    // Closeness descending in the high bits, the position (the hosts' order)
                    // in the low ones.
                    let descending = ((1u64 << 40) - 1).checked_sub(scores.units(s.row)?)?;
                    Some(descending << POSITION_BITS | position as u64)
                })
                .collect()
        })
        .flatten();
    match keys {
        Some(mut keys) => {
            // Plain distinct integers: the cheapest sort there is, and stability is moot.
            keys.sort_unstable();
            let unsorted = std::mem::take(scored);
            let mask = (1u64 << POSITION_BITS) - 1;
            scored.extend(keys.iter().map(|key| unsorted[(key & mask) as usize]));
        }
        // Some closeness is not a whole number of 1e-12 units below 2^40 (never from TOPSIS).
        None => scored.sort_by(|a, b| {
            let (x, y) = (scores.closeness(a.row), scores.closeness(b.row));
            y.total_cmp(&x).then(a.host.cmp(&b.host))
        }),
    }
}

/// The first host of [`sort_scored`]'s order, without sorting: the same keys (closeness in
/// whole 1e-12 units when every host has one, else the closeness itself), ties to the host
/// first in the hosts' order.
pub(crate) fn best_scored(scored: &[Scored], scores: &Scores) -> Option<Scored> {
    const MAX_UNITS: u64 = (1u64 << 40) - 1;
    let mut best: Option<(u64, Scored)> = None;
    let mut by_units = scored.len() < 1 << 24;
    for s in scored {
        match scores.units(s.row).filter(|&u| u <= MAX_UNITS) {
            // Strictly greater: on a tie the earlier host stays.
            Some(units) if by_units => {
                if best.is_none_or(|(top, _)| units > top) {
                    best = Some((units, *s));
                }
            }
            _ => {
                by_units = false;
                break;
            }
        }
    }
    if by_units {
        return best.map(|(_, s)| s);
    }
    scored.iter().copied().min_by(|a, b| {
        let (x, y) = (scores.closeness(a.row), scores.closeness(b.row));
        y.total_cmp(&x).then(a.host.cmp(&b.host))
    })
}

/// Hosts excluded by the filters and rules (`first`) and those node affinity or spreading then
/// excluded (`then`), each list in the hosts' order, merged in the explanation's order: by name,
/// then id, and for hosts equal in both (which tie), in the order they were excluded.
pub(crate) fn merge_excluded<T>(
    sorted: &SortedHosts<'_>,
    first: Vec<(usize, T)>,
    then: Vec<(usize, T)>,
) -> Vec<(usize, T)> {
    if then.is_empty() {
        return first;
    }
    let mut merged = Vec::with_capacity(first.len() + then.len());
    let mut first = first.into_iter().peekable();
    let mut then = then.into_iter().peekable();
    loop {
        let take_first = match (first.peek(), then.peek()) {
            (Some(a), Some(b)) => sorted.group(a.0) <= sorted.group(b.0),
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => break,
        };
        let next = if take_first {
            first.next()
        } else {
            then.next()
        };
        merged.extend(next);
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_compare_as_strings_do() {
        let names = [
            "",
            "a",
            "b",
            "ab",
            "pve",
            "pve-0001",
            "pve-0002",
            "pve-00010",
            "pve-0001a",
            "pve-00011",
            "pve-0001",
            "Pve-0001",
            "pve-0001-long-suffix-a",
            "pve-0001-long-suffix-b",
            "pve-0001-long-suffix",
            "zzzzzzzzzzzzzzzzz",
            "zzzzzzzzzzzzzzzz",
            "é",
            "e\u{301}",
            "pve-é",
            "pve-\u{7f}",
            "pve-\u{80}",
        ];
        for a in names {
            for b in names {
                assert_eq!(name_cmp(a, b), a.cmp(b), "{a:?} vs {b:?}");
            }
        }
    }
}

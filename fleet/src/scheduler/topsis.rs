//! TOPSIS (technique for order of preference by similarity to ideal solution) exactly as PVE's
//! static scheduler scores nodes (`proxmox-resource-scheduling`: `pve_static.rs`, `topsis.rs`):
//! each host is judged by what the CPU and memory utilization of the hosts would be if the VM
//! went there.
//!
//! - The alternatives are every host counted (the online ones, as PVE counts every online
//!   node), not only those the fleet's filters let through: the averages and the ideals are
//!   over all of them, and the scheduler then picks among the eligible.
//! - Per host, the criteria are the root mean square of the hosts' utilizations (which weighs
//!   how loaded a host already is) and their maximum, for CPU and memory, each plus 1 (so tiny
//!   differences are not boosted: 1.004 is only slightly more than 1.002), all minimized, with
//!   PVE's weights 1, 2, 5, 10 (normalized by their sum).
//! - Per criterion the column is divided by its L2 norm; the ideal takes the lowest value of
//!   each column, the anti-ideal the highest; a host's closeness is its weighted distance to the
//!   anti-ideal over the sum of both distances (1 = ideal, 0 = worst or all equal).
//!
//! `fleet/testdata/pve_static_cases.txt` holds 1,200 cases computed from PVE's formulas by an
//! independent program (`pve_static_cases.py` beside it); the tests check the same scores and
//! the same order on every one.

/// The four criteria, all minimized.
pub(crate) const N_CRITERIA: usize = 4;

/// PVE's weights for average CPU, highest CPU, average memory, highest memory.
const WEIGHTS: [f64; N_CRITERIA] = [1.0, 2.0, 5.0, 10.0];

/// PVE's offset added to every criterion before scoring.
const OFFSET: f64 = 1.0;

/// Utilization of every counted host (used / capacity), before placing the VM.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Utilization {
    /// vCPUs committed on the host.
    pub cpu_used: f64,
    /// vCPUs the VM adds if placed there (PVE: a VM without a CPU count adds the host's CPUs).
    pub cpu_add: f64,
    /// The host's CPUs.
    pub cpu_total: f64,
    /// Memory committed on the host.
    pub mem_used: f64,
    /// Memory the VM adds if placed there.
    pub mem_add: f64,
    /// The host's memory.
    pub mem_total: f64,
}

impl Utilization {
    fn cpu_added(&self) -> f64 {
        if self.cpu_add == 0.0 {
            self.cpu_total
        } else {
            self.cpu_add
        }
    }
}

/// What placing the VM on each counted host would give: the criteria (utilizations, without
/// PVE's offset, for people) and the closeness, in input order.
///
/// Laid out in columns so that each step is one plain loop over the hosts: the divisions and
/// square roots, which cost most, then run two at a time. Every value is computed with the
/// same floating-point operations in the same order as the definitions below say, so the
/// figures (and the choice) are exact, not approximations of them.
#[derive(Debug, Clone, Default)]
pub(crate) struct Scores {
    /// `rms_cpu`, `max_cpu`, `rms_mem`, `max_mem`, one column each.
    criteria: [Vec<f64>; N_CRITERIA],
    /// Closeness times [`SCALE`], rounded: integral, so it orders hosts exactly.
    scaled: Vec<f64>,
}

/// Closeness is rounded to 12 places: scores are kept as integers in units of 1e-12.
const SCALE: f64 = 1e12;

impl Scores {
    /// The criteria of the host at `index`: `[rms_cpu, max_cpu, rms_mem, max_mem]`.
    pub(crate) fn row(&self, index: usize) -> [f64; N_CRITERIA] {
        self.criteria.each_ref().map(|column| column[index])
    }

    /// The closeness of the host at `index`, in `[0, 1]`.
    pub(crate) fn closeness(&self, index: usize) -> f64 {
        self.scaled[index] / SCALE
    }

    /// The closeness of the host at `index` in units of 1e-12, when it is a whole number
    /// below 2^40 (always, for closeness in `[0, 1]`): sortable as an integer.
    pub(crate) fn units(&self, index: usize) -> Option<u64> {
        let scaled = self.scaled[index];
        // The bounds also reject NaN.
        (scaled >= 0.0 && scaled < (1u64 << 40) as f64).then_some(scaled as u64)
    }
}

/// Scores every host: its criteria and its closeness, each host's utilization read
/// with `utilization` (so the caller need not gather them first).
pub(crate) fn scores<T>(hosts: &[T], utilization: impl Fn(&T) -> Utilization) -> Scores {
    let criteria = criteria_columns(hosts, utilization);
    let scaled = scaled_closeness(&criteria);
    Scores { criteria, scaled }
}

/// Criteria values for every host: `[rms_cpu, max_cpu, rms_mem, max_mem]` over all hosts with
/// the VM placed on that one, in input order, without PVE's offset (utilizations, for people;
/// [`closeness`] adds it).
#[cfg(test)]
pub(crate) fn criteria_all(hosts: &[Utilization]) -> Vec<[f64; N_CRITERIA]> {
    let columns = criteria_columns(hosts, |u| *u);
    (0..hosts.len())
        .map(|i| columns.each_ref().map(|column| column[i]))
        .collect()
}

/// Closeness to the ideal of each alternative (rows of [`criteria_all`]), in input order, each
/// in `[0, 1]`.
#[cfg(test)]
pub(crate) fn closeness(matrix: &[[f64; N_CRITERIA]]) -> Vec<f64> {
    let columns: [Vec<f64>; N_CRITERIA] =
        std::array::from_fn(|c| matrix.iter().map(|row| row[c]).collect());
    scaled_closeness(&columns)
        .into_iter()
        .map(|scaled| scaled / SCALE)
        .collect()
}

/// The criteria as columns.
///
/// Linear in the number of hosts: placing the VM on one host changes only that host's
/// utilization, so each candidate's sums of squares are the common sums with its own term
/// replaced, and its maxima the larger of its new utilization and the highest of the *other*
/// hosts (the top two of each column are kept for that).
fn criteria_columns<T>(
    hosts: &[T],
    utilization: impl Fn(&T) -> Utilization,
) -> [Vec<f64>; N_CRITERIA] {
    let (rms_cpu, max_cpu) = resource(hosts, |h| {
        let u = utilization(h);
        (u.cpu_used, u.cpu_added(), u.cpu_total)
    });
    let (rms_mem, max_mem) = resource(hosts, |h| {
        let u = utilization(h);
        (u.mem_used, u.mem_add, u.mem_total)
    });
    [rms_cpu, max_cpu, rms_mem, max_mem]
}

/// One resource's root mean square and maximum utilization over the hosts, for each host
/// taking the VM; `load` gives a host's used, added and total amounts of the resource.
fn resource<T>(hosts: &[T], load: impl Fn(&T) -> (f64, f64, f64)) -> (Vec<f64>, Vec<f64>) {
    let before: Vec<f64> = hosts
        .iter()
        .map(|h| {
            let (used, _, total) = load(h);
            ratio(used, total)
        })
        .collect();
    // Utilizations with the VM placed, kept where the maxima go.
    let mut max: Vec<f64> = hosts
        .iter()
        .map(|h| {
            let (used, added, total) = load(h);
            ratio(used + added, total)
        })
        .collect();
    // Summed in host order, one term after the other: the order fixes the last bits.
    let squares = before.iter().fold(-0.0, |sum, b| sum + b * b);
    let top = TopTwo::of(before.iter().copied());
    let n = hosts.len().max(1) as f64;
    // Rounding can leave a tiny negative sum when one huge term is swapped out.
    let rms = before
        .iter()
        .zip(&max)
        .map(|(&b, &a)| ((squares - b * b + a * a).max(0.0) / n).sqrt())
        .collect();
    for (i, m) in max.iter_mut().enumerate() {
        *m = top.max_without(i).max(*m);
    }
    (rms, max)
}

/// The two highest values of a column with the index of the highest.
struct TopTwo {
    first: f64,
    first_at: usize,
    second: f64,
}

impl TopTwo {
    fn of(values: impl Iterator<Item = f64>) -> TopTwo {
        let mut top = TopTwo {
            first: 0.0,
            first_at: usize::MAX,
            second: 0.0,
        };
        for (i, v) in values.enumerate() {
            if top.first_at == usize::MAX || v > top.first {
                top.second = top.first;
                top.first = v;
                top.first_at = i;
            } else if v > top.second {
                top.second = v;
            }
        }
        top
    }

    /// The highest value of every entry but `index` (0 when there is none).
    fn max_without(&self, index: usize) -> f64 {
        if index == self.first_at {
            self.second
        } else {
            self.first
        }
    }
}

/// A zero capacity cannot pass the capacity filters; guard anyway so a score is never NaN.
fn ratio(used: f64, total: f64) -> f64 {
    if total > 0.0 { used / total } else { used }
}

/// Closeness to the ideal of each alternative (columns of criteria), in input order, times
/// [`SCALE`] and rounded.
///
/// One criterion at a time: its column is normalized, its best and worst values found, and
/// each host's weighted squared distances to them added to the host's running sums (in
/// criterion order, as the distance's definition sums them).
fn scaled_closeness(criteria: &[Vec<f64>; N_CRITERIA]) -> Vec<f64> {
    let weight_sum: f64 = WEIGHTS.iter().sum();
    let n = criteria[0].len();
    let mut normalized = vec![0.0; n];
    let mut to_best = vec![0.0; n];
    let mut to_worst = vec![0.0; n];
    for (c, column) in criteria.iter().enumerate() {
        // Summed in host order, one term after the other.
        let squares = column.iter().fold(-0.0, |sum, value| {
            let x = OFFSET + value;
            sum + x * x
        });
        let norm = squares.sqrt();
        for (out, value) in normalized.iter_mut().zip(column) {
            let x = OFFSET + value;
            *out = if norm > 0.0 { x / norm } else { x };
        }
        let best = normalized.iter().copied().fold(f64::INFINITY, f64::min);
        let worst = normalized.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let weight = WEIGHTS[c] / weight_sum;
        let term = |x: f64, target: f64| {
            let d = weight * (x - target);
            d * d
        };
        for ((x, b), w) in normalized.iter().zip(&mut to_best).zip(&mut to_worst) {
            // The first term starts the sums (a sum from -0.0 would give the same).
            if c == 0 {
                (*b, *w) = (term(*x, best), term(*x, worst));
            } else {
                (*b, *w) = (*b + term(*x, best), *w + term(*x, worst));
            }
        }
    }
    for (b, w) in to_best.iter().zip(&mut to_worst) {
        let (b, w0) = (b.sqrt(), w.sqrt());
        let total = b + w0;
        let score = if total > 0.0 { w0 / total } else { 0.0 };
        // Equal hosts may differ in the last bits (sums in another order): to 12 places they
        // tie, and the tie is broken by name, the same for every order of input.
        *w = round(score * SCALE);
    }
    to_worst
}

/// `x.round()` (half away from zero), without a call into libm for the values closeness
/// takes (`0 <= x < 2^52`, where `x - trunc(x)` is exact).
fn round(x: f64) -> f64 {
    if (0.0..4_503_599_627_370_496.0).contains(&x) {
        let whole = x as u64;
        let up = x - whole as f64 >= 0.5;
        (whole + u64::from(up)) as f64
    } else {
        x.round()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The quadratic definition the linear computation must equal (sums are of squares).
    fn criteria_naive(hosts: &[Utilization], target: usize) -> [f64; N_CRITERIA] {
        let (mut sum_cpu, mut max_cpu, mut sum_mem, mut max_mem) = (0.0, 0.0_f64, 0.0, 0.0_f64);
        for (i, h) in hosts.iter().enumerate() {
            let (ca, ma) = if i == target {
                (h.cpu_add, h.mem_add)
            } else {
                (0.0, 0.0)
            };
            let cpu = ratio(h.cpu_used + ca, h.cpu_total);
            let mem = ratio(h.mem_used + ma, h.mem_total);
            sum_cpu += cpu * cpu;
            max_cpu = max_cpu.max(cpu);
            sum_mem += mem * mem;
            max_mem = max_mem.max(mem);
        }
        let n = hosts.len().max(1) as f64;
        [(sum_cpu / n).sqrt(), max_cpu, (sum_mem / n).sqrt(), max_mem]
    }

    #[test]
    fn linear_criteria_equal_the_definition_for_every_candidate() {
        let host = |cpu_used: f64, cpu_total: f64, mem_used: f64, mem_total: f64| Utilization {
            cpu_used,
            cpu_add: 4.0,
            cpu_total,
            mem_used,
            mem_add: 4096.0,
            mem_total,
        };
        let cases: Vec<Vec<Utilization>> = vec![
            vec![host(0.0, 16.0, 0.0, 65536.0)],
            vec![
                host(8.0, 16.0, 1024.0, 65536.0),
                host(8.0, 16.0, 1024.0, 65536.0),
            ],
            vec![
                host(30.0, 32.0, 60000.0, 65536.0),
                host(2.0, 8.0, 1000.0, 16384.0),
                host(10.0, 64.0, 200000.0, 262144.0),
                host(0.0, 4.0, 0.0, 8192.0),
            ],
        ];
        for hosts in &cases {
            let all = criteria_all(hosts);
            for (i, row) in all.iter().enumerate() {
                let want = criteria_naive(hosts, i);
                for c in 0..N_CRITERIA {
                    assert!(
                        (row[c] - want[c]).abs() < 1e-12,
                        "host {i} criterion {c}: {} != {}",
                        row[c],
                        want[c]
                    );
                }
            }
        }
    }

    /// One line of `pve_static_cases.txt`: the VM, the hosts, PVE's scores and ranking.
    struct Case {
        hosts: Vec<(String, Utilization)>,
        scores: Vec<f64>,
        ranking: Vec<String>,
    }

    fn cases() -> Vec<Case> {
        let text = include_str!("../../testdata/pve_static_cases.txt");
        text.lines()
            .filter(|l| !l.starts_with('#'))
            .map(|line| {
                let parts: Vec<&str> = line.split(" | ").collect();
                let (cpus, mem) = parts[0]
                    .strip_prefix("vm=")
                    .and_then(|v| v.split_once(','))
                    .unwrap();
                let (cpu_add, mem_add): (f64, f64) = (cpus.parse().unwrap(), mem.parse().unwrap());
                let hosts = parts[1]
                    .split(' ')
                    .map(|h| {
                        let f: Vec<&str> = h.split(':').collect();
                        let n = |i: usize| f[i].parse::<f64>().unwrap();
                        let u = Utilization {
                            cpu_used: n(3),
                            cpu_add,
                            cpu_total: n(1),
                            mem_used: n(4),
                            mem_add,
                            mem_total: n(2),
                        };
                        (f[0].to_string(), u)
                    })
                    .collect();
                Case {
                    hosts,
                    scores: parts[2].split(' ').map(|s| s.parse().unwrap()).collect(),
                    ranking: parts[3].split(' ').map(str::to_string).collect(),
                }
            })
            .collect()
    }

    #[test]
    fn scores_and_ranks_hosts_exactly_as_pves_static_scheduler() {
        let cases = cases();
        assert_eq!(cases.len(), 1200);
        for (k, case) in cases.iter().enumerate() {
            let utilization: Vec<Utilization> = case.hosts.iter().map(|h| h.1).collect();
            let scores = closeness(&criteria_all(&utilization));
            for (i, (ours, pve)) in scores.iter().zip(&case.scores).enumerate() {
                assert!(
                    (ours - pve).abs() < 1e-9,
                    "case {k}, host {i}: {ours} where PVE scores {pve}"
                );
            }
            // Best first, ties by name (the scheduler's order among equally scored hosts).
            // `closeness` rounds to 12 places, so equal hosts tie exactly.
            let mut order: Vec<usize> = (0..scores.len()).collect();
            order.sort_by(|&a, &b| {
                scores[b]
                    .total_cmp(&scores[a])
                    .then_with(|| case.hosts[a].0.cmp(&case.hosts[b].0))
            });
            let names: Vec<&str> = order.iter().map(|&i| case.hosts[i].0.as_str()).collect();
            assert_eq!(names, case.ranking, "case {k}");
        }
    }

    /// Worked by hand: two hosts of 8 CPUs and 16 GiB, `a` with 4 vCPUs and 8 GiB committed,
    /// `b` empty; a VM of 4 vCPUs and 8 GiB.
    ///
    /// On `a`: utilizations a = 1.0, b = 0: RMS sqrt((1 + 0) / 2) = 0.7071, max 1.0 (CPU and
    /// memory alike). On `b`: a = 0.5, b = 0.5: RMS 0.5, max 0.5. With the offset the rows are
    /// [1.7071, 2, 1.7071, 2] and [1.5, 1.5, 1.5, 1.5]; `b` is the lowest in every column, so it
    /// is the ideal (closeness 1) and `a` the anti-ideal (0). Without PVE's RMS (plain averages
    /// 0.5 and 0.5) the averages could not tell them apart; the maxima still would.
    #[test]
    fn a_case_worked_by_hand() {
        let h = |cpu_used: f64, mem_used: f64| Utilization {
            cpu_used,
            cpu_add: 4.0,
            cpu_total: 8.0,
            mem_used,
            mem_add: 8192.0,
            mem_total: 16384.0,
        };
        let rows = criteria_all(&[h(4.0, 8192.0), h(0.0, 0.0)]);
        let half = std::f64::consts::FRAC_1_SQRT_2; // sqrt(1 / 2)
        assert_eq!(rows[0], [half, 1.0, half, 1.0]);
        assert_eq!(rows[1], [0.5, 0.5, 0.5, 0.5]);
        assert_eq!(closeness(&rows), vec![0.0, 1.0]);
    }

    /// Worked by hand, three hosts where the RMS decides and the offset matters: every host has
    /// 10 CPUs and 100 GiB; committed CPUs 0, 5 and 5; memory 0 everywhere; a VM of 5 vCPUs and
    /// no memory. On host 0: CPU 0.5, 0.5, 0.5: RMS 0.5, max 0.5. On host 1: 0, 1.0, 0.5: RMS
    /// sqrt(1.25 / 3) = 0.6455, max 1.0 (host 2 alike). Memory is 0 everywhere: its columns are
    /// all 1 after the offset, equal, and add no distance. Host 0 is the ideal on both CPU
    /// columns: closeness 1; hosts 1 and 2 are the anti-ideal: 0.
    #[test]
    fn a_second_case_worked_by_hand() {
        let h = |cpu_used: f64| Utilization {
            cpu_used,
            cpu_add: 5.0,
            cpu_total: 10.0,
            mem_used: 0.0,
            mem_add: 0.0,
            mem_total: 102_400.0,
        };
        let rows = criteria_all(&[h(0.0), h(5.0), h(5.0)]);
        assert_eq!(rows[0], [0.5, 0.5, 0.0, 0.0]);
        assert!((rows[1][0] - (1.25_f64 / 3.0).sqrt()).abs() < 1e-12);
        assert_eq!(closeness(&rows), vec![1.0, 0.0, 0.0]);
    }
}

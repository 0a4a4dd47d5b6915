//! TOPSIS (technique for order of preference by similarity to ideal solution) with the criteria
//! and weights of PVE's static scheduler: each candidate host is judged by what the fleet's CPU
//! and memory utilization would be if the VM went there.
//!
//! Per criterion the column is divided by its L2 norm; the ideal takes the best (lowest) value
//! of each column, the anti-ideal the worst; a candidate's closeness is its weighted distance to
//! the anti-ideal over the sum of both distances (1 = ideal, 0 = worst or all equal).

/// The four criteria, all minimized.
pub(crate) const N_CRITERIA: usize = 4;

/// PVE's weights for average CPU, highest CPU, average memory, highest memory.
const WEIGHTS: [f64; N_CRITERIA] = [1.0, 2.0, 5.0, 10.0];

/// Utilization of every candidate host (used / capacity), before placing the VM.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Utilization {
    /// vCPUs committed on the host.
    pub cpu_used: f64,
    /// vCPUs the VM adds if placed there.
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

/// Criteria values for every candidate: `[avg_cpu, max_cpu, avg_mem, max_mem]` over all
/// candidates with the VM placed on that one, in input order.
///
/// Linear in the number of hosts: placing the VM on one host changes only that host's
/// utilization, so each candidate's sums are the common sums with its own term replaced, and
/// its maxima the larger of its new utilization and the highest of the *other* hosts (the top
/// two of each column are kept for that).
pub(crate) fn criteria_all(hosts: &[Utilization]) -> Vec<[f64; N_CRITERIA]> {
    let base: Vec<(f64, f64)> = hosts
        .iter()
        .map(|h| {
            (
                ratio(h.cpu_used, h.cpu_total),
                ratio(h.mem_used, h.mem_total),
            )
        })
        .collect();
    let sum_cpu: f64 = base.iter().map(|b| b.0).sum();
    let sum_mem: f64 = base.iter().map(|b| b.1).sum();
    let top_cpu = TopTwo::of(base.iter().map(|b| b.0));
    let top_mem = TopTwo::of(base.iter().map(|b| b.1));
    let n = hosts.len().max(1) as f64;
    hosts
        .iter()
        .zip(&base)
        .enumerate()
        .map(|(i, (h, &(cpu0, mem0)))| {
            let cpu = ratio(h.cpu_used + h.cpu_add, h.cpu_total);
            let mem = ratio(h.mem_used + h.mem_add, h.mem_total);
            [
                (sum_cpu - cpu0 + cpu) / n,
                top_cpu.max_without(i).max(cpu),
                (sum_mem - mem0 + mem) / n,
                top_mem.max_without(i).max(mem),
            ]
        })
        .collect()
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

/// Closeness to the ideal of each alternative, in input order, each in `[0, 1]`.
pub(crate) fn closeness(matrix: &[[f64; N_CRITERIA]]) -> Vec<f64> {
    let weight_sum: f64 = WEIGHTS.iter().sum();
    let mut normalized = matrix.to_vec();
    let mut best = [0.0; N_CRITERIA];
    let mut worst = [0.0; N_CRITERIA];
    for c in 0..N_CRITERIA {
        let norm = matrix.iter().map(|row| row[c] * row[c]).sum::<f64>().sqrt();
        if norm > 0.0 {
            normalized.iter_mut().for_each(|row| row[c] /= norm);
        }
        let column = normalized.iter().map(|row| row[c]);
        best[c] = column.clone().fold(f64::INFINITY, f64::min);
        worst[c] = column.fold(f64::NEG_INFINITY, f64::max);
    }
    normalized
        .iter()
        .map(|row| {
            let distance = |target: &[f64; N_CRITERIA]| {
                (0..N_CRITERIA)
                    .map(|c| (WEIGHTS[c] / weight_sum * (row[c] - target[c])).powi(2))
                    .sum::<f64>()
                    .sqrt()
            };
            let (to_best, to_worst) = (distance(&best), distance(&worst));
            let total = to_best + to_worst;
            if total > 0.0 { to_worst / total } else { 0.0 }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The quadratic definition the linear computation must equal.
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
            sum_cpu += cpu;
            max_cpu = max_cpu.max(cpu);
            sum_mem += mem;
            max_mem = max_mem.max(mem);
        }
        let n = hosts.len().max(1) as f64;
        [sum_cpu / n, max_cpu, sum_mem / n, max_mem]
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
}

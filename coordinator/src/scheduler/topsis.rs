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

/// Criteria values for one candidate: `[avg_cpu, max_cpu, avg_mem, max_mem]` over all candidates
/// with the VM placed on this one.
pub(crate) fn criteria(hosts: &[Utilization], target: usize) -> [f64; N_CRITERIA] {
    let (mut sum_cpu, mut max_cpu, mut sum_mem, mut max_mem) = (0.0, 0.0_f64, 0.0, 0.0_f64);
    for (i, h) in hosts.iter().enumerate() {
        let (cpu_add, mem_add) = if i == target {
            (h.cpu_add, h.mem_add)
        } else {
            (0.0, 0.0)
        };
        let cpu = ratio(h.cpu_used + cpu_add, h.cpu_total);
        let mem = ratio(h.mem_used + mem_add, h.mem_total);
        sum_cpu += cpu;
        max_cpu = max_cpu.max(cpu);
        sum_mem += mem;
        max_mem = max_mem.max(mem);
    }
    let n = hosts.len().max(1) as f64;
    [sum_cpu / n, max_cpu, sum_mem / n, max_mem]
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

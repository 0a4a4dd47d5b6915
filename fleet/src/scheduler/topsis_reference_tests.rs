//! The columnar TOPSIS (`topsis.rs`) against the row-by-row code it replaced, kept here as
//! the reference: on random fleets (zero capacities, a VM without CPUs, equal hosts, one host,
//! loaded and empty hosts) every criterion and every closeness must be the same to the bit, so
//! the restructuring changed no figure and no choice.

use super::topsis::{self, N_CRITERIA, Utilization};

/// The scheduler's TOPSIS before it was laid out in columns, unchanged.
mod reference {
    use super::{N_CRITERIA, Utilization};

    const WEIGHTS: [f64; N_CRITERIA] = [1.0, 2.0, 5.0, 10.0];
    const OFFSET: f64 = 1.0;

    fn cpu_added(h: &Utilization) -> f64 {
        if h.cpu_add == 0.0 {
            h.cpu_total
        } else {
            h.cpu_add
        }
    }

    pub(super) fn criteria_all(hosts: &[Utilization]) -> Vec<[f64; N_CRITERIA]> {
        let base: Vec<(f64, f64)> = hosts
            .iter()
            .map(|h| {
                (
                    ratio(h.cpu_used, h.cpu_total),
                    ratio(h.mem_used, h.mem_total),
                )
            })
            .collect();
        let squares_cpu: f64 = base.iter().map(|b| b.0 * b.0).sum();
        let squares_mem: f64 = base.iter().map(|b| b.1 * b.1).sum();
        let top_cpu = TopTwo::of(base.iter().map(|b| b.0));
        let top_mem = TopTwo::of(base.iter().map(|b| b.1));
        let n = hosts.len().max(1) as f64;
        // Rounding can leave a tiny negative sum when one huge term is swapped out.
        let rms = |squares: f64| (squares.max(0.0) / n).sqrt();
        hosts
            .iter()
            .zip(&base)
            .enumerate()
            .map(|(i, (h, &(cpu0, mem0)))| {
                let cpu = ratio(h.cpu_used + cpu_added(h), h.cpu_total);
                let mem = ratio(h.mem_used + h.mem_add, h.mem_total);
                [
                    rms(squares_cpu - cpu0 * cpu0 + cpu * cpu),
                    top_cpu.max_without(i).max(cpu),
                    rms(squares_mem - mem0 * mem0 + mem * mem),
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

    /// Closeness to the ideal of each alternative (rows of [`criteria_all`]), in input order, each
    /// in `[0, 1]`.
    pub(super) fn closeness(matrix: &[[f64; N_CRITERIA]]) -> Vec<f64> {
        let weight_sum: f64 = WEIGHTS.iter().sum();
        let mut normalized: Vec<[f64; N_CRITERIA]> = matrix
            .iter()
            .map(|row| row.map(|value| OFFSET + value))
            .collect();
        let matrix = normalized.clone();
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
                let score = if total > 0.0 { to_worst / total } else { 0.0 };
                // Equal hosts may differ in the last bits (sums in another order): to 12 places they
                // tie, and the tie is broken by name, the same for every order of input.
                (score * 1e12).round() / 1e12
            })
            .collect()
    }
}

/// xorshift64: a fixed stream of cases.
struct Stream(u64);

impl Stream {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

#[test]
fn columns_give_the_reference_figures_to_the_bit() {
    let mut r = Stream(0x1234_5678_9abc_def1);
    let mut compared = 0;
    for case in 0..3000 {
        let n = 1 + r.below(60) as usize;
        let cpu_add = [0.0, 1.0, 2.0, 4.0, 7.0][r.below(5) as usize];
        let mem_add = (r.below(5) * 1024) as f64;
        // A third of the cases: few distinct loads, so hosts tie.
        let few = case % 3 == 0;
        let hosts: Vec<Utilization> = (0..n)
            .map(|_| Utilization {
                cpu_used: r.below(if few { 4 } else { 200 }) as f64,
                cpu_add,
                cpu_total: [0.0, 8.0, 12.0, 32.0, 64.0, 128.0][r.below(6) as usize],
                mem_used: if few {
                    (r.below(3) * 4096) as f64
                } else {
                    r.below(300_000) as f64
                },
                mem_add,
                mem_total: [0.0, 16384.0, 65536.0, 100_000.0, 262_144.0][r.below(5) as usize],
            })
            .collect();
        let want_rows = reference::criteria_all(&hosts);
        let want = reference::closeness(&want_rows);
        let got_rows = topsis::criteria_all(&hosts);
        let got = topsis::closeness(&got_rows);
        let scores = topsis::scores(&hosts, |u| *u);
        for i in 0..n {
            for c in 0..N_CRITERIA {
                assert_eq!(
                    got_rows[i][c].to_bits(),
                    want_rows[i][c].to_bits(),
                    "case {case}, host {i}, criterion {c}"
                );
                assert_eq!(scores.row(i)[c].to_bits(), want_rows[i][c].to_bits());
            }
            assert_eq!(got[i].to_bits(), want[i].to_bits(), "case {case}, host {i}");
            assert_eq!(scores.closeness(i).to_bits(), want[i].to_bits());
            compared += 1;
        }
    }
    assert!(compared > 50_000, "{compared}");
}

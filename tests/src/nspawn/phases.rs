//! Timing the packaging test phase by phase, printed as it goes (a slow or stuck phase shows
//! in the log) and as a table at the end (the figures for the note). Figures, never
//! assertions: the machine is noisy.

use std::time::{Duration, Instant};

/// Named phases with their durations.
#[derive(Debug)]
pub struct Phases {
    label: String,
    started: Instant,
    done: Vec<(String, Duration)>,
}

impl Phases {
    /// A clock for `label` (e.g. the suite), started now.
    pub fn new(label: &str) -> Phases {
        Phases {
            label: label.to_string(),
            started: Instant::now(),
            done: Vec::new(),
        }
    }

    /// Runs `f` as phase `name`, printing its start and duration.
    pub fn run<T>(&mut self, name: &str, f: impl FnOnce() -> T) -> T {
        eprintln!("[{}] {name} ...", self.label);
        let start = Instant::now();
        let value = f();
        let took = start.elapsed();
        eprintln!("[{}] {name}: {:.1} s", self.label, took.as_secs_f64());
        self.done.push((name.to_string(), took));
        value
    }

    /// Time since the clock started.
    pub fn total(&self) -> Duration {
        self.started.elapsed()
    }

    /// Every finished phase and the total, one per line.
    pub fn table(&self) -> String {
        let width = self.done.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
        let mut out = String::new();
        for (name, took) in &self.done {
            out.push_str(&format!(
                "[{}] {name:<width$}  {:>7.1} s\n",
                self.label,
                took.as_secs_f64()
            ));
        }
        out.push_str(&format!(
            "[{}] {:<width$}  {:>7.1} s\n",
            self.label,
            "total",
            self.total().as_secs_f64()
        ));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_phase_and_the_total_are_listed_in_order() {
        let mut phases = Phases::new("bookworm");
        let v = phases.run("boot", || 7);
        phases.run("install", || ());
        assert_eq!(v, 7);
        let table = phases.table();
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 3, "{table}");
        assert!(lines[0].starts_with("[bookworm] boot"), "{table}");
        assert!(lines[1].starts_with("[bookworm] install"), "{table}");
        assert!(lines[2].starts_with("[bookworm] total"), "{table}");
    }
}

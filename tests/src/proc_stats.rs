//! What the benchmarks read about a process from `/proc`: CPU time and memory, and the wall
//! clock in the coordinators' unit (unix milliseconds).

/// Clock ticks per second of `/proc/<pid>/stat` (`getconf CLK_TCK`; 100 on Linux when it
/// cannot be asked).
pub fn ticks_per_second() -> f64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100.0)
}

/// `utime + stime` of `/proc/<pid>/stat` in clock ticks (0 once the process is gone).
pub fn cpu_ticks(pid: u32) -> u64 {
    let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0;
    };
    // The command name (field 2) may hold spaces: count fields after its closing parenthesis.
    let Some(rest) = text.rfind(')').and_then(|i| text.get(i + 2..)) else {
        return 0;
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // rest starts at field 3 (state): utime is field 14, stime field 15.
    [11, 12]
        .iter()
        .filter_map(|&i| fields.get(i)?.parse::<u64>().ok())
        .sum()
}

/// `utime + stime` in clock ticks of each thread of `pid`, summed by thread name (`comm`):
/// where a process spends its CPU, without a profiler.
pub fn thread_ticks(pid: u32) -> std::collections::BTreeMap<String, u64> {
    let mut out = std::collections::BTreeMap::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return out;
    };
    for task in tasks.flatten() {
        let Ok(text) = std::fs::read_to_string(task.path().join("stat")) else {
            continue;
        };
        let (Some(open), Some(close)) = (text.find('('), text.rfind(')')) else {
            continue;
        };
        let name = text.get(open + 1..close).unwrap_or_default().to_string();
        let fields: Vec<&str> = text
            .get(close + 2..)
            .unwrap_or_default()
            .split_whitespace()
            .collect();
        let ticks: u64 = [11, 12]
            .iter()
            .filter_map(|&i| fields.get(i)?.parse::<u64>().ok())
            .sum();
        *out.entry(name).or_insert(0) += ticks;
    }
    out
}

/// CPU seconds (user + system) `pid` has used (0 once it is gone).
pub fn cpu_secs(pid: u32) -> f64 {
    cpu_ticks(pid) as f64 / ticks_per_second()
}

/// A `kB` field of `/proc/<pid>/status` (`VmRSS`, `VmHWM`...), in KiB (0 if absent).
pub fn status_kib(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|text| {
            text.lines()
                .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// Now on the wall clock, in milliseconds (the coordinators' clock on this machine).
pub fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

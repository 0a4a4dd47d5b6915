//! The HA scenario runner's last results: `pvefleet-lab sim run FILE --report DIR/NAME.json`
//! (the lab package) writes its outcome as JSON, and the dashboard lists the reports of its
//! configured directory, newest first. Read as plain JSON (the coordinator does not link the runner): the scenario's name and
//! description, the violations and the expectations with whether each was met.

use std::path::Path;
use std::time::SystemTime;

/// Reports listed at most.
const MAX_RUNS: usize = 20;
/// A report larger than this is skipped (a report is a few hundred KiB at most).
const MAX_REPORT_BYTES: u64 = 8 << 20;

/// One run, as the page shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Run {
    pub(crate) name: String,
    pub(crate) when: String,
    pub(crate) passed: bool,
    pub(crate) summary: String,
}

/// The runs reported in `dir`, newest first (nothing if it does not exist).
pub(crate) fn runs(dir: &Path) -> Vec<Run> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<(SystemTime, std::path::PathBuf)> = entries
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .filter_map(|e| {
            let meta = e.metadata().ok()?;
            (meta.is_file() && meta.len() <= MAX_REPORT_BYTES)
                .then(|| Some((meta.modified().ok()?, e.path())))?
        })
        .collect();
    files.sort_by_key(|f| std::cmp::Reverse(f.0));
    files
        .into_iter()
        .take(MAX_RUNS)
        .filter_map(|(modified, path)| {
            let text = std::fs::read_to_string(&path).ok()?;
            let when = humantime_utc(modified);
            Some(run_of(&path, &text, when))
        })
        .collect()
}

fn humantime_utc(t: SystemTime) -> String {
    let secs = t
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    match time::OffsetDateTime::from_unix_timestamp(i64::try_from(secs).unwrap_or(0)) {
        Ok(dt) => format!(
            "{:04}-{:02}-{:02} {:02}:{:02} UTC",
            dt.year(),
            u8::from(dt.month()),
            dt.day(),
            dt.hour(),
            dt.minute()
        ),
        Err(_) => format!("{secs} s after the epoch"),
    }
}

/// One report's verdict and summary (an unreadable report says so instead).
pub(crate) fn run_of(path: &Path, text: &str, when: String) -> Run {
    let file = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let doc: serde_json::Value = match serde_json::from_str(text) {
        Ok(doc) => doc,
        Err(e) => {
            return Run {
                name: file,
                when,
                passed: false,
                summary: format!("not a scenario report: {e}"),
            };
        }
    };
    let s = |key: &str| doc.get(key).and_then(|v| v.as_str()).unwrap_or_default();
    let violations = doc
        .get("violations")
        .and_then(|v| v.as_array())
        .cloned()
        .unwrap_or_default();
    let expectations = doc
        .get("expectations")
        .and_then(|v| v.as_array())
        .cloned()
        .unwrap_or_default();
    let unmet = expectations
        .iter()
        .filter(|e| e.get("met").and_then(serde_json::Value::as_bool) != Some(true))
        .count();
    let mut summary = format!(
        "{}\nend: {} · {} violation(s) · {}/{} expectation(s) met",
        s("description"),
        doc.get("end").map(|e| e.to_string()).unwrap_or_default(),
        violations.len(),
        expectations.len() - unmet,
        expectations.len()
    );
    for v in violations.iter().take(10) {
        summary.push_str(&format!(
            "\nviolation: {}",
            v.get("detail").and_then(|d| d.as_str()).unwrap_or_default()
        ));
    }
    for e in &expectations {
        let met = e.get("met").and_then(serde_json::Value::as_bool) == Some(true);
        summary.push_str(&format!(
            "\n{} {}",
            if met { "met:  " } else { "UNMET:" },
            e.get("text").and_then(|d| d.as_str()).unwrap_or_default()
        ));
    }
    let name = if s("scenario").is_empty() {
        file
    } else {
        s("scenario").to_string()
    };
    Run {
        name,
        when,
        passed: violations.is_empty() && unmet == 0,
        summary,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_with_a_violation_or_an_unmet_expectation_failed() {
        let ok = r#"{"scenario":"kill","description":"d","end":"expectations_met",
            "violations":[],"expectations":[{"text":"recovered","met":true}]}"#;
        let bad = r#"{"scenario":"kill","violations":[{"detail":"vm on two hosts"}],
            "expectations":[{"text":"recovered","met":false}]}"#;
        let p = Path::new("x.json");
        assert!(run_of(p, ok, String::new()).passed);
        let r = run_of(p, bad, String::new());
        assert!(!r.passed);
        assert!(r.summary.contains("vm on two hosts"), "{}", r.summary);
        assert!(!run_of(p, "nonsense", String::new()).passed);
    }
}

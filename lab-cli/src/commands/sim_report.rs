//! `pvefleet-lab sim run --report FILE`: the outcome of a scenario kept as a JSON file, for the web
//! dashboard (it lists the reports of its `scenario_dir`, newest first) and for scripts. Written
//! to a temporary file beside it and renamed, so a reader never sees half a report.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// Writes `json` to `path` (parent directories made, mode 0644), atomically.
pub(crate) fn write_report(path: &Path, json: &str) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "report".into());
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let written = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o644)
            .open(&tmp)?;
        file.write_all(json.as_bytes())?;
        file.sync_all()?;
        // The umask may have taken bits away: the dashboard's service user must read it.
        file.set_permissions(std::fs::Permissions::from_mode(0o644))?;
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_is_written_whole_with_its_directory_and_nothing_else() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("scenarios").join("kill.json");
        write_report(&path, "{\"scenario\":\"kill\"}\n").unwrap();
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(doc["scenario"], "kill");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o644);
        let names: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("kill.json")]);
        // Again: replaced, not appended.
        write_report(&path, "{\"scenario\":\"again\"}\n").unwrap();
        assert!(std::fs::read_to_string(&path).unwrap().contains("again"));
    }
}

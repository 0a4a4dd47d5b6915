//! Reading what `pvesh ... --output-format json` prints: the result on stdout (after the log
//! of a task run in the foreground), or an error on stderr.

use std::collections::BTreeMap;

use serde_json::Value;

/// The result of a successful call: the last non-empty stdout line as JSON (a task's log comes
/// before it; a UPID is a JSON string); no output at all means `null`.
pub(crate) fn parse_result(stdout: &str) -> Result<Value, String> {
    let Some(last) = stdout.lines().map(str::trim).rfind(|l| !l.is_empty()) else {
        return Ok(Value::Null);
    };
    serde_json::from_str(last).map_err(|e| {
        let shown: String = last.chars().take(120).collect();
        format!("last output line is not JSON ({e}): {shown}")
    })
}

/// An error as pvesh prints it on stderr.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CliError {
    /// The HTTP-like status: the first line's prefix, or 500 for a plain `die`.
    pub(crate) status: u16,
    /// The first line without its status prefix.
    pub(crate) reason: String,
    /// The message: the first line after the status for an exception with a code, the whole
    /// text for a plain `die`.
    pub(crate) message: String,
    /// `param: message` lines following a 400.
    pub(crate) errors: BTreeMap<String, String>,
}

/// Parse stderr of a failed call: `<status> <message>` then `param: msg` lines (a
/// `PVE::Exception` with a code), or any text (a plain `die`, status 500). `None` for an
/// empty stderr.
pub(crate) fn parse_error(stderr: &str) -> Option<CliError> {
    let text = stderr.trim();
    let mut lines = text.lines().map(str::trim_end);
    let first = lines.next().filter(|l| !l.is_empty())?;
    let Some((status, rest)) = status_prefix(first) else {
        return Some(CliError {
            status: 500,
            reason: first.to_string(),
            message: text.to_string(),
            errors: BTreeMap::new(),
        });
    };
    let errors = lines.filter_map(param_error).collect();
    Some(CliError {
        status,
        reason: rest.to_string(),
        message: rest.to_string(),
        errors,
    })
}

/// `400 Parameter verification failed.` → (400, "Parameter verification failed.").
fn status_prefix(line: &str) -> Option<(u16, &str)> {
    let (code, rest) = line.split_once(' ')?;
    if code.len() != 3 || !code.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let status: u16 = code.parse().ok()?;
    (100..=599)
        .contains(&status)
        .then_some((status, rest.trim()))
}

/// `vmid: VM 2004 already exists` → ("vmid", "VM 2004 already exists"); the usage line and
/// other text are not parameter errors.
fn param_error(line: &str) -> Option<(String, String)> {
    let (param, msg) = line.split_once(": ")?;
    let valid = !param.is_empty()
        && param
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'[' | b']'));
    valid.then(|| (param.to_string(), msg.trim().to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn result_is_the_last_non_empty_line() {
        assert_eq!(
            parse_result("[{\"node\":\"pve1\"}]\n").unwrap(),
            json!([{"node": "pve1"}])
        );
        let task = "create full clone of drive scsi0\ntransferred 1.0 GiB\n\"UPID:pve1:0000AB12:00C0FFEE:65000000:qmclone:100:root@pam:\"\n\n";
        assert_eq!(
            parse_result(task).unwrap(),
            json!("UPID:pve1:0000AB12:00C0FFEE:65000000:qmclone:100:root@pam:")
        );
    }

    #[test]
    fn empty_output_is_null() {
        assert_eq!(parse_result("").unwrap(), Value::Null);
        assert_eq!(parse_result("\n  \n").unwrap(), Value::Null);
    }

    #[test]
    fn non_json_output_is_an_error() {
        assert!(parse_result("┌────┐\n│ x │\n").is_err());
    }

    #[test]
    fn parameter_errors_are_parsed_and_usage_ignored() {
        let stderr = "400 Parameter verification failed.\nvmid: VM 2004 already exists\n\
                      net0: invalid format - missing model\npvesh create <api_path> [OPTIONS] [FORMAT_OPTIONS]\n";
        let e = parse_error(stderr).unwrap();
        assert_eq!(e.status, 400);
        assert_eq!(e.reason, "Parameter verification failed.");
        assert_eq!(e.message, "Parameter verification failed.");
        assert_eq!(e.errors.len(), 2);
        assert_eq!(e.errors["vmid"], "VM 2004 already exists");
        assert_eq!(e.errors["net0"], "invalid format - missing model");
    }

    #[test]
    fn plain_die_is_a_500_with_the_whole_text() {
        let e = parse_error("VM 100 not running\n").unwrap();
        assert_eq!(
            (e.status, e.reason.as_str(), e.message.as_str()),
            (500, "VM 100 not running", "VM 100 not running")
        );
        let e = parse_error(
            "can't lock file '/var/lock/qemu-server/lock-100.conf' - got timeout\nmore: detail\n",
        )
        .unwrap();
        assert_eq!(e.status, 500);
        assert_eq!(
            e.reason,
            "can't lock file '/var/lock/qemu-server/lock-100.conf' - got timeout"
        );
        assert!(e.message.ends_with("more: detail"));
        assert!(e.errors.is_empty());
    }

    #[test]
    fn status_prefix_needs_three_digits() {
        assert_eq!(
            parse_error("403 Permission check failed (/vms/100, VM.Audit)\n")
                .unwrap()
                .status,
            403
        );
        assert_eq!(parse_error("2004 is not a status\n").unwrap().status, 500);
        assert_eq!(parse_error("999 nope\n").unwrap().status, 500);
        assert!(parse_error(" \n").is_none());
    }
}

//! Parsing UPID text into a [`Upid`], as pve-common's `PVE::UPID::decode` does (hex either
//! case, `pstart` 8 or 9 digits, the trailing colon required); a refusal is a
//! [`PveError::Invalid`] naming the text and what is wrong with it.

use std::str::FromStr;

use super::Upid;
use crate::error::PveError;

fn is_node_name(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-')
}

fn hex_field(s: &str, lens: &[usize], what: &str, text: &str) -> Result<u64, PveError> {
    if !lens.contains(&s.len()) || !s.bytes().all(|c| c.is_ascii_hexdigit()) {
        return Err(invalid(
            text,
            &format!("{what} must be {lens:?} hex digits"),
        ));
    }
    u64::from_str_radix(s, 16).map_err(|e| invalid(text, &e.to_string()))
}

fn invalid(text: &str, why: &str) -> PveError {
    PveError::Invalid {
        field: "upid".into(),
        reason: format!("'{text}' is not a UPID: {why}"),
    }
}

fn free_field_ok(s: &str, allow_empty: bool) -> bool {
    (allow_empty || !s.is_empty()) && !s.chars().any(|c| c == ':' || c == '/' || c.is_whitespace())
}

impl FromStr for Upid {
    type Err = PveError;

    fn from_str(text: &str) -> Result<Self, PveError> {
        let body = text
            .strip_prefix("UPID:")
            .and_then(|b| b.strip_suffix(':'))
            .ok_or_else(|| invalid(text, "must start with 'UPID:' and end with ':'"))?;
        let parts: Vec<&str> = body.split(':').collect();
        let [node, pid, pstart, starttime, kind, id, user] = parts.as_slice() else {
            return Err(invalid(text, "expected 7 fields"));
        };
        if !is_node_name(node) {
            return Err(invalid(text, "bad node name"));
        }
        let pid = hex_field(pid, &[8], "pid", text)?;
        let wide_pstart = pstart.len() == 9;
        let pstart = hex_field(pstart, &[8, 9], "pstart", text)?;
        let starttime = hex_field(starttime, &[8], "starttime", text)?;
        if !free_field_ok(kind, false) || !free_field_ok(id, true) || !free_field_ok(user, false) {
            return Err(invalid(text, "type, id or user has a forbidden character"));
        }
        Ok(Self {
            node: (*node).to_string(),
            pid: u32::try_from(pid).map_err(|_| invalid(text, "pid too large"))?,
            pstart,
            starttime,
            kind: (*kind).to_string(),
            id: (*id).to_string(),
            user: (*user).to_string(),
            wide_pstart,
        })
    }
}

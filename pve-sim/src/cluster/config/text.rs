//! A VM's `/etc/pve/qemu-server/<vmid>.conf` as PVE's `write_vm_config` lays it out: the
//! description as leading `#` lines, `key: value` lines sorted by key, a `[PENDING]` section,
//! then one `[snapname]` section per snapshot. The `digest` is the SHA1 of exactly that text.

use std::collections::BTreeMap;

use serde_json::{Map, Value};
use sha1::{Digest, Sha1};

use super::keys::typed;

/// One VM config: current keys, pending changes and snapshots.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct VmConfig {
    /// Current values (`description` included, unencoded).
    pub(crate) main: BTreeMap<String, String>,
    /// `[PENDING]` values.
    pub(crate) pending: BTreeMap<String, String>,
    /// Pending deletions; `true` = forced (`!key`).
    pub(crate) pending_delete: BTreeMap<String, bool>,
    /// Snapshot sections by name.
    pub(crate) snapshots: BTreeMap<String, BTreeMap<String, String>>,
}

impl VmConfig {
    /// A current value.
    pub(crate) fn get(&self, key: &str) -> Option<&str> {
        self.main.get(key).map(String::as_str)
    }

    /// Set a current value.
    pub(crate) fn set(&mut self, key: &str, value: impl Into<String>) {
        self.main.insert(key.to_string(), value.into());
    }

    /// Remove a current value.
    pub(crate) fn remove(&mut self, key: &str) -> Option<String> {
        self.main.remove(key)
    }

    /// The `lock:` value.
    pub(crate) fn lock(&self) -> Option<&str> {
        self.get("lock")
    }

    /// `template: 1`.
    pub(crate) fn is_template(&self) -> bool {
        self.get("template") == Some("1")
    }

    /// Whether a `[PENDING]` section is written.
    pub(crate) fn has_pending(&self) -> bool {
        !self.pending.is_empty() || !self.pending_delete.is_empty()
    }

    /// The `delete:` line of the pending section (`net1,!scsi2`).
    pub(super) fn pending_delete_value(&self) -> Option<String> {
        if self.pending_delete.is_empty() {
            return None;
        }
        let items: Vec<String> = self
            .pending_delete
            .iter()
            .map(|(k, force)| if *force { format!("!{k}") } else { k.clone() })
            .collect();
        Some(items.join(","))
    }

    /// The raw file text.
    pub(crate) fn render(&self) -> String {
        let mut raw = render_section(&self.main, false);
        if self.has_pending() {
            let mut pending = self.pending.clone();
            if let Some(d) = self.pending_delete_value() {
                pending.insert("delete".into(), d);
            }
            raw.push_str("\n[PENDING]\n");
            raw.push_str(&render_section(&pending, true));
        }
        for (name, snap) in &self.snapshots {
            raw.push_str(&format!("\n[{name}]\n"));
            raw.push_str(&render_section(snap, false));
        }
        raw
    }

    /// SHA1 hex of the raw text.
    pub(crate) fn digest(&self) -> String {
        hex::encode(Sha1::digest(self.render().as_bytes()))
    }

    /// The current values with pending changes applied (`current=0`) or not (`current=1`),
    /// typed as GET config returns them, plus `digest`.
    pub(super) fn to_json(&self, with_pending: bool) -> Map<String, Value> {
        let mut merged = self.main.clone();
        if with_pending {
            for (k, v) in &self.pending {
                merged.insert(k.clone(), v.clone());
            }
            for k in self.pending_delete.keys() {
                merged.remove(k);
            }
        }
        let mut out = section_json(&merged);
        out.insert("digest".into(), Value::from(self.digest()));
        out
    }

    /// GET pending: `[{key, value?, pending?, delete?}]` (`digest` appears as a key, as in PVE).
    pub(super) fn pending_json(&self) -> Vec<Value> {
        let mut main = self.main.clone();
        main.insert("digest".into(), self.digest());
        let mut out = Vec::new();
        for (k, v) in &main {
            let mut item = Map::new();
            item.insert("key".into(), Value::from(k.as_str()));
            item.insert("value".into(), pending_text(k, v));
            if let Some(p) = self.pending.get(k) {
                item.insert("pending".into(), pending_text(k, p));
            }
            if let Some(force) = self.pending_delete.get(k) {
                item.insert("delete".into(), Value::from(if *force { 2 } else { 1 }));
            }
            out.push(Value::Object(item));
        }
        for (k, p) in &self.pending {
            if main.contains_key(k) {
                continue;
            }
            let mut item = Map::new();
            item.insert("key".into(), Value::from(k.as_str()));
            item.insert("pending".into(), pending_text(k, p));
            out.push(Value::Object(item));
        }
        for (k, force) in &self.pending_delete {
            if main.contains_key(k) || self.pending.contains_key(k) {
                continue;
            }
            let mut item = Map::new();
            item.insert("key".into(), Value::from(k.as_str()));
            item.insert("delete".into(), Value::from(if *force { 2 } else { 1 }));
            out.push(Value::Object(item));
        }
        out
    }
}

/// A section's keys as typed JSON, `cipassword` masked as GET config does.
pub(super) fn section_json(section: &BTreeMap<String, String>) -> Map<String, Value> {
    section
        .iter()
        .map(|(k, v)| (k.clone(), typed_masked(k, v)))
        .collect()
}

/// A value as GET config returns it (typed per key), secrets masked.
fn typed_masked(key: &str, value: &str) -> Value {
    if key == "cipassword" {
        Value::from("**********")
    } else {
        typed(key, value)
    }
}

/// A value in the pending list: always the config text (the schema declares `value` and
/// `pending` as strings; PVE hands over the parsed config file's text), secrets masked.
fn pending_text(key: &str, value: &str) -> Value {
    if key == "cipassword" {
        Value::from("**********")
    } else {
        Value::from(value)
    }
}

/// `generate_raw_config`: description comment lines, then sorted `key: value` lines.
fn render_section(section: &BTreeMap<String, String>, pending: bool) -> String {
    let mut raw = String::new();
    if let Some(descr) = section.get("description") {
        if descr.is_empty() {
            if pending {
                raw.push_str("#\n");
            }
        } else {
            // Perl's split(/\n/) drops trailing empty fields.
            let lines: Vec<&str> = descr.split('\n').collect();
            let keep = lines
                .iter()
                .rposition(|l| !l.is_empty())
                .map_or(0, |i| i + 1);
            for line in &lines[..keep] {
                raw.push('#');
                raw.push_str(&encode_text(line));
                raw.push('\n');
            }
        }
    }
    for (k, v) in section {
        if k == "description" || k == "digest" {
            continue;
        }
        raw.push_str(k);
        raw.push_str(": ");
        raw.push_str(v);
        raw.push('\n');
    }
    raw
}

/// `PVE::Tools::encode_text`: percent-encode control characters, `:` and non-ASCII bytes.
fn encode_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if (0x20..=0x39).contains(&b) || (0x3b..=0x7e).contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> VmConfig {
        let mut c = VmConfig::default();
        c.set("name", "web1");
        c.set("memory", "2048");
        c.set("cores", "2");
        c.set("description", "first line\nsecond: with colon\n");
        c
    }

    #[test]
    fn renders_description_comments_then_sorted_keys() {
        assert_eq!(
            sample().render(),
            "#first line\n#second%3A with colon\ncores: 2\nmemory: 2048\nname: web1\n"
        );
    }

    #[test]
    fn renders_pending_then_snapshots() {
        let mut c = sample();
        c.pending.insert("cores".into(), "4".into());
        c.pending_delete.insert("name".into(), false);
        c.pending_delete.insert("tags".into(), true);
        let mut snap = BTreeMap::new();
        snap.insert("cores".into(), "1".into());
        snap.insert("snaptime".into(), "1700000000".into());
        c.snapshots.insert("s1".into(), snap);
        c.main.insert("parent".into(), "s1".into());
        let text = c.render();
        assert!(text.ends_with(
            "parent: s1\n\n[PENDING]\ncores: 4\ndelete: name,!tags\n\n[s1]\ncores: 1\nsnaptime: 1700000000\n"
        ));
    }

    #[test]
    fn digest_is_sha1_of_the_text_and_changes_on_every_write() {
        let mut c = sample();
        let d0 = c.digest();
        assert_eq!(d0, hex::encode(Sha1::digest(c.render().as_bytes())));
        assert_eq!(d0.len(), 40);
        c.set("lock", "clone");
        let d1 = c.digest();
        c.remove("lock");
        assert_eq!(c.digest(), d0);
        c.pending.insert("cores".into(), "8".into());
        let d2 = c.digest();
        assert!(d0 != d1 && d1 != d2 && d0 != d2);
    }

    #[test]
    fn json_applies_pending_unless_current() {
        let mut c = sample();
        c.pending.insert("cores".into(), "4".into());
        c.pending_delete.insert("name".into(), false);
        let pending = c.to_json(true);
        assert_eq!(pending["cores"], Value::from(4));
        assert!(!pending.contains_key("name"));
        assert_eq!(pending["memory"], Value::from("2048"));
        let current = c.to_json(false);
        assert_eq!(current["cores"], Value::from(2));
        assert_eq!(current["name"], Value::from("web1"));
        assert_eq!(current["digest"], Value::from(c.digest()));
        let rows = c.pending_json();
        let cores = rows.iter().find(|r| r["key"] == "cores").unwrap();
        assert_eq!(cores["value"], Value::from("2"));
        assert_eq!(cores["pending"], Value::from("4"));
        let name = rows.iter().find(|r| r["key"] == "name").unwrap();
        assert_eq!(name["delete"], Value::from(1));
        assert!(rows.iter().any(|r| r["key"] == "digest"));
    }
}

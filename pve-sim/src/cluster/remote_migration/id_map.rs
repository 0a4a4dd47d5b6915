//! Storage and bridge maps of a remote migration (`target-storage`, `target-bridge`), as
//! `PVE::JSONSchema::parse_idmap` reads them and `map_id` applies them: `src:dst` entries, at
//! most one default id (every other source maps to it), or `1` for the identity. An id the map
//! does not name maps to itself.

use std::collections::BTreeMap;

use crate::schema::split_list;

/// A parsed id map.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct IdMap {
    pub(super) entries: BTreeMap<String, String>,
    pub(super) default: Option<String>,
    pub(crate) identity: bool,
}

impl IdMap {
    /// `parse_idmap` (the ids themselves were checked by the schema): `Err` is PVE's text.
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        let mut map = IdMap::default();
        for entry in split_list(text) {
            if entry == "1" {
                map.identity = true;
            } else if let Some((source, target)) = entry
                .split_once(':')
                .filter(|(s, t)| !s.is_empty() && !t.is_empty() && !t.contains(':'))
            {
                if map.entries.contains_key(source) {
                    return Err(format!("duplicate mapping for source '{source}'"));
                }
                map.entries.insert(source.to_string(), target.to_string());
            } else {
                if map.default.is_some() {
                    return Err("default target ID can only be provided once".into());
                }
                map.default = Some(entry);
            }
        }
        if map.identity && (map.default.is_some() || !map.entries.is_empty()) {
            return Err("identity mapping cannot be combined with other mappings".into());
        }
        Ok(map)
    }

    /// `map_id`: the entry, else the default, else the id itself.
    pub(super) fn map<'a>(&'a self, source: &'a str) -> &'a str {
        self.entries
            .get(source)
            .or(self.default.as_ref())
            .map_or(source, String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_parse_and_apply_like_pve() {
        let m = IdMap::parse("local:fast,ceph:slow").unwrap();
        assert_eq!(
            (m.map("local"), m.map("ceph"), m.map("nfs")),
            ("fast", "slow", "nfs")
        );
        let d = IdMap::parse("local-lvm").unwrap();
        assert_eq!(d.map("anything"), "local-lvm");
        let mixed = IdMap::parse("local:fast,other").unwrap();
        assert_eq!((mixed.map("local"), mixed.map("x")), ("fast", "other"));
        assert!(IdMap::parse("1").unwrap().identity);
        assert_eq!(
            IdMap::parse("a:b,a:c").unwrap_err(),
            "duplicate mapping for source 'a'"
        );
        assert_eq!(
            IdMap::parse("a,b").unwrap_err(),
            "default target ID can only be provided once"
        );
        assert_eq!(
            IdMap::parse("1,a:b").unwrap_err(),
            "identity mapping cannot be combined with other mappings"
        );
    }
}

//! Property strings (`virtio=BC:24:11:..,bridge=vmbr0,firewall=1`): split into sub-keys as
//! `JSONSchema::parse_property_string` does, including its `die` texts, default keys and
//! aliases (`virtio=<mac>` stores `model=virtio`, `macaddr=<mac>`). The sub-values are then
//! checked by the schema checker (`check.rs`), which recurses into property strings.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::perl_truth::{is_true, perl_true};

/// `parse_boolean`: the lenient boolean of property strings.
fn parse_boolean(v: &str) -> Option<&'static str> {
    match v.to_ascii_lowercase().as_str() {
        "1" | "on" | "yes" | "true" => Some("1"),
        "0" | "off" | "no" | "false" => Some("0"),
        _ => None,
    }
}

fn die(message: String) -> Result<BTreeMap<String, String>, String> {
    Err(format!("{message}\n"))
}

/// Split `data` into sub-keys as the property-string `format` (sub-key → schema) says:
/// aliases, the default key, booleans normalized. Checking the sub-values against their
/// schemas is the checker's ([`check_property_string`](super::check::check_property_string)).
///
/// `Err` is the text PVE puts after `invalid format - `.
pub(crate) fn parse(
    format: &Map<String, Value>,
    data: &str,
) -> Result<BTreeMap<String, String>, String> {
    let mut res: BTreeMap<String, String> = BTreeMap::new();
    let mut default_key: Option<String> = None;
    for part in data.split(',') {
        if part.trim().is_empty() {
            continue;
        }
        if let Some((k, v)) = part
            .split_once('=')
            .filter(|(k, v)| !k.is_empty() && !v.is_empty())
        {
            if res.contains_key(k) {
                return die(format!(
                    "duplicate key in comma-separated list property: {k}"
                ));
            }
            let mut key = k.to_string();
            let mut schema = format.get(k);
            if let Some(alias) = schema.and_then(|s| s.get("alias")).and_then(Value::as_str) {
                if let Some(key_alias) = schema
                    .and_then(|s| s.get("keyAlias"))
                    .and_then(Value::as_str)
                {
                    if res.contains_key(key_alias) {
                        return die(format!("key alias '{key_alias}' is already defined"));
                    }
                    res.insert(key_alias.to_string(), k.to_string());
                }
                key = alias.to_string();
                schema = format.get(alias);
            }
            let Some(schema) = schema else {
                return die(format!(
                    "invalid key in comma-separated list property: {key}"
                ));
            };
            let value = if schema.get("type").and_then(Value::as_str) == Some("boolean") {
                parse_boolean(v).map_or_else(|| v.to_string(), str::to_string)
            } else {
                v.to_string()
            };
            res.insert(key, value);
        } else if !part.contains('=') {
            if let Some(dk) = &default_key {
                return die(format!(
                    "duplicate key in comma-separated list property: {dk}"
                ));
            }
            let found = format.iter().find(|(_, s)| is_true(s.get("default_key")));
            let Some((key, _)) = found else {
                return die("value without key, but schema does not define a default key".into());
            };
            default_key = Some(key.clone());
            if res.get(key).is_some_and(|v| perl_true(v)) {
                return die(format!(
                    "duplicate key in comma-separated list property: {key}"
                ));
            }
            res.insert(key.clone(), part.to_string());
        } else {
            return die("missing key in comma-separated list property".into());
        }
    }

    Ok(res)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn net_format() -> Value {
        json!({
            "model": {"default_key": 1, "type": "string", "enum": ["e1000", "virtio", "vmxnet3"]},
            "bridge": {"type": "string", "format": "pve-bridge-id", "optional": 1},
            "firewall": {"type": "boolean", "optional": 1},
            "macaddr": {"type": "string", "format": "mac-addr", "optional": 1},
            "tag": {"type": "integer", "minimum": 1, "maximum": 4094, "optional": 1},
            "virtio": {"alias": "macaddr", "keyAlias": "model"},
            "e1000": {"alias": "macaddr", "keyAlias": "model"},
        })
    }

    fn parse_net(data: &str) -> Result<BTreeMap<String, String>, String> {
        let f = net_format();
        parse(f.as_object().unwrap(), data)
    }

    #[test]
    fn default_key_and_aliases_are_resolved() {
        let r = parse_net("virtio,bridge=vmbr0,firewall=true").unwrap();
        assert_eq!(r["model"], "virtio");
        assert_eq!(r["firewall"], "1");
        let r = parse_net("virtio=BC:24:11:AA:BB:CC,bridge=vmbr0").unwrap();
        assert_eq!(r["model"], "virtio");
        assert_eq!(r["macaddr"], "BC:24:11:AA:BB:CC");
    }

    #[test]
    fn parse_errors_have_pves_texts() {
        let cases = [
            (
                "virtio,foo=1",
                "invalid key in comma-separated list property: foo\n",
            ),
            (
                "virtio,bridge=a,bridge=b",
                "duplicate key in comma-separated list property: bridge\n",
            ),
            (
                "virtio,e1000",
                "duplicate key in comma-separated list property: model\n",
            ),
            (
                "virtio,bridge=",
                "missing key in comma-separated list property\n",
            ),
            (
                "model=virtio,e1000=BC:24:11:AA:BB:CC",
                "key alias 'model' is already defined\n",
            ),
        ];
        for (data, want) in cases {
            assert_eq!(parse_net(data).unwrap_err(), want, "{data}");
        }
        let f = json!({"a": {"type": "string"}});
        assert_eq!(
            parse(f.as_object().unwrap(), "x").unwrap_err(),
            "value without key, but schema does not define a default key\n"
        );
    }
}

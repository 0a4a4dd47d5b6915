//! Request parameters as pve-http-server extracts them: form-urlencoded (its own decoder:
//! `&` and `;` separate pairs, repeated keys are NUL-joined, `k=` is undefined) or a JSON body
//! (`decode_json`: strings and numbers are scalars, numbers in Perl's text; `true`/`false`,
//! arrays and objects stay references and `null` undef, for the schema check to judge), then
//! the query string merged over the body.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::param_value::ParamValue;

/// `split_abs_uri`: `/api2/<format>/<rel>` → (`/<rel>`, format).
pub(crate) fn split_abs_uri(path: &str) -> Option<(String, String)> {
    let rest = path.strip_prefix("/api2/")?;
    let rest = rest.trim_start_matches('/');
    let end = rest.find('/').unwrap_or(rest.len());
    let (format, rel) = rest.split_at(end);
    let mut chars = format.chars();
    let valid = chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && format.len() >= 2
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    if !valid {
        return None;
    }
    let rel = if rel.is_empty() {
        "/".to_string()
    } else {
        rel.to_string()
    };
    Some((rel, format.to_string()))
}

/// `%XX` and `+` decoding of one form component (invalid escapes stay as they are).
fn unescape(text: &str) -> String {
    let bytes = text.replace('+', " ").into_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
            if let Some(b) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `decode_urlencoded`: pairs separated by `&` or `;`; only the text up to a second `=` is the
/// value (Perl's `split(/=/)`); a key without a value is undefined (dropped here); repeated
/// keys are joined with NUL.
pub(crate) fn decode_urlencoded(data: &str) -> BTreeMap<String, String> {
    let mut res: BTreeMap<String, Option<String>> = BTreeMap::new();
    for kv in data.split(['&', ';']) {
        if kv.is_empty() {
            continue;
        }
        let mut fields: Vec<&str> = kv.split('=').collect();
        while fields.len() > 1 && fields.last().is_some_and(|f| f.is_empty()) {
            fields.pop();
        }
        let key = unescape(fields[0]);
        let value = fields.get(1).map(|v| unescape(v));
        let merged = match (value, res.get(&key)) {
            (Some(v), Some(Some(old))) => Some(format!("{old}\0{v}")),
            (v, _) => v,
        };
        res.insert(key, merged);
    }
    res.into_iter()
        .filter_map(|(k, v)| v.map(|v| (k, v)))
        .collect()
}

/// A JSON request body (must be an object), each value as `decode_json` leaves it.
pub(crate) fn decode_json(body: &[u8]) -> Result<BTreeMap<String, ParamValue>, String> {
    let value: Value =
        serde_json::from_slice(body).map_err(|e| format!("malformed JSON string: {e}"))?;
    let Value::Object(map) = value else {
        return Err("JSON body is not an object".into());
    };
    Ok(map
        .iter()
        .map(|(k, v)| (k.clone(), ParamValue::from_json(v)))
        .collect())
}

/// All parameters of a request: body (POST/PUT) then query, query winning; `_dc` removed.
pub(crate) fn extract(
    content_type: Option<&str>,
    body: &[u8],
    query: Option<&str>,
) -> Result<Vec<(String, ParamValue)>, String> {
    let form = |text: &str| -> BTreeMap<String, ParamValue> {
        decode_urlencoded(text)
            .into_iter()
            .map(|(k, v)| (k, ParamValue::Text(v)))
            .collect()
    };
    let mut params = if body.is_empty() {
        BTreeMap::new()
    } else if content_type.is_some_and(|ct| ct == "application/json") {
        decode_json(body)?
    } else {
        form(&String::from_utf8_lossy(body))
    };
    for (k, v) in form(query.unwrap_or("")) {
        params.insert(k, v);
    }
    params.remove("_dc");
    Ok(params.into_iter().collect())
}

/// The media type of a `Content-Type` header (`application/json; charset=utf-8` →
/// `application/json`), as `parse_content_type`.
pub(crate) fn media_type(header: &str) -> String {
    header
        .split([';', ','])
        .next()
        .unwrap_or("")
        .trim()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn abs_uris_split_into_format_and_relative_path() {
        assert_eq!(
            split_abs_uri("/api2/json/nodes/pve1"),
            Some(("/nodes/pve1".into(), "json".into()))
        );
        assert_eq!(
            split_abs_uri("/api2/json"),
            Some(("/".into(), "json".into()))
        );
        assert_eq!(
            split_abs_uri("/api2//extjs/x"),
            Some(("/x".into(), "extjs".into()))
        );
        assert_eq!(split_abs_uri("/api2/"), None);
        assert_eq!(split_abs_uri("/api3/json/x"), None);
    }

    #[test]
    fn form_decoding_follows_pve() {
        let m = decode_urlencoded("a=1&b=x+y%2Cz;c=%3D&a=2&empty=&flag&net0=virtio,bridge=vmbr0");
        assert_eq!(m["a"], "1\u{0}2");
        assert_eq!(m["b"], "x y,z");
        assert_eq!(m["c"], "=");
        assert!(!m.contains_key("empty"));
        assert!(!m.contains_key("flag"));
        // An unescaped '=' in a value cuts it (Perl's split).
        assert_eq!(m["net0"], "virtio,bridge");
        assert_eq!(decode_urlencoded("x=%zz%4")["x"], "%zz%4");
    }

    #[test]
    fn json_bodies_keep_perls_view_of_each_value() {
        let m = decode_json(
            br#"{"vmid": 100, "start": true, "full": false, "cpulimit": 1.5, "cores": 2.0,
            "name": "web", "delete": ["net1", "scsi2"], "memory": {"a": 1}, "x": null}"#,
        )
        .unwrap();
        let text = |s: &str| ParamValue::Text(s.to_string());
        assert_eq!(m["vmid"], text("100"));
        assert_eq!(m["start"], ParamValue::Bool(true));
        assert_eq!(m["full"], ParamValue::Bool(false));
        assert_eq!(m["cpulimit"], text("1.5"));
        // Perl holds 2.0 as a double and prints it as 2.
        assert_eq!(m["cores"], text("2"));
        assert_eq!(m["name"], text("web"));
        assert_eq!(m["delete"].ref_type(), Some("ARRAY"));
        assert_eq!(m["memory"].ref_type(), Some("HASH"));
        assert!(m["x"].is_null());
        assert!(decode_json(b"[1]").is_err());
        assert!(decode_json(b"{").is_err());
    }

    #[test]
    fn query_overrides_body_and_cache_buster_is_removed() {
        let p = extract(
            Some("application/x-www-form-urlencoded"),
            b"memory=1024&cores=2",
            Some("memory=2048&_dc=12345"),
        )
        .unwrap();
        let text = |s: &str| ParamValue::Text(s.to_string());
        assert_eq!(
            p,
            vec![("cores".into(), text("2")), ("memory".into(), text("2048"))]
        );
        let p = extract(
            Some("application/json"),
            br#"{"cores": 4, "start": true}"#,
            Some("start=0"),
        )
        .unwrap();
        assert_eq!(
            p,
            vec![("cores".into(), text("4")), ("start".into(), text("0"))]
        );
        assert_eq!(
            media_type("application/json; charset=utf-8"),
            "application/json"
        );
    }
}

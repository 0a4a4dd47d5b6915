//! `check_prop` / `check_object` of PVE's `JSONSchema.pm` for request values: plain scalars
//! (form fields, query parameters, JSON strings and numbers) and the references a JSON body
//! brings (`JSON::PP::Boolean`, ARRAY, HASH), which fail every scalar type but `boolean` with
//! `got <ref>`. The order of checks and every message text follow the Perl code: missing →
//! type → format → pattern → maxLength → minLength → maximum/minimum (numbers only) → enum;
//! references skip everything after the type but their elements or members.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::perl_truth::is_true;
use super::{formats, indexed, pattern, property_string};
use crate::param_value::ParamValue;

/// Errors by path (`vmid`, `net0.bridge`), as PVE's `errors` hash.
pub(crate) type Errors = BTreeMap<String, String>;

/// `add_error`: a second error for the same path is appended with a literal backslash-n,
/// because the Perl code joins with `'\n'` in single quotes.
pub(crate) fn add_error(errors: &mut Errors, path: &str, msg: impl Into<String>) {
    let path = if path.is_empty() { "_root" } else { path };
    let msg = msg.into();
    match errors.get_mut(path) {
        Some(old) => {
            old.push_str("\\n");
            old.push_str(&msg);
        }
        None => {
            errors.insert(path.to_string(), msg);
        }
    }
}

/// `is_number` (Perl regex semantics).
pub(crate) fn is_number(v: &str) -> bool {
    pattern::full_match("[+-]?(\\d+\\.\\d+|\\d+\\.|\\.\\d+|\\d+)([eE][+-]?\\d+)?", v)
}

/// `is_integer`.
pub(crate) fn is_integer(v: &str) -> bool {
    pattern::full_match("[+-]?\\d+", v)
}

/// A schema number (`maximum: 4094`, `minimum: "0"`) as Perl prints it and as a float.
fn schema_number(v: &Value) -> Option<(String, f64)> {
    match v {
        Value::Number(n) => {
            let f = n.as_f64()?;
            let text = match (n.as_i64(), n.as_u64()) {
                (Some(i), _) => i.to_string(),
                (None, Some(u)) => u.to_string(),
                _ => format!("{f}"),
            };
            Some((text, f))
        }
        Value::String(s) => Some((s.clone(), s.trim().parse().ok()?)),
        _ => None,
    }
}

fn scalar_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `$normalize_legacy_param_formats` of `RESTHandler::handle`, for one top-level parameter: an
/// array given for a `string` whose format is a `*-list` becomes the comma-joined string.
pub(crate) fn normalize_list(schema: &Value, value: &mut ParamValue) {
    let is_list = schema.get("type").and_then(Value::as_str) == Some("string")
        && schema
            .get("format")
            .and_then(Value::as_str)
            .is_some_and(|f| f.ends_with("-list"));
    if let (true, ParamValue::Array(items)) = (is_list, &*value) {
        let joined = items
            .iter()
            .map(|v| ParamValue::from_json(v).perl_string().unwrap_or_default())
            .collect::<Vec<_>>()
            .join(",");
        *value = ParamValue::Text(joined);
    }
}

/// One type check; `false` = error added.
fn check_type(path: &str, ty: &Value, value: &ParamValue, errors: &mut Errors) -> bool {
    match ty {
        Value::String(t) => {
            let Some(text) = (match value {
                ParamValue::Text(text) => Some(text.as_str()),
                _ => None,
            }) else {
                return check_reference_type(path, t, value, errors);
            };
            let ok = match t.as_str() {
                "boolean" => text == "1" || text == "0",
                "integer" => is_integer(text),
                "number" => is_number(text),
                "null" => {
                    add_error(
                        errors,
                        path,
                        "type check ('null') failed - value is not null",
                    );
                    return false;
                }
                "object" => {
                    let ok = serde_json::from_str::<Value>(text).is_ok_and(|v| v.is_object());
                    if !ok {
                        add_error(errors, path, "type check ('object') failed");
                    }
                    return ok;
                }
                _ => true,
            };
            if !ok {
                add_error(
                    errors,
                    path,
                    format!("type check ('{t}') failed - got '{text}'"),
                );
            }
            ok
        }
        Value::Array(types) => {
            for t in types {
                let mut tmp = Errors::new();
                if check_type(path, t, value, &mut tmp) {
                    return true;
                }
            }
            let text: Vec<String> = types.iter().map(scalar_text).collect();
            add_error(
                errors,
                path,
                format!("type check ('{}') failed", text.join("|")),
            );
            false
        }
        Value::Object(_) => {
            let mut tmp = Errors::new();
            check_prop(Some(value), ty, path, &mut tmp);
            if tmp.is_empty() {
                return true;
            }
            add_error(errors, path, "type check failed");
            false
        }
        _ => true,
    }
}

/// `check_type` for a reference (`ref($value)` is set): `array` and `object` want their own
/// kind, `boolean` takes a JSON boolean, `any` anything, every other type fails with the
/// reference's name.
fn check_reference_type(path: &str, ty: &str, value: &ParamValue, errors: &mut Errors) -> bool {
    match (ty, value) {
        ("any", _)
        | ("array", ParamValue::Array(_))
        | ("object", ParamValue::Object(_))
        | ("boolean", ParamValue::Bool(_)) => true,
        ("array" | "object" | "coderef", _) => {
            add_error(errors, path, format!("type check ('{ty}') failed"));
            false
        }
        ("null", _) => {
            add_error(
                errors,
                path,
                "type check ('null') failed - value is not null",
            );
            false
        }
        _ => {
            let got = value.ref_type().unwrap_or("SCALAR");
            add_error(
                errors,
                path,
                format!("type check ('{ty}') failed - got {got}"),
            );
            false
        }
    }
}

/// `check_prop` for one (possibly absent) value.
pub(crate) fn check_prop(
    value: Option<&ParamValue>,
    schema: &Value,
    path: &str,
    errors: &mut Errors,
) {
    let Some(obj) = schema.as_object() else {
        add_error(errors, path, "Invalid schema definition.");
        return;
    };
    // Perl's undef (JSON null) is an absent value.
    let value = value.filter(|v| !v.is_null());
    if let Some(Value::Array(alternatives)) = obj.get("oneOf") {
        // Typed alternatives: the value must satisfy one of them.
        if let Some(v) = value {
            let results: Vec<Errors> = alternatives
                .iter()
                .map(|alt| {
                    let mut tmp = Errors::new();
                    check_prop(Some(v), alt, path, &mut tmp);
                    tmp
                })
                .collect();
            if !results.iter().any(BTreeMap::is_empty)
                && let Some(first) = results.into_iter().next()
            {
                for (p, m) in first {
                    add_error(errors, &p, m);
                }
            }
        }
        return;
    }
    let Some(value) = value else {
        if obj.get("type").and_then(Value::as_str) == Some("null") {
            return;
        }
        if !is_true(obj.get("optional")) && !obj.contains_key("alias") && !is_true(obj.get("group"))
        {
            add_error(errors, path, "property is missing and it is not optional");
        }
        return;
    };
    if let Some(ty) = obj.get("type")
        && !check_type(path, ty, value, errors)
    {
        return;
    }
    let text = match value {
        ParamValue::Text(text) => text.as_str(),
        _ => return check_reference(value, obj, path, errors),
    };
    match obj.get("type").and_then(Value::as_str) {
        Some("array") => {
            // Arrays arrive NUL separated (repeated form fields).
            if let Some(items) = obj.get("items") {
                for (i, item) in text.split('\0').enumerate() {
                    let item = ParamValue::Text(item.to_string());
                    check_prop(Some(&item), items, &format!("{path}[{i}]"), errors);
                }
            }
            return;
        }
        Some("object") => return,
        _ => {}
    }
    check_scalar(text, obj, path, errors);
}

/// What `check_prop` does with a reference that passed the type check: an array's elements
/// against `items`, an object's members against `properties`; no format, pattern, length,
/// range or enum check applies to a reference.
fn check_reference(value: &ParamValue, obj: &Map<String, Value>, path: &str, errors: &mut Errors) {
    match value {
        ParamValue::Array(items) => {
            if let Some(item_schema) = obj.get("items") {
                for (i, item) in items.iter().enumerate() {
                    let item = ParamValue::from_json(item);
                    check_prop(Some(&item), item_schema, &format!("{path}[{i}]"), errors);
                }
            }
        }
        _ if obj.contains_key("properties") || obj.contains_key("additionalProperties") => {
            let ParamValue::Object(map) = value else {
                add_error(errors, path, "an object is required");
                return;
            };
            let members: BTreeMap<String, ParamValue> = map
                .iter()
                .map(|(k, v)| (k.clone(), ParamValue::from_json(v)))
                .collect();
            let properties = obj
                .get("properties")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            check_object(
                path,
                &properties,
                &members,
                obj.get("additionalProperties"),
                false,
                errors,
            );
        }
        _ => {}
    }
}

/// The checks of a plain scalar after its type: format, pattern, lengths, range, enum.
fn check_scalar(value: &str, obj: &Map<String, Value>, path: &str, errors: &mut Errors) {
    if let Some(format) = obj.get("format")
        && let Err(e) = check_format(format, value, path)
    {
        add_error(errors, path, format!("invalid format - {e}"));
        return;
    }
    if let Some(pat) = obj.get("pattern").and_then(Value::as_str)
        && !pattern::full_match(pat, value)
    {
        add_error(errors, path, "value does not match the regex pattern");
        return;
    }
    let len = value.chars().count();
    if let Some((text, max)) = obj.get("maxLength").and_then(schema_number)
        && len as f64 > max
    {
        add_error(
            errors,
            path,
            format!("value may only be {text} characters long"),
        );
        return;
    }
    if let Some((text, min)) = obj.get("minLength").and_then(schema_number)
        && (len as f64) < min
    {
        add_error(
            errors,
            path,
            format!("value must be at least {text} characters long"),
        );
        return;
    }
    if is_number(value) {
        let number: f64 = value.trim_start_matches('+').parse().unwrap_or(f64::NAN);
        if let Some((text, max)) = obj.get("maximum").and_then(schema_number)
            && number > max
        {
            add_error(
                errors,
                path,
                format!("value must have a maximum value of {text}"),
            );
            return;
        }
        if let Some((text, min)) = obj.get("minimum").and_then(schema_number)
            && number < min
        {
            add_error(
                errors,
                path,
                format!("value must have a minimum value of {text}"),
            );
            return;
        }
    }
    if let Some(Value::Array(allowed)) = obj.get("enum") {
        let allowed: Vec<String> = allowed.iter().map(scalar_text).collect();
        if !allowed.iter().any(|a| a == value) {
            add_error(
                errors,
                path,
                format!(
                    "value '{value}' does not have a value in the enumeration '{}'",
                    allowed.join(", ")
                ),
            );
        }
    }
}

fn join_path(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// `check_object`: every declared property, then every given key (`requires`, unknown keys).
/// `additional` is the schema's `additionalProperties` (absent = allowed). With `indexed`,
/// schema keys `net[n]` stand for `net0`, `net1`, ... (top-level API parameters). A key whose
/// value is undef (JSON `null`) counts as absent for the declared properties but is still a
/// given key.
pub(crate) fn check_object(
    path: &str,
    properties: &Map<String, Value>,
    values: &BTreeMap<String, ParamValue>,
    additional: Option<&Value>,
    indexed: bool,
    errors: &mut Errors,
) {
    for (k, schema) in properties {
        if indexed && k.ends_with("[n]") {
            continue;
        }
        check_prop(values.get(k), schema, &join_path(path, k), errors);
    }
    for (k, v) in values {
        let newpath = join_path(path, k);
        let declared = if indexed && k.ends_with("[n]") {
            None
        } else {
            properties.get(k)
        };
        let subschema = match declared {
            Some(s) => Some(s),
            None if indexed => {
                let found = indexed::lookup(properties, k);
                if let Some(s) = found {
                    check_prop(Some(v), s, &newpath, errors);
                }
                found
            }
            None => None,
        };
        if let Some(sub) = subschema {
            match sub.get("requires") {
                Some(Value::String(req)) if values.get(req).is_none_or(ParamValue::is_null) => {
                    add_error(
                        errors,
                        &join_path(path, req),
                        format!("missing property - '{newpath}' requires this property"),
                    )
                }
                _ => {}
            }
            continue;
        }
        match additional {
            Some(ap @ Value::Object(_)) => check_prop(Some(v), ap, &newpath, errors),
            Some(ap) if !is_true(Some(ap)) => add_error(
                errors,
                &newpath,
                "property is not defined in schema and the schema does not allow additional \
                 properties",
            ),
            _ => {}
        }
    }
}

/// `check_format`: a property-string format (inline, or registered by name) is split and its
/// sub-values checked here, recursing through [`check_object`]; any other name is a named
/// format's. `Err` carries the `$@` text (with trailing newline).
fn check_format(format: &Value, value: &str, path: &str) -> Result<(), String> {
    if let Some(map) = format.as_object() {
        return check_property_string(map, value, path);
    }
    let Some(name) = format.as_str() else {
        return Ok(());
    };
    if let Some(hash) = formats::hash_format(name)
        && let Some(map) = hash.as_object()
    {
        return check_property_string(map, value, path);
    }
    formats::check_named(name, value)
}

/// `parse_property_string`: split `data` as the `format` (sub-key → schema) says and check
/// every sub-value. `path` is the parameter name, used for the nested error keys.
///
/// `Err` is the text PVE puts after `invalid format - `.
pub(crate) fn check_property_string(
    format: &Map<String, Value>,
    data: &str,
    path: &str,
) -> Result<(), String> {
    let res: BTreeMap<String, ParamValue> = property_string::parse(format, data)?
        .into_iter()
        .map(|(k, v)| (k, ParamValue::Text(v)))
        .collect();
    let mut errors = Errors::new();
    check_object(
        path,
        format,
        &res,
        Some(&Value::from(0)),
        false,
        &mut errors,
    );
    if errors.is_empty() {
        return Ok(());
    }
    // PVE::Exception stringification: message, then one "key: error" line per error.
    let mut text = String::from("format error\n");
    for (k, v) in &errors {
        text.push_str(&format!("{k}: {v}\n"));
    }
    Err(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check_net(data: &str) -> Result<(), String> {
        let f = json!({
            "model": {"default_key": 1, "type": "string", "enum": ["e1000", "virtio", "vmxnet3"]},
            "bridge": {"type": "string", "format": "pve-bridge-id", "optional": 1},
            "firewall": {"type": "boolean", "optional": 1},
            "macaddr": {"type": "string", "format": "mac-addr", "optional": 1},
            "tag": {"type": "integer", "minimum": 1, "maximum": 4094, "optional": 1},
            "virtio": {"alias": "macaddr", "keyAlias": "model"},
            "e1000": {"alias": "macaddr", "keyAlias": "model"},
        });
        check_property_string(f.as_object().unwrap(), data, "net0")
    }

    #[test]
    fn a_valid_property_string_passes() {
        assert_eq!(
            check_net("virtio=BC:24:11:AA:BB:CC,bridge=vmbr0,tag=5"),
            Ok(())
        );
    }

    #[test]
    fn split_errors_come_through_unchanged() {
        assert_eq!(
            check_net("virtio,foo=1").unwrap_err(),
            "invalid key in comma-separated list property: foo\n"
        );
    }

    #[test]
    fn sub_value_errors_are_nested_under_the_parameter() {
        assert_eq!(
            check_net("virtio,tag=5000").unwrap_err(),
            "format error\nnet0.tag: value must have a maximum value of 4094\n"
        );
        assert_eq!(
            check_net("bridge=vmbr0").unwrap_err(),
            "format error\nnet0.model: property is missing and it is not optional\n"
        );
        assert_eq!(
            check_net("virtio,firewall=maybe").unwrap_err(),
            "format error\nnet0.firewall: type check ('boolean') failed - got 'maybe'\n"
        );
        // A failing named format inside keeps its own newline: two newlines in a row.
        assert_eq!(
            check_net("virtio,macaddr=01:00:00:00:00:00").unwrap_err(),
            "format error\nnet0.macaddr: invalid format - value does not look like a valid \
             unicast MAC address\n\n"
        );
    }
}

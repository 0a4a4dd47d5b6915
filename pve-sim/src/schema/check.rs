//! `check_prop` / `check_object` of PVE's `JSONSchema.pm` for request values, which arrive as
//! strings (form fields, query parameters, or JSON scalars converted by the edge). The order
//! of checks and every message text follow the Perl code: missing → type → format → pattern →
//! maxLength → minLength → maximum/minimum (numbers only) → enum.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::{formats, indexed, pattern};

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

/// Perl truthiness of a schema attribute (`optional: 1`, `default_key: 1`, ...).
pub(crate) fn is_true(v: Option<&Value>) -> bool {
    match v {
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_f64().is_some_and(|f| f != 0.0),
        Some(Value::String(s)) => formats::perl_true(s),
        Some(Value::Array(_) | Value::Object(_)) => true,
        _ => false,
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

/// One type check; `false` = error added.
fn check_type(path: &str, ty: &Value, value: &str, errors: &mut Errors) -> bool {
    match ty {
        Value::String(t) => {
            let ok = match t.as_str() {
                "boolean" => value == "1" || value == "0",
                "integer" => is_integer(value),
                "number" => is_number(value),
                "null" => {
                    add_error(
                        errors,
                        path,
                        "type check ('null') failed - value is not null",
                    );
                    return false;
                }
                "object" => {
                    let ok = serde_json::from_str::<Value>(value).is_ok_and(|v| v.is_object());
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
                    format!("type check ('{t}') failed - got '{value}'"),
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

/// `check_prop` for one (possibly absent) value.
pub(crate) fn check_prop(value: Option<&str>, schema: &Value, path: &str, errors: &mut Errors) {
    let Some(obj) = schema.as_object() else {
        add_error(errors, path, "Invalid schema definition.");
        return;
    };
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
    match obj.get("type").and_then(Value::as_str) {
        Some("array") => {
            // Arrays arrive NUL separated (repeated form fields, JSON arrays).
            if let Some(items) = obj.get("items") {
                for (i, item) in value.split('\0').enumerate() {
                    check_prop(Some(item), items, &format!("{path}[{i}]"), errors);
                }
            }
            return;
        }
        Some("object") => return,
        _ => {}
    }
    if let Some(format) = obj.get("format")
        && let Err(e) = formats::check_format(format, value, path)
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
/// schema keys `net[n]` stand for `net0`, `net1`, ... (top-level API parameters).
pub(crate) fn check_object(
    path: &str,
    properties: &Map<String, Value>,
    values: &BTreeMap<String, String>,
    additional: Option<&Value>,
    indexed: bool,
    errors: &mut Errors,
) {
    for (k, schema) in properties {
        if indexed && k.ends_with("[n]") {
            continue;
        }
        check_prop(
            values.get(k).map(String::as_str),
            schema,
            &join_path(path, k),
            errors,
        );
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
                Some(Value::String(req)) if !values.contains_key(req) => add_error(
                    errors,
                    &join_path(path, req),
                    format!("missing property - '{newpath}' requires this property"),
                ),
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

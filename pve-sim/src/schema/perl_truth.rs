//! Perl truthiness, as PVE's Perl code tests schema attributes (`optional: 1`,
//! `default_key: 1`) and string values (`""` and `"0"` are false). Every part of the schema
//! checker asks it, so it sits below all of them.

use serde_json::Value;

/// Perl truthiness of a string (`""` and `"0"` are false).
pub(crate) fn perl_true(value: &str) -> bool {
    !value.is_empty() && value != "0"
}

/// Perl truthiness of a schema attribute (`optional: 1`, `default_key: 1`, ...).
pub(crate) fn is_true(v: Option<&Value>) -> bool {
    match v {
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_f64().is_some_and(|f| f != 0.0),
        Some(Value::String(s)) => perl_true(s),
        Some(Value::Array(_) | Value::Object(_)) => true,
        _ => false,
    }
}

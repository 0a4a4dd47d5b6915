//! Checking a response's `data` against the method's `returns` schema: the simulator emits the
//! canonical types of the schema (outside quirks mode), and its tests use this to prove it.
//!
//! Only type mismatches are reported: declared properties with a wrong type and missing
//! non-optional properties. Extra properties are fine (PVE adds many fields the schema does
//! not declare). PVE emits booleans as `0`/`1`, so a boolean also accepts those integers.

use serde_json::Value;

use super::perl_truth::is_true;

fn describe(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("boolean {b}"),
        Value::Number(n) => format!("number {n}"),
        Value::String(s) => format!("string {s:?}"),
        Value::Array(_) => "array".into(),
        Value::Object(_) => "object".into(),
    }
}

fn is_integral(v: &Value) -> bool {
    match v {
        Value::Number(n) => {
            n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        _ => false,
    }
}

/// Whether `value` has the single JSON-schema type `ty` (containers only at the top level).
fn has_type(ty: &str, value: &Value) -> bool {
    match ty {
        "null" => value.is_null(),
        "string" => value.is_string(),
        "integer" => is_integral(value),
        "number" => value.is_number(),
        "boolean" => {
            value.is_boolean() || (is_integral(value) && matches!(value.as_f64(), Some(0.0 | 1.0)))
        }
        "array" => value.is_array(),
        "object" => value.is_object(),
        _ => true,
    }
}

/// Append a line per mismatch of `value` against `schema` at `path`.
pub(crate) fn check_value(schema: &Value, value: &Value, path: &str, out: &mut Vec<String>) {
    let Some(obj) = schema.as_object() else {
        return;
    };
    match obj.get("type") {
        Some(Value::String(ty)) if !has_type(ty, value) => {
            out.push(format!("{path}: expected {ty}, got {}", describe(value)));
            return;
        }
        Some(Value::Array(types)) => {
            let names: Vec<&str> = types.iter().filter_map(Value::as_str).collect();
            if !names.iter().any(|t| has_type(t, value)) {
                out.push(format!(
                    "{path}: expected {}, got {}",
                    names.join("|"),
                    describe(value)
                ));
                return;
            }
        }
        _ => {}
    }
    match value {
        Value::Array(items) => {
            if let Some(item_schema) = obj.get("items") {
                for (i, item) in items.iter().enumerate() {
                    check_value(item_schema, item, &format!("{path}[{i}]"), out);
                }
            }
        }
        Value::Object(map) => {
            let Some(props) = obj.get("properties").and_then(Value::as_object) else {
                return;
            };
            for (k, prop) in props {
                let sub = format!("{path}.{k}");
                match map.get(k) {
                    None => {
                        if !is_true(prop.get("optional")) {
                            out.push(format!("{sub}: property is missing and it is not optional"));
                        }
                    }
                    // PVE serializes an undefined optional value as null.
                    Some(Value::Null) if is_true(prop.get("optional")) => {}
                    Some(v) => check_value(prop, v, &sub, out),
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(schema: Value, value: Value) -> Vec<String> {
        let mut out = Vec::new();
        check_value(&schema, &value, "data", &mut out);
        out
    }

    #[test]
    fn type_mismatches_are_listed_with_their_path() {
        let schema = json!({"type": "array", "items": {"type": "object", "properties": {
            "vmid": {"type": "integer"},
            "name": {"type": "string", "optional": 1},
            "template": {"type": "boolean", "optional": 1},
            "cpu": {"type": "number", "optional": 1},
        }}});
        assert!(
            check(
                schema.clone(),
                json!([{"vmid": 100, "template": 1, "cpu": 0.5, "x": 1}])
            )
            .is_empty()
        );
        assert_eq!(
            check(schema.clone(), json!([{"vmid": "100"}])),
            vec!["data[0].vmid: expected integer, got string \"100\""]
        );
        assert_eq!(
            check(schema.clone(), json!([{"vmid": 1.5}])),
            vec!["data[0].vmid: expected integer, got number 1.5"]
        );
        assert_eq!(
            check(schema, json!([{"name": "a"}])),
            vec!["data[0].vmid: property is missing and it is not optional"]
        );
        assert_eq!(
            check(json!({"type": "null"}), json!("x")),
            vec!["data: expected null, got string \"x\""]
        );
        assert!(check(json!({"type": "null"}), Value::Null).is_empty());
    }
}

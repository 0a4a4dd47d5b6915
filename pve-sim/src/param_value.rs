//! A request parameter as PVE's Perl code holds it once pve-http-server has decoded the
//! request (`extract_params`: `decode_urlencoded` or `decode_json`): a plain scalar, or one of
//! the values only a JSON body produces — a `JSON::PP::Boolean` object for `true`/`false`, an
//! ARRAY or HASH reference, or undef for `null`.
//!
//! The schema check (`JSONSchema::check_type`) tells references from scalars (`type check
//! ('integer') failed - got HASH`), so the edge hands these values to validation unflattened;
//! only validated parameters become the form strings the model reads.

use serde_json::{Map, Number, Value};

/// One parameter value, as Perl sees it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ParamValue {
    /// A plain scalar: form field, query parameter, path parameter, JSON string, or a JSON
    /// number in Perl's text for it.
    Text(String),
    /// JSON `true`/`false`: a `JSON::PP::Boolean` object (a reference that stringifies to
    /// `1`/`0`).
    Bool(bool),
    /// A JSON array: an ARRAY reference.
    Array(Vec<Value>),
    /// A JSON object: a HASH reference.
    Object(Map<String, Value>),
    /// JSON `null`: undef, as if the key had not been sent (but the key exists).
    Null,
}

impl ParamValue {
    /// The value `decode_json` leaves for a JSON value.
    pub(crate) fn from_json(value: &Value) -> Self {
        match value {
            Value::Null => Self::Null,
            Value::Bool(b) => Self::Bool(*b),
            Value::Number(n) => Self::Text(perl_number(n)),
            Value::String(s) => Self::Text(s.clone()),
            Value::Array(items) => Self::Array(items.clone()),
            Value::Object(map) => Self::Object(map.clone()),
        }
    }

    /// Whether the value is undef.
    pub(crate) fn is_null(&self) -> bool {
        matches!(self, Self::Null)
    }

    /// Perl's `ref($value)`: the class or reference type, `None` for scalars and undef.
    pub(crate) fn ref_type(&self) -> Option<&'static str> {
        match self {
            Self::Bool(_) => Some("JSON::PP::Boolean"),
            Self::Array(_) => Some("ARRAY"),
            Self::Object(_) => Some("HASH"),
            Self::Text(_) | Self::Null => None,
        }
    }

    /// Perl's `"$value"` (`None` for undef). References print as `ARRAY(0x…)`/`HASH(0x…)`;
    /// the address is a fixed placeholder here, PVE prints the real one.
    pub(crate) fn perl_string(&self) -> Option<String> {
        match self {
            Self::Text(s) => Some(s.clone()),
            Self::Bool(b) => Some(bool_text(*b).to_string()),
            Self::Array(_) => Some(REF_ARRAY_TEXT.to_string()),
            Self::Object(_) => Some(REF_HASH_TEXT.to_string()),
            Self::Null => None,
        }
    }

    /// The form string the model reads after validation (`None` = not sent): booleans as
    /// `1`/`0`, array elements joined with NUL like repeated form keys, objects as JSON text.
    pub(crate) fn into_form_text(self) -> Option<String> {
        match self {
            Self::Text(s) => Some(s),
            Self::Bool(b) => Some(bool_text(b).to_string()),
            Self::Array(items) => Some(
                items
                    .iter()
                    .map(|v| {
                        ParamValue::from_json(v)
                            .into_form_text()
                            .unwrap_or_default()
                    })
                    .collect::<Vec<_>>()
                    .join("\0"),
            ),
            Self::Object(map) => Some(Value::Object(map).to_string()),
            Self::Null => None,
        }
    }
}

/// Placeholder texts of stringified references.
const REF_ARRAY_TEXT: &str = "ARRAY(0x0)";
const REF_HASH_TEXT: &str = "HASH(0x0)";

fn bool_text(b: bool) -> &'static str {
    if b { "1" } else { "0" }
}

/// The text Perl gives a JSON number after `decode_json`: integers as digits; a number with a
/// fraction or exponent is a double (NV), which Perl prints with `%.15g` (`2.0` → `2`, `1.50` →
/// `1.5`, `1e20` → `1e+20`).
pub(crate) fn perl_number(n: &Number) -> String {
    if let Some(i) = n.as_i64() {
        return i.to_string();
    }
    if let Some(u) = n.as_u64() {
        return u.to_string();
    }
    perl_double(n.as_f64().unwrap_or(f64::NAN))
}

/// C's `%.15g` of a double, with Perl's names for the non-finite values.
fn perl_double(x: f64) -> String {
    const DIGITS: i32 = 15;
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Inf" } else { "-Inf" }.into();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0" } else { "0" }.into();
    }
    // The exponent after rounding to 15 significant digits decides the style, as in C.
    let sci = format!("{:.*e}", (DIGITS - 1) as usize, x);
    let (mantissa, exponent) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if !(-4..DIGITS).contains(&exponent) {
        let sign = if exponent < 0 { '-' } else { '+' };
        format!(
            "{}e{sign}{:02}",
            strip_fraction_zeros(mantissa),
            exponent.abs()
        )
    } else {
        let decimals = usize::try_from(DIGITS - 1 - exponent).unwrap_or(0);
        strip_fraction_zeros(&format!("{x:.decimals$}")).to_string()
    }
}

/// `%g` drops trailing zeros of the fraction, and the point when nothing is left.
fn strip_fraction_zeros(text: &str) -> &str {
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn number_text(json_text: &str) -> String {
        let v: Value = serde_json::from_str(json_text).unwrap();
        match ParamValue::from_json(&v) {
            ParamValue::Text(t) => t,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn json_numbers_read_as_perl_prints_them() {
        for (json, perl) in [
            ("100", "100"),
            ("-7", "-7"),
            ("18446744073709551615", "18446744073709551615"),
            ("2.0", "2"),
            ("1.50", "1.5"),
            ("0.1", "0.1"),
            ("1e3", "1000"),
            ("1e20", "1e+20"),
            ("1.5e-7", "1.5e-07"),
            ("0.0001", "0.0001"),
            ("123456789012345.6", "123456789012346"),
            ("1234567890123456.7", "1.23456789012346e+15"),
            ("-0.5", "-0.5"),
        ] {
            assert_eq!(number_text(json), perl, "{json}");
        }
    }

    #[test]
    fn references_are_told_from_scalars() {
        let cases = [
            (json!("x"), None, Some("x")),
            (json!(true), Some("JSON::PP::Boolean"), Some("1")),
            (json!(false), Some("JSON::PP::Boolean"), Some("0")),
            (json!([1]), Some("ARRAY"), Some("ARRAY(0x0)")),
            (json!({"a": 1}), Some("HASH"), Some("HASH(0x0)")),
            (json!(null), None, None),
        ];
        for (json, ref_type, text) in cases {
            let v = ParamValue::from_json(&json);
            assert_eq!(v.ref_type(), ref_type, "{json}");
            assert_eq!(v.perl_string().as_deref(), text, "{json}");
        }
    }

    #[test]
    fn validated_values_become_form_strings() {
        let text = |j: Value| ParamValue::from_json(&j).into_form_text();
        assert_eq!(text(json!(true)).as_deref(), Some("1"));
        assert_eq!(text(json!(false)).as_deref(), Some("0"));
        assert_eq!(text(json!(4)).as_deref(), Some("4"));
        assert_eq!(
            text(json!(["a", 2, true])).as_deref(),
            Some("a\u{0}2\u{0}1")
        );
        assert_eq!(text(json!({"a": 1})).as_deref(), Some(r#"{"a":1}"#));
        assert_eq!(text(json!(null)), None);
    }
}

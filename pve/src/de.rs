//! Lenient decoding for PVE's output types.
//!
//! PVE validates input but not output: numbers arrive as JSON numbers or numeric strings,
//! booleans as `0`/`1`, `true`/`false`, `""` or `"1"`. Every numeric and boolean field of a
//! response type goes through these functions (`#[serde(deserialize_with = ...)]`).

use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};
use std::fmt;

struct NumVisitor;

impl<'de> Visitor<'de> for NumVisitor {
    type Value = Option<f64>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a number or a numeric string")
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Some(v as f64))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Some(v as f64))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(Some(v))
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Ok(Some(if v { 1.0 } else { 0.0 }))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        let t = v.trim();
        if t.is_empty() {
            return Ok(None);
        }
        t.parse::<f64>()
            .map(Some)
            .map_err(|_| E::custom(format!("'{v}' is not a number")))
    }
    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(NumVisitor)
    }
}

fn any_num<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    d.deserialize_any(NumVisitor)
}

fn to_u64<E: de::Error>(v: f64) -> Result<u64, E> {
    if v < 0.0 || v.fract() != 0.0 || !v.is_finite() {
        return Err(E::custom(format!("{v} is not a non-negative integer")));
    }
    Ok(v as u64)
}

/// A required unsigned integer (number or numeric string).
pub fn u64_lenient<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    any_num(d)?
        .ok_or_else(|| de::Error::custom("missing number"))
        .and_then(to_u64)
}

/// An optional unsigned integer (`null`, `""` and absence are `None`).
pub fn opt_u64_lenient<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    any_num(d)?.map(to_u64).transpose()
}

/// A required `u32` (VMIDs, counts).
pub fn u32_lenient<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    let v = u64_lenient(d)?;
    u32::try_from(v).map_err(|_| de::Error::custom(format!("{v} is out of range")))
}

/// An optional `u32`.
pub fn opt_u32_lenient<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    opt_u64_lenient(d)?
        .map(|v| u32::try_from(v).map_err(|_| de::Error::custom(format!("{v} is out of range"))))
        .transpose()
}

/// An optional float (CPU fractions, used fractions).
pub fn opt_f64_lenient<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    any_num(d)
}

/// A required float.
pub fn f64_lenient<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    any_num(d)?.ok_or_else(|| de::Error::custom("missing number"))
}

struct BoolVisitor;

impl Visitor<'_> for BoolVisitor {
    type Value = Option<bool>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a boolean as 0/1, true/false or a string of those")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Ok(Some(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Some(v != 0))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Some(v != 0))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(Some(v != 0.0))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        match v.trim().to_ascii_lowercase().as_str() {
            "" => Ok(None),
            "1" | "true" | "yes" | "on" => Ok(Some(true)),
            "0" | "false" | "no" | "off" => Ok(Some(false)),
            _ => Err(E::custom(format!("'{v}' is not a boolean"))),
        }
    }
    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
}

/// An optional boolean (`""`/`null`/absent = `None`).
pub fn opt_bool_lenient<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    d.deserialize_any(BoolVisitor)
}

/// A boolean where absence and `""` mean `false`.
pub fn bool_lenient<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    Ok(opt_bool_lenient(d)?.unwrap_or(false))
}

/// A string that PVE sometimes sends as a number (`"vmid":"506"`, tag lists, names).
pub fn string_lenient<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let v = serde_json::Value::deserialize(d)?;
    match v {
        serde_json::Value::String(s) => Ok(s),
        serde_json::Value::Number(n) => Ok(n.to_string()),
        serde_json::Value::Bool(b) => Ok(if b { "1" } else { "0" }.into()),
        serde_json::Value::Null => Ok(String::new()),
        other => Err(de::Error::custom(format!("expected a string, got {other}"))),
    }
}

/// An optional string-or-number.
pub fn opt_string_lenient<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let v = Option::<serde_json::Value>::deserialize(d)?;
    match v {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::String(s)) => Ok(Some(s)),
        Some(serde_json::Value::Number(n)) => Ok(Some(n.to_string())),
        Some(serde_json::Value::Bool(b)) => Ok(Some(if b { "1" } else { "0" }.into())),
        Some(other) => Err(de::Error::custom(format!("expected a string, got {other}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Deserialize, Debug)]
    struct T {
        #[serde(deserialize_with = "u64_lenient")]
        a: u64,
        #[serde(default, deserialize_with = "opt_u64_lenient")]
        b: Option<u64>,
        #[serde(default, deserialize_with = "bool_lenient")]
        c: bool,
        #[serde(default, deserialize_with = "opt_f64_lenient")]
        d: Option<f64>,
        #[serde(default, deserialize_with = "string_lenient")]
        e: String,
    }

    #[test]
    fn numbers_and_numeric_strings_decode_alike() {
        for json in [
            r#"{"a":2048,"b":"7","c":1,"d":"0.5","e":506}"#,
            r#"{"a":"2048","b":7,"c":"1","d":0.5,"e":"506","unknown":[1]}"#,
            r#"{"a":2048.0,"b":7,"c":true,"d":0.5,"e":"506"}"#,
        ] {
            let t: T = serde_json::from_str(json).unwrap();
            assert_eq!(
                (t.a, t.b, t.c, t.d, t.e.as_str()),
                (2048, Some(7), true, Some(0.5), "506")
            );
        }
    }

    #[test]
    fn empty_and_missing_are_none_or_false() {
        let t: T = serde_json::from_str(r#"{"a":"1","b":"","c":""}"#).unwrap();
        assert_eq!((t.b, t.c, t.d), (None, false, None));
        let t: T = serde_json::from_str(r#"{"a":1,"b":null,"c":0}"#).unwrap();
        assert_eq!((t.b, t.c), (None, false));
    }

    #[test]
    fn garbage_is_refused() {
        assert!(serde_json::from_str::<T>(r#"{"a":"abc"}"#).is_err());
        assert!(serde_json::from_str::<T>(r#"{"a":-1}"#).is_err());
        assert!(serde_json::from_str::<T>(r#"{"a":1,"c":"maybe"}"#).is_err());
    }
}

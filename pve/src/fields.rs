//! Which JSON fields a response type reads, found from its `Deserialize` impl without any
//! data: serde hands a struct's field names (after `rename`) to `deserialize_struct`. The
//! schema-conformance test uses this to check every field the client reads against the
//! official schema's `returns`.

use serde::de::{self, DeserializeOwned, Visitor};
use std::cell::RefCell;
use std::fmt;

thread_local! {
    static CAPTURED: RefCell<Option<&'static [&'static str]>> = const { RefCell::new(None) };
}

#[derive(Debug)]
struct Stop;

impl fmt::Display for Stop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("field capture")
    }
}
impl std::error::Error for Stop {}
impl de::Error for Stop {
    fn custom<T: fmt::Display>(_msg: T) -> Self {
        Stop
    }
}

struct Capture;

impl<'de> de::Deserializer<'de> for Capture {
    type Error = Stop;

    fn deserialize_any<V: Visitor<'de>>(self, _v: V) -> Result<V::Value, Stop> {
        Err(Stop)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _v: V,
    ) -> Result<V::Value, Stop> {
        CAPTURED.with(|c| *c.borrow_mut() = Some(fields));
        Err(Stop)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map enum identifier ignored_any
    }
}

/// The JSON field names `T` reads, when `T` deserializes as a struct; `None` otherwise (maps,
/// scalars, `flatten`ed structs).
pub fn struct_fields<T: DeserializeOwned>() -> Option<&'static [&'static str]> {
    CAPTURED.with(|c| *c.borrow_mut() = None);
    let _ = T::deserialize(Capture);
    CAPTURED.with(|c| c.borrow_mut().take())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Deserialize)]
    #[allow(dead_code)]
    struct Example {
        vmid: u32,
        #[serde(rename = "type")]
        kind: String,
        #[serde(default)]
        name: Option<String>,
    }

    #[test]
    fn captures_renamed_fields() {
        assert_eq!(
            struct_fields::<Example>(),
            Some(&["vmid", "type", "name"][..])
        );
        assert_eq!(struct_fields::<u32>(), None);
    }
}

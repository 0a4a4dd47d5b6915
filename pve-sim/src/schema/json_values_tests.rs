//! Validation of the values a JSON body brings (`decode_json`'s references and undef), with
//! the texts of PVE's `JSONSchema::check_type` and `RESTHandler`'s list normalization.

use serde_json::{Value, json};

use super::*;

const CONFIG: &str = "/nodes/{node}/qemu/{vmid}/config";

/// Validate a PUT config of VM 100 on pve1 with `body` as the JSON body's members.
fn put_config(body: Value) -> Result<Params, BTreeMap<String, String>> {
    let mut values: BTreeMap<String, ParamValue> = BTreeMap::from([
        ("node".to_string(), ParamValue::Text("pve1".into())),
        ("vmid".to_string(), ParamValue::Text("100".into())),
    ]);
    for (k, v) in body.as_object().unwrap() {
        values.insert(k.clone(), ParamValue::from_json(v));
    }
    Schema::embedded().validate_values(HttpMethod::Put, CONFIG, values)
}

#[test]
fn references_fail_scalar_types_with_their_name() {
    let cases = [
        (
            json!({"cores": {"a": 1}}),
            "cores",
            "type check ('integer') failed - got HASH",
        ),
        (
            json!({"cores": [1]}),
            "cores",
            "type check ('integer') failed - got ARRAY",
        ),
        (
            json!({"cores": true}),
            "cores",
            "type check ('integer') failed - got JSON::PP::Boolean",
        ),
        (
            json!({"memory": {"a": 1}}),
            "memory",
            "type check ('string') failed - got HASH",
        ),
        (
            json!({"name": ["a", "b"]}),
            "name",
            "type check ('string') failed - got ARRAY",
        ),
        (
            json!({"cpulimit": {}}),
            "cpulimit",
            "type check ('number') failed - got HASH",
        ),
        (
            json!({"onboot": [true]}),
            "onboot",
            "type check ('boolean') failed - got ARRAY",
        ),
        // Indexed options are checked by their `[n]` schema like every other key.
        (
            json!({"net0": {"model": "virtio"}}),
            "net0",
            "type check ('string') failed - got HASH",
        ),
    ];
    for (body, key, message) in cases {
        let errors = put_config(body.clone()).unwrap_err();
        assert_eq!(
            errors,
            BTreeMap::from([(key.to_string(), message.to_string())]),
            "{body}"
        );
    }
}

#[test]
fn scalars_and_booleans_pass_and_become_form_strings() {
    let p = put_config(json!({
        "cores": 4,
        "sockets": "2",
        "cpulimit": 0.5,
        "onboot": true,
        "tablet": false,
        "name": "web",
        "balloon": null,
    }))
    .unwrap();
    assert_eq!(p.get("cores"), Some("4"));
    assert_eq!(p.get("sockets"), Some("2"));
    assert_eq!(p.get("cpulimit"), Some("0.5"));
    assert_eq!(p.get("onboot"), Some("1"));
    assert_eq!(p.get("tablet"), Some("0"));
    assert_eq!(p.get("name"), Some("web"));
    // undef is not sent.
    assert!(!p.has("balloon"));
    // A boolean skips the checks after the type (there is no enum or range to pass).
    assert!(put_config(json!({"onboot": true, "cores": 1})).is_ok());
}

#[test]
fn arrays_for_list_strings_are_joined_with_commas() {
    let p = put_config(json!({"delete": ["net1", "scsi2"], "tags": ["b", "a"]})).unwrap();
    assert_eq!(p.get("delete"), Some("net1,scsi2"));
    assert_eq!(p.get("tags"), Some("b,a"));
    // Joined first, then the list format judges every element.
    let errors = put_config(json!({"delete": ["net1", "no such key!"]})).unwrap_err();
    assert!(
        errors["delete"].starts_with("invalid format - "),
        "{errors:?}"
    );
    // An object is no list.
    let errors = put_config(json!({"delete": {"a": 1}})).unwrap_err();
    assert_eq!(errors["delete"], "type check ('string') failed - got HASH");
}

#[test]
fn null_is_absent_for_declared_keys_but_unknown_keys_stay_unknown() {
    let errors = put_config(json!({"bogus": null, "cores": null})).unwrap_err();
    assert_eq!(
        errors,
        BTreeMap::from([(
            "bogus".to_string(),
            "property is not defined in schema and the schema does not allow additional \
             properties"
                .to_string()
        )])
    );
    let mut values = BTreeMap::from([
        ("node".to_string(), ParamValue::Text("pve1".into())),
        ("vmid".to_string(), ParamValue::Null),
    ]);
    let errors = Schema::embedded()
        .validate_values(HttpMethod::Put, CONFIG, values.clone())
        .unwrap_err();
    assert_eq!(errors["vmid"], "property is missing and it is not optional");
    values.insert("vmid".into(), ParamValue::Text("100".into()));
    assert!(
        Schema::embedded()
            .validate_values(HttpMethod::Put, CONFIG, values)
            .is_ok()
    );
}

#[test]
fn array_and_object_types_check_elements_and_members() {
    let schema = Schema::from_json(
        &json!([{
            "path": "/x",
            "info": {"POST": {
                "name": "x",
                "parameters": {"additionalProperties": 0, "properties": {
                    "ids": {"type": "array", "optional": 1, "items": {"type": "integer"}},
                    "opts": {"type": "object", "optional": 1, "additionalProperties": 0,
                             "properties": {"size": {"type": "integer", "optional": 1}}},
                    "flag": {"type": "boolean", "optional": 1},
                }},
                "returns": {"type": "null"},
            }},
        }])
        .to_string(),
    )
    .unwrap();
    let check = |body: Value| {
        let values = body
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), ParamValue::from_json(v)))
            .collect();
        schema.validate_values(HttpMethod::Post, "/x", values)
    };
    let p = check(json!({"ids": [1, "2"], "opts": {"size": 3}, "flag": false})).unwrap();
    assert_eq!(p.get("ids"), Some("1\u{0}2"));
    assert_eq!(p.get("opts"), Some(r#"{"size":3}"#));
    assert_eq!(p.get("flag"), Some("0"));
    let errors =
        check(json!({"ids": [1, {"a": 1}, "x"], "opts": {"size": "big", "z": 1}})).unwrap_err();
    assert_eq!(
        errors,
        BTreeMap::from([
            (
                "ids[1]".into(),
                "type check ('integer') failed - got HASH".into()
            ),
            (
                "ids[2]".into(),
                "type check ('integer') failed - got 'x'".into()
            ),
            (
                "opts.size".into(),
                "type check ('integer') failed - got 'big'".into()
            ),
            (
                "opts.z".into(),
                "property is not defined in schema and the schema does not allow additional \
                 properties"
                    .into()
            ),
        ])
    );
    let errors = check(json!({"ids": {"a": 1}, "opts": [1], "flag": "true"})).unwrap_err();
    assert_eq!(
        errors,
        BTreeMap::from([
            ("ids".into(), "type check ('array') failed".into()),
            ("opts".into(), "type check ('object') failed".into()),
            (
                "flag".into(),
                "type check ('boolean') failed - got 'true'".into()
            ),
        ])
    );
}

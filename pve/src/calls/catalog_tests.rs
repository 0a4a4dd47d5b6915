//! The catalog against the official schema: coverage of all 53 methods and a local version of
//! the workspace conformance check (declared parameters, types, enums, ranges, patterns,
//! property-string sub-keys, required and `requires` parameters, fields read).

use std::collections::BTreeSet;

use regex::Regex;
use serde_json::Value;

use super::*;
use crate::types::UNDECLARED_FIELDS_READ;

fn schema() -> Vec<Value> {
    let text = include_str!("../../../pve-sim/schema/endpoints-9.1.json");
    serde_json::from_str::<Value>(text)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

fn method_schema<'a>(schema: &'a [Value], template: &str, method: &str) -> Option<&'a Value> {
    schema
        .iter()
        .find(|e| e["path"] == template)
        .and_then(|e| e["info"].get(method))
}

fn all_pairs(schema: &[Value]) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for e in schema {
        for m in e["info"].as_object().unwrap().keys() {
            out.insert((m.clone(), e["path"].as_str().unwrap().to_string()));
        }
    }
    out
}

fn path_params(template: &str) -> Vec<&str> {
    template
        .split('/')
        .filter_map(|s| s.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
        .collect()
}

fn path_matches(template: &str, path: &str) -> bool {
    let t: Vec<&str> = template.split('/').collect();
    let p: Vec<&str> = path.split('/').collect();
    t.len() == p.len()
        && t.iter()
            .zip(&p)
            .all(|(a, b)| a.starts_with('{') && !b.is_empty() || a == b)
}

/// The schema name of a sent parameter: `net0` → `net[n]`.
fn schema_name<'a>(props: &'a serde_json::Map<String, Value>, key: &str) -> Option<&'a String> {
    if let Some((k, _)) = props.get_key_value(key) {
        return Some(k);
    }
    let prefix = key.trim_end_matches(|c: char| c.is_ascii_digit());
    if prefix.len() < key.len() {
        return props.get_key_value(&format!("{prefix}[n]")).map(|(k, _)| k);
    }
    None
}

fn num(v: &Value) -> Option<f64> {
    v.as_f64()
        .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
}

fn check_value(ctx: &str, spec: &Value, value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    match spec["type"].as_str() {
        Some("boolean") if value != "0" && value != "1" => {
            errs.push(format!("{ctx}: boolean '{value}'"))
        }
        Some("integer") | Some("number") => {
            let parsed: Option<f64> = if spec["type"] == "integer" {
                value.parse::<i64>().ok().map(|n| n as f64)
            } else {
                value.parse().ok()
            };
            match parsed {
                None => errs.push(format!("{ctx}: not a {} '{value}'", spec["type"])),
                Some(n) => {
                    if num(&spec["minimum"]).is_some_and(|m| n < m)
                        || num(&spec["maximum"]).is_some_and(|m| n > m)
                    {
                        errs.push(format!("{ctx}: {n} out of range"));
                    }
                }
            }
        }
        _ => {}
    }
    if let Some(list) = spec["enum"].as_array()
        && !list.iter().any(|v| v == value)
    {
        errs.push(format!("{ctx}: '{value}' not in enum"));
    }
    if num(&spec["maxLength"]).is_some_and(|m| value.chars().count() as f64 > m) {
        errs.push(format!("{ctx}: longer than maxLength"));
    }
    if let Some(p) = spec["pattern"].as_str() {
        // Perl's `(?^:...)` (default flags) is a plain group for the regex crate.
        let re = Regex::new(&format!("^(?:{})$", p.replace("(?^:", "(?:"))).unwrap();
        if !re.is_match(value) {
            errs.push(format!("{ctx}: '{value}' does not match {p}"));
        }
    }
    if let Some(format) = spec["format"].as_object() {
        errs.extend(check_property_string(ctx, format, value));
    }
    errs
}

fn check_property_string(
    ctx: &str,
    format: &serde_json::Map<String, Value>,
    value: &str,
) -> Vec<String> {
    let mut errs = Vec::new();
    let default_key = format
        .iter()
        .find(|(_, v)| v["default_key"] == 1)
        .map(|(k, _)| k.clone());
    for part in value.split(',').filter(|p| !p.is_empty()) {
        let (key, v) = match part.split_once('=') {
            Some((k, v)) => (k.to_string(), v),
            None => match &default_key {
                Some(k) => (k.clone(), part),
                None => {
                    errs.push(format!("{ctx}: bare '{part}' without default key"));
                    continue;
                }
            },
        };
        let Some(sub) = format.get(&key) else {
            errs.push(format!("{ctx}: sub-key '{key}' not in format"));
            continue;
        };
        // `<model>=<mac>` style aliases: the value belongs to the aliased key.
        let target = sub["alias"]
            .as_str()
            .and_then(|a| format.get(a))
            .unwrap_or(sub);
        errs.extend(check_value(&format!("{ctx}.{key}"), target, v));
    }
    errs
}

#[test]
fn catalog_builds_without_errors() {
    assert!(!try_catalog().unwrap().is_empty());
    assert_eq!(catalog().len(), try_catalog().unwrap().len());
}

#[test]
fn catalog_covers_every_schema_method() {
    let schema = schema();
    let wanted = all_pairs(&schema);
    assert_eq!(wanted.len(), 53);
    let got: BTreeSet<(String, String)> = catalog()
        .iter()
        .map(|e| {
            (
                e.request.method.as_str().to_string(),
                e.template.to_string(),
            )
        })
        .collect();
    let missing: Vec<_> = wanted.difference(&got).collect();
    let extra: Vec<_> = got.difference(&wanted).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "missing {missing:?}, not in schema {extra:?}"
    );
}

#[test]
fn catalog_requests_conform_to_the_schema() {
    let schema = schema();
    let mut errs = Vec::new();
    for e in catalog() {
        let method = e.request.method.as_str();
        let ctx = format!("{method} {}", e.template);
        let Some(ms) = method_schema(&schema, e.template, method) else {
            errs.push(format!("{ctx}: not in schema"));
            continue;
        };
        if !path_matches(e.template, &e.request.path) {
            errs.push(format!("{ctx}: path {} does not fit", e.request.path));
        }
        let props = ms["parameters"]["properties"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        let pparams = path_params(e.template);
        let mut sent_schema_names = BTreeSet::new();
        let mut seen = BTreeSet::new();
        for (k, v) in &e.request.params {
            if !seen.insert(k.clone()) {
                errs.push(format!("{ctx}: '{k}' sent twice"));
            }
            if pparams.contains(&k.as_str()) {
                errs.push(format!(
                    "{ctx}: path parameter '{k}' also sent as parameter"
                ));
            }
            match schema_name(&props, k) {
                None => errs.push(format!("{ctx}: '{k}' not declared")),
                Some(name) => {
                    sent_schema_names.insert(name.clone());
                    errs.extend(check_value(&format!("{ctx} {k}"), &props[name], v));
                }
            }
        }
        for (name, spec) in &props {
            let required = spec["optional"] != 1;
            if required && !pparams.contains(&name.as_str()) && !sent_schema_names.contains(name) {
                errs.push(format!("{ctx}: required '{name}' not sent"));
            }
            if let Some(req) = spec["requires"].as_str()
                && sent_schema_names.contains(name)
                && !sent_schema_names.contains(req)
            {
                errs.push(format!("{ctx}: '{name}' requires '{req}'"));
            }
        }
        let returns = &ms["returns"];
        let rtype = returns["type"].as_str().unwrap_or("");
        let shape_ok = match e.response {
            ResponseShape::Object(_) | ResponseShape::Map => rtype == "object",
            ResponseShape::ArrayOf(_) => rtype == "array",
            ResponseShape::Upid => rtype == "string" && returns["optional"] != 1,
            ResponseShape::OptionalUpid => rtype == "string",
            ResponseShape::Null => rtype == "null",
            ResponseShape::Scalar => matches!(rtype, "integer" | "string" | "number"),
        };
        if !shape_ok {
            errs.push(format!(
                "{ctx}: shape {:?} vs returns type '{rtype}'",
                e.response
            ));
        }
        let (fields, declared) = match e.response {
            ResponseShape::Object(f) => (f, returns["properties"].as_object()),
            ResponseShape::ArrayOf(f) => (f, returns["items"]["properties"].as_object()),
            _ => (&[][..], None),
        };
        if matches!(
            e.response,
            ResponseShape::Object(_) | ResponseShape::ArrayOf(_)
        ) && fields.is_empty()
        {
            errs.push(format!("{ctx}: response type reads no fields"));
        }
        if let Some(declared) = declared {
            for f in fields {
                let allowed = declared.contains_key(*f)
                    || UNDECLARED_FIELDS_READ
                        .iter()
                        .any(|(t, u)| *t == e.template && u == f);
                if !allowed {
                    errs.push(format!("{ctx}: reads undeclared field '{f}'"));
                }
            }
        }
    }
    assert!(errs.is_empty(), "{}", errs.join("\n"));
}

#[test]
fn undeclared_fields_are_really_undeclared_and_really_read() {
    let schema = schema();
    let catalog = catalog();
    for (template, field) in UNDECLARED_FIELDS_READ {
        let entry = catalog.iter().find(|e| e.template == *template).unwrap();
        let ms = method_schema(&schema, template, entry.request.method.as_str()).unwrap();
        let returns = &ms["returns"];
        let declared = returns["properties"]
            .as_object()
            .or(returns["items"]["properties"].as_object())
            .unwrap();
        assert!(
            !declared.contains_key(*field),
            "{template} {field} is declared"
        );
        let fields = catalog
            .iter()
            .filter(|e| e.template == *template)
            .flat_map(|e| match e.response {
                ResponseShape::Object(f) | ResponseShape::ArrayOf(f) => f.to_vec(),
                _ => Vec::new(),
            })
            .collect::<Vec<_>>();
        assert!(fields.contains(field), "{template} {field} is not read");
    }
}

#[test]
fn pve9_only_params_are_exactly_the_8_4_differences() {
    // The 8.4 schema is vendored in the repository (tests/data/pve-api, provenance in its
    // README); a missing file fails the test rather than skipping the comparison.
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/data/pve-api/apidata-pve8.4.json"
    );
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {path} ({e}): it is vendored in the repository"));
    fn walk(nodes: &[Value], out: &mut Vec<(String, String, Vec<String>)>) {
        for n in nodes {
            if let Some(info) = n["info"].as_object() {
                for (m, ms) in info {
                    let keys = ms["parameters"]["properties"]
                        .as_object()
                        .map(|p| p.keys().cloned().collect())
                        .unwrap_or_default();
                    out.push((
                        m.clone(),
                        n["path"].as_str().unwrap_or("").to_string(),
                        keys,
                    ));
                }
            }
            if let Some(c) = n["children"].as_array() {
                walk(c, out);
            }
        }
    }
    let old: Value = serde_json::from_str(&text).unwrap();
    let mut old_methods = Vec::new();
    walk(old.as_array().unwrap(), &mut old_methods);
    let mut new_only = BTreeSet::new();
    for e in schema() {
        for (m, ms) in e["info"].as_object().unwrap() {
            let path = e["path"].as_str().unwrap();
            let old_keys = old_methods
                .iter()
                .find(|(om, op, _)| om == m && op == path)
                .map(|(_, _, k)| k.clone())
                .unwrap_or_default();
            let keys = ms["parameters"]["properties"]
                .as_object()
                .cloned()
                .unwrap_or_default();
            for k in keys.keys() {
                if !old_keys.contains(k) {
                    new_only.insert(k.clone());
                }
            }
        }
    }
    let ours: BTreeSet<String> = PVE9_ONLY_PARAMS.iter().map(|s| s.to_string()).collect();
    assert_eq!(ours, new_only);
}

#[test]
fn pve9_only_params_are_declared_in_the_9_1_schema() {
    let schema = schema();
    for p in PVE9_ONLY_PARAMS {
        let declared = schema.iter().any(|e| {
            e["info"]
                .as_object()
                .unwrap()
                .values()
                .any(|ms| ms["parameters"]["properties"].get(*p).is_some())
        });
        assert!(declared, "{p}");
    }
}

#[test]
fn pve9_only_param_detection() {
    let with = catalog()
        .into_iter()
        .find(|e| e.request.get("with-conntrack-state").is_some())
        .unwrap();
    assert_eq!(pve9_only_param(&with.request), Some("with-conntrack-state"));
    assert_eq!(pve9_only_param(&nodes_request().unwrap()), None);
}

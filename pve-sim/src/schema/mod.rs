//! The official PVE API schema: loading (the full `apidata` tree or the `[{path, info}]`
//! subset), path matching, request validation with the exact texts of PVE's `JSONSchema.pm`,
//! and checking responses against `returns`.
//!
//! ```text
//!  form strings / JSON values ──▶ validate(method, template) ──▶ Params (or the 400 `errors` map)
//!  concrete path ─────▶ match_path ──▶ template + path parameters
//!  response data ─────▶ check_returns ──▶ type mismatches
//! ```

mod check;
mod formats;
mod indexed;
mod pattern;
mod perl_truth;
mod property_string;
mod returns;

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde_json::{Map, Value};

use crate::api::Params;
use crate::param_value::ParamValue;
use crate::route::HttpMethod;

pub(crate) use formats::split_list;

/// The embedded schema text: the 53 methods of PVE 9.1 the fleet uses.
const EMBEDDED: &str = include_str!("../../schema/endpoints-9.1.json");
/// The methods the simulator serves only for testbeds (reading one PVE HA resource), same format.
const TESTBED: &str = include_str!("../../schema/testbed-9.1.json");

/// Why a schema document could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    /// Not JSON.
    #[error("schema is not valid JSON: {0}")]
    Json(String),
    /// JSON, but not an array of `{path, info}` nodes.
    #[error("schema has an unexpected shape: {0}")]
    Shape(String),
}

/// One method of one path, as the schema describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct MethodSchema {
    /// The HTTP method.
    pub method: HttpMethod,
    /// The path template (`/nodes/{node}/qemu`).
    pub path: String,
    /// The handler name (`create_vm`).
    pub name: String,
    /// Parameter name (`net[n]` for indexed ones) → property schema.
    pub parameters: BTreeMap<String, Value>,
    /// `parameters.additionalProperties` as given (absent = additional keys allowed).
    pub additional_properties: Option<Value>,
    /// The `returns` schema.
    pub returns: Value,
    /// The `permissions` object (`check`, `user`, `description`).
    pub permissions: Value,
    /// `proxyto` (`node`): the request is served by the node named in that parameter.
    pub proxyto: Option<String>,
    /// Callable with an API token (`allowtoken`, default 1).
    pub allowtoken: bool,
    /// Runs in the privileged daemon (`protected`).
    pub protected: bool,
}

/// Path parameters of a matched path, in path order (`node` → `pve1`).
pub type PathParams = Vec<(String, String)>;

/// One segment of a path template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Literal(String),
    Param(String),
}

/// A loaded schema.
#[derive(Debug, Clone)]
pub struct Schema {
    methods: BTreeMap<(HttpMethod, String), MethodSchema>,
    /// Every path template (with or without methods), split into segments.
    paths: Vec<(String, Vec<Segment>)>,
}

/// PVE's path splitting: empty fragments are skipped (`/nodes//pve1/` = `/nodes/pve1`).
fn fragments(path: &str) -> impl Iterator<Item = &str> {
    path.split('/').filter(|s| !s.is_empty())
}

impl Schema {
    /// The embedded schema, parsed once.
    pub fn embedded() -> &'static Schema {
        static SCHEMA: OnceLock<Schema> = OnceLock::new();
        SCHEMA.get_or_init(|| {
            // The embedded files are checked by this module's tests; an unparsable copy would
            // leave the simulator without methods (every request 501) rather than panic.
            Schema::from_documents(&[EMBEDDED, TESTBED]).unwrap_or(Schema {
                methods: BTreeMap::new(),
                paths: Vec::new(),
            })
        })
    }

    /// Parse a schema document: the full tree (`[{path, info, children}]`) or a flat list.
    pub fn from_json(text: &str) -> Result<Schema, SchemaError> {
        Self::from_documents(&[text])
    }

    /// One schema from several documents (each as [`Schema::from_json`] takes it).
    fn from_documents(texts: &[&str]) -> Result<Schema, SchemaError> {
        let mut schema = Schema {
            methods: BTreeMap::new(),
            paths: Vec::new(),
        };
        for text in texts {
            let root: Value =
                serde_json::from_str(text).map_err(|e| SchemaError::Json(e.to_string()))?;
            let Value::Array(nodes) = root else {
                return Err(SchemaError::Shape("top level is not an array".into()));
            };
            for node in &nodes {
                schema.add_node(node)?;
            }
        }
        Ok(schema)
    }

    fn add_node(&mut self, node: &Value) -> Result<(), SchemaError> {
        let path = node
            .get("path")
            .and_then(Value::as_str)
            .ok_or_else(|| SchemaError::Shape("node without a path".into()))?;
        let segments = fragments(path)
            .map(
                |s| match s.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
                    Some(name) => Segment::Param(name.to_string()),
                    None => Segment::Literal(s.to_string()),
                },
            )
            .collect();
        if !self.paths.iter().any(|(p, _)| p == path) {
            self.paths.push((path.to_string(), segments));
        }
        if let Some(info) = node.get("info").and_then(Value::as_object) {
            for (method, def) in info {
                let Some(m) = HttpMethod::parse(method) else {
                    continue;
                };
                self.methods
                    .insert((m, path.to_string()), method_schema(m, path, def));
            }
        }
        if let Some(children) = node.get("children").and_then(Value::as_array) {
            for child in children {
                self.add_node(child)?;
            }
        }
        Ok(())
    }

    /// Every method, in path order.
    pub fn methods(&self) -> impl Iterator<Item = &MethodSchema> {
        self.methods.values()
    }

    /// The schema of `method template`.
    pub fn method(&self, method: HttpMethod, template: &str) -> Option<&MethodSchema> {
        self.methods.get(&(method, template.to_string()))
    }

    /// Match a concrete (percent-decoded) path to a template of this method, returning the
    /// template and the path parameters. As PVE's handler lookup, the path is resolved first
    /// (literal segments win over `{param}` segments) and the method must exist there.
    pub fn match_path(&self, method: HttpMethod, path: &str) -> Option<(String, PathParams)> {
        let segs: Vec<&str> = fragments(path).collect();
        let mut best: Option<(Vec<bool>, &str, PathParams)> = None;
        'paths: for (template, tsegs) in &self.paths {
            if tsegs.len() != segs.len() {
                continue;
            }
            let mut rank = Vec::with_capacity(segs.len());
            let mut params = Vec::new();
            for (t, s) in tsegs.iter().zip(&segs) {
                match t {
                    Segment::Literal(l) if l == s => rank.push(true),
                    Segment::Literal(_) => continue 'paths,
                    Segment::Param(name) => {
                        rank.push(false);
                        params.push((name.clone(), (*s).to_string()));
                    }
                }
            }
            if best.as_ref().is_none_or(|(r, _, _)| rank > *r) {
                best = Some((rank, template, params));
            }
        }
        let (_, template, params) = best?;
        self.method(method, template)
            .map(|_| (template.to_string(), params))
    }

    /// Validate request parameters (path parameters included) as PVE's `JSONSchema::validate`
    /// does. Repeated keys are joined with NUL, as PVE's form decoder does. `Err` is the
    /// `errors` map of the 400 answer.
    pub fn validate(
        &self,
        method: HttpMethod,
        template: &str,
        params: &[(String, String)],
    ) -> Result<Params, BTreeMap<String, String>> {
        let mut values: BTreeMap<String, String> = BTreeMap::new();
        for (k, v) in params {
            values
                .entry(k.clone())
                .and_modify(|old| {
                    old.push('\0');
                    old.push_str(v);
                })
                .or_insert_with(|| v.clone());
        }
        let values = values
            .into_iter()
            .map(|(k, v)| (k, ParamValue::Text(v)))
            .collect();
        self.validate_values(method, template, values)
    }

    /// [`Schema::validate`] for parameters as the HTTP edge decoded them, JSON references
    /// included: `RESTHandler::handle` first joins an array given for a `*-list` string with
    /// commas (`$normalize_legacy_param_formats`), then validates; the validated values come
    /// back as form strings (booleans `1`/`0`, `null` as absent).
    pub(crate) fn validate_values(
        &self,
        method: HttpMethod,
        template: &str,
        mut values: BTreeMap<String, ParamValue>,
    ) -> Result<Params, BTreeMap<String, String>> {
        let Some(ms) = self.method(method, template) else {
            return Err(BTreeMap::from([(
                "_handler".to_string(),
                "no such handler".to_string(),
            )]));
        };
        let properties: Map<String, Value> = ms
            .parameters
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for (key, value) in &mut values {
            let schema = properties
                .get(key)
                .filter(|_| !key.ends_with("[n]"))
                .or_else(|| indexed::lookup(&properties, key));
            if let Some(schema) = schema {
                check::normalize_list(schema, value);
            }
        }
        let mut errors = check::Errors::new();
        check::check_object(
            "",
            &properties,
            &values,
            ms.additional_properties.as_ref(),
            true,
            &mut errors,
        );
        if errors.is_empty() {
            Ok(Params(
                values
                    .into_iter()
                    .filter_map(|(k, v)| v.into_form_text().map(|t| (k, t)))
                    .collect(),
            ))
        } else {
            Err(errors)
        }
    }

    /// Type mismatches of a response's `data` against the method's `returns` schema (empty =
    /// conforming; an unknown method yields one line saying so).
    pub fn check_returns(&self, method: HttpMethod, template: &str, value: &Value) -> Vec<String> {
        let Some(ms) = self.method(method, template) else {
            return vec![format!("no schema for {} {template}", method.as_str())];
        };
        let mut out = Vec::new();
        returns::check_value(&ms.returns, value, "data", &mut out);
        out
    }
}

fn method_schema(method: HttpMethod, path: &str, def: &Value) -> MethodSchema {
    let parameters = def.get("parameters");
    let properties = parameters
        .and_then(|p| p.get("properties"))
        .and_then(Value::as_object)
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default();
    MethodSchema {
        method,
        path: path.to_string(),
        name: def
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        parameters: properties,
        additional_properties: parameters
            .and_then(|p| p.get("additionalProperties"))
            .cloned(),
        returns: def.get("returns").cloned().unwrap_or(Value::Null),
        permissions: def.get("permissions").cloned().unwrap_or(Value::Null),
        proxyto: def
            .get("proxyto")
            .and_then(Value::as_str)
            .map(str::to_string),
        allowtoken: def
            .get("allowtoken")
            .is_none_or(|v| perl_truth::is_true(Some(v))),
        protected: perl_truth::is_true(def.get("protected")),
    }
}

#[cfg(test)]
mod json_values_tests;
#[cfg(test)]
mod tests;

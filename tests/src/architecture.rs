//! The dependency direction of docs/design/architecture.md ("Arrows") as data, and the check
//! that a workspace's crate graph follows it. An arrow means "may depend on"; nothing points
//! back. A workspace member missing from the table is itself a violation, so a new crate must
//! be placed. The pure core (`fleet`) and the wire types (`protocol`) must not reach a runtime
//! or I/O crate through any normal dependency ([`runtime_violations`]), and no shipped binary
//! reaches the simulator or the lab ([`shipped_violations`]).

use std::collections::{BTreeMap, BTreeSet};

/// Allowed direct dependencies between workspace members, by member directory.
/// `tests` (the end-to-end test crate) may use everything.
pub const ALLOWED: &[(&str, &[&str])] = &[
    ("protocol", &[]),
    ("transport", &["protocol"]),
    ("raft", &["transport"]),
    ("bootstrap", &["transport", "protocol"]),
    // The pure core: the wire types only (no transport, no runtime; see RUNTIME_FREE).
    ("fleet", &["protocol"]),
    ("client", &["transport", "protocol", "bootstrap"]),
    // The daemons' shared edge depends on no member.
    ("daemon", &[]),
    ("pve", &[]),
    // Its in-process `pve::Backend` (`client_backend`), for tests and benches; the binary
    // takes its man page and completions from the daemons' edge.
    ("pve-sim", &["pve", "daemon"]),
    // Loaded with LD_PRELOAD into a lab's member, never linked: nothing may depend on it.
    ("disk-fault", &[]),
    (
        "node-agent",
        &["bootstrap", "transport", "protocol", "pve", "daemon"],
    ),
    (
        "coordinator",
        &[
            "fleet",
            "raft",
            "bootstrap",
            "transport",
            "protocol",
            "daemon",
        ],
    ),
    ("lab", &["client", "bootstrap", "protocol", "pve-sim"]),
    // The product's CLI: no lab, no simulator (the lab's commands are `lab-cli`'s).
    ("cli", &["client", "bootstrap", "protocol", "daemon"]),
    // `pvefleet-lab`: the launcher, and the CLI as a library for what the two binaries share.
    ("lab-cli", &["cli", "lab", "client", "protocol", "daemon"]),
    (
        "tests",
        &[
            "protocol",
            "transport",
            "raft",
            "bootstrap",
            "fleet",
            "client",
            "daemon",
            "lab",
            "cli",
            "lab-cli",
            "node-agent",
            "coordinator",
            "pve",
            "pve-sim",
        ],
    ),
];

/// Dev-only exceptions: the simulator's tests start its binary with the launcher's process
/// handling; the coordinator's and the agent's tests call members with the fleet client and
/// start their binaries with the launcher, and the agent's drive its operations against an
/// in-process simulated node; the CLI's tests stand in for members over the transport.
pub const ALLOWED_DEV: &[(&str, &str)] = &[
    ("pve-sim", "lab"),
    ("node-agent", "pve-sim"),
    ("coordinator", "client"),
    ("coordinator", "lab"),
    ("node-agent", "lab"),
    ("raft", "lab"),
    ("cli", "transport"),
];

/// Members that must never reach another member, even transitively.
pub const NEVER_TRANSITIVE: &[(&str, &str)] = &[
    ("coordinator", "pve"),
    ("coordinator", "pve-sim"),
    ("node-agent", "raft"),
    ("node-agent", "pve-sim"),
    ("node-agent", "lab"),
    ("pve", "pve-sim"),
    ("fleet", "transport"),
    ("cli", "raft"),
    ("cli", "coordinator"),
    ("cli", "node-agent"),
    // The shipped operator CLI carries no simulated fleet: that is the lab package's.
    ("cli", "lab"),
    ("cli", "pve-sim"),
    ("coordinator", "lab"),
    ("lab", "coordinator"),
    ("lab", "node-agent"),
    // The lab's binary runs the daemons as processes, like the launcher it drives.
    ("lab-cli", "coordinator"),
    ("lab-cli", "node-agent"),
];

/// The shipped binaries (the `pvefleet` Debian package) and the member that builds each.
pub const SHIPPED: &[(&str, &str)] = &[
    ("pvefleet-agent", "node-agent"),
    ("pvefleet-coordinator", "coordinator"),
    ("pvefleet", "cli"),
];

/// What no shipped binary may contain: the simulator and the lab (the test world ships in
/// the `pvefleet-lab` package).
pub const NOT_SHIPPED: &[&str] = &["pve-sim", "lab", "lab-cli"];

/// Members whose normal (non-dev) dependency graph must not reach a runtime or I/O crate:
/// the pure core and the wire types are functions of their inputs.
pub const RUNTIME_FREE: &[&str] = &["fleet", "protocol"];

/// Crates that do I/O or run tasks: an async runtime, sockets, TLS, storage, HTTP.
pub const RUNTIME_CRATES: &[&str] = &[
    "tokio", "mio", "socket2", "quinn", "rustls", "sled", "openraft", "hyper", "reqwest",
];

/// One dependency edge between workspace members.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Edge {
    /// Depending member (directory name).
    pub from: String,
    /// Dependency (directory name).
    pub to: String,
    /// Only a dev-dependency.
    pub dev_only: bool,
}

/// Every rule the edges break, as readable sentences.
pub fn violations(members: &BTreeSet<String>, edges: &[Edge]) -> Vec<String> {
    let allowed: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
    let mut out = Vec::new();
    for m in members {
        if !allowed.contains_key(m.as_str()) {
            out.push(format!(
                "member '{m}' is not placed in the dependency table (tests/src/architecture.rs)"
            ));
        }
    }
    for e in edges {
        let ok = allowed
            .get(e.from.as_str())
            .is_some_and(|to| to.contains(&e.to.as_str()))
            || (e.dev_only && ALLOWED_DEV.contains(&(e.from.as_str(), e.to.as_str())));
        if !ok {
            let kind = if e.dev_only {
                "dev-dependency"
            } else {
                "dependency"
            };
            out.push(format!("forbidden {kind}: {} -> {}", e.from, e.to));
        }
    }
    // Transitive closure over non-dev edges.
    for (from, to) in NEVER_TRANSITIVE {
        if reaches(edges, from, to) {
            out.push(format!("{from} reaches {to} transitively"));
        }
    }
    out
}

fn reaches(edges: &[Edge], from: &str, to: &str) -> bool {
    let mut seen = BTreeSet::new();
    let mut stack = vec![from.to_string()];
    while let Some(n) = stack.pop() {
        for e in edges.iter().filter(|e| !e.dev_only && e.from == n) {
            if e.to == to {
                return true;
            }
            if seen.insert(e.to.clone()) {
                stack.push(e.to.clone());
            }
        }
    }
    false
}

/// Workspace members (by directory) and the edges between them, from `cargo metadata`
/// JSON (`--no-deps` is enough: each package lists its declared dependencies with `path`).
pub fn from_metadata(meta: &serde_json::Value) -> (BTreeSet<String>, Vec<Edge>) {
    let root = meta["workspace_root"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let dir_of = |manifest: &str| -> Option<String> {
        let rel = manifest.strip_prefix(&root)?.trim_start_matches('/');
        rel.split('/').next().map(str::to_string)
    };
    let mut members = BTreeSet::new();
    let mut edges = Vec::new();
    for pkg in meta["packages"].as_array().into_iter().flatten() {
        let Some(from) = pkg["manifest_path"].as_str().and_then(dir_of) else {
            continue;
        };
        members.insert(from.clone());
        let mut by_target: BTreeMap<String, bool> = BTreeMap::new();
        for dep in pkg["dependencies"].as_array().into_iter().flatten() {
            let Some(path) = dep["path"].as_str() else {
                continue;
            };
            let Some(to) = path.strip_prefix(&root).and_then(|r| {
                r.trim_start_matches('/')
                    .split('/')
                    .next()
                    .map(str::to_string)
            }) else {
                continue;
            };
            let dev = dep["kind"].as_str() == Some("dev");
            let entry = by_target.entry(to).or_insert(true);
            *entry &= dev;
        }
        for (to, dev_only) in by_target {
            edges.push(Edge {
                from: from.clone(),
                to,
                dev_only,
            });
        }
    }
    (members, edges)
}

/// The names of the packages each package reaches through normal (non-dev, non-build)
/// dependencies, by package name, from `cargo metadata` JSON *with* its resolve graph.
fn normal_closures(meta: &serde_json::Value) -> BTreeMap<String, BTreeSet<String>> {
    let name_of = |id: &str| -> String {
        meta["packages"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|p| p["id"].as_str() == Some(id))
            .and_then(|p| p["name"].as_str())
            .unwrap_or(id)
            .to_string()
    };
    // package id -> normal dependency ids
    let mut normal: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for node in meta["resolve"]["nodes"].as_array().into_iter().flatten() {
        let Some(id) = node["id"].as_str() else {
            continue;
        };
        let deps = node["deps"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|d| {
                d["dep_kinds"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|k| k["kind"].is_null())
            })
            .filter_map(|d| d["pkg"].as_str().map(str::to_string))
            .collect();
        normal.insert(id.to_string(), deps);
    }
    let mut out = BTreeMap::new();
    for start in normal.keys() {
        let mut seen = BTreeSet::new();
        let mut stack = vec![start.clone()];
        while let Some(id) = stack.pop() {
            for dep in normal.get(&id).into_iter().flatten() {
                if seen.insert(dep.clone()) {
                    stack.push(dep.clone());
                }
            }
        }
        out.insert(name_of(start), seen.iter().map(|id| name_of(id)).collect());
    }
    out
}

/// Every runtime crate a [`RUNTIME_FREE`] member reaches through normal dependencies, from
/// `cargo metadata` JSON *with* its resolve graph (not `--no-deps`), as readable sentences.
pub fn runtime_violations(meta: &serde_json::Value) -> Vec<String> {
    let closures = normal_closures(meta);
    let mut out = Vec::new();
    for member in RUNTIME_FREE {
        for name in closures.get(*member).into_iter().flatten() {
            if RUNTIME_CRATES.contains(&name.as_str()) {
                out.push(format!("{member} reaches the runtime crate {name}"));
            }
        }
    }
    out
}

/// Every [`NOT_SHIPPED`] member a [`SHIPPED`] binary's member reaches through normal
/// dependencies (what the binary links), from `cargo metadata` JSON with its resolve graph;
/// also a shipped member missing from the graph (the check would pass by reading nothing).
pub fn shipped_violations(meta: &serde_json::Value) -> Vec<String> {
    let closures = normal_closures(meta);
    let mut out = Vec::new();
    for (binary, member) in SHIPPED {
        let Some(reached) = closures.get(*member) else {
            out.push(format!("{binary}: its member {member} is not in the graph"));
            continue;
        };
        for name in NOT_SHIPPED {
            if reached.contains(*name) {
                out.push(format!(
                    "{binary} ({member}) links {name}: the test world does not ship"
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(from: &str, to: &str, dev_only: bool) -> Edge {
        Edge {
            from: from.into(),
            to: to.into(),
            dev_only,
        }
    }

    fn set(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_intended_graph_passes() {
        let m = set(&[
            "pve",
            "pve-sim",
            "tests",
            "node-agent",
            "coordinator",
            "raft",
            "transport",
            "protocol",
        ]);
        let edges = vec![
            e("pve-sim", "pve", false),
            e("node-agent", "pve", false),
            e("coordinator", "raft", false),
            e("raft", "transport", false),
            e("transport", "protocol", false),
            e("tests", "pve", false),
        ];
        assert_eq!(violations(&m, &edges), Vec::<String>::new());
    }

    #[test]
    fn a_pointing_back_edge_fails() {
        let m = set(&["pve", "pve-sim"]);
        assert_eq!(violations(&m, &[e("pve", "pve-sim", false)]).len(), 2);
        assert_eq!(
            violations(&m, &[e("pve-sim", "node-agent", false)]),
            vec!["forbidden dependency: pve-sim -> node-agent"]
        );
    }

    #[test]
    fn the_agent_reaching_the_simulator_fails_except_in_its_tests() {
        let m = set(&["node-agent", "pve-sim", "pve"]);
        assert_eq!(
            violations(&m, &[e("node-agent", "pve-sim", true)]),
            Vec::<String>::new()
        );
        assert_eq!(
            violations(&m, &[e("node-agent", "pve-sim", false)]),
            vec![
                "forbidden dependency: node-agent -> pve-sim",
                "node-agent reaches pve-sim transitively"
            ]
        );
    }

    /// A package of a test resolve graph: its name, its dependencies with their kind (`None`
    /// for normal).
    type Package<'a> = (&'a str, &'a [(&'a str, Option<&'a str>)]);

    /// A resolve graph of `packages`.
    fn resolved(packages: &[Package<'_>]) -> serde_json::Value {
        let id = |n: &str| format!("path+file:///w/{n}#0.1.0");
        serde_json::json!({
            "packages": packages.iter().map(|(n, _)| serde_json::json!({"id": id(n), "name": n})).collect::<Vec<_>>(),
            "resolve": {"nodes": packages.iter().map(|(n, deps)| serde_json::json!({
                "id": id(n),
                "deps": deps.iter().map(|(d, kind)| serde_json::json!({
                    "pkg": id(d),
                    "dep_kinds": [{"kind": kind}],
                })).collect::<Vec<_>>(),
            })).collect::<Vec<_>>()},
        })
    }

    #[test]
    fn a_shipped_binary_linking_the_simulator_fails_even_through_another_crate() {
        let clean = resolved(&[
            ("node-agent", &[("pve", None), ("pve-sim", Some("dev"))]),
            ("coordinator", &[("lab", Some("dev"))]),
            ("cli", &[("client", None)]),
            ("pve", &[]),
            ("pve-sim", &[("pve", None)]),
            ("lab", &[("pve-sim", None)]),
            ("client", &[]),
        ]);
        assert_eq!(shipped_violations(&clean), Vec::<String>::new());
        let linked = resolved(&[
            ("node-agent", &[("pve", None)]),
            ("coordinator", &[]),
            ("cli", &[("client", None)]),
            ("pve", &[]),
            ("client", &[("lab", None)]),
            ("lab", &[("pve-sim", None)]),
            ("pve-sim", &[]),
        ]);
        assert_eq!(
            shipped_violations(&linked),
            vec![
                "pvefleet (cli) links pve-sim: the test world does not ship",
                "pvefleet (cli) links lab: the test world does not ship"
            ]
        );
        let missing = resolved(&[("node-agent", &[]), ("cli", &[])]);
        assert_eq!(
            shipped_violations(&missing),
            vec!["pvefleet-coordinator: its member coordinator is not in the graph"]
        );
    }

    #[test]
    fn coordinator_talking_to_pve_fails_even_through_another_crate() {
        let m = set(&["coordinator", "bootstrap", "pve"]);
        let v = violations(
            &m,
            &[
                e("coordinator", "bootstrap", false),
                e("bootstrap", "pve", false),
            ],
        );
        assert!(
            v.contains(&"forbidden dependency: bootstrap -> pve".to_string()),
            "{v:?}"
        );
        assert!(
            v.contains(&"coordinator reaches pve transitively".to_string()),
            "{v:?}"
        );
    }

    #[test]
    fn the_pure_core_reaching_a_runtime_fails_and_dev_dependencies_do_not_count() {
        let meta = serde_json::json!({
            "packages": [
                {"id": "fleet 0.1", "name": "fleet"},
                {"id": "protocol 0.1", "name": "protocol"},
                {"id": "serde 1", "name": "serde"},
                {"id": "helper 1", "name": "helper"},
                {"id": "tokio 1", "name": "tokio"},
                {"id": "rustls 0.23", "name": "rustls"}
            ],
            "resolve": {"nodes": [
                {"id": "fleet 0.1", "deps": [
                    {"pkg": "protocol 0.1", "dep_kinds": [{"kind": null}]},
                    {"pkg": "rustls 0.23", "dep_kinds": [{"kind": "dev"}]}
                ]},
                {"id": "protocol 0.1", "deps": [
                    {"pkg": "serde 1", "dep_kinds": [{"kind": null}]},
                    {"pkg": "helper 1", "dep_kinds": [{"kind": null}]}
                ]},
                {"id": "helper 1", "deps": [
                    {"pkg": "tokio 1", "dep_kinds": [{"kind": null}]}
                ]},
                {"id": "serde 1", "deps": []},
                {"id": "tokio 1", "deps": []},
                {"id": "rustls 0.23", "deps": []}
            ]}
        });
        assert_eq!(
            runtime_violations(&meta),
            vec![
                "fleet reaches the runtime crate tokio",
                "protocol reaches the runtime crate tokio"
            ]
        );
    }

    #[test]
    fn the_cli_reaching_raft_through_the_coordinator_fails() {
        let m = set(&["cli", "coordinator", "raft"]);
        let v = violations(
            &m,
            &[
                e("cli", "coordinator", false),
                e("coordinator", "raft", false),
            ],
        );
        assert!(
            v.contains(&"forbidden dependency: cli -> coordinator".to_string()),
            "{v:?}"
        );
        assert!(
            v.contains(&"cli reaches raft transitively".to_string()),
            "{v:?}"
        );
    }

    #[test]
    fn the_cli_linking_the_lab_fails_and_the_lab_binary_may() {
        let m = set(&["cli", "lab-cli", "lab", "pve-sim"]);
        let allowed = [
            e("lab-cli", "cli", false),
            e("lab-cli", "lab", false),
            e("lab", "pve-sim", false),
        ];
        assert_eq!(violations(&m, &allowed), Vec::<String>::new());
        let v = violations(&m, &[e("cli", "lab", false), e("lab", "pve-sim", false)]);
        assert!(
            v.contains(&"forbidden dependency: cli -> lab".to_string()),
            "{v:?}"
        );
        assert!(
            v.contains(&"cli reaches pve-sim transitively".to_string()),
            "{v:?}"
        );
    }

    #[test]
    fn unplaced_member_fails() {
        let v = violations(&set(&["gadget"]), &[]);
        assert_eq!(v.len(), 1);
    }

    #[test]
    fn metadata_edges_are_read_by_directory() {
        let meta = serde_json::json!({
            "workspace_root": "/w",
            "packages": [
                {"manifest_path": "/w/pve-sim/Cargo.toml", "dependencies": [
                    {"name": "pve", "path": "/w/pve", "kind": "dev"},
                    {"name": "serde", "kind": null}
                ]},
                {"manifest_path": "/w/pve/Cargo.toml", "dependencies": []}
            ]
        });
        let (members, edges) = from_metadata(&meta);
        assert_eq!(members, set(&["pve", "pve-sim"]));
        assert_eq!(edges, vec![e("pve-sim", "pve", true)]);
    }
}

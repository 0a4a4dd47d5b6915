//! Validation against the embedded schema, table-driven with PVE's exact texts.

use super::*;
use crate::route::Route;

fn params(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Validate and return the error of `key` (or `None` when valid).
fn error_of(
    method: HttpMethod,
    template: &str,
    list: &[(&str, &str)],
    key: &str,
) -> Option<String> {
    match Schema::embedded().validate(method, template, &params(list)) {
        Ok(_) => None,
        Err(errors) => Some(
            errors
                .get(key)
                .cloned()
                .unwrap_or_else(|| format!("other: {errors:?}")),
        ),
    }
}

const CREATE: &str = "/nodes/{node}/qemu";
const CONFIG: &str = "/nodes/{node}/qemu/{vmid}/config";

#[test]
fn embedded_schema_has_every_route() {
    let schema = Schema::embedded();
    assert_eq!(schema.methods().count(), 55);
    for r in Route::SERVED {
        assert!(schema.method(r.method(), r.template()).is_some(), "{r:?}");
    }
    let ticket = schema.method(HttpMethod::Post, "/access/ticket").unwrap();
    assert!(!ticket.allowtoken);
    let start = schema
        .method(HttpMethod::Post, "/nodes/{node}/qemu/{vmid}/status/start")
        .unwrap();
    assert_eq!(start.proxyto.as_deref(), Some("node"));
    assert!(start.allowtoken);
}

/// Every node of a full schema tree by path.
fn nodes_by_path(nodes: &[serde_json::Value], out: &mut BTreeMap<String, serde_json::Value>) {
    for n in nodes {
        if let Some(path) = n["path"].as_str() {
            out.insert(path.to_string(), n.clone());
        }
        if let Some(children) = n["children"].as_array() {
            nodes_by_path(children, out);
        }
    }
}

#[test]
fn testbed_methods_are_verbatim_copies_of_the_official_schemas() {
    let vendored = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/pve-api/");
    let testbed: Vec<serde_json::Value> = serde_json::from_str(TESTBED).unwrap();
    let mut methods = 0;
    for file in ["apidata.json", "apidata-pve8.4.json"] {
        let text = std::fs::read_to_string(format!("{vendored}{file}")).unwrap();
        let full: Vec<serde_json::Value> = serde_json::from_str(&text).unwrap();
        let mut nodes = BTreeMap::new();
        nodes_by_path(&full, &mut nodes);
        for entry in &testbed {
            let path = entry["path"].as_str().unwrap();
            for (method, def) in entry["info"].as_object().unwrap() {
                let official = &nodes[path]["info"][method];
                assert!(official.is_object(), "{file}: {method} {path} missing");
                if file == "apidata.json" {
                    assert_eq!(official, def, "{method} {path} differs from {file}");
                    methods += 1;
                }
            }
        }
    }
    assert_eq!(methods, Route::TESTBED.len());
}

#[test]
fn fleet_methods_are_verbatim_copies_of_the_official_schema() {
    let vendored = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/data/pve-api/apidata.json"
    );
    let full: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(vendored).unwrap()).unwrap();
    let mut nodes = BTreeMap::new();
    nodes_by_path(&full, &mut nodes);
    let fleet: Vec<serde_json::Value> = serde_json::from_str(EMBEDDED).unwrap();
    let mut methods = 0;
    for entry in &fleet {
        let path = entry["path"].as_str().unwrap();
        for (method, def) in entry["info"].as_object().unwrap() {
            assert_eq!(&nodes[path]["info"][method], def, "{method} {path}");
            methods += 1;
        }
    }
    assert_eq!(methods, Route::ALL.len());
}

#[test]
fn full_tree_and_flat_list_both_load() {
    let tree = r#"[{"path": "/nodes", "text": "nodes", "info": {"GET": {"name": "index"}},
        "children": [{"path": "/nodes/{node}", "text": "{node}", "leaf": 0,
            "children": [{"path": "/nodes/{node}/status", "leaf": 1,
                "info": {"GET": {"name": "status", "parameters": {"additionalProperties": 0,
                    "properties": {"node": {"type": "string", "format": "pve-node"}}}}}}]}]}]"#;
    let s = Schema::from_json(tree).unwrap();
    assert_eq!(s.methods().count(), 2);
    assert_eq!(
        s.match_path(HttpMethod::Get, "/nodes/pve1/status"),
        Some((
            "/nodes/{node}/status".to_string(),
            vec![("node".into(), "pve1".into())]
        ))
    );
    // The path exists without a GET handler: no match.
    assert_eq!(s.match_path(HttpMethod::Get, "/nodes/pve1"), None);
    let flat = r#"[{"path": "/version", "info": {"GET": {"name": "version"}}}]"#;
    assert_eq!(Schema::from_json(flat).unwrap().methods().count(), 1);
    assert!(matches!(
        Schema::from_json("{}"),
        Err(SchemaError::Shape(_))
    ));
    assert!(matches!(
        Schema::from_json("nope"),
        Err(SchemaError::Json(_))
    ));
}

#[test]
fn literal_segments_win_over_parameters() {
    let text = r#"[{"path": "/a/{x}", "info": {"GET": {}}}, {"path": "/a/b", "info": {"GET": {}}},
        {"path": "/a/{x}/c", "info": {"GET": {}}}]"#;
    let s = Schema::from_json(text).unwrap();
    assert_eq!(s.match_path(HttpMethod::Get, "/a/b").unwrap().0, "/a/b");
    assert_eq!(s.match_path(HttpMethod::Get, "/a/z").unwrap().0, "/a/{x}");
    assert_eq!(
        s.match_path(HttpMethod::Get, "//a//z/c/").unwrap().0,
        "/a/{x}/c"
    );
    assert_eq!(s.match_path(HttpMethod::Post, "/a/b"), None);
}

#[test]
fn embedded_paths_match_with_parameters() {
    let s = Schema::embedded();
    let (t, p) = s
        .match_path(
            HttpMethod::Get,
            "/nodes/pve1/tasks/UPID:pve1:0000C346:165A0CE4:68D7279C:qmstart:100:root@pam:/status",
        )
        .unwrap();
    assert_eq!(t, "/nodes/{node}/tasks/{upid}/status");
    assert_eq!(
        p[1].1,
        "UPID:pve1:0000C346:165A0CE4:68D7279C:qmstart:100:root@pam:"
    );
    assert!(s.match_path(HttpMethod::Get, "/nodes/pve1/foo").is_none());
    assert!(s.match_path(HttpMethod::Put, "/nodes/pve1/qemu").is_none());
}

#[test]
fn top_level_checks_use_pves_texts() {
    use HttpMethod::{Get, Post, Put};
    type Case<'a> = (
        HttpMethod,
        &'a str,
        &'a [(&'a str, &'a str)],
        &'a str,
        Option<&'a str>,
    );
    let cases: &[Case<'_>] = &[
        (
            Post,
            CREATE,
            &[("node", "pve1"), ("vmid", "100")],
            "vmid",
            None,
        ),
        (
            Post,
            CREATE,
            &[("node", "pve1")],
            "vmid",
            Some("property is missing and it is not optional"),
        ),
        (
            Post,
            CREATE,
            &[("node", "pve1"), ("vmid", "100"), ("bogus", "1")],
            "bogus",
            Some(
                "property is not defined in schema and the schema does not allow additional properties",
            ),
        ),
        (
            Post,
            CREATE,
            &[("node", "pve1"), ("vmid", "abc")],
            "vmid",
            Some("type check ('integer') failed - got 'abc'"),
        ),
        (
            Post,
            CREATE,
            &[("node", "pve1"), ("vmid", "100"), ("start", "true")],
            "start",
            Some("type check ('boolean') failed - got 'true'"),
        ),
        (
            Post,
            CREATE,
            &[("node", "pve1"), ("vmid", "100"), ("start", "1")],
            "start",
            None,
        ),
        (
            Post,
            CREATE,
            &[("node", "pve1"), ("vmid", "100"), ("cpulimit", "x")],
            "cpulimit",
            Some("type check ('number') failed - got 'x'"),
        ),
        (
            Post,
            CREATE,
            &[("node", "pve1"), ("vmid", "100"), ("cpulimit", "1.5")],
            "cpulimit",
            None,
        ),
        // Format comes before minimum: a small vmid is a format error with a newline.
        (
            Post,
            CREATE,
            &[("node", "pve1"), ("vmid", "99")],
            "vmid",
            Some("invalid format - value does not look like a valid VM ID\n"),
        ),
        (
            Post,
            CREATE,
            &[("node", "pve1"), ("vmid", "100"), ("cores", "0")],
            "cores",
            Some("value must have a minimum value of 1"),
        ),
        (
            Post,
            CREATE,
            &[("node", "pve1"), ("vmid", "100"), ("ostype", "dos")],
            "ostype",
            Some(
                "value 'dos' does not have a value in the enumeration 'other, wxp, w2k, w2k3, w2k8, wvista, win7, win8, win10, win11, l24, l26, solaris'",
            ),
        ),
        (
            Post,
            CREATE,
            &[("node", "pve1"), ("vmid", "100"), ("name", "web_1")],
            "name",
            Some("invalid format - value does not look like a valid DNS name\n"),
        ),
        (
            Post,
            CREATE,
            &[("node", "pve_1"), ("vmid", "100")],
            "node",
            Some("invalid format - value does not look like a valid node name\n"),
        ),
        (
            Post,
            "/nodes/{node}/qemu/{vmid}/snapshot",
            &[
                ("node", "pve1"),
                ("vmid", "100"),
                ("snapname", "a-very-long-snapshot-name-that-is-too-long"),
            ],
            "snapname",
            Some("value may only be 40 characters long"),
        ),
        (
            Put,
            "/nodes/{node}/qemu/{vmid}/resize",
            &[
                ("node", "pve1"),
                ("vmid", "100"),
                ("disk", "scsi0"),
                ("size", "+1X"),
            ],
            "size",
            Some("value does not match the regex pattern"),
        ),
        (
            Put,
            CONFIG,
            &[
                ("node", "pve1"),
                ("vmid", "100"),
                ("digest", &"a".repeat(41)),
            ],
            "digest",
            Some("value may only be 40 characters long"),
        ),
        (
            Put,
            CONFIG,
            &[("node", "pve1"), ("vmid", "100"), ("force", "1")],
            "delete",
            Some("missing property - 'force' requires this property"),
        ),
        (
            Put,
            CONFIG,
            &[
                ("node", "pve1"),
                ("vmid", "100"),
                ("delete", "net1,scsi2;ide0 unused3"),
            ],
            "delete",
            None,
        ),
        (
            Put,
            CONFIG,
            &[("node", "pve1"), ("vmid", "100"), ("delete", "net1,-x")],
            "delete",
            Some("invalid format - invalid configuration ID '-x'\n"),
        ),
        (
            Put,
            CONFIG,
            &[("node", "pve1"), ("vmid", "100"), ("tags", "web;prod")],
            "tags",
            None,
        ),
        (
            Put,
            CONFIG,
            &[("node", "pve1"), ("vmid", "100"), ("tags", "web;pr od!")],
            "tags",
            Some("invalid format - invalid characters in tag\n"),
        ),
        (Get, "/cluster/resources", &[("type", "vm")], "type", None),
        (
            Get,
            "/cluster/resources",
            &[("type", "qemu")],
            "type",
            Some("value 'qemu' does not have a value in the enumeration 'vm, storage, node, sdn'"),
        ),
    ];
    for (method, template, list, key, want) in cases {
        let got = error_of(*method, template, list, key);
        assert_eq!(got.as_deref(), *want, "{method:?} {template} {list:?}");
    }
}

#[test]
fn indexed_keys_follow_pves_ranges() {
    let base = [("node", "pve1"), ("vmid", "100")];
    let with = |k: &'static str, v: &'static str| {
        let mut l = base.to_vec();
        l.push((k, v));
        l
    };
    let not_defined =
        "property is not defined in schema and the schema does not allow additional properties";
    assert_eq!(
        error_of(
            HttpMethod::Post,
            CREATE,
            &with("scsi30", "local-lvm:32"),
            "scsi30"
        ),
        None
    );
    assert_eq!(
        error_of(
            HttpMethod::Post,
            CREATE,
            &with("scsi31", "local-lvm:32"),
            "scsi31"
        )
        .as_deref(),
        Some(not_defined)
    );
    assert_eq!(
        error_of(
            HttpMethod::Post,
            CREATE,
            &with("virtio15", "local-lvm:32"),
            "virtio15"
        ),
        None
    );
    assert_eq!(
        error_of(
            HttpMethod::Post,
            CREATE,
            &with("virtio16", "local-lvm:32"),
            "virtio16"
        )
        .as_deref(),
        Some(not_defined)
    );
    assert_eq!(
        error_of(
            HttpMethod::Post,
            CREATE,
            &with("net31", "virtio,bridge=vmbr0"),
            "net31"
        ),
        None
    );
    assert_eq!(
        error_of(
            HttpMethod::Post,
            CREATE,
            &with("net32", "virtio,bridge=vmbr0"),
            "net32"
        )
        .as_deref(),
        Some(not_defined)
    );
    assert_eq!(
        error_of(
            HttpMethod::Post,
            CREATE,
            &with("ide3", "none,media=cdrom"),
            "ide3"
        ),
        None
    );
    assert_eq!(
        error_of(
            HttpMethod::Post,
            CREATE,
            &with("ide4", "none,media=cdrom"),
            "ide4"
        )
        .as_deref(),
        Some(not_defined)
    );
    assert_eq!(
        error_of(HttpMethod::Post, CREATE, &with("net01", "virtio"), "net01").as_deref(),
        Some(not_defined)
    );
    assert_eq!(
        error_of(
            HttpMethod::Post,
            CREATE,
            &with("net[n]", "virtio"),
            "net[n]"
        )
        .as_deref(),
        Some(not_defined)
    );
}

#[test]
fn property_strings_of_vm_options() {
    let p = |k: &'static str, v: &'static str| vec![("node", "pve1"), ("vmid", "100"), (k, v)];
    let ok: &[(&str, &str)] = &[
        ("net0", "virtio,bridge=vmbr0,firewall=1"),
        ("net0", "virtio=BC:24:11:AA:BB:CC,bridge=vmbr0,tag=10"),
        ("net0", "model=e1000,bridge=vmbr1,link_down=yes"),
        ("scsi0", "local-lvm:32"),
        (
            "scsi0",
            "local-lvm:0,import-from=ceph:base-9000-disk-0,discard=on,ssd=1",
        ),
        ("scsi1", "file=local-lvm:vm-100-disk-1,size=32G,iothread=1"),
        ("ide2", "none,media=cdrom"),
        ("ipconfig0", "ip=192.0.2.10/24,gw=192.0.2.1"),
        ("ipconfig0", "ip=dhcp,ip6=auto"),
        ("agent", "1"),
        ("agent", "enabled=1,fstrim_cloned_disks=1,type=virtio"),
        ("boot", "order=scsi0;ide2;net0"),
        ("boot", "cdn"),
        ("memory", "2048"),
    ];
    for (k, v) in ok {
        assert_eq!(
            error_of(HttpMethod::Post, CREATE, &p(k, v), k),
            None,
            "{k}={v}"
        );
    }
    let bad: &[(&str, &str, &str)] = &[
        (
            "net0",
            "virtio,brige=vmbr0",
            "invalid format - invalid key in comma-separated list property: brige\n",
        ),
        (
            "net0",
            "virtio,tag=5000",
            "invalid format - format error\nnet0.tag: value must have a maximum value of 4094\n",
        ),
        (
            "net0",
            "bridge=vmbr0",
            "invalid format - format error\nnet0.model: property is missing and it is not optional\n",
        ),
        (
            "net0",
            "rtl,bridge=vmbr0",
            "invalid format - format error\nnet0.model: value 'rtl' does not have a value in the enumeration 'e1000, e1000-82540em, e1000-82544gc, e1000-82545em, e1000e, i82551, i82557b, i82559er, ne2k_isa, ne2k_pci, pcnet, rtl8139, virtio, vmxnet3'\n",
        ),
        (
            "scsi0",
            "local-lvm:32,cache=fast",
            "invalid format - format error\nscsi0.cache: value 'fast' does not have a value in the enumeration 'none, writethrough, writeback, unsafe, directsync'\n",
        ),
        (
            "scsi0",
            "nocolon",
            "invalid format - format error\nscsi0.file: invalid format - unable to parse volume ID 'nocolon'\n\n",
        ),
        (
            "ipconfig0",
            "ip=192.0.2.10/24,gw=192.0.2.300",
            "invalid format - format error\nipconfig0.gw: invalid format - value does not look like a valid IPv4 address\n\n",
        ),
        (
            "ipconfig0",
            "gw=192.0.2.1",
            "invalid format - format error\nipconfig0.ip: missing property - 'ipconfig0.gw' requires this property\n",
        ),
        (
            "agent",
            "enabled=1,type=usb",
            "invalid format - format error\nagent.type: value 'usb' does not have a value in the enumeration 'virtio, isa'\n",
        ),
        (
            "boot",
            "order=scsi0;floppy",
            "invalid format - format error\nboot.order: invalid format - invalid boot device 'floppy'\n\n",
        ),
        (
            "memory",
            "8",
            "invalid format - format error\nmemory.current: value must have a minimum value of 16\n",
        ),
    ];
    for (k, v, want) in bad {
        assert_eq!(
            error_of(HttpMethod::Post, CREATE, &p(k, v), k).as_deref(),
            Some(*want),
            "{k}={v}"
        );
    }
}

#[test]
fn valid_parameters_come_back_unchanged() {
    let list = params(&[
        ("node", "pve1"),
        ("vmid", "100"),
        ("start", "0"),
        ("net0", "virtio,bridge=vmbr0"),
    ]);
    let got = Schema::embedded()
        .validate(HttpMethod::Post, CREATE, &list)
        .unwrap();
    assert_eq!(got.get("start"), Some("0"));
    assert_eq!(got.get("net0"), Some("virtio,bridge=vmbr0"));
    assert_eq!(got.0.len(), 4);
}

#[test]
fn responses_are_checked_against_returns() {
    let s = Schema::embedded();
    assert!(
        s.check_returns(
            HttpMethod::Post,
            "/nodes/{node}/qemu/{vmid}/status/start",
            &serde_json::json!("UPID:x")
        )
        .is_empty()
    );
    assert_eq!(
        s.check_returns(
            HttpMethod::Post,
            "/nodes/{node}/qemu/{vmid}/status/start",
            &serde_json::json!(5)
        ),
        vec!["data: expected string, got number 5"]
    );
    let log = serde_json::json!([{"n": 1, "t": "TASK OK"}, {"n": "2", "t": "x"}]);
    assert_eq!(
        s.check_returns(HttpMethod::Get, "/nodes/{node}/tasks/{upid}/log", &log),
        vec!["data[1].n: expected integer, got string \"2\""]
    );
}

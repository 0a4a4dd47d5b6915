//! The commands end to end against stand-in members: what each sends (read mode, token
//! lifetime and uses, one `VmApply` per VM in file order) and what it prints, including an
//! apply the cluster stops half-way.

use std::sync::{Arc, Mutex};

use crate::support::{FakeMember, Pki, bounded, pvefleet};
use clap::Parser;
use cli::Cli;
use cli::exit::ExitStatus;
use protocol::Role;
use protocol::admin::{
    ApplyOutcome, ClusterStatus, ClusterStatusReply, HostList, HostListReply, ReadMode,
    TokenCreate, TokenCreateReply, UNLIMITED_USES, VmApply, VmApplyReply, VmGet, VmList,
    VmListReply,
};
use protocol::fleet::{Capacity, Host, HostState, TokenView, VmRecord};
use serde_json::json;
use transport::{RemoteError, Router, Service};

type Log<T> = Arc<Mutex<Vec<T>>>;

fn log<T>() -> Log<T> {
    Arc::new(Mutex::new(Vec::new()))
}

#[tokio::test]
async fn vm_apply_sends_each_vm_in_file_order_and_reports_outcomes() {
    let pki = Pki::new();
    let sent: Log<String> = log();
    let seen = sent.clone();
    let mut router = Router::new();
    router.handle(Service::Admin, move |_caller, req: VmApply| {
        seen.lock().unwrap().push(req.spec.name.clone());
        let reply = match req.spec.name.as_str() {
            "web-1" => VmApplyReply {
                outcome: ApplyOutcome::Created,
                generation: 1,
            },
            _ => VmApplyReply {
                outcome: ApplyOutcome::Unchanged,
                generation: 4,
            },
        };
        async move { Ok(reply) }
    });
    let member = FakeMember::start(&pki, 1, router);
    let config = pki.write_config(&[&member]);
    let file = pki.dir().join("vms.toml");
    std::fs::write(
        &file,
        "[[vm]]\nname = \"web-1\"\nmemory_mib = 1024\n\n[[vm]]\nname = \"db-1\"\nmemory_mib = 4096\n",
    )
    .unwrap();

    let (result, out) = pvefleet(
        &config,
        &["-o", "json", "vm", "apply", "-f", file.to_str().unwrap()],
    )
    .await;
    result.unwrap();
    assert_eq!(*sent.lock().unwrap(), ["web-1", "db-1"]);
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        doc,
        json!({"applied": [
            {"kind": "vm", "name": "web-1", "outcome": "created", "generation": 1},
            {"kind": "vm", "name": "db-1", "outcome": "unchanged", "generation": 4},
        ]})
    );

    let (result, out) = pvefleet(&config, &["vm", "apply", "-f", file.to_str().unwrap()]).await;
    result.unwrap();
    assert_eq!(
        out,
        "vm web-1 created (generation 1)\nvm db-1 unchanged (generation 4)\n"
    );
}

#[tokio::test]
async fn an_apply_refused_half_way_prints_what_was_applied_and_sends_nothing_after() {
    let pki = Pki::new();
    let sent: Log<String> = log();
    let seen = sent.clone();
    let mut router = Router::new();
    router.handle(Service::Admin, move |_caller, req: VmApply| {
        seen.lock().unwrap().push(req.spec.name.clone());
        let reply = match req.spec.name.as_str() {
            "b" => Err(RemoteError::bad_request(
                "vmid_range = \"r9\" is not allowed: expected an existing VMID range",
            )),
            _ => Ok(VmApplyReply {
                outcome: ApplyOutcome::Updated,
                generation: 2,
            }),
        };
        async move { reply }
    });
    let member = FakeMember::start(&pki, 1, router);
    let config = pki.write_config(&[&member]);
    let file = pki.dir().join("vms.toml");
    let vm = |name: &str| format!("[[vm]]\nname = \"{name}\"\nmemory_mib = 512\n");
    std::fs::write(&file, vm("a") + &vm("b") + &vm("c")).unwrap();

    let (result, out) = pvefleet(
        &config,
        &["-o", "json", "vm", "apply", "-f", file.to_str().unwrap()],
    )
    .await;
    let e = result.unwrap_err();
    assert_eq!(e.status(), ExitStatus::Refused);
    assert!(
        e.to_string()
            .starts_with("vm b: refused by the cluster: vmid_range"),
        "{e}"
    );
    assert!(e.to_string().contains("1 of 3 applied before it"), "{e}");
    assert_eq!(*sent.lock().unwrap(), ["a", "b"]);
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        doc,
        json!({"applied": [{"kind": "vm", "name": "a", "outcome": "updated", "generation": 2}]})
    );
}

#[tokio::test]
async fn reads_are_linearizable_unless_stale_is_asked_for() {
    let pki = Pki::new();
    let modes: Log<ReadMode> = log();
    let seen = modes.clone();
    let mut router = Router::new();
    router.handle(Service::Admin, move |_caller, req: VmList| {
        seen.lock().unwrap().push(req.read);
        async move {
            Ok(VmListReply {
                vms: Vec::new(),
                recoveries: Default::default(),
                migrations: Default::default(),
            })
        }
    });
    let member = FakeMember::start(&pki, 1, router);
    let config = pki.write_config(&[&member]);

    let (result, out) = pvefleet(&config, &["-o", "json", "vm", "ls"]).await;
    result.unwrap();
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&out).unwrap(),
        json!({"vms": [], "recoveries": {}, "migrations": {}})
    );
    let (result, _) = pvefleet(&config, &["vm", "ls", "--stale", "-o", "json"]).await;
    result.unwrap();
    assert_eq!(
        *modes.lock().unwrap(),
        [ReadMode::Linearizable, ReadMode::Stale]
    );
}

#[tokio::test]
async fn vm_show_names_the_host_and_a_missing_vm_exits_4() {
    let pki = Pki::new();
    let mut router = Router::new();
    router.handle(Service::Admin, |_caller, req: VmGet| async move {
        if req.name == "web-1" {
            let mut vm = VmRecord {
                spec: protocol::spec::VmSpec::new("web-1", 1024),
                generation: 1,
                created_at: 1_740_830_400_000 - 60_000,
                updated_at: 1_740_830_400_000 - 60_000,
                deleting: false,
                assignment: Default::default(),
                status: Default::default(),
            };
            vm.assignment.host = Some(7);
            vm.status.observed_generation = 1;
            Ok(vm)
        } else {
            Err(RemoteError::not_found(format!(
                "no VM named {:?}",
                req.name
            )))
        }
    });
    router.handle(Service::Admin, |_caller, _req: HostList| async move {
        Ok(HostListReply {
            hosts: vec![Host {
                id: 7,
                name: "pve7".into(),
                labels: Default::default(),
                capacity: Capacity::default(),
                state: HostState::Online,
                registered_at: 0,
                state_since: 0,
                state_reason: String::new(),
                facts: None,
                operator_labels: Default::default(),
            }],
        })
    });
    let member = FakeMember::start(&pki, 1, router);
    let config = pki.write_config(&[&member]);

    let (result, out) = pvefleet(&config, &["vm", "show", "web-1"]).await;
    result.unwrap();
    assert!(out.contains("\nhost:        pve7\n"), "{out}");
    let (result, out) = pvefleet(&config, &["vm", "show", "web-9"]).await;
    let e = result.unwrap_err();
    assert_eq!(e.status(), ExitStatus::NotFound);
    assert_eq!(e.to_string(), "no VM named \"web-9\"");
    assert_eq!(out, "");
}

fn token_router(requests: Log<TokenCreate>) -> Router {
    let mut router = Router::new();
    router.handle(Service::Admin, move |_caller, req: TokenCreate| {
        requests.lock().unwrap().push(req.clone());
        let reply = TokenCreateReply {
            token: "pvf1.abc.a1b2c3.s3cr3t".into(),
            record: TokenView {
                id: "a1b2c3".into(),
                role: req.role,
                created_at: 1_740_830_400_000,
                expires_at: 1_740_830_400_000 + req.ttl_secs.unwrap_or(86_400) * 1000,
                uses_left: req.uses,
                revoked: false,
            },
        };
        async move { Ok(reply) }
    });
    router
}

#[tokio::test]
async fn token_create_sends_role_lifetime_and_uses_and_prints_the_token() {
    let pki = Pki::new();
    let requests: Log<TokenCreate> = log();
    let member = FakeMember::start(&pki, 1, token_router(requests.clone()));
    let config = pki.write_config(&[&member]);

    let (result, out) = pvefleet(
        &config,
        &[
            "-o", "json", "token", "create", "--role", "agent", "--ttl", "90m", "--uses", "5",
        ],
    )
    .await;
    result.unwrap();
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["token"], json!("pvf1.abc.a1b2c3.s3cr3t"));
    assert_eq!(
        doc["record"]["expires_at"],
        json!(1_740_830_400_000u64 + 5_400_000)
    );
    assert_eq!(
        *requests.lock().unwrap(),
        [TokenCreate {
            role: Role::Agent,
            ttl_secs: Some(5400),
            uses: Some(5),
        }]
    );
}

#[tokio::test]
async fn member_add_makes_a_one_use_coordinator_token_and_prints_the_join_command() {
    let pki = Pki::new();
    let requests: Log<TokenCreate> = log();
    let member = FakeMember::start(&pki, 1, token_router(requests.clone()));
    let config = pki.write_config(&[&member]);

    let (result, out) = pvefleet(
        &config,
        &[
            "-o",
            "json",
            "member",
            "add",
            "--listen",
            "10.0.0.4:7400",
            "--data-dir",
            "/srv/m4",
        ],
    )
    .await;
    result.unwrap();
    assert_eq!(
        *requests.lock().unwrap(),
        [TokenCreate {
            role: Role::Coordinator,
            ttl_secs: Some(3600),
            uses: Some(1),
        }]
    );
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["join_addr"], json!(member.addr.to_string()));
    assert_eq!(
        doc["command"],
        json!(format!(
            "pvefleet-coordinator join --token-file - {} --data-dir /srv/m4 --listen \
             10.0.0.4:7400",
            member.addr
        ))
    );
    // The token is printed for the operator to paste, never inside the command.
    assert_eq!(doc["token"], json!("pvf1.abc.a1b2c3.s3cr3t"));
    assert!(!doc["command"].as_str().unwrap().contains("s3cr3t"));
}

#[tokio::test]
async fn token_create_sends_one_use_for_an_hour_unless_widened() {
    let pki = Pki::new();
    let requests: Log<TokenCreate> = log();
    let member = FakeMember::start(&pki, 1, token_router(requests.clone()));
    let config = pki.write_config(&[&member]);

    let (result, _) = pvefleet(&config, &["token", "create", "--role", "agent"]).await;
    result.unwrap();
    let (result, _) = pvefleet(
        &config,
        &[
            "token",
            "create",
            "--role",
            "agent",
            "--uses",
            "unlimited",
            "--ttl",
            "7d",
        ],
    )
    .await;
    result.unwrap();
    assert_eq!(
        *requests.lock().unwrap(),
        [
            // Sent explicitly, so a coordinator with older defaults gets the safe ones too.
            TokenCreate {
                role: Role::Agent,
                ttl_secs: Some(3600),
                uses: Some(1),
            },
            TokenCreate {
                role: Role::Agent,
                ttl_secs: Some(7 * 86_400),
                uses: Some(UNLIMITED_USES),
            },
        ]
    );
    for bad in ["0", "many", "4294967295"] {
        let e = Cli::try_parse_from([
            "pvefleet", "token", "create", "--role", "agent", "--uses", bad,
        ])
        .unwrap_err()
        .to_string();
        assert!(e.contains("unlimited"), "{bad}: {e}");
    }
}

#[tokio::test]
async fn a_coordinator_token_is_announced_on_stderr_as_carrying_the_ca_key() {
    let pki = Pki::new();
    let requests: Log<TokenCreate> = log();
    let member = FakeMember::start(&pki, 1, token_router(requests.clone()));
    let config = pki.write_config(&[&member]);
    let run_cli = |role: &'static str| {
        let config = config.clone();
        async move {
            bounded(
                tokio::process::Command::new(env!("CARGO_BIN_EXE_pvefleet"))
                    .arg("--config")
                    .arg(&config)
                    .args(["-o", "json", "token", "create", "--role", role])
                    .env_remove("RUST_LOG")
                    .kill_on_drop(true)
                    .output(),
            )
            .await
            .unwrap()
        }
    };
    let out = run_cli("coordinator").await;
    assert!(out.status.success(), "{out:?}");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("COORDINATOR token"), "{stderr}");
    assert!(
        stderr.contains("cluster CA's") && stderr.contains("private key"),
        "{stderr}"
    );
    assert!(stderr.contains("--token-file -"), "{stderr}");
    // Stdout stays the JSON a script reads.
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["record"]["uses_left"], json!(1));
    let out = run_cli("agent").await;
    assert!(out.status.success(), "{out:?}");
    assert!(!String::from_utf8(out.stderr).unwrap().contains("WARNING"));
}

#[tokio::test]
async fn cluster_status_json_is_the_members_reply() {
    let pki = Pki::new();
    let reply = ClusterStatusReply {
        cluster_id: "cli-test".into(),
        node_id: 1,
        leader: Some(1),
        term: 2,
        commit_index: 5,
        applied_index: 5,
        members: Vec::new(),
        cluster_version: protocol::version::CURRENT,
    };
    let answer = reply.clone();
    let mut router = Router::new();
    router.handle(Service::Admin, move |_caller, _req: ClusterStatus| {
        let answer = answer.clone();
        async move { Ok(answer) }
    });
    let member = FakeMember::start(&pki, 1, router);
    let config = pki.write_config(&[&member]);
    let (result, out) = pvefleet(&config, &["--output", "json", "cluster", "status"]).await;
    result.unwrap();
    assert_eq!(
        serde_json::from_str::<ClusterStatusReply>(&out).unwrap(),
        reply
    );
}

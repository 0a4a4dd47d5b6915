//! Access control on the target cluster of a remote migration: the `/access` methods with
//! PVE's texts, token expiry, ACL entries leaving with their token, and the migration tunnel
//! taking commands only with its ticket from the token that opened it.

// Test helpers outside #[test] functions may unwrap: a panic is the failure report.
#![allow(clippy::unwrap_used)]

use serde_json::{Value, json};

use crate::common::clusters::{MIGRATOR, clusters, migration_token};
use crate::common::{TOKEN, token_header};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tunnel_takes_commands_only_with_its_ticket_from_its_owner() {
    let (a, b) = clusters(0.0).await;
    let token = migration_token(&b, MIGRATOR, None).await;
    let opened = b
        .call_as(
            &token,
            "POST",
            "/nodes/localhost/qemu/100/mtunnel",
            &[("storages", "local"), ("bridges", "vmbr1")],
        )
        .await;
    assert_eq!(opened.0, 200, "{}", opened.1);
    let ticket = opened.1["data"]["ticket"].as_str().unwrap().to_string();
    assert!(ticket.starts_with("PVETUNNEL:"));
    assert_eq!(opened.1["data"]["socket"], "/run/qemu-server/100.mtunnel");
    let conf = b.ok("GET", "/nodes/pveb1/qemu/100/config", &[]).await;
    assert_eq!(conf["lock"], "create");
    let send = |who: String, ticket: String, command: Value| {
        let client = b.s.client();
        let url = format!(
            "https://127.0.0.1:{}/_sim/mtunnel/localhost/100?ticket={}&socket=/run/qemu-server/100.mtunnel",
            b.s.addr.port(),
            percent_encoding::utf8_percent_encode(&ticket, percent_encoding::NON_ALPHANUMERIC)
        );
        async move {
            let resp = client
                .post(url)
                .header("Authorization", token_header(&who))
                .json(&command)
                .send()
                .await
                .unwrap();
            (
                resp.status().as_u16(),
                resp.json::<Value>().await.unwrap_or(Value::Null),
            )
        }
    };
    let (status, body) = send(token.clone(), ticket.clone(), json!({"cmd": "version"})).await;
    assert_eq!(status, 200);
    assert_eq!(body["data"], json!({"success": true, "api": 2, "age": 0}));
    let (status, body) = send(token.clone(), ticket.clone(), json!({"cmd": "fly"})).await;
    assert_eq!(
        (status, &body["data"]["msg"]),
        (200, &json!("unknown command 'fly' given"))
    );
    let (status, body) = send(TOKEN.into(), ticket.clone(), json!({"cmd": "version"})).await;
    assert_eq!(status, 401, "not the tunnel's owner: {body}");
    assert_eq!(
        body["message"],
        "permission denied - invalid PVETUNNEL ticket\n"
    );
    let forged = format!("{}x", ticket);
    let (status, _) = send(token.clone(), forged, json!({"cmd": "version"})).await;
    assert_eq!(status, 401);
    // A token governed by ACLs never reaches the simulator's controls.
    let resp =
        b.s.client()
            .get(format!("https://127.0.0.1:{}/_sim/faults", b.s.addr.port()))
            .header("Authorization", token_header(&token))
            .send()
            .await
            .unwrap();
    assert_eq!(resp.status(), 403);
    let (status, body) = send(
        token.clone(),
        ticket.clone(),
        json!({"cmd": "quit", "cleanup": 1}),
    )
    .await;
    assert_eq!((status, &body["data"]["success"]), (200, &json!(true)));
    let (status, body) = send(token, ticket, json!({"cmd": "version"})).await;
    // Exit mode until the tunnel's task noticed; then the tunnel is gone (and, cleaned up,
    // so is the config a new connection would be checked against).
    match status {
        200 => assert_eq!(
            body["data"]["msg"],
            "tunnel is in exit-mode, processing 'version' cmd not possible"
        ),
        401 | 500 => {}
        other => panic!("{other} {body}"),
    }
    assert_eq!(b.s.sim.vm_config_text(100), None);
    drop(a);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_token_is_refused_like_a_wrong_secret() {
    let (_a, b) = clusters(0.0).await;
    let token = migration_token(&b, MIGRATOR, Some("1000")).await;
    let (status, body) = b.call_as(&token, "GET", "/version", &[]).await;
    assert_eq!((status, body), (401, Value::Null));
    let fresh = b
        .ok(
            "POST",
            "/access/users/mig@pve/token/later",
            &[("expire", "4000000000"), ("privsep", "0")],
        )
        .await;
    assert_eq!(
        fresh["info"],
        json!({"privsep": 0, "expire": 4000000000u64})
    );
    let later = format!("mig@pve!later={}", fresh["value"].as_str().unwrap());
    let (status, _) = b.call_as(&later, "GET", "/version", &[]).await;
    assert_eq!(status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_token_removes_its_acl_entries() {
    let (_a, b) = clusters(0.0).await;
    let token = migration_token(&b, MIGRATOR, None).await;
    let (status, _) = b.call_as(&token, "GET", "/cluster/status", &[]).await;
    assert_eq!(status, 200);
    b.ok("DELETE", "/access/users/mig@pve/token/m100", &[])
        .await;
    let (status, _) = b.call_as(&token, "GET", "/cluster/status", &[]).await;
    assert_eq!(status, 401, "gone");
    let again = b.ok("POST", "/access/users/mig@pve/token/m100", &[]).await;
    let token = format!("mig@pve!m100={}", again["value"].as_str().unwrap());
    let (status, body) = b.call_as(&token, "GET", "/cluster/status", &[]).await;
    assert_eq!(status, 403, "the new token of that name holds nothing");
    assert_eq!(body["message"], "Permission check failed (/, Sys.Audit)\n");
    let (status, body) = b
        .call("DELETE", "/access/users/mig@pve/token/nope", &[])
        .await;
    assert_eq!(status, 500);
    assert_eq!(body["message"], "no such token 'nope' for user 'mig@pve'\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn access_methods_answer_with_pves_texts() {
    let (_a, b) = clusters(0.0).await;
    b.ok("POST", "/access/users", &[("userid", "mig@pve")])
        .await;
    let (status, body) = b
        .call("POST", "/access/users", &[("userid", "mig@pve")])
        .await;
    assert_eq!(status, 500);
    assert_eq!(
        body["message"],
        "create user failed: user 'mig@pve' already exists\n"
    );
    let (status, body) = b
        .call(
            "POST",
            "/access/roles",
            &[("roleid", "Migrator"), ("privs", "VM.Allocate,VM.Fly")],
        )
        .await;
    assert_eq!(status, 400);
    assert_eq!(
        body["errors"]["privs"],
        "invalid format - invalid privilege 'VM.Fly'\n"
    );
    let (status, body) = b
        .call("POST", "/access/roles", &[("roleid", "PVEFleetMigrate")])
        .await;
    assert_eq!(status, 400);
    assert_eq!(
        body["errors"]["roleid"],
        "cannot use role ID starting with the (case-insensitive) 'PVE' namespace"
    );
    b.ok("POST", "/access/roles", &[("roleid", "Migrator")])
        .await;
    let (status, body) = b
        .call("POST", "/access/roles", &[("roleid", "Migrator")])
        .await;
    assert_eq!(status, 500);
    assert_eq!(
        body["message"],
        "create role failed: role 'Migrator' already exists\n"
    );
    let (status, body) = b
        .call("PUT", "/access/roles/Nope", &[("privs", "VM.Audit")])
        .await;
    assert_eq!(status, 500);
    assert_eq!(
        body["message"],
        "update role failed: role 'Nope' does not exist\n"
    );
    let (status, body) = b
        .call("PUT", "/access/roles/PVEAuditor", &[("privs", "VM.Audit")])
        .await;
    assert_eq!(status, 500);
    assert_eq!(
        body["message"],
        "auto-generated role 'PVEAuditor' cannot be modified\n"
    );
    let (status, body) = b
        .call(
            "PUT",
            "/access/acl",
            &[
                ("path", "/vms/100"),
                ("roles", "Migrator"),
                ("users", "nobody@pve"),
            ],
        )
        .await;
    assert_eq!(status, 500);
    assert_eq!(
        body["message"],
        "ACL update failed: user 'nobody@pve' does not exist\n"
    );
    let (status, body) = b
        .call(
            "PUT",
            "/access/acl",
            &[
                ("path", "/vms/100"),
                ("roles", "Migrator"),
                ("tokens", "mig@pve!tk"),
            ],
        )
        .await;
    assert_eq!(status, 500);
    assert_eq!(
        body["message"],
        "ACL update failed: no such token 'tk' for user 'mig@pve'\n"
    );
    let (status, body) = b
        .call(
            "PUT",
            "/access/acl",
            &[("path", "/vms/100"), ("roles", "Migrator")],
        )
        .await;
    assert_eq!(status, 400);
    assert_eq!(
        body["errors"]["users"],
        "either 'users', 'groups' or 'tokens' is required."
    );
    b.ok("POST", "/access/users/mig@pve/token/tk", &[]).await;
    let (status, body) = b.call("POST", "/access/users/mig@pve/token/tk", &[]).await;
    assert_eq!(status, 400);
    assert_eq!(body["errors"]["tokenid"], "Token already exists.");
    let (status, body) = b.call("POST", "/access/users/mig@pve/token/t", &[]).await;
    assert_eq!(
        status, 400,
        "a token id has two characters at least: {body}"
    );
}

//! Every error path of the `pve` client against the simulator's HTTPS server: typed errors
//! with PVE's texts, validation before sending, locks, digests, missing VMs, failed and slow
//! tasks, safe retries (reads through 5xx, never writes), a lost create answer recognized
//! instead of duplicated, and authentication, TLS and connection failures.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails by panicking

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use pve::calls::{
    CloneOptions, ConfigChanges, ConfigView, CreateOptions, StartOptions, TaskListFilter,
    TaskSource,
};
use pve::https::{HttpsAuth, HttpsBackend, TlsVerify};
use pve::retry::RetryPolicy;
use pve::{ApiRequest, Client, Method, PveError};
use pve_sim::SimConfig;
use pve_sim::config::TokenConfig;
use pve_sim::faults::TaskFault;
use pvefleet_tests::https_sim::HttpsSim;

const TEMPLATE: u32 = 9000;

fn fast() -> SimConfig {
    SimConfig {
        time_scale: 0.0,
        agent_ip_delay_secs: 0.0,
        ..SimConfig::default()
    }
}

fn quick_retry() -> RetryPolicy {
    RetryPolicy {
        attempts: 12,
        initial: Duration::from_millis(2),
        factor: 1.5,
        max: Duration::from_millis(40),
    }
}

async fn clone_linked(client: &Client, newid: u32, name: &str) {
    let upid = client
        .clone_vm(
            "pve1",
            TEMPLATE,
            newid,
            &CloneOptions {
                name: Some(name.into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    client
        .wait_task(&upid, Duration::from_secs(60))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parameter_errors_come_back_per_parameter() {
    let sim = HttpsSim::start(fast()).await;
    let client = sim.token_client("pve1");
    let err = client.next_id(Some(TEMPLATE)).await.unwrap_err();
    assert_eq!(err.status(), Some(400));
    assert_eq!(err.message(), Some("Parameter verification failed."));
    assert_eq!(err.param_error("vmid"), Some("VM 9000 already exists"));
    assert!(err.is_already_exists());

    let req = ApiRequest::new(Method::Put, "/nodes/pve1/qemu/9000/config")
        .param("bogus", "1")
        .param("cores", "many");
    let err = client.execute(&req).await.unwrap_err();
    assert_eq!(
        err.param_error("bogus"),
        Some(
            "property is not defined in schema and the schema does not allow additional properties"
        )
    );
    assert_eq!(
        err.param_error("cores"),
        Some("type check ('integer') failed - got 'many'")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_values_are_refused_before_anything_is_sent() {
    let sim = HttpsSim::start(fast()).await;
    let cfg = sim.https_config(
        "pve1",
        HttpsAuth::Token {
            token_file: sim.token_file.clone(),
        },
        TlsVerify::CaFile(sim.ca_file.clone()),
    );
    let backend = pvefleet_tests::recording::Recording::new(HttpsBackend::new(cfg).unwrap());
    let calls = backend.calls();
    let client = Client::new(backend);
    let err = client
        .clone_vm("bad node!", TEMPLATE, 120, &CloneOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, PveError::Invalid { field, .. } if field == "node"),
        "{err}"
    );
    let err = client.vm_status("pve1", 42).await.unwrap_err();
    assert!(
        matches!(&err, PveError::Invalid { field, .. } if field == "vmid"),
        "{err}"
    );
    let err = client
        .update_vm("pve1", 9000, &ConfigChanges::new().memory_mib(8))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, PveError::Invalid { field, .. } if field == "memory"),
        "{err}"
    );
    assert_eq!(
        calls.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "a refused call reached the backend"
    );
    assert!(sim.sim.vm_node(120).is_none());
    // The counter does count calls that are sent.
    client.vm_status("pve1", TEMPLATE).await.unwrap();
    assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_locked_vm_is_reported_with_its_lock() {
    // Real task durations: a full clone holds `lock: clone` for seconds.
    let sim = HttpsSim::start(SimConfig {
        time_scale: 1.0,
        ..SimConfig::default()
    })
    .await;
    let client = sim.token_client("pve1");
    let upid = client
        .clone_vm(
            "pve1",
            TEMPLATE,
            130,
            &CloneOptions {
                full: Some(true),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let err = client
        .update_vm("pve1", 130, &ConfigChanges::new().cores(4))
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(500));
    assert_eq!(err.message(), Some("VM is locked (clone)"));
    assert_eq!(err.locked(), Some("clone"));
    // While it runs, waiting briefly times out; the task itself goes on and succeeds.
    let err = client
        .wait_task(&upid, Duration::from_millis(50))
        .await
        .unwrap_err();
    assert!(matches!(err, PveError::TaskTimeout { .. }), "{err}");
    client
        .wait_task(&upid, Duration::from_secs(60))
        .await
        .unwrap();
    client
        .update_vm("pve1", 130, &ConfigChanges::new().cores(4))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_digest_is_refused() {
    let sim = HttpsSim::start(fast()).await;
    let client = sim.token_client("pve1");
    clone_linked(&client, 140, "digest").await;
    let digest = client
        .vm_config("pve1", 140, &ConfigView::Current)
        .await
        .unwrap()
        .digest()
        .unwrap()
        .to_string();
    client
        .update_vm("pve1", 140, &ConfigChanges::new().cores(3).digest(&digest))
        .await
        .unwrap();
    let err = client
        .update_vm("pve1", 140, &ConfigChanges::new().cores(5).digest(&digest))
        .await
        .unwrap_err();
    assert_eq!(
        err.message(),
        Some("checksum mismatch (file change by other user?)")
    );
    let now = client
        .vm_config("pve1", 140, &ConfigView::Current)
        .await
        .unwrap();
    assert_eq!(
        now.cores().unwrap(),
        Some(3),
        "the refused change must not be applied"
    );
    assert_ne!(now.digest().as_deref(), Some(digest.as_str()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_vm_is_recognized_on_any_node() {
    let sim = HttpsSim::start(fast()).await;
    let client = sim.token_client("pve1");
    let err = client.vm_status("pve1", 4242).await.unwrap_err();
    assert!(err.is_missing_config(), "{err}");
    assert_eq!(
        err.message(),
        Some("Configuration file 'nodes/pve1/qemu-server/4242.conf' does not exist")
    );
    // The template lives on pve1: asking pve2 for it is the same error, no redirect.
    let err = client
        .vm_config("pve2", TEMPLATE, &ConfigView::Current)
        .await
        .unwrap_err();
    assert!(err.is_missing_config(), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_task_carries_its_exit_status_and_log_tail() {
    let sim = HttpsSim::start(fast()).await;
    let client = sim.token_client("pve1");
    clone_linked(&client, 150, "doomed").await;
    sim.sim.faults().fail_task(TaskFault {
        vmid: Some(150),
        task_type: "qmstart".into(),
        message: "start failed: QEMU exited with code 1".into(),
        remaining: Some(1),
    });
    let upid = client
        .vm_start("pve1", 150, &StartOptions::default())
        .await
        .unwrap();
    match client
        .wait_task(&upid, Duration::from_secs(30))
        .await
        .unwrap_err()
    {
        PveError::TaskFailed {
            exitstatus,
            log_tail,
            upid: failed,
        } => {
            assert_eq!(exitstatus, "start failed: QEMU exited with code 1");
            assert_eq!(
                log_tail.last().map(String::as_str),
                Some("TASK ERROR: start failed: QEMU exited with code 1")
            );
            assert_eq!(*failed, upid);
        }
        other => panic!("expected TaskFailed, got {other}"),
    }
    assert_eq!(sim.sim.vm_running(150), Some(false));
    // The fault was for one task only: the next start works.
    let upid = client
        .vm_start("pve1", 150, &StartOptions::default())
        .await
        .unwrap();
    client
        .wait_task(&upid, Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(sim.sim.vm_running(150), Some(true));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_are_retried_through_5xx_and_writes_are_not() {
    let sim = HttpsSim::start(fast()).await;
    let client = sim.token_client("pve1").with_retry(quick_retry());
    clone_linked(&client, 160, "flaky").await;
    sim.sim.faults().set_error_rate(0.5);
    for _ in 0..30 {
        client
            .vm_status("pve1", 160)
            .await
            .expect("reads survive a 50% 503 rate");
    }
    sim.sim.faults().set_error_rate(1.0);
    let err = client
        .vm_start("pve1", 160, &StartOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(503));
    let err = client.vm_status("pve1", 160).await.unwrap_err();
    assert_eq!(
        err.status(),
        Some(503),
        "reads give up after the policy's attempts"
    );
    sim.sim.faults().set_error_rate(0.0);
    assert_eq!(
        sim.sim.vm_running(160),
        Some(false),
        "a refused write had no effect"
    );
}

async fn own_tasks(client: &Client, vmid: u32, kind: &str) -> usize {
    let filter = TaskListFilter {
        vmid: Some(vmid),
        typefilter: Some(kind.into()),
        source: Some(TaskSource::All),
        limit: Some(500),
        ..Default::default()
    };
    client.node_tasks("pve1", &filter).await.unwrap().0.len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_clone_answer_is_recognized_not_duplicated() {
    let sim = HttpsSim::start(fast()).await;
    let client = sim.token_client("pve1").with_retry(quick_retry());
    sim.sim
        .faults()
        .drop_responses("POST", "/nodes/pve1/qemu/9000/clone", 1);
    let upid = client
        .clone_vm(
            "pve1",
            TEMPLATE,
            170,
            &CloneOptions {
                name: Some("lost".into()),
                ..Default::default()
            },
        )
        .await
        .expect("the retry recognizes our own clone");
    assert_eq!(
        (upid.kind.as_str(), upid.vmid()),
        ("qmclone", Some(TEMPLATE))
    );
    client
        .wait_task(&upid, Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(sim.sim.vm_node(170).as_deref(), Some("pve1"));
    assert_eq!(
        own_tasks(&client, TEMPLATE, "qmclone").await,
        1,
        "exactly one clone ran"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_create_answer_is_recognized_and_a_foreign_vmid_is_not() {
    let sim = HttpsSim::start(fast()).await;
    let client = sim.token_client("pve1").with_retry(quick_retry());
    let config = ConfigChanges::new().name("fresh").memory_mib(512).cores(1);
    sim.sim
        .faults()
        .drop_responses("POST", "/nodes/pve1/qemu", 1);
    let upid = client
        .create_vm("pve1", 180, &config, &CreateOptions::default())
        .await
        .expect("recognized");
    assert_eq!((upid.kind.as_str(), upid.vmid()), ("qmcreate", Some(180)));
    client
        .wait_task(&upid, Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(own_tasks(&client, 180, "qmcreate").await, 1);

    // A VMID that exists before our first attempt is never taken as ours.
    let err = client
        .create_vm("pve1", 180, &config, &CreateOptions::default())
        .await
        .unwrap_err();
    assert!(err.is_already_exists(), "{err}");
    assert_eq!(
        err.message(),
        Some("unable to create VM 180 - VM 180 already exists on node 'pve1'")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn root_only_options_are_refused_for_a_token_and_allowed_for_root() {
    let sim = HttpsSim::start(fast()).await;
    let token = sim.token_client("pve1");
    clone_linked(&token, 190, "root-only").await;
    let opts = StartOptions {
        skiplock: Some(true),
        ..Default::default()
    };
    let err = token.vm_start("pve1", 190, &opts).await.unwrap_err();
    assert_eq!(
        err.param_error("skiplock"),
        Some("Only root may use this option.")
    );
    let root = sim.ticket_client("pve1");
    let upid = root.vm_start("pve1", 190, &opts).await.unwrap();
    root.wait_task(&upid, Duration::from_secs(30))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_token_gets_permission_errors_on_writes() {
    let mut config = fast();
    config.tokens.push(TokenConfig {
        userid: "audit@pve".into(),
        tokenid: "ro".into(),
        secret: "0b5f5a52-7d2c-4f55-9d0e-6a1d7f0c9e11".into(),
        read_only: true,
        withheld: vec![],
    });
    let sim = HttpsSim::start(config).await;
    let file = sim.dir().join("ro-token");
    std::fs::write(&file, "audit@pve!ro=0b5f5a52-7d2c-4f55-9d0e-6a1d7f0c9e11\n").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let cfg = sim.https_config(
        "pve1",
        HttpsAuth::Token { token_file: file },
        TlsVerify::CaFile(sim.ca_file.clone()),
    );
    let client = Client::new(HttpsBackend::new(cfg).unwrap());
    client
        .vm_status("pve1", TEMPLATE)
        .await
        .expect("reads are allowed");
    let err = client
        .update_vm("pve1", TEMPLATE, &ConfigChanges::new().cores(2))
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(403));
    assert!(
        err.message()
            .unwrap()
            .starts_with("Permission check failed (/vms/9000, "),
        "{err}"
    );
}

/// `GET /nodes` once (no retry) with the given credentials and TLS mode.
async fn nodes_with(sim: &HttpsSim, auth: HttpsAuth, tls: TlsVerify) -> Result<usize, PveError> {
    let cfg = sim.https_config("pve1", auth, tls);
    let client = Client::new(HttpsBackend::new(cfg)?).with_retry(RetryPolicy::none());
    client.nodes().await.map(|n| n.len())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn authentication_and_tls_failures_are_typed() {
    let sim = HttpsSim::start(fast()).await;
    let other = HttpsSim::start(fast()).await;
    let token = || HttpsAuth::Token {
        token_file: sim.token_file.clone(),
    };

    let bad = sim.dir().join("bad-token");
    std::fs::write(
        &bad,
        "root@pam!fleet=00000000-0000-0000-0000-000000000000\n",
    )
    .unwrap();
    std::fs::set_permissions(&bad, std::fs::Permissions::from_mode(0o600)).unwrap();
    let bad_token = || HttpsAuth::Token {
        token_file: bad.clone(),
    };
    let err = nodes_with(&sim, bad_token(), TlsVerify::CaFile(sim.ca_file.clone()))
        .await
        .unwrap_err();
    assert!(
        matches!(err, PveError::Auth { ref reason, .. } if reason == "Authentication failed!"),
        "{err}"
    );

    std::fs::set_permissions(&bad, std::fs::Permissions::from_mode(0o644)).unwrap();
    let err = nodes_with(&sim, bad_token(), TlsVerify::CaFile(sim.ca_file.clone()))
        .await
        .unwrap_err();
    assert!(
        matches!(err, PveError::Config(ref m) if m.contains("chmod 600")),
        "{err}"
    );

    let err = nodes_with(&sim, token(), TlsVerify::CaFile(other.ca_file.clone()))
        .await
        .unwrap_err();
    assert!(
        err.is_connect(),
        "a certificate of another CA must not connect: {err}"
    );

    let err = nodes_with(
        &sim,
        token(),
        TlsVerify::PinnedSha256(other.fingerprint.clone()),
    )
    .await
    .unwrap_err();
    assert!(err.is_connect(), "a pin mismatch must not connect: {err}");

    let pin = sim.fingerprint.to_lowercase().replace(':', "");
    let nodes = nodes_with(&sim, token(), TlsVerify::PinnedSha256(pin))
        .await
        .expect("the right pin connects");
    assert_eq!(nodes, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_and_silent_nodes_are_connect_and_timeout_errors() {
    let sim = HttpsSim::start(SimConfig {
        time_scale: 0.01,
        ..SimConfig::default()
    })
    .await;
    // A port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut cfg = sim.https_config(
        "pve1",
        HttpsAuth::Token {
            token_file: sim.token_file.clone(),
        },
        TlsVerify::CaFile(sim.ca_file.clone()),
    );
    cfg.port = port;
    let err = Client::new(HttpsBackend::new(cfg).unwrap())
        .with_retry(RetryPolicy::none())
        .nodes()
        .await
        .unwrap_err();
    assert!(err.is_connect(), "{err}");

    sim.sim.faults().set_node_down("pve2", true);
    let mut cfg = sim.https_config(
        "pve2",
        HttpsAuth::Token {
            token_file: sim.token_file.clone(),
        },
        TlsVerify::CaFile(sim.ca_file.clone()),
    );
    cfg.timeout = Duration::from_millis(500);
    let err = Client::new(HttpsBackend::new(cfg).unwrap())
        .with_retry(RetryPolicy::none())
        .nodes()
        .await
        .unwrap_err();
    assert!(matches!(err, PveError::Timeout { .. }), "{err}");
    // Through a live node, the proxied request fails like pveproxy's: transient, retried, then reported.
    let client = sim.token_client("pve1").with_retry(quick_retry());
    let err = client.node_status("pve2").await.unwrap_err();
    assert_eq!(err.status(), Some(595), "{err}");
    assert!(err.is_transient());
    sim.sim.faults().set_node_down("pve2", false);
    client
        .node_status("pve2")
        .await
        .expect("the node answers again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fingerprint_nodes_reports_is_the_one_to_pin() {
    let sim = HttpsSim::start(fast()).await;
    let nodes = sim.token_client("pve1").nodes().await.unwrap();
    let reported = nodes
        .iter()
        .find(|n| n.node == "pve1")
        .and_then(|n| n.ssl_fingerprint.clone())
        .unwrap();
    assert_eq!(reported, sim.fingerprint);
    let cfg = sim.https_config(
        "pve1",
        HttpsAuth::Token {
            token_file: sim.token_file.clone(),
        },
        TlsVerify::PinnedSha256(reported),
    );
    Client::new(HttpsBackend::new(cfg).unwrap())
        .version()
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mute_guest_agent_times_out_and_no_agent_fails_at_once() {
    let sim = HttpsSim::start(SimConfig {
        time_scale: 0.01,
        ..SimConfig::default()
    })
    .await;
    let client = sim.token_client("pve1");
    clone_linked(&client, 200, "mute").await;
    let upid = client
        .vm_start("pve1", 200, &StartOptions::default())
        .await
        .unwrap();
    client
        .wait_task(&upid, Duration::from_secs(30))
        .await
        .unwrap();
    sim.sim.faults().set_agent_dead(200, true);
    let err = client
        .wait_guest_ips("pve1", 200, Duration::from_millis(400))
        .await
        .unwrap_err();
    assert!(matches!(err, PveError::Timeout { .. }), "{err}");
    sim.sim.faults().set_agent_dead(200, false);
    let ips = client
        .wait_guest_ips("pve1", 200, Duration::from_secs(30))
        .await
        .unwrap();
    assert!(!ips.is_empty());

    // `agent` is not hot-pluggable: on a running VM its removal would stay pending.
    let upid = client
        .vm_stop("pve1", 200, &pve::calls::StopOptions::default())
        .await
        .unwrap();
    client
        .wait_task(&upid, Duration::from_secs(30))
        .await
        .unwrap();
    client
        .update_vm("pve1", 200, &ConfigChanges::new().delete(&["agent"]))
        .await
        .unwrap();
    let upid = client
        .vm_start("pve1", 200, &StartOptions::default())
        .await
        .unwrap();
    client
        .wait_task(&upid, Duration::from_secs(30))
        .await
        .unwrap();
    let err = client
        .wait_guest_ips("pve1", 200, Duration::from_secs(30))
        .await
        .unwrap_err();
    assert_eq!(err.message(), Some("No QEMU guest agent configured"));
}

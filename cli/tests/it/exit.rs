//! Exit codes scripts can trust, and the errors behind them: every client error maps to its
//! code, and a bad spec file is refused (exit 3, field, value and allowed values named) before
//! the configuration is even read, so nothing can have been applied.

use std::path::PathBuf;
use std::time::Duration;

use bootstrap::cli_config::{ConfigError, CoordinatorAddr};
use clap::Parser;
use cli::exit::{CliError, ExitStatus, client_status};
use cli::{Cli, run};
use client::{AttemptFailure, ClientError};
use transport::TransportError;

#[test]
fn exit_codes_have_their_documented_numbers() {
    let codes = [
        (ExitStatus::Ok, 0),
        (ExitStatus::Failed, 1),
        (ExitStatus::Usage, 2),
        (ExitStatus::Refused, 3),
        (ExitStatus::NotFound, 4),
        (ExitStatus::Unavailable, 5),
    ];
    for (status, code) in codes {
        assert_eq!(status.code(), code, "{status:?}");
    }
}

fn failure(reason: &str) -> Vec<AttemptFailure> {
    vec![AttemptFailure {
        member: CoordinatorAddr {
            addr: "10.0.0.1:7400".into(),
            id: 1,
        },
        reason: reason.into(),
    }]
}

#[test]
fn each_client_error_maps_to_its_exit_code() {
    let cases = [
        (ClientError::Config(ConfigError::Missing), ExitStatus::Usage),
        (
            ClientError::Material(TransportError::Material("key_pem".into())),
            ExitStatus::Usage,
        ),
        (ClientError::Invalid("x".into()), ExitStatus::Refused),
        (ClientError::Unauthorized("x".into()), ExitStatus::Refused),
        (ClientError::Conflict("x".into()), ExitStatus::Refused),
        (
            ClientError::Untrusted {
                failures: failure("TLS alert 42"),
            },
            ExitStatus::Refused,
        ),
        (ClientError::NotFound("x".into()), ExitStatus::NotFound),
        (
            ClientError::Unavailable {
                after: Duration::from_secs(10),
                failures: failure("connection lost"),
            },
            ExitStatus::Unavailable,
        ),
        (ClientError::Unsupported("x".into()), ExitStatus::Failed),
        (ClientError::Internal("x".into()), ExitStatus::Failed),
        (
            ClientError::Transport(TransportError::Decode("x".into())),
            ExitStatus::Failed,
        ),
    ];
    for (error, status) in cases {
        assert_eq!(client_status(&error), status, "{error:?}");
        assert_eq!(CliError::from(error).status(), status);
    }
}

#[test]
fn an_apply_stopped_by_the_cluster_exits_with_the_clusters_code_and_says_what_was_applied() {
    let e = CliError::Apply {
        kind: "vm",
        name: "web-2".into(),
        done: 1,
        total: 3,
        source: Box::new(ClientError::Conflict("conflict: pool lan is in use".into())),
    };
    assert_eq!(e.status(), ExitStatus::Refused);
    let message = e.to_string();
    assert!(
        message.starts_with("vm web-2: conflict: pool lan is in use\n"),
        "{message}"
    );
    assert!(message.contains("1 of 3 applied before it"), "{message}");
    let e = CliError::Apply {
        kind: "vm",
        name: "web-2".into(),
        done: 0,
        total: 1,
        source: Box::new(ClientError::NotFound("vmid range r9".into())),
    };
    assert_eq!(e.status(), ExitStatus::NotFound);
}

#[test]
fn unavailable_and_untrusted_messages_name_each_member_and_the_fix() {
    let unavailable = ClientError::Unavailable {
        after: Duration::from_millis(2500),
        failures: failure("connect to 10.0.0.1:7400: no handshake within 2s"),
    }
    .to_string();
    assert_eq!(
        unavailable,
        "no coordinator answered within 2.5s:\n  coordinator 1 at 10.0.0.1:7400: connect to \
         10.0.0.1:7400: no handshake within 2s\ncheck that the members are running and reachable \
         and that `coordinators` in the configuration lists them, or allow more time \
         (--timeout SECS)"
    );
    let untrusted = ClientError::Untrusted {
        failures: failure("it refused this client's certificate: TLS alert 48"),
    }
    .to_string();
    assert!(
        untrusted.contains("coordinator 1 at 10.0.0.1:7400: it refused"),
        "{untrusted}"
    );
    assert!(untrusted.contains("`pvefleet member ls`"), "{untrusted}");
}

/// Runs the CLI with a configuration that does not exist: a command that reached for the
/// cluster would fail with exit 2 (usage), so a spec error proves nothing was contacted.
async fn run_without_cluster(args: &[&str]) -> (Result<(), CliError>, String) {
    let argv = ["pvefleet", "--config", "/nonexistent/pvefleet.toml"]
        .into_iter()
        .chain(args.iter().copied());
    let cli = Cli::try_parse_from(argv).unwrap();
    let mut out = Vec::new();
    let result = run(&cli, &mut out, 0).await;
    (result, String::from_utf8(out).unwrap())
}

fn spec_file(text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("specs.toml");
    std::fs::write(&path, text).unwrap();
    (dir, path)
}

#[tokio::test]
async fn a_bad_vm_spec_is_refused_with_field_value_and_allowed_values_and_nothing_sent() {
    let (_dir, path) = spec_file(
        r#"
[[vm]]
name = "web-1"
memory_mib = 2048

[[vm]]
name = "web-2"
memory_mib = 2048
nics = [{ bridge = "vmbr0", vlan = 5000 }]
"#,
    );
    let (result, out) = run_without_cluster(&["vm", "apply", "-f", path.to_str().unwrap()]).await;
    let e = result.unwrap_err();
    assert_eq!(e.status(), ExitStatus::Refused);
    assert_eq!(
        e.to_string(),
        format!(
            "{}: invalid spec: vm[1].nics[0].vlan = 5000 is not allowed: expected an integer \
             1-4094\nnothing was applied",
            path.display()
        )
    );
    assert_eq!(out, "", "nothing may be printed as applied");
}

#[tokio::test]
async fn unknown_keys_duplicates_and_bad_enum_values_in_spec_files_are_refused() {
    let cases = [
        (
            "[[vm]]\nname = \"a\"\nmemroy_mib = 512\n",
            "unknown field `memroy_mib`",
        ),
        (
            "[[vm]]\nname = \"a\"\nmemory_mib = 512\n[[vm]]\nname = \"a\"\nmemory_mib = 512\n",
            "vm \"a\" is defined twice",
        ),
        (
            "[[vm]]\nname = \"a\"\nmemory_mib = 512\nbios = \"uefi\"\n",
            "seabios",
        ),
        (
            "[[vm]]\nname = \"Web_1\"\nmemory_mib = 512\n",
            "vm[0].name = \"Web_1\" is not allowed: expected a DNS label",
        ),
    ];
    for (text, expected) in cases {
        let (_dir, path) = spec_file(text);
        let (result, out) =
            run_without_cluster(&["vm", "apply", "-f", path.to_str().unwrap()]).await;
        let e = result.unwrap_err();
        assert_eq!(e.status(), ExitStatus::Refused, "{text}: {e}");
        assert!(e.to_string().contains(expected), "{text}: {e}");
        assert!(e.to_string().ends_with("nothing was applied"), "{e}");
        assert_eq!(out, "");
    }
}

#[tokio::test]
async fn resource_files_are_validated_and_must_hold_the_applied_kind() {
    let (_dir, path) = spec_file(
        "[[pool]]\nname = \"lan\"\ncidr = \"10.0.0.0/24\"\nrange_start = \"10.0.1.10\"\n\
         range_end = \"10.0.0.20\"\n",
    );
    let (result, _) = run_without_cluster(&["pool", "apply", "-f", path.to_str().unwrap()]).await;
    let e = result.unwrap_err();
    assert_eq!(e.status(), ExitStatus::Refused);
    assert!(
        e.to_string()
            .contains("pool[0].range_start = \"10.0.1.10\" is not allowed"),
        "{e}"
    );

    let (_dir, path) = spec_file("[[vmid_range]]\nname = \"r\"\nstart = 100\nend = 200\n");
    let (result, _) = run_without_cluster(&["vip", "apply", "-f", path.to_str().unwrap()]).await;
    let e = result.unwrap_err();
    assert!(
        matches!(e, CliError::NothingToApply { kind: "vip", .. }),
        "{e:?}"
    );
    assert_eq!(e.status(), ExitStatus::Refused);
}

#[tokio::test]
async fn an_unreadable_spec_file_or_configuration_is_a_usage_error() {
    let (result, _) = run_without_cluster(&["vm", "apply", "-f", "/nonexistent/vms.toml"]).await;
    let e = result.unwrap_err();
    assert_eq!(e.status(), ExitStatus::Usage);
    assert!(e.to_string().contains("/nonexistent/vms.toml"), "{e}");

    let (result, _) = run_without_cluster(&["vm", "ls"]).await;
    let e = result.unwrap_err();
    assert_eq!(e.status(), ExitStatus::Usage);
    assert!(
        e.to_string()
            .contains("cannot read the configuration /nonexistent/pvefleet.toml"),
        "{e}"
    );
}

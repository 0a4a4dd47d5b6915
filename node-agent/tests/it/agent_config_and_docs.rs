#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails by panicking
//! The configuration file as shipped (`packaging/etc/agent.toml`, installed as
//! /etc/pvefleet/agent.toml) parsing to the defaults it documents, so it can never drift from
//! the parser; and the `pvefleet-agent` binary as a process: the man page and completion
//! scripts it generates with `--generate`, and the log filter checked like every field.

use std::path::Path;
use std::process::{Command, Output};

use node_agent::config::{
    AgentConfig, DEFAULT_LOG, DEFAULT_PVE_URL, FenceConfig, HttpsSettings, PveConfig,
};

const AGENT: &str = env!("CARGO_BIN_EXE_pvefleet-agent");

fn parse(text: &str) -> Result<AgentConfig, String> {
    AgentConfig::from_toml(text, Path::new("agent.toml")).map_err(|e| e.to_string())
}

const SHIPPED: &str = include_str!("../../../packaging/etc/agent.toml");

#[test]
fn the_shipped_file_is_the_https_backend_with_the_pve_ca_and_defaults() {
    let shipped = parse(SHIPPED).unwrap();
    let want = AgentConfig {
        pve: PveConfig::Https(HttpsSettings {
            url: DEFAULT_PVE_URL.into(),
            token_file: "/etc/pvefleet/pve-token".into(),
            ca_file: Some("/etc/pve/pve-root-ca.pem".into()),
            fingerprint: None,
            insecure: false,
            migration_address: None,
        }),
        ..parse("[pve]\nbackend = \"pvesh\"\n").unwrap()
    };
    assert_eq!(shipped, want);
    assert_eq!(shipped.log, DEFAULT_LOG);
}

/// `line` is `key = value` with a plain key at its start.
fn is_assignment(line: &str) -> bool {
    line.split_once(" = ").is_some_and(|(key, _)| {
        !key.is_empty() && key.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
    })
}

#[test]
fn the_shipped_file_shows_every_default_as_it_is() {
    // `# key = value` shows a default: uncommenting all of them changes nothing.
    let uncommented: Vec<&str> = SHIPPED
        .lines()
        .map(|l| match l.strip_prefix("# ") {
            Some(rest) if is_assignment(rest) => rest,
            _ => l,
        })
        .collect();
    assert_ne!(
        uncommented.join("\n"),
        SHIPPED,
        "the shipped file shows no default"
    );
    assert_eq!(
        parse(&uncommented.join("\n")).unwrap(),
        parse(SHIPPED).unwrap()
    );
    // Each alternative backend is shown with its fields' defaults.
    let alternative = |backend: &str| {
        let first = format!("#   backend = \"{backend}\"");
        let body: Vec<&str> = SHIPPED
            .lines()
            .skip_while(|l| !l.starts_with(&first))
            .take_while(|l| l.starts_with("#   "))
            .map(|l| &l["#   ".len()..])
            .filter(|l| is_assignment(l))
            .collect();
        parse(&format!("host_name = \"h\"\n[pve]\n{}\n", body.join("\n")))
            .unwrap()
            .pve
    };
    assert_eq!(
        alternative("pvesh"),
        parse("[pve]\nbackend = \"pvesh\"\n").unwrap().pve
    );
}

#[test]
fn the_shipped_file_names_every_field() {
    let fields =
        |value: toml::Value| -> Vec<String> { value.as_table().unwrap().keys().cloned().collect() };
    let mut all = fields(
        toml::Value::try_from(AgentConfig {
            host_name: Some("h".into()),
            labels: [("zone".to_string(), "a".to_string())]
                .into_iter()
                .collect(),
            ..parse(SHIPPED).unwrap()
        })
        .unwrap(),
    );
    let https = HttpsSettings {
        url: DEFAULT_PVE_URL.into(),
        token_file: "/t".into(),
        ca_file: Some("/c".into()),
        fingerprint: Some("AA".into()),
        insecure: true,
        migration_address: Some("10.0.0.11:8006".into()),
    };
    all.extend(fields(toml::Value::try_from(https).unwrap()));
    let PveConfig::Pvesh(pvesh) = parse("[pve]\nbackend = \"pvesh\"\n").unwrap().pve else {
        panic!("not pvesh");
    };
    all.extend(fields(toml::Value::try_from(pvesh).unwrap()));
    all.extend(fields(
        toml::Value::try_from(FenceConfig::default()).unwrap(),
    ));
    for field in all {
        let named = SHIPPED.lines().any(|l| {
            let l = l.trim_start_matches(['#', ' ']);
            l.starts_with(&format!("{field} = ")) || l.starts_with(&format!("[{field}]"))
        });
        assert!(named, "{field} is not in the shipped file");
    }
}

fn agent(args: &[&str]) -> Output {
    Command::new(AGENT).args(args).output().unwrap()
}

fn generated(kind: &str) -> String {
    let out = agent(&["--generate", kind]);
    assert!(
        out.status.success(),
        "--generate {kind}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn the_man_page_documents_both_subcommands_and_the_files() {
    let man = generated("man");
    assert!(man.contains(".TH pvefleet-agent 1"), "{man}");
    for heading in [
        ".SS \"pvefleet\\-agent join\"",
        ".SS \"pvefleet\\-agent run\"",
        ".SS \"pvefleet\\-agent fence\\-guard\"",
    ] {
        assert!(man.contains(heading), "{heading} missing:\n{man}");
    }
    for word in [
        "/etc/pvefleet/agent.toml",
        "/var/lib/pvefleet/agent",
        "heartbeat_ms",
        "NOTIFY_SOCKET",
        "PVEFLEET_JOIN_TOKEN",
        "\\-\\-token\\-file",
        "fence.json",
        "\\-\\-exit\\-with\\-agent",
    ] {
        assert!(man.contains(word), "{word} missing:\n{man}");
    }
    assert!(!man.contains("\\-\\-generate"), "{man}");
    // The old positional token is parsed only to be refused: never documented.
    assert!(!man.contains("LEGACY"), "{man}");
}

#[test]
fn completions_are_generated_for_bash_and_zsh() {
    let bash = generated("complete-bash");
    assert!(bash.contains("_pvefleet__agent() {"), "{bash}");
    assert!(
        bash.contains(
            "complete -F _pvefleet__agent -o nosort -o bashdefault -o default pvefleet-agent"
        ),
        "{bash}"
    );
    let zsh = generated("complete-zsh");
    assert!(zsh.starts_with("#compdef pvefleet-agent\n"), "{zsh}");
    let help = String::from_utf8(agent(&["--help"]).stdout).unwrap();
    assert!(!help.contains("--generate"), "{help}");
}

#[test]
fn a_bad_log_filter_is_a_configuration_error_naming_the_field() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("agent.toml");
    std::fs::write(
        &path,
        "host_name = \"hosta\"\nlog = \"info,=[\"\n[pve]\nbackend = \"https\"\ntoken_file = \"/t\"\ninsecure = true\n",
    )
    .unwrap();
    let out = agent(&["run", "--config", path.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("field `log`"), "{err}");
    assert!(err.contains("agent.toml"), "{err}");
}

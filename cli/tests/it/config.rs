//! The CLI configuration file: what it accepts, what it refuses (unknown keys, a member without
//! its id, a private key others can read) and that each refusal names the file and the fix.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::support::Pki;
use bootstrap::cli_config::{CliConfig, ConfigError, CoordinatorAddr};
use cli::exit::{ExitStatus, client_status};
use client::{AdminClient, ClientError};

const GOOD: &str = r#"
ca = "ca.pem"
cert = "/etc/pvefleet/admin.pem"
key = "keys/admin.key"
coordinators = [
  { addr = "10.0.0.1:7400", id = 1 },
  { addr = "pve2.example:7400", id = 2 },
]
"#;

fn parse(text: &str) -> Result<CliConfig, ConfigError> {
    CliConfig::parse(
        text,
        Path::new("/etc/pvefleet/cli.toml"),
        Path::new("/etc/pvefleet"),
    )
}

fn refusal(text: &str) -> String {
    parse(text).expect_err("should be refused").to_string()
}

#[test]
fn a_valid_file_parses_with_relative_paths_under_its_directory() {
    let c = parse(GOOD).unwrap();
    assert_eq!(c.ca, PathBuf::from("/etc/pvefleet/ca.pem"));
    assert_eq!(c.cert, PathBuf::from("/etc/pvefleet/admin.pem"));
    assert_eq!(c.key, PathBuf::from("/etc/pvefleet/keys/admin.key"));
    assert_eq!(
        c.coordinators,
        vec![
            CoordinatorAddr {
                addr: "10.0.0.1:7400".into(),
                id: 1
            },
            CoordinatorAddr {
                addr: "pve2.example:7400".into(),
                id: 2
            },
        ]
    );
}

#[test]
fn an_unknown_key_is_refused_naming_the_file_and_the_key() {
    let e = refusal(&format!("timeout = 5\n{GOOD}"));
    assert!(e.contains("/etc/pvefleet/cli.toml"), "{e}");
    assert!(e.contains("unknown field `timeout`"), "{e}");
    let e = refusal(&GOOD.replace("id = 2", "id = 2, port = 1"));
    assert!(e.contains("unknown field `port`"), "{e}");
}

#[test]
fn a_member_without_its_id_is_refused_with_the_form_to_write() {
    let e = refusal(
        "ca = \"ca.pem\"\ncert = \"a.pem\"\nkey = \"a.key\"\ncoordinators = [\"10.0.0.1:7400\"]\n",
    );
    assert!(
        e.contains(r#"write { addr = "10.0.0.1:7400", id = N }"#),
        "{e}"
    );
}

#[test]
fn missing_keys_empty_member_lists_bad_and_repeated_addresses_are_refused() {
    let e = refusal(&GOOD.replace("key = \"keys/admin.key\"", ""));
    assert!(e.contains("missing field `key`"), "{e}");
    let no_members = GOOD.split("coordinators").next().unwrap().to_string() + "coordinators = []";
    let e = refusal(&no_members);
    assert!(e.contains("list at least one member"), "{e}");
    let e = refusal(&GOOD.replace("10.0.0.1:7400", "10.0.0.1"));
    assert!(e.contains("coordinators[0].addr = \"10.0.0.1\""), "{e}");
    assert!(e.contains("host:port"), "{e}");
    let e = refusal(&GOOD.replace("pve2.example:7400", "10.0.0.1:7400"));
    assert!(e.contains("listed twice"), "{e}");
}

#[test]
fn no_config_at_all_says_where_one_comes_from() {
    let e = CliConfig::locate(None).unwrap_err().to_string();
    assert!(e.contains("--config FILE"), "{e}");
    assert!(e.contains("PVEFLEET_CONFIG"), "{e}");
    assert!(e.contains("pvefleet.toml"), "{e}");
    assert_eq!(
        CliConfig::locate(Some(Path::new("x.toml"))).unwrap(),
        PathBuf::from("x.toml")
    );
}

#[test]
fn a_written_configuration_is_relative_to_its_directory_and_loads_back() {
    let pki = Pki::new();
    let members = vec![CoordinatorAddr {
        addr: "127.0.0.1:7400".into(),
        id: 1,
    }];
    let config = CliConfig::for_node_dir(pki.dir(), members);
    let path = pki.dir().join("pvefleet.toml");
    config.write(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("ca = \"ca.pem\""), "{text}");
    assert!(text.contains("key = \"admin.key\""), "{text}");
    assert_eq!(CliConfig::load(&path).unwrap(), config);
    assert!(config.load_material().is_ok());
}

#[tokio::test]
async fn a_key_readable_by_others_is_refused_with_the_chmod_that_fixes_it() {
    let pki = Pki::new();
    let config = CliConfig::for_node_dir(
        pki.dir(),
        vec![CoordinatorAddr {
            addr: "127.0.0.1:7400".into(),
            id: 1,
        }],
    );
    assert!(AdminClient::from_config(&config).is_ok());

    std::fs::set_permissions(&config.key, std::fs::Permissions::from_mode(0o644)).unwrap();
    let err = AdminClient::from_config(&config).unwrap_err();
    assert!(
        matches!(err, ClientError::Config(ConfigError::Material(_))),
        "{err:?}"
    );
    let message = err.to_string();
    assert!(
        message.contains(&format!("chmod 600 {}", config.key.display())),
        "{message}"
    );
    assert_eq!(client_status(&err), ExitStatus::Usage);
}

#[test]
fn a_missing_certificate_names_its_path() {
    let config = parse(GOOD).unwrap();
    let e = config.load_material().unwrap_err().to_string();
    assert!(e.contains("/etc/pvefleet/ca.pem"), "{e}");
}

//! Reading a join token from a file, standard input and the environment; the old argument form
//! refused; no message ever shows the token.

use std::ffi::OsString;
use std::fs;
use std::os::unix::fs::PermissionsExt;

use super::*;

const TOKEN: &str = "pvf1.abababababababababababababababababababababababababababababababab.abc123.s3cretsecretsecretsecretsecret12";
const SECRET: &str = "s3cretsecretsecretsecretsecret12";

fn no_stdin() -> io::Empty {
    io::empty()
}

fn file_with(dir: &Path, text: &[u8], mode: u32) -> PathBuf {
    let path = dir.join("join.token");
    fs::write(&path, text).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(mode)).unwrap();
    path
}

#[test]
fn a_private_token_file_is_read_and_trimmed() {
    let tmp = tempfile::tempdir().unwrap();
    for mode in [0o600, 0o400] {
        let path = file_with(tmp.path(), format!("  {TOKEN}\n\n").as_bytes(), mode);
        let text = read_join_token(Some(&path), None, &mut no_stdin()).unwrap();
        assert_eq!(text, TOKEN);
    }
}

#[test]
fn a_token_file_others_can_read_is_refused_with_the_fix_and_without_the_token() {
    let tmp = tempfile::tempdir().unwrap();
    for mode in [0o644, 0o640, 0o604, 0o660] {
        let path = file_with(tmp.path(), TOKEN.as_bytes(), mode);
        let err = read_join_token(Some(&path), None, &mut no_stdin()).unwrap_err();
        assert!(
            matches!(err, TokenInputError::Insecure { mode: m, .. } if m == mode),
            "{err}"
        );
        let msg = err.to_string();
        assert!(
            msg.contains(&format!("chmod 600 {}", path.display())),
            "{msg}"
        );
        assert!(msg.contains("token revoke"), "{msg}");
        assert!(!msg.contains(SECRET), "{msg}");
    }
}

#[test]
fn a_token_file_that_is_not_a_regular_file_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let err = read_join_token(Some(tmp.path()), None, &mut no_stdin()).unwrap_err();
    assert!(matches!(err, TokenInputError::NotRegular { .. }), "{err}");
    assert!(err.to_string().contains("--token-file -"), "{err}");
    let missing = tmp.path().join("nope");
    let err = read_join_token(Some(&missing), None, &mut no_stdin()).unwrap_err();
    assert!(
        matches!(err, TokenInputError::Io { op: "open", .. }),
        "{err}"
    );
    assert!(err.to_string().contains("nope"), "{err}");
}

#[test]
fn empty_oversized_and_binary_sources_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let empty = file_with(tmp.path(), b" \n", 0o600);
    let err = read_join_token(Some(&empty), None, &mut no_stdin()).unwrap_err();
    assert!(matches!(err, TokenInputError::Empty { .. }), "{err}");
    let big = file_with(tmp.path(), &vec![b'a'; 5000], 0o600);
    let err = read_join_token(Some(&big), None, &mut no_stdin()).unwrap_err();
    assert!(matches!(err, TokenInputError::TooLong { .. }), "{err}");
    let binary = file_with(tmp.path(), &[0xff, 0xfe, 0x00], 0o600);
    let err = read_join_token(Some(&binary), None, &mut no_stdin()).unwrap_err();
    assert!(matches!(err, TokenInputError::NotText { .. }), "{err}");
    let err = read_join_token(None, Some(OsString::from("  ")), &mut no_stdin()).unwrap_err();
    assert!(err.to_string().contains(JOIN_TOKEN_ENV), "{err}");
}

#[test]
fn a_dash_reads_the_first_line_of_standard_input() {
    let mut stdin = format!("{TOKEN}\nsomething else\n").into_bytes();
    let text = read_join_token(Some(Path::new("-")), None, &mut stdin.as_slice()).unwrap();
    assert_eq!(text, TOKEN);
    stdin.clear();
    let err = read_join_token(Some(Path::new("-")), None, &mut stdin.as_slice()).unwrap_err();
    assert!(
        err.to_string()
            .contains("standard input holds no join token"),
        "{err}"
    );
    assert!(reads_stdin(Some(Path::new("-"))) && !reads_stdin(None));
}

#[test]
fn the_environment_is_read_only_without_a_token_file() {
    let tmp = tempfile::tempdir().unwrap();
    let env = || Some(OsString::from(format!("{TOKEN}\n")));
    assert_eq!(
        read_join_token(None, env(), &mut no_stdin()).unwrap(),
        TOKEN
    );
    // The flag names a source explicitly: it wins over the environment.
    let other = TOKEN.replace("abc123", "xyz789");
    let path = file_with(tmp.path(), other.as_bytes(), 0o600);
    assert_eq!(
        read_join_token(Some(&path), env(), &mut no_stdin()).unwrap(),
        other
    );
    let err = read_join_token(None, None, &mut no_stdin()).unwrap_err();
    assert!(matches!(err, TokenInputError::Missing));
    let msg = err.to_string();
    for way in ["--token-file PATH", "--token-file -", JOIN_TOKEN_ENV] {
        assert!(msg.contains(way), "{way} missing from {msg}");
    }
}

#[test]
fn the_old_argument_form_is_refused_without_echoing_the_token() {
    // `join TOKEN ADDR`: the token lands where the address is, the address after it.
    let err =
        check_join_arguments("pvefleet-agent join", TOKEN, Some("10.0.0.1:7400")).unwrap_err();
    let msg = err.to_string();
    assert!(!msg.contains(SECRET) && !msg.contains("abc123"), "{msg}");
    assert!(!msg.contains("10.0.0.1"), "{msg}");
    for way in [
        "--token-file",
        JOIN_TOKEN_ENV,
        "pvefleet-agent join --token-file - ADDR",
    ] {
        assert!(msg.contains(way), "{way} missing from {msg}");
    }
    // `join TOKEN` alone (no address) is the old form too.
    assert!(check_join_arguments("pvefleet-agent join", TOKEN, None).is_err());
    // Any second word, token-shaped or not.
    assert!(check_join_arguments("pvefleet-agent join", "10.0.0.1:7400", Some("x")).is_err());
    // Addresses, including host names that start like a token's prefix, pass.
    for addr in ["10.0.0.1:7400", "pvf1.lab.example:7400", "[fd00::1]:7400"] {
        assert!(
            check_join_arguments("pvefleet-agent join", addr, None).is_ok(),
            "{addr}"
        );
        assert!(!looks_like_token(addr), "{addr}");
    }
    assert!(looks_like_token(TOKEN));
}

//! Secrets read from files: the API token line and the ticket login password.
//!
//! Both files must be private to their owner (mode `0600` or stricter): a secret that every local
//! user can read is refused with a [`PveError::Config`] that says how to fix it. The secrets
//! never show up in `Debug` output or in errors.

use std::fmt;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use http::HeaderValue;

use crate::error::PveError;

/// Read a secret file, refusing one that group or others may access or that is not a regular
/// file. The file is opened once and its mode checked on that open file: checking the path and
/// then reopening it would read whatever the path names by then (a swapped file or symlink).
pub(crate) fn read_secret_file(path: &Path, what: &str) -> Result<String, PveError> {
    let shown = path.display();
    let cannot =
        |e: std::io::Error| PveError::Config(format!("cannot read the {what} {shown}: {e}"));
    let file = std::fs::File::open(path).map_err(cannot)?;
    let meta = file.metadata().map_err(cannot)?;
    if !meta.is_file() {
        return Err(PveError::Config(format!(
            "the {what} {shown} is not a regular file; name the file that holds the secret"
        )));
    }
    let mode = meta.permissions().mode() & 0o7777;
    if !is_private_mode(mode) {
        return Err(PveError::Config(format!(
            "the {what} {shown} is accessible by group or others (mode {mode:04o}); \
             it holds a secret: run `chmod 600 {shown}`"
        )));
    }
    std::io::read_to_string(file).map_err(cannot)
}

/// Whether a file mode keeps a secret private to its owner.
pub(crate) fn is_private_mode(mode: u32) -> bool {
    mode & 0o077 == 0
}

/// An API token `USER@REALM!TOKENID=SECRET`, ready to be sent as
/// `Authorization: PVEAPIToken=...`.
#[derive(Clone)]
pub(crate) struct ApiToken {
    /// `USER@REALM!TOKENID`: the identity, safe to show.
    id: String,
    /// The whole header value, marked sensitive.
    header: HeaderValue,
}

impl fmt::Debug for ApiToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApiToken")
            .field("id", &self.id)
            .field("secret", &"<redacted>")
            .finish()
    }
}

impl ApiToken {
    /// Load the token from its file (one line; trailing whitespace ignored).
    pub(crate) fn from_file(path: &Path) -> Result<Self, PveError> {
        let text = read_secret_file(path, "API token file")?;
        Self::parse(text.trim_end()).map_err(|reason| {
            PveError::Config(format!("API token file {}: {reason}", path.display()))
        })
    }

    /// Parse `USER@REALM!TOKENID=SECRET`. Errors never repeat the secret.
    pub(crate) fn parse(line: &str) -> Result<Self, String> {
        const FORMAT: &str = "expected one line `USER@REALM!TOKENID=SECRET`";
        // PVE splits at the last `=`: the secret (a UUID) has none, the id may not either.
        let Some((id, secret)) = line.rsplit_once('=') else {
            return Err(format!("no `=` found; {FORMAT}"));
        };
        validate_token_id(id).map_err(|e| format!("{e}; {FORMAT}"))?;
        if secret.is_empty() {
            return Err(format!("the secret after `=` is empty; {FORMAT}"));
        }
        if !secret
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-')
        {
            return Err(format!(
                "the secret of token `{id}` has characters a PVE token secret (a UUID) never has"
            ));
        }
        let mut header = HeaderValue::from_str(&format!("PVEAPIToken={id}={secret}"))
            .map_err(|_| format!("token `{id}` cannot be sent in an HTTP header"))?;
        header.set_sensitive(true);
        Ok(Self {
            id: id.to_string(),
            header,
        })
    }

    /// `USER@REALM!TOKENID`, the user that tasks started with this token belong to.
    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    /// The `Authorization` header value.
    pub(crate) fn header(&self) -> &HeaderValue {
        &self.header
    }
}

/// Check a token id against PVE's `$token_full_regex`: `USER@REALM!TOKENID` with
/// `USER = [^\s:/]+`, `REALM`, `TOKENID = [A-Za-z][A-Za-z0-9.\-_]+`.
pub(crate) fn validate_token_id(id: &str) -> Result<(), String> {
    let Some((userid, tokenid)) = id.rsplit_once('!') else {
        return Err(format!("token id `{id}` has no `!TOKENID`"));
    };
    validate_userid(userid).map_err(|e| format!("token id `{id}`: {e}"))?;
    if !is_pve_name(tokenid) {
        return Err(format!(
            "token id `{id}`: token name `{tokenid}` must match [A-Za-z][A-Za-z0-9.-_]+"
        ));
    }
    Ok(())
}

/// Check a user id `USER@REALM` (PVE's `$userid_regex`).
pub(crate) fn validate_userid(userid: &str) -> Result<(), String> {
    let Some((user, realm)) = userid.rsplit_once('@') else {
        return Err(format!("user `{userid}` has no `@REALM`"));
    };
    if user.is_empty()
        || user
            .chars()
            .any(|c| c.is_whitespace() || c == ':' || c == '/')
    {
        return Err(format!(
            "user name `{user}` must be non-empty, without blanks, `:` or `/`"
        ));
    }
    if !is_pve_name(realm) {
        return Err(format!(
            "realm `{realm}` must match [A-Za-z][A-Za-z0-9.-_]+"
        ));
    }
    Ok(())
}

/// `[A-Za-z][A-Za-z0-9\.\-_]+` (at least two characters).
fn is_pve_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && s.len() >= 2
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
}

/// The login password of ticket authentication.
#[derive(Clone)]
pub(crate) struct Password(String);

impl fmt::Debug for Password {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Password(<redacted>)")
    }
}

impl Password {
    /// Load the password: the file's first line, without its line ending (other whitespace is
    /// part of the password).
    pub(crate) fn from_file(path: &Path) -> Result<Self, PveError> {
        let text = read_secret_file(path, "password file")?;
        let line = text.lines().next().unwrap_or_default();
        if line.is_empty() {
            return Err(PveError::Config(format!(
                "password file {}: the first line is empty",
                path.display()
            )));
        }
        Ok(Self(line.to_string()))
    }

    /// The password itself, only for the login request.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "5c2d7a3e-1f4b-4c8e-9a6d-0b1e2f3a4b5c";

    #[test]
    fn private_modes_are_accepted_and_shared_ones_refused() {
        assert!(is_private_mode(0o600));
        assert!(is_private_mode(0o400));
        assert!(is_private_mode(0o700));
        assert!(!is_private_mode(0o640));
        assert!(!is_private_mode(0o604));
        assert!(!is_private_mode(0o620));
    }

    #[test]
    fn secret_files_are_checked_on_the_file_that_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, "line\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = read_secret_file(&path, "API token file").unwrap_err();
        assert!(e.to_string().contains("mode 0644"), "{e}");
        assert!(e.to_string().contains("chmod 600"), "{e}");

        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(read_secret_file(&path, "API token file").unwrap(), "line\n");

        // A directory is not a secret file, whatever its mode.
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        std::fs::set_permissions(&sub, std::fs::Permissions::from_mode(0o700)).unwrap();
        let e = read_secret_file(&sub, "API token file").unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
    }

    #[test]
    fn token_line_parses_into_id_and_sensitive_header() {
        let t = ApiToken::parse(&format!("root@pam!fleet={SECRET}")).unwrap();
        assert_eq!(t.id(), "root@pam!fleet");
        assert_eq!(
            t.header().to_str().unwrap(),
            format!("PVEAPIToken=root@pam!fleet={SECRET}")
        );
        assert!(t.header().is_sensitive());
    }

    #[test]
    fn token_debug_output_hides_the_secret() {
        let t = ApiToken::parse(&format!("agent@pve!fleet-1={SECRET}")).unwrap();
        let shown = format!("{t:?}");
        assert!(shown.contains("agent@pve!fleet-1"));
        assert!(!shown.contains(SECRET), "{shown}");
    }

    #[test]
    fn malformed_token_lines_are_refused_without_echoing_the_secret() {
        for line in [
            format!("root@pam={SECRET}"),
            format!("root!fleet={SECRET}"),
            format!("root@p!fleet={SECRET}"),
            format!("root@pam!1fleet={SECRET}"),
            format!("ro ot@pam!fleet={SECRET}"),
            format!("root@pam!fleet {SECRET}"),
            "root@pam!fleet=".to_string(),
            format!("root@pam!fleet={SECRET};x"),
        ] {
            let err = ApiToken::parse(&line).unwrap_err();
            assert!(!err.contains(SECRET), "{err}");
        }
    }

    #[test]
    fn user_names_may_contain_at_and_bang_but_realm_and_token_may_not() {
        assert!(validate_token_id("a@b@pam!tok").is_ok());
        assert!(validate_token_id("a!b@pam!tok").is_ok());
        assert!(validate_token_id("a@pve!t").is_err());
        assert!(validate_userid("a/b@pam").is_err());
        assert!(validate_userid("a:b@pam").is_err());
        assert!(validate_userid("root@pam").is_ok());
    }

    #[test]
    fn password_debug_output_is_redacted() {
        assert_eq!(
            format!("{:?}", Password("hunter2".into())),
            "Password(<redacted>)"
        );
    }
}

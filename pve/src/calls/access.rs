//! `POST /access/ticket`: log in with user and password, get a ticket (cookie) and a CSRF
//! token. Also renews a ticket: pass the old ticket as the password. The HTTPS transport may
//! reuse [`access_ticket_request`] for its own login.

use crate::client::Client;
use crate::error::PveError;
use crate::props::check_realm;
use crate::props::kv::invalid;
use crate::request::{ApiRequest, Method};
use crate::types::TicketInfo;

/// Optional login parameters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TicketOptions {
    /// Realm, when `username` has none (`username=root`, `realm=pam`).
    pub realm: Option<String>,
    /// One-time password (legacy TFA).
    pub otp: Option<String>,
    /// The half-ticket of a TFA challenge being answered.
    pub tfa_challenge: Option<String>,
    /// Ask for the new ticket format (default on the server side).
    pub new_format: Option<bool>,
}

fn check_username(username: &str, realm: Option<&str>) -> Result<(), PveError> {
    let bad = |why: &str| invalid("username", format!("'{username}' {why}"));
    if username.is_empty() || username.len() > 64 {
        return Err(bad("must be 1 to 64 characters"));
    }
    let (user, user_realm) = match username.rsplit_once('@') {
        Some((u, r)) => (u, Some(r)),
        None => (username, None),
    };
    if user.is_empty()
        || user
            .chars()
            .any(|c| c == ':' || c == '/' || c.is_whitespace())
    {
        return Err(bad(
            "is not USER@REALM (user without ':', '/' or whitespace)",
        ));
    }
    match (user_realm, realm) {
        (Some(r), _) => check_realm("username", r),
        (None, Some(_)) => Ok(()),
        (None, None) => Err(bad(
            "has no realm; write user@realm or set the realm option",
        )),
    }
}

/// `POST /access/ticket` with `username` (`root@pam`) and `password`.
pub fn access_ticket_request(username: &str, password: &str) -> Result<ApiRequest, PveError> {
    access_ticket_request_with(username, password, &TicketOptions::default())
}

/// `POST /access/ticket` with options.
pub fn access_ticket_request_with(
    username: &str,
    password: &str,
    opts: &TicketOptions,
) -> Result<ApiRequest, PveError> {
    if let Some(r) = &opts.realm {
        check_realm("realm", r)?;
    }
    check_username(username, opts.realm.as_deref())?;
    if password.is_empty() {
        return Err(invalid("password", "must not be empty"));
    }
    if opts.otp.as_deref() == Some("") {
        return Err(invalid("otp", "must not be empty when given"));
    }
    if opts.tfa_challenge.as_deref() == Some("") {
        return Err(invalid("tfa-challenge", "must not be empty when given"));
    }
    Ok(ApiRequest::new(Method::Post, "/access/ticket")
        .param("username", username)
        .param("password", password)
        .opt("realm", opts.realm.as_deref())
        .opt("otp", opts.otp.as_deref())
        .opt("tfa-challenge", opts.tfa_challenge.as_deref())
        .flag("new-format", opts.new_format))
}

impl Client {
    /// Log in (or renew a ticket by passing it as `password`).
    pub async fn access_ticket(
        &self,
        username: &str,
        password: &str,
        opts: &TicketOptions,
    ) -> Result<TicketInfo, PveError> {
        self.fetch(&access_ticket_request_with(username, password, opts)?)
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn login_sends_exact_params() {
        let r = access_ticket_request("root@pam", "pw").unwrap();
        assert_eq!(
            (r.method, r.path.as_str()),
            (Method::Post, "/access/ticket")
        );
        assert_eq!(
            r.params,
            vec![
                ("username".into(), "root@pam".into()),
                ("password".into(), "pw".into())
            ]
        );
        let opts = TicketOptions {
            realm: Some("pve".into()),
            otp: Some("123456".into()),
            tfa_challenge: Some("PVE:x".into()),
            new_format: Some(true),
        };
        let r = access_ticket_request_with("alice", "pw", &opts).unwrap();
        let keys: Vec<&str> = r.params.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            keys,
            [
                "username",
                "password",
                "realm",
                "otp",
                "tfa-challenge",
                "new-format"
            ]
        );
        assert_eq!(r.get("new-format"), Some("1"));
    }

    #[test]
    fn bad_logins_name_the_field() {
        for (user, pw, opts, field) in [
            ("root", "pw", TicketOptions::default(), "username"),
            ("ro ot@pam", "pw", TicketOptions::default(), "username"),
            ("root@p", "pw", TicketOptions::default(), "username"),
            ("root@pam", "", TicketOptions::default(), "password"),
            (
                "root",
                "pw",
                TicketOptions {
                    realm: Some("9".into()),
                    ..Default::default()
                },
                "realm",
            ),
            (
                "root@pam",
                "pw",
                TicketOptions {
                    otp: Some(String::new()),
                    ..Default::default()
                },
                "otp",
            ),
        ] {
            let e = access_ticket_request_with(user, pw, &opts).unwrap_err();
            assert!(
                matches!(e, PveError::Invalid { field: ref f, .. } if f == field),
                "{user}: {e}"
            );
        }
    }
}

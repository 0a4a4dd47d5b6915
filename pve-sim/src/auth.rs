//! Authentication as PVE's `auth_handler` does it: API tokens (`Authorization:
//! PVEAPIToken=USER@REALM!TOKENID=SECRET`), tickets (`PVEAuthCookie`) with CSRF tokens on
//! writes, and `POST /access/ticket` (login and ticket renewal).
//!
//! Tickets are `PVE:<user>:<8 hex time>::<base64 signature>`; the signature is an
//! HMAC-SHA256 with a random per-simulator key (PVE signs with the cluster's RSA key; only the
//! simulator has to verify them). CSRF tokens are `<8 hex time>:<base64 HMAC-SHA256>`.

use hmac::{Hmac, Mac};
use percent_encoding::percent_decode_str;
use rand::RngCore;
use serde_json::{Map, Value, json};
use sha2::Sha256;

use crate::access::AccessControl;
use crate::api::{ApiError, Caller, Params};
use crate::config::SimConfig;
use crate::route::HttpMethod;

/// Ticket (and CSRF token) lifetime in seconds (`$ticket_lifetime`).
pub(crate) const TICKET_LIFETIME: i64 = 7200;
/// Tickets from up to this many seconds in the future are accepted (clock skew).
const MIN_TICKET_AGE: i64 = -300;

/// Who a request is from, after authentication.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Principal {
    /// A method that needs no authentication (`POST /access/ticket`); `token` = an API token
    /// header was sent anyway (PVE then refuses methods with `allowtoken: 0`).
    Anonymous {
        /// An `Authorization: PVEAPIToken=...` header was present.
        token: bool,
    },
    /// An authenticated user or token.
    User(Caller),
}

/// The credential headers of a request.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Credentials<'a> {
    /// `Cookie` header.
    pub(crate) cookie: Option<&'a str>,
    /// `Authorization` header.
    pub(crate) authorization: Option<&'a str>,
    /// `CSRFPreventionToken` header.
    pub(crate) csrf: Option<&'a str>,
}

/// PVE's `extract_auth_value`: `(?:^|\s)KEY(?:=| )([^;]*)`, URI-unescaped.
pub(crate) fn extract_auth_value(header: &str, key: &str) -> Option<String> {
    let mut search = 0;
    while let Some(found) = header[search..].find(key) {
        let at = search + found;
        let preceded_ok = at == 0 || header[..at].ends_with(char::is_whitespace);
        let rest = &header[at + key.len()..];
        if preceded_ok && (rest.starts_with('=') || rest.starts_with(' ')) {
            let value = rest[1..].split(';').next().unwrap_or("");
            if value.is_empty() {
                return None;
            }
            return Some(percent_decode_str(value).decode_utf8_lossy().into_owned());
        }
        search = at + key.len();
    }
    None
}

fn unauthorized(message: &str) -> ApiError {
    ApiError::status(401, message)
}

/// Credentials and signing keys of one simulator.
#[derive(Debug)]
pub(crate) struct Auth {
    ticket_key: [u8; 32],
    csrf_key: [u8; 32],
    /// Users and API tokens (the configured ones and those created through the API).
    access: AccessControl,
    root_password: String,
    cluster_name: Option<String>,
}

impl Auth {
    /// Keys are random per simulator: tickets of one run are worthless in the next.
    pub(crate) fn new(config: &SimConfig) -> Self {
        let mut ticket_key = [0u8; 32];
        let mut csrf_key = [0u8; 32];
        rand::rng().fill_bytes(&mut ticket_key);
        rand::rng().fill_bytes(&mut csrf_key);
        Self {
            ticket_key,
            csrf_key,
            access: AccessControl::new(config),
            root_password: config.root_password.clone(),
            cluster_name: (config.nodes.len() > 1).then(|| config.cluster_name.clone()),
        }
    }

    fn sign(key: &[u8], text: &str) -> Vec<u8> {
        // HMAC accepts keys of any length; the error arm cannot happen with a 32-byte key.
        match Hmac::<Sha256>::new_from_slice(key) {
            Ok(mut mac) => {
                mac.update(text.as_bytes());
                mac.finalize().into_bytes().to_vec()
            }
            Err(_) => Vec::new(),
        }
    }

    /// A ticket for `user`, issued at unix time `now`.
    pub(crate) fn ticket(&self, user: &str, now: i64) -> String {
        use base64::Engine;
        let plain = format!("PVE:{}:{:08X}", user.replace(':', "%3A"), now);
        let sig =
            base64::engine::general_purpose::STANDARD.encode(Self::sign(&self.ticket_key, &plain));
        format!("{plain}::{sig}")
    }

    /// The CSRF prevention token for `user`, issued at `now`.
    pub(crate) fn csrf_token(&self, user: &str, now: i64) -> String {
        use base64::Engine;
        let stamp = format!("{now:08X}");
        let sig = base64::engine::general_purpose::STANDARD_NO_PAD
            .encode(Self::sign(&self.csrf_key, &format!("{stamp}:{user}")));
        format!("{stamp}:{sig}")
    }

    fn age_ok(stamp: &str, now: i64) -> bool {
        stamp.len() == 8
            && stamp
                .chars()
                .all(|c| c.is_ascii_digit() || c.is_ascii_uppercase())
            && i64::from_str_radix(stamp, 16).is_ok_and(|t| {
                let age = now - t;
                age > MIN_TICKET_AGE && age < TICKET_LIFETIME
            })
    }

    /// The user of a valid, unexpired ticket.
    pub(crate) fn verify_ticket(&self, ticket: &str, now: i64) -> Option<String> {
        let (plain, sig) = ticket.rsplit_once("::")?;
        if sig.is_empty() || sig.contains(|c: char| c == ':' || c.is_whitespace()) {
            return None;
        }
        let expected = {
            use base64::Engine;
            base64::engine::general_purpose::STANDARD.encode(Self::sign(&self.ticket_key, plain))
        };
        if expected != sig {
            return None;
        }
        let rest = plain.strip_prefix("PVE:")?;
        let (user, stamp) = rest.rsplit_once(':')?;
        if !Self::age_ok(stamp, now) || user.is_empty() {
            return None;
        }
        Some(percent_decode_str(user).decode_utf8_lossy().into_owned())
    }

    fn verify_csrf(&self, user: &str, token: &str, now: i64) -> bool {
        let Some((stamp, sig)) = token.split_once(':') else {
            return false;
        };
        Self::age_ok(stamp, now)
            && !sig.is_empty()
            && token == self.csrf_token(user, i64::from_str_radix(stamp, 16).unwrap_or(i64::MIN))
    }

    /// The users, tokens, roles and ACL that API tokens are checked against.
    pub(crate) fn access(&self) -> &AccessControl {
        &self.access
    }

    /// Authenticate a request to `rel_path` (below `/api2/json`) as `auth_handler` does.
    /// `Err` is a 401 whose message is the reason phrase (PVE sends no body).
    pub(crate) fn authenticate(
        &self,
        method: HttpMethod,
        rel_path: &str,
        creds: Credentials<'_>,
        now: i64,
    ) -> Result<Principal, ApiError> {
        let ticket = creds
            .cookie
            .and_then(|c| extract_auth_value(c, "PVEAuthCookie"))
            .or_else(|| {
                creds
                    .authorization
                    .and_then(|a| extract_auth_value(a, "PVEAuthCookie"))
            });
        let api_token = if ticket.is_none() {
            creds
                .authorization
                .and_then(|a| extract_auth_value(a, "PVEAPIToken"))
        } else {
            None
        };
        let open = (rel_path == "/access/domains" && method == HttpMethod::Get)
            || (rel_path == "/access/ticket"
                && matches!(method, HttpMethod::Get | HttpMethod::Post));
        if open {
            return Ok(Principal::Anonymous {
                token: api_token.is_some(),
            });
        }
        if let Some(value) = api_token {
            // An expired or unknown token fails exactly like a wrong secret.
            return self
                .access
                .verify_token(&value, now)
                .map(Principal::User)
                .ok_or_else(|| unauthorized("Authentication failed!"));
        }
        let Some(ticket) = ticket else {
            return Err(unauthorized("No ticket"));
        };
        // `verify_ticket` raises "permission denied - invalid PVE ticket", but `auth_handler`
        // only logs that and dies with its own text, as for a bad token.
        let user = self
            .verify_ticket(&ticket, now)
            .ok_or_else(|| unauthorized("Authentication failed!"))?;
        if method != HttpMethod::Get && !creds.csrf.is_some_and(|t| self.verify_csrf(&user, t, now))
        {
            return Err(unauthorized("Permission denied - invalid csrf token"));
        }
        Ok(Principal::User(user_caller(&user)))
    }

    /// `POST /access/ticket`: log in with the password, or renew with a valid ticket.
    pub(crate) fn login(&self, params: &Params, now: i64) -> Result<Value, ApiError> {
        let mut username = params.get("username").unwrap_or_default().to_string();
        if let Some(realm) = params.get("realm").filter(|r| !r.is_empty())
            && !username.contains('@')
        {
            username = format!("{username}@{realm}");
        }
        let password = params.get("password").unwrap_or_default();
        let by_ticket = self
            .verify_ticket(password, now)
            .is_some_and(|owner| owner == username || owner == "root@pam");
        let by_password = username == "root@pam" && password == self.root_password;
        if !(by_ticket || by_password) {
            return Err(unauthorized("authentication failure"));
        }
        if params.has("path") {
            // Verify mode: only the user name comes back.
            return Ok(json!({ "username": username }));
        }
        let mut data = Map::new();
        data.insert("username".into(), json!(username));
        data.insert("ticket".into(), json!(self.ticket(&username, now)));
        data.insert(
            "CSRFPreventionToken".into(),
            json!(self.csrf_token(&username, now)),
        );
        data.insert("cap".into(), root_capabilities());
        if let Some(name) = &self.cluster_name {
            data.insert("clustername".into(), json!(name));
        }
        Ok(Value::Object(data))
    }
}

/// The caller of a ticket: `root@pam` is the only user with a password in the simulator.
fn user_caller(user: &str) -> Caller {
    if user == "root@pam" {
        Caller::root()
    } else {
        Caller {
            userid: user.to_string(),
            tokenid: None,
            read_only: false,
        }
    }
}

/// The `cap` object of a root login: every privilege, per ACL subtree.
fn root_capabilities() -> Value {
    let set = |privs: &[&str]| -> Value {
        Value::Object(privs.iter().map(|p| ((*p).to_string(), json!(1))).collect())
    };
    json!({
        "vms": set(&["VM.Allocate", "VM.Audit", "VM.Backup", "VM.Clone", "VM.Config.CDROM",
            "VM.Config.CPU", "VM.Config.Cloudinit", "VM.Config.Disk", "VM.Config.HWType",
            "VM.Config.Memory", "VM.Config.Network", "VM.Config.Options", "VM.Console",
            "VM.GuestAgent.Audit", "VM.GuestAgent.Unrestricted", "VM.Migrate", "VM.PowerMgmt",
            "VM.Replicate", "VM.Snapshot", "VM.Snapshot.Rollback", "Permissions.Modify"]),
        "storage": set(&["Datastore.Allocate", "Datastore.AllocateSpace",
            "Datastore.AllocateTemplate", "Datastore.Audit", "Permissions.Modify"]),
        "nodes": set(&["Sys.Audit", "Sys.Console", "Sys.Incoming", "Sys.Modify",
            "Sys.PowerMgmt", "Sys.Syslog", "Permissions.Modify"]),
        "access": set(&["Group.Allocate", "User.Modify", "Permissions.Modify"]),
        "dc": set(&["Sys.Audit", "Sys.Modify", "SDN.Allocate", "SDN.Audit", "SDN.Use"]),
        "sdn": set(&["SDN.Allocate", "SDN.Audit", "SDN.Use", "Permissions.Modify"]),
        "mapping": set(&["Mapping.Audit", "Mapping.Modify", "Mapping.Use", "Permissions.Modify"]),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::TokenConfig;

    const NOW: i64 = 1_750_000_000;

    fn auth() -> Auth {
        let mut cfg = SimConfig::default();
        cfg.tokens.push(TokenConfig {
            userid: "audit@pve".into(),
            tokenid: "ro".into(),
            secret: "5ec-ret".into(),
            read_only: true,
            withheld: vec![],
        });
        Auth::new(&cfg)
    }

    fn creds<'a>(
        cookie: Option<&'a str>,
        authz: Option<&'a str>,
        csrf: Option<&'a str>,
    ) -> Credentials<'a> {
        Credentials {
            cookie,
            authorization: authz,
            csrf,
        }
    }

    #[test]
    fn auth_values_are_extracted_like_pve() {
        assert_eq!(
            extract_auth_value(
                "a=b; PVEAuthCookie=PVE%3Aroot%40pam%3A1::x",
                "PVEAuthCookie"
            )
            .as_deref(),
            Some("PVE:root@pam:1::x")
        );
        assert_eq!(
            extract_auth_value("PVEAPIToken=root@pam!fleet=abc", "PVEAPIToken").as_deref(),
            Some("root@pam!fleet=abc")
        );
        assert_eq!(
            extract_auth_value("PVEAPIToken root@pam!fleet=abc", "PVEAPIToken").as_deref(),
            Some("root@pam!fleet=abc")
        );
        assert_eq!(extract_auth_value("XPVEAPIToken=a", "PVEAPIToken"), None);
    }

    #[test]
    fn tokens_split_at_the_last_equals_sign() {
        let a = auth();
        let ok = a.authenticate(
            HttpMethod::Post,
            "/nodes",
            creds(None, Some("PVEAPIToken=audit@pve!ro=5ec-ret"), None),
            NOW,
        );
        let Ok(Principal::User(caller)) = ok else {
            panic!("{ok:?}")
        };
        assert_eq!(caller.upid_user(), "audit@pve!ro");
        assert!(caller.read_only);
        for bad in [
            "PVEAPIToken=audit@pve!ro=wrong",
            "PVEAPIToken=audit@pve!ro",
            "PVEAPIToken=audit@pve!ro=5ec=5ec-ret",
            "PVEAPIToken=nobody@pve!x=s",
        ] {
            let err = a
                .authenticate(HttpMethod::Get, "/nodes", creds(None, Some(bad), None), NOW)
                .unwrap_err();
            assert_eq!(
                (err.status, err.message.as_str()),
                (401, "Authentication failed!"),
                "{bad}"
            );
        }
    }

    #[test]
    fn tickets_need_csrf_on_writes_and_expire() {
        let a = auth();
        let ticket = a.ticket("root@pam", NOW);
        assert!(ticket.starts_with("PVE:root@pam:"));
        let cookie = format!("PVEAuthCookie={ticket}");
        let get = a.authenticate(
            HttpMethod::Get,
            "/nodes",
            creds(Some(&cookie), None, None),
            NOW + 10,
        );
        assert_eq!(get.unwrap(), Principal::User(Caller::root()));
        let post = a.authenticate(
            HttpMethod::Post,
            "/nodes/pve1/qemu",
            creds(Some(&cookie), None, None),
            NOW,
        );
        assert_eq!(
            post.unwrap_err().message,
            "Permission denied - invalid csrf token"
        );
        let csrf = a.csrf_token("root@pam", NOW);
        let post = a.authenticate(
            HttpMethod::Post,
            "/nodes/pve1/qemu",
            creds(Some(&cookie), None, Some(&csrf)),
            NOW,
        );
        assert!(post.is_ok());
        let other_user_csrf = a.csrf_token("x@pve", NOW);
        assert!(
            a.authenticate(
                HttpMethod::Put,
                "/x",
                creds(Some(&cookie), None, Some(&other_user_csrf)),
                NOW
            )
            .is_err()
        );
        let expired = a.authenticate(
            HttpMethod::Get,
            "/nodes",
            creds(Some(&cookie), None, None),
            NOW + TICKET_LIFETIME,
        );
        let expired = expired.unwrap_err();
        assert_eq!(
            (expired.status, expired.message.as_str()),
            (401, "Authentication failed!")
        );
        let forged = cookie.replace("root@pam", "admin@pve");
        let forged = a
            .authenticate(
                HttpMethod::Get,
                "/nodes",
                creds(Some(&forged), None, None),
                NOW,
            )
            .unwrap_err();
        assert_eq!(
            (forged.status, forged.message.as_str()),
            (401, "Authentication failed!")
        );
        // The ticket may also come in the Authorization header.
        let authz = format!("PVEAuthCookie={ticket}");
        assert!(
            a.authenticate(
                HttpMethod::Get,
                "/nodes",
                creds(None, Some(&authz), None),
                NOW
            )
            .is_ok()
        );
        let none = a.authenticate(HttpMethod::Get, "/nodes", creds(None, None, None), NOW);
        assert_eq!(none.unwrap_err().message, "No ticket");
    }

    #[test]
    fn the_login_path_needs_no_credentials() {
        let a = auth();
        let p = a.authenticate(
            HttpMethod::Post,
            "/access/ticket",
            creds(None, None, None),
            NOW,
        );
        assert_eq!(p.unwrap(), Principal::Anonymous { token: false });
        let p = a.authenticate(
            HttpMethod::Post,
            "/access/ticket",
            creds(None, Some("PVEAPIToken=x!y=z"), None),
            NOW,
        );
        assert_eq!(p.unwrap(), Principal::Anonymous { token: true });
    }

    #[test]
    fn login_and_renewal() {
        let a = auth();
        let params = |u: &str, p: &str| {
            let mut m = Params::default();
            m.set("username", u);
            m.set("password", p);
            m
        };
        let data = a.login(&params("root@pam", "simulator"), NOW).unwrap();
        assert_eq!(data["username"], "root@pam");
        assert_eq!(data["clustername"], "simcluster");
        let ticket = data["ticket"].as_str().unwrap().to_string();
        assert_eq!(a.verify_ticket(&ticket, NOW).as_deref(), Some("root@pam"));
        let csrf = data["CSRFPreventionToken"].as_str().unwrap();
        assert!(a.verify_csrf("root@pam", csrf, NOW));
        let renewed = a.login(&params("root@pam", &ticket), NOW + 100).unwrap();
        assert_ne!(renewed["ticket"], data["ticket"]);
        let mut by_realm = params("root", "simulator");
        by_realm.set("realm", "pam");
        assert!(a.login(&by_realm, NOW).is_ok());
        let err = a.login(&params("root@pam", "wrong"), NOW).unwrap_err();
        assert_eq!(
            (err.status, err.message.as_str()),
            (401, "authentication failure")
        );
        assert!(
            a.login(&params("root@pam", &ticket), NOW + TICKET_LIFETIME + 1)
                .is_err()
        );
    }
}

//! Ticket authentication: log in with `POST /access/ticket`, send the ticket as the
//! `PVEAuthCookie` cookie and the CSRF token on every write, renew the ticket before its 2 h
//! lifetime ends (posting the old ticket as the password), and log in again when PVE refuses it.

use std::fmt;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use http::HeaderMap;
use http::header::{COOKIE, HeaderName, HeaderValue};
use serde_json::Value;

use super::credentials::{Password, validate_userid};
use super::transport::Transport;
use crate::error::PveError;
use crate::request::{ApiRequest, Method};

/// PVE's `$ticket_lifetime`.
pub(crate) const TICKET_LIFETIME: Duration = Duration::from_secs(2 * 3600);
/// Renew this long after issue, well before the lifetime ends.
pub(crate) const RENEW_AFTER: Duration = Duration::from_secs(105 * 60);

const CSRF_HEADER: HeaderName = HeaderName::from_static("csrfpreventiontoken");

/// Cookie value encoding: pveproxy URI-unescapes the cookie, so everything but the ticket's
/// plain characters is escaped (a `%3A` in an escaped user name survives as itself).
const COOKIE_SET: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b':')
    .remove(b'@')
    .remove(b'-')
    .remove(b'_')
    .remove(b'.');

/// A ticket and its CSRF token.
#[derive(Clone)]
pub(crate) struct Ticket {
    value: String,
    csrf: String,
    /// Issue time from the ticket itself (`None` when unreadable or when the node's clock is
    /// too far from ours to be useful).
    issued: Option<u64>,
    /// When we received it, on our monotonic clock.
    obtained: Instant,
}

impl fmt::Debug for Ticket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ticket")
            .field("value", &"<redacted>")
            .field("issued", &self.issued)
            .field("obtained", &self.obtained)
            .finish()
    }
}

impl Ticket {
    /// Read the answer of `POST /access/ticket`.
    fn from_login_data(data: &Value) -> Result<Self, PveError> {
        let bad = |reason: &str| PveError::Decode {
            what: "POST /access/ticket".into(),
            reason: reason.to_string(),
        };
        if data
            .get("NeedTFA")
            .is_some_and(|v| v.as_u64() == Some(1) || v == &Value::Bool(true))
        {
            return Err(PveError::Config(
                "this user needs two-factor authentication, which the client cannot do; \
                 use an API token instead"
                    .into(),
            ));
        }
        let value = data
            .get("ticket")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("no ticket"))?;
        let csrf = data
            .get("CSRFPreventionToken")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("no CSRFPreventionToken"))?;
        Ok(Self {
            value: value.to_string(),
            csrf: csrf.to_string(),
            issued: ticket_timestamp(value),
            obtained: Instant::now(),
        })
    }

    /// The cookie, and on writes the CSRF token (PVE checks it on every non-GET call).
    pub(crate) fn headers(&self, method: Method) -> Result<HeaderMap, PveError> {
        let unusable = |what: &str| PveError::Decode {
            what: "POST /access/ticket".into(),
            reason: format!("the {what} cannot be sent in an HTTP header"),
        };
        let encoded = percent_encoding::utf8_percent_encode(&self.value, COOKIE_SET);
        let mut cookie = HeaderValue::from_str(&format!("PVEAuthCookie={encoded}"))
            .map_err(|_| unusable("ticket"))?;
        cookie.set_sensitive(true);
        let mut headers = HeaderMap::new();
        headers.insert(COOKIE, cookie);
        if method != Method::Get {
            let mut csrf = HeaderValue::from_str(&self.csrf).map_err(|_| unusable("CSRF token"))?;
            csrf.set_sensitive(true);
            headers.insert(CSRF_HEADER, csrf);
        }
        Ok(headers)
    }

    fn is_older_than(&self, limit: Duration) -> bool {
        is_older_than(self.issued, unix_now(), self.obtained.elapsed(), limit)
    }
}

/// The issue time in a ticket `PVE:<user>:<8 HEX>::<signature>`.
pub(crate) fn ticket_timestamp(ticket: &str) -> Option<u64> {
    let mut parts = ticket.split(':');
    let (_prefix, _user, time, empty) =
        (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    parts.next()?;
    if time.len() != 8 || !empty.is_empty() || !time.chars().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(time, 16).ok()
}

/// Whether a ticket is older than `limit`: by the time it names (against our clock) or by how
/// long we have held it, whichever says older.
pub(crate) fn is_older_than(
    issued: Option<u64>,
    now_unix: u64,
    held: Duration,
    limit: Duration,
) -> bool {
    held >= limit || issued.is_some_and(|t| now_unix.saturating_sub(t) >= limit.as_secs())
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

/// Login state shared by all calls of one backend. The lock serializes logins, so concurrent
/// calls do not each log in.
#[derive(Debug)]
pub(crate) struct TicketSession {
    username: String,
    password: Password,
    current: tokio::sync::Mutex<Option<Ticket>>,
}

impl TicketSession {
    /// Validate the user name and read the password file (it must be private).
    pub(crate) fn new(username: &str, password_file: &Path) -> Result<Self, PveError> {
        validate_userid(username)
            .map_err(|e| PveError::Config(format!("ticket login user: {e} (e.g. root@pam)")))?;
        Ok(Self {
            username: username.to_string(),
            password: Password::from_file(password_file)?,
            current: tokio::sync::Mutex::new(None),
        })
    }

    /// `USER@REALM`.
    pub(crate) fn username(&self) -> &str {
        &self.username
    }

    /// A ticket fit for use now: log in when there is none, renew one that is getting old.
    pub(crate) async fn ticket(&self, transport: &Transport) -> Result<Ticket, PveError> {
        let mut current = self.current.lock().await;
        if let Some(held) = current.as_ref() {
            if !held.is_older_than(RENEW_AFTER) {
                return Ok(held.clone());
            }
            let old = held.clone();
            match self.login(transport, &old.value).await {
                Ok(mut fresh) => {
                    if fresh.is_older_than(RENEW_AFTER) {
                        tracing::warn!(
                            endpoint = transport.endpoint(),
                            "a just renewed PVE ticket looks old: the node's clock differs from \
                             ours; renewing by local time from now on"
                        );
                        fresh.issued = None;
                    }
                    *current = Some(fresh.clone());
                    return Ok(fresh);
                }
                Err(PveError::Auth { reason, .. }) => {
                    tracing::info!(endpoint = transport.endpoint(), %reason, "PVE ticket renewal refused; logging in again");
                }
                Err(err) if err.is_transient() && !old.is_older_than(TICKET_LIFETIME) => {
                    tracing::warn!(endpoint = transport.endpoint(), error = %err, "PVE ticket renewal failed; using the current ticket until the next call");
                    return Ok(old);
                }
                Err(err) => return Err(err),
            }
        }
        *current = None;
        let fresh = self.login(transport, self.password.expose()).await?;
        *current = Some(fresh.clone());
        Ok(fresh)
    }

    /// Log in again after PVE refused `rejected` (401), unless another call already did.
    pub(crate) async fn relogin(
        &self,
        transport: &Transport,
        rejected: &Ticket,
    ) -> Result<Ticket, PveError> {
        let mut current = self.current.lock().await;
        if let Some(held) = current.as_ref()
            && held.value != rejected.value
        {
            return Ok(held.clone());
        }
        *current = None;
        let fresh = self.login(transport, self.password.expose()).await?;
        *current = Some(fresh.clone());
        Ok(fresh)
    }

    /// `POST /access/ticket` with `secret` (the password, or the old ticket to renew it).
    async fn login(&self, transport: &Transport, secret: &str) -> Result<Ticket, PveError> {
        let req = ApiRequest::new(Method::Post, "/access/ticket")
            .param("username", self.username.clone())
            .param("password", secret);
        let reply = transport.send(&req, HeaderMap::new()).await?;
        Ticket::from_login_data(&reply.data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ticket(value: &str) -> Ticket {
        Ticket {
            value: value.into(),
            csrf: "4EEC61E2:c2lnbmF0dXJl".into(),
            issued: ticket_timestamp(value),
            obtained: Instant::now(),
        }
    }

    #[test]
    fn ticket_timestamp_is_the_hex_field() {
        assert_eq!(
            ticket_timestamp("PVE:root@pam:4EEC61E2::c2ln+/="),
            Some(0x4EEC_61E2)
        );
        assert_eq!(
            ticket_timestamp("PVE:a%3Ab@pve:4eec61e2::sig"),
            Some(0x4EEC_61E2)
        );
        assert_eq!(ticket_timestamp("PVE:root@pam:4EEC61E::sig"), None);
        assert_eq!(ticket_timestamp("PVE:root@pam:4EEC61EG::sig"), None);
        assert_eq!(ticket_timestamp("PVE:root@pam:4EEC61E2:x:sig"), None);
        assert_eq!(ticket_timestamp("PVE:root@pam:4EEC61E2"), None);
    }

    #[test]
    fn renewal_is_due_by_issue_time_or_holding_time() {
        let now = 1_700_000_000;
        let fresh = Duration::from_secs(1);
        assert!(!is_older_than(Some(now - 60), now, fresh, RENEW_AFTER));
        assert!(is_older_than(Some(now - 105 * 60), now, fresh, RENEW_AFTER));
        assert!(is_older_than(None, now, RENEW_AFTER, RENEW_AFTER));
        assert!(!is_older_than(None, now, fresh, RENEW_AFTER));
        // A node clock ahead of ours does not make a ticket look young for ever.
        assert!(is_older_than(
            Some(now + 600),
            now,
            RENEW_AFTER,
            RENEW_AFTER
        ));
        assert!(!is_older_than(Some(now + 600), now, fresh, RENEW_AFTER));
    }

    #[test]
    fn csrf_token_is_sent_only_on_writes() {
        let t = ticket("PVE:root@pam:4EEC61E2::c2ln+/=");
        let get = t.headers(Method::Get).unwrap();
        assert_eq!(
            get.get(COOKIE).unwrap(),
            "PVEAuthCookie=PVE:root@pam:4EEC61E2::c2ln%2B%2F%3D"
        );
        assert!(get.get(CSRF_HEADER).is_none());
        for m in [Method::Post, Method::Put, Method::Delete] {
            let h = t.headers(m).unwrap();
            assert_eq!(h.get(CSRF_HEADER).unwrap(), "4EEC61E2:c2lnbmF0dXJl");
            assert!(h.get(COOKIE).unwrap().is_sensitive());
        }
    }

    #[test]
    fn login_answer_with_tfa_is_refused() {
        let data = serde_json::json!({"ticket": "PVE:x@pam:4EEC61E2::s", "CSRFPreventionToken": "c", "NeedTFA": 1});
        assert!(matches!(
            Ticket::from_login_data(&data),
            Err(PveError::Config(_))
        ));
        let data = serde_json::json!({"CSRFPreventionToken": "c"});
        assert!(matches!(
            Ticket::from_login_data(&data),
            Err(PveError::Decode { .. })
        ));
    }

    #[test]
    fn ticket_debug_output_is_redacted() {
        let shown = format!("{:?}", ticket("PVE:root@pam:4EEC61E2::secret-signature"));
        assert!(!shown.contains("secret-signature"), "{shown}");
    }
}

//! Dashboard sessions: opened by redeeming a one-time login, kept in this member's memory only
//! (a session belongs to the member the browser talks to; a restart logs everyone out), each
//! with an absolute expiry and its own CSRF token. A session is worth nothing once its admin is
//! revoked: every request checks the issuer's standing in the replicated state.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use base64::Engine;
use rand::Rng;

/// Sessions kept at most; opening one more drops the oldest.
const MAX_SESSIONS: usize = 1024;

/// One open session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Session {
    /// The admin that minted the login.
    pub(crate) issuer: u64,
    /// The session can look but not act.
    pub(crate) read_only: bool,
    /// The token every form that acts must carry.
    pub(crate) csrf: String,
    /// When it was opened.
    pub(crate) opened: Instant,
    /// When it ends.
    pub(crate) expires: Instant,
}

/// The sessions of one member's dashboard.
#[derive(Debug)]
pub(crate) struct Sessions {
    lifetime: Duration,
    open: Mutex<HashMap<String, Session>>,
}

/// 32 random bytes, URL-safe base64 (43 characters).
pub(crate) fn random_token() -> String {
    let bytes: [u8; 32] = rand::rng().random();
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

impl Sessions {
    pub(crate) fn new(lifetime: Duration) -> Sessions {
        Sessions {
            lifetime,
            open: Mutex::new(HashMap::new()),
        }
    }

    /// How long a session lasts.
    pub(crate) fn lifetime(&self) -> Duration {
        self.lifetime
    }

    /// Opens a session at `now`; returns its id (the cookie's value).
    pub(crate) fn open(&self, issuer: u64, read_only: bool, now: Instant) -> String {
        let id = random_token();
        let session = Session {
            issuer,
            read_only,
            csrf: random_token(),
            opened: now,
            expires: now + self.lifetime,
        };
        let mut open = self.lock();
        open.retain(|_, s| s.expires > now);
        while open.len() >= MAX_SESSIONS {
            let oldest = open
                .iter()
                .min_by_key(|(_, s)| s.opened)
                .map(|(id, _)| id.clone());
            match oldest {
                Some(old) => open.remove(&old),
                None => break,
            };
        }
        open.insert(id.clone(), session);
        id
    }

    /// The session `id` names, if it is open at `now` (an expired one is dropped).
    pub(crate) fn get(&self, id: &str, now: Instant) -> Option<Session> {
        let mut open = self.lock();
        let session = open.get(id)?.clone();
        if session.expires <= now {
            open.remove(id);
            return None;
        }
        Some(session)
    }

    /// Ends session `id`.
    pub(crate) fn close(&self, id: &str) {
        self.lock().remove(id);
    }

    /// Open sessions.
    #[cfg(test)]
    pub(crate) fn count(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Session>> {
        // A panic while holding the lock leaves a map that is still consistent.
        self.open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Whether `presented` equals `expected`, in time independent of where they differ.
pub(crate) fn same_secret(expected: &str, presented: &str) -> bool {
    expected.len() == presented.len()
        && expected
            .bytes()
            .zip(presented.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_ends_at_its_expiry_and_when_closed() {
        let sessions = Sessions::new(Duration::from_secs(60));
        let t0 = Instant::now();
        let id = sessions.open(7, true, t0);
        let s = sessions
            .get(&id, t0 + Duration::from_secs(59))
            .expect("open");
        assert_eq!((s.issuer, s.read_only), (7, true));
        assert!(sessions.get(&id, t0 + Duration::from_secs(60)).is_none());
        assert!(sessions.get(&id, t0).is_none(), "dropped once seen expired");
        let id = sessions.open(7, false, t0);
        sessions.close(&id);
        assert!(sessions.get(&id, t0).is_none());
        assert!(sessions.get("guess", t0).is_none());
    }

    #[test]
    fn sessions_have_distinct_ids_and_csrf_tokens() {
        let sessions = Sessions::new(Duration::from_secs(60));
        let t0 = Instant::now();
        let a = sessions.open(1, false, t0);
        let b = sessions.open(1, false, t0);
        assert_ne!(a, b);
        let (sa, sb) = (
            sessions.get(&a, t0).expect("a"),
            sessions.get(&b, t0).expect("b"),
        );
        assert_ne!(sa.csrf, sb.csrf);
        assert!(same_secret(&sa.csrf, &sa.csrf.clone()));
        assert!(!same_secret(&sa.csrf, &sb.csrf));
        assert!(!same_secret(&sa.csrf, ""));
    }

    #[test]
    fn the_oldest_session_makes_room() {
        let sessions = Sessions::new(Duration::from_secs(60));
        let t0 = Instant::now();
        let first = sessions.open(1, false, t0);
        for i in 1..=MAX_SESSIONS {
            sessions.open(1, false, t0 + Duration::from_millis(i as u64));
        }
        assert_eq!(sessions.count(), MAX_SESSIONS);
        assert!(sessions.get(&first, t0).is_none());
    }
}

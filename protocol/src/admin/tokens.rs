//! Admin requests about join tokens and the event log.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::{Done, ReadMode};
use crate::encoding::{self, EncodingError};
use crate::fleet::{Event, EventKind, TokenView};
use crate::identity::Role;
use crate::rpc::Rpc;
use crate::version::Version;

/// [`TokenCreate::uses`] asking for no limit on joins before the token expires.
pub const UNLIMITED_USES: u32 = u32::MAX;

/// `pvefleet token create`: a join token for an agent or a coordinator.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenCreate {
    /// The role a node joining with the token receives.
    pub role: Role,
    /// Lifetime in seconds; absent = the coordinator's default, one hour (coordinators before
    /// the join-token limits gave 24 hours). A coordinator token lives at most 24 hours.
    pub ttl_secs: Option<u64>,
    /// Joins it allows; absent = the coordinator's default, one (older coordinators
    /// gave no limit); [`UNLIMITED_USES`] = no limit before expiry. A coordinator token allows
    /// exactly one.
    pub uses: Option<u32>,
}

/// The new token. The text is shown once: only its hash is stored.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenCreateReply {
    /// The token text `pvf1.<ca-sha256-hex>.<id>.<secret>` to hand to the joining node.
    pub token: String,
    /// The stored record.
    pub record: TokenView,
}

impl fmt::Debug for TokenCreateReply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // A logged reply must not let its reader join the cluster.
        f.debug_struct("TokenCreateReply")
            .field("token", &"<redacted>")
            .field("record", &self.record)
            .finish()
    }
}

impl Rpc for TokenCreate {
    const METHOD: &'static str = "admin.token_create";
    type Response = TokenCreateReply;
}

/// `pvefleet token ls`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenList {
    /// Read freshness.
    pub read: ReadMode,
}

/// Every token record (no secrets, no hashes).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenListReply {
    /// Tokens by id.
    pub tokens: Vec<TokenView>,
}

impl Rpc for TokenList {
    const METHOD: &'static str = "admin.token_list";
    type Response = TokenListReply;
}

/// `pvefleet token revoke ID`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenRevoke {
    /// The token's id.
    pub id: String,
}

impl Rpc for TokenRevoke {
    const METHOD: &'static str = "admin.token_revoke";
    type Response = Done;
}

/// `pvefleet events`: entries of the event log after a sequence number.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Events {
    /// Return events whose `seq` is greater than this (0 = from the oldest kept).
    pub since: u64,
    /// At most this many (oldest first); absent = all kept.
    pub limit: Option<u32>,
    /// Read freshness.
    pub read: ReadMode,
}

/// Events after `since`, oldest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventsReply {
    /// The events.
    pub events: Vec<Event>,
    /// The oldest sequence number still kept (0 when the log is empty); events between `since`
    /// and it were dropped from the bounded log.
    pub first_seq: u64,
    /// The newest sequence number (0 before the first event): follow with `since = last_seq`.
    pub last_seq: u64,
}

impl Rpc for Events {
    const METHOD: &'static str = "admin.events";
    type Response = EventsReply;

    /// At v1 an event about an operator identity (`EventKind::Admin`, new in v2) is told as a
    /// settings event whose subject names the admin: a v1 reader has no such kind, and dropping
    /// the event would hide a revocation from an operator still on an old CLI.
    fn encode_response_at(
        response: &EventsReply,
        version: Version,
    ) -> Result<Vec<u8>, EncodingError> {
        if version >= crate::version::ADMINS {
            return encoding::encode(response);
        }
        let mut v1 = response.clone();
        for event in &mut v1.events {
            if event.kind == EventKind::Admin {
                event.kind = EventKind::Settings;
                event.subject = format!("admin {}", event.subject);
            }
        }
        encoding::encode(&v1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::EventLevel;

    #[test]
    fn admin_events_are_told_as_settings_events_to_a_v1_reader() {
        let event = |kind, subject: &str| Event {
            seq: 1,
            at: 5,
            level: EventLevel::Info,
            kind,
            subject: subject.into(),
            message: "revoked".into(),
        };
        let reply = EventsReply {
            events: vec![event(EventKind::Admin, "3"), event(EventKind::Vm, "web")],
            first_seq: 1,
            last_seq: 2,
        };
        let v1 = Events::encode_response_at(&reply, Version(1)).unwrap();
        let read = Events::decode_response_at(Version(1), &v1).unwrap();
        assert_eq!(read.events[0].kind, EventKind::Settings);
        assert_eq!(read.events[0].subject, "admin 3");
        assert_eq!(read.events[1], reply.events[1]);
        let v2 = Events::encode_response_at(&reply, crate::version::ADMINS).unwrap();
        assert_eq!(
            Events::decode_response_at(crate::version::ADMINS, &v2).unwrap(),
            reply
        );
    }
}

//! The fleet client library: typed admin calls to a coordinator cluster ([`AdminClient`]), as
//! the `pvefleet` CLI, the lab launcher, the end-to-end tests and the benchmarks make them.
//!
//! ```text
//!  call(req) ─ round: members in order (last one that answered first, then configured/learned)
//!      │   dial coordinator-<id>.pvefleet at addr on Service::Admin (mutual TLS); the next
//!      │   member is dialed too if a handshake takes over 150 ms, and the first ready is used
//!      │     ├─ reply ───────────────────────────────▶ Ok (remember this member)
//!      │     ├─ NotLeader{leader: (id, addr)} ──────▶ new round, that member first, at once
//!      │     ├─ Unavailable / unreachable / timeout ─▶ next member; after a full round, back
//!      │     │                                         off (50 ms doubling to 1 s)
//!      │     └─ BadRequest, NotFound, Conflict, ... ─▶ Err at once (the cluster decided)
//!      └── deadline (`timeout`, default 10 s) ─────▶ Err(Unavailable) naming every failure
//! ```
//!
//! A client made from a configuration renews its admin certificate before its first call when
//! the certificate is due (see `renew`); an expired one is refused before any call.
//!
//! A request whose reply was lost (the member died mid-call) is sent again to the next member:
//! admin writes are keyed by name (`vm apply` twice is `unchanged` the second time), but
//! `AllocateIp` and `TokenCreate` may then take effect twice.

mod admin;
mod error;
mod policy;
mod renew;

pub use admin::{AdminClient, DEFAULT_TIMEOUT, MAX_CALL, WarningSink};
pub use error::{AttemptFailure, ClientError};

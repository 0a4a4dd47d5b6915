//! The fleet client library: typed admin calls to a coordinator cluster ([`AdminClient`]), as
//! the `pvefleet` CLI, the lab launcher, the end-to-end tests and the benchmarks make them.
//!
//! ```text
//!  call(req) ─ round: members in order (last one that answered first, then configured/learned)
//!      │   dial coordinator-<id>.pvefleet at addr on Service::Admin (mutual TLS) and call; the
//!      │   next member is started too when every attempt is stalled (a handshake over 150 ms,
//!      │   or a call its member did not even acknowledge within 200 ms: it is dead); the first
//!      │   answer wins and the others are cancelled (one request id: a write applies once)
//!      │     ├─ reply ───────────────────────────────▶ Ok (remember this member)
//!      │     ├─ NotLeader{leader: (id, addr)} ──────▶ new round, that member first, at once
//!      │     ├─ Unavailable / unreachable / timeout ─▶ next member at once; after a full round,
//!      │     │                                         back off (20 ms doubling to 250 ms)
//!      │     └─ BadRequest, NotFound, Conflict, ... ─▶ Err at once (the cluster decided)
//!      └── deadline (`timeout`, default 10 s) ─────▶ Err(Unavailable) naming every failure
//! ```
//!
//! A client made from a configuration renews its admin certificate before its first call when
//! the certificate is due (see `renew`); an expired one is refused before any call.
//!
//! A request whose reply was lost (the member died mid-call) is sent again to the next member
//! with the same request id, so the cluster applies it once (`transport::once`).

mod admin;
mod error;
mod policy;
mod race;
mod renew;
mod schedule;

pub use admin::{AdminClient, DEFAULT_TIMEOUT, MAX_CALL, WarningSink};
pub use error::{AttemptFailure, ClientError};

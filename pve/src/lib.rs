//! A typed client for the Proxmox VE API, trusted on production hosts.
//!
//! ```text
//!  Client (typed calls, retries, task waiting)
//!     │ ApiRequest { method, path, params }
//!     ▼
//!  dyn Backend ── https: reqwest + rustls (CA file or pinned SHA-256), API token or ticket+CSRF
//!              ── pvesh: `pvesh <verb> <path> --output-format json` as root on the host
//!              ── (in-process adapters, e.g. over the simulator)
//! ```
//!
//! - Requests are built from typed calls ([`calls`]) and property-string builders ([`props`])
//!   that validate values before anything is sent.
//! - Responses decode leniently ([`de`]): numbers as strings, booleans as 0/1, unknown fields.
//! - Errors are [`PveError`]: status, reason phrase, `message`, per-parameter `errors`.
//! - Tasks: [`Upid`] parse/format, [`Client::wait_task`] with back-off on the UPID's node.
//! - Retries: idempotent reads and connection failures, with back-off; a retried create that
//!   answers "already exists" for our own VMID is recognized as ours, never duplicated.

pub mod backend;
pub mod calls;
pub mod client;
pub mod create_retry;
pub mod de;
pub mod error;
pub mod fields;
pub mod guest_ips;
pub mod https;
pub mod poll;
pub mod props;
pub mod pvesh;
pub mod reply;
pub mod request;
pub mod retry;
pub mod tasks;
pub mod types;
pub mod upid;

pub use backend::Backend;
pub use client::Client;
pub use error::PveError;
pub use request::{ApiReply, ApiRequest, Method};
pub use upid::Upid;

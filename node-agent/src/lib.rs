//! `pvefleet-agent`, the node agent that runs on every PVE host.
//!
//! It will hold the host's inventory, its session to the coordinators, leases, VIPs and
//! fencing (issue 4). Built so far: the executor's on-disk journal ([`Journal`], and its typed
//! layer [`TypedJournal`]) that makes every coordinator command run at most once, keeps its
//! result and answers a repeated command id with it (ARCHITECTURE.md §3 rule 4).

pub mod backend;
mod error;
mod executor;
mod journal;
pub mod ops;
mod record;
mod typed;

pub use error::JournalError;
pub use executor::Executor;
pub use journal::{Begin, Journal, MAX_COMMAND_ID_LEN};
pub use typed::TypedJournal;

//! The PVE API backends an agent can use, chosen in its config: the local HTTPS API with an API
//! token, or `pvesh` as root. [`choice::connect`] builds the one the config names. A lab runs
//! a `pve-sim serve` process beside the agent and points the `https` backend at it, as
//! pveproxy sits beside the agent on a host.

pub mod choice;

pub use choice::{BackendError, PveBackend, connect};

//! The PVE API backends an agent can use, chosen in its config: the local HTTPS API with an API
//! token, `pvesh` as root, or `sim`, a simulated PVE node in process (simulation mode).
//! [`choice::connect`] builds the one the config names.

pub mod choice;
pub mod sim;

pub use choice::{BackendError, PveBackend, connect};
pub use sim::SimBackend;

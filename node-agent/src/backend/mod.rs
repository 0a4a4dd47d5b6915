//! The PVE API backends an agent can use, chosen in its config: the local HTTPS API with an API
//! token, `pvesh` as root, or `sim`, a simulated PVE node in process (simulation mode).

pub mod sim;

pub use sim::SimBackend;

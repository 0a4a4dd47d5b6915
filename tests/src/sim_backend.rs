//! `SimBackend`: the real `pve` client over the simulator in process, without HTTP
//! (`pve_sim::SimBackend`), so the tests drive the simulator through the same code path an
//! HTTPS backend's replies take, only without the socket.

pub use pve_sim::SimBackend;

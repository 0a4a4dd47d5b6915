//! `SimBackend`: the real `pve` client over the simulator in process, without HTTP. It is the
//! agent's own simulation-mode backend (`node_agent::backend::SimBackend`), so the tests drive
//! the client exactly as an agent in simulation mode does.

pub use node_agent::backend::SimBackend;

//! Making a member's data directory: `init` (a new cluster) and `join` (a new node of an
//! existing cluster). `run` then serves what they wrote.

pub mod init;
pub mod join;

pub use init::{FOUNDER_ID, InitOptions, InitReport, init_cluster};
pub use join::{JoinOptions, JoinReport, join_cluster};

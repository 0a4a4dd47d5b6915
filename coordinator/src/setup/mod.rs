//! Making a member's data directory: `init` (a new cluster) and `join` (a new node of an
//! existing cluster). `run` then serves what they wrote. `admin-cert` makes a new operator
//! certificate with the CA key a coordinator holds. [`next_step`] says how to start the member.

pub mod admin_cert;
pub mod init;
pub mod join;
pub mod next_step;

pub use admin_cert::{AdminCertOptions, AdminCertReport, DEFAULT_ADMIN_ID, issue_admin_cert};
pub use init::{FOUNDER_ID, InitOptions, InitReport, init_cluster};
pub use join::{JoinOptions, JoinReport, join_cluster};
pub use next_step::start_command;

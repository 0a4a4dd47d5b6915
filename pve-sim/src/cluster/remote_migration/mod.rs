//! The sending end of a remote migration (the API call is `ops/remote_migrate.rs`): its plan
//! and progress, the client of the target cluster, the volumes and maps, and the `qmigrate` task.

pub(super) mod client;
pub(super) mod id_map;
pub(super) mod job;
mod phases;
pub(super) mod plan;
mod volumes;
pub(super) mod worker;

//! The API calls that act on a VM (create, config, power, clone, resize, template, snapshots,
//! migration, remote migration, destroy): each call's checks and the job of the task it forks.

pub(super) mod clone;
pub(super) mod config;
pub(super) mod create;
pub(super) mod destroy;
pub(super) mod migrate;
pub(super) mod power;
pub(super) mod remote_migrate;
pub(super) mod resize;
pub(super) mod snapshot;
mod start_job;
pub(super) mod template;

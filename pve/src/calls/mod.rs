//! Typed calls, one file per API area. Each call has a pure request builder
//! `<name>_request(...) -> Result<ApiRequest, PveError>` that validates every value before
//! anything is sent (the error names the field, the value and the rule), and an async method
//! on [`Client`](crate::Client) that builds, sends and decodes: reads return typed
//! [`crate::types`], task-starting calls return the [`Upid`](crate::Upid), create and clone go
//! through [`Client::start_create`](crate::Client::start_create).
//!
//! Builders send only parameters the official schema declares for their method, booleans as
//! `1`/`0`; [`catalog()`] lists one example of each for the schema-conformance test. Task status,
//! log and stop are in [`crate::tasks`].

pub mod access;
pub mod access_control;
pub mod agent;
pub mod catalog;
pub mod certificates;
pub mod cluster;
pub mod config_changes;
pub mod config_keys;
pub mod ha;
pub mod network;
pub mod nodes;
pub(crate) mod paths;
pub mod permissions;
pub mod remote_migrate;
pub mod snapshots;
pub mod storage;
pub mod task_list;
pub mod vm_clone;
pub mod vm_config;
pub mod vm_lifecycle;
pub mod vm_migrate;
pub mod vm_power;

pub use access::{TicketOptions, access_ticket_request, access_ticket_request_with};
pub use access_control::{
    AclSubject, TokenCreated, create_role_request, create_token_request, create_user_request,
    delete_token_request, put_acl_request, update_role_request,
};
pub use agent::{agent_network_interfaces_request, agent_ping_request};
pub use catalog::{CatalogEntry, ResponseShape, catalog, try_catalog};
pub use certificates::{CertificateInfo, certificates_info_request};
pub use cluster::{
    ResourceType, cluster_resources_request, cluster_status_request, next_id_request,
    version_request,
};
pub use config_changes::{ConfigChanges, MEMORY_MIN_MIB};
pub use config_keys::{
    Bios, CONFIG_KEYS, HotplugFeature, INDEXED_CONFIG_KEYS, OsType, ScsiHw, check_config_key,
    is_config_key,
};
pub use ha::{HaResourceType, ha_resources_request};
pub use network::{NetworkType, network_request};
pub use nodes::{node_status_request, nodes_request, vm_list_request};
pub use permissions::permissions_request;
pub use remote_migrate::{RemoteMigrateOptions, remote_migrate_request};
pub use snapshots::{
    SnapshotOptions, create_snapshot_request, delete_snapshot_request, rollback_snapshot_request,
    snapshot_config_request, snapshots_request,
};
pub use storage::{
    StorageContent, StorageFilter, storage_content_request, storage_list_request,
    storage_status_request,
};
pub use task_list::{
    TaskListFilter, TaskSource, TaskStatusFilter, cluster_tasks_request, node_tasks_request,
};
pub use vm_clone::{
    CloneFormat, CloneOptions, ResizeOptions, clone_vm_request, resize_disk_request,
    template_request,
};
pub use vm_config::{
    ConfigView, update_vm_async_request, update_vm_request, vm_config_request, vm_pending_request,
};
pub use vm_lifecycle::{CreateOptions, DestroyOptions, create_vm_request, destroy_vm_request};
pub use vm_migrate::{
    MigrateOptions, MigrationType, migrate_precondition_request, migrate_vm_request,
};
pub use vm_power::{
    RebootOptions, ResetOptions, ResumeOptions, ShutdownOptions, StartOptions, StopOptions,
    SuspendOptions, vm_reboot_request, vm_reset_request, vm_resume_request, vm_shutdown_request,
    vm_start_request, vm_status_request, vm_stop_request, vm_suspend_request,
};

use crate::request::ApiRequest;

/// Parameters that exist only on PVE 9.x (absent from the 8.4 schema): `allow-ksm`,
/// `intel-tdx` (config keys, via [`ConfigChanges::raw`]), `ha-managed`
/// ([`CreateOptions::ha_managed`]) and `with-conntrack-state`
/// ([`MigrateOptions::with_conntrack_state`]). A PVE 8 server refuses them with a 400
/// ("property is not defined in schema"), so the caller decides from `GET /version`
/// ([`Version::supports_pve9_params`](crate::types::Version::supports_pve9_params)) whether to
/// set them; the builders do not drop them silently.
pub const PVE9_ONLY_PARAMS: &[&str] = &[
    "allow-ksm",
    "intel-tdx",
    "ha-managed",
    "with-conntrack-state",
];

/// The first PVE-9-only parameter `req` sends, if any.
pub fn pve9_only_param(req: &ApiRequest) -> Option<&'static str> {
    PVE9_ONLY_PARAMS
        .iter()
        .copied()
        .find(|p| req.get(p).is_some())
}

//! The replicated fleet model: what every coordinator member holds in its Raft state machine
//! (docs/design/architecture.md, "Data flow") and what the CLI reads back. Times are Unix milliseconds taken by the
//! proposer and carried inside commands, so applying a command never reads a clock.
//!
//! ```text
//!  operator specs ──▶ VmRecord.spec (+ generation)      members, hosts, settings
//!  allocation     ──▶ VmidRange / IpPool allocations ──▶ VmRecord.assignment
//!  agents         ──▶ VmRecord.status                    tokens, VIPs, events
//! ```
//!
//! These types are bincode-encoded through Raft: plain structs and externally tagged enums only.

mod admin;
mod alloc;
mod cluster;
mod dashboard_login;
mod event;
mod host_v1;
mod leaving;
mod migration;
mod rebalancing;
mod recovery;
mod settings_v1;
mod token;
mod view;
mod vm;
mod vm_v1;

pub use admin::{AdminRecord, validate_admin_name};
pub use alloc::{AllocationOwner, IpAllocation, IpPool, Vip, VmidAllocation, VmidRange};
pub use cluster::{
    Capacity, Host, HostFacts, HostState, Member, MemberRole, Settings, validate_host,
    validate_member_addr, validate_settings,
};
pub use dashboard_login::{
    DASHBOARD_LOGIN_DEFAULT_TTL_SECS, DASHBOARD_LOGIN_MAX_TTL_SECS, DashboardLogin,
    DashboardLoginRefusal,
};
pub use event::{Event, EventKind, EventLevel};
pub use host_v1::HostV1;
pub use leaving::Leaving;
pub use migration::{Migration, MigrationPurpose, MoveKind};
pub use rebalancing::Rebalancing;
pub use recovery::{PVE_CLUSTER_LABEL, Recovery, StartFailures, TakeOver};
pub use settings_v1::SettingsV1;
pub use token::{
    StoredToken, TokenRefusal, TokenView, validate_secret_sha256, validate_token_record,
};
pub use view::{FleetView, FleetViewV1};
pub use vm::{Assignment, Condition, ConditionKind, NicAddress, VmPhase, VmRecord, VmStatus};
pub use vm_v1::VmRecordV1;

/// A point in time: milliseconds since the Unix epoch (UTC).
pub type UnixMillis = u64;

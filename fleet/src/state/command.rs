//! What can change the fleet state: every [`Command`] is proposed through Raft, applied by
//! every member in log order, and answered with a [`CommandReply`].
//!
//! Commands are bincode-encoded in the Raft log at the cluster version (see `codec` and
//! `versions`), where bincode names enum variants by position: add new variants at the end
//! only, never reorder or remove one, and give each new variant the version that introduced
//! it in [`Command::since`] so it is refused until every member reads that version.

use std::net::IpAddr;

use protocol::admin::{ApplyOutcome, FleetApply, FleetApplyReply};
use protocol::agent::LeaveKind;
use protocol::fleet::{
    Capacity, EventKind, EventLevel, HostFacts, HostState, Member, MigrationPurpose, NicAddress,
    Settings, SettingsV1, StoredToken, TokenRefusal, UnixMillis, VmStatus,
};
use protocol::spec::{
    DesiredState, IpPoolSpec, Labels, SpecError, VipSpec, VipSpecV1, VmSpec, VmSpecV1,
    VmidRangeSpec,
};
use protocol::version::{
    ADMINS, BATCHES, DASHBOARD, HA_DEFAULTS, HA_SETTINGS, HOST_ADMIN, HOST_LIVENESS, LEAVING,
    MIGRATION, OLDEST, RECOVERY, REQUESTS, VIP_HOLDING, Version, VersionRange,
};
use protocol::{NodeId, RequestId};
use serde::{Deserialize, Serialize};

/// A change to the fleet state. Times (`now`) are the proposer's clock: applying never reads one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Command {
    /// Create or update a VM spec by name (validated; the generation grows only on a change),
    /// in the v1 layout at every version: its `ha` is v1's bool. A spec v1 cannot carry is
    /// [`Command::ApplyVm`] ([`Command::apply_vm`] picks).
    PutVm {
        /// The spec (boxed: it dwarfs every other command).
        spec: Box<VmSpecV1>,
        /// Proposal time.
        now: UnixMillis,
    },
    /// Delete a VM spec: removed at once if it holds no VMID or address, otherwise marked
    /// `deleting` until [`Command::ReleaseVm`].
    DeleteVm {
        /// The VM's name.
        name: String,
        /// Proposal time.
        now: UnixMillis,
    },
    /// The VM of a `deleting` record is gone from its host: release its VMID and addresses and
    /// drop the record.
    ReleaseVm {
        /// The VM's name.
        name: String,
        /// Proposal time.
        now: UnixMillis,
    },
    /// Place a VM on a host (or unplace it with `None`), if its current host is `expected`.
    ScheduleVm {
        /// The VM's name.
        name: String,
        /// The new host.
        host: Option<NodeId>,
        /// The host the proposer saw; the command is refused if it changed since.
        expected: Option<NodeId>,
        /// Proposal time.
        now: UnixMillis,
    },
    /// Record what the agents observed about a VM.
    SetVmStatus {
        /// The VM's name.
        name: String,
        /// The observed status.
        status: VmStatus,
        /// Proposal time.
        now: UnixMillis,
    },
    /// Give a VM its VMID (lowest free of its range); answers the same VMID if it has one.
    AllocateVmid {
        /// The VM's name.
        vm: String,
        /// VMIDs known to be taken on the hosts (by VMs outside the fleet): skipped.
        avoid: Vec<u32>,
        /// Proposal time.
        now: UnixMillis,
    },
    /// Give every NIC of a VM drawing from a pool an address, all or none; answers the VM's
    /// current addresses.
    AllocateIps {
        /// The VM's name.
        vm: String,
        /// Proposal time.
        now: UnixMillis,
    },
    /// Release a VM's addresses its spec no longer wants (after its guest was reconfigured).
    ReleaseStaleIps {
        /// The VM's name.
        vm: String,
        /// Proposal time.
        now: UnixMillis,
    },
    /// Allocate one address from a pool to an external owner.
    AllocateIp {
        /// The pool's name.
        pool: String,
        /// The holder (free text).
        owner: String,
        /// Proposal time.
        now: UnixMillis,
    },
    /// Release an externally held address.
    ReleaseIp {
        /// The pool's name.
        pool: String,
        /// The address.
        address: IpAddr,
        /// Proposal time.
        now: UnixMillis,
    },
    /// Create or update an IP pool.
    PutPool {
        /// The pool.
        spec: IpPoolSpec,
        /// Proposal time.
        now: UnixMillis,
    },
    /// Delete an unused IP pool.
    DeletePool {
        /// The pool's name.
        name: String,
        /// Proposal time.
        now: UnixMillis,
    },
    /// Create or update a VMID range.
    PutVmidRange {
        /// The range.
        spec: VmidRangeSpec,
        /// Proposal time.
        now: UnixMillis,
    },
    /// Delete an unused VMID range.
    DeleteVmidRange {
        /// The range's name.
        name: String,
        /// Proposal time.
        now: UnixMillis,
    },
    /// Create or update a VIP.
    PutVip {
        /// The VIP.
        spec: VipSpecV1,
        /// Proposal time.
        now: UnixMillis,
    },
    /// Delete a VIP.
    DeleteVip {
        /// The VIP's name.
        name: String,
        /// Proposal time.
        now: UnixMillis,
    },
    /// Hand a VIP to a host (or to nobody), if its epoch is still `expected_epoch`.
    SetVipOwner {
        /// The VIP's name.
        name: String,
        /// The new holder.
        owner: Option<NodeId>,
        /// The epoch the proposer saw.
        expected_epoch: u64,
        /// Proposal time.
        now: UnixMillis,
    },
    /// Store a new join token's record (its `created_at` is the proposal time).
    AddTokenRecord {
        /// The record.
        record: StoredToken,
    },
    /// Consume one use of a join token whose secret hashes to `secret_sha256`, and assign the
    /// joining node its id.
    UseToken {
        /// The token's id.
        id: String,
        /// SHA-256 of the presented secret, hex.
        secret_sha256: String,
        /// Proposal time.
        now: UnixMillis,
    },
    /// Revoke a join token.
    RevokeToken {
        /// The token's id.
        id: String,
        /// Proposal time.
        now: UnixMillis,
    },
    /// Register (or refresh) a PVE host.
    RegisterHost {
        /// The agent's node id.
        id: NodeId,
        /// The PVE node name.
        name: String,
        /// Host labels.
        labels: Labels,
        /// Capacity.
        capacity: Capacity,
        /// Proposal time.
        now: UnixMillis,
    },
    /// Move a host to another lifecycle state.
    SetHostState {
        /// The host's id.
        id: NodeId,
        /// The new state.
        state: HostState,
        /// Proposal time.
        now: UnixMillis,
    },
    /// Record a coordinator member (or change its address or role).
    AddMember {
        /// The member.
        member: Member,
        /// Proposal time.
        now: UnixMillis,
    },
    /// Forget a coordinator member; its id is refused from then on.
    RemoveMember {
        /// The member's id.
        id: NodeId,
        /// Proposal time.
        now: UnixMillis,
    },
    /// Replace the cluster settings with v1's, the HA defaults PVE's (the v1 layout;
    /// [`Command::put_settings`] picks it or [`Command::ApplySettings`]).
    PutSettings {
        /// The settings.
        settings: SettingsV1,
        /// Proposal time.
        now: UnixMillis,
    },
    /// Append an event from a controller (reconciler, scheduler...).
    RecordEvent {
        /// Routine or warning.
        level: EventLevel,
        /// Kind of subject.
        kind: EventKind,
        /// The subject's name or id.
        subject: String,
        /// What happened.
        message: String,
        /// Proposal time.
        now: UnixMillis,
    },
    /// Record the slow-changing facts an agent reported about its host (storages, bridges,
    /// templates, foreign VMIDs).
    SetHostFacts {
        /// The host's id.
        id: NodeId,
        /// The facts (boxed: they dwarf most commands).
        facts: Box<HostFacts>,
    },
    /// Change only a VM's desired power state (`vm start|stop`): the rest of its spec is kept
    /// as it is at apply time, so an apply racing with the request is never overwritten.
    SetVmState {
        /// The VM's name.
        name: String,
        /// The desired state.
        state: DesiredState,
        /// Proposal time.
        now: UnixMillis,
    },
    /// A member says which encoding versions its build reads (at start, after an upgrade).
    ReportVersions {
        /// The member's id.
        id: NodeId,
        /// What its build reads.
        versions: VersionRange,
        /// Proposal time.
        now: UnixMillis,
    },
    /// Raise the cluster version (refused unless every member reads it; never lowered).
    SetClusterVersion {
        /// The new cluster version.
        version: Version,
        /// Proposal time.
        now: UnixMillis,
    },
    /// How far past its first expiry an admin certificate may be renewed (v2; set by the
    /// founder from `init --admin-renewal-days`).
    SetAdminRenewal {
        /// The allowance in milliseconds (0: a renewal keeps the expiry).
        renewal_ms: u64,
        /// Proposal time.
        now: UnixMillis,
    },
    /// Record an admin identity whose certificate is issued (v2): `id` for a known
    /// certificate (the one `init` made), `None` to draw a new id (answered in the reply).
    AddAdmin {
        /// The id, or `None` for a new one.
        id: Option<NodeId>,
        /// Who it is for.
        name: String,
        /// When its certificate was issued.
        issued_at: UnixMillis,
        /// When its certificate expires.
        expires_at: UnixMillis,
        /// Proposal time.
        now: UnixMillis,
    },
    /// Record a renewed admin certificate's expiry (v2; refused past the record's bound).
    RenewAdmin {
        /// The admin id.
        id: NodeId,
        /// The new certificate's expiry.
        expires_at: UnixMillis,
        /// Proposal time.
        now: UnixMillis,
    },
    /// Revoke an admin id (v2): its certificates are refused from then on.
    RevokeAdmin {
        /// The admin id.
        id: NodeId,
        /// Proposal time.
        now: UnixMillis,
    },
    /// Hand a VIP to a host (or to nobody) for a reason the event tells (v2: the leader's VIP
    /// manager and `vip move`), if its epoch is still `expected_epoch`.
    MoveVip {
        /// The VIP's name.
        name: String,
        /// The new holder.
        owner: Option<NodeId>,
        /// The epoch the proposer saw.
        expected_epoch: u64,
        /// Why, for the event (`owner lost`, `moved by operator`...).
        reason: String,
        /// Proposal time.
        now: UnixMillis,
    },
    /// Create or update a VIP with the v2 fields (labels, preemption, checks); a VIP v1 can
    /// carry is still written as [`Command::PutVip`], so it applies on a v1 cluster too.
    ApplyVip {
        /// The definition.
        spec: VipSpec,
        /// Proposal time.
        now: UnixMillis,
    },
    /// Name the host that takes a VIP over if its owner's lease lapses while no leader can
    /// commit a new owner (v2), if its epoch is still `expected_epoch`.
    SetVipStandby {
        /// The VIP's name.
        name: String,
        /// The standby (`None`: nobody).
        standby: Option<NodeId>,
        /// The epoch the proposer saw.
        expected_epoch: u64,
    },
    /// Move a host from `expected` to `state` with the reason (v2): the leader's liveness
    /// decisions (unreachable, fenced) and a host's return. A compare-and-set: refused when the
    /// host is no longer in `expected`, so a decision taken on a view a beat has since changed
    /// never lands.
    SetHostLiveness {
        /// The host's id.
        id: NodeId,
        /// The state the proposer saw.
        expected: HostState,
        /// The new state.
        state: HostState,
        /// Why (kept in `Host::state_reason` and the event).
        reason: String,
        /// Proposal time.
        now: UnixMillis,
    },
    /// Create or update a VM spec with PVE HA's settings (v2): what [`Command::PutVm`] does,
    /// for a spec whose HA settings v1 cannot carry (a `ha.state` other than what `ha = true`
    /// meant, or non-default limits or recovery).
    ApplyVm {
        /// The spec (boxed: it dwarfs every other command).
        spec: Box<VmSpec>,
        /// Proposal time.
        now: UnixMillis,
    },
    /// Recover a VM of the fenced host `from` (v2): place it on `to`, or record that it waits
    /// for an eligible host (`to` = `None`) with `message` saying why. Refused unless `from` is
    /// fenced, the VM is still on it and its HA settings recover it.
    RecoverVm {
        /// The VM.
        name: String,
        /// The fenced host it is on.
        from: NodeId,
        /// The online host it goes to; `None`: it waits.
        to: Option<NodeId>,
        /// What was decided, or why it waits.
        message: String,
        /// Proposal time.
        now: UnixMillis,
    },
    /// Close a VM's recovery from `from` (v2), with `message` as its event.
    EndRecovery {
        /// The VM.
        name: String,
        /// The fenced host the recovery started from.
        from: NodeId,
        /// What happened (the event).
        message: String,
        /// Proposal time.
        now: UnixMillis,
    },
    /// Count a failed start of an HA `started` VM on `host` (v2).
    HaStartFailed {
        /// The VM.
        name: String,
        /// The host it failed on (must be its host).
        host: NodeId,
        /// The failure.
        message: String,
        /// Proposal time.
        now: UnixMillis,
    },
    /// Move an HA VM whose starts kept failing on `from` to `to` (v2): the host is added to
    /// the tried ones and the move is recorded as a recovery (a relocation takes the stopped
    /// VM's configuration over).
    HaRelocate {
        /// The VM.
        name: String,
        /// The host it failed on.
        from: NodeId,
        /// The online host it goes to.
        to: NodeId,
        /// Why (the event).
        message: String,
        /// Proposal time.
        now: UnixMillis,
    },
    /// Give up starting an HA VM (v2): PVE HA's `error` state, until its HA state changes.
    HaGiveUp {
        /// The VM.
        name: String,
        /// Why.
        message: String,
        /// Proposal time.
        now: UnixMillis,
    },
    /// Forget an HA VM's failed starts (v2): it runs, or its HA state no longer starts it.
    HaClearFailures {
        /// The VM.
        name: String,
        /// Why (the event).
        message: String,
        /// Proposal time.
        now: UnixMillis,
    },
    /// Replace the cluster settings, HA defaults included (v2).
    ApplySettings {
        /// The settings.
        settings: Settings,
        /// Proposal time.
        now: UnixMillis,
    },
    /// Record that VM `name` moves to host `to` (v2): refused unless the VM is placed on an
    /// online host, idle, and `to` is another online node of the same PVE cluster.
    StartMigration {
        /// The VM.
        name: String,
        /// The target host.
        to: NodeId,
        /// Why it moves.
        purpose: MigrationPurpose,
        /// Proposal time.
        now: UnixMillis,
    },
    /// Put host `id` into maintenance (`enable`: refused unless it is online; the fleet then
    /// drains it) or take it out (refused unless it is in maintenance; its guests go back
    /// home) (v2).
    SetMaintenance {
        /// The host.
        id: NodeId,
        /// Into maintenance, or out.
        enable: bool,
        /// Proposal time.
        now: UnixMillis,
    },
    /// Close VM `name`'s migration (v2) with what its source agent reported: `node`, the PVE
    /// node it saw the VM on (`None`: the move failed). Only the target node makes the
    /// migration's target the VM's host.
    EndMigration {
        /// The VM.
        name: String,
        /// Where the agent saw the VM after the move.
        node: Option<String>,
        /// What happened (the event; PVE's task log tail on a failure).
        message: String,
        /// Proposal time.
        now: UnixMillis,
    },
    /// The agent of host `id` (session `boot_id`) says it stops for `kind` (v2): the shutdown
    /// policy's decision is recorded (a hold, a drain) before the leader answers it.
    HostLeaving {
        /// The host.
        id: NodeId,
        /// Why its agent stops.
        kind: LeaveKind,
        /// The agent's session.
        boot_id: u64,
        /// Proposal time.
        now: UnixMillis,
    },
    /// Host `id` beats from agent session `boot_id` (v2): back, if another session left (a
    /// maintenance its shutdown policy started ends).
    HostReturned {
        /// The host.
        id: NodeId,
        /// The beating agent's session.
        boot_id: u64,
        /// Proposal time.
        now: UnixMillis,
    },
    /// Drops the leaving record of host `id`, back for longer than its hold (v2).
    EndLeaving {
        /// The host.
        id: NodeId,
        /// Proposal time.
        now: UnixMillis,
    },
    /// `command`, proposed as the `seq`-th write of a client's `request` (v2): applied once;
    /// applied again (a retry after a lost reply), it answers the first reply and changes
    /// nothing (safety rule 9, docs/design/coordinator.md).
    Once {
        /// The client's request.
        request: RequestId,
        /// Which of the request's proposals (0, 1, ...).
        seq: u32,
        /// Proposal time (the memory of requests forgets by it).
        now: UnixMillis,
        /// The write.
        command: Box<Command>,
    },
    /// A whole fleet file as one write (v2, `admin.fleet_apply`): pools, ranges, VIPs, the
    /// settings, the groups' surplus members deleted, then the VMs, in that order, each as its
    /// own command would be; any refusal refuses the whole and changes nothing, naming the
    /// entry.
    ApplyFleet {
        /// The entries (boxed: they dwarf every other command).
        request: Box<FleetApply>,
        /// Proposal time.
        now: UnixMillis,
    },
    /// Independent chains of commands in one log entry (v2: the reconciler's steps for many
    /// VMs at once, the leader's group commit of concurrent clients' writes). Each chain is
    /// applied in order until one of its commands is refused; the other chains go on. Neither
    /// a chain nor a command is atomic with another. A chain may hold [`Command::Once`]
    /// writes, never a batch (nor a `Once` wrapping one).
    Batch {
        /// The chains, each one VM's steps.
        chains: Vec<Vec<Command>>,
    },
    /// Sets and removes operators' labels of host `id` (v2, `pvefleet host label|unlabel`):
    /// `set` first, then `unset`; a key of the agent's own labels cannot be unset here.
    SetHostLabels {
        /// The host.
        id: NodeId,
        /// Labels to set (replacing a value of the same key).
        set: Labels,
        /// Keys to remove.
        unset: Vec<String>,
        /// Proposal time.
        now: UnixMillis,
    },
    /// Decommissions host `id` (v2, `pvefleet host remove`): refused while a VM is placed on
    /// it or it owns or stands by for a VIP; then its id and certificate are refused for good.
    RemoveHost {
        /// The host.
        id: NodeId,
        /// Proposal time.
        now: UnixMillis,
    },
    /// Record a one-time dashboard login an admin minted (v2; `pvefleet dashboard login`).
    AddDashboardLogin {
        /// The record (the secret's hash only); its `created_at` is the proposal time.
        record: protocol::fleet::DashboardLogin,
    },
    /// Redeem a dashboard login whose secret hashes to `secret_sha256` (v2): once only.
    UseDashboardLogin {
        /// The login's id.
        id: String,
        /// SHA-256 of the presented secret, hex.
        secret_sha256: String,
        /// Proposal time.
        now: UnixMillis,
    },
}

impl Command {
    /// The command that creates or updates `spec`: [`Command::PutVm`] when v1 carries it
    /// exactly, so it applies while the cluster is still at v1; [`Command::ApplyVm`]
    /// otherwise, refused with the reason until every member reads v2.
    pub fn apply_vm(spec: VmSpec, now: UnixMillis) -> Command {
        match VmSpecV1::exact(&spec) {
            Some(v1) => Command::PutVm {
                spec: Box::new(v1),
                now,
            },
            None => Command::ApplyVm {
                spec: Box::new(spec),
                now,
            },
        }
    }

    /// The command that replaces the settings with `settings`: [`Command::PutSettings`] when
    /// v1 carries them exactly (PVE's HA defaults), so it applies while the cluster is still at
    /// v1; [`Command::ApplySettings`] otherwise, refused with the reason until every member
    /// reads v2.
    pub fn put_settings(settings: Settings, now: UnixMillis) -> Command {
        match SettingsV1::exact(&settings) {
            Some(v1) => Command::PutSettings { settings: v1, now },
            None => Command::ApplySettings { settings, now },
        }
    }

    /// The first encoding version that carries this command: it is refused for the log until
    /// the cluster version reaches it. Exhaustive on purpose: a new variant must say.
    pub fn since(&self) -> Version {
        match self {
            Command::PutVm { .. }
            | Command::DeleteVm { .. }
            | Command::ReleaseVm { .. }
            | Command::ScheduleVm { .. }
            | Command::SetVmStatus { .. }
            | Command::AllocateVmid { .. }
            | Command::AllocateIps { .. }
            | Command::ReleaseStaleIps { .. }
            | Command::AllocateIp { .. }
            | Command::ReleaseIp { .. }
            | Command::PutPool { .. }
            | Command::DeletePool { .. }
            | Command::PutVmidRange { .. }
            | Command::DeleteVmidRange { .. }
            | Command::PutVip { .. }
            | Command::DeleteVip { .. }
            | Command::SetVipOwner { .. }
            | Command::AddTokenRecord { .. }
            | Command::UseToken { .. }
            | Command::RevokeToken { .. }
            | Command::RegisterHost { .. }
            | Command::SetHostState { .. }
            | Command::AddMember { .. }
            | Command::RemoveMember { .. }
            | Command::PutSettings { .. }
            | Command::SetHostFacts { .. }
            | Command::SetVmState { .. }
            | Command::ReportVersions { .. }
            | Command::SetClusterVersion { .. } => OLDEST,
            // An event about an admin names a kind v1 does not have.
            Command::RecordEvent { kind, .. } => {
                if *kind == protocol::fleet::EventKind::Admin {
                    ADMINS
                } else {
                    OLDEST
                }
            }
            Command::SetAdminRenewal { .. }
            | Command::AddAdmin { .. }
            | Command::RenewAdmin { .. }
            | Command::RevokeAdmin { .. } => ADMINS,
            Command::MoveVip { .. } | Command::ApplyVip { .. } | Command::SetVipStandby { .. } => {
                VIP_HOLDING
            }
            Command::SetHostLiveness { .. } => HOST_LIVENESS,
            Command::ApplyVm { .. } => HA_SETTINGS,
            Command::RecoverVm { .. }
            | Command::EndRecovery { .. }
            | Command::HaStartFailed { .. }
            | Command::HaRelocate { .. }
            | Command::HaGiveUp { .. }
            | Command::HaClearFailures { .. } => RECOVERY,
            Command::ApplySettings { .. } => HA_DEFAULTS,
            Command::StartMigration { .. }
            | Command::EndMigration { .. }
            | Command::SetMaintenance { .. } => MIGRATION,
            Command::HostLeaving { .. }
            | Command::HostReturned { .. }
            | Command::EndLeaving { .. } => LEAVING,
            // What it wraps may be newer still.
            Command::Once { command, .. } => command.since().max(REQUESTS),
            Command::ApplyFleet { .. } => BATCHES,
            Command::Batch { chains } => chains
                .iter()
                .flatten()
                .map(Command::since)
                .fold(BATCHES, Version::max),
            Command::SetHostLabels { .. } | Command::RemoveHost { .. } => HOST_ADMIN,
            Command::AddDashboardLogin { .. } | Command::UseDashboardLogin { .. } => DASHBOARD,
        }
    }

    /// The variant's name, for messages.
    pub fn name(&self) -> &'static str {
        match self {
            Command::PutVm { .. } => "PutVm",
            Command::DeleteVm { .. } => "DeleteVm",
            Command::ReleaseVm { .. } => "ReleaseVm",
            Command::ScheduleVm { .. } => "ScheduleVm",
            Command::SetVmStatus { .. } => "SetVmStatus",
            Command::AllocateVmid { .. } => "AllocateVmid",
            Command::AllocateIps { .. } => "AllocateIps",
            Command::ReleaseStaleIps { .. } => "ReleaseStaleIps",
            Command::AllocateIp { .. } => "AllocateIp",
            Command::ReleaseIp { .. } => "ReleaseIp",
            Command::PutPool { .. } => "PutPool",
            Command::DeletePool { .. } => "DeletePool",
            Command::PutVmidRange { .. } => "PutVmidRange",
            Command::DeleteVmidRange { .. } => "DeleteVmidRange",
            Command::PutVip { .. } => "PutVip",
            Command::DeleteVip { .. } => "DeleteVip",
            Command::SetVipOwner { .. } => "SetVipOwner",
            Command::AddTokenRecord { .. } => "AddTokenRecord",
            Command::UseToken { .. } => "UseToken",
            Command::RevokeToken { .. } => "RevokeToken",
            Command::RegisterHost { .. } => "RegisterHost",
            Command::SetHostState { .. } => "SetHostState",
            Command::AddMember { .. } => "AddMember",
            Command::RemoveMember { .. } => "RemoveMember",
            Command::PutSettings { .. } => "PutSettings",
            Command::RecordEvent { .. } => "RecordEvent",
            Command::SetHostFacts { .. } => "SetHostFacts",
            Command::SetVmState { .. } => "SetVmState",
            Command::ReportVersions { .. } => "ReportVersions",
            Command::SetClusterVersion { .. } => "SetClusterVersion",
            Command::SetAdminRenewal { .. } => "SetAdminRenewal",
            Command::AddAdmin { .. } => "AddAdmin",
            Command::RenewAdmin { .. } => "RenewAdmin",
            Command::RevokeAdmin { .. } => "RevokeAdmin",
            Command::MoveVip { .. } => "MoveVip",
            Command::ApplyVip { .. } => "ApplyVip",
            Command::SetVipStandby { .. } => "SetVipStandby",
            Command::SetHostLiveness { .. } => "SetHostLiveness",
            Command::ApplyVm { .. } => "ApplyVm",
            Command::RecoverVm { .. } => "RecoverVm",
            Command::EndRecovery { .. } => "EndRecovery",
            Command::HaStartFailed { .. } => "HaStartFailed",
            Command::HaRelocate { .. } => "HaRelocate",
            Command::HaGiveUp { .. } => "HaGiveUp",
            Command::HaClearFailures { .. } => "HaClearFailures",
            Command::ApplySettings { .. } => "ApplySettings",
            Command::StartMigration { .. } => "StartMigration",
            Command::EndMigration { .. } => "EndMigration",
            Command::SetMaintenance { .. } => "SetMaintenance",
            Command::HostLeaving { .. } => "HostLeaving",
            Command::HostReturned { .. } => "HostReturned",
            Command::EndLeaving { .. } => "EndLeaving",
            Command::Once { .. } => "Once",
            Command::ApplyFleet { .. } => "ApplyFleet",
            Command::Batch { .. } => "Batch",
            Command::SetHostLabels { .. } => "SetHostLabels",
            Command::RemoveHost { .. } => "RemoveHost",
            Command::AddDashboardLogin { .. } => "AddDashboardLogin",
            Command::UseDashboardLogin { .. } => "UseDashboardLogin",
        }
    }
}

/// The answer to an applied command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum CommandReply {
    /// Applied; nothing to report.
    Done,
    /// A VM spec was applied.
    VmApplied {
        /// Created, updated or unchanged.
        outcome: ApplyOutcome,
        /// The generation after the apply.
        generation: u64,
    },
    /// A VM delete was accepted.
    VmDeleted {
        /// Removed at once (`true`) or marked for deletion (`false`).
        removed: bool,
    },
    /// The VM's VMID.
    Vmid {
        /// The VMID.
        vmid: u32,
        /// The range it belongs to.
        range: String,
    },
    /// The VM's current pool addresses.
    Ips {
        /// One per NIC drawing from a pool.
        addresses: Vec<NicAddress>,
    },
    /// An address allocated to an external owner.
    Ip {
        /// The address.
        address: IpAddr,
        /// The pool's prefix length.
        prefix_len: u8,
        /// The pool's gateway.
        gateway: Option<IpAddr>,
    },
    /// A pool, range, VIP or the settings were applied.
    Applied {
        /// Created, updated or unchanged.
        outcome: ApplyOutcome,
    },
    /// A VIP's holder after [`Command::SetVipOwner`] or [`Command::MoveVip`].
    VipOwner {
        /// The holder.
        owner: Option<NodeId>,
        /// The new epoch.
        epoch: u64,
    },
    /// A join token was accepted and one use consumed.
    TokenAccepted {
        /// The record after the use.
        record: StoredToken,
        /// The id assigned to the joining node (never used before).
        node_id: NodeId,
    },
    /// Refused: the state is unchanged.
    Refused(StateError),
    /// A dashboard login was redeemed.
    DashboardLoginAccepted {
        /// The admin that minted it.
        issuer: NodeId,
        /// Whether the session may act.
        read_only: bool,
    },
    /// An admin identity was recorded.
    AdminAdded {
        /// The record (with its id).
        record: protocol::fleet::AdminRecord,
    },
    /// A fleet file was applied whole ([`Command::ApplyFleet`]).
    FleetApplied(FleetApplyReply),
    /// The replies of a [`Command::Batch`], one list per chain: the replies of the commands
    /// applied, the last one a refusal when the chain stopped there.
    Batch(Vec<Vec<CommandReply>>),
}

impl CommandReply {
    /// The reply as a `Result`, a refusal as the error.
    pub fn into_result(self) -> Result<CommandReply, StateError> {
        match self {
            CommandReply::Refused(e) => Err(e),
            other => Ok(other),
        }
    }
}

/// Why a command was refused (the state is unchanged).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum StateError {
    /// A field is invalid or names something that does not exist.
    #[error("invalid: {0}")]
    Invalid(SpecError),
    /// The object does not exist.
    #[error("{kind} {name:?} not found")]
    NotFound {
        /// What kind of object.
        kind: EventKind,
        /// Its name or id.
        name: String,
    },
    /// The command contradicts the current state.
    #[error("conflict: {0}")]
    Conflict(String),
    /// No free VMID left in the range.
    #[error(
        "VMID range {range:?} is exhausted: every VMID {start}-{end} ({size}) is allocated or \
         in use on a host (widen the range or add one)"
    )]
    VmidsExhausted {
        /// The range's name.
        range: String,
        /// First VMID.
        start: u32,
        /// Last VMID.
        end: u32,
        /// How many VMIDs the range has.
        size: u64,
    },
    /// No free address left.
    #[error(
        "IP pool {pool:?} is exhausted: every address {start}-{end} is allocated \
         (widen the pool's range or add a pool)"
    )]
    IpsExhausted {
        /// The pool's name.
        pool: String,
        /// First address of the range.
        start: IpAddr,
        /// Last address of the range.
        end: IpAddr,
    },
    /// A join token was refused.
    #[error("{0}")]
    Token(TokenRefusal),
    /// A dashboard login was refused.
    #[error("{0}")]
    DashboardLogin(protocol::fleet::DashboardLoginRefusal),
    /// The entry was applied before (a replay): nothing was done again.
    #[error("log entry {index} was already applied (last applied {last_applied})")]
    AlreadyApplied {
        /// The entry's index.
        index: u64,
        /// The last index applied.
        last_applied: u64,
    },
    /// One entry of a [`Command::ApplyFleet`] was refused, so none was applied.
    #[error("{kind} {name}: {error}")]
    Entry {
        /// `pool`, `vmid_range`, `vip`, `settings`, `vm_group` or `vm`.
        kind: String,
        /// The entry's name.
        name: String,
        /// Why it was refused.
        error: Box<StateError>,
    },
}

impl StateError {
    /// The refusal itself, past the entry [`StateError::Entry`] names.
    pub fn innermost(&self) -> &StateError {
        match self {
            StateError::Entry { error, .. } => error.innermost(),
            other => other,
        }
    }
}

impl From<SpecError> for StateError {
    fn from(e: SpecError) -> StateError {
        StateError::Invalid(e)
    }
}

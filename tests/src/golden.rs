//! Golden encodings: one sample of every wire message (each request and response of every
//! method the admin, agent, join and raft services serve, and the frame envelopes) and of every
//! replicated command, plus a snapshot of a fleet holding something of every kind. The bytes of
//! each sample are checked in per encoding version under `tests/golden/vN/`; every later build
//! must decode them and write them back identically at their version (`tests/it/golden.rs`),
//! which is what lets old and new builds share a cluster during a rolling upgrade.
//!
//! Samples are deterministic (fixed times, ids and secrets): the same build always writes the
//! same bytes.

use std::collections::BTreeSet;
use std::net::IpAddr;

use fleet::state::{Command, CommandReply, FleetState};
use protocol::Rpc;
use protocol::admin::{self, ReadMode};
use protocol::agent::{
    AgentCommand, CommandFailure, CommandOutput, CommandResult, DeleteVm, EnsureVm, FailureKind,
    Heartbeat, HeartbeatAck, HostResources, Inventory, LeaveAction, LeaveAnswer, LeaveKind,
    ObservedVm, Op, PowerAction, PowerOp, SnapshotAction, SnapshotInfo, SnapshotOp, VmObservation,
};
use protocol::fleet::{
    Capacity, EventKind, EventLevel, HostFacts, HostState, Member, MemberRole, PVE_CLUSTER_LABEL,
    Settings, SettingsV1, StoredToken, VmStatus,
};
use protocol::join::{JoinRequest, JoinResponse, RenewRequest, RenewResponse};
use protocol::spec::{
    CheckType, DesiredState, HaDefaults, HaSpec, HaState, IpPoolSpec, Labels, NicIp, NicSpec,
    RecoveryMode, VipCheck, VipSpec, VipSpecV1, VmSpec, VmSpecV1, VmidRangeSpec,
};
use protocol::version::{Version, VersionRange};
use transport::frame::RequestEnvelope;
use transport::{RemoteCode, RemoteError};

/// The fixed clock of every sample (unix milliseconds).
const NOW: u64 = 1_800_000_000_000;
/// Encoding v1 (samples are fixed values, never this build's own version).
const V1: Version = Version(1);
/// A build reading v1 only, as the samples report it.
const V1_RANGE: VersionRange = VersionRange {
    oldest: V1,
    newest: V1,
};

/// Encodes the sample at a version (`None`: the sample does not exist at that version).
type EncodeFn = Box<dyn Fn(Version) -> Option<Result<Vec<u8>, String>>>;
/// Decodes bytes written at a version and writes the value again at that version.
type ReencodeFn = Box<dyn Fn(Version, &[u8]) -> Result<Vec<u8>, String>>;

/// One golden sample.
pub struct Golden {
    /// Its file name under `tests/golden/vN/` (without `.hex`).
    pub name: String,
    /// The sample's bytes at a version.
    pub encode: EncodeFn,
    /// Decode then encode again at the same version.
    pub reencode: ReencodeFn,
}

impl std::fmt::Debug for Golden {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name)
    }
}

/// Every sample: wire requests and responses, envelopes, replicated commands, the snapshot.
pub fn samples() -> Vec<Golden> {
    let mut out = Vec::new();
    wire_samples(&mut out);
    envelope_samples(&mut out);
    let mut seen = std::collections::BTreeMap::<&str, usize>::new();
    for cmd in commands() {
        // A command kind sampled more than once gets `.2`, `.3`... after its name.
        let n = seen.entry(cmd.name()).or_default();
        *n += 1;
        let suffix = if *n == 1 {
            String::new()
        } else {
            format!(".{n}")
        };
        out.push(command_sample(cmd, &suffix));
    }
    out.push(snapshot_sample("snapshot.fleet", V1));
    out.push(snapshot_sample(
        "snapshot.fleet-admins",
        protocol::version::ADMINS,
    ));
    let names: BTreeSet<&str> = out.iter().map(|g| g.name.as_str()).collect();
    assert_eq!(names.len(), out.len(), "golden sample names must be unique");
    out
}

/// The method names the wire samples cover.
pub fn sampled_methods() -> BTreeSet<String> {
    samples()
        .iter()
        .filter_map(|g| g.name.strip_prefix("wire."))
        .filter_map(|n| n.strip_suffix(".request"))
        .map(str::to_string)
        .collect()
}

fn rpc<R: Rpc>(out: &mut Vec<Golden>, req: R, resp: R::Response) {
    out.push(Golden {
        name: format!("wire.{}.request", R::METHOD),
        encode: Box::new(move |v| Some(req.encode_at(v).map_err(|e| e.to_string()))),
        reencode: Box::new(|v, bytes| {
            let value = R::decode_at(v, bytes).map_err(|e| e.to_string())?;
            value.encode_at(v).map_err(|e| e.to_string())
        }),
    });
    out.push(Golden {
        name: format!("wire.{}.response", R::METHOD),
        encode: Box::new(move |v| Some(R::encode_response_at(&resp, v).map_err(|e| e.to_string()))),
        reencode: Box::new(|v, bytes| {
            let value = R::decode_response_at(v, bytes).map_err(|e| e.to_string())?;
            R::encode_response_at(&value, v).map_err(|e| e.to_string())
        }),
    });
}

/// A plain serde value: its layout has no version of its own (the frame envelopes).
fn plain<T>(name: &str, value: T) -> Golden
where
    T: serde::Serialize + serde::de::DeserializeOwned + 'static,
{
    Golden {
        name: name.to_string(),
        encode: Box::new(move |_| {
            Some(protocol::encoding::encode(&value).map_err(|e| e.to_string()))
        }),
        reencode: Box::new(|_, bytes| {
            let value: T = protocol::encoding::decode(bytes).map_err(|e| e.to_string())?;
            protocol::encoding::encode(&value).map_err(|e| e.to_string())
        }),
    }
}

fn command_sample(cmd: Command, suffix: &str) -> Golden {
    Golden {
        name: format!("log.{}{suffix}", cmd.name()),
        encode: Box::new(move |v| {
            (cmd.since() <= v)
                .then(|| fleet::state::encode_command(&cmd, v).map_err(|e| e.to_string()))
        }),
        reencode: Box::new(|v, bytes| {
            let cmd = fleet::state::decode_command(bytes).map_err(|e| e.to_string())?;
            fleet::state::encode_command(&cmd, v).map_err(|e| e.to_string())
        }),
    }
}

/// A snapshot of the state the commands of encoding `since` and before build, written at
/// every version from `since` on.
fn snapshot_sample(name: &str, since: Version) -> Golden {
    let state = sample_state_at(since);
    Golden {
        name: name.to_string(),
        encode: Box::new(move |v| {
            (v >= since)
                .then(|| fleet::state::encode_snapshot(&state, v).map_err(|e| e.to_string()))
        }),
        reencode: Box::new(|v, bytes| {
            let state = fleet::state::decode_snapshot(bytes).map_err(|e| e.to_string())?;
            fleet::state::encode_snapshot(&state, v).map_err(|e| e.to_string())
        }),
    }
}

fn envelope_samples(out: &mut Vec<Golden>) {
    out.push(plain(
        "envelope.request",
        RequestEnvelope {
            method: "admin.vm_get".into(),
            body: vec![0, 1, 3, b'w', b'e', b'b', 0],
        },
    ));
    let replies: Vec<(&str, Result<Vec<u8>, RemoteError>)> = vec![
        ("ok", Ok(vec![0, 1, 7])),
        (
            "bad-request",
            Err(RemoteError::bad_request("spec.memory_mib")),
        ),
        ("unknown-method", Err(RemoteError::unknown_method("no"))),
        (
            "not-leader",
            Err(RemoteError::not_leader(Some((2, "10.0.0.2:7400".into())))),
        ),
        ("unauthorized", Err(RemoteError::unauthorized("revoked"))),
        ("not-found", Err(RemoteError::not_found("vm web"))),
        ("conflict", Err(RemoteError::conflict("vmid 100"))),
        ("unavailable", Err(RemoteError::unavailable("no quorum"))),
        ("internal", Err(RemoteError::internal("bug"))),
        (
            "unsupported-version",
            Err(RemoteError::new(
                RemoteCode::UnsupportedVersion {
                    oldest: 1,
                    newest: 1,
                },
                "v9",
            )),
        ),
    ];
    for (name, reply) in replies {
        out.push(plain(&format!("envelope.response.{name}"), reply));
    }
}

fn ip(s: &str) -> IpAddr {
    s.parse().expect("a sample address")
}

fn vm_spec() -> VmSpec {
    let mut spec = VmSpec::new("web", 2048);
    spec.cloud_init = Some(Default::default());
    spec.nics = vec![NicSpec {
        model: Default::default(),
        bridge: "vmbr0".into(),
        vlan: Some(100),
        mac: None,
        firewall: true,
        mtu: None,
        ip: Some(NicIp::Pool("lan".into())),
    }];
    spec.placement.labels.insert("zone".into(), "a".into());
    spec
}

/// `spec` in the v1 layout (the samples' v1 specs carry nothing v1 cannot).
fn vm_spec_v1(spec: VmSpec) -> VmSpecV1 {
    VmSpecV1::exact(&spec).expect("v1 carries the sample spec")
}

/// A VM with a non-default HA table and affinity rules (v2 only).
fn vm_spec_ha() -> VmSpec {
    let mut spec = VmSpec::new("db", 1024);
    spec.state = DesiredState::Stopped;
    spec.tags = vec!["data".into()];
    spec.placement.apart_from = vec!["tag:data".into()];
    spec.placement.together_with = vec!["web".into()];
    spec.placement.node_affinity = Some(protocol::spec::NodeAffinity {
        nodes: [("pve-a".to_string(), 2)].into(),
        strict: true,
        failback: false,
    });
    spec.ha = HaSpec {
        state: Some(HaState::Stopped),
        max_restart: Some(2),
        max_relocate: Some(3),
        recovery: Some(RecoveryMode::Recreate),
    };
    spec
}

fn pool_spec() -> IpPoolSpec {
    IpPoolSpec {
        name: "lan".into(),
        cidr: "10.0.0.0/24".into(),
        gateway: Some("10.0.0.1".into()),
        range_start: "10.0.0.10".into(),
        range_end: "10.0.0.99".into(),
        dns: vec!["10.0.0.53".into()],
    }
}

fn range_spec() -> VmidRangeSpec {
    VmidRangeSpec {
        name: "prod".into(),
        start: 1000,
        end: 1999,
    }
}

fn vip_spec_v1() -> VipSpecV1 {
    VipSpecV1 {
        name: "api".into(),
        address: "10.0.0.200/24".into(),
        interface: "vmbr0".into(),
        hosts: vec!["pve-a".into()],
    }
}

fn vip_spec() -> VipSpec {
    VipSpec::from(vip_spec_v1())
}

/// A VIP using every field v2 added.
fn vip_spec_checked() -> VipSpec {
    VipSpec {
        name: "pve-api".into(),
        address: "10.0.0.202/24".into(),
        labels: [("zone".to_string(), "a".to_string())].into(),
        preempt: true,
        preempt_delay_secs: 60,
        checks: vec![
            VipCheck {
                kind: CheckType::Https,
                port: Some(8006),
                address: None,
                path: Some("/api2/json/version".into()),
                expect_status: Some(401),
                command: vec![],
                interval_ms: 1000,
                timeout_ms: 500,
                rise: 2,
                fall: 3,
            },
            VipCheck {
                kind: CheckType::Command,
                port: None,
                address: None,
                path: None,
                expect_status: None,
                command: vec!["/usr/local/bin/check".into(), "--quick".into()],
                interval_ms: 2000,
                timeout_ms: 1000,
                rise: 1,
                fall: 1,
            },
        ],
        ..vip_spec()
    }
}

fn facts() -> HostFacts {
    HostFacts {
        pve_version: "9.1.1".into(),
        storages: vec![protocol::agent::StorageInfo {
            id: "local-lvm".into(),
            kind: "lvmthin".into(),
            content: ["images".to_string()].into(),
            shared: false,
            active: true,
            total_bytes: 100 << 30,
            available_bytes: 60 << 30,
        }],
        bridges: ["vmbr0".to_string()].into(),
        templates: vec![protocol::agent::TemplateInfo {
            vmid: 9000,
            name: "debian-12".into(),
        }],
        foreign_vmids: vec![100, 101],
        updated_at: NOW,
    }
}

fn member(id: u64) -> Member {
    Member {
        id,
        addr: format!("10.0.0.{id}:7400"),
        role: MemberRole::Voter,
    }
}

fn token() -> StoredToken {
    StoredToken {
        id: "abc123".into(),
        secret_sha256: "ab".repeat(32),
        role: protocol::Role::Agent,
        created_at: NOW,
        expires_at: NOW + 3_600_000,
        uses_left: Some(1),
        revoked: false,
    }
}

/// One command of every kind, in an order that the state machine accepts from an empty fleet
/// (so applying them gives the sample state). Variants are listed in declaration order.
pub fn commands() -> Vec<Command> {
    let now = NOW;
    vec![
        Command::AddMember {
            member: member(1),
            now,
        },
        Command::AddMember {
            member: member(2),
            now,
        },
        Command::PutVmidRange {
            spec: range_spec(),
            now,
        },
        Command::PutPool {
            spec: pool_spec(),
            now,
        },
        Command::RegisterHost {
            id: 3,
            name: "pve-a".into(),
            labels: [("zone".to_string(), "a".to_string())].into(),
            capacity: Capacity {
                cpus: 16,
                memory_mib: 65_536,
            },
            now,
        },
        Command::SetHostState {
            id: 3,
            state: HostState::Online,
            now,
        },
        Command::SetHostFacts {
            id: 3,
            facts: Box::new(facts()),
        },
        Command::PutVm {
            spec: Box::new(vm_spec_v1(vm_spec())),
            now,
        },
        Command::AllocateVmid {
            vm: "web".into(),
            avoid: vec![1000],
            now,
        },
        Command::AllocateIps {
            vm: "web".into(),
            now,
        },
        Command::ScheduleVm {
            name: "web".into(),
            host: Some(3),
            expected: None,
            now,
        },
        Command::SetVmStatus {
            name: "web".into(),
            status: VmStatus {
                current_host: Some(3),
                ips: vec![ip("10.0.0.10")],
                message: "running".into(),
                observed_generation: 1,
                updated_at: NOW,
                ..Default::default()
            },
            now,
        },
        Command::SetVmState {
            name: "web".into(),
            state: DesiredState::Running,
            now,
        },
        Command::ReleaseStaleIps {
            vm: "web".into(),
            now,
        },
        Command::AllocateIp {
            pool: "lan".into(),
            owner: "router".into(),
            now,
        },
        Command::ReleaseIp {
            pool: "lan".into(),
            address: ip("10.0.0.11"),
            now,
        },
        Command::PutVip {
            spec: vip_spec_v1(),
            now,
        },
        Command::SetVipOwner {
            name: "api".into(),
            owner: Some(3),
            expected_epoch: 0,
            now,
        },
        Command::AddTokenRecord { record: token() },
        Command::UseToken {
            id: "abc123".into(),
            secret_sha256: "ab".repeat(32),
            now,
        },
        Command::RevokeToken {
            id: "abc123".into(),
            now,
        },
        Command::PutSettings {
            settings: SettingsV1::shown(&Settings {
                default_vmid_range: Some("prod".into()),
                max_vms_per_host: Some(50),
                ..Settings::default()
            }),
            now,
        },
        Command::RecordEvent {
            level: EventLevel::Warning,
            kind: EventKind::Vm,
            subject: "web".into(),
            message: "slow to start".into(),
            now,
        },
        Command::ReportVersions {
            id: 1,
            versions: V1_RANGE,
            now,
        },
        Command::SetClusterVersion { version: V1, now },
        Command::PutVm {
            spec: Box::new(vm_spec_v1(VmSpec::new("old", 512))),
            now,
        },
        Command::AllocateVmid {
            vm: "old".into(),
            avoid: vec![],
            now,
        },
        Command::DeleteVm {
            name: "old".into(),
            now,
        },
        Command::ReleaseVm {
            name: "old".into(),
            now,
        },
        Command::PutVmidRange {
            spec: VmidRangeSpec {
                name: "spare".into(),
                start: 5000,
                end: 5099,
            },
            now,
        },
        Command::DeleteVmidRange {
            name: "spare".into(),
            now,
        },
        Command::PutPool {
            spec: IpPoolSpec {
                name: "spare".into(),
                cidr: "10.9.0.0/24".into(),
                gateway: None,
                range_start: "10.9.0.10".into(),
                range_end: "10.9.0.20".into(),
                dns: vec![],
            },
            now,
        },
        Command::DeletePool {
            name: "spare".into(),
            now,
        },
        Command::PutVip {
            spec: VipSpecV1 {
                name: "spare".into(),
                address: "10.0.0.201/24".into(),
                ..vip_spec_v1()
            },
            now,
        },
        Command::DeleteVip {
            name: "spare".into(),
            now,
        },
        Command::AddMember {
            member: member(4),
            now,
        },
        Command::RemoveMember { id: 4, now },
        // Encoding v2: operator identities.
        Command::SetAdminRenewal {
            renewal_ms: 7 * 86_400_000,
            now,
        },
        Command::AddAdmin {
            id: Some(1),
            name: "init".into(),
            issued_at: NOW,
            expires_at: NOW + 30 * 86_400_000,
            now,
        },
        Command::AddAdmin {
            id: None,
            name: "alice".into(),
            issued_at: NOW,
            expires_at: NOW + 86_400_000,
            now,
        },
        Command::RenewAdmin {
            id: 2,
            expires_at: NOW + 2 * 86_400_000,
            now,
        },
        Command::RevokeAdmin { id: 1, now },
        Command::MoveVip {
            name: "api".into(),
            owner: Some(3),
            expected_epoch: 1,
            reason: "moved by operator".into(),
            now,
        },
        Command::ApplyVip {
            spec: vip_spec_checked(),
            now,
        },
        Command::SetVipStandby {
            name: "api".into(),
            standby: None,
            expected_epoch: 1,
        },
        Command::RecordEvent {
            level: EventLevel::Info,
            kind: EventKind::Admin,
            subject: "2".into(),
            message: "renewed".into(),
            now,
        },
        Command::SetHostLiveness {
            id: 3,
            expected: HostState::Online,
            state: HostState::Unreachable,
            reason: "no heartbeat for 3.0 s (unreachable after 3.0 s)".into(),
            now,
        },
        // Encoding v2: PVE HA's settings.
        Command::ApplyVm {
            spec: Box::new(vm_spec_ha()),
            now,
        },
        // Encoding v2: recovering the guests of a fenced host. "web" (on host 3) becomes an
        // HA guest, host 3 is fenced; no other host is eligible, so it waits; then it is over.
        Command::ApplyVm {
            spec: Box::new(VmSpec {
                ha: HaSpec {
                    recovery: Some(RecoveryMode::Relocate),
                    max_restart: Some(2),
                    ..HaSpec::started()
                },
                ..vm_spec()
            }),
            now,
        },
        Command::SetHostLiveness {
            id: 3,
            expected: HostState::Unreachable,
            state: HostState::Fenced,
            reason: "lease provably over: silent since 11.0 s".into(),
            now,
        },
        Command::RecoverVm {
            name: "web".into(),
            from: 3,
            to: None,
            message: "no eligible host for VM db: no hosts registered".into(),
            now,
        },
        Command::EndRecovery {
            name: "web".into(),
            from: 3,
            message: "recovery from pve-a over: its host is online again".into(),
            now,
        },
        // Failed starts (PVE HA's max_restart, max_relocate, error): host 3 beats again, the
        // guest fails to start there; with no other host it is given up, then forgiven.
        Command::SetHostLiveness {
            id: 3,
            expected: HostState::Fenced,
            state: HostState::Online,
            reason: "back after fencing".into(),
            now,
        },
        Command::HaStartFailed {
            name: "web".into(),
            host: 3,
            message: "start failed: QEMU exited with code 1".into(),
            now,
        },
        Command::RegisterHost {
            id: 9,
            name: "pve-b".into(),
            labels: [("zone".to_string(), "b".to_string())].into(),
            capacity: Capacity {
                cpus: 16,
                memory_mib: 65_536,
            },
            now,
        },
        Command::SetHostState {
            id: 9,
            state: HostState::Online,
            now,
        },
        Command::HaRelocate {
            name: "web".into(),
            from: 3,
            to: 9,
            message: "failed to start 2 times on pve-a (max_restart = 1)".into(),
            now,
        },
        Command::HaStartFailed {
            name: "web".into(),
            host: 9,
            message: "start failed: QEMU exited with code 1".into(),
            now,
        },
        Command::HaGiveUp {
            name: "web".into(),
            message: "failed to start 2 times on pve-b after 1 relocation".into(),
            now,
        },
        Command::HaClearFailures {
            name: "web".into(),
            message: "HA state is disabled now: its failed starts are forgotten".into(),
            now,
        },
        // Encoding v2: a migration between two nodes of PVE cluster alpha, recorded and closed.
        Command::RegisterHost {
            id: 10,
            name: "pve-c".into(),
            labels: [(PVE_CLUSTER_LABEL.to_string(), "alpha".to_string())].into(),
            capacity: Capacity {
                cpus: 16,
                memory_mib: 65_536,
            },
            now,
        },
        Command::SetHostState {
            id: 10,
            state: HostState::Online,
            now,
        },
        Command::RegisterHost {
            id: 11,
            name: "pve-d".into(),
            labels: [(PVE_CLUSTER_LABEL.to_string(), "alpha".to_string())].into(),
            capacity: Capacity {
                cpus: 16,
                memory_mib: 65_536,
            },
            now,
        },
        Command::SetHostState {
            id: 11,
            state: HostState::Online,
            now,
        },
        Command::apply_vm(VmSpec::new("mig", 512), now),
        Command::ScheduleVm {
            name: "mig".into(),
            host: Some(10),
            expected: None,
            now,
        },
        Command::AllocateVmid {
            vm: "mig".into(),
            avoid: Vec::new(),
            now,
        },
        Command::StartMigration {
            name: "mig".into(),
            to: 11,
            purpose: protocol::fleet::MigrationPurpose::Operator,
            now,
        },
        Command::EndMigration {
            name: "mig".into(),
            node: Some("pve-d".into()),
            message: "running on pve-d".into(),
            now,
        },
        // Maintenance of pve-d: mig is drained back to pve-c (home: pve-d), then it ends.
        Command::SetMaintenance {
            id: 11,
            enable: true,
            now,
        },
        Command::StartMigration {
            name: "mig".into(),
            to: 10,
            purpose: protocol::fleet::MigrationPurpose::Drain,
            now,
        },
        Command::EndMigration {
            name: "mig".into(),
            node: Some("pve-c".into()),
            message: "running on pve-c".into(),
            now,
        },
        Command::SetMaintenance {
            id: 11,
            enable: false,
            now,
        },
        // Encoding v2: a member of a VM group.
        Command::apply_vm(
            {
                let mut spec = VmSpec::new("api-1", 1024);
                spec.group = Some(protocol::spec::GroupMember {
                    group: "api".into(),
                    index: 1,
                    pattern: "api-{n}".into(),
                    spread: true,
                });
                spec
            },
            now,
        ),
        // pve-d's agent restarts (frozen under a hold), is back, and the record goes.
        Command::HostLeaving {
            id: 11,
            kind: LeaveKind::Restart,
            boot_id: 7,
            now,
        },
        Command::HostReturned {
            id: 11,
            boot_id: 8,
            now,
        },
        Command::EndLeaving { id: 11, now },
        // Encoding v2: the fleet's HA defaults.
        Command::ApplySettings {
            settings: Settings {
                default_vmid_range: Some("prod".into()),
                max_vms_per_host: Some(50),
                ha: HaDefaults {
                    max_restart: 0,
                    max_relocate: 2,
                    recovery: RecoveryMode::Recreate,
                    shutdown_policy: protocol::spec::ShutdownPolicy::Migrate,
                },
                rebalance: protocol::fleet::Rebalancing {
                    enabled: true,
                    threshold_pct: 15,
                    hold_s: 600,
                    min_gain_pct: 2,
                },
                ..Settings::default()
            },
            now,
        },
        // Encoding v2: a write made as a client's request (applied once).
        Command::Once {
            request: protocol::RequestId([0x5a; 16]),
            seq: 0,
            now,
            command: Box::new(Command::AllocateIp {
                pool: "lan".into(),
                owner: "retried".into(),
                now,
            }),
        },
        // Encoding v2: a whole fleet file as one write, then the reconciler's steps for its VM
        // batched in one entry.
        Command::ApplyFleet {
            request: Box::new(fleet_apply()),
            now,
        },
        Command::Batch {
            chains: vec![
                vec![
                    Command::AllocateVmid {
                        vm: "edge-1".into(),
                        avoid: vec![2000],
                        now,
                    },
                    Command::AllocateIps {
                        vm: "edge-1".into(),
                        now,
                    },
                ],
                vec![Command::RecordEvent {
                    level: EventLevel::Info,
                    kind: EventKind::Vm,
                    subject: "edge-1".into(),
                    message: "batched".into(),
                    now,
                }],
            ],
        },
        // Encoding v2: an operator's labels on pve-b, and a host decommissioned.
        Command::SetHostLabels {
            id: 9,
            set: [("rack".to_string(), "r1".to_string())].into(),
            unset: vec![],
            now,
        },
        Command::RegisterHost {
            id: 12,
            name: "pve-old".into(),
            labels: Labels::new(),
            capacity: Capacity {
                cpus: 8,
                memory_mib: 32_768,
            },
            now,
        },
        Command::RemoveHost { id: 12, now },
        // Encoding v2: a read-only dashboard login minted by admin 2 (alice), then redeemed.
        Command::AddDashboardLogin {
            record: protocol::fleet::DashboardLogin {
                id: "abcdefghijkl".into(),
                secret_sha256: "ab".repeat(32),
                issuer: 2,
                read_only: true,
                created_at: now,
                expires_at: now + 900_000,
                used: false,
            },
        },
        Command::UseDashboardLogin {
            id: "abcdefghijkl".into(),
            secret_sha256: "ab".repeat(32),
            now,
        },
    ]
}

/// A fleet file of one pool, range, VIP and VM each (its VM drawing from its pool and range),
/// and a group's replicas (encoding v2).
fn fleet_apply() -> admin::FleetApply {
    let mut vm = VmSpec::new("edge-1", 512);
    vm.vmid_range = Some("edge".into());
    vm.nics = vec![NicSpec {
        ip: Some(NicIp::Pool("edge".into())),
        ..vm_spec().nics[0].clone()
    }];
    vm.cloud_init = Some(Default::default());
    admin::FleetApply {
        pools: vec![IpPoolSpec {
            name: "edge".into(),
            cidr: "10.8.0.0/24".into(),
            gateway: Some("10.8.0.1".into()),
            range_start: "10.8.0.10".into(),
            range_end: "10.8.0.99".into(),
            dns: vec![],
        }],
        vmid_ranges: vec![VmidRangeSpec {
            name: "edge".into(),
            start: 2000,
            end: 2099,
        }],
        vips: vec![VipSpec {
            name: "edge".into(),
            address: "10.8.0.200/24".into(),
            ..vip_spec()
        }],
        settings: None,
        groups: vec![("api".into(), 1)],
        vms: vec![vm],
    }
}

/// The fleet the sample commands of encoding v1 build: what the wire samples show (their
/// bytes at v1 are what the v1 release wrote).
pub fn sample_state() -> FleetState {
    sample_state_at(V1)
}

/// The fleet the sample commands of encoding `version` and before build (each is accepted).
pub fn sample_state_at(version: Version) -> FleetState {
    let mut state = FleetState::new();
    let all = commands();
    // The commands after the first v2 one make the v2 samples: a v1 variant among them (a
    // second host for a relocation) is no part of what the v1 release wrote.
    let first_v2 = all.iter().position(|c| c.since() > V1).unwrap_or(all.len());
    let upto = if version > V1 { all.len() } else { first_v2 };
    let commands = all.into_iter().take(upto).filter(|c| c.since() <= version);
    for (i, cmd) in commands.enumerate() {
        let name = cmd.name();
        let index = u64::try_from(i).expect("few commands") + 1;
        if let CommandReply::Refused(e) = state.apply(index, cmd) {
            panic!("sample command {index} ({name}) was refused: {e}");
        }
    }
    state
}

fn heartbeat() -> Heartbeat {
    Heartbeat {
        host_name: "pve-a".into(),
        labels: [("zone".to_string(), "a".to_string())].into(),
        boot_id: 42,
        seq: 7,
        inventory: Some(Inventory {
            resources: HostResources {
                cpus: 16,
                memory_total_bytes: 64 << 30,
                memory_used_bytes: 8 << 30,
                load_milli: [100, 200, 300],
                disks: vec![],
            },
            vms: vec![ObservedVm {
                vmid: 1001,
                name: "web".into(),
                tags: vec!["pvefleet".into()],
                owned: true,
                status: "running".into(),
                lock: None,
                cpus: 2,
                memory_bytes: 2 << 30,
            }],
            ..Default::default()
        }),
        results: vec![
            CommandResult {
                id: "c1".into(),
                outcome: Ok(CommandOutput::Vm(VmObservation {
                    vmid: 1001,
                    generation: 1,
                    running: true,
                    ips: vec![ip("10.0.0.10")],
                    pending_restart: vec![],
                    digest: "d1".into(),
                })),
            },
            CommandResult {
                id: "c2".into(),
                outcome: Ok(CommandOutput::Deleted { existed: true }),
            },
            CommandResult {
                id: "c3".into(),
                outcome: Ok(CommandOutput::Snapshots(vec![snapshot_info()])),
            },
            CommandResult {
                id: "c4".into(),
                outcome: Err(CommandFailure {
                    kind: FailureKind::Permanent,
                    step: "start".into(),
                    message: "no".into(),
                }),
            },
        ],
        running: vec!["c5".into()],
        leaving: Some(LeaveKind::Reboot),
    }
}

/// A beat carrying the results of a remote migration's target (encoding v2).
fn heartbeat_with_move_results() -> Heartbeat {
    Heartbeat {
        inventory: None,
        results: vec![
            CommandResult {
                id: "o1".into(),
                outcome: Ok(CommandOutput::MigrationTarget(remote_endpoint())),
            },
            CommandResult {
                id: "x1".into(),
                outcome: Ok(CommandOutput::TargetClosed {
                    arrived: true,
                    running: true,
                }),
            },
        ],
        ..heartbeat()
    }
}

fn member_facts() -> admin::MemberFacts {
    admin::MemberFacts {
        node_id: 1,
        version: "0.1.0".into(),
        clock_ms: 1_800_000_000_012,
        certificate_not_after: 1_802_000_000,
        ca_not_after: 2_100_000_000,
    }
}

fn host_diagnosis() -> protocol::agent::HostDiagnosis {
    protocol::agent::HostDiagnosis {
        agent_version: "0.1.0".into(),
        pve: Ok(protocol::agent::PveFacts {
            version: "9.1.1".into(),
            trust: protocol::agent::PveTrust::Fingerprint,
            missing_privileges: Ok(vec![protocol::agent::MissingPrivilege {
                path: "/vms".into(),
                privileges: vec!["VM.Snapshot".into()],
                needed_for: "taking, rolling back and deleting snapshots".into(),
            }]),
            snippet_storages: vec!["local".into()],
        }),
        clock: Some(protocol::agent::ClockOffset {
            ahead_ms: 30_000,
            uncertainty_ms: 2,
        }),
        certificate_not_after: 1_802_000_000,
        ca_not_after: 2_100_000_000,
        missing_capabilities: vec![],
    }
}

fn remote_endpoint() -> protocol::agent::RemoteEndpoint {
    protocol::agent::RemoteEndpoint {
        host: "10.0.0.11".into(),
        port: 8006,
        fingerprint: "AA:BB".into(),
        node: "pve-x".into(),
        token_id: "pvefleet-migrate@pve!vm1001".into(),
        secret: protocol::Secret::new("00000000-0000-0000-0000-000000000000"),
        expires_unix: 1_800_021_600,
    }
}

fn snapshot_info() -> SnapshotInfo {
    SnapshotInfo {
        name: "before".into(),
        description: "before the upgrade".into(),
        parent: None,
        taken_at: Some(1_800_000_000),
        vmstate: false,
    }
}

fn heartbeat_ack() -> HeartbeatAck {
    let state = sample_state();
    let web = state.vm("web").expect("web is in the sample state");
    HeartbeatAck {
        leader: 1,
        term: 3,
        lease_ms: 10_000,
        need_inventory: false,
        acked_results: vec!["c1".into()],
        commands: vec![
            AgentCommand {
                id: "e1".into(),
                op: Op::Ensure(Box::new(EnsureVm {
                    spec: web.spec.clone(),
                    generation: 1,
                    vmid: 1001,
                    ips: web.assignment.ips.clone(),
                    pool_dns: vec!["10.0.0.53".into()],
                    ip_wait_secs: 60,
                    take_over: None,
                })),
            },
            AgentCommand {
                id: "d1".into(),
                op: Op::Delete(DeleteVm {
                    name: "old".into(),
                    vmid: 1002,
                }),
            },
            AgentCommand {
                id: "p1".into(),
                op: Op::Power(PowerOp {
                    name: "web".into(),
                    vmid: 1001,
                    action: PowerAction::Restart { timeout_secs: 60 },
                }),
            },
            AgentCommand {
                id: "s1".into(),
                op: Op::Snapshot(SnapshotOp {
                    name: "web".into(),
                    vmid: 1001,
                    action: SnapshotAction::Create {
                        snapshot: "before".into(),
                        description: "x".into(),
                        vmstate: false,
                    },
                }),
            },
            // Encoding v2 (a v1 agent is never sent one).
            AgentCommand {
                id: "m1".into(),
                op: Op::Migrate(protocol::agent::MigrateOp {
                    name: "web".into(),
                    vmid: 1001,
                    target: "pve-b".into(),
                }),
            },
            AgentCommand {
                id: "o1".into(),
                op: Op::OpenMigrationTarget(protocol::agent::OpenTargetOp {
                    name: "web".into(),
                    vmid: 1001,
                    storages: vec!["local-lvm".into()],
                    bridges: vec!["vmbr0".into()],
                    ttl_secs: 21_600,
                }),
            },
            AgentCommand {
                id: "r1".into(),
                op: Op::RemoteMigrate(protocol::agent::RemoteMigrateOp {
                    name: "web".into(),
                    vmid: 1001,
                    endpoint: remote_endpoint(),
                    target_storage: "local-lvm".into(),
                    target_bridge: "vmbr0:vmbr0".into(),
                }),
            },
            AgentCommand {
                id: "x1".into(),
                op: Op::CloseMigrationTarget(protocol::agent::CloseTargetOp {
                    name: "web".into(),
                    vmid: 1001,
                }),
            },
            AgentCommand {
                id: "v1".into(),
                op: Op::Vacate(DeleteVm {
                    name: "web".into(),
                    vmid: 1001,
                }),
            },
        ],
        // Encoding v2: the answer to a leaving agent.
        leave: Some(LeaveAnswer {
            action: LeaveAction::Drain,
            go: false,
            left: 3,
            message: "draining: 3 guest(s) still on the host".into(),
        }),
        // Encoding v2: the leader's clock, for the agent's clock-offset measurement.
        leader_clock_ms: Some(1_800_000_000_123),
    }
}

fn raft_samples(out: &mut Vec<Golden>) {
    use openraft::error::{InstallSnapshotError, RaftError, SnapshotMismatch};
    use openraft::raft::{
        AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, VoteRequest,
        VoteResponse,
    };
    use openraft::{CommittedLeaderId, EntryPayload, LogId, Membership, SnapshotMeta, Vote};
    use raft::network::messages::{AppendEntriesRpc, InstallSnapshotRpc, VoteRpc};
    use raft::types::Entry;

    let vote = Vote::new_committed(4, 2);
    let log_id = |term, index| LogId::new(CommittedLeaderId::new(term, 1), index);
    let command =
        fleet::state::encode_command(&commands()[0], V1).expect("a sample command encodes");
    let members = std::collections::BTreeMap::from([(
        1,
        raft::MemberNode {
            addr: "10.0.0.1:7400".into(),
        },
    )]);
    let entries = vec![
        Entry {
            log_id: log_id(4, 9),
            payload: EntryPayload::Blank,
        },
        Entry {
            log_id: log_id(4, 10),
            payload: EntryPayload::Normal(raft::Command(command)),
        },
        Entry {
            log_id: log_id(4, 11),
            payload: EntryPayload::Membership(Membership::new(
                vec![BTreeSet::from([1])],
                members.clone(),
            )),
        },
    ];
    rpc(
        out,
        AppendEntriesRpc(AppendEntriesRequest {
            vote,
            prev_log_id: Some(log_id(3, 8)),
            entries,
            leader_commit: Some(log_id(3, 8)),
        }),
        Ok(AppendEntriesResponse::Conflict),
    );
    rpc(
        out,
        VoteRpc(VoteRequest {
            vote,
            last_log_id: Some(log_id(3, 8)),
        }),
        Ok(VoteResponse {
            vote,
            vote_granted: true,
            last_log_id: Some(log_id(3, 8)),
        }),
    );
    rpc(
        out,
        InstallSnapshotRpc(InstallSnapshotRequest {
            vote,
            meta: SnapshotMeta {
                last_log_id: Some(log_id(4, 11)),
                last_membership: openraft::StoredMembership::new(
                    Some(log_id(4, 11)),
                    Membership::new(vec![BTreeSet::from([1])], members),
                ),
                snapshot_id: "4-11".into(),
            },
            offset: 0,
            data: vec![0, 1, 2, 3],
            done: true,
        }),
        Err(RaftError::APIError(InstallSnapshotError::SnapshotMismatch(
            SnapshotMismatch {
                expect: openraft::SnapshotSegmentId {
                    id: "a".into(),
                    offset: 0,
                },
                got: openraft::SnapshotSegmentId {
                    id: "a".into(),
                    offset: 9,
                },
            },
        ))),
    );
}

fn wire_samples(out: &mut Vec<Golden>) {
    raft_samples(out);
    let state = sample_state();
    let view = state.view();
    let web = state.vm("web").expect("web").clone();
    let read = ReadMode::Linearizable;
    let done = admin::Done {};
    let applied = admin::ApplyReply {
        outcome: admin::ApplyOutcome::Updated,
    };

    rpc(
        out,
        JoinRequest {
            token: "pvf1.ab.abc123.secret".into(),
            csr_pem: "-----BEGIN CERTIFICATE REQUEST-----".into(),
            addr: Some("10.0.0.5:7400".into()),
        },
        JoinResponse {
            node_id: 5,
            cert_pem: "cert".into(),
            ca_pem: "ca".into(),
            cluster_id: "lab".into(),
            members: vec![(1, "10.0.0.1:7400".into())],
            ca_key_pem: None,
        },
    );
    rpc(
        out,
        RenewRequest {
            csr_pem: "csr".into(),
        },
        RenewResponse {
            cert_pem: "cert".into(),
        },
    );
    rpc(out, heartbeat(), heartbeat_ack());
    // The results only encoding v2 has (a v1 agent never runs the commands that give them):
    // a beat of their own, so the v1 beat above keeps its bytes.
    out.push(Golden {
        name: "wire.agent.heartbeat.request.moves".into(),
        encode: Box::new(|v| {
            (v > V1).then(|| {
                heartbeat_with_move_results()
                    .encode_at(v)
                    .map_err(|e| e.to_string())
            })
        }),
        reencode: Box::new(|v, bytes| {
            let value = Heartbeat::decode_at(v, bytes).map_err(|e| e.to_string())?;
            value.encode_at(v).map_err(|e| e.to_string())
        }),
    });

    // Encoding v2: a diagnosis asked of an agent, and its answer.
    out.push(Golden {
        name: "wire.agent.heartbeat.response.diagnose".into(),
        encode: Box::new(|v| {
            (v > V1).then(|| {
                let ack = HeartbeatAck {
                    commands: vec![AgentCommand {
                        id: "d1".into(),
                        op: Op::Diagnose(protocol::agent::DiagnoseOp {}),
                    }],
                    ..heartbeat_ack()
                };
                Heartbeat::encode_response_at(&ack, v).map_err(|e| e.to_string())
            })
        }),
        reencode: Box::new(|v, bytes| {
            let value = Heartbeat::decode_response_at(v, bytes).map_err(|e| e.to_string())?;
            Heartbeat::encode_response_at(&value, v).map_err(|e| e.to_string())
        }),
    });
    out.push(Golden {
        name: "wire.agent.heartbeat.request.diagnosis".into(),
        encode: Box::new(|v| {
            (v > V1).then(|| {
                Heartbeat {
                    results: vec![CommandResult {
                        id: "d1".into(),
                        outcome: Ok(CommandOutput::Diagnosis(Box::new(host_diagnosis()))),
                    }],
                    ..heartbeat()
                }
                .encode_at(v)
                .map_err(|e| e.to_string())
            })
        }),
        reencode: Box::new(|v, bytes| {
            let value = Heartbeat::decode_at(v, bytes).map_err(|e| e.to_string())?;
            value.encode_at(v).map_err(|e| e.to_string())
        }),
    });
    let labelled = {
        let mut host = state
            .hosts()
            .values()
            .next()
            .expect("a host in the sample state")
            .clone();
        host.operator_labels = [("rack".to_string(), "r1".to_string())].into();
        host
    };
    rpc(
        out,
        admin::HostLabel {
            host: "pve-b".into(),
            set: [("rack".to_string(), "r1".to_string())].into(),
            unset: vec!["disk".into()],
        },
        admin::HostChanged {
            host: labelled.clone(),
        },
    );
    rpc(
        out,
        admin::HostRemove {
            host: "pve-b".into(),
        },
        admin::HostChanged { host: labelled },
    );
    rpc(out, admin::MemberFactsQuery {}, member_facts());
    rpc(
        out,
        admin::Doctor {},
        admin::DoctorReport {
            leader: 1,
            checked_at_ms: 1_800_000_000_000,
            members: vec![admin::MemberCheck {
                id: 1,
                addr: "10.0.0.1:7400".into(),
                voter: true,
                lag: Some(0),
                facts: Ok(member_facts()),
                clock: Some(protocol::agent::ClockOffset {
                    ahead_ms: -12,
                    uncertainty_ms: 1,
                }),
            }],
            hosts: vec![
                admin::HostCheck {
                    id: 10,
                    name: "pve1".into(),
                    online: true,
                    facts: Ok(host_diagnosis()),
                },
                admin::HostCheck {
                    id: 11,
                    name: "pve2".into(),
                    online: false,
                    facts: Err("host 11's agent has not reported within the lease".into()),
                },
            ],
            findings: vec![admin::Finding {
                severity: admin::Severity::Problem,
                subject: "host pve1".into(),
                check: "privileges".into(),
                message: "the agent's API token on pve1 lacks VM.Snapshot on /vms".into(),
                action: "grant it".into(),
            }],
        },
    );

    rpc(
        out,
        admin::ClusterStatus {},
        admin::ClusterStatusReply {
            cluster_id: "lab".into(),
            node_id: 1,
            leader: Some(1),
            term: 3,
            commit_index: 40,
            applied_index: 40,
            members: vec![admin::MemberStatus {
                id: 1,
                addr: "10.0.0.1:7400".into(),
                role: MemberRole::Voter,
                is_leader: true,
                matched_index: Some(40),
                lag: Some(0),
                versions: Some(V1_RANGE),
            }],
            cluster_version: V1,
        },
    );
    rpc(
        out,
        admin::MemberList { read },
        admin::MemberListReply {
            members: view.members.clone(),
        },
    );
    rpc(out, admin::MemberRemove { id: 4 }, done);
    rpc(
        out,
        admin::MemberPromote {
            id: 2,
            addr: "10.0.0.2:7400".into(),
        },
        admin::MemberPromoteReply {
            role: MemberRole::Voter,
        },
    );
    rpc(
        out,
        admin::MemberReportVersions {
            id: 2,
            versions: V1_RANGE,
        },
        done,
    );
    rpc(
        out,
        admin::HostList {
            read: ReadMode::Stale,
        },
        admin::HostListReply {
            hosts: view.hosts.clone(),
        },
    );
    rpc(
        out,
        admin::SettingsGet { read },
        admin::SettingsReply {
            settings: view.settings.clone(),
        },
    );
    rpc(
        out,
        admin::SettingsPut {
            settings: view.settings.clone(),
        },
        admin::SettingsReply {
            settings: view.settings.clone(),
        },
    );
    rpc(out, admin::FleetGet { read }, view.clone());
    rpc(
        out,
        admin::VmApply { spec: vm_spec() },
        admin::VmApplyReply {
            outcome: admin::ApplyOutcome::Created,
            generation: 1,
        },
    );
    rpc(
        out,
        admin::VmList { read },
        admin::VmListReply {
            vms: view.vms.clone(),
            recoveries: Default::default(),
            migrations: [(
                "web".to_string(),
                protocol::fleet::Migration {
                    from_host: 3,
                    from_node: "pve-a".into(),
                    to_host: 9,
                    to_node: "pve-b".into(),
                    purpose: protocol::fleet::MigrationPurpose::Operator,
                    kind: protocol::fleet::MoveKind::Remote,
                    since: 1_700_000_000_000,
                    source_lost_at: Some(1_700_000_009_000),
                },
            )]
            .into(),
        },
    );
    rpc(
        out,
        admin::VmGet {
            name: "web".into(),
            read,
        },
        web,
    );
    rpc(
        out,
        admin::VmDelete { name: "web".into() },
        admin::VmDeleteReply { removed: false },
    );
    rpc(
        out,
        admin::AllocateVmid { vm: "web".into() },
        admin::AllocateVmidReply { vmid: 1001 },
    );
    rpc(
        out,
        admin::VmExplain { name: "web".into() },
        admin::VmExplainReply {
            vm: "web".into(),
            placed_on: Some("pve-a".into()),
            verdicts: vec![
                admin::PlacementVerdict {
                    host_id: 3,
                    host_name: "pve-a".into(),
                    filter: None,
                    detail: "fits".into(),
                    scores: Some(admin::PlacementScores {
                        avg_cpu: 0.25,
                        max_cpu: 0.5,
                        avg_mem: 0.125,
                        max_mem: 0.75,
                        closeness: 0.875,
                    }),
                },
                admin::PlacementVerdict {
                    host_id: 4,
                    host_name: "pve-b".into(),
                    filter: Some("labels".into()),
                    detail: "zone".into(),
                    scores: None,
                },
            ],
        },
    );
    rpc(
        out,
        admin::VmPower {
            name: "web".into(),
            request_id: "r1".into(),
            action: admin::VmPowerAction::Restart,
        },
        admin::VmPowerReply {
            generation: 2,
            message: "restarted".into(),
        },
    );
    rpc(
        out,
        admin::VmSnapshot {
            name: "web".into(),
            request_id: "r2".into(),
            action: SnapshotAction::Rollback {
                snapshot: "before".into(),
                start: true,
            },
        },
        admin::VmSnapshotReply {
            vm: "web".into(),
            snapshots: vec![snapshot_info()],
        },
    );
    let host = view.hosts.first().cloned().expect("a sample host");
    rpc(
        out,
        admin::HostStatus {},
        admin::HostStatusReply {
            hosts: vec![admin::HostStatusEntry {
                host,
                vm_count: 1,
                vcpus: 2,
                memory_mib: 2048,
                last_seen_ms: Some(1200),
                resources: heartbeat().inventory.map(|i| i.resources),
            }],
        },
    );
    rpc(
        out,
        admin::DashboardLoginCreate {
            read_only: true,
            ttl_secs: Some(900),
            issuer: Some(1),
        },
        admin::DashboardLoginCreated {
            token: "abcdefghijkl.secret".into(),
            expires_at: 1_800_000_900_000,
            read_only: true,
        },
    );
    rpc(
        out,
        admin::DashboardLoginRedeem {
            id: "abcdefghijkl".into(),
            secret_sha256: "ab".repeat(32),
        },
        admin::DashboardLoginRedeemed {
            issuer: 1,
            read_only: true,
        },
    );
    rpc(
        out,
        admin::TokenCreate {
            role: protocol::Role::Agent,
            ttl_secs: Some(3600),
            uses: Some(1),
        },
        admin::TokenCreateReply {
            token: "pvf1.ab.abc123.secret".into(),
            record: token().view(),
        },
    );
    rpc(
        out,
        admin::TokenList { read },
        admin::TokenListReply {
            tokens: view.tokens.clone(),
        },
    );
    rpc(
        out,
        admin::TokenRevoke {
            id: "abc123".into(),
        },
        done,
    );
    rpc(
        out,
        admin::Events {
            since: 0,
            limit: Some(10),
            read,
        },
        admin::EventsReply {
            events: state.events_after(0, Some(5)),
            first_seq: 1,
            last_seq: view.last_event_seq,
        },
    );
    rpc(out, admin::PoolApply { spec: pool_spec() }, applied);
    rpc(
        out,
        admin::PoolList { read },
        admin::PoolListReply {
            pools: view.ip_pools.clone(),
        },
    );
    rpc(out, admin::PoolDelete { name: "lan".into() }, done);
    rpc(
        out,
        admin::AllocateIp {
            pool: "lan".into(),
            owner: "router".into(),
        },
        admin::AllocateIpReply {
            address: ip("10.0.0.11"),
            prefix_len: 24,
            gateway: Some(ip("10.0.0.1")),
        },
    );
    rpc(
        out,
        admin::ReleaseIp {
            pool: "lan".into(),
            address: ip("10.0.0.11"),
        },
        done,
    );
    rpc(out, admin::VmidRangeApply { spec: range_spec() }, applied);
    rpc(
        out,
        admin::VmidRangeList { read },
        admin::VmidRangeListReply {
            ranges: view.vmid_ranges.clone(),
        },
    );
    rpc(
        out,
        admin::VmidRangeDelete {
            name: "prod".into(),
        },
        done,
    );
    rpc(out, admin::VipApply { spec: vip_spec() }, applied);
    rpc(
        out,
        admin::VipList { read },
        admin::VipListReply {
            vips: view.vips.clone(),
        },
    );
    rpc(out, admin::VipDelete { name: "api".into() }, done);
    let admins = sample_state_at(protocol::version::ADMINS);
    let alice = admins
        .admin(2)
        .cloned()
        .expect("alice is in the v2 sample state");
    rpc(
        out,
        admin::AdminList { read },
        admin::AdminListReply {
            admins: admins.admins().cloned().collect(),
        },
    );
    rpc(
        out,
        admin::AdminAdd {
            name: "alice".into(),
            csr_pem: "-----BEGIN CERTIFICATE REQUEST-----".into(),
            ttl_secs: Some(86_400),
        },
        admin::AdminAddReply {
            record: alice,
            cert_pem: "cert".into(),
        },
    );
    rpc(out, admin::AdminRevoke { id: 1 }, done);
    let vip = protocol::fleet::Vip {
        spec: vip_spec_checked(),
        generation: 1,
        owner: Some(3),
        epoch: 2,
        standby: Some(4),
    };
    rpc(
        out,
        admin::VipStatus {
            name: Some("api".into()),
        },
        admin::VipStatusReply {
            vips: vec![admin::VipStatusEntry {
                vip,
                owner_name: Some("pve-a".into()),
                since: Some(NOW),
                held: true,
                simulated: false,
                hosts: vec![admin::VipHostStatus {
                    id: 3,
                    host: "pve-a".into(),
                    priority: 1,
                    eligible: false,
                    why_not: Some("its agent is stopping".into()),
                    simulated: false,
                    renewed_ms_ago: Some(40),
                }],
            }],
        },
    );
    rpc(
        out,
        admin::VipMove {
            name: "api".into(),
            host: "pve-a".into(),
        },
        admin::VipMoveReply { owner: 3, epoch: 3 },
    );
    rpc(
        out,
        admin::VmMigrate {
            name: "web".into(),
            to: Some("pve-b".into()),
        },
        admin::VmMigrateReply {
            from: "pve-a".into(),
            to: "pve-b".into(),
            chosen: String::new(),
            since_event_seq: 41,
        },
    );
    rpc(
        out,
        admin::VmMigratePlan {
            name: "db".into(),
            to: None,
        },
        admin::VmMigratePlanReply {
            vm: "db".into(),
            to: Some("pve-c".into()),
            why: "best of 1 eligible host".into(),
            with: vec!["cache".into()],
            verdicts: vec![
                admin::PlacementVerdict {
                    host_id: 5,
                    host_name: "pve-c".into(),
                    filter: None,
                    detail: String::new(),
                    scores: Some(admin::PlacementScores {
                        avg_cpu: 0.25,
                        max_cpu: 0.5,
                        avg_mem: 0.125,
                        max_mem: 0.75,
                        closeness: 0.875,
                    }),
                },
                admin::PlacementVerdict {
                    host_id: 4,
                    host_name: "pve-b".into(),
                    filter: Some("memory".into()),
                    detail: "needs 64 GiB, 60 GiB left".into(),
                    scores: None,
                },
            ],
        },
    );
    rpc(
        out,
        admin::RebalancePlan {},
        admin::RebalancePlanReply {
            moves: vec![admin::RebalanceMove {
                vm: "web".into(),
                from: "pve-a".into(),
                to: "pve-b".into(),
                spread_before: 42.5,
                spread_after: 12.25,
            }],
            settings: protocol::fleet::Rebalancing {
                enabled: true,
                hold_s: 120,
                ..protocol::fleet::Rebalancing::default()
            },
        },
    );
    rpc(
        out,
        admin::HostMaintenance {
            host: "pve-a".into(),
            action: admin::MaintenanceAction::Enable,
        },
        admin::HostMaintenanceReply {
            host: "pve-a".into(),
            state: HostState::Maintenance,
            left: vec![admin::GuestLeft {
                vm: "web".into(),
                why: "moving to pve-b".into(),
            }],
            away: vec!["db".into()],
        },
    );
    let claims = vec![
        protocol::agent::VipClaim {
            name: "api".into(),
            epoch: 1,
            standby: false,
            held: true,
        },
        protocol::agent::VipClaim {
            name: "dns".into(),
            epoch: 4,
            standby: true,
            held: false,
        },
    ];
    rpc(
        out,
        protocol::agent::VipRenew {
            claims: claims.clone(),
            reports: vec![
                protocol::agent::VipReport {
                    name: "api".into(),
                    ready: Ok(()),
                },
                protocol::agent::VipReport {
                    name: "dns".into(),
                    ready: Err("interface vmbr9 does not exist on this host".into()),
                },
            ],
            simulated: false,
            leaving: true,
        },
        protocol::agent::VipRenewReply {
            vouches: vec![
                protocol::agent::VipVouch {
                    name: "api".into(),
                    outcome: Ok(400),
                },
                protocol::agent::VipVouch {
                    name: "dns".into(),
                    outcome: Err("no VIP named \"dns\"".into()),
                },
            ],
            candidacies: vec![protocol::agent::VipCandidacy {
                name: "api".into(),
                address: "10.0.0.200/24".into(),
                interface: "vmbr0".into(),
                owner: Some(3),
                epoch: 1,
                standby: Some(4),
                claimed: true,
                vouching: Some((3, 1)),
                owner_held: true,
                checks: vip_spec_checked().checks,
            }],
            members: vec![
                protocol::agent::VipMember {
                    id: 1,
                    addr: "10.0.0.1:7400".into(),
                },
                protocol::agent::VipMember {
                    id: 2,
                    addr: "10.0.0.2:7400".into(),
                },
            ],
        },
    );
    rpc(
        out,
        protocol::agent::VipRelease { claims },
        protocol::agent::VipReleased {},
    );
    rpc(
        out,
        fleet_apply(),
        admin::FleetApplyReply {
            pools: vec![admin::ApplyOutcome::Created],
            vmid_ranges: vec![admin::ApplyOutcome::Unchanged],
            vips: vec![admin::ApplyOutcome::Updated],
            settings: Some(admin::ApplyOutcome::Unchanged),
            deleted: vec![admin::MemberDeleted {
                name: "api-2".into(),
                removed: false,
            }],
            vms: vec![admin::VmApplyReply {
                outcome: admin::ApplyOutcome::Created,
                generation: 1,
            }],
        },
    );
}

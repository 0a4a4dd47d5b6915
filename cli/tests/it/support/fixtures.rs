//! Hand-built protocol values for the output tests, and the helpers that render them at a
//! fixed clock (2025-03-01T12:00:00Z) with host 3 named `pve1`.

use std::collections::BTreeMap;
use std::net::IpAddr;

use cli::output::{Context, EventsPage, OutputFormat, Render, render};
use protocol::Role;
use protocol::admin::{ClusterStatusReply, EventsReply, MemberStatus};
use protocol::fleet::{
    AllocationOwner, Assignment, Condition, ConditionKind, Event, EventKind, EventLevel,
    IpAllocation, IpPool, MemberRole, NicAddress, TokenView, Vip, VmPhase, VmRecord, VmStatus,
    VmidAllocation, VmidRange,
};
use protocol::spec::{
    CloneMode, DiskOptions, DiskSpec, IpPoolSpec, NicIp, NicModel, NicSpec, TemplateSpec, VipSpec,
    VipSpecV1, VmSpec, VmidRangeSpec,
};

/// 2025-03-01T12:00:00Z.
pub(crate) const NOW: u64 = 1_740_830_400_000;
pub(crate) const MINUTE: u64 = 60_000;
pub(crate) const HOUR: u64 = 60 * MINUTE;
pub(crate) const DAY: u64 = 24 * HOUR;

pub(crate) fn ctx() -> Context {
    let mut ctx = Context::at(NOW);
    ctx.hosts = BTreeMap::from([(3, "pve1".to_string())]);
    ctx
}

pub(crate) fn table<T: Render>(value: &T) -> String {
    render(value, OutputFormat::Table, &ctx()).unwrap()
}

/// The JSON document, parsed back (one document, newline-terminated).
pub(crate) fn json_of<T: Render>(value: &T) -> serde_json::Value {
    let text = render(value, OutputFormat::Json, &ctx()).unwrap();
    assert!(text.ends_with("}\n"), "{text}");
    serde_json::from_str(&text).unwrap()
}

pub(crate) fn ip(text: &str) -> IpAddr {
    text.parse().unwrap()
}

pub(crate) fn status() -> ClusterStatusReply {
    let member = |id, addr: &str, role, is_leader, matched, lag| MemberStatus {
        id,
        addr: addr.into(),
        role,
        is_leader,
        matched_index: matched,
        lag,
        // The learner has not reported its build yet.
        versions: (role == MemberRole::Voter).then(protocol::version::VersionRange::this_build),
    };
    ClusterStatusReply {
        cluster_id: "lab".into(),
        node_id: 1,
        leader: Some(1),
        term: 7,
        commit_index: 1042,
        applied_index: 1041,
        cluster_version: protocol::Version(2),
        members: vec![
            member(
                1,
                "10.0.0.1:7400",
                MemberRole::Voter,
                true,
                Some(1042),
                Some(0),
            ),
            member(
                2,
                "10.0.0.2:7400",
                MemberRole::Voter,
                false,
                Some(1040),
                Some(2),
            ),
            member(4, "[fd00::4]:7400", MemberRole::Learner, false, None, None),
        ],
    }
}

pub(crate) fn web_1() -> VmRecord {
    let mut spec = VmSpec::new("web-1", 2048);
    spec.cores = 2;
    spec.template = Some(TemplateSpec {
        name: Some("debian-12".into()),
        vmid: None,
        clone: CloneMode::Linked,
        storage: None,
    });
    spec.disks = vec![DiskSpec {
        slot: "scsi0".into(),
        storage: Some("local-lvm".into()),
        size_gib: 20,
        options: DiskOptions {
            ssd: true,
            discard: true,
            ..DiskOptions::default()
        },
    }];
    spec.nics = vec![NicSpec {
        model: NicModel::Virtio,
        bridge: "vmbr0".into(),
        vlan: Some(20),
        mac: None,
        firewall: false,
        mtu: None,
        ip: Some(NicIp::Pool("lan".into())),
    }];
    spec.ha = protocol::spec::HaSpec::started();
    VmRecord {
        spec,
        generation: 3,
        created_at: NOW - 3 * DAY,
        updated_at: NOW - 2 * HOUR,
        deleting: false,
        assignment: Assignment {
            host: Some(3),
            vmid: Some(100),
            ips: vec![NicAddress {
                nic: 0,
                pool: "lan".into(),
                address: ip("10.0.0.10"),
                prefix_len: 24,
                gateway: Some(ip("10.0.0.1")),
            }],
        },
        status: VmStatus {
            phase: VmPhase::Running,
            conditions: vec![Condition {
                kind: ConditionKind::Running,
                status: true,
                reason: "Started".into(),
                message: String::new(),
                since: NOW - 90 * MINUTE,
            }],
            current_host: Some(3),
            ips: vec![ip("10.0.0.10")],
            message: String::new(),
            observed_generation: 2,
            updated_at: NOW - 5 * MINUTE,
        },
    }
}

pub(crate) fn db_1() -> VmRecord {
    VmRecord {
        spec: VmSpec::new("db-1", 1536),
        generation: 1,
        created_at: NOW - 45_000,
        updated_at: NOW - 45_000,
        deleting: true,
        assignment: Assignment::default(),
        status: VmStatus::default(),
    }
}

pub(crate) fn tokens() -> Vec<TokenView> {
    let token = |id: &str, role, created, expires, uses_left, revoked| TokenView {
        id: id.into(),
        role,
        created_at: created,
        expires_at: expires,
        uses_left,
        revoked,
    };
    vec![
        token(
            "a1b2c3",
            Role::Agent,
            NOW - HOUR,
            NOW + 23 * HOUR,
            None,
            false,
        ),
        token(
            "d4e5f6",
            Role::Coordinator,
            NOW - 3 * DAY,
            NOW - 2 * DAY,
            Some(1),
            false,
        ),
        token(
            "g7h8i9",
            Role::Agent,
            NOW - 10 * MINUTE,
            NOW + DAY,
            Some(0),
            false,
        ),
        token(
            "j0k1l2",
            Role::Coordinator,
            NOW - 5 * MINUTE,
            NOW + HOUR,
            Some(2),
            true,
        ),
    ]
}

pub(crate) fn pool() -> IpPool {
    IpPool {
        spec: IpPoolSpec {
            name: "lan".into(),
            cidr: "10.0.0.0/24".into(),
            gateway: Some("10.0.0.1".into()),
            range_start: "10.0.0.10".into(),
            range_end: "10.0.0.200".into(),
            dns: vec!["10.0.0.2".into(), "10.0.0.3".into()],
        },
        allocations: BTreeMap::from([
            (
                ip("10.0.0.10"),
                IpAllocation {
                    owner: AllocationOwner::Vm("web-1".into()),
                    nic: Some(0),
                    at: NOW - DAY,
                },
            ),
            (
                ip("10.0.0.11"),
                IpAllocation {
                    owner: AllocationOwner::External("test-1".into()),
                    nic: None,
                    at: NOW - HOUR,
                },
            ),
        ]),
    }
}

pub(crate) fn v6_pool() -> IpPool {
    IpPool {
        spec: IpPoolSpec {
            name: "v6".into(),
            cidr: "fd00::/64".into(),
            gateway: None,
            range_start: "fd00::100".into(),
            range_end: "fd00::1ff".into(),
            dns: Vec::new(),
        },
        allocations: BTreeMap::new(),
    }
}

pub(crate) fn range() -> VmidRange {
    VmidRange {
        spec: VmidRangeSpec {
            name: "default".into(),
            start: 100,
            end: 999,
        },
        allocations: BTreeMap::from([(
            100,
            VmidAllocation {
                owner: AllocationOwner::Vm("web-1".into()),
                at: NOW - DAY,
            },
        )]),
    }
}

pub(crate) fn vips() -> Vec<Vip> {
    vec![
        Vip {
            spec: VipSpec::from(VipSpecV1 {
                name: "api".into(),
                address: "10.0.0.5/24".into(),
                interface: "vmbr0".into(),
                hosts: Vec::new(),
            }),
            generation: 1,
            owner: Some(3),
            epoch: 4,
            standby: None,
        },
        Vip {
            spec: VipSpec::from(VipSpecV1 {
                name: "dns".into(),
                address: "10.0.0.6/24".into(),
                interface: "vmbr0".into(),
                hosts: vec!["pve1".into(), "pve2".into()],
            }),
            generation: 2,
            owner: None,
            epoch: 0,
            standby: None,
        },
    ]
}

pub(crate) fn events() -> EventsPage {
    let event = |seq, at, level, kind, subject: &str, message: &str| Event {
        seq,
        at,
        level,
        kind,
        subject: subject.into(),
        message: message.into(),
    };
    EventsPage {
        since: 0,
        reply: EventsReply {
            events: vec![
                event(
                    41,
                    NOW - 2 * HOUR,
                    EventLevel::Info,
                    EventKind::Vm,
                    "web-1",
                    "created",
                ),
                event(
                    42,
                    NOW - 30_000,
                    EventLevel::Warning,
                    EventKind::VmidRange,
                    "default",
                    "90% allocated",
                ),
            ],
            first_seq: 41,
            last_seq: 42,
        },
    }
}

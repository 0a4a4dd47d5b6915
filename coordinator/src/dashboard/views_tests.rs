//! The pages' contents from hand-made pictures: grouping, attention, escaping.

use protocol::admin::{ClusterStatusReply, HostStatusEntry};
use protocol::fleet::{
    Assignment, Capacity, Host, HostState, PVE_CLUSTER_LABEL, VmPhase, VmRecord, VmStatus,
};
use protocol::spec::VmSpec;

use super::pages::{self, Page};
use super::snapshot::Snapshot;
use super::views;

fn host(id: u64, name: &str, cluster: Option<&str>, state: HostState) -> HostStatusEntry {
    HostStatusEntry {
        host: Host {
            id,
            name: name.into(),
            labels: cluster
                .map(|c| [(PVE_CLUSTER_LABEL.to_string(), c.to_string())].into())
                .unwrap_or_default(),
            capacity: Capacity {
                cpus: 16,
                memory_mib: 65_536,
            },
            state,
            registered_at: 0,
            state_since: 0,
            state_reason: format!("{name} <reason>"),
            facts: None,
            operator_labels: Default::default(),
        },
        vm_count: 1,
        vcpus: 4,
        memory_mib: 16_384,
        last_seen_ms: Some(10),
        resources: None,
    }
}

fn vm(name: &str, host: u64, phase: VmPhase, description: &str) -> VmRecord {
    let mut spec = VmSpec::new(name, 1024);
    spec.description = description.into();
    VmRecord {
        spec,
        generation: 1,
        created_at: 0,
        updated_at: 0,
        deleting: false,
        assignment: Assignment {
            host: Some(host),
            vmid: Some(100),
            ips: Vec::new(),
        },
        status: VmStatus {
            phase,
            current_host: Some(host),
            message: if phase == VmPhase::Failed {
                "start failed".into()
            } else {
                String::new()
            },
            ..VmStatus::default()
        },
    }
}

fn picture() -> Snapshot {
    Snapshot {
        taken_at: 1_800_000_000_000,
        status: Some(ClusterStatusReply {
            cluster_id: "lab".into(),
            node_id: 1,
            leader: Some(1),
            term: 3,
            commit_index: 10,
            applied_index: 10,
            members: Vec::new(),
            cluster_version: protocol::version::CURRENT,
        }),
        hosts: vec![
            host(4, "pve-a", Some("east"), HostState::Online),
            host(5, "pve-b", Some("west"), HostState::Fenced),
            host(6, "pve-c", Some("east"), HostState::Maintenance),
        ],
        hosts_live: true,
        vms: vec![
            vm("web-1", 4, VmPhase::Running, "<script>alert(1)</script>"),
            vm("db-1", 5, VmPhase::Failed, ""),
        ],
        ..Snapshot::default()
    }
}

#[test]
fn hosts_are_grouped_by_pve_cluster_and_problems_come_first() {
    let s = picture();
    let o = views::overview(&s);
    let groups: Vec<(&str, Vec<&str>)> = o
        .groups
        .iter()
        .map(|g| {
            (
                g.name.as_str(),
                g.tiles.iter().map(|t| t.name.as_str()).collect(),
            )
        })
        .collect();
    assert_eq!(
        groups,
        vec![("east", vec!["pve-a", "pve-c"]), ("west", vec!["pve-b"])]
    );
    assert_eq!((o.hosts_online, o.hosts_total), (1, 3));
    assert_eq!((o.vms_running, o.vms_total), (1, 2));
    let levels: Vec<&str> = o.attention.iter().map(|a| a.level).collect();
    assert_eq!(levels, vec!["crit", "crit", "warn"], "{:?}", o.attention);
    assert!(o.attention[0].text.contains("pve-b is fenced"));
    assert!(o.attention[1].text.contains("db-1 failed: start failed"));
    assert!(o.attention[2].text.contains("pve-c is maintenance"));
}

#[test]
fn no_leader_is_the_first_thing_shown() {
    let mut s = picture();
    if let Some(st) = s.status.as_mut() {
        st.leader = None;
    }
    let a = views::attention(&s);
    assert!(a[0].text.starts_with("no Raft leader"), "{a:?}");
    let html = pages::live_html(&Page::Overview, &s, true, &(String::new(), Vec::new()))
        .expect("a page")
        .expect("renders");
    assert!(html.contains("NO QUORUM"));
}

#[test]
fn names_reasons_and_descriptions_are_escaped() {
    let s = picture();
    let html = pages::live_html(
        &Page::Guest("web-1".into()),
        &s,
        true,
        &(String::new(), Vec::new()),
    )
    .expect("a page")
    .expect("renders");
    assert!(
        html.contains("&#60;script&#62;alert(1)&#60;/script&#62;")
            || html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
        "{html}"
    );
    assert!(!html.contains("<script>"), "{html}");
    let overview = pages::live_html(&Page::Overview, &s, true, &(String::new(), Vec::new()))
        .expect("a page")
        .expect("renders");
    assert!(!overview.contains("<reason>"), "{overview}");
}

#[test]
fn a_read_only_page_offers_no_action() {
    let s = picture();
    let draw = |can_act| {
        pages::live_html(
            &Page::Guest("web-1".into()),
            &s,
            can_act,
            &(String::new(), Vec::new()),
        )
        .expect("a page")
        .expect("renders")
    };
    assert!(draw(true).contains("act-stop"));
    assert!(!draw(false).contains("act-stop"));
}

#[test]
fn unknown_guests_and_hosts_are_no_page() {
    let s = picture();
    let none = (String::new(), Vec::new());
    assert!(pages::live_html(&Page::Guest("nope".into()), &s, true, &none).is_none());
    assert!(pages::live_html(&Page::Host("nope".into()), &s, true, &none).is_none());
}

#[test]
fn paths_parse_to_pages_and_back() {
    let q = |pairs: &[(&str, &str)]| {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<Vec<_>>()
    };
    assert_eq!(Page::parse("/", &[]), Some(Page::Overview));
    assert_eq!(
        Page::parse("/guests/web%201", &[]),
        Some(Page::Guest("web 1".into()))
    );
    assert_eq!(Page::Guest("web 1".into()).href(), "/guests/web%201");
    assert_eq!(Page::Host("pve-a".into()).href(), "/hosts/pve-a");
    let events = Page::parse("/events", &q(&[("kind", "vm"), ("subject", "web")]));
    let Some(Page::Events(filter)) = &events else {
        panic!("{events:?}")
    };
    assert_eq!(
        (filter.kind.as_str(), filter.subject.as_str()),
        ("vm", "web")
    );
    assert_eq!(Page::parse("/guests/a/b", &[]), None);
    assert_eq!(Page::parse("/etc/passwd", &[]), None);
}

use super::*;
use protocol::fleet::Capacity;

const CFG: LivenessConfig = LivenessConfig::DEFAULT;
const NO_HOLDS: BTreeMap<NodeId, u64> = BTreeMap::new();

fn host(id: NodeId, state: HostState) -> Host {
    Host {
        id,
        name: format!("pve{id}"),
        labels: Default::default(),
        capacity: Capacity {
            cpus: 8,
            memory_mib: 32_768,
        },
        state,
        registered_at: 0,
        state_since: 0,
        state_reason: String::new(),
        facts: None,
        operator_labels: Default::default(),
    }
}

fn hosts(list: &[(NodeId, HostState)]) -> BTreeMap<NodeId, Host> {
    list.iter().map(|&(id, s)| (id, host(id, s))).collect()
}

fn seen(list: &[(NodeId, u64, Option<u64>)]) -> BTreeMap<NodeId, Sighting> {
    list.iter()
        .map(|&(id, beat, ack)| {
            (
                id,
                Sighting {
                    last_beat_ms: beat,
                    last_ack_ms: ack,
                },
            )
        })
        .collect()
}

fn at(leading_since_ms: u64, now_ms: u64) -> Watch {
    Watch {
        leading_since_ms,
        now_ms,
        heard_elsewhere: Default::default(),
    }
}

#[test]
fn the_default_wait_is_lease_plus_drift_plus_margin() {
    assert_eq!(CFG.fence_wait_ms(), 11_000);
    assert!(CFG.check().is_ok());
    let bad = LivenessConfig {
        unreachable_after_ms: 10_000,
        ..CFG
    };
    assert!(bad.check().unwrap_err().contains("below the lease"));
}

#[test]
fn silence_makes_a_host_unreachable_after_the_threshold_and_not_before() {
    // (state, last beat, now, becomes unreachable)
    let table = [
        (HostState::Online, 1_000, 3_999, false),
        (HostState::Online, 1_000, 4_000, true),
        (HostState::Joining, 1_000, 4_000, true),
        (HostState::Maintenance, 1_000, 60_000, false),
        (HostState::Fenced, 1_000, 60_000, false),
        (HostState::Removed, 1_000, 60_000, false),
    ];
    for (state, beat, now, expected) in table {
        let out = plan(
            &hosts(&[(7, state)]),
            &seen(&[(7, beat, Some(beat))]),
            &NO_HOLDS,
            &at(0, now),
            &CFG,
        );
        assert_eq!(!out.is_empty(), expected, "{state} beat {beat} now {now}");
        if expected {
            assert_eq!(out[0].to, HostState::Unreachable);
            assert_eq!(out[0].expected, state);
            assert!(
                out[0].reason.contains("no heartbeat for 3.0 s"),
                "{}",
                out[0].reason
            );
        }
    }
}

#[test]
fn a_host_that_left_cleanly_is_fenced_only_once_its_hold_ended() {
    let h = hosts(&[(7, HostState::Unreachable), (8, HostState::Unreachable)]);
    let s = seen(&[(7, 5_000, Some(5_100)), (8, 5_000, Some(5_100))]);
    // Host 7 was granted a 60 s hold: 5.1 s + 60 s × 1.05 + 0.5 s; host 8 a standard lease.
    let holds = BTreeMap::from([(7, 60_000)]);
    let out = plan(&h, &s, &holds, &at(0, 16_100), &CFG);
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(out[0].host, 8);
    assert!(
        plan(&h, &s, &holds, &at(0, 68_599), &CFG)
            .iter()
            .all(|t| t.host != 7)
    );
    let out = plan(&h, &s, &holds, &at(0, 68_600), &CFG);
    assert!(out.iter().any(|t| t.host == 7 && t.to == HostState::Fenced));
    assert!(
        out.iter()
            .any(|t| t.host == 7 && t.reason.contains("lease 60.0 s")),
        "{out:?}"
    );
    // A new leader counts the hold from its election.
    assert!(
        plan(&h, &BTreeMap::new(), &holds, &at(50_000, 60_999), &CFG)
            .iter()
            .all(|t| t.host != 7)
    );
    // A hold shorter than the heartbeat lease changes nothing.
    let short = BTreeMap::from([(8, 1_000)]);
    assert!(plan(&h, &s, &short, &at(0, 16_099), &CFG).is_empty());
}

#[test]
fn an_unreachable_host_is_fenced_exactly_when_the_proof_holds() {
    let h = hosts(&[(7, HostState::Unreachable)]);
    let s = seen(&[(7, 5_000, Some(5_100))]);
    assert!(plan(&h, &s, &NO_HOLDS, &at(0, 16_099), &CFG).is_empty());
    let out = plan(&h, &s, &NO_HOLDS, &at(0, 16_100), &CFG);
    assert_eq!(out.len(), 1);
    assert_eq!(
        (out[0].expected, out[0].to),
        (HostState::Unreachable, HostState::Fenced)
    );
    assert!(
        out[0].reason.starts_with("lease expired"),
        "{}",
        out[0].reason
    );
    assert!(out[0].reason.contains("5 % drift"), "{}", out[0].reason);
}

#[test]
fn a_new_leader_waits_a_whole_fence_wait_for_hosts_it_never_acknowledged() {
    let h = hosts(&[(1, HostState::Online), (2, HostState::Unreachable)]);
    // Leading since 50 s, never heard from either host.
    let out = plan(&h, &BTreeMap::new(), &NO_HOLDS, &at(50_000, 52_999), &CFG);
    assert!(out.is_empty(), "{out:?}");
    let out = plan(&h, &BTreeMap::new(), &NO_HOLDS, &at(50_000, 53_000), &CFG);
    assert_eq!(out.len(), 1);
    assert_eq!((out[0].host, out[0].to), (1, HostState::Unreachable));
    assert!(out[0].reason.contains("became leader"), "{}", out[0].reason);
    assert!(
        plan(&h, &BTreeMap::new(), &NO_HOLDS, &at(50_000, 60_999), &CFG)
            .iter()
            .all(|t| t.to != HostState::Fenced)
    );
    let out = plan(&h, &BTreeMap::new(), &NO_HOLDS, &at(50_000, 61_000), &CFG);
    assert!(out.iter().any(|t| t.host == 2 && t.to == HostState::Fenced));
    // A beat heard but never acknowledged (no quorum confirmed) proves nothing either.
    let s = seen(&[(2, 51_000, None)]);
    assert!(
        plan(&h, &s, &NO_HOLDS, &at(50_000, 60_999), &CFG)
            .iter()
            .all(|t| t.to != HostState::Fenced)
    );
}

/// Rule 3 as a property: whenever `plan` fences a host, every lease the host could still hold
/// has ended in real time, whoever granted it, for any agent clock running up to the drift
/// slower than real time, and whatever the network delay between send and acknowledgement.
#[test]
fn fencing_never_precedes_the_end_of_any_lease_the_host_may_hold() {
    let lease = CFG.lease_ms;
    // Agent clock rates (agent ms per real ms): exact, and slower by the drift the design
    // allows (5 %), fixed here rather than read from the config, so a config without drift or
    // margin fails this test.
    let rates = [(1000_u64, 1000_u64), (1000, 1050)];
    let h = hosts(&[(7, HostState::Unreachable)]);
    let mut fenced_checks = 0;
    for leading_since in [0_u64, 3_000, 20_000] {
        for send in (0..30_000).step_by(700) {
            for delay in [0_u64, 5, 400, 1_900] {
                let ack = send + delay;
                // Acknowledged by this leader (after it started) or by an earlier one.
                let by_me = ack >= leading_since;
                let s = if by_me {
                    seen(&[(7, send + delay / 2, Some(ack))])
                } else {
                    BTreeMap::new()
                };
                for &(agent, real) in &rates {
                    // The lease ends `lease` agent-ms after the send: in real ms, lease × real / agent.
                    let end_real = send + lease * real / agent;
                    for now in (ack..ack + 2 * lease).step_by(97) {
                        let now = now.max(leading_since);
                        let out = plan(&h, &s, &NO_HOLDS, &at(leading_since, now), &CFG);
                        if out.iter().any(|t| t.to == HostState::Fenced) {
                            fenced_checks += 1;
                            assert!(
                                end_real <= now,
                                "fenced at {now} while a lease sent at {send} (acked {ack}, \
                                 leader since {leading_since}, rate {agent}/{real}) lasts to \
                                 {end_real}"
                            );
                        }
                    }
                }
            }
        }
    }
    assert!(
        fenced_checks > 1_000,
        "the property was exercised: {fenced_checks}"
    );
}

#[test]
fn a_host_that_beats_again_comes_back_online_with_its_reason() {
    let table = [
        (HostState::Joining, Some("reporting")),
        (HostState::Unreachable, Some("heartbeats resumed")),
        (HostState::Fenced, Some("back after fencing")),
        (HostState::Online, None),
        (HostState::Maintenance, None),
        (HostState::Removed, None),
    ];
    for (state, reason) in table {
        let t = back_online(3, state);
        assert_eq!(t.as_ref().map(|t| t.to), reason.map(|_| HostState::Online));
        if let (Some(t), Some(r)) = (t, reason) {
            assert_eq!(t.expected, state);
            assert!(t.reason.starts_with(r), "{}", t.reason);
        }
    }
}

#[test]
fn seconds_and_percentages_read_well() {
    assert_eq!(secs(3_000), "3.0 s");
    assert_eq!(secs(11_249), "11.2 s");
    assert_eq!(permille_as_percent(50), "5");
    assert_eq!(permille_as_percent(25), "2.5");
}

#[test]
fn a_new_leader_gives_hosts_it_hears_by_their_renewals_time_to_find_it() {
    let h = hosts(&[
        (1, HostState::Online),
        (2, HostState::Online),
        (3, HostState::Online),
    ]);
    // Leading since 50 s; host 1 beat this leader, hosts 2 and 3 did not yet; host 2's agent
    // renews its VIP leases here, host 3's is silent.
    let s = seen(&[(1, 50_500, Some(50_510))]);
    let mut w = at(50_000, 53_000);
    w.heard_elsewhere = [1, 2].into_iter().collect();
    let out = plan(&h, &s, &NO_HOLDS, &w, &CFG);
    assert_eq!(
        out.iter().map(|t| t.host).collect::<Vec<_>>(),
        [3],
        "only the host nobody hears: {out:?}"
    );
    // Host 2 never finds the leader: unreachable once the grace is over, well before the
    // fence proof (11 s after the election).
    w.now_ms = 50_000 + CFG.new_leader_grace_ms() - 1;
    assert!(
        !plan(&h, &s, &NO_HOLDS, &w, &CFG)
            .iter()
            .any(|t| t.host == 2)
    );
    w.now_ms = 50_000 + CFG.new_leader_grace_ms();
    let out = plan(&h, &s, &NO_HOLDS, &w, &CFG);
    assert!(
        out.iter()
            .any(|t| t.host == 2 && t.to == HostState::Unreachable)
    );
    assert!(CFG.new_leader_grace_ms() < CFG.fence_wait_ms());
    // A host that beat this leader and stopped gets no grace, renewals or not: its beats fail,
    // its lease runs out.
    let mut w = at(50_000, 53_600);
    w.heard_elsewhere = [1].into_iter().collect();
    let out = plan(&h, &s, &NO_HOLDS, &w, &CFG);
    assert!(
        out.iter()
            .any(|t| t.host == 1 && t.to == HostState::Unreachable)
    );
}

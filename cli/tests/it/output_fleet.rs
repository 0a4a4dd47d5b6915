//! What `pvefleet` prints about the cluster itself, as golden text: `cluster status`,
//! `member ls|add|remove`, `token create|ls|revoke` and `events`, as tables (aligned, ages
//! against a fixed clock) and as JSON documents (the protocol types' own field names), from
//! hand-built protocol values.

use crate::support::fixtures::*;
use cli::join_command;
use cli::output::{MemberAdded, MemberRemoved, TokenRevoked};
use protocol::admin::{MemberListReply, TokenCreateReply, TokenListReply};
use protocol::fleet::{Member, MemberRole};
use serde_json::json;

#[test]
fn cluster_status_shows_the_raft_view_and_each_members_progress() {
    assert_eq!(
        table(&status()),
        "\
cluster:          lab
leader:           1 (10.0.0.1:7400)
term:             7
commit index:     1042
applied index:    1041
cluster version:  v2
answered by:      member 1

ID   ADDRESS          ROLE      LEADER   MATCHED   LAG   ENCODINGS
1    10.0.0.1:7400    voter     yes      1042      0     v1..=v2
2    10.0.0.2:7400    voter              1040      2     v1..=v2
4    [fd00::4]:7400   learner            -         -     -
"
    );
    assert_eq!(
        json_of(&status()),
        json!({
            "cluster_id": "lab", "node_id": 1, "leader": 1, "term": 7,
            "commit_index": 1042, "applied_index": 1041, "cluster_version": 2,
            "members": [
                {"id": 1, "addr": "10.0.0.1:7400", "role": "voter", "is_leader": true,
                 "matched_index": 1042, "lag": 0,
                 "versions": {"oldest": 1, "newest": 2}},
                {"id": 2, "addr": "10.0.0.2:7400", "role": "voter", "is_leader": false,
                 "matched_index": 1040, "lag": 2,
                 "versions": {"oldest": 1, "newest": 2}},
                {"id": 4, "addr": "[fd00::4]:7400", "role": "learner", "is_leader": false,
                 "matched_index": null, "lag": null, "versions": null},
            ]
        })
    );
}

#[test]
fn cluster_status_without_a_leader_says_so_and_what_to_do() {
    let mut s = status();
    s.node_id = 2;
    s.leader = None;
    for m in &mut s.members {
        m.is_leader = false;
        m.matched_index = None;
        m.lag = None;
    }
    let text = table(&s);
    assert!(
        text.starts_with(
            "cluster:          lab\n\
             leader:           none known (an election may be in progress; retry shortly)\n"
        ),
        "{text}"
    );
    assert!(
        text.ends_with("(replication progress is known on the leader only)\n"),
        "{text}"
    );
    assert_eq!(json_of(&s)["leader"], json!(null));
}

#[test]
fn member_list() {
    let members = MemberListReply {
        members: vec![
            Member {
                id: 1,
                addr: "10.0.0.1:7400".into(),
                role: MemberRole::Voter,
            },
            Member {
                id: 4,
                addr: "[fd00::4]:7400".into(),
                role: MemberRole::Learner,
            },
        ],
    };
    assert_eq!(
        table(&members),
        "\
ID   ADDRESS          ROLE
1    10.0.0.1:7400    voter
4    [fd00::4]:7400   learner
"
    );
    assert_eq!(
        json_of(&members),
        json!({"members": [
            {"id": 1, "addr": "10.0.0.1:7400", "role": "voter"},
            {"id": 4, "addr": "[fd00::4]:7400", "role": "learner"},
        ]})
    );
}

#[test]
fn token_list_shows_each_tokens_state_and_never_a_secret() {
    let list = TokenListReply { tokens: tokens() };
    assert_eq!(
        table(&list),
        "\
ID       ROLE          AGE   EXPIRES   USES LEFT   STATE
a1b2c3   agent         60m   in 23h    unlimited   active
d4e5f6   coordinator   3d    2d ago    1           expired
g7h8i9   agent         10m   in 24h    0           used up
j0k1l2   coordinator   5m    in 60m    2           revoked
"
    );
    assert_eq!(
        json_of(&list)["tokens"][1],
        json!({"id": "d4e5f6", "role": "coordinator", "created_at": NOW - 3 * DAY,
               "expires_at": NOW - 2 * DAY, "uses_left": 1, "revoked": false})
    );
}

#[test]
fn token_create_prints_the_token_once_with_its_expiry() {
    let created = TokenCreateReply {
        token: "pvf1.abc.a1b2c3.s3cr3t".into(),
        record: tokens()[0].clone(),
    };
    assert_eq!(
        table(&created),
        "\
token:    pvf1.abc.a1b2c3.s3cr3t
id:       a1b2c3
role:     agent
expires:  2025-03-02T11:00:00Z (in 23h)
uses:     unlimited

The token is shown only now (the cluster keeps its hash): hand it to the joining node.
Revoke it with `pvefleet token revoke a1b2c3`.
"
    );
    assert_eq!(
        json_of(&created),
        json!({
            "token": "pvf1.abc.a1b2c3.s3cr3t",
            "record": {"id": "a1b2c3", "role": "agent", "created_at": NOW - HOUR,
                       "expires_at": NOW + 23 * HOUR, "uses_left": null, "revoked": false}
        })
    );
}

#[test]
fn events_say_which_asked_for_entries_are_no_longer_kept() {
    assert_eq!(
        table(&events()),
        "\
(events 1-40 are no longer kept: the event log keeps only the newest)
SEQ   AGE   LEVEL     KIND         SUBJECT   MESSAGE
41    2h    info      vm           web-1     created
42    30s   warning   vmid_range   default   90% allocated
"
    );
    // The JSON is the reply itself: `since` is the caller's own argument.
    assert_eq!(
        json_of(&events()),
        json!({
            "events": [
                {"seq": 41, "at": NOW - 2 * HOUR, "level": "info", "kind": "vm",
                 "subject": "web-1", "message": "created"},
                {"seq": 42, "at": NOW - 30_000, "level": "warning", "kind": "vmid_range",
                 "subject": "default", "message": "90% allocated"}
            ],
            "first_seq": 41,
            "last_seq": 42
        })
    );
    let mut caught_up = events();
    caught_up.since = 42;
    caught_up.reply.events.clear();
    assert_eq!(
        table(&caught_up),
        "no events after 42 (follow with `pvefleet events --since 42`)\n"
    );
}

#[test]
fn member_and_token_changes() {
    let removed = MemberRemoved { removed: 3 };
    assert_eq!(
        table(&removed),
        "member 3 removed: it left Raft and its certificate is refused from now on; stop its \
         process and delete its data directory\n"
    );
    assert_eq!(json_of(&removed), json!({"removed": 3}));
    let revoked = TokenRevoked {
        revoked: "a1b2c3".into(),
    };
    assert_eq!(
        table(&revoked),
        "token a1b2c3 revoked: no node can join with it any more\n"
    );
    assert_eq!(json_of(&revoked), json!({"revoked": "a1b2c3"}));
}

#[test]
fn member_add_prints_the_exact_join_command() {
    let token = "pvf1.abc.a1b2c3.s3cr3t";
    let added = MemberAdded {
        token: token.into(),
        token_id: "a1b2c3".into(),
        expires_at: NOW + HOUR,
        join_addr: "10.0.0.1:7400".into(),
        command: join_command("10.0.0.1:7400", None, None),
    };
    assert_eq!(
        table(&added),
        "\
Created a one-use coordinator join token (id a1b2c3, expires 2025-03-01T13:00:00Z, in 60m):

  pvf1.abc.a1b2c3.s3cr3t

It hands the cluster CA key to the node that joins with it: pass it on privately.
Run this on the new member's host (replace any placeholder in capitals) and paste the token when it asks (or pipe it in; never put it in a command line):

  pvefleet-coordinator join --token-file - 10.0.0.1:7400 --listen HOST:PORT

then start it as `join` says (with the package: `systemctl enable --now pvefleet-coordinator`): it joins as a learner and becomes a voter once it has caught up (`pvefleet cluster status`).
The token is shown only now; revoke it with `pvefleet token revoke a1b2c3`.
"
    );
    assert_eq!(
        json_of(&added),
        json!({
            "token": token, "token_id": "a1b2c3", "expires_at": NOW + HOUR,
            "join_addr": "10.0.0.1:7400",
            "command": "pvefleet-coordinator join --token-file - 10.0.0.1:7400 \
                        --listen HOST:PORT"
        })
    );
    assert!(!format!("{added:?}").contains("s3cr3t"));
}

#[test]
fn join_commands_quote_what_a_shell_would_mangle() {
    assert_eq!(
        join_command(
            "[fd00::1]:7400",
            Some(std::path::Path::new("/srv/pve fleet/m4")),
            Some("[fd00::4]:7400"),
        ),
        "pvefleet-coordinator join --token-file - '[fd00::1]:7400' \
         --data-dir '/srv/pve fleet/m4' --listen '[fd00::4]:7400'"
    );
    assert_eq!(
        join_command("a:1", Some(std::path::Path::new("it's")), Some("b:2")),
        r"pvefleet-coordinator join --token-file - a:1 --data-dir 'it'\''s' --listen b:2"
    );
}

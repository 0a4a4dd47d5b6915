//! The executor journal across a clean close and reopen, and under concurrency: what an agent
//! that stopped mid-command, or was flooded with retries of one command id, finds when it comes
//! back.
//!
//! These are not crash tests: dropping the journal flushes sled, so they pass with every explicit
//! flush removed. Durability across a SIGKILL is checked by `journal_durability.rs`.

use std::collections::BTreeMap;

use node_agent::{Begin, Journal, JournalError, TypedJournal};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
enum Command {
    CloneVm {
        template: u32,
        vmid: u32,
        name: String,
    },
    StartVm {
        vmid: u32,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
enum Outcome {
    Ok {
        upid: String,
        config: BTreeMap<String, String>,
    },
    Failed {
        message: String,
    },
}

#[tokio::test]
async fn results_survive_a_clean_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let journal = Journal::open(dir.path()).unwrap();
        assert_eq!(journal.begin("cmd-1", b"fp").await.unwrap(), Begin::Run);
        journal.finish("cmd-1", b"stored result").await.unwrap();
    }
    let journal = Journal::open(dir.path()).unwrap();
    assert_eq!(
        journal.begin("cmd-1", b"fp").await.unwrap(),
        Begin::Done(b"stored result".to_vec())
    );
}

#[tokio::test]
async fn closing_after_begin_leaves_the_command_in_doubt_after_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let journal = Journal::open(dir.path()).unwrap();
        assert_eq!(journal.begin("cmd-1", b"fp").await.unwrap(), Begin::Run);
        // Dropped without finish: the agent stopped while executing.
    }
    let journal = Journal::open(dir.path()).unwrap();
    assert_eq!(journal.begin("cmd-1", b"fp").await.unwrap(), Begin::InDoubt);
    assert_eq!(
        journal.begin("cmd-1", b"fp").await.unwrap(),
        Begin::InProgress
    );
    journal
        .resolve_in_doubt("cmd-1", b"observed on host")
        .await
        .unwrap();
    drop(journal);

    let journal = Journal::open(dir.path()).unwrap();
    assert_eq!(
        journal.begin("cmd-1", b"fp").await.unwrap(),
        Begin::Done(b"observed on host".to_vec())
    );
}

#[tokio::test]
async fn fingerprint_conflict_survives_a_clean_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let journal = Journal::open(dir.path()).unwrap();
        journal.begin("cmd-1", b"first").await.unwrap();
    }
    let journal = Journal::open(dir.path()).unwrap();
    let err = journal.begin("cmd-1", b"second").await.unwrap_err();
    assert!(matches!(err, JournalError::Conflict { .. }), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_begins_of_one_id_let_exactly_one_task_run() {
    let dir = tempfile::tempdir().unwrap();
    let journal = Journal::open(dir.path()).unwrap();
    let tasks: Vec<_> = (0..32)
        .map(|_| {
            let journal = journal.clone();
            tokio::spawn(async move { journal.begin("same-id", b"fp").await })
        })
        .collect();
    let mut outcomes = Vec::new();
    for task in tasks {
        outcomes.push(task.await.unwrap().unwrap());
    }
    let runs = outcomes.iter().filter(|o| **o == Begin::Run).count();
    assert_eq!(runs, 1, "{outcomes:?}");
    assert!(
        outcomes
            .iter()
            .all(|o| *o == Begin::Run || *o == Begin::InProgress),
        "{outcomes:?}"
    );
}

#[tokio::test]
async fn typed_journal_answers_a_repeated_command_with_the_decoded_result() {
    let dir = tempfile::tempdir().unwrap();
    let command = Command::CloneVm {
        template: 9000,
        vmid: 101,
        name: "web-1".to_owned(),
    };
    let outcome = Outcome::Ok {
        upid: "UPID:pve1:00001234:00005678:6560A1B2:qmclone:9000:root@pam:".to_owned(),
        config: BTreeMap::from([("cores".to_owned(), "2".to_owned())]),
    };
    {
        let journal = TypedJournal::<Command, Outcome>::new(Journal::open(dir.path()).unwrap());
        assert_eq!(journal.begin("c-1", &command).await.unwrap(), Begin::Run);
        journal.finish("c-1", &outcome).await.unwrap();
    }
    let journal = TypedJournal::<Command, Outcome>::new(Journal::open(dir.path()).unwrap());
    assert_eq!(
        journal.begin("c-1", &command).await.unwrap(),
        Begin::Done(outcome)
    );
    let err = journal
        .begin("c-1", &Command::StartVm { vmid: 101 })
        .await
        .unwrap_err();
    assert!(matches!(err, JournalError::Conflict { .. }), "{err}");
}

#[tokio::test]
async fn typed_journal_fingerprints_equal_commands_equally() {
    let a = Command::StartVm { vmid: 7 };
    let fp = TypedJournal::<Command, Outcome>::fingerprint(&a).unwrap();
    assert_eq!(
        fp,
        TypedJournal::<Command, Outcome>::fingerprint(&a.clone()).unwrap()
    );
    assert_ne!(
        fp,
        TypedJournal::<Command, Outcome>::fingerprint(&Command::StartVm { vmid: 8 }).unwrap()
    );
}

#[tokio::test]
async fn typed_in_doubt_resolution_stores_a_typed_result() {
    let dir = tempfile::tempdir().unwrap();
    let command = Command::StartVm { vmid: 5 };
    {
        let journal = TypedJournal::<Command, Outcome>::new(Journal::open(dir.path()).unwrap());
        assert_eq!(journal.begin("s-5", &command).await.unwrap(), Begin::Run);
    }
    let journal = TypedJournal::<Command, Outcome>::new(Journal::open(dir.path()).unwrap());
    assert_eq!(
        journal.begin("s-5", &command).await.unwrap(),
        Begin::InDoubt
    );
    let failed = Outcome::Failed {
        message: "VM 5 not running after restart".to_owned(),
    };
    journal.resolve_in_doubt("s-5", &failed).await.unwrap();
    assert_eq!(
        journal.begin("s-5", &command).await.unwrap(),
        Begin::Done(failed)
    );
}

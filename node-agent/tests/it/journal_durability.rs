//! Nothing the executor journal reported durable is lost when the agent is SIGKILLed.
//!
//! A child process (see `lab::crash_child`) runs [`script`] through the real journal with sled's
//! background flush off, acknowledging each step once the journal call returned: `begin` (the
//! "started" mark), `finish`, `resolve_in_doubt`, `prune`. The parent kills it after step `k`
//! (before anything later could flush) or while step `k + 1` runs, reopens the directory and
//! requires exactly what step `k` left (or, in the second case, what `k + 1` left). Removing
//! any of the journal's flushes makes these tests fail (docs/design/durability-tests.md has the
//! record).

use lab::crash_child::{self, CrashChild, KillPoint};

use std::collections::BTreeMap;
use std::path::Path;

use node_agent::{Begin, Journal};
use tempfile::TempDir;

/// The child-mode test's path in this binary, as libtest names it.
const CHILD_TEST: &str = "journal_durability::journal_child";

/// Every id the script uses; each has its own fingerprint.
const IDS: [&str; 4] = ["a", "b", "c", "e"];

/// One journal operation that reports itself durable when it returns.
#[derive(Clone, Copy, Debug)]
enum Step {
    /// A first `begin`: the id must come back started (in doubt), never unknown.
    Begin(&'static str),
    Finish(&'static str, &'static str),
    /// Abandon a running id, take it back in doubt, and resolve it by "observation".
    Resolve(&'static str, &'static str),
    Prune(usize),
}

/// What a reopened journal answers for an id.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Known {
    /// Never begun (or pruned): it would run.
    Unknown,
    /// Begun without a result: in doubt.
    Started,
    /// Finished with this result (the script's results are text).
    Done(String),
}

fn script() -> Vec<Step> {
    vec![
        Step::Begin("a"),
        Step::Finish("a", "result-a"),
        Step::Begin("b"),
        Step::Begin("c"),
        Step::Finish("c", "result-c"),
        Step::Resolve("b", "observed-b"),
        // Keeps only b, the latest finished; drops a and c.
        Step::Prune(1),
        Step::Begin("e"),
    ]
}

fn fingerprint(id: &str) -> Vec<u8> {
    format!("fp-{id}").into_bytes()
}

/// The model: what the journal must answer after `steps`.
fn expected_after(steps: &[Step]) -> BTreeMap<&'static str, Known> {
    let mut known: BTreeMap<&'static str, Known> =
        IDS.iter().map(|id| (*id, Known::Unknown)).collect();
    let mut finished = Vec::new();
    for step in steps {
        match *step {
            Step::Begin(id) => {
                known.insert(id, Known::Started);
            }
            Step::Finish(id, result) | Step::Resolve(id, result) => {
                known.insert(id, Known::Done(result.to_owned()));
                finished.push(id);
            }
            Step::Prune(keep_last) => {
                let stale = finished.len().saturating_sub(keep_last);
                for id in finished.drain(..stale) {
                    known.insert(id, Known::Unknown);
                }
            }
        }
    }
    known
}

/// Runs one step through the journal, as the executor would.
async fn run(step: Step, journal: &Journal) {
    match step {
        Step::Begin(id) => {
            assert_eq!(
                journal.begin(id, &fingerprint(id)).await.unwrap(),
                Begin::Run
            );
        }
        Step::Finish(id, result) => journal.finish(id, result.as_bytes()).await.unwrap(),
        Step::Resolve(id, result) => {
            journal.abandon(id);
            assert_eq!(
                journal.begin(id, &fingerprint(id)).await.unwrap(),
                Begin::InDoubt
            );
            journal
                .resolve_in_doubt(id, result.as_bytes())
                .await
                .unwrap();
        }
        Step::Prune(keep_last) => {
            journal.prune(keep_last).await.unwrap();
        }
    }
}

/// Child mode: runs the script on the directory the parent named, acknowledging every step.
#[tokio::test]
#[ignore = "child mode of the crash tests below, which run it in a process they SIGKILL"]
async fn journal_child() {
    let Some(dir) = crash_child::child_dir() else {
        return;
    };
    // No background flush: only the journal's own flushes may make a step durable.
    let journal = Journal::open_with_periodic_flush(&dir, None).unwrap();
    for (index, step) in script().into_iter().enumerate() {
        run(step, &journal).await;
        if !crash_child::acknowledge_and_wait(index) {
            return;
        }
    }
}

/// What a reopened journal answers for every id (asking is a `begin`, so each id once).
async fn observe(dir: &Path) -> BTreeMap<&'static str, Known> {
    let journal = Journal::open(dir).unwrap();
    let mut known = BTreeMap::new();
    for id in IDS {
        let answer = match journal.begin(id, &fingerprint(id)).await.unwrap() {
            Begin::Run => Known::Unknown,
            Begin::InDoubt => Known::Started,
            Begin::Done(result) => Known::Done(String::from_utf8_lossy(&result).into_owned()),
            Begin::InProgress => panic!("{id} in progress in a fresh process"),
        };
        known.insert(id, answer);
    }
    known
}

/// Kills a child at every step of the script and checks the reopened journal each time.
async fn sweep(kill: KillPoint) {
    let script = script();
    let mut failures = Vec::new();
    for last_acked in 0..script.len() {
        let dir = TempDir::new().unwrap();
        CrashChild::run_to(CHILD_TEST, dir.path(), last_acked, kill)
            .await
            .unwrap();

        let found = observe(dir.path()).await;
        let acked = expected_after(&script[..=last_acked]);
        let next = expected_after(&script[..script.len().min(last_acked + 2)]);
        let ok = match kill {
            KillPoint::AfterAck => found == acked,
            KillPoint::DuringNext => found == acked || found == next,
        };
        if !ok {
            failures.push(format!(
                "killed {kill:?} of step {last_acked} ({:?}): the reopened journal differs from \
                 the acknowledged state: {}",
                script[last_acked],
                differences(&found, &acked).join("; ")
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The ids whose answer after the crash differs from the acknowledged one.
fn differences(found: &BTreeMap<&str, Known>, acked: &BTreeMap<&str, Known>) -> Vec<String> {
    IDS.iter()
        .filter(|id| found.get(*id) != acked.get(*id))
        .map(|id| {
            format!(
                "{id} found {:?} acknowledged {:?}",
                found.get(id),
                acked.get(id)
            )
        })
        .collect()
}

#[tokio::test]
async fn a_sigkill_right_after_any_acknowledged_step_loses_nothing() {
    sweep(KillPoint::AfterAck).await;
}

#[tokio::test]
async fn a_sigkill_during_the_next_step_leaves_the_state_before_or_after_it() {
    sweep(KillPoint::DuringNext).await;
}

#[test]
fn the_model_follows_the_script() {
    let all = expected_after(&script());
    assert_eq!(all["a"], Known::Unknown, "pruned");
    assert_eq!(all["b"], Known::Done("observed-b".to_owned()));
    assert_eq!(all["c"], Known::Unknown, "pruned");
    assert_eq!(all["e"], Known::Started);
}

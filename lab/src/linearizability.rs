//! Whether a concurrent client history is linearizable (the chaos campaign's
//! checker): every operation appears to take effect at one instant between its call and its
//! return, in an order a sequential model accepts. Wing and Gong's search with Lowe's
//! memoization (the algorithm Porcupine and Knossos implement): linearize the first pending
//! call that the model accepts, backtrack when a return is reached with its call not yet
//! linearized, and never explore the same (linearized set, model state) twice.
//!
//! ```text
//!  operations (call, return, input, output) ─▶ per key (P-compositionality: keys are
//!  independent objects) ─▶ events in time order ─▶ search ─▶ Linearizable | Violation | Unknown
//! ```
//!
//! An operation whose outcome the client never learned (it timed out: the write may or may
//! not have been applied) has no return: it may take effect at any time after its call, or
//! never. It is given a return after every event and an output any step accepts.

use std::collections::{BTreeMap, HashSet};
use std::hash::Hash;

/// A sequential specification.
pub trait Model {
    /// The object's state.
    type State: Clone + Eq + Hash;
    /// What an operation asks.
    type Input;
    /// What it answered.
    type Output;

    /// The state before any operation.
    fn init(&self) -> Self::State;

    /// The state after `input` answered `output` (`None`: unknown, the operation did not
    /// return) from `state`, if the model allows it.
    fn step(
        &self,
        state: &Self::State,
        input: &Self::Input,
        output: Option<&Self::Output>,
    ) -> Option<Self::State>;
}

/// One operation of a history, on the observer's clock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Operation<I, O> {
    /// When it was called.
    pub call: u64,
    /// When it returned; `None`: never (its effect is unknown).
    pub ret: Option<u64>,
    /// What it asked.
    pub input: I,
    /// What it answered, if it returned.
    pub output: Option<O>,
}

/// The verdict on a history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Some order of the operations explains every answer.
    Linearizable,
    /// None does: where, for the report.
    Violation(Failure),
    /// The search took more than its budget of steps.
    Unknown,
}

/// Where a history stops being linearizable: every index is into the history given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The operations of the key no order explains.
    pub ops: Vec<usize>,
    /// The longest order the search found, in order: every operation in it took effect, and
    /// none of the others can come next.
    pub linearized: Vec<usize>,
    /// The operation whose return the search could not pass at that point: it had to have
    /// taken effect by then, and no state reached allows it.
    pub blocked: usize,
}

/// What the search found.
enum Found {
    Linearizable,
    /// The deepest dead end: the order so far and the blocked operation (indexes of the
    /// operations searched).
    Stuck(Vec<usize>, usize),
    OutOfBudget,
}

/// The search's budget, in steps (a step linearizes or undoes one operation).
pub const DEFAULT_BUDGET: u64 = 20_000_000;

/// One call or return in time order.
#[derive(Debug, Clone, Copy)]
struct Event {
    op: usize,
    is_call: bool,
}

/// Whether `ops`, all on one object, are linearizable for `model` within `budget` steps.
pub fn check<M: Model>(model: &M, ops: &[Operation<M::Input, M::Output>], budget: u64) -> Verdict {
    match search(model, ops, budget) {
        Found::Linearizable => Verdict::Linearizable,
        Found::Stuck(linearized, blocked) => Verdict::Violation(Failure {
            ops: (0..ops.len()).collect(),
            linearized,
            blocked,
        }),
        Found::OutOfBudget => Verdict::Unknown,
    }
}

/// As [`check`], each key's operations checked alone (independent objects compose: a history
/// is linearizable exactly when each object's is).
pub fn check_by_key<M: Model, K: Ord + Clone>(
    model: &M,
    ops: &[Operation<M::Input, M::Output>],
    key: impl Fn(&M::Input) -> K,
    budget: u64,
) -> Verdict
where
    M::Input: Clone,
    M::Output: Clone,
{
    let mut by_key: BTreeMap<K, Vec<usize>> = BTreeMap::new();
    for (i, op) in ops.iter().enumerate() {
        by_key.entry(key(&op.input)).or_default().push(i);
    }
    let mut unknown = false;
    for indexes in by_key.values() {
        let part: Vec<Operation<M::Input, M::Output>> =
            indexes.iter().map(|&i| ops[i].clone()).collect();
        match search(model, &part, budget) {
            Found::Linearizable => {}
            Found::Stuck(linearized, blocked) => {
                return Verdict::Violation(Failure {
                    ops: indexes.clone(),
                    linearized: linearized.iter().map(|&i| indexes[i]).collect(),
                    blocked: indexes[blocked],
                });
            }
            Found::OutOfBudget => unknown = true,
        }
    }
    if unknown {
        Verdict::Unknown
    } else {
        Verdict::Linearizable
    }
}

/// The search, and its deepest dead end when no order explains the history.
fn search<M: Model>(model: &M, ops: &[Operation<M::Input, M::Output>], budget: u64) -> Found {
    let n = ops.len();
    if n == 0 {
        return Found::Linearizable;
    }
    // Events in time order; at equal times calls first (operations that touch are concurrent:
    // the lenient reading). An unreturned operation returns after everything.
    let end = ops
        .iter()
        .flat_map(|o| [Some(o.call), o.ret])
        .flatten()
        .max()
        .unwrap_or(0)
        .saturating_add(1);
    let mut events: Vec<(u64, bool, Event)> = Vec::with_capacity(2 * n);
    for (i, o) in ops.iter().enumerate() {
        events.push((
            o.call,
            false,
            Event {
                op: i,
                is_call: true,
            },
        ));
        events.push((
            o.ret.unwrap_or(end),
            true,
            Event {
                op: i,
                is_call: false,
            },
        ));
    }
    events.sort_by_key(|(t, is_ret, e)| (*t, *is_ret, e.op));
    // A doubly linked list over the events, index 0 the head sentinel.
    let len = events.len() + 1;
    let mut next: Vec<usize> = (1..=len).collect();
    let mut prev: Vec<usize> = (0..len).map(|i| i.saturating_sub(1)).collect();
    next[len - 1] = usize::MAX;
    let ev = |i: usize| events[i - 1].2;
    let mut ret_of = vec![0usize; n];
    let mut call_of = vec![0usize; n];
    for i in 1..len {
        let e = ev(i);
        if e.is_call {
            call_of[e.op] = i;
        } else {
            ret_of[e.op] = i;
        }
    }
    let unlink = |next: &mut Vec<usize>, prev: &mut Vec<usize>, i: usize| {
        let (p, q) = (prev[i], next[i]);
        next[p] = q;
        if q != usize::MAX {
            prev[q] = p;
        }
    };
    let relink = |next: &mut Vec<usize>, prev: &mut Vec<usize>, i: usize| {
        let (p, q) = (prev[i], next[i]);
        next[p] = i;
        if q != usize::MAX {
            prev[q] = i;
        }
    };
    let mut state = model.init();
    let mut cache: HashSet<(Vec<u64>, M::State)> = HashSet::new();
    let mut stack: Vec<(usize, M::State)> = Vec::new();
    let mut steps = 0u64;
    // The linearized set as bits, kept up to date (a cache key is a copy of it).
    let mut bits = vec![0u64; n.div_ceil(64)];
    let flip = |bits: &mut Vec<u64>, i: usize| bits[i / 64] ^= 1 << (i % 64);
    let mut entry = next[0];
    // The deepest dead end so far: the order then, and the operation it could not pass.
    let mut deepest: Option<(Vec<usize>, usize)> = None;
    while next[0] != usize::MAX {
        steps += 1;
        if steps > budget {
            return Found::OutOfBudget;
        }
        let e = ev(entry);
        if e.is_call {
            let op = &ops[e.op];
            let stepped = model.step(&state, &op.input, op.output.as_ref());
            let mut moved = false;
            if let Some(new_state) = stepped {
                flip(&mut bits, e.op);
                let key = (bits.clone(), new_state.clone());
                if cache.insert(key) {
                    stack.push((e.op, state));
                    state = new_state;
                    unlink(&mut next, &mut prev, call_of[e.op]);
                    unlink(&mut next, &mut prev, ret_of[e.op]);
                    entry = next[0];
                    moved = true;
                } else {
                    flip(&mut bits, e.op);
                }
            }
            if !moved {
                entry = next[entry];
            }
        } else {
            // A return whose call is not linearized: a dead end; undo the last choice.
            if deepest
                .as_ref()
                .is_none_or(|(order, _)| stack.len() >= order.len())
            {
                deepest = Some((stack.iter().map(|(op, _)| *op).collect(), e.op));
            }
            let Some((op, before)) = stack.pop() else {
                let (order, blocked) = deepest.unwrap_or((Vec::new(), e.op));
                return Found::Stuck(order, blocked);
            };
            flip(&mut bits, op);
            state = before;
            relink(&mut next, &mut prev, ret_of[op]);
            relink(&mut next, &mut prev, call_of[op]);
            entry = next[call_of[op]];
        }
    }
    Found::Linearizable
}

/// A map of registers, the model of the campaign's client (writes and reads of keys).
#[derive(Debug, Clone, Copy, Default)]
pub struct Registers;

/// A register operation on one key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegisterOp {
    /// Set the key to the value.
    Write(String, u64),
    /// Read the key.
    Read(String),
}

impl RegisterOp {
    /// The key it is on.
    pub fn key(&self) -> &str {
        match self {
            RegisterOp::Write(k, _) | RegisterOp::Read(k) => k,
        }
    }
}

impl Model for Registers {
    /// The one key's value (checked key by key: [`check_by_key`]); `None`: never written.
    type State = Option<u64>;
    type Input = RegisterOp;
    /// A read's value (`None`: the key is absent); a write answers `None`.
    type Output = Option<u64>;

    fn init(&self) -> Option<u64> {
        None
    }

    fn step(
        &self,
        state: &Option<u64>,
        input: &RegisterOp,
        output: Option<&Option<u64>>,
    ) -> Option<Option<u64>> {
        match input {
            RegisterOp::Write(_, v) => Some(Some(*v)),
            RegisterOp::Read(_) => match output {
                // A read that never returned says nothing.
                None => Some(*state),
                Some(seen) if seen == state => Some(*state),
                Some(_) => None,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(key: &str, v: u64, call: u64, ret: Option<u64>) -> Operation<RegisterOp, Option<u64>> {
        Operation {
            call,
            ret,
            input: RegisterOp::Write(key.into(), v),
            output: ret.map(|_| None),
        }
    }

    fn r(key: &str, seen: Option<u64>, call: u64, ret: u64) -> Operation<RegisterOp, Option<u64>> {
        Operation {
            call,
            ret: Some(ret),
            input: RegisterOp::Read(key.into()),
            output: Some(seen),
        }
    }

    fn verdict(ops: &[Operation<RegisterOp, Option<u64>>]) -> Verdict {
        check_by_key(&Registers, ops, |i| i.key().to_string(), DEFAULT_BUDGET)
    }

    #[test]
    fn porcupines_register_examples() {
        // C0 |---- put 100 ----|, C1 |- get 100 -| inside, C2 |- get 0 -| inside: the get of
        // the old value linearizes before the put, the other after.
        let ok = [
            w("x", 100, 0, Some(100)),
            r("x", Some(100), 25, 75),
            r("x", None, 30, 60),
        ];
        assert_eq!(verdict(&ok), Verdict::Linearizable);
        // The old value read after another read returned the new one: no order explains it.
        let stale = [
            w("x", 100, 0, Some(100)),
            r("x", Some(100), 25, 75),
            r("x", None, 80, 90),
        ];
        assert!(matches!(verdict(&stale), Verdict::Violation(_)));
    }

    #[test]
    fn a_failure_says_how_far_an_order_goes_and_which_operation_has_no_place() {
        // Other keys first: the indexes are the whole history's.
        let ops = [
            w("y", 7, 0, Some(5)),
            w("x", 1, 0, Some(10)),
            r("x", Some(1), 11, 12),
            w("x", 2, 13, Some(20)),
            r("x", Some(1), 21, 22),
            r("x", Some(2), 23, 24),
        ];
        let Verdict::Violation(f) = verdict(&ops) else {
            panic!("the stale read at 21 is explained by no order");
        };
        assert_eq!(f.ops, [1, 2, 3, 4, 5]);
        // Write 1, its read, write 2: then the read of 1 after write 2 returned has no place.
        assert_eq!(f.linearized, [1, 2, 3]);
        assert_eq!(f.blocked, 4);
    }

    #[test]
    fn sequential_histories_follow_the_last_write() {
        let ok = [
            w("x", 1, 0, Some(10)),
            r("x", Some(1), 11, 12),
            w("x", 2, 13, Some(20)),
            r("x", Some(2), 21, 22),
        ];
        assert_eq!(verdict(&ok), Verdict::Linearizable);
        // A write acknowledged, then not seen: lost.
        let lost = [w("x", 1, 0, Some(10)), r("x", None, 11, 12)];
        assert!(matches!(verdict(&lost), Verdict::Violation(f) if f.ops == [0, 1]));
        // A value nobody wrote.
        let invented = [w("x", 1, 0, Some(10)), r("x", Some(7), 11, 12)];
        assert!(matches!(verdict(&invented), Verdict::Violation(_)));
    }

    #[test]
    fn a_write_without_a_return_may_or_may_not_have_happened() {
        let seen = [w("x", 1, 0, None), r("x", Some(1), 50, 60)];
        assert_eq!(verdict(&seen), Verdict::Linearizable);
        let unseen = [w("x", 1, 0, None), r("x", None, 50, 60)];
        assert_eq!(verdict(&unseen), Verdict::Linearizable);
        // But once seen it cannot be unseen.
        let flicker = [
            w("x", 1, 0, None),
            r("x", Some(1), 50, 60),
            r("x", None, 70, 80),
        ];
        assert!(matches!(verdict(&flicker), Verdict::Violation(_)));
    }

    #[test]
    fn keys_are_judged_apart_and_the_violation_names_the_key() {
        let ops = [
            w("a", 1, 0, Some(10)),
            w("b", 2, 0, Some(10)),
            r("a", Some(1), 20, 30),
            r("b", Some(9), 20, 30),
        ];
        assert!(matches!(verdict(&ops), Verdict::Violation(f) if f.ops == [1, 3]));
    }

    #[test]
    fn concurrent_writes_may_land_in_either_order_but_readers_agree() {
        let ops = [
            w("x", 1, 0, Some(100)),
            w("x", 2, 0, Some(100)),
            r("x", Some(2), 110, 120),
            r("x", Some(2), 130, 140),
        ];
        assert_eq!(verdict(&ops), Verdict::Linearizable);
        let disagree = [
            w("x", 1, 0, Some(100)),
            w("x", 2, 0, Some(100)),
            r("x", Some(2), 110, 120),
            r("x", Some(1), 130, 140),
        ];
        assert!(matches!(verdict(&disagree), Verdict::Violation(_)));
    }

    /// Histories made by running a real register with random overlaps: each operation's
    /// instant lies within its call and return, so every one of them is linearizable; then one
    /// read's answer changed to a value written only later, which none is.
    #[test]
    fn random_histories_of_a_real_register_pass_and_a_read_from_the_future_fails() {
        let mut seed = 0x2718_2818_u64;
        let mut rand = move |n: u64| {
            seed = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = seed;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            (z ^ (z >> 31)) % n
        };
        for round in 0..50 {
            let mut value = None;
            let mut ops = Vec::new();
            let mut writes = 0;
            for t in 0..40u64 {
                // The operation takes effect at 100·t; its call and return around it.
                let at = 100 * t;
                let (call, ret) = (at - rand(250).min(at), at + rand(250));
                if rand(2) == 0 {
                    writes += 1;
                    value = Some(writes);
                    ops.push(w("k", writes, call, Some(ret)));
                } else {
                    ops.push(r("k", value, call, ret));
                }
            }
            assert_eq!(verdict(&ops), Verdict::Linearizable, "round {round}");
            // A read that returned before the last write was even called, answering that
            // write's value (values are unique): no order explains it.
            let last = writes;
            let Some(called) = ops
                .iter()
                .find(|o| o.input == RegisterOp::Write("k".into(), last))
                .map(|o| o.call)
            else {
                continue;
            };
            let early = ops.iter().position(|o| {
                matches!(o.input, RegisterOp::Read(_)) && o.ret.is_some_and(|r| r < called)
            });
            if let Some(i) = early {
                ops[i].output = Some(Some(last));
                assert!(
                    matches!(verdict(&ops), Verdict::Violation(_)),
                    "round {round}: a read returned at {:?} saw write {last}, called at {called}",
                    ops[i].ret
                );
            }
        }
    }

    #[test]
    fn a_search_past_its_budget_says_so() {
        let ops: Vec<_> = (0..12).map(|i| w("x", i, 0, Some(100))).collect();
        let mut ops = ops;
        ops.push(r("x", Some(99), 200, 300));
        assert_eq!(verdict(&ops[..1]), Verdict::Linearizable);
        assert_eq!(
            check(&Registers, &ops, 10),
            Verdict::Unknown,
            "12 concurrent writes and an impossible read take more than 10 steps"
        );
        assert!(matches!(
            check(&Registers, &ops, DEFAULT_BUDGET),
            Verdict::Violation(_)
        ));
    }
}

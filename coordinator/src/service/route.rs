//! Where an admin request runs: on the leader (writes, linearizable reads) or locally (stale
//! reads), forwarding from followers at most one hop, and the two leader-side primitives,
//! proposing a command (through the group commit) and confirming a linearizable read.

use std::future::Future;
use std::time::Duration;

use openraft::ServerState;
use protocol::Role;
use transport::{Caller, RemoteError, Rpc, TransportError};

use super::Ctx;
use super::errors::{is_not_leader, read_error, state_error};
use crate::forward::ForwardError;
use fleet::state::{CodecError, Command, CommandReply, FleetState, StateError, encode_command};

/// How many times a request is re-routed after the leader changed under it.
const ROUTE_ATTEMPTS: usize = 4;
/// Pause before re-routing, so a new election can finish.
const REROUTE_PAUSE: Duration = Duration::from_millis(250);
/// Bound on the wait for the local state machine to reach a linearizable read's index.
const READ_APPLY_WAIT: Duration = Duration::from_secs(10);

impl Ctx {
    /// The term this member leads in, if it leads.
    pub(crate) fn leading_term(&self) -> Option<u64> {
        let metrics = self.raft.metrics();
        let m = metrics.borrow();
        (m.state == ServerState::Leader && m.current_leader == Some(self.node_id))
            .then_some(m.current_term)
    }

    /// Runs `local` on the leader: here if this member leads, else forwarded to the leader.
    /// A request that came from another coordinator is not forwarded again (it was forwarded
    /// once already): it is answered `NotLeader` with the hint, and its sender re-routes.
    ///
    /// Failures that prove nothing was applied (`NotLeader`, a dial that sent nothing) are
    /// retried. A forward whose leader lost its leadership or whose reply was lost is
    /// forwarded again (to the next leader, as soon as one is elected) when that is safe
    /// (`Ctx::forward_again_is_safe`: a client's request at a cluster version that
    /// remembers requests), else reported as `Unavailable`.
    pub(crate) async fn on_leader<R, F, Fut>(
        &self,
        caller: &Caller,
        req: R,
        mut local: F,
    ) -> Result<R::Response, RemoteError>
    where
        R: Rpc + Clone,
        F: FnMut(R) -> Fut,
        Fut: Future<Output = Result<R::Response, RemoteError>>,
    {
        let from_member = caller.peer.is_some_and(|p| p.role == Role::Coordinator);
        // Where this request's proposal numbers stand before the work: each local attempt
        // starts from here, so a second one proposes the keys the first did. Numbered on
        // (key 1 after a first attempt's key 0), a retry after a lost lead applied the write
        // twice when the first attempt's entry committed after all (chaos seed 27: an
        // allocation applied twice after a slow leader disk and a leader change).
        let mark = transport::once::position();
        let mut last = None;
        let mut pause = false;
        for _ in 0..ROUTE_ATTEMPTS {
            if pause {
                tokio::time::sleep(REROUTE_PAUSE).await;
            }
            pause = true;
            let leader = self.leader().await?;
            if leader.id == self.node_id {
                if let Some(mark) = mark {
                    transport::once::rewind(mark);
                }
                match local(req.clone()).await {
                    Err(e) if is_not_leader(&e) && !from_member => last = Some(e),
                    other => return other,
                }
                continue;
            }
            if from_member {
                return Err(self.not_leader());
            }
            // A forward to a leader that dies would wait out its whole deadline; Raft
            // notices the loss within an election timeout, so stop waiting then.
            let forwarded = tokio::select! {
                outcome = self.forwarder.call(&leader, &req) => outcome,
                () = self.leader_moved_from(leader.id) => {
                    let lost = RemoteError::unavailable(format!(
                        "{}: leader {} lost its leadership while the request was forwarded to it; \
                         the request may or may not have been applied: check before retrying",
                        R::METHOD,
                        leader.id
                    ));
                    if !self.forward_again_is_safe() {
                        return Err(lost);
                    }
                    // `leader()` waits for the election: no pause before asking it.
                    last = Some(lost);
                    pause = false;
                    continue;
                }
            };
            match forwarded {
                Ok(reply) => return Ok(reply),
                Err(ForwardError::Call(TransportError::Remote(e))) if is_not_leader(&e) => {
                    last = Some(e);
                }
                Err(ForwardError::Call(TransportError::Remote(e))) => return Err(e),
                Err(e @ ForwardError::NotSent { .. }) => {
                    last = Some(RemoteError::unavailable(e.to_string()));
                }
                Err(ForwardError::Call(e)) => {
                    let unanswered = RemoteError::unavailable(format!(
                        "{}: forwarded to leader {} at {} but got no answer ({e}); the request \
                         may or may not have been applied: check before retrying",
                        R::METHOD,
                        leader.id,
                        leader.addr
                    ));
                    if !self.forward_again_is_safe() {
                        return Err(unanswered);
                    }
                    last = Some(unanswered);
                }
            }
        }
        Err(last.unwrap_or_else(|| self.not_leader()))
    }

    /// Whether a request whose forward may have been applied can be forwarded again: it runs
    /// as a client's request (its id travels with the forward) and the cluster tags writes
    /// with request ids, so a second forward that reaches a leader which applied the first
    /// is answered the first reply, not applied again (rule 9, docs/design/coordinator.md).
    /// Without that, the caller is told it may or may not have been applied.
    fn forward_again_is_safe(&self) -> bool {
        transport::once::current().is_some()
            && self
                .read_local(FleetState::cluster_version)
                .is_ok_and(|v| v >= protocol::version::REQUESTS)
    }

    /// Resolves once this member's Raft no longer names `from` as the leader (an election
    /// started or another member won); never resolves while `from` stays leader.
    async fn leader_moved_from(&self, from: transport::NodeId) {
        let mut metrics = self.raft.metrics();
        loop {
            if metrics.borrow().current_leader != Some(from) {
                return;
            }
            if metrics.changed().await.is_err() {
                // Raft shut down: the node is stopping; let the forward finish on its own.
                std::future::pending::<()>().await;
            }
        }
    }

    /// Proposes `cmd` through Raft on this member (the leader) and returns the state
    /// machine's reply; a refusal by the state machine becomes the matching `RemoteError`.
    pub(crate) async fn propose(&self, cmd: &Command) -> Result<CommandReply, RemoteError> {
        self.propose_raw(cmd).await?.map_err(state_error)
    }

    /// Like [`Ctx::propose`], but a refusal by the state machine is returned as it is.
    pub(crate) async fn propose_raw(
        &self,
        cmd: &Command,
    ) -> Result<Result<CommandReply, StateError>, RemoteError> {
        // At the cluster version: every member reads it. A command of a later version is
        // refused until every member runs a build that reads it.
        let cluster = self.read_local(FleetState::cluster_version)?;
        // A write made for a client's request is tagged with it, so a retry of the request
        // (its reply was lost with a leader) is answered without applying it twice.
        let once = transport::once::next_key()
            .filter(|_| cluster >= protocol::version::REQUESTS)
            .map(|(request, seq)| Command::Once {
                request,
                seq,
                now: protocol::time::Now::read().millis,
                command: Box::new(cmd.clone()),
            });
        let cmd = once.unwrap_or_else(|| cmd.clone());
        let bytes = encode_command(&cmd, cluster).map_err(|e| match e {
            e @ CodecError::TooNew { .. } => RemoteError::unavailable(e.to_string()),
            e => RemoteError::internal(format!("encode command: {e}")),
        })?;
        // Alone or in one entry with other clients' writes (group_commit.rs).
        let reply = self.writes.write(cmd, bytes, cluster).await?;
        Ok(reply.into_result())
    }

    /// Confirms with a quorum that this member still leads and waits until its state machine
    /// has applied everything committed before the read: a read after this sees every write
    /// acknowledged before it.
    pub(crate) async fn confirm_linearizable(&self) -> Result<(), RemoteError> {
        let (read_log_id, _applied) = self.raft.get_read_log_id().await.map_err(read_error)?;
        let Some(read) = read_log_id else {
            return Ok(());
        };
        self.raft
            .wait(Some(READ_APPLY_WAIT))
            .applied_index_at_least(Some(read.index), "linearizable read")
            .await
            .map(|_| ())
            .map_err(|e| {
                RemoteError::unavailable(format!(
                    "the state machine did not reach index {} in time: {e}",
                    read.index
                ))
            })
    }
}

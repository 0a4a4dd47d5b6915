//! The client side of the Raft network: openraft's `RaftNetworkFactory`/`RaftNetwork` over
//! `transport`, dialing each member as `PeerIdentity { role: Coordinator, node_id: target }` at
//! its `MemberNode::addr`, so TLS proves the call reached the member openraft meant.

use std::sync::Arc;
use std::time::Duration;

use openraft::error::{InstallSnapshotError, RPCError, RaftError, RemoteError};
use openraft::network::RPCOption;
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::{RaftNetwork, RaftNetworkFactory};
use transport::{Endpoint, Rpc, TransportError};

use crate::network::failure::{call_failed, connection_is_suspect, dial_failed};
use crate::network::messages::{AppendEntriesRpc, InstallSnapshotRpc, VoteRpc};
use crate::network::peers::Peers;
use crate::types::{MemberNode, NodeId, TypeConfig};

/// The Raft network of one member: makes openraft's per-peer clients, which share one cached
/// connection per peer.
#[derive(Clone)]
pub struct Network {
    peers: Arc<Peers>,
}

impl Network {
    /// A network dialing from `endpoint` (this member's endpoint, with its coordinator
    /// certificate: the Raft service admits coordinators only).
    pub fn new(endpoint: Endpoint) -> Network {
        Network {
            peers: Arc::new(Peers::new(endpoint)),
        }
    }
}

/// openraft's client of one peer.
pub struct PeerClient {
    peers: Arc<Peers>,
    target: NodeId,
    node: MemberNode,
}

impl RaftNetworkFactory<TypeConfig> for Network {
    type Network = PeerClient;

    async fn new_client(&mut self, target: NodeId, node: &MemberNode) -> PeerClient {
        // No dial here: openraft makes clients eagerly, the first RPC dials.
        PeerClient {
            peers: Arc::clone(&self.peers),
            target,
            node: node.clone(),
        }
    }
}

impl PeerClient {
    /// Sends `request` and unwraps the peer's openraft answer. `entries` is how many log
    /// entries it carries (for splitting an oversized append).
    async fn call<R, T, E>(
        &self,
        request: R,
        deadline: Duration,
        entries: usize,
    ) -> Result<T, RPCError<NodeId, MemberNode, E>>
    where
        R: Rpc<Response = Result<T, E>>,
        E: std::error::Error,
    {
        let dialed = self
            .peers
            .get(self.target, &self.node.addr)
            .await
            .map_err(|e| dial_failed(&e))?;
        let outcome = dialed.conn.call_with_timeout(&request, deadline).await;
        match &outcome {
            Err(TransportError::Timeout { .. }) => {
                self.peers.timed_out(self.target, dialed.generation);
            }
            Err(_) => {}
            Ok(_) => self.peers.answered(self.target, dialed.generation),
        }
        match outcome {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(raft_error)) => Err(RPCError::RemoteError(RemoteError::new_with_node(
                self.target,
                self.node.clone(),
                raft_error,
            ))),
            Err(e) => {
                if connection_is_suspect(&e) {
                    self.peers.forget(self.target, dialed.generation);
                }
                tracing::debug!(target = self.target, method = R::METHOD, error = %e, "raft rpc failed");
                Err(call_failed(&e, entries))
            }
        }
    }
}

impl RaftNetwork<TypeConfig> for PeerClient {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<NodeId>, RPCError<NodeId, MemberNode, RaftError<NodeId>>>
    {
        let entries = rpc.entries.len();
        self.call(AppendEntriesRpc(rpc), option.hard_ttl(), entries)
            .await
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<
        InstallSnapshotResponse<NodeId>,
        RPCError<NodeId, MemberNode, RaftError<NodeId, InstallSnapshotError>>,
    > {
        // The deadline is openraft's `install_snapshot_timeout`, per chunk.
        self.call(InstallSnapshotRpc(rpc), option.hard_ttl(), 0)
            .await
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<NodeId>,
        option: RPCOption,
    ) -> Result<VoteResponse<NodeId>, RPCError<NodeId, MemberNode, RaftError<NodeId>>> {
        self.call(VoteRpc(rpc), option.hard_ttl(), 0).await
    }
}

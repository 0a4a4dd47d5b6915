//! The server side of the Raft network: the Raft service's handlers, which hand each request to
//! the local openraft node. The transport already admits only coordinator certificates on this
//! service; the handlers also check that the caller's certificate names the node the request
//! speaks for, so one member cannot act as another.

use transport::{Caller, RemoteError, Router, Service};

use crate::network::messages::{AppendEntriesRpc, InstallSnapshotRpc, VoteRpc};
use crate::types::{NodeId, Raft};

/// Adds the Raft service (append entries, vote, snapshot chunks) for `raft` to `router`.
pub fn register(router: &mut Router, raft: Raft) {
    let append = raft.clone();
    router.handle(
        Service::Raft,
        move |caller: Caller, request: AppendEntriesRpc| {
            let raft = append.clone();
            async move {
                check_sender(&caller, request.0.vote.leader_id().voted_for())?;
                Ok(raft.append_entries(request.0).await)
            }
        },
    );
    let vote = raft.clone();
    router.handle(Service::Raft, move |caller: Caller, request: VoteRpc| {
        let raft = vote.clone();
        async move {
            check_sender(&caller, request.0.vote.leader_id().voted_for())?;
            Ok(raft.vote(request.0).await)
        }
    });
    router.handle(
        Service::Raft,
        move |caller: Caller, request: InstallSnapshotRpc| {
            let raft = raft.clone();
            async move {
                check_sender(&caller, request.0.vote.leader_id().voted_for())?;
                Ok(raft.install_snapshot(request.0).await)
            }
        },
    );
}

/// Refuses a request whose vote names another node than the caller's certificate.
fn check_sender(caller: &Caller, claimed: Option<NodeId>) -> Result<(), RemoteError> {
    let certified = caller.peer.map(|p| p.node_id);
    if certified.is_some() && certified == claimed {
        return Ok(());
    }
    Err(RemoteError::unauthorized(format!(
        "a Raft request for node {} came from certificate node {}",
        claimed.map_or_else(|| "none".to_owned(), |id| id.to_string()),
        certified.map_or_else(|| "none".to_owned(), |id| id.to_string()),
    )))
}

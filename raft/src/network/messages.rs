//! The Raft peer RPCs on `Service::Raft`. Each wraps an openraft request; the response carries
//! openraft's own `Result`, so a `RaftError` from the peer reaches the leader as a remote Raft
//! error (never as a network failure, which would make openraft retry a refusal).

use openraft::error::{InstallSnapshotError, RaftError};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use serde::{Deserialize, Serialize};

use crate::types::{NodeId, TypeConfig};

/// Log replication and heartbeats (`Raft::append_entries` on the peer).
#[derive(Debug, Serialize, Deserialize)]
pub struct AppendEntriesRpc(pub AppendEntriesRequest<TypeConfig>);

impl transport::Rpc for AppendEntriesRpc {
    const METHOD: &'static str = "raft.append_entries";
    type Response = Result<AppendEntriesResponse<NodeId>, RaftError<NodeId>>;
}

/// A candidate asking for a vote (`Raft::vote` on the peer).
#[derive(Debug, Serialize, Deserialize)]
pub struct VoteRpc(pub VoteRequest<NodeId>);

impl transport::Rpc for VoteRpc {
    const METHOD: &'static str = "raft.vote";
    type Response = Result<VoteResponse<NodeId>, RaftError<NodeId>>;
}

/// One chunk of a snapshot (`Raft::install_snapshot` on the peer reassembles the chunks and
/// installs the snapshot after the last one). Chunks are `snapshot_max_chunk_size` bytes, far
/// below the transport's frame limit, so snapshots of any size fit.
#[derive(Debug, Serialize, Deserialize)]
pub struct InstallSnapshotRpc(pub InstallSnapshotRequest<TypeConfig>);

impl transport::Rpc for InstallSnapshotRpc {
    const METHOD: &'static str = "raft.install_snapshot";
    type Response =
        Result<InstallSnapshotResponse<NodeId>, RaftError<NodeId, InstallSnapshotError>>;
}

#[cfg(test)]
mod tests {
    use openraft::error::Fatal;
    use openraft::{CommittedLeaderId, EntryPayload, LogId, SnapshotMeta, Vote};
    use serde::de::DeserializeOwned;

    use super::*;
    use crate::types::{Command, Entry};

    const BINCODE: bincode::config::Configuration = bincode::config::standard();

    fn round_trip<T: Serialize + DeserializeOwned>(value: &T) -> T {
        let bytes = bincode::serde::encode_to_vec(value, BINCODE).unwrap();
        bincode::serde::decode_from_slice(&bytes, BINCODE)
            .unwrap()
            .0
    }

    #[test]
    fn raft_requests_and_answers_survive_bincode() {
        let vote = Vote::new_committed(4, 2);
        let entry = Entry {
            log_id: LogId::new(CommittedLeaderId::new(4, 2), 9),
            payload: EntryPayload::Normal(Command(vec![1, 2, 3])),
        };
        let append = AppendEntriesRpc(AppendEntriesRequest {
            vote,
            prev_log_id: Some(LogId::new(CommittedLeaderId::new(3, 1), 8)),
            entries: vec![entry.clone()],
            leader_commit: None,
        });
        let back = round_trip(&append).0;
        assert_eq!(back.vote, vote);
        assert_eq!(back.entries, vec![entry]);

        let chunk = InstallSnapshotRpc(InstallSnapshotRequest {
            vote,
            meta: SnapshotMeta::default(),
            offset: 3 << 20,
            data: vec![7; 1000],
            done: true,
        });
        let back = round_trip(&chunk).0;
        assert_eq!(
            (back.offset, back.data.len(), back.done),
            (3 << 20, 1000, true)
        );

        let refusal: <VoteRpc as transport::Rpc>::Response = Err(RaftError::Fatal(Fatal::Stopped));
        assert_eq!(round_trip(&refusal), refusal);
        let refusal: <InstallSnapshotRpc as transport::Rpc>::Response = Err(RaftError::APIError(
            InstallSnapshotError::SnapshotMismatch(openraft::error::SnapshotMismatch {
                expect: openraft::SnapshotSegmentId {
                    id: "a".into(),
                    offset: 0,
                },
                got: openraft::SnapshotSegmentId {
                    id: "a".into(),
                    offset: 9,
                },
            }),
        ));
        assert_eq!(round_trip(&refusal), refusal);
    }
}

//! etcd as a [`Store`] of the load generator: each client its own gRPC connection to the
//! leader; writes `Put` and `DeleteRange` its key in turn, reads `Range` one key
//! linearizably.

use crate::etcd_api::EtcdClient;
use crate::etcd_cluster::EtcdCluster;
use crate::load::{self, Client, OpKind, Store};

/// A running etcd cluster under its column name.
pub(crate) struct EtcdStore {
    name: String,
    cluster: EtcdCluster,
}

impl EtcdStore {
    /// `cluster` under `name`, with the key the reads read written.
    pub(crate) fn new(
        rt: &tokio::runtime::Runtime,
        name: &str,
        cluster: EtcdCluster,
    ) -> Result<Self, String> {
        rt.block_on(async {
            let mut c = EtcdClient::connect(cluster.leader_url(), cluster.tls()).await?;
            c.put(&load::read_key(), &load::value(0, 0))
                .await
                .map_err(|e| format!("writing the read key: {e}"))
        })?;
        Ok(Self {
            name: name.to_string(),
            cluster,
        })
    }
}

/// One etcd client of a run.
pub(crate) struct EtcdLoad {
    client: EtcdClient,
    kind: OpKind,
    index: usize,
    key: String,
    /// Whether the client's key exists (the next write deletes it).
    written: bool,
}

impl Store for EtcdStore {
    type Client = EtcdLoad;

    fn name(&self) -> &str {
        &self.name
    }

    fn client(&self, rt: &tokio::runtime::Runtime, kind: OpKind, index: usize) -> EtcdLoad {
        let url = self.cluster.leader_url();
        let client = rt
            .block_on(EtcdClient::connect(url, self.cluster.tls()))
            .unwrap_or_else(|e| panic!("{}: {e}", self.name));
        let key = match kind {
            OpKind::Write => load::key(index),
            OpKind::Read => load::read_key(),
        };
        EtcdLoad {
            client,
            kind,
            index,
            key,
            written: false,
        }
    }
}

impl Client for EtcdLoad {
    async fn op(&mut self, seq: u64) {
        match self.kind {
            OpKind::Write if self.written => {
                let reply = self
                    .client
                    .delete(&self.key)
                    .await
                    .unwrap_or_else(|e| panic!("etcd DeleteRange {}: {e}", self.key));
                assert_eq!(reply.deleted, 1, "etcd deleted {}", self.key);
                self.written = false;
            }
            OpKind::Write => {
                let value = load::value(self.index, seq);
                self.client
                    .put(&self.key, &value)
                    .await
                    .unwrap_or_else(|e| panic!("etcd Put {}: {e}", self.key));
                self.written = true;
            }
            OpKind::Read => {
                let reply = self
                    .client
                    .get(&self.key)
                    .await
                    .unwrap_or_else(|e| panic!("etcd Range {}: {e}", self.key));
                assert_eq!(reply.kvs.len(), 1, "etcd Range {}: {reply:?}", self.key);
            }
        }
    }

    async fn close(mut self) {
        // The next run starts from the same state; dropping the channel then closes its
        // HTTP/2 connection.
        if self.written {
            self.client
                .delete(&self.key)
                .await
                .unwrap_or_else(|e| panic!("etcd DeleteRange {}: {e}", self.key));
        }
    }
}

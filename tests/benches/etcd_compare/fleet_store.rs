//! pvefleet as a [`Store`] of the load generator: a 3-voter coordinator cluster of release
//! binaries (started as the coordinator bench starts it, through
//! [`pvefleet_tests::coord_cluster::Cluster`]), each client its own [`AdminClient`] (its own
//! QUIC connection, client certificate, following the leader). Writes allocate an address of
//! the `bench` pool and release it in turn; reads list the VMID ranges linearizably.

use std::net::IpAddr;
use std::time::Duration;

use bootstrap::cli_config::CliConfig;
use client::AdminClient;
use protocol::admin::{AllocateIp, PoolApply, ReadMode, ReleaseIp, VmidRangeList};
use protocol::spec::IpPoolSpec;
use pvefleet_tests::coord_cluster::Cluster;

use crate::load::{self, Client, OpKind, Store};

/// How long one call may take, retries included.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// A running pvefleet cluster. Dropping it kills the members and removes their directories.
pub(crate) struct FleetStore {
    /// Held for its `Drop`: the members run while the store lives.
    _cluster: Cluster,
    config: CliConfig,
}

impl FleetStore {
    /// Founds a member, joins two more, waits for three voters and makes the `bench` pool.
    pub(crate) fn start(rt: &tokio::runtime::Runtime) -> Self {
        let mut cluster = Cluster::found(&[]);
        for _ in 0..2 {
            let token = cluster.coordinator_token();
            let via = cluster.member(0).listen;
            cluster.join(&token, via);
        }
        cluster.wait_status("three voters", Duration::from_secs(90), |v| {
            v["members"]
                .as_array()
                .is_some_and(|m| m.iter().filter(|m| m["role"] == "voter").count() == 3)
        });
        let config = CliConfig::load(&cluster.cli_config).expect("the cluster's CLI config");
        let store = FleetStore {
            _cluster: cluster,
            config,
        };
        let admin = store.admin(rt);
        let pool = PoolApply {
            spec: IpPoolSpec {
                name: load::PREFIX.into(),
                cidr: "10.0.0.0/8".into(),
                gateway: None,
                range_start: "10.0.0.10".into(),
                range_end: "10.255.255.250".into(),
                dns: vec![],
            },
        };
        rt.block_on(admin.call(&pool)).expect("the bench pool");
        rt.block_on(admin.close());
        store
    }

    fn admin(&self, rt: &tokio::runtime::Runtime) -> AdminClient {
        let _inside = rt.enter();
        let material = self.config.load_material().expect("the CLI's certificate");
        AdminClient::new(&material, self.config.coordinators.clone())
            .expect("an admin client")
            .with_timeout(CALL_TIMEOUT)
    }
}

/// One pvefleet client of a run.
pub(crate) struct FleetLoad {
    client: AdminClient,
    kind: OpKind,
    index: usize,
    /// The address this client holds (the next write releases it).
    held: Option<IpAddr>,
}

impl Store for FleetStore {
    type Client = FleetLoad;

    fn name(&self) -> &str {
        "pvefleet"
    }

    fn client(&self, rt: &tokio::runtime::Runtime, kind: OpKind, index: usize) -> FleetLoad {
        FleetLoad {
            client: self.admin(rt),
            kind,
            index,
            held: None,
        }
    }
}

impl FleetLoad {
    async fn release(&self, address: IpAddr) {
        let release = ReleaseIp {
            pool: load::PREFIX.into(),
            address,
        };
        self.client
            .call(&release)
            .await
            .unwrap_or_else(|e| panic!("pvefleet release {address}: {e}"));
    }
}

impl Client for FleetLoad {
    async fn op(&mut self, seq: u64) {
        match (self.kind, self.held.take()) {
            (OpKind::Write, Some(address)) => self.release(address).await,
            (OpKind::Write, None) => {
                let allocate = AllocateIp {
                    pool: load::PREFIX.into(),
                    owner: load::value(self.index, seq),
                };
                let reply = self
                    .client
                    .call(&allocate)
                    .await
                    .unwrap_or_else(|e| panic!("pvefleet allocate: {e}"));
                self.held = Some(reply.address);
            }
            (OpKind::Read, _) => {
                let list = VmidRangeList {
                    read: ReadMode::Linearizable,
                };
                self.client
                    .call(&list)
                    .await
                    .unwrap_or_else(|e| panic!("pvefleet linearizable read: {e}"));
            }
        }
    }

    async fn close(mut self) {
        // The next run starts from the same state; then the connection closes gracefully.
        if let Some(address) = self.held.take() {
            self.release(address).await;
        }
        self.client.close().await;
    }
}

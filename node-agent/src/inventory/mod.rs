//! The host's inventory: the operating system's view ([`host`], sysinfo) and the PVE node's
//! ([`pve_view`]), collected by a [`Collector`] task on its own schedule (and on demand after a
//! command), so a slow PVE never delays a heartbeat. The session reads the latest snapshot
//! from an [`InventoryFeed`] and sends it when [`change::worth_sending`] says so; the fencer
//! reads the running HA guests ([`ha_guests`]) from the same snapshots.
//!
//! ```text
//!  Collector ── every inventory_ms, or refresh() ──▶ HostProbe + read_pve + HA notes ──▶ watch
//!                                                     ──▶ InventoryFeed (session, fencer: latest())
//! ```

pub mod change;
pub mod ha_guests;
pub mod host;
pub mod pve_view;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use protocol::agent::Inventory;
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;

pub use change::{SentInventory, worth_sending};
pub use ha_guests::HaGuests;
pub use host::HostProbe;
pub use pve_view::{PveView, read_pve};

/// An inventory and when it was collected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// The inventory.
    pub inventory: Inventory,
    /// The running HA guests among its VMs, by VMID ([`ha_guests`]).
    pub ha_running: BTreeSet<u32>,
    /// When its collection finished.
    pub collected_at: Instant,
}

/// Collects the whole inventory once: host resources, then the PVE view of `node`.
pub async fn collect(
    client: &pve::Client,
    node: &str,
    probe: &HostProbe,
) -> Result<Inventory, pve::PveError> {
    let resources = probe.sample().await;
    let uptime = sysinfo::System::uptime().unwrap_or(0);
    let view = read_pve(client, node, uptime).await?;
    Ok(Inventory {
        resources,
        pve: view.node,
        storages: view.storages,
        bridges: view.bridges,
        templates: view.templates,
        vms: view.vms,
    })
}

/// The session's side: the latest snapshot, and a way to ask for a fresh one.
#[derive(Debug, Clone)]
pub struct InventoryFeed {
    latest: watch::Receiver<Option<Snapshot>>,
    poke: Arc<Notify>,
}

/// The collecting side of an [`InventoryFeed`].
#[derive(Debug)]
pub struct InventorySender {
    tx: watch::Sender<Option<Snapshot>>,
    poke: Arc<Notify>,
}

/// A connected sender and feed (no snapshot yet).
pub fn feed() -> (InventorySender, InventoryFeed) {
    let (tx, latest) = watch::channel(None);
    let poke = Arc::new(Notify::new());
    (
        InventorySender {
            tx,
            poke: Arc::clone(&poke),
        },
        InventoryFeed { latest, poke },
    )
}

impl InventoryFeed {
    /// The latest snapshot, if one was collected; [`InventoryFeed::changed`] then waits for a
    /// newer one.
    pub fn latest(&mut self) -> Option<Snapshot> {
        self.latest.borrow_and_update().clone()
    }

    /// Resolves when a snapshot newer than the last one [`InventoryFeed::latest`] returned is
    /// published (pending for ever once the collector is gone).
    pub async fn changed(&mut self) {
        if self.latest.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }

    /// Asks the collector for a fresh snapshot now (e.g. after a command changed a VM).
    pub fn refresh(&self) {
        self.poke.notify_one();
    }
}

impl InventorySender {
    /// Publishes `inventory`, collected now, without HA guests.
    pub fn publish(&self, inventory: Inventory) {
        self.publish_with_ha(inventory, BTreeSet::new());
    }

    /// Publishes `inventory`, collected now, whose running HA guests are `ha_running`.
    pub fn publish_with_ha(&self, inventory: Inventory, ha_running: BTreeSet<u32>) {
        self.tx.send_replace(Some(Snapshot {
            inventory,
            ha_running,
            collected_at: Instant::now(),
        }));
    }

    /// Resolves when the feed asks for a refresh.
    pub async fn refresh_requested(&self) {
        self.poke.notified().await;
    }
}

/// Collects the inventory periodically and on request.
#[derive(Debug)]
pub struct Collector {
    client: pve::Client,
    node: String,
    every: Duration,
    probe: HostProbe,
    sender: InventorySender,
}

impl Collector {
    /// Collects `node`'s inventory through `client` every `every`, publishing to `sender`.
    pub fn new(
        client: pve::Client,
        node: impl Into<String>,
        every: Duration,
        sender: InventorySender,
    ) -> Collector {
        Collector {
            client,
            node: node.into(),
            every,
            probe: HostProbe::new(),
            sender,
        }
    }

    /// Collects until `shutdown`. A failed collection is logged and retried on the next round;
    /// the previous snapshot stays published.
    pub async fn run(self, shutdown: CancellationToken) {
        let mut failing = false;
        let mut ha = HaGuests::new();
        loop {
            match collect(&self.client, &self.node, &self.probe).await {
                Ok(inventory) => {
                    if failing {
                        tracing::info!(node = %self.node, "PVE inventory readable again");
                    }
                    failing = false;
                    let ha_running = ha.update(&self.client, &self.node, &inventory.vms).await;
                    self.sender.publish_with_ha(inventory, ha_running);
                }
                Err(e) if !failing => {
                    failing = true;
                    tracing::warn!(node = %self.node, error = %e, "cannot read the PVE inventory; retrying");
                }
                Err(e) => {
                    tracing::debug!(node = %self.node, error = %e, "PVE inventory still unreadable")
                }
            }
            tokio::select! {
                () = shutdown.cancelled() => return,
                () = tokio::time::sleep(self.every) => {}
                () = self.sender.refresh_requested() => {}
            }
        }
    }
}

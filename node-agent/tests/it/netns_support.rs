//! What the VIP tests share: network namespaces of their own (root: CI runs as root), named
//! uniquely per run and deleted on drop even when a test fails half-way through a setup; `ip` to
//! configure them; code run on a thread moved into one, with its own runtime for async code; a
//! PVE-like host whose bridge `vmbr0` has a veth port to a client; and what a namespace's kernel
//! holds, read through rtnetlink.

use std::fs::File;
use std::net::IpAddr;
use std::os::fd::AsFd;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use futures_util::{Stream, TryStreamExt};
use netlink_packet_route::link::{
    BridgePortState, InfoBridgePort, InfoPortData, LinkAttribute, LinkInfo,
};
use netlink_packet_route::neighbour::{NeighbourAddress, NeighbourAttribute};

/// The host's end of the veth pair, a port of its bridge `vmbr0`.
pub(crate) const HOST_PORT: &str = "veth0";
/// The client's end of the veth pair.
pub(crate) const CLIENT_IF: &str = "eth0";
/// How long the host's bridge port may take to forward.
const PATIENCE: Duration = Duration::from_secs(5);

static NEXT: AtomicU32 = AtomicU32::new(0);

/// `ip ARGS`, which must succeed.
pub(crate) fn ip(args: &[&str]) {
    let status = Command::new("ip").args(args).status().expect("run ip");
    assert!(
        status.success(),
        "ip {args:?} failed (the VIP tests need root)"
    );
}

/// `pvf-KIND-PID-N`, a name no other namespace of this run has.
fn unique(kind: &str) -> String {
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("pvf-{kind}-{}-{n}", std::process::id())
}

/// A network namespace, deleted on drop.
pub(crate) struct Netns {
    name: String,
}

impl Netns {
    /// A new namespace, named `pvf-KIND-PID-N`.
    pub(crate) fn new(kind: &str) -> Netns {
        Netns::named(unique(kind))
    }

    fn named(name: String) -> Netns {
        ip(&["netns", "add", &name]);
        Netns { name }
    }

    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// `ip -n NAME ARGS`, which must succeed.
    pub(crate) fn ip(&self, args: &[&str]) {
        ip(&[&["-n", self.name.as_str()], args].concat());
    }

    /// Runs `body` on a thread inside the namespace (processes it spawns are there too).
    pub(crate) fn enter<R: Send>(&self, body: impl FnOnce() -> R + Send) -> R {
        let path = format!("/run/netns/{}", self.name);
        std::thread::scope(|s| {
            s.spawn(move || {
                let ns = File::open(&path).expect("open the namespace");
                rustix::thread::move_into_link_name_space(
                    ns.as_fd(),
                    Some(rustix::thread::LinkNameSpaceType::Network),
                )
                .expect("enter the namespace");
                body()
            })
            .join()
            .expect("the namespace thread")
        })
    }

    /// Runs `body` on a thread inside the namespace, with its own runtime.
    pub(crate) fn run<R: Send>(&self, body: impl AsyncFnOnce() -> R + Send) -> R {
        self.enter(|| block_on(body()))
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .status();
    }
}

/// Runs `future` to its end on a runtime of this thread's own.
pub(crate) fn block_on<F: Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(future)
}

/// Two namespaces, `pvf-KIND-PID-N-h` and `-c`: a host whose bridge `vmbr0` has the veth port
/// [`HOST_PORT`], and a client on its other end, [`CLIENT_IF`]. Every link is up (loopbacks
/// too) and the port forwards; no addresses.
pub(crate) struct Pair {
    pub(crate) host: Netns,
    pub(crate) client: Netns,
}

impl Pair {
    /// The pair, `vmbr0` with the MAC `host_mac` (so that it is known without asking).
    pub(crate) fn new(kind: &str, host_mac: &str) -> Pair {
        let base = unique(kind);
        // One by one, so that whichever were made are deleted should the next fail.
        let host = Netns::named(format!("{base}-h"));
        let client = Netns::named(format!("{base}-c"));
        for ns in [&host, &client] {
            ns.ip(&["link", "set", "lo", "up"]);
        }
        host.ip(&["link", "add", "vmbr0", "type", "bridge"]);
        // An address set by hand stays when ports join (a bridge otherwise takes its lowest).
        host.ip(&["link", "set", "vmbr0", "address", host_mac]);
        host.ip(&[
            "link",
            "add",
            HOST_PORT,
            "type",
            "veth",
            "peer",
            "name",
            CLIENT_IF,
            "netns",
            client.name(),
        ]);
        host.ip(&["link", "set", HOST_PORT, "master", "vmbr0", "up"]);
        host.ip(&["link", "set", "vmbr0", "up"]);
        client.ip(&["link", "set", CLIENT_IF, "up"]);
        host.run(async || wait_until_forwarding(HOST_PORT).await);
        Pair { host, client }
    }
}

/// What one rtnetlink dump, made by `request` on a connection of its own, lists.
pub(crate) async fn dump<T, S>(request: impl FnOnce(&rtnetlink::Handle) -> S) -> Vec<T>
where
    S: Stream<Item = Result<T, rtnetlink::Error>>,
{
    let (connection, handle, _) = rtnetlink::new_connection().unwrap();
    let task = tokio::spawn(connection);
    let all = request(&handle).try_collect().await.unwrap();
    task.abort();
    all
}

/// Waits (boundedly) until bridge port `port` forwards: a frame sent before would be dropped
/// by the bridge, not by anything under test.
async fn wait_until_forwarding(port: &str) {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let links = dump(|h| h.link().get().match_name(port.to_string()).execute()).await;
        let forwarding = links.iter().flat_map(|l| &l.attributes).any(|a| {
            let LinkAttribute::LinkInfo(infos) = a else {
                return false;
            };
            infos.iter().any(|i| {
                matches!(i, LinkInfo::PortData(InfoPortData::BridgePort(port))
                    if port.contains(&InfoBridgePort::State(BridgePortState::Forwarding)))
            })
        });
        if forwarding {
            break;
        }
        assert!(Instant::now() < deadline, "{port} never forwarded");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The link-layer addresses in this namespace's neighbour entries for `address`, in the
/// kernel's order (it reports one only for an entry in a valid state).
pub(crate) async fn neighbour_macs(address: IpAddr) -> Vec<Vec<u8>> {
    let entries = dump(|h| h.neighbours().get().execute()).await;
    entries
        .iter()
        .filter(|entry| {
            entry.attributes.iter().any(|a| match a {
                NeighbourAttribute::Destination(NeighbourAddress::Inet(v4)) => {
                    IpAddr::V4(*v4) == address
                }
                NeighbourAttribute::Destination(NeighbourAddress::Inet6(v6)) => {
                    IpAddr::V6(*v6) == address
                }
                _ => false,
            })
        })
        .filter_map(|entry| {
            entry.attributes.iter().find_map(|a| match a {
                NeighbourAttribute::LinkLayerAddress(mac) => Some(mac.clone()),
                _ => None,
            })
        })
        .collect()
}

//! The VIP gate for real (root: CI runs as root), between two network namespaces the tests make
//! and delete even when a test fails: a PVE-like host with a bridge `vmbr0` carrying the VIPs,
//! an operator's addresses and a TCP listener, and a client on a veth port of the bridge. The
//! client flushes its neighbour entries before every probe, so each probe needs a fresh ARP
//! reply or neighbour advertisement from the host; what the client learned is read through
//! rtnetlink. Every wait is bounded: a probe gives up after [`PATIENCE`].

use std::fs::File;
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use futures_util::TryStreamExt;
use netlink_packet_route::neighbour::{NeighbourAddress, NeighbourAttribute};
use node_agent::vip::gate::{Gate, GateError, TABLE};

static NEXT: AtomicU32 = AtomicU32::new(0);

/// The host's listener (both families) and the client's.
const PORT: u16 = 7700;
const CLIENT_PORT: u16 = 7701;
/// vmbr0's MAC, fixed so the client can be given a static neighbour entry for the VIP.
const HOST_MAC: &str = "02:77:00:00:00:01";
const HOST4: &str = "10.77.0.1";
const VIP4: &str = "10.77.0.10";
const OPERATOR4: &str = "10.77.0.11";
const CLIENT4: &str = "10.77.0.2";
const VIP6: &str = "fd77::10";
const OPERATOR6: &str = "fd77::11";
/// How long a probe waits for a connection: on a veth it takes well under a millisecond.
const PATIENCE: Duration = Duration::from_millis(300);

fn addr(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn ip(args: &[&str]) {
    let status = Command::new("ip").args(args).status().expect("run ip");
    assert!(
        status.success(),
        "ip {args:?} failed (the VIP tests need root)"
    );
}

/// Runs `body` on a thread inside network namespace `ns` (processes it spawns are there too).
fn in_ns<R: Send>(ns: &str, body: impl FnOnce() -> R + Send) -> R {
    let path = format!("/run/netns/{ns}");
    std::thread::scope(|s| {
        s.spawn(move || {
            let file = File::open(&path).expect("open the namespace");
            rustix::thread::move_into_link_name_space(
                file.as_fd(),
                Some(rustix::thread::LinkNameSpaceType::Network),
            )
            .expect("enter the namespace");
            body()
        })
        .join()
        .expect("the namespace thread")
    })
}

/// `nft -j ARGS` in namespace `ns`, parsed (nft's JSON output is its structured interface).
fn nft_json(ns: &str, args: &[&str]) -> serde_json::Value {
    let output = in_ns(ns, || {
        Command::new("nft")
            .arg("-j")
            .args(args)
            .output()
            .expect("run nft")
    });
    assert!(
        output.status.success(),
        "nft {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("nft's JSON")
}

/// Runs an nft script in namespace `ns` (an operator's own tables).
fn nft_script(ns: &str, script: &str) {
    use std::io::Write as _;
    let status = in_ns(ns, || {
        let mut child = Command::new("nft")
            .args(["-f", "-"])
            .stdin(Stdio::piped())
            .spawn()
            .expect("run nft");
        child
            .stdin
            .take()
            .unwrap()
            .write_all(script.as_bytes())
            .unwrap();
        child.wait().unwrap()
    });
    assert!(status.success(), "nft -f: {script}");
}

/// Network namespaces, deleted on drop (even when a test fails half-way through a setup).
struct Namespaces(Vec<String>);

impl Namespaces {
    fn add(&mut self, name: String) -> String {
        ip(&["netns", "add", &name]);
        self.0.push(name.clone());
        name
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        for ns in &self.0 {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
    }
}

/// The host and the client namespaces, joined through the host's bridge.
struct Lan {
    host: String,
    client: String,
    /// The host's listener on every address, port [`PORT`] (non-blocking, drained by probes).
    listener: TcpListener,
    /// The client's listener, port [`CLIENT_PORT`].
    client_listener: TcpListener,
    /// Last, so the listeners are closed first.
    _namespaces: Namespaces,
}

fn listen(ns: &str, port: u16) -> TcpListener {
    in_ns(ns, || {
        let listener = TcpListener::bind(("::", port)).expect("listen");
        listener.set_nonblocking(true).unwrap();
        listener
    })
}

fn drain(listener: &TcpListener) {
    while listener.accept().is_ok() {}
}

impl Lan {
    fn new() -> Lan {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let base = format!("pvf-gate-{}-{n}", std::process::id());
        let mut namespaces = Namespaces(Vec::new());
        let h = namespaces.add(format!("{base}-h"));
        let c = namespaces.add(format!("{base}-c"));
        for ns in [&h, &c] {
            ip(&["-n", ns, "link", "set", "lo", "up"]);
        }
        ip(&[
            "-n", &h, "link", "add", "vmbr0", "address", HOST_MAC, "type", "bridge",
        ]);
        ip(&["-n", &h, "link", "set", "vmbr0", "up"]);
        ip(&[
            "-n", &h, "link", "add", "veth-h", "type", "veth", "peer", "name", "veth-c", "netns",
            &c,
        ]);
        ip(&["-n", &h, "link", "set", "veth-h", "master", "vmbr0", "up"]);
        ip(&["-n", &c, "link", "set", "veth-c", "up"]);
        for host in [HOST4, VIP4, OPERATOR4] {
            ip(&[
                "-n",
                &h,
                "address",
                "add",
                &format!("{host}/24"),
                "dev",
                "vmbr0",
            ]);
        }
        for host in ["fd77::1", VIP6, OPERATOR6] {
            let cidr = format!("{host}/64");
            ip(&["-n", &h, "address", "add", &cidr, "dev", "vmbr0", "nodad"]);
        }
        ip(&[
            "-n",
            &c,
            "address",
            "add",
            &format!("{CLIENT4}/24"),
            "dev",
            "veth-c",
        ]);
        ip(&[
            "-n",
            &c,
            "address",
            "add",
            "fd77::2/64",
            "dev",
            "veth-c",
            "nodad",
        ]);
        Lan {
            listener: listen(&h, PORT),
            client_listener: listen(&c, CLIENT_PORT),
            host: h,
            client: c,
            _namespaces: namespaces,
        }
    }

    fn install(&self, table: &str) -> Gate {
        in_ns(&self.host, || Gate::install(table)).expect("install the gate")
    }

    /// Whether the client, with its neighbour cache flushed, connects to `target`:`PORT`.
    fn reaches(&self, target: &str) -> bool {
        ip(&["-n", &self.client, "neigh", "flush", "dev", "veth-c"]);
        let target = SocketAddr::new(addr(target), PORT);
        let reached = in_ns(&self.client, || {
            TcpStream::connect_timeout(&target, PATIENCE).is_ok()
        });
        drain(&self.listener);
        reached
    }

    /// Whether the host, from source address `source`, connects to the client.
    fn host_reaches_client_from(&self, source: &str) -> bool {
        let source = SocketAddr::new(addr(source), 0);
        let target = SocketAddr::new(addr(CLIENT4), CLIENT_PORT);
        let reached = in_ns(&self.host, || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap()
                .block_on(async {
                    let socket = tokio::net::TcpSocket::new_v4().unwrap();
                    socket.bind(source).unwrap();
                    matches!(
                        tokio::time::timeout(PATIENCE, socket.connect(target)).await,
                        Ok(Ok(_))
                    )
                })
        });
        drain(&self.client_listener);
        reached
    }

    /// Whether the client has a link-layer address for `target` (the kernel reports one only
    /// for an entry that an ARP reply or neighbour advertisement made valid).
    fn learned(&self, target: &str) -> bool {
        let target = addr(target);
        let neighbours = in_ns(&self.client, || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap()
                .block_on(async {
                    let (connection, handle, _) = rtnetlink::new_connection().unwrap();
                    let task = tokio::spawn(connection);
                    let all: Vec<_> = handle
                        .neighbours()
                        .get()
                        .execute()
                        .try_collect()
                        .await
                        .unwrap();
                    task.abort();
                    all
                })
        });
        neighbours.iter().any(|n| {
            let is_target = n.attributes.iter().any(|a| match a {
                NeighbourAttribute::Destination(NeighbourAddress::Inet(ip)) => {
                    IpAddr::V4(*ip) == target
                }
                NeighbourAttribute::Destination(NeighbourAddress::Inet6(ip)) => {
                    IpAddr::V6(*ip) == target
                }
                _ => false,
            });
            is_target
                && n.attributes
                    .iter()
                    .any(|a| matches!(a, NeighbourAttribute::LinkLayerAddress(l) if !l.is_empty()))
        })
    }

    /// The `family name` of every table in the host namespace.
    fn tables(&self) -> Vec<String> {
        let listed = nft_json(&self.host, &["list", "tables"]);
        let mut tables: Vec<String> = listed["nftables"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|o| {
                let t = o.get("table")?;
                Some(format!("{} {}", t["family"].as_str()?, t["name"].as_str()?))
            })
            .collect();
        tables.sort();
        tables
    }

    /// Packets the neighbour-advertisement rule of gate `table` dropped.
    fn na_drops(&self, table: &str) -> u64 {
        let listed = nft_json(&self.host, &["list", "chain", "inet", table, "output"]);
        let rule = listed["nftables"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|o| o.get("rule"))
            .find(|r| r.to_string().contains("nd-neighbor-advert"))
            .expect("the NA rule");
        rule["expr"]
            .as_array()
            .unwrap()
            .iter()
            .find_map(|e| e.get("counter")?.get("packets")?.as_u64())
            .expect("the NA rule's counter")
    }
}

/// How long until `closed()` holds, polling every 20 ms; panics after `limit`.
fn time_until(limit: Duration, mut closed: impl FnMut() -> bool) -> Duration {
    let start = Instant::now();
    loop {
        let at = start.elapsed();
        if closed() {
            return at;
        }
        assert!(at < limit, "still open after {limit:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_managed_vip_answers_only_while_its_element_is_open() {
    let lan = Lan::new();
    let gate = lan.install(TABLE);
    let vip = addr(VIP4);
    gate.manage(vip).unwrap();
    gate.manage(vip).unwrap();

    // Managed and never opened: no ARP reply reaches the client, so no connection; the
    // operator's address on the same bridge answers as ever.
    assert!(!lan.reaches(VIP4));
    assert!(!lan.learned(VIP4), "an ARP reply for the gated VIP got out");
    assert!(lan.reaches(OPERATOR4));
    assert!(lan.learned(OPERATOR4));

    gate.open(vip, Duration::from_secs(5)).unwrap();
    assert!(lan.reaches(VIP4));
    assert!(lan.learned(VIP4));

    // Opened for 300 ms (replacing the 5 s) and not refreshed, as by a frozen agent: the
    // kernel ends it by itself.
    gate.open(vip, Duration::from_millis(300)).unwrap();
    let shut = time_until(Duration::from_secs(2), || !lan.reaches(VIP4));
    println!("open(300 ms) without refresh: the VIP stopped answering after {shut:?}");
    assert!(
        !lan.learned(VIP4),
        "an ARP reply for the expired VIP got out"
    );

    // Opened again after it ran out (a lease acquired anew), and refreshed every ~100 ms with
    // 400 ms: open across four timeouts.
    let start = Instant::now();
    let mut probes = 0;
    while start.elapsed() < Duration::from_millis(1600) {
        gate.open(vip, Duration::from_millis(400)).unwrap();
        assert!(
            lan.reaches(VIP4),
            "closed after {:?} although refreshed",
            start.elapsed()
        );
        probes += 1;
        std::thread::sleep(Duration::from_millis(100));
    }
    println!(
        "refreshed with 400 ms for {:?}: {probes} probes all answered",
        start.elapsed()
    );

    // Closing shuts it at once; closing twice is closing once.
    gate.close(vip).unwrap();
    assert!(!lan.reaches(VIP4));
    gate.close(vip).unwrap();
    assert!(!lan.reaches(VIP4));
    // A duration under a millisecond closes rather than opening for ever.
    gate.open(vip, Duration::from_micros(999)).unwrap();
    assert!(!lan.reaches(VIP4));

    // Unmanaged (twice), it answers without being held: the gate leaves it alone.
    gate.unmanage(vip).unwrap();
    gate.unmanage(vip).unwrap();
    assert!(lan.reaches(VIP4));
    assert!(lan.reaches(OPERATOR4));
}

#[test]
fn traffic_to_and_from_a_gated_vip_is_dropped_even_when_its_mac_is_known() {
    let lan = Lan::new();
    let gate = lan.install(TABLE);
    let vip = addr(VIP4);
    gate.manage(vip).unwrap();
    // The client knows the host's MAC for the VIP without asking (ARP is out of the picture):
    // what stops it now is the input rule.
    ip(&[
        "-n",
        &lan.client,
        "neigh",
        "replace",
        VIP4,
        "lladdr",
        HOST_MAC,
        "dev",
        "veth-c",
        "nud",
        "permanent",
    ]);
    assert!(!lan.reaches(VIP4), "traffic to the gated VIP got in");
    // And the host cannot originate traffic from the VIP: the output rule.
    assert!(
        !lan.host_reaches_client_from(VIP4),
        "traffic from the gated VIP got out"
    );
    assert!(lan.host_reaches_client_from(HOST4));

    gate.open(vip, Duration::from_secs(5)).unwrap();
    assert!(lan.reaches(VIP4));
    assert!(lan.host_reaches_client_from(VIP4));
    gate.close(vip).unwrap();
    assert!(!lan.reaches(VIP4));
    assert!(!lan.host_reaches_client_from(VIP4));
}

#[test]
fn neighbour_advertisements_for_a_gated_ipv6_vip_are_dropped() {
    let lan = Lan::new();
    let gate = lan.install(TABLE);
    let vip = addr(VIP6);
    gate.manage(vip).unwrap();

    let before = lan.na_drops(TABLE);
    assert!(!lan.reaches(VIP6));
    assert!(
        !lan.learned(VIP6),
        "a neighbour advertisement for the gated VIP got out"
    );
    let dropped = lan.na_drops(TABLE) - before;
    println!("the NA rule (@th,64,128) dropped {dropped} advertisement(s)");
    assert!(dropped > 0, "the NA target rule matched nothing");
    assert!(lan.reaches(OPERATOR6));
    assert!(lan.learned(OPERATOR6));

    gate.open(vip, Duration::from_secs(5)).unwrap();
    assert!(lan.reaches(VIP6));
    assert!(lan.learned(VIP6));

    gate.open(vip, Duration::from_millis(300)).unwrap();
    let shut = time_until(Duration::from_secs(2), || !lan.reaches(VIP6));
    println!("IPv6 open(300 ms) without refresh: stopped answering after {shut:?}");
    assert!(!lan.learned(VIP6));

    gate.unmanage(vip).unwrap();
    assert!(lan.reaches(VIP6));
}

#[test]
fn installing_again_keeps_the_elements_and_only_the_gates_tables_are_touched() {
    let lan = Lan::new();
    // An operator's own table, and a second gate under another name.
    nft_script(
        &lan.host,
        "table inet operator_fw {\n  chain input { type filter hook input priority 0; policy accept; }\n}\n",
    );
    let other = lan.install("othergate");
    let gate = lan.install(TABLE);
    let (vip, operator) = (addr(VIP4), addr(OPERATOR4));
    gate.manage(vip).unwrap();
    gate.open(vip, Duration::from_secs(10)).unwrap();
    gate.manage(addr(VIP6)).unwrap();
    assert!(lan.reaches(VIP4));
    assert!(!lan.reaches(VIP6));

    // Installing again (an agent restarted) keeps what is managed and what is open.
    let again = lan.install(TABLE);
    assert!(lan.reaches(VIP4), "installing again closed an open VIP");
    assert!(!lan.reaches(VIP6), "installing again forgot a managed VIP");
    again.close(vip).unwrap();
    assert!(!lan.reaches(VIP4));

    // The other gate manages the operator's address; pvefleet's gate cannot open it.
    other.manage(operator).unwrap();
    gate.open(operator, Duration::from_secs(10)).unwrap();
    assert!(!lan.reaches(OPERATOR4));

    let ours = [format!("arp {TABLE}"), format!("inet {TABLE}")];
    let theirs = ["arp othergate", "inet operator_fw", "inet othergate"]; // sorted
    let tables = lan.tables();
    for t in ours.iter().map(String::as_str).chain(theirs) {
        assert!(tables.iter().any(|x| x == t), "{t} missing: {tables:?}");
    }
    gate.remove().unwrap();
    let tables = lan.tables();
    assert_eq!(
        tables, theirs,
        "remove touched another table or left one of its own"
    );
    // Removing is idempotent, and removed tables are said, not silently recreated.
    lan.install(TABLE).remove().unwrap();
    lan.install(TABLE).remove().unwrap();
    let missing = again.open(vip, Duration::from_secs(1)).unwrap_err();
    assert!(
        matches!(&missing, GateError::Kernel { source, .. }
            if source.raw_os_error() == Some(2)),
        "{missing}"
    );
    assert!(missing.to_string().contains(TABLE), "{missing}");
    assert_eq!(lan.tables(), theirs);
    // Without pvefleet's gate the VIP answers; the other gate still holds back its address.
    assert!(lan.reaches(VIP4));
    assert!(!lan.reaches(OPERATOR4));
    other.remove().unwrap();
    assert!(lan.reaches(OPERATOR4));
    assert_eq!(lan.tables(), ["inet operator_fw"]);
}

#[test]
fn a_refresh_is_one_netlink_batch() {
    let lan = Lan::new();
    let gate = lan.install(TABLE);
    let (v4, v6) = (addr(VIP4), addr(VIP6));
    gate.manage(v4).unwrap();
    gate.manage(v6).unwrap();

    // The cost of one refresh, one address (printed, not asserted: it depends on the machine).
    const N: u32 = 1000;
    for address in [v4, v6] {
        let mut worst = Duration::ZERO;
        let start = Instant::now();
        for _ in 0..N {
            let one = Instant::now();
            gate.open(address, Duration::from_millis(400)).unwrap();
            worst = worst.max(one.elapsed());
        }
        println!(
            "gate.open({address}, 400 ms): mean {:?}, worst {worst:?} over {N}",
            start.elapsed() / N
        );
    }
    // For comparison, the same refresh through `nft -f -` (a process per refresh).
    const M: u32 = 20;
    let script = format!(
        "add element inet {TABLE} held4 {{ {VIP4} timeout 400ms }}\n\
         delete element inet {TABLE} held4 {{ {VIP4} }}\n\
         add element inet {TABLE} held4 {{ {VIP4} timeout 400ms }}\n"
    );
    let took = in_ns(&lan.host, || {
        let start = Instant::now();
        for _ in 0..M {
            use std::io::Write as _;
            let mut child = Command::new("nft")
                .args(["-f", "-"])
                .stdin(Stdio::piped())
                .spawn()
                .unwrap();
            child
                .stdin
                .take()
                .unwrap()
                .write_all(script.as_bytes())
                .unwrap();
            assert!(child.wait().unwrap().success());
        }
        start.elapsed() / M
    });
    println!("the same refresh (IPv4, inet table only) through `nft -f -`: mean {took:?}");

    // After all those refreshes the element still does its job (opened for long enough that a
    // loaded machine cannot make it run out before the probe).
    gate.open(v4, Duration::from_secs(5)).unwrap();
    assert!(lan.reaches(VIP4));
    gate.close(v4).unwrap();
    assert!(!lan.reaches(VIP4));
}

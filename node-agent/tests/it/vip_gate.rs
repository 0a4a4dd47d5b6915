//! The VIP gate for real (root: CI runs as root), between two network namespaces the tests make
//! and delete even when a test fails: a PVE-like host with a bridge `vmbr0` carrying the VIPs,
//! an operator's addresses and a TCP listener, and a client on a veth port of the bridge. The
//! client flushes its neighbour entries before every probe, so each probe needs a fresh ARP
//! reply or neighbour advertisement from the host; what the client learned is read through
//! rtnetlink. Every wait is bounded: a probe gives up after [`PATIENCE`].

use crate::netns_support;

use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use netns_support::{CLIENT_IF, Netns, Pair, neighbour_macs};
use node_agent::vip::gate::{Gate, GateError, TABLE};

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

/// `nft -j ARGS` in namespace `ns`, parsed (nft's JSON output is its structured interface).
fn nft_json(ns: &Netns, args: &[&str]) -> serde_json::Value {
    let output = ns.enter(|| {
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

/// Runs an nft script with `nft -f -` in the current namespace.
fn nft_file(script: &str) -> ExitStatus {
    use std::io::Write as _;
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
}

/// Runs an nft script in namespace `ns` (an operator's own tables).
fn nft_script(ns: &Netns, script: &str) {
    let status = ns.enter(|| nft_file(script));
    assert!(status.success(), "nft -f: {script}");
}

/// The host and the client namespaces, joined through the host's bridge.
struct Lan {
    /// The host's listener on every address, port [`PORT`] (non-blocking, drained by probes).
    listener: TcpListener,
    /// The client's listener, port [`CLIENT_PORT`].
    client_listener: TcpListener,
    /// After the listeners, so that they are closed first.
    host: Netns,
    client: Netns,
}

fn listen(ns: &Netns, port: u16) -> TcpListener {
    ns.enter(|| {
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
        let Pair { host, client } = Pair::new("gate", HOST_MAC);
        for host_ip in [HOST4, VIP4, OPERATOR4] {
            let cidr = format!("{host_ip}/24");
            host.ip(&["address", "add", &cidr, "dev", "vmbr0"]);
        }
        for host_ip in ["fd77::1", VIP6, OPERATOR6] {
            let cidr = format!("{host_ip}/64");
            host.ip(&["address", "add", &cidr, "dev", "vmbr0", "nodad"]);
        }
        let cidr = format!("{CLIENT4}/24");
        client.ip(&["address", "add", &cidr, "dev", CLIENT_IF]);
        client.ip(&["address", "add", "fd77::2/64", "dev", CLIENT_IF, "nodad"]);
        Lan {
            listener: listen(&host, PORT),
            client_listener: listen(&client, CLIENT_PORT),
            host,
            client,
        }
    }

    /// A new LAN whose host has pvefleet's gate, managing `vip` (and not opening it).
    fn gating(vip: &str) -> (Lan, Gate) {
        let lan = Lan::new();
        let gate = lan.install(TABLE);
        gate.manage(addr(vip)).unwrap();
        (lan, gate)
    }

    fn install(&self, table: &str) -> Gate {
        self.host
            .enter(|| Gate::install(table))
            .expect("install the gate")
    }

    /// Whether the client, with its neighbour cache flushed, connects to `target`:`PORT`.
    fn reaches(&self, target: &str) -> bool {
        self.client.ip(&["neigh", "flush", "dev", CLIENT_IF]);
        let target = SocketAddr::new(addr(target), PORT);
        let reached = self
            .client
            .enter(|| TcpStream::connect_timeout(&target, PATIENCE).is_ok());
        drain(&self.listener);
        reached
    }

    /// Whether the host, from source address `source`, connects to the client.
    fn host_reaches_client_from(&self, source: &str) -> bool {
        let source = SocketAddr::new(addr(source), 0);
        let target = SocketAddr::new(addr(CLIENT4), CLIENT_PORT);
        let reached = self.host.run(async || {
            let socket = tokio::net::TcpSocket::new_v4().unwrap();
            socket.bind(source).unwrap();
            matches!(
                tokio::time::timeout(PATIENCE, socket.connect(target)).await,
                Ok(Ok(_))
            )
        });
        drain(&self.client_listener);
        reached
    }

    /// Whether the client has a link-layer address for `target` (the kernel reports one only
    /// for an entry that an ARP reply or neighbour advertisement made valid).
    fn learned(&self, target: &str) -> bool {
        let target = addr(target);
        let macs = self.client.run(async || neighbour_macs(target).await);
        macs.iter().any(|mac| !mac.is_empty())
    }

    /// Asserts that the client connects to `target` and learned its link-layer address.
    #[track_caller]
    fn assert_answers(&self, target: &str) {
        assert!(self.reaches(target), "{target} did not answer");
        assert!(self.learned(target), "no reply from {target} was learned");
    }

    /// Opens `vip` for 300 ms and does not refresh it, as a frozen agent would: the kernel must
    /// close it by itself within 2 s, and no ARP reply or neighbour advertisement for it gets
    /// out afterwards.
    #[track_caller]
    fn assert_lapses(&self, gate: &Gate, vip: &str) {
        gate.open(addr(vip), Duration::from_millis(300)).unwrap();
        let shut = time_until(Duration::from_secs(2), || !self.reaches(vip));
        println!("open(300 ms) without refresh: {vip} stopped answering after {shut:?}");
        assert!(
            !self.learned(vip),
            "a reply for the expired VIP {vip} got out"
        );
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
    let (lan, gate) = Lan::gating(VIP4);
    let vip = addr(VIP4);
    gate.manage(vip).unwrap(); // managing twice is managing once

    // Managed and never opened: no ARP reply reaches the client, so no connection; the
    // operator's address on the same bridge answers as ever.
    assert!(!lan.reaches(VIP4));
    assert!(!lan.learned(VIP4), "an ARP reply for the gated VIP got out");
    lan.assert_answers(OPERATOR4);

    gate.open(vip, Duration::from_secs(5)).unwrap();
    lan.assert_answers(VIP4);

    // Opened for 300 ms (replacing the 5 s) and not refreshed, as by a frozen agent: the
    // kernel ends it by itself.
    lan.assert_lapses(&gate, VIP4);

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
    let (lan, gate) = Lan::gating(VIP4);
    let vip = addr(VIP4);
    // The client knows the host's MAC for the VIP without asking (ARP is out of the picture):
    // what stops it now is the input rule.
    lan.client.ip(&[
        "neigh",
        "replace",
        VIP4,
        "lladdr",
        HOST_MAC,
        "dev",
        CLIENT_IF,
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
    let (lan, gate) = Lan::gating(VIP6);
    let vip = addr(VIP6);

    let before = lan.na_drops(TABLE);
    assert!(!lan.reaches(VIP6));
    assert!(
        !lan.learned(VIP6),
        "a neighbour advertisement for the gated VIP got out"
    );
    let dropped = lan.na_drops(TABLE) - before;
    println!("the NA rule (@th,64,128) dropped {dropped} advertisement(s)");
    assert!(dropped > 0, "the NA target rule matched nothing");
    lan.assert_answers(OPERATOR6);

    gate.open(vip, Duration::from_secs(5)).unwrap();
    lan.assert_answers(VIP6);

    lan.assert_lapses(&gate, VIP6);

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
    let (lan, gate) = Lan::gating(VIP4);
    let (v4, v6) = (addr(VIP4), addr(VIP6));
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
    let took = lan.host.enter(|| {
        let start = Instant::now();
        for _ in 0..M {
            assert!(nft_file(&script).success());
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

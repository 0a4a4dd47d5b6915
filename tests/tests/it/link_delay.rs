//! `lab::link_delay` holds a host's packets for real: two namespaces joined by a veth pair, a
//! UDP echo across it, the round trip measured before, during and after a 100 ms delay on one
//! side (its packets held each way: at least 200 ms more). Root, iproute2 and iptables, as the
//! scenario runner's `delay-link` needs; the namespaces go with the test, even when it fails.
//! The bounds only say that the delay is there and then gone (a busy machine adds time, never
//! takes it away): no figure is measured here.

use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use lab::link_delay::LinkDelay;
use lab::netns::{Netns, enter};

const A: &str = "10.213.0.1";
const B: &str = "10.213.0.2";
const DELAY: Duration = Duration::from_millis(100);

/// The median of `n` round trips from `a` to the echo at `to`.
fn round_trip(a: &str, to: SocketAddr, n: usize) -> Duration {
    let ns = a.to_string();
    std::thread::spawn(move || {
        enter(&ns).unwrap();
        let s = UdpSocket::bind((A, 0)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
        let mut times = Vec::new();
        for i in 0..n {
            let t = Instant::now();
            s.send_to(&[u8::try_from(i % 256).unwrap()], to).unwrap();
            let mut buf = [0u8; 8];
            s.recv_from(&mut buf).expect("an echo within 3 s");
            times.push(t.elapsed());
        }
        times.sort();
        times[n / 2]
    })
    .join()
    .unwrap()
}

#[test]
fn a_delayed_link_holds_every_packet_each_way_and_lets_go_when_it_ends() {
    let tag = std::process::id();
    let a = Netns::create(format!("pvfd-{tag}-a")).unwrap();
    let b = Netns::create(format!("pvfd-{tag}-b")).unwrap();
    a.ip(&[
        "link",
        "add",
        "vmbr0",
        "type",
        "veth",
        "peer",
        "name",
        "vmbr0",
        "netns",
        b.name(),
    ])
    .unwrap();
    for (ns, addr) in [(&a, A), (&b, B)] {
        ns.ip(&["address", "add", &format!("{addr}/24"), "dev", "vmbr0"])
            .unwrap();
        ns.ip(&["link", "set", "vmbr0", "up"]).unwrap();
    }
    // The echo, in b, bounded in time.
    let stop = Arc::new(AtomicBool::new(false));
    let (b_name, stop_echo) = (b.name().to_string(), Arc::clone(&stop));
    let (tx, rx) = std::sync::mpsc::channel();
    let echo = std::thread::spawn(move || {
        enter(&b_name).unwrap();
        let s = UdpSocket::bind((B, 0)).unwrap();
        s.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
        tx.send(s.local_addr().unwrap()).unwrap();
        let until = Instant::now() + Duration::from_secs(60);
        let mut buf = [0u8; 64];
        while !stop_echo.load(Ordering::Relaxed) && Instant::now() < until {
            if let Ok((n, from)) = s.recv_from(&mut buf) {
                let _ = s.send_to(&buf[..n], from);
            }
        }
    });
    let to = rx.recv().unwrap();
    let before = round_trip(a.name(), to, 10);
    let delay = LinkDelay::start(a.name(), 4, DELAY, "10.213.0.0/24", "10.213.0.254").unwrap();
    let during = round_trip(a.name(), to, 10);
    drop(delay);
    let after = round_trip(a.name(), to, 10);
    stop.store(true, Ordering::Relaxed);
    echo.join().unwrap();
    assert!(
        during >= before + 2 * DELAY - Duration::from_millis(5),
        "a 100 ms delay each way made the round trip {during:?} (it was {before:?})"
    );
    assert!(
        after < during - DELAY,
        "the round trip is {after:?} after the delay ended (it was {during:?} with it)"
    );
}

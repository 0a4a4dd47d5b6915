//! Cutting a host's fleet links by address, for a lab whose processes all run in one private
//! network namespace the caller owns (the scenario runner enters it, e.g. with
//! `unshare --net` and `ip link set lo up`; the lab never makes or enters one for this).
//!
//! Each host `N` of such a lab has its own loopback address, [`host_address`] = `127.0.1.N`
//! (all of 127.0.0.0/8 is local on `lo`, nothing needs adding): its coordinator member listens
//! there (`listen` of [`crate::MemberAt`]) and its agent dials from there
//! ([`crate::HostOptions::bind_address`]). A member's one QUIC endpoint is bound to its listen
//! address and dials from it too, so every fleet packet between hosts carries both hosts'
//! addresses. [`Partitions::cut`] drops UDP between a host's address and every other address
//! of 127.0.1.0/24, in both directions; traffic to 127.0.0.1 stays: the simulators listen
//! there (a partitioned PVE node still reaches its own API), and so do the members' local
//! HTTP endpoints, and the lab's own admin calls leave from 127.0.0.1 (the kernel's source for
//! a loopback destination), so a test still reaches a cut-off member.
//!
//! ```text
//!  table inet pvf_scenario
//!    chain input (hook input: every loopback packet passes it once, on delivery)
//!      udp 127.0.1.N -> 127.0.1.0/24 except itself: drop
//!      udp 127.0.1.0/24 except 127.0.1.N -> 127.0.1.N: drop
//! ```
//!
//! The packets are dropped on delivery (hook `input`), not on sending (`output`): a drop at
//! `output` fails the sender's `sendmsg` with `EPERM`, which no real partition does; at `input`
//! the datagram is lost silently, as on a cut link.
//!
//! A lab whose hosts each run in a network namespace of their own, plugged into a bridge of
//! the caller's namespace ([`crate::host_network`], host `N` = `10.213.0.N`), is cut the same
//! way where those packets meet: in a `bridge` table, on the bridge's `forward` hook, as the
//! bridge passes a frame from one host's port to another's ([`Wiring::Bridge`]). Only IPv4 UDP
//! is dropped, so ARP still reaches every host (the lab's VIP prober asks all of them), and
//! the caller's own traffic to a host (admin calls from the bridge's address) is never
//! forwarded, so never cut.
//!
//! The rules are written with the `nft` program, the whole table at once on its stdin
//! (`nft -f -`, one transaction); its output is never parsed. The table goes with
//! [`Partitions::remove`] or, best effort, when the value drops.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::io::Write as _;
use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::process::Stdio;

use tokio::io::AsyncWriteExt;
use tokio::process::Command;

use crate::error::LabError;

/// The nftables table holding the cuts (family `inet`, or `bridge` with [`Wiring::Bridge`]).
pub const TABLE: &str = "pvf_scenario";
/// The network of the hosts' addresses on a bridge ([`Wiring::Bridge`]).
pub const BRIDGE_NET: Ipv4Addr = Ipv4Addr::new(10, 213, 0, 0);
/// The network of the hosts' addresses.
pub const HOSTS_NET: Ipv4Addr = Ipv4Addr::new(127, 0, 1, 0);
/// Its prefix length.
pub const HOSTS_PREFIX: u8 = 24;
/// Where Debian puts `nft` (tried first: a test may run with a `PATH` without `/usr/sbin`).
const NFT: &str = "/usr/sbin/nft";

/// Host `n`'s address, `127.0.1.n`; `n` is 1..=254 (a larger `n` gives 127.0.1.255, which
/// [`Partitions`] refuses).
pub fn host_address(n: u32) -> IpAddr {
    let last = u8::try_from(n).ok().filter(|n| *n < 255).unwrap_or(255);
    IpAddr::V4(Ipv4Addr::new(127, 0, 1, last))
}

/// Where the hosts' fleet packets meet, and so where they are cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Wiring {
    /// Every host on this namespace's loopback, host `N` at `127.0.1.N`: packets dropped on
    /// delivery (`inet` table, hook `input`).
    #[default]
    Loopback,
    /// Every host in a namespace of its own plugged into a bridge of this one, host `N` at
    /// `10.213.0.N`: frames dropped as the bridge forwards them (`bridge` table, hook
    /// `forward`).
    Bridge,
}

impl Wiring {
    /// The network of the host addresses (a /24).
    pub fn net(self) -> Ipv4Addr {
        match self {
            Wiring::Loopback => HOSTS_NET,
            Wiring::Bridge => BRIDGE_NET,
        }
    }

    /// Host `n`'s address (`n` is 1..=254; a larger one gives `.255`, which [`Partitions`]
    /// refuses).
    pub fn host_address(self, n: u32) -> IpAddr {
        let last = u8::try_from(n).ok().filter(|n| *n < 255).unwrap_or(255);
        let [a, b, c, _] = self.net().octets();
        IpAddr::V4(Ipv4Addr::new(a, b, c, last))
    }

    fn family(self) -> &'static str {
        match self {
            Wiring::Loopback => "inet",
            Wiring::Bridge => "bridge",
        }
    }

    fn hook(self) -> &'static str {
        match self {
            Wiring::Loopback => "input",
            Wiring::Bridge => "forward",
        }
    }

    /// Whether `addr` is a host address [`Partitions`] can cut (`.1` to `.254` of
    /// [`Wiring::net`]).
    fn host_v4(self, addr: IpAddr) -> Result<Ipv4Addr, LabError> {
        let net = self.net();
        match addr {
            IpAddr::V4(v4)
                if v4.octets()[..3] == net.octets()[..3] && (1..255).contains(&v4.octets()[3]) =>
            {
                Ok(v4)
            }
            _ => Err(LabError::NoSuchPart(format!(
                "{addr} is not a host address of the partition testbed ({a}1 to {a}254)",
                a = net.to_string().trim_end_matches('0')
            ))),
        }
    }
}

/// Which links are cut or lossy: every fault [`Partitions`] can put between host addresses.
/// Pure; [`ruleset`] writes it as nftables rules.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cuts {
    /// Hosts cut off from every other host, both ways.
    pub both: BTreeSet<Ipv4Addr>,
    /// Hosts that hear no other host (what they send still arrives): a one-way partition.
    pub inbound: BTreeSet<Ipv4Addr>,
    /// Hosts no other host hears (they still hear the others): a one-way partition.
    pub outbound: BTreeSet<Ipv4Addr>,
    /// Single links cut both ways, as (lower, higher) address.
    pub links: BTreeSet<(Ipv4Addr, Ipv4Addr)>,
    /// Hosts whose packets to and from other hosts are dropped at random, in percent.
    pub lossy: BTreeMap<Ipv4Addr, u8>,
}

impl Cuts {
    /// Whether nothing is cut.
    pub fn is_empty(&self) -> bool {
        self.both.is_empty()
            && self.inbound.is_empty()
            && self.outbound.is_empty()
            && self.links.is_empty()
            && self.lossy.is_empty()
    }

    /// The same without any fault that involves `a`.
    pub fn without(&self, a: Ipv4Addr) -> Cuts {
        let mut next = self.clone();
        next.both.remove(&a);
        next.inbound.remove(&a);
        next.outbound.remove(&a);
        next.links.retain(|(x, y)| *x != a && *y != a);
        next.lossy.remove(&a);
        next
    }
}

/// The `nft -f` script that replaces the table with one holding `cuts` (none: the table with
/// no rules). The leading `table` line makes the `delete` succeed when the table does not
/// exist yet.
pub fn ruleset(cuts: &Cuts, wiring: Wiring) -> String {
    let net = format!("{}/{HOSTS_PREFIX}", wiring.net());
    let (family, hook) = (wiring.family(), wiring.hook());
    let mut text = format!(
        "table {family} {TABLE}\ndelete table {family} {TABLE}\ntable {family} {TABLE} {{\n\
         \tchain {hook} {{\n\t\ttype filter hook {hook} priority filter; policy accept;\n"
    );
    // Writing to a String cannot fail.
    let from = |text: &mut String, a: Ipv4Addr, extra: &str| {
        let _ = writeln!(
            text,
            "\t\tmeta l4proto udp ip saddr {a} ip daddr {net} ip daddr != {a}{extra} drop"
        );
    };
    let to = |text: &mut String, a: Ipv4Addr, extra: &str| {
        let _ = writeln!(
            text,
            "\t\tmeta l4proto udp ip daddr {a} ip saddr {net} ip saddr != {a}{extra} drop"
        );
    };
    for a in &cuts.both {
        from(&mut text, *a, "");
        to(&mut text, *a, "");
    }
    for a in &cuts.inbound {
        to(&mut text, *a, "");
    }
    for a in &cuts.outbound {
        from(&mut text, *a, "");
    }
    for (a, b) in &cuts.links {
        let _ = writeln!(text, "\t\tmeta l4proto udp ip saddr {a} ip daddr {b} drop");
        let _ = writeln!(text, "\t\tmeta l4proto udp ip saddr {b} ip daddr {a} drop");
    }
    for (a, pct) in &cuts.lossy {
        let extra = format!(" numgen random mod 100 < {pct}");
        from(&mut text, *a, &extra);
        to(&mut text, *a, &extra);
    }
    text.push_str("\t}\n}\n");
    text
}

/// The `nft -f` script that removes the table (whether or not it exists).
pub fn removal(wiring: Wiring) -> String {
    let family = wiring.family();
    format!("table {family} {TABLE}\ndelete table {family} {TABLE}\n")
}

/// The hosts cut off from each other, as nftables rules of the current network namespace.
#[derive(Debug)]
pub struct Partitions {
    nft: PathBuf,
    wiring: Wiring,
    cuts: Cuts,
    /// Whether the table may exist (removed on drop).
    installed: bool,
}

impl Default for Partitions {
    fn default() -> Partitions {
        Partitions::new()
    }
}

impl Partitions {
    /// No host cut off yet (nothing written until the first change), with `nft` from
    /// `/usr/sbin` or the `PATH`.
    pub fn new() -> Partitions {
        let nft = if Path::new(NFT).exists() { NFT } else { "nft" };
        Partitions::with_program(PathBuf::from(nft))
    }

    /// The same with the `nft` program at `nft`.
    pub fn with_program(nft: PathBuf) -> Partitions {
        Partitions {
            nft,
            wiring: Wiring::Loopback,
            cuts: Cuts::default(),
            installed: false,
        }
    }

    /// The same for hosts wired as `wiring` (before anything is cut).
    #[must_use]
    pub fn wired(mut self, wiring: Wiring) -> Partitions {
        self.wiring = wiring;
        self
    }

    /// How the hosts are wired.
    pub fn wiring(&self) -> Wiring {
        self.wiring
    }

    /// The addresses cut off now.
    pub fn cut_addresses(&self) -> impl Iterator<Item = IpAddr> + '_ {
        self.cuts.both.iter().copied().map(IpAddr::V4)
    }

    /// Every fault in place now.
    pub fn cuts(&self) -> &Cuts {
        &self.cuts
    }

    /// Cuts host address `addr` off from every other host address (UDP both ways); cutting it
    /// again changes nothing.
    ///
    /// # Errors
    /// [`LabError::NoSuchPart`] for an address that is no host's (`.1` to `.254` of
    /// [`Wiring::net`]); [`LabError::Spawn`] or
    /// [`LabError::Step`] if `nft` cannot run or refuses (nothing changes then).
    pub async fn cut(&mut self, addr: IpAddr) -> Result<(), LabError> {
        let v4 = self.wiring.host_v4(addr)?;
        let mut next = self.cuts.clone();
        next.both.insert(v4);
        self.apply(next).await
    }

    /// Cuts one direction of host address `addr`'s links: `inbound` (it hears no other host)
    /// or not (no other host hears it).
    ///
    /// # Errors
    /// As [`Partitions::cut`].
    pub async fn cut_one_way(&mut self, addr: IpAddr, inbound: bool) -> Result<(), LabError> {
        let v4 = self.wiring.host_v4(addr)?;
        let mut next = self.cuts.clone();
        if inbound {
            next.inbound.insert(v4);
        } else {
            next.outbound.insert(v4);
        }
        self.apply(next).await
    }

    /// Cuts the one link between host addresses `a` and `b`, both ways.
    ///
    /// # Errors
    /// As [`Partitions::cut`]; [`LabError::NoSuchPart`] when `a` is `b`.
    pub async fn cut_link(&mut self, a: IpAddr, b: IpAddr) -> Result<(), LabError> {
        let (a, b) = (self.wiring.host_v4(a)?, self.wiring.host_v4(b)?);
        if a == b {
            return Err(LabError::NoSuchPart(format!(
                "a link joins two hosts: {a} twice"
            )));
        }
        let mut next = self.cuts.clone();
        next.links.insert((a.min(b), a.max(b)));
        self.apply(next).await
    }

    /// Drops `percent` (1 to 100) of the packets between host address `addr` and the other
    /// hosts, at random, both ways.
    ///
    /// # Errors
    /// As [`Partitions::cut`]; [`LabError::NoSuchPart`] for a percentage outside 1 to 100.
    pub async fn lossy(&mut self, addr: IpAddr, percent: u8) -> Result<(), LabError> {
        let v4 = self.wiring.host_v4(addr)?;
        if !(1..=100).contains(&percent) {
            return Err(LabError::NoSuchPart(format!(
                "a loss of {percent} %: expected 1 to 100"
            )));
        }
        let mut next = self.cuts.clone();
        next.lossy.insert(v4, percent);
        self.apply(next).await
    }

    /// Ends every fault involving `addr` (healing an address not cut changes nothing).
    ///
    /// # Errors
    /// As [`Partitions::cut`].
    pub async fn heal(&mut self, addr: IpAddr) -> Result<(), LabError> {
        let v4 = self.wiring.host_v4(addr)?;
        let next = self.cuts.without(v4);
        self.apply(next).await
    }

    /// Ends every cut (the table stays, empty, until [`Partitions::remove`]).
    ///
    /// # Errors
    /// [`LabError::Spawn`] or [`LabError::Step`] from `nft`.
    pub async fn heal_all(&mut self) -> Result<(), LabError> {
        self.apply(Cuts::default()).await
    }

    /// Removes the table.
    ///
    /// # Errors
    /// [`LabError::Spawn`] or [`LabError::Step`] from `nft`.
    pub async fn remove(mut self) -> Result<(), LabError> {
        if self.installed {
            run_nft(&self.nft, &removal(self.wiring)).await?;
        }
        self.installed = false;
        self.cuts = Cuts::default();
        Ok(())
    }

    async fn apply(&mut self, next: Cuts) -> Result<(), LabError> {
        self.installed = true;
        run_nft(&self.nft, &ruleset(&next, self.wiring)).await?;
        self.cuts = next;
        Ok(())
    }
}

impl Drop for Partitions {
    /// Best effort (a drop cannot wait or report): the table goes unless [`Partitions::remove`]
    /// took it already; a namespace of its own takes it anyway when it ends.
    fn drop(&mut self) {
        if !self.installed {
            return;
        }
        let child = std::process::Command::new(&self.nft)
            .args(["-f", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        if let Ok(mut child) = child {
            if let Some(mut stdin) = child.stdin.take() {
                let _ = stdin.write_all(removal(self.wiring).as_bytes());
            }
            let _ = child.wait();
        }
    }
}

/// `nft -f -` with `script` on its stdin.
async fn run_nft(nft: &Path, script: &str) -> Result<(), LabError> {
    let what = format!("nft -f - (table {TABLE})");
    let spawn = |source| LabError::Spawn {
        what: what.clone(),
        source,
    };
    let mut child = Command::new(nft)
        .args(["-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(spawn)?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(script.as_bytes()).await.map_err(spawn)?;
        // Dropped here: nft reads to the end of its input.
    }
    let out = child.wait_with_output().await.map_err(spawn)?;
    if out.status.success() {
        return Ok(());
    }
    Err(LabError::Step {
        what,
        status: out.status,
        output: format!(
            "{}\nthe script was:\n{script}",
            String::from_utf8_lossy(&out.stderr).trim()
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_have_their_own_loopback_addresses() {
        assert_eq!(host_address(1), "127.0.1.1".parse::<IpAddr>().unwrap());
        assert_eq!(host_address(254), "127.0.1.254".parse::<IpAddr>().unwrap());
        assert_eq!(host_address(300), "127.0.1.255".parse::<IpAddr>().unwrap());
        assert!(Wiring::Loopback.host_v4(host_address(3)).is_ok());
        for bad in ["127.0.1.255", "127.0.1.0", "127.0.0.1", "10.0.1.3", "::1"] {
            let e = Wiring::Loopback
                .host_v4(bad.parse().unwrap())
                .unwrap_err()
                .to_string();
            assert!(
                e.contains(bad) && e.contains("127.0.1.1 to 127.0.1.254"),
                "{e}"
            );
        }
    }

    #[test]
    fn a_cut_drops_udp_both_ways_between_the_host_and_the_other_hosts_only() {
        let cut = Cuts {
            both: ["127.0.1.3", "127.0.1.1"]
                .iter()
                .map(|a| a.parse().unwrap())
                .collect(),
            ..Cuts::default()
        };
        assert_eq!(
            ruleset(&cut, Wiring::Loopback),
            "table inet pvf_scenario\n\
             delete table inet pvf_scenario\n\
             table inet pvf_scenario {\n\
             \tchain input {\n\
             \t\ttype filter hook input priority filter; policy accept;\n\
             \t\tmeta l4proto udp ip saddr 127.0.1.1 ip daddr 127.0.1.0/24 ip daddr != 127.0.1.1 drop\n\
             \t\tmeta l4proto udp ip daddr 127.0.1.1 ip saddr 127.0.1.0/24 ip saddr != 127.0.1.1 drop\n\
             \t\tmeta l4proto udp ip saddr 127.0.1.3 ip daddr 127.0.1.0/24 ip daddr != 127.0.1.3 drop\n\
             \t\tmeta l4proto udp ip daddr 127.0.1.3 ip saddr 127.0.1.0/24 ip saddr != 127.0.1.3 drop\n\
             \t}\n\
             }\n"
        );
    }

    #[test]
    fn one_way_cuts_single_links_and_loss_drop_only_their_packets() {
        let a: Ipv4Addr = "127.0.1.1".parse().unwrap();
        let b: Ipv4Addr = "127.0.1.2".parse().unwrap();
        let cuts = Cuts {
            inbound: BTreeSet::from([a]),
            outbound: BTreeSet::from([b]),
            links: BTreeSet::from([(a, b)]),
            lossy: BTreeMap::from([(b, 20)]),
            ..Cuts::default()
        };
        let text = ruleset(&cuts, Wiring::Loopback);
        let rules: Vec<&str> = text.lines().filter(|l| l.contains("drop")).collect();
        assert_eq!(
            rules,
            [
                "\t\tmeta l4proto udp ip daddr 127.0.1.1 ip saddr 127.0.1.0/24 ip saddr != 127.0.1.1 drop",
                "\t\tmeta l4proto udp ip saddr 127.0.1.2 ip daddr 127.0.1.0/24 ip daddr != 127.0.1.2 drop",
                "\t\tmeta l4proto udp ip saddr 127.0.1.1 ip daddr 127.0.1.2 drop",
                "\t\tmeta l4proto udp ip saddr 127.0.1.2 ip daddr 127.0.1.1 drop",
                "\t\tmeta l4proto udp ip saddr 127.0.1.2 ip daddr 127.0.1.0/24 ip daddr != 127.0.1.2 numgen random mod 100 < 20 drop",
                "\t\tmeta l4proto udp ip daddr 127.0.1.2 ip saddr 127.0.1.0/24 ip saddr != 127.0.1.2 numgen random mod 100 < 20 drop",
            ]
        );
        // Healing a host ends every fault it is part of, and only those.
        let healed = cuts.without(a);
        assert!(healed.inbound.is_empty() && healed.links.is_empty());
        assert_eq!(healed.outbound, BTreeSet::from([b]));
        assert!(cuts.without(a).without(b).is_empty());
    }

    #[test]
    fn healing_everything_leaves_the_table_without_rules_and_removal_deletes_it() {
        let healed = ruleset(&Cuts::default(), Wiring::Loopback);
        assert!(healed.contains("chain input"), "{healed}");
        assert!(!healed.contains("drop"), "{healed}");
        assert_eq!(
            removal(Wiring::Loopback),
            "table inet pvf_scenario\ndelete table inet pvf_scenario\n"
        );
    }

    #[test]
    fn hosts_on_a_bridge_are_cut_where_the_bridge_forwards_between_them() {
        let w = Wiring::Bridge;
        assert_eq!(w.host_address(4), "10.213.0.4".parse::<IpAddr>().unwrap());
        let e = w.host_v4(host_address(4)).unwrap_err().to_string();
        assert!(e.contains("10.213.0.1 to 10.213.0.254"), "{e}");
        let cut = Cuts {
            both: BTreeSet::from([Ipv4Addr::new(10, 213, 0, 2)]),
            ..Cuts::default()
        };
        assert_eq!(
            ruleset(&cut, w),
            "table bridge pvf_scenario\n\
             delete table bridge pvf_scenario\n\
             table bridge pvf_scenario {\n\
             \tchain forward {\n\
             \t\ttype filter hook forward priority filter; policy accept;\n\
             \t\tmeta l4proto udp ip saddr 10.213.0.2 ip daddr 10.213.0.0/24 ip daddr != 10.213.0.2 drop\n\
             \t\tmeta l4proto udp ip daddr 10.213.0.2 ip saddr 10.213.0.0/24 ip saddr != 10.213.0.2 drop\n\
             \t}\n\
             }\n"
        );
        assert_eq!(
            removal(w),
            "table bridge pvf_scenario\ndelete table bridge pvf_scenario\n"
        );
    }

    #[tokio::test]
    async fn a_refused_address_changes_nothing_and_runs_nothing() {
        // A program that cannot exist: a run would fail with Spawn.
        let mut p = Partitions::with_program(PathBuf::from("/nonexistent/nft"));
        let e = p.cut("127.0.0.1".parse().unwrap()).await.unwrap_err();
        assert!(matches!(e, LabError::NoSuchPart(_)), "{e}");
        assert_eq!(p.cut_addresses().count(), 0);
        let e = p.cut(host_address(2)).await.unwrap_err();
        assert!(matches!(e, LabError::Spawn { .. }), "{e}");
        assert_eq!(p.cut_addresses().count(), 0, "a failed cut is not recorded");
    }
}

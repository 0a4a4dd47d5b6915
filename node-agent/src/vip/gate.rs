//! The nftables gate (docs/design/vips.md, "Enforcement when the agent cannot act"): the host
//! answers for a VIP address the agent manages only while the kernel holds an element for it,
//! with a millisecond timeout, in a set of pvefleet's own tables; so when the lease ends the host
//! stops answering for the VIP by itself, even with the agent frozen or killed.
//!
//! Mechanism: the tables, sets and rules are written once by `nft -f -` in nft's own language
//! (one transaction, read back as written by `nft list table`); elements, refreshed ~10 times a
//! second, and the tables' removal go over a netlink socket the gate keeps (rust-netlink's
//! `netlink-packet-netfilter`): one `sendmsg`, tens of microseconds, where an `nft` run per
//! refresh measured ~15 ms (process start, then its socket's close waits on the kernel after a
//! batch that deleted an element). Not the `nftables` crate: nft 1.0.6's JSON (PVE 8) reads
//! element timeouts in whole seconds, and a fractional one makes the element permanent.
//!
//! What the rules drop, for every address in the `managed` sets that is not in the `held` sets:
//! every ARP packet the host sends with the address as sender (`arp` table, hook output:
//! replies, and its own requests, which announce it as well), every neighbour advertisement
//! whose target is the address, traffic to it (hook input) and traffic from it (hook output;
//! the `inet` table). An address that is not managed, an operator's, is never touched, and
//! neither is any other table. The NA target is matched as raw transport-header bits
//! (`@th,64,128`; nft 1.0.6 has no name for it), which nft types as an integer, so IPv6
//! addresses are kept in two pairs of sets with the same 16 bytes: `managed6`/`held6` for the
//! address rules and `managed6_na`/`held6_na` for the NA rule.
//!
//! The order the agent keeps: [`Gate::manage`] before the address goes on the interface (it
//! never answers ungated), [`Gate::open`] with `held_until − now` on every renewal, [`Gate::close`]
//! the moment the lease ends or before a release removes the address, [`Gate::unmanage`] once
//! the address is gone for good, [`Gate::remove`] at shutdown after releasing everything. The
//! tables outlive the agent's process on purpose (no nft `owner` flag, which would delete them
//! with its socket), and installing again keeps the sets and their elements, so an address a
//! killed agent left behind stays gated.

use std::io::{self, Write};
use std::net::IpAddr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use netlink_packet_core::{NLM_F_ACK, NLM_F_CREATE, NLM_F_REQUEST, NetlinkMessage, NetlinkPayload};
use netlink_packet_netfilter::nftables::{
    DataAttribute, ListAttribute, NfTablesMessage, SetElementAttribute, SetElementList,
    SetElementMessage, TableAttribute, TableMessage,
};
use netlink_packet_netfilter::none::ControlMessage;
use netlink_packet_netfilter::{NetfilterHeader, NetfilterMessage, NetfilterProtoFamily};
use netlink_sys::Socket;
use netlink_sys::protocols::NETLINK_NETFILTER;

/// The name of pvefleet's gate tables (`arp pvefleet_vip` and `inet pvefleet_vip`).
pub const TABLE: &str = "pvefleet_vip";

/// The longest table name [`Gate::install`] accepts (the kernel allows 255 bytes).
pub const MAX_TABLE_NAME: usize = 64;

/// Where Debian's `nftables` package puts `nft`.
const NFT: &str = "/usr/sbin/nft";

/// `NFNL_SUBSYS_NFTABLES`: the batch messages name the subsystem they open.
const NFNL_SUBSYS_NFTABLES: u16 = 10;

/// Why the gate could not be installed, changed or removed.
#[derive(Debug, thiserror::Error)]
pub enum GateError {
    /// The table name is not a plain nft identifier (it is written into an nft script).
    #[error(
        "{0:?} is not a valid gate table name: a letter, then letters, digits or '_', at most \
         {MAX_TABLE_NAME} in all"
    )]
    BadName(String),
    /// `nft` could not be run (Debian's `nftables` package is missing).
    #[error("cannot run nft (Debian package nftables): {0}")]
    Nft(#[source] io::Error),
    /// `nft` refused the tables (e.g. no CAP_NET_ADMIN, or an older gate with other sets).
    #[error("nft could not install the gate tables {table}: {stderr}")]
    Refused {
        /// The tables' name.
        table: String,
        /// What nft said.
        stderr: String,
    },
    /// No netfilter netlink socket (not Linux, or no permission).
    #[error("cannot open a netfilter netlink socket: {0}")]
    Socket(#[source] io::Error),
    /// The kernel refused to change an address's elements (e.g. the tables were removed under
    /// the gate: ENOENT) or the socket failed.
    #[error("cannot {what} {address} in the gate tables {table}: {source}")]
    Kernel {
        /// The change.
        what: &'static str,
        /// The address.
        address: IpAddr,
        /// The tables' name.
        table: String,
        /// The kernel's answer.
        #[source]
        source: io::Error,
    },
    /// The kernel refused to delete the tables.
    #[error("cannot remove the gate tables {table}: {source}")]
    Remove {
        /// The tables' name.
        table: String,
        /// The kernel's answer.
        #[source]
        source: io::Error,
    },
}

/// The table families pvefleet's gate uses.
#[derive(Debug, Clone, Copy)]
enum Family {
    /// ARP packets (IPv4 neighbour resolution).
    Arp,
    /// IPv4 and IPv6 traffic.
    Inet,
}

impl Family {
    fn netlink(self) -> NetfilterProtoFamily {
        match self {
            Family::Arp => NetfilterProtoFamily::ARP,
            Family::Inet => NetfilterProtoFamily::Inet,
        }
    }
}

/// The sets an address's `managed` element lives in (the same bytes in each).
fn managed_sets(address: IpAddr) -> &'static [(Family, &'static str)] {
    match address {
        IpAddr::V4(_) => &[(Family::Arp, "managed4"), (Family::Inet, "managed4")],
        IpAddr::V6(_) => &[(Family::Inet, "managed6"), (Family::Inet, "managed6_na")],
    }
}

/// The sets an address's timed `held` element lives in.
fn held_sets(address: IpAddr) -> &'static [(Family, &'static str)] {
    match address {
        IpAddr::V4(_) => &[(Family::Arp, "held4"), (Family::Inet, "held4")],
        IpAddr::V6(_) => &[(Family::Inet, "held6"), (Family::Inet, "held6_na")],
    }
}

/// The tables, sets and rules, as one nft script that is one transaction. Every statement is
/// an `add` (a no-op for what exists) and the chains are flushed before their rules are added,
/// so running it again changes nothing but the rules' counters and keeps every element.
fn structure(table: &str) -> String {
    format!(
        "add table arp {table}
add set arp {table} managed4 {{ type ipv4_addr; }}
add set arp {table} held4 {{ type ipv4_addr; flags timeout; }}
add chain arp {table} output {{ type filter hook output priority filter; policy accept; }}
flush chain arp {table} output
add rule arp {table} output arp saddr ip @managed4 arp saddr ip != @held4 counter drop
add table inet {table}
add set inet {table} managed4 {{ type ipv4_addr; }}
add set inet {table} held4 {{ type ipv4_addr; flags timeout; }}
add set inet {table} managed6 {{ type ipv6_addr; }}
add set inet {table} held6 {{ type ipv6_addr; flags timeout; }}
add set inet {table} managed6_na {{ typeof @th,64,128; }}
add set inet {table} held6_na {{ typeof @th,64,128; flags timeout; }}
add chain inet {table} input {{ type filter hook input priority filter; policy accept; }}
flush chain inet {table} input
add rule inet {table} input ip daddr @managed4 ip daddr != @held4 counter drop
add rule inet {table} input ip6 daddr @managed6 ip6 daddr != @held6 counter drop
add chain inet {table} output {{ type filter hook output priority filter; policy accept; }}
flush chain inet {table} output
add rule inet {table} output icmpv6 type nd-neighbor-advert @th,64,128 @managed6_na @th,64,128 != @held6_na counter drop
add rule inet {table} output ip saddr @managed4 ip saddr != @held4 counter drop
add rule inet {table} output ip6 saddr @managed6 ip6 saddr != @held6 counter drop
"
    )
}

fn valid_name(table: &str) -> bool {
    let mut chars = table.chars();
    table.len() <= MAX_TABLE_NAME
        && chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Runs `script` through `nft -f -` in the calling thread's network namespace.
fn nft(table: &str, script: &str) -> Result<(), GateError> {
    // Debian's path first: a unit or a test may run with a PATH without /usr/sbin.
    let program = if Path::new(NFT).exists() { NFT } else { "nft" };
    let mut child = Command::new(program)
        .args(["-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(GateError::Nft)?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(script.as_bytes()).map_err(GateError::Nft)?;
    }
    let output = child.wait_with_output().map_err(GateError::Nft)?;
    if output.status.success() {
        Ok(())
    } else {
        Err(GateError::Refused {
            table: table.to_string(),
            stderr: String::from_utf8_lossy(&output.stderr).trim().to_string(),
        })
    }
}

/// One change to one element, in one set.
struct Change {
    family: Family,
    set: &'static str,
    /// `None` deletes; `Some(None)` adds without a timeout; `Some(Some(ms))` adds with one.
    add: Option<Option<u64>>,
}

/// The netlink socket and the next sequence number, used by one batch at a time: the answers
/// to a batch are read back by the sender, so two batches must not interleave.
struct Link {
    socket: Socket,
    seq: u32,
}

/// pvefleet's gate tables in this network namespace, and the netlink socket that changes their
/// elements. Dropping it leaves the tables and elements in the kernel (held elements run out
/// by themselves); [`Gate::remove`] deletes them.
pub struct Gate {
    table: String,
    link: Mutex<Link>,
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gate").field("table", &self.table).finish()
    }
}

impl Gate {
    /// Creates (or brings up to date, keeping their elements) the tables `arp {table}` and
    /// `inet {table}` with their sets and rules, in one transaction, in the calling thread's
    /// network namespace, and opens the netlink socket for the elements there. Touches no
    /// other table. Runs `nft` once: milliseconds, at start.
    ///
    /// # Errors
    /// [`GateError::BadName`], [`GateError::Nft`], [`GateError::Refused`],
    /// [`GateError::Socket`].
    pub fn install(table: &str) -> Result<Gate, GateError> {
        if !valid_name(table) {
            return Err(GateError::BadName(table.to_string()));
        }
        nft(table, &structure(table))?;
        let mut socket = Socket::new(NETLINK_NETFILTER).map_err(GateError::Socket)?;
        socket.bind_auto().map_err(GateError::Socket)?;
        // The kernel answers a batch while it is being sent, so once `send` returns every
        // answer is queued: reading until the queue is empty never waits.
        socket.set_non_blocking(true).map_err(GateError::Socket)?;
        Ok(Gate {
            table: table.to_string(),
            link: Mutex::new(Link { socket, seq: 1 }),
        })
    }

    /// The tables' name.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// Puts `address` under the gate: from now on the host answers for it only while it is
    /// open. Managing an address twice is managing it once.
    ///
    /// # Errors
    /// [`GateError::Kernel`].
    pub fn manage(&self, address: IpAddr) -> Result<(), GateError> {
        let changes: Vec<Change> = managed_sets(address)
            .iter()
            .map(|&(family, set)| Change {
                family,
                set,
                add: Some(None),
            })
            .collect();
        self.commit("manage", address, &changes)
    }

    /// Takes `address` out from under the gate (and closes it): the host answers for it like
    /// for any other address. Idempotent.
    ///
    /// # Errors
    /// [`GateError::Kernel`].
    pub fn unmanage(&self, address: IpAddr) -> Result<(), GateError> {
        let mut changes = Vec::new();
        for &(family, set) in managed_sets(address) {
            changes.extend(delete(family, set, None));
        }
        for &(family, set) in held_sets(address) {
            changes.extend(delete(family, set, Some(CLOSE_PLACEHOLDER_MS)));
        }
        self.commit("unmanage", address, &changes)
    }

    /// Opens the gate for `address` for `duration` from now (whole milliseconds, rounded down;
    /// the kernel counts in ticks and may end it up to a tick early, never late), replacing any
    /// time it had left, longer or shorter: call it with `held_until − now` on every renewal.
    /// A duration under a millisecond closes it, because the kernel reads a zero timeout as
    /// "never expires". Matters only for a managed address.
    ///
    /// # Errors
    /// [`GateError::Kernel`].
    pub fn open(&self, address: IpAddr, duration: Duration) -> Result<(), GateError> {
        let ms = u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
        if ms == 0 {
            return self.close(address);
        }
        // Re-adding an existing element leaves its timeout as it was on older kernels (PVE 8's
        // 6.8; 6.18 updates it), so the element is added (for the delete to find one), deleted
        // and added again with the new timeout, in one transaction: packets see the old
        // element or the new one, never none.
        let mut changes = Vec::new();
        for &(family, set) in held_sets(address) {
            changes.extend(delete(family, set, Some(ms)));
            changes.push(Change {
                family,
                set,
                add: Some(Some(ms)),
            });
        }
        self.commit("open", address, &changes)
    }

    /// Closes the gate for `address` at once. Idempotent.
    ///
    /// # Errors
    /// [`GateError::Kernel`].
    pub fn close(&self, address: IpAddr) -> Result<(), GateError> {
        let mut changes = Vec::new();
        for &(family, set) in held_sets(address) {
            changes.extend(delete(family, set, Some(CLOSE_PLACEHOLDER_MS)));
        }
        self.commit("close", address, &changes)
    }

    /// Deletes the gate's tables (at shutdown, after every VIP was released), in the gate's
    /// network namespace, whatever the caller's: the host then answers for every address it
    /// has. Idempotent (installing and removing again is fine).
    ///
    /// # Errors
    /// [`GateError::Remove`].
    pub fn remove(self) -> Result<(), GateError> {
        let table = |family: Family, delete: bool| {
            let body = TableMessage {
                attributes: vec![TableAttribute::Name(self.table.clone())],
            };
            let header = NetfilterHeader::new(family.netlink(), 0, 0);
            // Added first so the delete always finds one (nft 1.0.6 has no `destroy`).
            if delete {
                (
                    NetfilterMessage::new(header, NfTablesMessage::DeleteTable(body)),
                    NLM_F_REQUEST | NLM_F_ACK,
                )
            } else {
                (
                    NetfilterMessage::new(header, NfTablesMessage::NewTable(body)),
                    NLM_F_REQUEST | NLM_F_CREATE | NLM_F_ACK,
                )
            }
        };
        let messages = [Family::Arp, Family::Inet]
            .into_iter()
            .flat_map(|family| [table(family, false), table(family, true)])
            .collect();
        self.send(messages).map_err(|source| GateError::Remove {
            table: self.table.clone(),
            source,
        })
    }

    /// Sends `changes` to one address's elements as one transaction.
    fn commit(
        &self,
        what: &'static str,
        address: IpAddr,
        changes: &[Change],
    ) -> Result<(), GateError> {
        let key = match address {
            IpAddr::V4(a) => a.octets().to_vec(),
            IpAddr::V6(a) => a.octets().to_vec(),
        };
        let messages = changes
            .iter()
            .map(|change| {
                let mut element = vec![SetElementAttribute::Key(DataAttribute::Value(key.clone()))];
                if let Some(Some(ms)) = change.add {
                    element.push(SetElementAttribute::Timeout(ms));
                }
                let body = SetElementMessage {
                    attributes: vec![
                        SetElementList::Table(self.table.clone()),
                        SetElementList::Set(change.set.to_string()),
                        SetElementList::Elements(vec![ListAttribute::Element(element)]),
                    ],
                };
                let header = NetfilterHeader::new(change.family.netlink(), 0, 0);
                match change.add {
                    Some(_) => (
                        NetfilterMessage::new(header, NfTablesMessage::NewSetElement(body)),
                        NLM_F_REQUEST | NLM_F_CREATE | NLM_F_ACK,
                    ),
                    None => (
                        NetfilterMessage::new(header, NfTablesMessage::DeleteSetElement(body)),
                        NLM_F_REQUEST | NLM_F_ACK,
                    ),
                }
            })
            .collect();
        self.send(messages).map_err(|source| GateError::Kernel {
            what,
            address,
            table: self.table.clone(),
            source,
        })
    }

    /// Sends `messages` (each with its netlink flags, each asking for an ack) as one
    /// transaction, and reads the kernel's answer to each.
    fn send(&self, messages: Vec<(NetfilterMessage, u16)>) -> Result<(), io::Error> {
        // A panic elsewhere while holding the lock leaves the socket as good as it was.
        let mut link = self.link.lock().unwrap_or_else(PoisonError::into_inner);
        let first = link.seq;
        let count = messages.len() as u32;
        let mut batch = Vec::new();
        let mut seq = first;
        let mut push = |message: NetfilterMessage, flags: u16| {
            let mut message = NetlinkMessage::from(message);
            message.header.flags = flags;
            message.header.sequence_number = seq;
            seq = seq.wrapping_add(1);
            message.finalize();
            let at = batch.len();
            batch.resize(at + message.buffer_len(), 0);
            message.serialize(&mut batch[at..]);
        };
        let subsystem = NetfilterHeader::new(NetfilterProtoFamily::Unspec, 0, NFNL_SUBSYS_NFTABLES);
        push(
            NetfilterMessage::new(subsystem.clone(), ControlMessage::BatchBegin),
            NLM_F_REQUEST,
        );
        for (message, flags) in messages {
            push(message, flags);
        }
        push(
            NetfilterMessage::new(subsystem, ControlMessage::BatchEnd),
            NLM_F_REQUEST,
        );
        link.seq = seq;

        // Answers left over from an earlier batch that failed half-way are read and dropped.
        drain(&link.socket, |_, _| {})?;
        link.socket.send(&batch, 0)?;
        // One answer per message (an ack, or the error that undid the whole transaction);
        // the batch's own begin or end is answered only when the batch as a whole failed.
        let mut acked = 0u32;
        let mut failed: Option<io::Error> = None;
        drain(&link.socket, |reply_seq, code| {
            // 0 is the begin, 1..=count the messages, count + 1 the end; others are not ours.
            let offset = reply_seq.wrapping_sub(first);
            if offset > count + 1 {
                return;
            }
            if code != 0 {
                failed.get_or_insert_with(|| io::Error::from_raw_os_error(code.abs()));
            } else if (1..=count).contains(&offset) {
                acked += 1;
            }
        })?;
        if let Some(error) = failed {
            return Err(error);
        }
        if acked != count {
            return Err(io::Error::other(format!(
                "the kernel acknowledged {acked} of {count} changes"
            )));
        }
        Ok(())
    }
}

/// The timeout of the element [`Gate::close`] adds for its delete to find: deleted again in
/// the same transaction, so its length never shows.
const CLOSE_PLACEHOLDER_MS: u64 = 1000;

/// Adds (with `timeout_ms` for a timed set) then deletes an element: a delete that succeeds
/// whether or not the element was there.
fn delete(family: Family, set: &'static str, timeout_ms: Option<u64>) -> [Change; 2] {
    [
        Change {
            family,
            set,
            add: Some(timeout_ms),
        },
        Change {
            family,
            set,
            add: None,
        },
    ]
}

/// Reads every queued answer, calling `answer(seq, error code)` for each netlink error message
/// (code 0 is an ack), until none is left.
fn drain(socket: &Socket, mut answer: impl FnMut(u32, i32)) -> Result<(), io::Error> {
    let mut buffer = Vec::with_capacity(64 * 1024);
    loop {
        buffer.clear();
        match socket.recv(&mut buffer, 0) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
        let mut at = 0;
        while at < buffer.len() {
            let message = NetlinkMessage::<NetfilterMessage>::deserialize(&buffer[at..])
                .map_err(|e| io::Error::other(format!("unreadable netlink answer: {e}")))?;
            let length = message.header.length as usize;
            if let NetlinkPayload::Error(error) = &message.payload {
                answer(message.header.sequence_number, error.raw_code());
            }
            if length == 0 {
                break;
            }
            // Netlink messages in one datagram start on 4-byte boundaries.
            at += length.next_multiple_of(4);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_names_are_plain_identifiers() {
        assert!(valid_name(TABLE));
        assert!(valid_name("a1_b"));
        for bad in ["", "1abc", "a b", "a;flush ruleset", "a-b", "é"] {
            assert!(!valid_name(bad), "{bad:?}");
        }
        assert!(!valid_name(&"a".repeat(MAX_TABLE_NAME + 1)));
        assert!(matches!(
            Gate::install("x y"),
            Err(GateError::BadName(name)) if name == "x y"
        ));
    }

    #[test]
    fn the_structure_names_only_its_own_tables() {
        let script = structure("pvf_t");
        for line in script.lines() {
            assert!(
                line.contains(" arp pvf_t") || line.contains(" inet pvf_t"),
                "{line}"
            );
        }
    }

    #[test]
    fn every_set_an_element_goes_to_is_in_the_structure() {
        let script = structure(TABLE);
        for address in ["10.0.0.1", "fd00::1"] {
            let address: IpAddr = address.parse().unwrap();
            for (family, set) in managed_sets(address).iter().chain(held_sets(address)) {
                let family = match family {
                    Family::Arp => "arp",
                    Family::Inet => "inet",
                };
                assert!(
                    script.contains(&format!("add set {family} {TABLE} {set} ")),
                    "{family} {set}"
                );
            }
            for &(_, set) in held_sets(address) {
                assert!(script.contains(&format!("{set} {{ ")), "{set}");
            }
        }
    }
}

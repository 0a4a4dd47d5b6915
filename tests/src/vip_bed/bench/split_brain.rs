//! The split-brain probe of the benchmark: every host drops IP protocol 112 (VRRP) in and out,
//! as a PVE firewall without a rule for it does, for a few seconds, and the record says how
//! many hosts held and answered for the VIP at once meanwhile. keepalived's backups stop
//! hearing the master and each becomes master too; pvefleet does not use VRRP, so nothing
//! changes (docs/design/vips.md, "What keepalived gets wrong").
//!
//! The rules live in a table of the benchmark's own (never the agents' gate tables, nor the
//! testbed's `pvf_bed`), removed from every host it was added to, also when adding failed.

use std::time::Duration;

use crate::vip_bed::error::BedError;
use crate::vip_bed::network::Network;
use crate::vip_bed::record::{Record, Stats};

/// The nftables table of these rules.
const TABLE: &str = "pvf_bench_vrrp";

/// Drops VRRP on every host of `network` for `hold`; what `record` shows over that time.
///
/// # Errors
/// [`BedError::Lab`] (`nft` refused) if the rules cannot be added or removed.
pub fn filter_vrrp(network: &Network, record: &Record, hold: Duration) -> Result<Stats, BedError> {
    let script = format!(
        "table inet {TABLE} {{
  chain input {{ type filter hook input priority -10; policy accept; meta l4proto 112 drop; }}
  chain output {{ type filter hook output priority -10; policy accept; meta l4proto 112 drop; }}
}}
"
    );
    let from = record.mark("VRRP dropped between the hosts");
    let mut added = Vec::new();
    let mut result = Ok(());
    for host in &network.hosts {
        result = host.netns.nft(&script);
        if result.is_err() {
            break;
        }
        added.push(host);
    }
    if result.is_ok() {
        // A deliberate wait: the filter's effect is what is measured.
        std::thread::sleep(hold);
    }
    let to = record.mark("VRRP allowed again");
    let delete = format!("delete table inet {TABLE}\n");
    for host in added {
        let removed = host.netns.nft(&delete);
        if result.is_ok() {
            result = removed;
        }
    }
    Ok(result.map(|()| record.stats(from, to))?)
}

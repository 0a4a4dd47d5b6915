//! Tables for what VMs draw from: IP pools, VMID ranges and virtual IPs, each with how much of
//! it is in use.

use protocol::admin::{PoolListReply, VipListReply, VmidRangeListReply};
use protocol::fleet::IpPool;
use protocol::spec::ip_to_u128;

use super::human::or_dash;
use super::table::Table;
use super::{Context, Render};

/// How many addresses a pool hands out (its range, minus the gateway if inside it); `None` for
/// a definition that does not parse (never stored by a valid cluster).
pub fn pool_size(pool: &IpPool) -> Option<u128> {
    let b = pool.spec.bounds().ok()?;
    let (start, end) = (ip_to_u128(b.start), ip_to_u128(b.end));
    let gateway_inside = b
        .gateway
        .map(ip_to_u128)
        .is_some_and(|gw| (start..=end).contains(&gw));
    Some(end - start + 1 - u128::from(gateway_inside))
}

impl Render for PoolListReply {
    fn table(&self, _ctx: &Context) -> String {
        if self.pools.is_empty() {
            return "no IP pools: define one with `pvefleet pool apply -f FILE`\n".to_string();
        }
        let mut t = Table::new(&["NAME", "CIDR", "RANGE", "GATEWAY", "DNS", "USED"]);
        for pool in &self.pools {
            let s = &pool.spec;
            let used = pool.allocations.len();
            t.row(vec![
                s.name.clone(),
                s.cidr.clone(),
                format!("{}-{}", s.range_start, s.range_end),
                or_dash(s.gateway.as_ref()),
                if s.dns.is_empty() {
                    "-".into()
                } else {
                    s.dns.join(",")
                },
                match pool_size(pool) {
                    Some(size) => format!("{used}/{size}"),
                    None => used.to_string(),
                },
            ]);
        }
        t.render()
    }
}

impl Render for VmidRangeListReply {
    fn table(&self, _ctx: &Context) -> String {
        if self.ranges.is_empty() {
            return "no VMID ranges: define one with `pvefleet range apply -f FILE`\n".to_string();
        }
        let mut t = Table::new(&["NAME", "START", "END", "USED"]);
        for range in &self.ranges {
            let s = &range.spec;
            let size = u64::from(s.end.saturating_sub(s.start)) + 1;
            t.row(vec![
                s.name.clone(),
                s.start.to_string(),
                s.end.to_string(),
                format!("{}/{size}", range.allocations.len()),
            ]);
        }
        t.render()
    }
}

impl Render for VipListReply {
    fn table(&self, ctx: &Context) -> String {
        if self.vips.is_empty() {
            return "no VIPs: define one with `pvefleet vip apply -f FILE`\n".to_string();
        }
        let mut t = Table::new(&["NAME", "ADDRESS", "INTERFACE", "HOSTS", "OWNER", "EPOCH"]);
        for vip in &self.vips {
            let s = &vip.spec;
            t.row(vec![
                s.name.clone(),
                s.address.clone(),
                s.interface.clone(),
                if s.hosts.is_empty() {
                    "any".into()
                } else {
                    s.hosts.join(",")
                },
                ctx.host(vip.owner),
                vip.epoch.to_string(),
            ]);
        }
        t.render()
    }
}

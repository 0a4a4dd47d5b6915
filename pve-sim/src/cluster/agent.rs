//! The QEMU guest agent endpoints: `agent/ping` and `agent/network-get-interfaces`, with the
//! checks of `assert_agent_available` in PVE's order (`No QEMU guest agent configured`,
//! `VM <vmid> is not running`, `QEMU guest agent is not running`). The guest's agent answers
//! once `agent_ip_delay_secs` (scaled) have passed since the guest booted, never when the fault
//! registry marks it dead (then the guest-ping timeout of 3 s, scaled, passes first).

use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::config::text::VmConfig;
use super::drive::{Net, net_index, parse_kv};
use super::inner::Inner;
use super::request::{node, vmid};
use super::vm::agent_enabled;
use crate::{ApiError, Params, Reply};

/// What the agent check found.
struct Guest {
    conf: VmConfig,
    vmid: u32,
    uptime: u64,
}

async fn assert_agent_available(cx: &Arc<Inner>, p: &Params) -> Result<Guest, ApiError> {
    let (node, vmid) = (node(p)?, vmid(p)?);
    let (guest, dead, ready) = {
        let st = cx.state();
        let vm = st.load(node, vmid)?;
        if !agent_enabled(&vm.conf) {
            return Err(ApiError::internal("No QEMU guest agent configured"));
        }
        if !vm.run.running {
            return Err(ApiError::internal(format!("VM {vmid} is not running")));
        }
        let since = vm
            .run
            .guest_booted
            .map_or(0.0, |t| t.elapsed().as_secs_f64());
        let ready = since >= cx.agent_ip_delay * cx.time_scale;
        let dead = cx.faults.agent_dead(vmid) || vm.run.paused;
        let uptime = vm.run.started.map_or(0, |t| t.elapsed().as_secs());
        (
            Guest {
                conf: vm.conf.clone(),
                vmid,
                uptime,
            },
            dead,
            ready,
        )
    };
    if dead {
        tokio::time::sleep(Duration::from_secs_f64(3.0 * cx.time_scale)).await;
        return Err(ApiError::internal("QEMU guest agent is not running"));
    }
    if !ready {
        return Err(ApiError::internal("QEMU guest agent is not running"));
    }
    Ok(guest)
}

/// `POST .../agent/ping`.
pub(super) async fn ping(cx: &Arc<Inner>, p: &Params) -> Result<Reply, ApiError> {
    assert_agent_available(cx, p).await?;
    Ok(Reply::data(json!({ "result": {} })))
}

/// `GET .../agent/network-get-interfaces`.
pub(super) async fn network_get_interfaces(cx: &Arc<Inner>, p: &Params) -> Result<Reply, ApiError> {
    let guest = assert_agent_available(cx, p).await?;
    Ok(Reply::data(json!({ "result": interfaces(&guest) })))
}

fn stats(seed: u64, uptime: u64) -> Value {
    let rx = 4_096 + uptime * (1_500 + seed % 700);
    let tx = 2_048 + uptime * (600 + seed % 300);
    json!({
        "rx-bytes": rx, "rx-dropped": 0, "rx-errs": 0, "rx-packets": rx / 600,
        "tx-bytes": tx, "tx-dropped": 0, "tx-errs": 0, "tx-packets": tx / 400,
    })
}

/// A stable address in 100.64.0.0/10 for a DHCP interface.
pub(super) fn dhcp_address(vmid: u32, index: u32) -> Ipv4Addr {
    let span = (1u64 << 22) - 4;
    let offset = (u64::from(vmid) * 32 + u64::from(index)) % span + 2;
    let mut addr = 0x6440_0000u32 + u32::try_from(offset).unwrap_or(2);
    if addr & 0xff == 0 || addr & 0xff == 0xff {
        addr += 2;
    }
    Ipv4Addr::from(addr)
}

/// EUI-64 link-local address of a MAC.
fn link_local(mac: &str) -> Option<String> {
    let b: Vec<u8> = mac
        .split(':')
        .map(|x| u8::from_str_radix(x, 16))
        .collect::<Result<_, _>>()
        .ok()?;
    if b.len() != 6 {
        return None;
    }
    let w = [
        u16::from_be_bytes([b[0] ^ 0x02, b[1]]),
        u16::from_be_bytes([b[2], 0xff]),
        u16::from_be_bytes([0xfe, b[3]]),
        u16::from_be_bytes([b[4], b[5]]),
    ];
    Some(format!("fe80::{:x}:{:x}:{:x}:{:x}", w[0], w[1], w[2], w[3]))
}

fn addr(kind: &str, ip: &str, prefix: u32) -> Value {
    json!({ "ip-address-type": kind, "ip-address": ip, "prefix": prefix })
}

fn interfaces(g: &Guest) -> Vec<Value> {
    let mut out = vec![json!({
        "name": "lo",
        "hardware-address": "00:00:00:00:00:00",
        "ip-addresses": [addr("ipv4", "127.0.0.1", 8), addr("ipv6", "::1", 128)],
        "statistics": stats(0, g.uptime),
    })];
    let mut nets: Vec<(u32, Net)> = g
        .conf
        .main
        .iter()
        .filter_map(|(k, v)| Some((net_index(k)?, Net::parse(v)?)))
        .filter(|(_, n)| n.opts.get("link_down").is_none_or(|l| l != "1"))
        .collect();
    nets.sort_by_key(|(i, _)| *i);
    for (ordinal, (index, net)) in nets.iter().enumerate() {
        let mac = net.mac.clone().unwrap_or_default().to_lowercase();
        let ipconfig = g
            .conf
            .get(&format!("ipconfig{index}"))
            .map(|v| parse_kv(v, "ip"))
            .unwrap_or_default();
        let mut ips = Vec::new();
        match ipconfig.get("ip").and_then(|ip| ip.split_once('/')) {
            Some((ip, prefix)) => ips.push(addr("ipv4", ip, prefix.parse().unwrap_or(24))),
            None => ips.push(addr("ipv4", &dhcp_address(g.vmid, *index).to_string(), 10)),
        }
        if let Some((ip6, prefix)) = ipconfig.get("ip6").and_then(|ip| ip.split_once('/')) {
            ips.push(addr("ipv6", ip6, prefix.parse().unwrap_or(64)));
        }
        if let Some(ll) = link_local(&mac) {
            ips.push(addr("ipv6", &ll, 64));
        }
        out.push(json!({
            "name": format!("eth{ordinal}"),
            "hardware-address": mac,
            "ip-addresses": ips,
            "statistics": stats(u64::from(*index) + 1, g.uptime),
        }));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dhcp_addresses_stay_in_cgnat_space_and_differ() {
        let a = dhcp_address(100, 0);
        let b = dhcp_address(100, 1);
        assert_ne!(a, b);
        for ip in [a, b, dhcp_address(999_999_999, 31)] {
            let o = ip.octets();
            assert_eq!(o[0], 100);
            assert!((64..128).contains(&o[1]));
            assert!(o[3] != 0 && o[3] != 255);
        }
    }

    #[test]
    fn link_local_uses_eui64() {
        assert_eq!(
            link_local("bc:24:11:aa:bb:cc").unwrap(),
            "fe80::be24:11ff:feaa:bbcc"
        );
    }
}

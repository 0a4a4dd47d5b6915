//! Scenario tests of the guest agent: error order, the IP delay after boot, static and DHCP addresses.

use std::time::Duration;

use serde_json::Value;

use super::support::{fast, with};
use crate::{Route, SimConfig};

const N1: (&str, &str) = ("node", "pve1");
const V100: (&str, &str) = ("vmid", "100");

#[tokio::test]
async fn agent_errors_come_in_pve_order_and_ips_appear_after_the_delay() {
    let s = with(SimConfig {
        time_scale: 0.05,
        agent_ip_delay_secs: 20.0,
        ..SimConfig::default()
    });
    s.create_vm("pve1", "100", "local-lvm").await;
    let e = s.err(Route::AgentNetwork, &[N1, V100]).await;
    assert_eq!(e.message, "No QEMU guest agent configured");
    s.ok(
        Route::VmConfigPut,
        &[
            N1,
            V100,
            ("agent", "enabled=1"),
            ("ipconfig0", "ip=10.1.2.3/24,gw=10.1.2.1"),
        ],
    )
    .await;
    let e = s.err(Route::AgentPing, &[N1, V100]).await;
    assert_eq!(e.message, "VM 100 is not running");
    s.start("pve1", "100").await;
    let e = s.err(Route::AgentNetwork, &[N1, V100]).await;
    assert_eq!(e.message, "QEMU guest agent is not running");
    let mut result = Value::Null;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while result.is_null() {
        match s.call(Route::AgentNetwork, &[N1, V100]).await {
            Ok(r) => result = r.data,
            Err(e) => assert_eq!(e.message, "QEMU guest agent is not running"),
        }
        assert!(std::time::Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let ifaces = result["result"].as_array().unwrap();
    assert_eq!(ifaces[0]["name"], "lo");
    assert_eq!(ifaces[1]["name"], "eth0");
    let mac = s.config("pve1", "100").await["net0"].as_str().unwrap()[7..24].to_lowercase();
    assert_eq!(ifaces[1]["hardware-address"], Value::from(mac));
    assert_eq!(ifaces[1]["ip-addresses"][0]["ip-address"], "10.1.2.3");
    assert_eq!(ifaces[1]["ip-addresses"][0]["prefix"], 24);
    assert_eq!(ifaces[1]["ip-addresses"][1]["ip-address-type"], "ipv6");
    assert_eq!(
        s.ok(Route::AgentPing, &[N1, V100]).await,
        serde_json::json!({ "result": {} })
    );
    s.faults.set_agent_dead(100, true);
    let e = s.err(Route::AgentPing, &[N1, V100]).await;
    assert_eq!(e.message, "QEMU guest agent is not running");
}

#[tokio::test]
async fn dhcp_interfaces_get_stable_cgnat_addresses() {
    let s = fast();
    s.create_vm("pve1", "100", "local-lvm").await;
    s.ok(
        Route::VmConfigPut,
        &[
            N1,
            V100,
            ("agent", "1"),
            ("net1", "virtio,bridge=vmbr1"),
            ("ipconfig1", "ip=dhcp"),
        ],
    )
    .await;
    s.start("pve1", "100").await;
    let r = s.ok(Route::AgentNetwork, &[N1, V100]).await;
    let ifaces = r["result"].as_array().unwrap();
    assert_eq!(ifaces.len(), 3);
    for i in &ifaces[1..] {
        assert!(
            i["ip-addresses"][0]["ip-address"]
                .as_str()
                .unwrap()
                .starts_with("100.")
        );
    }
    let again = s.ok(Route::AgentNetwork, &[N1, V100]).await;
    assert_eq!(
        again["result"][2]["ip-addresses"],
        r["result"][2]["ip-addresses"]
    );
}

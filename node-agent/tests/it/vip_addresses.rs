//! The agent's VIP addresses, for real, in network namespaces the tests make themselves (root:
//! CI runs as root; nothing leaves the namespace, which is deleted even when a test fails):
//! only addresses carrying pvefleet's marker are listed, released and swept, an address
//! someone else added is never taken over or removed, and holding is idempotent.

use crate::netns_support;

use std::net::IpAddr;

use netlink_packet_route::address::AddressAttribute;
use netns_support::{Netns, dump};
use node_agent::vip::addresses::{Held, VipAddresses, VipError};

/// A network namespace with one up bridge `vmbr0` (as on a PVE host).
fn with_bridge() -> Netns {
    let ns = Netns::new("vip");
    ns.ip(&["link", "add", "vmbr0", "type", "bridge"]);
    ns.ip(&["link", "set", "vmbr0", "up"]);
    ns
}

/// An address added the way an operator would (no marker).
fn add_foreign(ns: &Netns, cidr: &str) {
    ns.ip(&["address", "add", cidr, "dev", "vmbr0"]);
}

fn addr(s: &str) -> IpAddr {
    s.parse().unwrap()
}

/// Every address on the namespace's interfaces, marker or not.
async fn all_addresses() -> Vec<IpAddr> {
    let messages = dump(|h| h.address().get().execute()).await;
    let mut out: Vec<IpAddr> = messages
        .iter()
        .filter_map(|m| {
            m.attributes
                .iter()
                .find_map(|a| match a {
                    AddressAttribute::Local(ip) => Some(*ip),
                    _ => None,
                })
                .or_else(|| {
                    m.attributes.iter().find_map(|a| match a {
                        AddressAttribute::Address(ip) => Some(*ip),
                        _ => None,
                    })
                })
        })
        .collect();
    out.sort();
    out
}

#[test]
fn only_addresses_carrying_the_marker_are_listed_released_and_swept() {
    let ns = with_bridge();
    add_foreign(&ns, "10.77.0.5/24");
    add_foreign(&ns, "fd00:77::5/64");
    ns.run(async || {
        let vips = VipAddresses::connect().unwrap();
        vips.hold("vmbr0", addr("10.77.0.100"), 24).await.unwrap();
        vips.hold("vmbr0", addr("fd00:77::100"), 64).await.unwrap();
        let index = vips.interface_index("vmbr0").await.unwrap();
        assert_eq!(
            vips.interface_name(index).await.unwrap().as_deref(),
            Some("vmbr0")
        );
        let v4 = Held {
            index,
            address: addr("10.77.0.100"),
            prefix_len: 24,
        };
        let v6 = Held {
            index,
            address: addr("fd00:77::100"),
            prefix_len: 64,
        };
        assert_eq!(vips.ours().await.unwrap(), [v4.clone(), v6.clone()]);

        // The start-up sweep keeps what is still held and removes only pvefleet's others.
        assert_eq!(vips.sweep(std::slice::from_ref(&v4)).await.unwrap(), [v6]);
        let left = all_addresses().await;
        for kept in ["10.77.0.5", "fd00:77::5", "10.77.0.100"] {
            assert!(left.contains(&addr(kept)), "{kept} is gone: {left:?}");
        }
        assert!(!left.contains(&addr("fd00:77::100")), "{left:?}");
        assert!(vips.release(index, addr("10.77.0.100")).await.unwrap());
        assert!(vips.ours().await.unwrap().is_empty());
    });
}

#[test]
fn an_address_someone_else_added_is_never_taken_over_or_removed() {
    let ns = with_bridge();
    add_foreign(&ns, "10.78.0.5/24");
    ns.run(async || {
        let vips = VipAddresses::connect().unwrap();
        let taken = vips.hold("vmbr0", addr("10.78.0.5"), 24).await.unwrap_err();
        assert!(matches!(taken, VipError::Foreign { .. }), "{taken}");
        assert!(
            taken.to_string().contains("was not added by pvefleet"),
            "{taken}"
        );
        let index = vips.interface_index("vmbr0").await.unwrap();
        assert!(!vips.release(index, addr("10.78.0.5")).await.unwrap());
        assert!(vips.sweep(&[]).await.unwrap().is_empty());
        assert!(all_addresses().await.contains(&addr("10.78.0.5")));
    });
}

#[test]
fn holding_is_idempotent_and_a_missing_interface_is_said() {
    let ns = with_bridge();
    ns.run(async || {
        let vips = VipAddresses::connect().unwrap();
        for _ in 0..2 {
            vips.hold("vmbr0", addr("10.79.0.100"), 24).await.unwrap();
        }
        assert_eq!(vips.ours().await.unwrap().len(), 1);
        let missing = vips
            .hold("vmbr9", addr("10.79.0.101"), 24)
            .await
            .unwrap_err();
        assert!(
            matches!(missing, VipError::NoInterface(ref i) if i == "vmbr9"),
            "{missing}"
        );
    });
}

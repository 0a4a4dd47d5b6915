//! The Linux capabilities holding a VIP takes (adding an address over netlink needs
//! `CAP_NET_ADMIN`, the gratuitous ARP and unsolicited neighbour advertisements a raw socket,
//! `CAP_NET_RAW`), read from the process's effective set (`CapEff` in `/proc/self/status`,
//! which is the kernel's documented interface for it; there is no syscall wrapper in std).

/// `CAP_NET_ADMIN`'s bit (linux/capability.h).
const CAP_NET_ADMIN: u32 = 12;
/// `CAP_NET_RAW`'s bit.
const CAP_NET_RAW: u32 = 13;

/// The capabilities VIPs need, by name and bit.
const VIP_CAPABILITIES: &[(&str, u32)] = &[
    ("CAP_NET_ADMIN", CAP_NET_ADMIN),
    ("CAP_NET_RAW", CAP_NET_RAW),
];

/// The VIP capabilities missing from `status` (the text of `/proc/self/status`); every one
/// when the effective set cannot be read.
pub fn missing_vip_capabilities(status: &str) -> Vec<String> {
    let effective = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        .unwrap_or(0);
    VIP_CAPABILITIES
        .iter()
        .filter(|(_, bit)| effective & (1 << bit) == 0)
        .map(|(name, _)| (*name).to_string())
        .collect()
}

/// [`missing_vip_capabilities`] of this process.
pub fn missing_vip_capabilities_now() -> Vec<String> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    missing_vip_capabilities(&status)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_effective_set_is_read_bit_by_bit() {
        let all = "Name:\tx\nCapEff:\t000001ffffffffff\n";
        assert!(missing_vip_capabilities(all).is_empty());
        let admin_only = format!("CapEff:\t{:016x}\n", 1u64 << CAP_NET_ADMIN);
        assert_eq!(missing_vip_capabilities(&admin_only), ["CAP_NET_RAW"]);
        assert_eq!(
            missing_vip_capabilities("CapEff:\t0000000000000000\n"),
            ["CAP_NET_ADMIN", "CAP_NET_RAW"]
        );
        assert_eq!(missing_vip_capabilities("garbage").len(), 2);
    }
}

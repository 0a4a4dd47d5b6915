//! Addresses with a prefix length (`10.0.0.5/24`, `fd00::1/64`) and the integer view of an IP
//! address that pools use to walk their ranges. Specs keep addresses as text (so a bad one is
//! reported with its field); validation and allocation parse them with [`Cidr`].

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

/// An IP address with a prefix length, IPv4 or IPv6.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Cidr {
    address: IpAddr,
    prefix_len: u8,
}

/// Text that is not `ADDRESS/PREFIX` with a valid address and a prefix within its family.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{0}' is not an address with a prefix length (e.g. 10.0.0.5/24 or fd00::5/64)")]
pub struct CidrError(pub String);

impl Cidr {
    /// Builds a CIDR from an address and a prefix length, refusing a prefix too long for the
    /// address family.
    pub fn new(address: IpAddr, prefix_len: u8) -> Option<Cidr> {
        (prefix_len <= max_prefix(address)).then_some(Cidr {
            address,
            prefix_len,
        })
    }

    /// The address as written (host bits kept).
    pub fn address(&self) -> IpAddr {
        self.address
    }

    /// The prefix length in bits.
    pub fn prefix_len(&self) -> u8 {
        self.prefix_len
    }

    /// The network address (host bits cleared).
    pub fn network(&self) -> IpAddr {
        from_u128(self.address, ip_to_u128(self.address) & self.mask())
    }

    /// Whether the written address is the network address itself (host bits all zero).
    pub fn is_network(&self) -> bool {
        self.network() == self.address
    }

    /// Whether `ip` is of the same family and inside this prefix.
    pub fn contains(&self, ip: IpAddr) -> bool {
        ip.is_ipv4() == self.address.is_ipv4()
            && ip_to_u128(ip) & self.mask() == ip_to_u128(self.address) & self.mask()
    }

    /// The IPv4 broadcast address, for prefixes that have one (/0 to /30); `None` for IPv6 and
    /// for /31 and /32, where every address is a host address (RFC 3021).
    pub fn broadcast(&self) -> Option<IpAddr> {
        match self.address {
            IpAddr::V4(_) if self.prefix_len <= 30 => Some(from_u128(
                self.address,
                ip_to_u128(self.address) | (!self.mask() & u128::from(u32::MAX)),
            )),
            _ => None,
        }
    }

    /// Whether `ip` is the network or broadcast address of this prefix (not usable by a host).
    /// IPv6 and IPv4 /31 and /32 have no such reserved addresses here.
    pub fn is_reserved(&self, ip: IpAddr) -> bool {
        let v4_wide = self.address.is_ipv4() && self.prefix_len <= 30;
        v4_wide && (ip == self.network() || Some(ip) == self.broadcast())
    }

    fn mask(&self) -> u128 {
        let bits = u32::from(max_prefix(self.address));
        let host_bits = bits - u32::from(self.prefix_len);
        let all = if bits == 32 {
            u128::from(u32::MAX)
        } else {
            u128::MAX
        };
        // `checked_shl` is None for a 128-bit shift (prefix /0 of IPv6): no network bits at all.
        all & all.checked_shl(host_bits).unwrap_or(0)
    }
}

impl FromStr for Cidr {
    type Err = CidrError;

    fn from_str(s: &str) -> Result<Cidr, CidrError> {
        let bad = || CidrError(s.to_string());
        let (addr, prefix) = s.split_once('/').ok_or_else(bad)?;
        let address: IpAddr = addr.parse().map_err(|_| bad())?;
        // Digits only: `u8::from_str` would also take a leading '+'.
        if prefix.is_empty() || !prefix.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        let prefix_len: u8 = prefix.parse().map_err(|_| bad())?;
        Cidr::new(address, prefix_len).ok_or_else(bad)
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.address, self.prefix_len)
    }
}

fn max_prefix(ip: IpAddr) -> u8 {
    if ip.is_ipv4() { 32 } else { 128 }
}

/// The address as an integer (IPv4 in the low 32 bits), so ranges can be walked.
pub fn ip_to_u128(ip: IpAddr) -> u128 {
    match ip {
        IpAddr::V4(v4) => u128::from(u32::from(v4)),
        IpAddr::V6(v6) => u128::from(v6),
    }
}

/// The address `n` in the family of `like` (IPv4 keeps the low 32 bits).
fn from_u128(like: IpAddr, n: u128) -> IpAddr {
    match like {
        // Truncation is intended: callers only pass values derived from an IPv4 address.
        IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::from(n as u32)),
        IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::from(n)),
    }
}

/// The address right after `ip` in its family, or `None` past the family's last address.
pub fn next_ip(ip: IpAddr) -> Option<IpAddr> {
    match ip {
        IpAddr::V4(v4) => u32::from(v4)
            .checked_add(1)
            .map(|n| IpAddr::V4(Ipv4Addr::from(n))),
        IpAddr::V6(v6) => u128::from(v6)
            .checked_add(1)
            .map(|n| IpAddr::V6(Ipv6Addr::from(n))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn parses_and_refuses_cidr_text() {
        let ok: Cidr = "10.0.0.5/24".parse().unwrap();
        assert_eq!((ok.address(), ok.prefix_len()), (ip("10.0.0.5"), 24));
        assert_eq!(ok.to_string(), "10.0.0.5/24");
        for bad in [
            "10.0.0.5",
            "10.0.0.5/33",
            "10.0.0/24",
            "fd00::1/129",
            "10.0.0.1/+8",
            "/8",
        ] {
            assert!(bad.parse::<Cidr>().is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn network_broadcast_and_membership_follow_the_prefix() {
        let c: Cidr = "192.168.1.77/24".parse().unwrap();
        assert_eq!(c.network(), ip("192.168.1.0"));
        assert_eq!(c.broadcast(), Some(ip("192.168.1.255")));
        assert!(!c.is_network());
        assert!(c.contains(ip("192.168.1.1")));
        assert!(!c.contains(ip("192.168.2.1")));
        assert!(!c.contains(ip("::1")));
        assert!(c.is_reserved(ip("192.168.1.0")) && c.is_reserved(ip("192.168.1.255")));
        let p2p: Cidr = "10.0.0.0/31".parse().unwrap();
        assert!(!p2p.is_reserved(ip("10.0.0.0")));
        let v6: Cidr = "fd00::/64".parse().unwrap();
        assert!(v6.is_network() && v6.contains(ip("fd00::ffff")) && v6.broadcast().is_none());
        let all: Cidr = "::/0".parse().unwrap();
        assert!(all.contains(ip("2001:db8::1")));
        let all4: Cidr = "0.0.0.0/0".parse().unwrap();
        assert!(all4.contains(ip("8.8.8.8")));
    }

    #[test]
    fn next_ip_walks_and_stops_at_the_family_end() {
        assert_eq!(next_ip(ip("10.0.0.255")), Some(ip("10.0.1.0")));
        assert_eq!(next_ip(ip("255.255.255.255")), None);
        assert_eq!(next_ip(ip("fd00::ff")), Some(ip("fd00::100")));
    }
}

//! `ipconfig[n]`: cloud-init addressing of the n-th NIC, `ip=10.0.0.5/24,gw=10.0.0.1`,
//! `ip=dhcp`, `ip6=auto`.
//!
//! Validated like qemu-server's `pve-qm-ipconfig`: addresses in CIDR form with the prefix
//! lengths PVE's `cidrv4`/`cidrv6` formats accept (8..=32, 8..=128), gateways as plain
//! addresses of the same family, and a gateway only together with a static address.

use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

use crate::error::PveError;
use crate::props::kv::{self, invalid, split};

/// The IPv4 setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ipv4Config {
    /// `dhcp`.
    Dhcp,
    /// `ADDR/PREFIX`.
    Static {
        /// Address.
        addr: Ipv4Addr,
        /// Prefix length, 8..=32.
        prefix: u8,
    },
}

/// The IPv6 setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ipv6Config {
    /// `dhcp`.
    Dhcp,
    /// `auto` (SLAAC).
    Auto,
    /// `ADDR/PREFIX`.
    Static {
        /// Address.
        addr: Ipv6Addr,
        /// Prefix length, 8..=128.
        prefix: u8,
    },
}

impl fmt::Display for Ipv4Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Dhcp => f.write_str("dhcp"),
            Self::Static { addr, prefix } => write!(f, "{addr}/{prefix}"),
        }
    }
}

impl fmt::Display for Ipv6Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Dhcp => f.write_str("dhcp"),
            Self::Auto => f.write_str("auto"),
            Self::Static { addr, prefix } => write!(f, "{addr}/{prefix}"),
        }
    }
}

/// Cloud-init addressing of one NIC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IpConfig {
    /// IPv4 address or DHCP.
    pub ip: Option<Ipv4Config>,
    /// IPv4 gateway (only with a static `ip`).
    pub gw: Option<Ipv4Addr>,
    /// IPv6 address, DHCP or SLAAC.
    pub ip6: Option<Ipv6Config>,
    /// IPv6 gateway (only with a static `ip6`).
    pub gw6: Option<Ipv6Addr>,
}

fn check_prefix(field: &str, prefix: u8, max: u8) -> Result<u8, PveError> {
    kv::check_range(field, prefix, 8, max).map_err(|_| {
        invalid(
            field,
            format!("prefix /{prefix} is out of range; allowed /8../{max}"),
        )
    })
}

impl IpConfig {
    /// DHCP on IPv4.
    pub fn dhcp() -> Self {
        Self {
            ip: Some(Ipv4Config::Dhcp),
            ..Self::default()
        }
    }

    /// A static IPv4 address with an optional gateway.
    pub fn static_v4(addr: Ipv4Addr, prefix: u8, gw: Option<Ipv4Addr>) -> Self {
        Self {
            ip: Some(Ipv4Config::Static { addr, prefix }),
            gw,
            ..Self::default()
        }
    }

    /// Check the rules PVE applies.
    pub fn validate(&self) -> Result<(), PveError> {
        if self.ip.is_none() && self.ip6.is_none() {
            return Err(invalid("ip", "neither ip nor ip6 is set"));
        }
        if let Some(Ipv4Config::Static { prefix, .. }) = self.ip {
            check_prefix("ip", prefix, 32)?;
        }
        if let Some(Ipv6Config::Static { prefix, .. }) = self.ip6 {
            check_prefix("ip6", prefix, 128)?;
        }
        if self.gw.is_some() && !matches!(self.ip, Some(Ipv4Config::Static { .. })) {
            return Err(invalid(
                "gw",
                "a gateway needs a static ip (not dhcp, not absent)",
            ));
        }
        if self.gw6.is_some() && !matches!(self.ip6, Some(Ipv6Config::Static { .. })) {
            return Err(invalid(
                "gw6",
                "a gateway needs a static ip6 (not dhcp/auto, not absent)",
            ));
        }
        Ok(())
    }

    /// The validated property string (`ip=...,gw=...,ip6=...,gw6=...`).
    pub fn to_property_string(&self) -> Result<String, PveError> {
        self.validate()?;
        let mut w = kv::Writer::default();
        if let Some(ip) = self.ip {
            w.lead("ip", ip);
        }
        if let Some(gw) = self.gw {
            w.lead("gw", gw);
        }
        if let Some(ip6) = self.ip6 {
            w.lead("ip6", ip6);
        }
        if let Some(gw6) = self.gw6 {
            w.lead("gw6", gw6);
        }
        Ok(w.finish())
    }
}

fn parse_cidr<A: FromStr>(field: &str, value: &str, max: u8) -> Result<(A, u8), PveError> {
    let bad = || {
        invalid(
            field,
            format!("'{value}' is not ADDRESS/PREFIX (prefix 8..={max})"),
        )
    };
    let (addr, prefix) = value.split_once('/').ok_or_else(bad)?;
    let addr = addr.parse().map_err(|_| bad())?;
    let prefix: u8 = prefix.parse().map_err(|_| bad())?;
    Ok((addr, check_prefix(field, prefix, max)?))
}

impl FromStr for IpConfig {
    type Err = PveError;

    fn from_str(text: &str) -> Result<Self, PveError> {
        let mut c = Self::default();
        for (key, value) in split("ipconfig", text)? {
            match key {
                Some("ip") => {
                    c.ip = Some(match value {
                        "dhcp" => Ipv4Config::Dhcp,
                        _ => {
                            let (addr, prefix) = parse_cidr("ip", value, 32)?;
                            Ipv4Config::Static { addr, prefix }
                        }
                    });
                }
                Some("ip6") => {
                    c.ip6 = Some(match value {
                        "dhcp" => Ipv6Config::Dhcp,
                        "auto" => Ipv6Config::Auto,
                        _ => {
                            let (addr, prefix) = parse_cidr("ip6", value, 128)?;
                            Ipv6Config::Static { addr, prefix }
                        }
                    });
                }
                Some("gw") => {
                    c.gw =
                        Some(value.parse().map_err(|_| {
                            invalid("gw", format!("'{value}' is not an IPv4 address"))
                        })?);
                }
                Some("gw6") => {
                    c.gw6 = Some(value.parse().map_err(|_| {
                        invalid("gw6", format!("'{value}' is not an IPv6 address"))
                    })?);
                }
                Some(k) => {
                    return Err(invalid(
                        "ipconfig",
                        format!("unknown key '{k}' (ip, gw, ip6, gw6)"),
                    ));
                }
                None => {
                    return Err(invalid(
                        "ipconfig",
                        format!("'{value}' has no key (ip=, gw=, ip6=, gw6=)"),
                    ));
                }
            }
        }
        c.validate()?;
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field_of(e: PveError) -> String {
        e.invalid_field()
            .map(str::to_string)
            .unwrap_or_else(|| panic!("not Invalid"))
    }

    #[test]
    fn builds_pve_spelling() {
        let v4 = IpConfig::static_v4(
            Ipv4Addr::new(10, 0, 0, 5),
            24,
            Some(Ipv4Addr::new(10, 0, 0, 1)),
        );
        assert_eq!(
            v4.to_property_string().unwrap(),
            "ip=10.0.0.5/24,gw=10.0.0.1"
        );
        assert_eq!(IpConfig::dhcp().to_property_string().unwrap(), "ip=dhcp");
        let dual = IpConfig {
            ip6: Some(Ipv6Config::Static {
                addr: "2001:db8::5".parse().unwrap(),
                prefix: 64,
            }),
            gw6: Some("2001:db8::1".parse().unwrap()),
            ..IpConfig::dhcp()
        };
        assert_eq!(
            dual.to_property_string().unwrap(),
            "ip=dhcp,ip6=2001:db8::5/64,gw6=2001:db8::1"
        );
        let slaac = IpConfig {
            ip6: Some(Ipv6Config::Auto),
            ..IpConfig::default()
        };
        assert_eq!(slaac.to_property_string().unwrap(), "ip6=auto");
    }

    #[test]
    fn parses_any_order_and_round_trips() {
        let c: IpConfig = "gw=192.168.1.1,ip=192.168.1.10/24".parse().unwrap();
        assert_eq!(
            c.to_property_string().unwrap(),
            "ip=192.168.1.10/24,gw=192.168.1.1"
        );
        for text in [
            "ip=dhcp",
            "ip=10.1.2.3/8,gw=10.0.0.1,ip6=dhcp",
            "ip6=fd00::2/128,gw6=fd00::1",
        ] {
            let c: IpConfig = text.parse().unwrap();
            assert_eq!(c.to_property_string().unwrap(), text);
            assert_eq!(
                c.to_property_string().unwrap().parse::<IpConfig>().unwrap(),
                c
            );
        }
    }

    #[test]
    fn every_validation_error_names_its_field() {
        for (text, field) in [
            ("", "ip"),
            ("ip=10.0.0.5", "ip"),
            ("ip=10.0.0.5/33", "ip"),
            ("ip=10.0.0.5/7", "ip"),
            ("ip=10.0.0.256/24", "ip"),
            ("ip=dhcp,gw=10.0.0.1", "gw"),
            ("ip=10.0.0.5/24,gw=2001:db8::1", "gw"),
            ("ip6=auto,gw6=fd00::1", "gw6"),
            ("ip6=fd00::1/129", "ip6"),
            ("ip6=10.0.0.1/24", "ip6"),
            ("ip=10.0.0.5/24,gw6=fd00::1", "gw6"),
            ("ip=10.0.0.5/24,gw6=10.0.0.1", "gw6"),
            ("ip=dhcp,mask=24", "ipconfig"),
            ("dhcp", "ipconfig"),
        ] {
            assert_eq!(
                field_of(text.parse::<IpConfig>().unwrap_err()),
                field,
                "{text}"
            );
        }
        let built = IpConfig::static_v4(Ipv4Addr::new(10, 0, 0, 5), 40, None);
        assert_eq!(field_of(built.to_property_string().unwrap_err()), "ip");
    }
}

//! `net[n]`: a VM network device, `virtio=BC:24:11:AA:BB:CC,bridge=vmbr0,firewall=1,tag=10`.
//!
//! Written like qemu-server prints it: `<model>=<MAC>` first (or `model=<model>` when PVE is to
//! generate the MAC), then the other keys sorted (unknown ones included). Read in every form PVE accepts: the
//! `<model>=<MAC>` shorthand, `model=` + `macaddr=`, or a bare model. Keys this client does not
//! model are kept in `extra` so a device read from a config writes back unchanged.

use std::fmt;
use std::str::FromStr;

use crate::error::PveError;
use crate::props::ids::check_bridge;
use crate::props::kv::{self, check_range, invalid, parse_bool, parse_u32_in, split};
use crate::props::str_enum::str_enum;

str_enum! {
    /// Emulated network card model.
    pub enum NetModel: "model" {
        E1000 = "e1000",
        E1000_82540em = "e1000-82540em",
        E1000_82544gc = "e1000-82544gc",
        E1000_82545em = "e1000-82545em",
        E1000e = "e1000e",
        I82551 = "i82551",
        I82557b = "i82557b",
        I82559er = "i82559er",
        Ne2kIsa = "ne2k_isa",
        Ne2kPci = "ne2k_pci",
        Pcnet = "pcnet",
        Rtl8139 = "rtl8139",
        Virtio = "virtio",
        Vmxnet3 = "vmxnet3",
    }
}

/// A unicast MAC address, written `XX:XX:XX:XX:XX:XX` in upper case as PVE generates them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MacAddr(pub [u8; 6]);

impl FromStr for MacAddr {
    type Err = PveError;

    fn from_str(s: &str) -> Result<Self, PveError> {
        let bad = |why: &str| invalid("macaddr", format!("'{s}' {why}"));
        let mut out = [0u8; 6];
        let parts: Vec<&str> = s.split(':').collect();
        if parts.len() != 6 {
            return Err(bad(
                "is not six ':'-separated hex pairs (XX:XX:XX:XX:XX:XX)",
            ));
        }
        for (slot, part) in out.iter_mut().zip(&parts) {
            if part.len() != 2 || !part.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(bad(
                    "is not six ':'-separated hex pairs (XX:XX:XX:XX:XX:XX)",
                ));
            }
            *slot = u8::from_str_radix(part, 16).map_err(|_| bad("has a bad hex pair"))?;
        }
        if out[0] & 1 != 0 {
            return Err(bad(
                "is a multicast address; a NIC needs a unicast MAC (even first octet)",
            ));
        }
        Ok(Self(out))
    }
}

impl fmt::Display for MacAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [a, b, c, d, e, g] = self.0;
        write!(f, "{a:02X}:{b:02X}:{c:02X}:{d:02X}:{e:02X}:{g:02X}")
    }
}

/// One network device of a VM.
#[derive(Debug, Clone, PartialEq)]
pub struct NetDevice {
    /// Card model.
    pub model: NetModel,
    /// MAC address; `None` lets PVE generate one (prefix `BC:24:11`).
    pub macaddr: Option<MacAddr>,
    /// Bridge (`vmbr0`); `None` = user-mode NAT networking.
    pub bridge: Option<String>,
    /// Protect with the PVE firewall.
    pub firewall: Option<bool>,
    /// Disconnect the link.
    pub link_down: Option<bool>,
    /// MTU, 1..=65520 (1 = the bridge's MTU; VirtIO only).
    pub mtu: Option<u32>,
    /// Packet queues, 0..=64.
    pub queues: Option<u32>,
    /// Rate limit in MB/s.
    pub rate: Option<f64>,
    /// VLAN tag, 1..=4094.
    pub tag: Option<u16>,
    /// VLAN trunks, `10;20-30`.
    pub trunks: Option<String>,
    /// Sub-keys this client does not model, in the order read (written sorted among the rest).
    pub extra: Vec<(String, String)>,
}

impl NetDevice {
    /// A device of `model` on no bridge, everything else PVE's default.
    pub fn new(model: NetModel) -> Self {
        Self {
            model,
            macaddr: None,
            bridge: None,
            firewall: None,
            link_down: None,
            mtu: None,
            queues: None,
            rate: None,
            tag: None,
            trunks: None,
            extra: Vec::new(),
        }
    }

    /// A VirtIO device on `bridge` (the usual fleet NIC).
    pub fn virtio(bridge: &str) -> Self {
        Self {
            bridge: Some(bridge.to_string()),
            ..Self::new(NetModel::Virtio)
        }
    }

    /// Check every value against the schema's rules.
    pub fn validate(&self) -> Result<(), PveError> {
        if let Some(b) = &self.bridge {
            check_bridge("bridge", b)?;
        }
        if let Some(m) = self.mtu {
            check_range("mtu", m, 1, 65520)?;
        }
        if let Some(q) = self.queues {
            check_range("queues", q, 0, 64)?;
        }
        if let Some(r) = self.rate
            && (!r.is_finite() || r < 0.0)
        {
            return Err(invalid("rate", format!("{r} is not a rate in MB/s (>= 0)")));
        }
        if let Some(t) = self.tag {
            check_range("tag", t, 1, 4094)?;
        }
        if let Some(t) = &self.trunks {
            check_trunks(t)?;
        }
        kv::check_extras("net", &self.extra, is_known_key)?;
        Ok(())
    }

    /// The validated property string.
    pub fn to_property_string(&self) -> Result<String, PveError> {
        self.validate()?;
        let mut w = kv::Writer::default();
        match self.macaddr {
            Some(mac) => w.lead(self.model.as_str(), mac),
            None => w.lead("model", self.model),
        }
        w.opt("bridge", self.bridge.as_deref());
        w.flag("firewall", self.firewall);
        w.flag("link_down", self.link_down);
        w.opt("mtu", self.mtu);
        w.opt("queues", self.queues);
        w.opt("rate", self.rate);
        w.opt("tag", self.tag);
        w.opt("trunks", self.trunks.as_deref());
        for (k, v) in &self.extra {
            w.kv(k, v);
        }
        Ok(w.finish())
    }
}

fn is_known_key(key: &str) -> bool {
    matches!(
        key,
        "model"
            | "macaddr"
            | "bridge"
            | "firewall"
            | "link_down"
            | "mtu"
            | "queues"
            | "rate"
            | "tag"
            | "trunks"
    ) || key.parse::<NetModel>().is_ok()
}

fn check_trunks(trunks: &str) -> Result<(), PveError> {
    let bad = || {
        invalid(
            "trunks",
            format!("'{trunks}' is not a VLAN list like 10;20-30 (ids 1..=4094)"),
        )
    };
    for item in trunks.split(';') {
        let (lo, hi) = item.split_once('-').unwrap_or((item, item));
        let lo = parse_u32_in("trunks", lo, 1, 4094).map_err(|_| bad())?;
        let hi = parse_u32_in("trunks", hi, 1, 4094).map_err(|_| bad())?;
        if lo > hi {
            return Err(bad());
        }
    }
    Ok(())
}

impl FromStr for NetDevice {
    type Err = PveError;

    fn from_str(text: &str) -> Result<Self, PveError> {
        let mut model: Option<NetModel> = None;
        let mut dev = Self::new(NetModel::Virtio);
        let mut set_model = |m: NetModel| -> Result<(), PveError> {
            if model.replace(m).is_some() {
                return Err(invalid("model", format!("given twice in '{text}'")));
            }
            Ok(())
        };
        for (key, value) in split("net", text)? {
            match key {
                None | Some("model") => set_model(value.parse()?)?,
                Some("macaddr") => {
                    if dev.macaddr.replace(value.parse()?).is_some() {
                        return Err(invalid("macaddr", format!("given twice in '{text}'")));
                    }
                }
                Some("bridge") => dev.bridge = Some(value.to_string()),
                Some("firewall") => dev.firewall = Some(parse_bool("firewall", value)?),
                Some("link_down") => dev.link_down = Some(parse_bool("link_down", value)?),
                Some("mtu") => dev.mtu = Some(parse_u32_in("mtu", value, 1, 65520)?),
                Some("queues") => dev.queues = Some(parse_u32_in("queues", value, 0, 64)?),
                Some("rate") => {
                    dev.rate = Some(
                        value
                            .parse()
                            .map_err(|_| invalid("rate", format!("'{value}' is not a number")))?,
                    );
                }
                Some("tag") => {
                    let t = parse_u32_in("tag", value, 1, 4094)?;
                    dev.tag = u16::try_from(t).ok();
                }
                Some("trunks") => dev.trunks = Some(value.to_string()),
                Some(k) => match k.parse::<NetModel>() {
                    Ok(m) => {
                        set_model(m)?;
                        if dev.macaddr.replace(value.parse()?).is_some() {
                            return Err(invalid("macaddr", format!("given twice in '{text}'")));
                        }
                    }
                    Err(_) => dev.extra.push((k.to_string(), value.to_string())),
                },
            }
        }
        dev.model = model.ok_or_else(|| invalid("model", format!("missing in '{text}'")))?;
        dev.validate()?;
        Ok(dev)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mac(s: &str) -> MacAddr {
        s.parse().unwrap()
    }

    fn field_of(e: PveError) -> String {
        e.invalid_field()
            .map(str::to_string)
            .unwrap_or_else(|| panic!("not Invalid"))
    }

    #[test]
    fn builds_pve_spelling() {
        let cases = [
            (
                NetDevice {
                    macaddr: Some(mac("BC:24:11:AA:BB:CC")),
                    firewall: Some(true),
                    tag: Some(10),
                    ..NetDevice::virtio("vmbr0")
                },
                "virtio=BC:24:11:AA:BB:CC,bridge=vmbr0,firewall=1,tag=10",
            ),
            (NetDevice::virtio("vmbr0"), "model=virtio,bridge=vmbr0"),
            (
                NetDevice {
                    link_down: Some(false),
                    mtu: Some(1),
                    queues: Some(4),
                    rate: Some(12.5),
                    trunks: Some("10;20-30".into()),
                    ..NetDevice::new(NetModel::E1000e)
                },
                "model=e1000e,link_down=0,mtu=1,queues=4,rate=12.5,trunks=10;20-30",
            ),
        ];
        for (dev, text) in cases {
            assert_eq!(dev.to_property_string().unwrap(), text);
        }
    }

    #[test]
    fn parses_every_accepted_form() {
        let a: NetDevice = "virtio=bc:24:11:aa:bb:cc,bridge=vmbr0,firewall=1"
            .parse()
            .unwrap();
        assert_eq!(a.model, NetModel::Virtio);
        assert_eq!(a.macaddr, Some(mac("BC:24:11:AA:BB:CC")));
        assert_eq!(a.firewall, Some(true));
        let b: NetDevice = "model=vmxnet3,macaddr=02:00:00:00:00:01,tag=5"
            .parse()
            .unwrap();
        assert_eq!((b.model, b.tag), (NetModel::Vmxnet3, Some(5)));
        let c: NetDevice = "bridge=vmbr1,rtl8139".parse().unwrap();
        assert_eq!(
            (c.model, c.bridge.as_deref()),
            (NetModel::Rtl8139, Some("vmbr1"))
        );
    }

    #[test]
    fn round_trips() {
        for text in [
            "virtio=BC:24:11:AA:BB:CC,bridge=vmbr0,firewall=1,tag=10",
            "model=e1000,bridge=vmbr0,link_down=1,mtu=9000,queues=2,rate=100,trunks=2;3-9",
            "virtio=BC:24:11:00:00:01,bridge=vmbr0,host-mtu=1500,tag=7",
        ] {
            let dev: NetDevice = text.parse().unwrap();
            assert_eq!(dev.to_property_string().unwrap(), text);
            assert_eq!(
                dev.to_property_string()
                    .unwrap()
                    .parse::<NetDevice>()
                    .unwrap(),
                dev
            );
        }
    }

    #[test]
    fn unknown_keys_are_kept_in_order() {
        let dev: NetDevice = "virtio,bridge=vmbr0,zz=1,future-key=x".parse().unwrap();
        let keys: Vec<&str> = dev.extra.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["zz", "future-key"]);
        assert_eq!(
            dev.to_property_string().unwrap(),
            "model=virtio,bridge=vmbr0,future-key=x,zz=1"
        );
    }

    #[test]
    fn every_validation_error_names_its_field() {
        let cases: Vec<(&str, &str)> = vec![
            ("virtio=01:00:00:00:00:01", "macaddr"),
            ("virtio=BC:24:11:AA:BB", "macaddr"),
            ("virtio=BC:24:11:AA:BB:GG", "macaddr"),
            (
                "model=virtio,macaddr=BC:24:11:AA:BB:CC,virtio=BC:24:11:AA:BB:CC",
                "model",
            ),
            ("model=fancy", "model"),
            ("bridge=vmbr0", "model"),
            ("virtio,bridge=vm br0", "bridge"),
            ("virtio,bridge=vmbr/0", "bridge"),
            ("virtio,tag=0", "tag"),
            ("virtio,tag=4095", "tag"),
            ("virtio,mtu=0", "mtu"),
            ("virtio,mtu=65521", "mtu"),
            ("virtio,queues=65", "queues"),
            ("virtio,rate=fast", "rate"),
            ("virtio,rate=-1", "rate"),
            ("virtio,firewall=maybe", "firewall"),
            ("virtio,trunks=0", "trunks"),
            ("virtio,trunks=30-20", "trunks"),
            ("virtio,tag=1,tag=2", "net"),
        ];
        for (text, field) in cases {
            let err = text.parse::<NetDevice>().unwrap_err();
            assert_eq!(field_of(err), field, "{text}");
        }
        let built = NetDevice {
            tag: Some(0),
            ..NetDevice::virtio("vmbr0")
        };
        assert_eq!(field_of(built.to_property_string().unwrap_err()), "tag");
        let built = NetDevice {
            extra: vec![("bridge".into(), "x".into())],
            ..NetDevice::virtio("vmbr0")
        };
        assert_eq!(field_of(built.to_property_string().unwrap_err()), "bridge");
    }

    #[test]
    fn mac_formats_upper_case_and_refuses_multicast() {
        assert_eq!(mac("bc:24:11:0a:0b:0c").to_string(), "BC:24:11:0A:0B:0C");
        assert!("03:00:00:00:00:00".parse::<MacAddr>().is_err());
    }
}

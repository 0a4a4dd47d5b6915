//! `boot`: the boot order, `order=scsi0;ide2;net0`.
//!
//! Devices are drives (`ide0-3`, `sata0-5`, `scsi0-30`, `virtio0-15`), NICs (`net0-31`),
//! passthrough PCI (`hostpci0-15`) or USB (`usb0-13`) devices, each at most once, as
//! qemu-server's `pve-qm-bootdev` check allows. The deprecated `legacy=cdn` form is read and
//! kept so old configs parse.

use std::str::FromStr;

use crate::error::PveError;
use crate::props::disk::DiskSlot;
use crate::props::kv::{self, invalid, split};

/// A VM's boot order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BootOrder {
    /// Devices to boot from, in order.
    pub order: Vec<String>,
    /// Deprecated `legacy=` letters (`c`, `d`, `n`), kept only when read from an old config.
    pub legacy: Option<String>,
}

fn indexed(dev: &str, prefix: &str, max: u32) -> bool {
    dev.strip_prefix(prefix).is_some_and(|n| {
        !n.is_empty()
            && (n == "0" || !n.starts_with('0'))
            && n.parse::<u32>().is_ok_and(|i| i <= max)
    })
}

/// Whether `dev` may appear in a boot order.
pub fn is_boot_device(dev: &str) -> bool {
    matches!(dev.parse::<DiskSlot>(), Ok(DiskSlot::Drive(..)))
        || indexed(dev, "net", 31)
        || indexed(dev, "hostpci", 15)
        || indexed(dev, "usb", 13)
}

impl BootOrder {
    /// Boot from `devices` in order (validated).
    pub fn new<S: AsRef<str>>(devices: &[S]) -> Result<Self, PveError> {
        let b = Self {
            order: devices.iter().map(|d| d.as_ref().to_string()).collect(),
            legacy: None,
        };
        b.validate()?;
        Ok(b)
    }

    /// Check every device and that none repeats.
    pub fn validate(&self) -> Result<(), PveError> {
        if self.order.is_empty() && self.legacy.is_none() {
            return Err(invalid("order", "at least one boot device is needed"));
        }
        for (i, dev) in self.order.iter().enumerate() {
            if !is_boot_device(dev) {
                return Err(invalid(
                    "order",
                    format!(
                        "'{dev}' is not a boot device (ide0-3, sata0-5, scsi0-30, virtio0-15, net0-31, hostpci0-15, usb0-13)"
                    ),
                ));
            }
            if self.order[..i].contains(dev) {
                return Err(invalid("order", format!("'{dev}' appears twice")));
            }
        }
        if let Some(l) = &self.legacy {
            let ok = (1..=4).contains(&l.len()) && l.bytes().all(|b| b"acdn".contains(&b));
            if !ok {
                return Err(invalid(
                    "legacy",
                    format!("'{l}' is not 1 to 4 of the letters a, c, d, n"),
                ));
            }
        }
        Ok(())
    }

    /// The validated property string.
    pub fn to_property_string(&self) -> Result<String, PveError> {
        self.validate()?;
        let mut w = kv::Writer::default();
        w.opt("legacy", self.legacy.as_deref());
        if !self.order.is_empty() {
            w.kv("order", self.order.join(";"));
        }
        Ok(w.finish())
    }
}

impl FromStr for BootOrder {
    type Err = PveError;

    fn from_str(text: &str) -> Result<Self, PveError> {
        let mut b = Self::default();
        for (key, value) in split("boot", text)? {
            match key {
                Some("order") => {
                    b.order = value
                        .split(';')
                        .filter(|d| !d.is_empty())
                        .map(str::to_string)
                        .collect();
                }
                None | Some("legacy") => b.legacy = Some(value.to_string()),
                Some(k) => {
                    return Err(invalid(
                        "boot",
                        format!("unknown key '{k}' (order, legacy)"),
                    ));
                }
            }
        }
        b.validate()?;
        Ok(b)
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
    fn builds_and_round_trips() {
        let b = BootOrder::new(&["scsi0", "ide2", "net0"]).unwrap();
        assert_eq!(b.to_property_string().unwrap(), "order=scsi0;ide2;net0");
        for text in [
            "order=virtio0",
            "order=scsi0;net31;hostpci15;usb13",
            "legacy=cdn",
            "legacy=c,order=sata5",
        ] {
            let b: BootOrder = text.parse().unwrap();
            assert_eq!(b.to_property_string().unwrap(), text);
        }
        let bare: BootOrder = "cdn".parse().unwrap();
        assert_eq!(bare.legacy.as_deref(), Some("cdn"));
    }

    #[test]
    fn every_validation_error_names_its_field() {
        for (text, field) in [
            ("order=scsi31", "order"),
            ("order=net32", "order"),
            ("order=scsi0;scsi0", "order"),
            ("order=efidisk0", "order"),
            ("order=net01", "order"),
            ("order=", "boot"),
            ("legacy=xyz", "legacy"),
            ("menu=1", "boot"),
        ] {
            assert_eq!(
                field_of(text.parse::<BootOrder>().unwrap_err()),
                field,
                "{text}"
            );
        }
        assert_eq!(field_of(BootOrder::new::<&str>(&[]).unwrap_err()), "order");
    }
}

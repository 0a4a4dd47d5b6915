//! [`Settings`] as encoding v1 lays it out, frozen: v2 added the fleet's HA defaults
//! ([`Settings::ha`]) and automatic rebalancing ([`Settings::rebalance`]). v1 knew only PVE's
//! defaults and no rebalancing, so v1 settings read as PVE's defaults with rebalancing off, and
//! settings are written at v1 only if theirs are those ([`SettingsV1::exact`]).

use serde::{Deserialize, Serialize};

use super::{Rebalancing, Settings};
use crate::spec::HaDefaults;

/// [`Settings`] as encoding v1 lays it out (see [`Settings`] for the fields).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SettingsV1 {
    /// The VMID range of VMs that name none.
    pub default_vmid_range: Option<String>,
    /// vCPUs schedulable per host CPU, in percent.
    pub cpu_overcommit_percent: u32,
    /// Guest memory schedulable per MiB of host memory, in percent.
    pub memory_overcommit_percent: u32,
    /// Host memory kept free for PVE itself, in MiB.
    pub host_memory_reserve_mib: u64,
    /// Most VMs on one host.
    pub max_vms_per_host: Option<u32>,
}

impl From<SettingsV1> for Settings {
    fn from(v1: SettingsV1) -> Settings {
        Settings {
            default_vmid_range: v1.default_vmid_range,
            cpu_overcommit_percent: v1.cpu_overcommit_percent,
            memory_overcommit_percent: v1.memory_overcommit_percent,
            host_memory_reserve_mib: v1.host_memory_reserve_mib,
            max_vms_per_host: v1.max_vms_per_host,
            ha: HaDefaults::default(),
            rebalance: Rebalancing::default(),
        }
    }
}

impl SettingsV1 {
    /// `settings` in the v1 layout if v1 carries all of it (PVE's HA defaults, the default
    /// rebalancing); `None` otherwise: writing it at v1 would drop the operator's choices.
    pub fn exact(settings: &Settings) -> Option<SettingsV1> {
        (settings.ha == HaDefaults::default() && settings.rebalance == Rebalancing::default())
            .then(|| SettingsV1::shown(settings))
    }

    /// What a v1 reader can show: everything but the HA defaults and rebalancing.
    pub fn shown(settings: &Settings) -> SettingsV1 {
        SettingsV1 {
            default_vmid_range: settings.default_vmid_range.clone(),
            cpu_overcommit_percent: settings.cpu_overcommit_percent,
            memory_overcommit_percent: settings.memory_overcommit_percent,
            host_memory_reserve_mib: settings.host_memory_reserve_mib,
            max_vms_per_host: settings.max_vms_per_host,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::RecoveryMode;

    #[test]
    fn v1_settings_read_as_pves_ha_defaults_and_only_those_go_back_to_v1() {
        let mut settings = Settings {
            cpu_overcommit_percent: 250,
            max_vms_per_host: Some(40),
            ..Settings::default()
        };
        let v1 = SettingsV1::exact(&settings).expect("PVE's HA defaults fit v1");
        assert_eq!(Settings::from(v1.clone()), settings);
        settings.ha.recovery = RecoveryMode::Recreate;
        assert_eq!(SettingsV1::exact(&settings), None);
        assert_eq!(SettingsV1::shown(&settings), v1);
        settings.ha = HaDefaults::default();
        settings.rebalance.enabled = true;
        assert_eq!(SettingsV1::exact(&settings), None);
        assert_eq!(SettingsV1::shown(&settings), v1);
    }

    #[test]
    fn a_v1_reader_is_never_sent_ha_defaults_it_would_drop_and_reads_pves() {
        use crate::Rpc;
        use crate::admin::{SettingsGet, SettingsPut, SettingsReply};
        use crate::encoding::EncodingError;
        use crate::version::{HA_DEFAULTS, Version};

        let v1 = Version(1);
        let plain = SettingsPut {
            settings: Settings::default(),
        };
        let bytes = plain.encode_at(v1).unwrap();
        assert_eq!(SettingsPut::decode_at(v1, &bytes).unwrap(), plain);
        let mut tuned = plain.clone();
        tuned.settings.ha.max_restart = 0;
        assert!(matches!(
            tuned.encode_at(v1),
            Err(EncodingError::TooNew { needs, .. }) if needs == HA_DEFAULTS
        ));
        let at_v2 = tuned.encode_at(HA_DEFAULTS).unwrap();
        assert_eq!(SettingsPut::decode_at(HA_DEFAULTS, &at_v2).unwrap(), tuned);

        // A read shows a v1 reader everything but the HA defaults.
        let reply = SettingsReply {
            settings: tuned.settings.clone(),
        };
        let bytes = SettingsGet::encode_response_at(&reply, v1).unwrap();
        let read = SettingsGet::decode_response_at(v1, &bytes).unwrap();
        assert_eq!(read.settings, Settings::default());
        let bytes = SettingsPut::encode_response_at(&reply, HA_DEFAULTS).unwrap();
        assert_eq!(
            SettingsPut::decode_response_at(HA_DEFAULTS, &bytes).unwrap(),
            reply
        );
    }

    #[test]
    fn the_settings_table_takes_any_subset_and_refuses_unknown_keys() {
        let s: Settings = toml::from_str("[ha]\nrecovery = \"recreate\"\n").unwrap();
        assert_eq!(s.ha.recovery, RecoveryMode::Recreate);
        assert_eq!(s.ha.max_restart, 1);
        assert_eq!(s.cpu_overcommit_percent, 400);
        let e = toml::from_str::<Settings>("[ha]\nmax_restarts = 2\n").unwrap_err();
        assert!(e.to_string().contains("max_restarts"), "{e}");
        let e = toml::from_str::<Settings>("cpu_overcommit = 2\n").unwrap_err();
        assert!(e.to_string().contains("cpu_overcommit_percent"), "{e}");
        let mut s = Settings::default();
        s.ha.max_relocate = 11;
        let e = crate::fleet::validate_settings(&s).unwrap_err();
        assert_eq!(e.field, "ha.max_relocate");

        let s: Settings = toml::from_str(
            "[rebalance]
enabled = true
hold_s = 60
",
        )
        .unwrap();
        assert!(s.rebalance.enabled);
        assert_eq!(s.rebalance.hold_s, 60);
        assert_eq!(s.rebalance.threshold_pct, 10);
        let e = toml::from_str::<Settings>(
            "[rebalance]
hold = 60
",
        )
        .unwrap_err();
        assert!(e.to_string().contains("hold_s"), "{e}");
        let mut s = Settings::default();
        s.rebalance.hold_s = 1;
        let e = crate::fleet::validate_settings(&s).unwrap_err();
        assert_eq!(e.field, "rebalance.hold_s");
        assert!(e.to_string().contains("5-86400"), "{e}");
    }
}

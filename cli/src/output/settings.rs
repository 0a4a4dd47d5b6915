//! The table for `settings show|apply`: every setting with its value, then the HA defaults and
//! automatic rebalancing.

use protocol::admin::SettingsReply;

use super::human::or_dash;
use super::table::fields;
use super::{Context, Render};

impl Render for SettingsReply {
    fn table(&self, _ctx: &Context) -> String {
        let s = &self.settings;
        fields(&[
            (
                "default vmid range",
                s.default_vmid_range
                    .clone()
                    .unwrap_or_else(|| "- (the only range, if there is one)".to_string()),
            ),
            ("cpu overcommit", format!("{}%", s.cpu_overcommit_percent)),
            (
                "memory overcommit",
                format!("{}%", s.memory_overcommit_percent),
            ),
            (
                "host memory reserve",
                format!("{} MiB", s.host_memory_reserve_mib),
            ),
            ("max vms per host", or_dash(s.max_vms_per_host)),
            ("ha.max_restart", s.ha.max_restart.to_string()),
            ("ha.max_relocate", s.ha.max_relocate.to_string()),
            ("ha.recovery", s.ha.recovery.to_string()),
            ("ha.shutdown_policy", s.ha.shutdown_policy.to_string()),
            (
                "rebalance",
                if s.rebalance.enabled {
                    "on".to_string()
                } else {
                    "off (rebalance plan shows what it would do)".to_string()
                },
            ),
            (
                "rebalance above",
                format!("{} (imbalance, percent points)", s.rebalance.threshold_pct),
            ),
            ("rebalance hold", format!("{} s", s.rebalance.hold_s)),
            (
                "rebalance min gain",
                format!("{} % of the imbalance", s.rebalance.min_gain_pct),
            ),
        ])
    }
}

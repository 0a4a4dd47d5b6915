//! Property strings: the `key=value,...` values of VM config keys (`net0`, `scsi0`,
//! `ipconfig0`, `agent`, `boot`, `tags`) and disk sizes, each with a validated builder and a
//! parser, so a config read from PVE turns into typed values and back into the same text.
//!
//! Every error is [`PveError::Invalid`](crate::PveError::Invalid) naming the sub-key (`tag`,
//! `macaddr`); [`ConfigChanges`](crate::calls::ConfigChanges) prefixes it with the config key
//! (`net0.tag`). Identifier checks shared with the request builders live in [`ids`].

pub mod agent;
pub mod boot;
pub mod disk;
pub mod ids;
pub mod ipconfig;
pub(crate) mod kv;
pub mod net;
pub mod size;
pub(crate) mod str_enum;
pub mod tags;

pub use agent::{AgentConfig, AgentType};
pub use boot::{BootOrder, is_boot_device};
pub use disk::{Discard, Disk, DiskBus, DiskCache, DiskFormat, DiskSlot, DiskSource, Media};
pub use ids::{
    VMID_MAX, VMID_MIN, check_abs_path, check_bridge, check_digest, check_dns_name, check_node,
    check_pool, check_realm, check_snapname, check_storage, check_vmid, check_volume_id,
};
pub use ipconfig::{IpConfig, Ipv4Config, Ipv6Config};
pub use net::{MacAddr, NetDevice, NetModel};
pub use size::{SizeChange, format_size, parse_size, parse_size_for};
pub use tags::{format_tags, is_valid_tag, parse_tags};

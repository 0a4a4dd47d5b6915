//! Virtual IPs: the pure decisions (docs/design/vips.md). Who should own a VIP ([`owner`]),
//! the majority-granted lease that keeps two hosts from ever holding one at once ([`lease`]),
//! and the rise/fall verdict of a health check ([`health`]). The coordinator and the agent run
//! them; nothing here reads a clock or the network.

pub mod health;
pub mod lease;
pub mod owner;

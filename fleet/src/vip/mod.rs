//! Virtual IPs: the pure decisions (docs/design/vips.md). Who should own a VIP ([`owner`]),
//! the majority-granted lease that keeps two hosts from ever holding one at once ([`lease`]),
//! and the leader's pass that turns what the agents report into ownership changes
//! ([`manage`]). The coordinator runs them; nothing here reads a clock or the network. (A
//! check's rise/fall verdict is the agent's: `node-agent::vip::health`.)

pub mod lease;
pub mod manage;
pub mod owner;

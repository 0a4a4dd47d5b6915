//! Virtual IPs on this host (docs/design/vips.md): the addresses the agent holds, added and
//! removed through netlink with pvefleet's marker so it never touches an address it did not
//! add ([`addresses`]), and when it may hold one: while a majority of members vouch for it
//! ([`holding`], on `fleet::vip::lease`).

pub mod addresses;
pub mod holding;

//! Virtual IPs on this host (docs/design/vips.md): the addresses the agent holds, added and
//! removed through netlink with pvefleet's marker so it never touches an address it did not
//! add ([`addresses`]). The lease that decides when it may hold one is `fleet::vip::lease`.

pub mod addresses;

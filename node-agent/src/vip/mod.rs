//! Virtual IPs on this host (docs/design/vips.md): the addresses the agent holds, added and
//! removed through netlink with pvefleet's marker so it never touches an address it did not
//! add ([`addresses`]), and when it may hold one: while a majority of members vouch for it
//! ([`holding`], the members' side being `fleet::vip::lease`). The renewal loop ([`keeper`])
//! asks every member to vouch and drives a [`holder::Holder`]: the real host's ([`host`]) or
//! a simulated one. On takeover a VIP is announced with a gratuitous ARP or an unsolicited
//! neighbour advertisement ([`announce`]). The nftables [`gate`] makes the host stop answering
//! for a VIP by itself when its agent stops renewing: an element with a millisecond timeout,
//! refreshed on every renewal, lets it through. A VIP's health checks ([`checks`], with the
//! rise/fall verdict of [`health`]) decide, with its interface, whether this host is ready
//! for it.

pub mod addresses;
pub mod announce;
pub mod checks;
pub mod gate;
pub mod health;
pub mod holder;
pub mod holding;
pub mod host;
pub mod keeper;

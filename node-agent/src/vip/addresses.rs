//! The VIP addresses this host holds, on its interfaces through netlink (`rtnetlink`; never
//! the `ip` command, whose output we would have to parse). Every address the agent adds carries
//! the address protocol [`PROTO`] (`IFA_PROTO`, Linux 5.18 and later, IPv4 and IPv6; PVE 8 and
//! 9 run 6.x kernels): that marker is how the agent recognises its own. Listing, releasing and
//! the start-up sweep touch only addresses carrying it, never one an operator or PVE added, and
//! holding an address that already exists without the marker is refused rather than taken over.

use std::net::IpAddr;

use futures_util::TryStreamExt;
use netlink_packet_route::address::{AddressAttribute, AddressMessage, AddressProtocol};
use netlink_packet_route::link::{LinkAttribute, LinkFlags, LinkMessage};
use rtnetlink::Handle;
use tokio::task::JoinHandle;

/// The `IFA_PROTO` value of the addresses pvefleet adds (the kernel uses 0-3; iproute2 names
/// none above them).
pub const PROTO: u8 = 0x9f;

/// Why a VIP address could not be held, released or listed.
#[derive(Debug, thiserror::Error)]
pub enum VipError {
    /// No netlink socket (not Linux, or no permission).
    #[error("cannot open a netlink socket: {0}")]
    Socket(#[source] std::io::Error),
    /// The interface does not exist (a VIP on it is not eligible).
    #[error("interface {0} does not exist on this host")]
    NoInterface(String),
    /// The address is on the host already, added by someone else: never taken over.
    #[error(
        "{address}/{prefix_len} is already on {interface} and was not added by pvefleet: \
         remove it by hand or choose another VIP address"
    )]
    Foreign {
        /// The interface.
        interface: String,
        /// The address.
        address: IpAddr,
        /// Its prefix length.
        prefix_len: u8,
    },
    /// The kernel refused the request (e.g. no CAP_NET_ADMIN).
    #[error("netlink: {what}: {source}")]
    Netlink {
        /// The request.
        what: String,
        /// The kernel's answer.
        #[source]
        source: rtnetlink::Error,
    },
}

/// One VIP address on this host that carries pvefleet's marker.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Held {
    /// The interface's index.
    pub index: u32,
    /// The address.
    pub address: IpAddr,
    /// Its prefix length.
    pub prefix_len: u8,
}

/// The netlink side of holding VIPs. Made inside a tokio runtime (its connection runs as a
/// task, aborted on drop).
#[derive(Debug)]
pub struct VipAddresses {
    handle: Handle,
    connection: JoinHandle<()>,
}

impl Drop for VipAddresses {
    fn drop(&mut self) {
        self.connection.abort();
    }
}

fn netlink(what: impl Into<String>) -> impl FnOnce(rtnetlink::Error) -> VipError {
    let what = what.into();
    move |source| VipError::Netlink { what, source }
}

/// The address an `AddressMessage` is about (IPv4 puts it in `Local`, IPv6 in `Address`).
fn address_of(message: &AddressMessage) -> Option<IpAddr> {
    let local = message.attributes.iter().find_map(|a| match a {
        AddressAttribute::Local(ip) => Some(*ip),
        _ => None,
    });
    local.or_else(|| {
        message.attributes.iter().find_map(|a| match a {
            AddressAttribute::Address(ip) => Some(*ip),
            _ => None,
        })
    })
}

fn is_ours(message: &AddressMessage) -> bool {
    message
        .attributes
        .iter()
        .any(|a| matches!(a, AddressAttribute::Protocol(p) if u8::from(*p) == PROTO))
}

impl VipAddresses {
    /// Opens a netlink connection in the current network namespace.
    ///
    /// # Errors
    /// [`VipError::Socket`].
    pub fn connect() -> Result<VipAddresses, VipError> {
        let (connection, handle, _) = rtnetlink::new_connection().map_err(VipError::Socket)?;
        Ok(VipAddresses {
            handle,
            connection: tokio::spawn(connection),
        })
    }

    /// The index of interface `name`.
    ///
    /// # Errors
    /// [`VipError::NoInterface`] if it does not exist.
    pub async fn interface_index(&self, name: &str) -> Result<u32, VipError> {
        match self.link(name).await? {
            Some(link) => Ok(link.header.index),
            None => Err(VipError::NoInterface(name.to_string())),
        }
    }

    /// Interface `name`, if it exists.
    async fn link(&self, name: &str) -> Result<Option<LinkMessage>, VipError> {
        let mut links = self
            .handle
            .link()
            .get()
            .match_name(name.to_string())
            .execute();
        match links.try_next().await {
            Ok(link) => Ok(link),
            // The kernel answers "no such device" as an error for a missing name.
            Err(rtnetlink::Error::NetlinkError(_)) => Ok(None),
            Err(e) => Err(netlink(format!("look up interface {name}"))(e)),
        }
    }

    /// Whether interface `name` can carry a VIP now: it exists and is administratively up
    /// (`Err(why)` otherwise, said for the operator).
    ///
    /// # Errors
    /// [`VipError::Netlink`] when the kernel cannot be asked.
    pub async fn interface_ready(&self, name: &str) -> Result<Result<(), String>, VipError> {
        Ok(match self.link(name).await? {
            Some(link) if link.header.flags.contains(LinkFlags::Up) => Ok(()),
            Some(_) => Err(format!("interface {name} is down")),
            None => Err(format!("interface {name} does not exist on this host")),
        })
    }

    /// The name of interface `index`, if it exists.
    ///
    /// # Errors
    /// [`VipError::Netlink`].
    pub async fn interface_name(&self, index: u32) -> Result<Option<String>, VipError> {
        let mut links = self.handle.link().get().match_index(index).execute();
        match links.try_next().await {
            Ok(Some(link)) => Ok(link.attributes.into_iter().find_map(|a| match a {
                LinkAttribute::IfName(name) => Some(name),
                _ => None,
            })),
            Ok(None) | Err(rtnetlink::Error::NetlinkError(_)) => Ok(None),
            Err(e) => Err(netlink(format!("look up interface {index}"))(e)),
        }
    }

    async fn addresses(&self, index: Option<u32>) -> Result<Vec<AddressMessage>, VipError> {
        let mut request = self.handle.address().get();
        if let Some(index) = index {
            request = request.set_link_index_filter(index);
        }
        request
            .execute()
            .try_collect()
            .await
            .map_err(netlink("list addresses"))
    }

    /// Every address on this host carrying pvefleet's marker.
    ///
    /// # Errors
    /// [`VipError::Netlink`].
    pub async fn ours(&self) -> Result<Vec<Held>, VipError> {
        let mut held: Vec<Held> = self
            .addresses(None)
            .await?
            .iter()
            .filter(|m| is_ours(m))
            .filter_map(|m| {
                address_of(m).map(|address| Held {
                    index: m.header.index,
                    address,
                    prefix_len: m.header.prefix_len,
                })
            })
            .collect();
        held.sort();
        Ok(held)
    }

    /// Puts `address/prefix_len` on `interface` with pvefleet's marker (again, if it is there
    /// already with the marker).
    ///
    /// # Errors
    /// [`VipError::NoInterface`], [`VipError::Foreign`] if the address is there without the
    /// marker, [`VipError::Netlink`].
    pub async fn hold(
        &self,
        interface: &str,
        address: IpAddr,
        prefix_len: u8,
    ) -> Result<(), VipError> {
        let index = self.interface_index(interface).await?;
        let existing = self.addresses(Some(index)).await?;
        if existing
            .iter()
            .any(|m| address_of(m) == Some(address) && !is_ours(m))
        {
            return Err(VipError::Foreign {
                interface: interface.to_string(),
                address,
                prefix_len,
            });
        }
        let mut request = self
            .handle
            .address()
            .add(index, address, prefix_len)
            .replace();
        request
            .message_mut()
            .attributes
            .push(AddressAttribute::Protocol(AddressProtocol::from(PROTO)));
        request.execute().await.map_err(netlink(format!(
            "add {address}/{prefix_len} to {interface}"
        )))
    }

    /// Removes `address` from interface `index` if it carries pvefleet's marker; `false` if it
    /// is not there (or not ours, which is left alone).
    ///
    /// # Errors
    /// [`VipError::Netlink`].
    pub async fn release(&self, index: u32, address: IpAddr) -> Result<bool, VipError> {
        let found = self
            .addresses(Some(index))
            .await?
            .into_iter()
            .find(|m| address_of(m) == Some(address) && is_ours(m));
        let Some(message) = found else {
            return Ok(false);
        };
        self.handle
            .address()
            .del(message)
            .execute()
            .await
            .map_err(netlink(format!("remove {address}")))?;
        Ok(true)
    }

    /// Removes every address carrying pvefleet's marker that is not in `keep` (at start: what
    /// a previous run held and no longer holds); the removed ones.
    ///
    /// # Errors
    /// [`VipError::Netlink`].
    pub async fn sweep(&self, keep: &[Held]) -> Result<Vec<Held>, VipError> {
        let mut removed = Vec::new();
        for held in self.ours().await? {
            if !keep.contains(&held) && self.release(held.index, held.address).await? {
                removed.push(held);
            }
        }
        Ok(removed)
    }
}

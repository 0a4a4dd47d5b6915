//! Results the CLI composes itself (the protocol reply alone would lose the name or the
//! command asked for): applies, deletes, member, token and admin changes, direct allocations.

use std::fmt;
use std::net::IpAddr;

use protocol::NodeId;
use protocol::admin::ApplyOutcome;
use protocol::fleet::UnixMillis;
use serde::Serialize;

use super::human::relative;
use super::{Context, Render};
use protocol::time::timestamp;

/// What `vm|pool|range|vip apply -f FILE` did, entry by entry, in file order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ApplyReport {
    /// One entry per applied spec.
    pub applied: Vec<Applied>,
    /// VM group members deleted (`vm scale`, or past a group's replicas at `vm apply`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub deleted: Vec<Deleted>,
}

/// One applied spec.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Applied {
    /// `vm`, `pool`, `vmid_range` or `vip`.
    pub kind: &'static str,
    /// The spec's name.
    pub name: String,
    /// Created, updated or unchanged.
    pub outcome: ApplyOutcome,
    /// The spec's generation after the apply (VMs only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generation: Option<u64>,
}

impl Render for ApplyReport {
    fn table(&self, _ctx: &Context) -> String {
        let mut out = String::new();
        for a in &self.applied {
            match a.generation {
                Some(g) => out.push_str(&format!(
                    "{} {} {} (generation {g})\n",
                    a.kind, a.name, a.outcome
                )),
                None => out.push_str(&format!("{} {} {}\n", a.kind, a.name, a.outcome)),
            }
        }
        for d in &self.deleted {
            out.push_str(&d.table(_ctx));
        }
        out
    }
}

/// A deleted object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Deleted {
    /// `vm`, `pool`, `vmid_range` or `vip`.
    pub kind: &'static str,
    /// Its name.
    pub name: String,
    /// `true`: gone now. `false` (VMs holding a VMID): marked for deletion, gone once destroyed
    /// on its host.
    pub removed: bool,
}

impl Render for Deleted {
    fn table(&self, _ctx: &Context) -> String {
        if self.removed {
            format!("{} {} deleted\n", self.kind, self.name)
        } else {
            format!(
                "{} {} marked for deletion: it disappears once destroyed on its host, and its \
                 VMID and addresses are released then (watch with `pvefleet vm show {}`)\n",
                self.kind, self.name, self.name
            )
        }
    }
}

/// A member removed from the cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct MemberRemoved {
    /// Its node id.
    pub removed: NodeId,
}

impl Render for MemberRemoved {
    fn table(&self, _ctx: &Context) -> String {
        format!(
            "member {} removed: it left Raft and its certificate is refused from now on; stop \
             its process and delete its data directory\n",
            self.removed
        )
    }
}

/// A revoked join token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TokenRevoked {
    /// The token's id.
    pub revoked: String,
}

impl Render for TokenRevoked {
    fn table(&self, _ctx: &Context) -> String {
        format!(
            "token {} revoked: no node can join with it any more\n",
            self.revoked
        )
    }
}

/// A revoked admin identity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct AdminRevoked {
    /// The admin's id.
    pub revoked: NodeId,
}

impl Render for AdminRevoked {
    fn table(&self, _ctx: &Context) -> String {
        format!(
            "admin {} revoked: its certificates are refused by every member from now on\n",
            self.revoked
        )
    }
}

/// A coordinator join token made by `member add`, with the command that uses it.
#[derive(Clone, PartialEq, Eq, Serialize)]
pub struct MemberAdded {
    /// The token text (shown once).
    pub token: String,
    /// The token's id (for `token revoke`).
    pub token_id: String,
    /// When the token expires.
    pub expires_at: UnixMillis,
    /// The member the new one joins through.
    pub join_addr: String,
    /// The command to run on the new member's host; it reads the token from standard input.
    pub command: String,
}

impl fmt::Debug for MemberAdded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The token lets its reader join the cluster, and receive the CA key.
        f.debug_struct("MemberAdded")
            .field("token_id", &self.token_id)
            .field("expires_at", &self.expires_at)
            .field("join_addr", &self.join_addr)
            .finish_non_exhaustive()
    }
}

impl Render for MemberAdded {
    fn table(&self, ctx: &Context) -> String {
        format!(
            "Created a one-use coordinator join token (id {}, expires {}, {}):\n\n  {}\n\n\
             It hands the cluster CA key to the node that joins with it: pass it on privately.\n\
             Run this on the new member's host (replace any placeholder in capitals) and paste \
             the token when it asks (or pipe it in; never put it in a command line):\n\n  \
             {}\n\n\
             then start it as `join` says (with the package: `systemctl enable --now \
             pvefleet-coordinator`): it joins as a learner and becomes a voter once it has caught \
             up (`pvefleet cluster status`).\n\
             The token is shown only now; revoke it with `pvefleet token revoke {}`.\n",
            self.token_id,
            timestamp(self.expires_at),
            relative(ctx.now, self.expires_at),
            self.token,
            self.command,
            self.token_id
        )
    }
}

/// A VMID allocated (or already held) by a VM.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VmidAllocated {
    /// The VM.
    pub vm: String,
    /// Its VMID.
    pub vmid: u32,
}

impl Render for VmidAllocated {
    fn table(&self, _ctx: &Context) -> String {
        format!("vm {} has vmid {}\n", self.vm, self.vmid)
    }
}

/// An address allocated from a pool to an external owner.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IpAllocated {
    /// The pool.
    pub pool: String,
    /// The holder.
    pub owner: String,
    /// The address.
    pub address: IpAddr,
    /// The pool's prefix length.
    pub prefix_len: u8,
    /// The pool's gateway.
    pub gateway: Option<IpAddr>,
}

/// An address given back to its pool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IpReleased {
    /// The pool.
    pub pool: String,
    /// The address.
    pub address: IpAddr,
}

impl Render for IpReleased {
    fn table(&self, _ctx: &Context) -> String {
        format!("{} released to pool {}\n", self.address, self.pool)
    }
}

impl Render for IpAllocated {
    fn table(&self, _ctx: &Context) -> String {
        let gateway = self
            .gateway
            .map_or_else(String::new, |gw| format!(" via {gw}"));
        format!(
            "{}/{}{gateway} allocated from pool {} to {}\n",
            self.address, self.prefix_len, self.pool, self.owner
        )
    }
}

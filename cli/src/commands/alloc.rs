//! `pvefleet alloc vmid VM`, `pvefleet alloc ip POOL OWNER` and `pvefleet alloc release POOL
//! ADDRESS`: direct allocations decided by the state machine, for tests, scripts and
//! reservations, and the release that lets an emptied pool be deleted.

use protocol::admin::{AllocateIp, AllocateVmid, ReleaseIp};

use super::Session;
use crate::args::AllocCommand;
use crate::exit::CliError;
use crate::output::{IpAllocated, IpReleased, VmidAllocated};

pub(crate) async fn run(session: &mut Session<'_>, command: &AllocCommand) -> Result<(), CliError> {
    match command {
        AllocCommand::Vmid { vm } => {
            let reply = session
                .client()?
                .call(&AllocateVmid { vm: vm.clone() })
                .await?;
            session.print(&VmidAllocated {
                vm: vm.clone(),
                vmid: reply.vmid,
            })
        }
        AllocCommand::Ip { pool, owner } => {
            let request = AllocateIp {
                pool: pool.clone(),
                owner: owner.clone(),
            };
            let reply = session.client()?.call(&request).await?;
            session.print(&IpAllocated {
                pool: pool.clone(),
                owner: owner.clone(),
                address: reply.address,
                prefix_len: reply.prefix_len,
                gateway: reply.gateway,
            })
        }
        AllocCommand::Release { pool, address } => {
            let request = ReleaseIp {
                pool: pool.clone(),
                address: *address,
            };
            session.client()?.call(&request).await?;
            session.print(&IpReleased {
                pool: pool.clone(),
                address: *address,
            })
        }
    }
}

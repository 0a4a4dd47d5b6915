//! `pvefleet alloc vmid VM` and `pvefleet alloc ip POOL OWNER`: direct allocations decided by
//! the state machine, for tests and scripts.

use protocol::admin::{AllocateIp, AllocateVmid};

use super::Session;
use crate::args::AllocCommand;
use crate::exit::CliError;
use crate::output::{IpAllocated, VmidAllocated};

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
    }
}

//! A VM with a migration under way gets the move and nothing else (no ensure, so no resync
//! races PVE moving the guest); each step goes out once nothing else is in flight for the VM
//! and the host it goes to reports:
//!
//! ```text
//!  local    ─▶ Migrate on the source                                ─▶ result ends it
//!  remote   ─▶ OpenMigrationTarget on the target ─▶ token in memory
//!           ─▶ RemoteMigrate on the source (endpoint, storage and bridge map)
//!                                                 ─▶ result ends it, CloseMigrationTarget
//!  recreate ─▶ Vacate on the source ─▶ gone: ends it on the target (the ensure builds it there)
//!  source fenced halfway (local, remote) ─▶ CloseMigrationTarget on the target
//!                                                 ─▶ arrived or not ends it
//! ```
//!
//! The results are read by [`super::status::on_result`].

use protocol::agent::{CloseTargetOp, DeleteVm, MigrateOp, Op, OpenTargetOp, RemoteMigrateOp};
use protocol::fleet::{Migration, MoveKind, VmRecord};

use super::planner::{Inputs, Planner};
use super::{Action, VmMemory};
use crate::remote_move::{self, RemoteMapping};
use crate::state::FleetState;
use crate::views::host_views;

/// How long a migration token lives: a remote migration copies whole disks.
pub const TOKEN_TTL_SECS: u32 = 6 * 3600;
/// A token that expires sooner than this is not handed to a source: a new one is minted.
const TOKEN_MARGIN_SECS: u64 = 600;

impl Planner<'_> {
    /// The next step of `rec`'s move `m`, if one is due.
    pub(super) fn migration(&mut self, rec: &VmRecord, m: &Migration, memory: &VmMemory) {
        let Inputs {
            state,
            live,
            inflight,
            policy,
            now,
        } = self.inputs;
        let out = &mut *self.out;
        let name = &rec.spec.name;
        if inflight.commands.contains_key(name) {
            return;
        }
        let Some(vmid) = rec.assignment.vmid else {
            return;
        };
        let send = |host, op| Action::Send {
            host,
            generation: rec.generation,
            op,
        };
        if m.source_lost_at.is_some() {
            // Only the target can say where the VM is now.
            if live.is_reporting(m.to_host, policy, now) {
                out.push(send(
                    m.to_host,
                    Op::CloseMigrationTarget(CloseTargetOp {
                        name: name.clone(),
                        vmid,
                    }),
                ));
            }
            return;
        }
        if live.is_silent(m.from_host, policy, now) {
            return;
        }
        match m.kind {
            MoveKind::Local => out.push(send(
                m.from_host,
                Op::Migrate(MigrateOp {
                    name: name.clone(),
                    vmid,
                    target: m.to_node.clone(),
                }),
            )),
            MoveKind::Recreate => out.push(send(
                m.from_host,
                Op::Vacate(DeleteVm {
                    name: name.clone(),
                    vmid,
                }),
            )),
            MoveKind::Remote => {
                let mapping = match mapping_onto(state, rec, m) {
                    Ok(mapping) => mapping,
                    Err(why) => {
                        out.push(Action::EndMigration {
                            vm: name.clone(),
                            node: None,
                            message: why,
                        });
                        return;
                    }
                };
                let now_secs = now.unix_ms / 1000;
                match memory
                    .remote_endpoint
                    .as_ref()
                    .filter(|e| e.expires_unix > now_secs + TOKEN_MARGIN_SECS)
                {
                    Some(endpoint) => out.push(send(
                        m.from_host,
                        Op::RemoteMigrate(RemoteMigrateOp {
                            name: name.clone(),
                            vmid,
                            endpoint: endpoint.clone(),
                            target_storage: mapping.storage.clone(),
                            target_bridge: mapping.target_bridge(),
                        }),
                    )),
                    None if live.is_reporting(m.to_host, policy, now) => out.push(send(
                        m.to_host,
                        Op::OpenMigrationTarget(OpenTargetOp {
                            name: name.clone(),
                            vmid,
                            storages: vec![mapping.storage],
                            bridges: mapping.bridges,
                            ttl_secs: TOKEN_TTL_SECS,
                        }),
                    )),
                    None => {}
                }
            }
        }
    }
}

/// Where the VM's disks and NICs go on the move's target, from the target's facts.
fn mapping_onto(
    state: &FleetState,
    rec: &VmRecord,
    m: &Migration,
) -> Result<RemoteMapping, String> {
    let views = host_views(state);
    let target = views
        .iter()
        .find(|v| v.id == m.to_host)
        .ok_or_else(|| format!("{} has reported no facts to map the VM onto", m.to_node))?;
    remote_move::mapping(&rec.spec, target).map_err(|(filter, detail)| {
        format!("cannot map the VM onto {} ({filter}): {detail}", m.to_node)
    })
}

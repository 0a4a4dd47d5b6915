//! Virtual IP definitions and their holder. A change of holder is a compare-and-set on the
//! VIP's epoch, so two controllers acting on stale views cannot both hand it out.

use std::net::IpAddr;

use protocol::NodeId;
use protocol::admin::ApplyOutcome;
use protocol::agent::VipCandidacy;
use protocol::fleet::{EventKind, HostState, UnixMillis, Vip};
use protocol::spec::{VipSpec, validate_vip};

use super::vms::{not_found, static_ips};
use super::{CommandReply, FleetState, StateError};

impl FleetState {
    pub(super) fn put_vip(
        &mut self,
        spec: VipSpec,
        now: UnixMillis,
    ) -> Result<CommandReply, StateError> {
        validate_vip(&spec)?;
        let ip = spec.cidr()?.address();
        if let Some((pool, b)) = self.pool_range_containing(ip, None) {
            return Err(StateError::Conflict(format!(
                "VIP {} address {ip} is inside pool {pool}'s range {}-{}",
                spec.name, b.start, b.end
            )));
        }
        if let Some(other) = self.vip_with_address(ip, Some(&spec.name)) {
            return Err(StateError::Conflict(format!(
                "address {ip} is already VIP {other}"
            )));
        }
        if let Some(rec) = self
            .vms
            .values()
            .find(|r| static_ips(&r.spec).any(|a| a == ip))
        {
            return Err(StateError::Conflict(format!(
                "address {ip} is a static address of VM {:?}",
                rec.spec.name
            )));
        }
        let (outcome, generation) = match self.vips.get_mut(&spec.name) {
            Some(vip) if vip.spec == spec => {
                return Ok(CommandReply::Applied {
                    outcome: ApplyOutcome::Unchanged,
                });
            }
            Some(vip) => {
                vip.spec = spec.clone();
                vip.generation += 1;
                (ApplyOutcome::Updated, vip.generation)
            }
            None => {
                self.vips.insert(
                    spec.name.clone(),
                    Vip {
                        spec: spec.clone(),
                        generation: 1,
                        owner: None,
                        epoch: 0,
                        standby: None,
                    },
                );
                (ApplyOutcome::Created, 1)
            }
        };
        self.info(
            now,
            EventKind::Vip,
            &spec.name,
            format!(
                "{outcome} (generation {generation}): {} on {}",
                spec.address, spec.interface
            ),
        );
        Ok(CommandReply::Applied { outcome })
    }

    pub(super) fn delete_vip(
        &mut self,
        name: &str,
        now: UnixMillis,
    ) -> Result<CommandReply, StateError> {
        if self.vips.remove(name).is_none() {
            return Err(not_found(EventKind::Vip, name));
        }
        self.info(now, EventKind::Vip, name, "deleted");
        Ok(CommandReply::Done)
    }

    pub(super) fn set_vip_owner(
        &mut self,
        name: &str,
        owner: Option<NodeId>,
        expected_epoch: u64,
        reason: Option<&str>,
        now: UnixMillis,
    ) -> Result<CommandReply, StateError> {
        let vip = self.vip_at(name, expected_epoch)?;
        if vip.owner == owner {
            return Ok(CommandReply::VipOwner {
                owner,
                epoch: vip.epoch,
            });
        }
        let holder = match owner {
            Some(id) => format!("host {} ({id})", self.may_hold(vip, id)?),
            None => "nobody".to_string(),
        };
        let epoch = vip.epoch + 1;
        if let Some(vip) = self.vips.get_mut(name) {
            vip.owner = owner;
            vip.epoch = epoch;
            // The leader names the next standby for the new owner.
            vip.standby = None;
        }
        self.info(
            now,
            EventKind::Vip,
            name,
            match reason {
                Some(why) => format!("held by {holder} (epoch {epoch}): {why}"),
                None => format!("held by {holder} (epoch {epoch})"),
            },
        );
        Ok(CommandReply::VipOwner { owner, epoch })
    }

    /// VIP `name`, if it is still at `expected_epoch`: a change of holder or standby is a
    /// compare-and-set on the epoch the proposer saw.
    fn vip_at(&self, name: &str, expected_epoch: u64) -> Result<&Vip, StateError> {
        let vip = self
            .vips
            .get(name)
            .ok_or_else(|| not_found(EventKind::Vip, name))?;
        if vip.epoch != expected_epoch {
            return Err(StateError::Conflict(format!(
                "VIP {name} is at epoch {}, not {expected_epoch} as the proposer saw",
                vip.epoch
            )));
        }
        Ok(vip)
    }

    /// The name of host `id` if it may hold `vip`: online, and admitted by the spec's host
    /// list. (Its labels are the leader's concern: a label change must not make a committed
    /// entry fail on replay.)
    fn may_hold(&self, vip: &Vip, id: NodeId) -> Result<&str, StateError> {
        let host = self
            .hosts
            .get(&id)
            .ok_or_else(|| not_found(EventKind::Host, id.to_string()))?;
        if host.state != HostState::Online {
            return Err(StateError::Conflict(format!(
                "host {} ({id}) is {}: only an online host may hold a VIP",
                host.name, host.state
            )));
        }
        let eligible = vip.spec.hosts.is_empty()
            || vip
                .spec
                .hosts
                .iter()
                .any(|h| h.eq_ignore_ascii_case(&host.name));
        if !eligible {
            return Err(StateError::Conflict(format!(
                "host {} is not eligible for VIP {} (hosts: {})",
                host.name,
                vip.spec.name,
                vip.spec.hosts.join(", ")
            )));
        }
        Ok(&host.name)
    }

    pub(super) fn set_vip_standby(
        &mut self,
        name: &str,
        standby: Option<NodeId>,
        expected_epoch: u64,
    ) -> Result<CommandReply, StateError> {
        let vip = self.vip_at(name, expected_epoch)?;
        if let Some(id) = standby {
            if vip.owner.is_none() || vip.owner == Some(id) {
                return Err(StateError::Conflict(format!(
                    "VIP {name}: a standby stands in for another owner"
                )));
            }
            self.may_hold(vip, id)?;
        }
        if let Some(vip) = self.vips.get_mut(name) {
            vip.standby = standby;
        }
        Ok(CommandReply::Done)
    }

    /// The VIPs whose spec admits host `host` (by name; every host when the list is empty),
    /// with their owner and epoch: what a member tells that host's agent in a renewal reply.
    pub fn vip_candidacies(&self, host: NodeId) -> Vec<VipCandidacy> {
        let Some(name) = self.hosts.get(&host).map(|h| h.name.as_str()) else {
            return Vec::new();
        };
        self.vips
            .values()
            .filter(|v| {
                v.spec.hosts.is_empty() || v.spec.hosts.iter().any(|h| h.eq_ignore_ascii_case(name))
            })
            .map(|v| VipCandidacy {
                name: v.spec.name.clone(),
                address: v.spec.address.clone(),
                interface: v.spec.interface.clone(),
                owner: v.owner,
                epoch: v.epoch,
                standby: v.standby,
                claimed: false,
                vouching: None,
                owner_held: false,
                checks: v.spec.checks.clone(),
            })
            .collect()
    }

    /// The VIP (other than `except`) whose address is `ip`.
    pub(super) fn vip_with_address(&self, ip: IpAddr, except: Option<&str>) -> Option<&str> {
        self.vips
            .iter()
            .find(|(name, v)| {
                Some(name.as_str()) != except && v.spec.cidr().is_ok_and(|c| c.address() == ip)
            })
            .map(|(name, _)| name.as_str())
    }
}

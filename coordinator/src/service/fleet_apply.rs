//! `admin.fleet_apply` as pure functions: the whole file is checked entry by entry first (the
//! first bad field is refused with its entry, field, value and allowed values, and nothing
//! reaches the log), then proposed as one [`Command::ApplyFleet`], which the state machine
//! applies whole or not at all (what the entries refer to — a pool, a range — is checked
//! there, against the state and the file's own entries).

use protocol::admin::{FleetApply, FleetApplyReply};
use protocol::fleet::{UnixMillis, validate_settings};
use protocol::spec::{
    MAX_REPLICAS, SpecError, validate_ip_pool, validate_spec, validate_vip, validate_vmid_range,
};
use transport::{RemoteError, Rpc};

use super::Ctx;
use super::errors::unexpected;
use fleet::state::{Command, CommandReply};
use protocol::time::Now;

/// A bad entry: `vm web-3: nics[0].vlan = 5000 is not allowed: expected 1 to 4094`.
fn invalid(kind: &str, name: &str) -> impl Fn(SpecError) -> RemoteError {
    move |e| RemoteError::bad_request(format!("{kind} {name}: {e}"))
}

/// Checks every entry of `r`, then the command that applies them all at the leader's `now`.
pub(crate) fn fleet_apply(r: &FleetApply, now: UnixMillis) -> Result<Command, RemoteError> {
    if r.is_empty() {
        return Err(RemoteError::bad_request(
            "nothing to apply: the request holds no pool, range, VIP, settings, group or VM",
        ));
    }
    for p in &r.pools {
        validate_ip_pool(p).map_err(invalid("pool", &p.name))?;
    }
    for v in &r.vmid_ranges {
        validate_vmid_range(v).map_err(invalid("vmid_range", &v.name))?;
    }
    for v in &r.vips {
        validate_vip(v).map_err(invalid("vip", &v.name))?;
    }
    if let Some(s) = &r.settings {
        validate_settings(s).map_err(invalid("settings", "settings"))?;
    }
    for (group, replicas) in &r.groups {
        if *replicas > MAX_REPLICAS {
            return Err(invalid("vm_group", group)(SpecError::new(
                "replicas",
                replicas,
                format!("0 to {MAX_REPLICAS}"),
            )));
        }
    }
    for v in &r.vms {
        validate_spec(v).map_err(invalid("vm", &v.name))?;
    }
    Ok(Command::ApplyFleet {
        request: Box::new(r.clone()),
        now,
    })
}

/// The state machine's answer as the request's reply.
pub(crate) fn fleet_apply_reply(
    _: &FleetApply,
    reply: CommandReply,
) -> Result<FleetApplyReply, RemoteError> {
    match reply {
        CommandReply::FleetApplied(applied) => Ok(applied),
        other => Err(unexpected(FleetApply::METHOD, &other)),
    }
}

impl Ctx {
    /// `admin.fleet_apply` on the leader: checked, committed as one entry, and the reconciler
    /// woken so the new VMs are planned now rather than at its next tick.
    pub(crate) async fn fleet_apply(&self, r: &FleetApply) -> Result<FleetApplyReply, RemoteError> {
        let cmd = fleet_apply(r, Now::read().millis)?;
        let committed = self.propose(&cmd).await?;
        #[cfg(feature = "fault-points")]
        crate::fault_point::after_commit(FleetApply::METHOD);
        self.control.wake();
        fleet_apply_reply(r, committed)
    }
}

#[cfg(test)]
mod tests {
    use protocol::spec::{IpPoolSpec, VmSpec};
    use transport::RemoteCode;

    use super::*;

    #[test]
    fn the_first_bad_entry_is_refused_by_name_before_anything_is_proposed() {
        let mut bad = VmSpec::new("web-3", 512);
        bad.cores = 0;
        let req = FleetApply {
            vms: vec![VmSpec::new("web-1", 512), VmSpec::new("web-2", 512), bad],
            ..FleetApply::default()
        };
        let e = fleet_apply(&req, 5).unwrap_err();
        assert_eq!(e.code, RemoteCode::BadRequest);
        assert!(
            e.message.starts_with("vm web-3: cores = 0"),
            "{}",
            e.message
        );
        assert!(e.message.contains("expected"), "{}", e.message);

        let pool = IpPoolSpec {
            name: "lan".into(),
            cidr: "10.0.0.0/33".into(),
            gateway: None,
            range_start: "10.0.0.10".into(),
            range_end: "10.0.0.20".into(),
            dns: vec![],
        };
        let req = FleetApply {
            pools: vec![pool],
            ..FleetApply::default()
        };
        let e = fleet_apply(&req, 5).unwrap_err();
        assert!(e.message.starts_with("pool lan: cidr"), "{}", e.message);
        let e = fleet_apply(&FleetApply::default(), 5).unwrap_err();
        assert_eq!(e.code, RemoteCode::BadRequest);
    }

    #[test]
    fn a_valid_file_is_one_command_at_the_leaders_time() {
        let req = FleetApply {
            vms: vec![VmSpec::new("a", 512), VmSpec::new("b", 512)],
            groups: vec![("web".into(), 2)],
            ..FleetApply::default()
        };
        let cmd = fleet_apply(&req, 1234).unwrap();
        assert!(
            matches!(&cmd, Command::ApplyFleet { now: 1234, request } if **request == req),
            "{cmd:?}"
        );
        let e = fleet_apply_reply(&req, CommandReply::Done).unwrap_err();
        assert_eq!(e.code, RemoteCode::Internal);
        assert!(e.message.contains("admin.fleet_apply"), "{}", e.message);
    }
}

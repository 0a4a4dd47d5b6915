//! The admin writes as pure functions: each request becomes a [`Command`] (validated first, so a
//! bad spec is refused with its field, value and allowed values and never reaches the log; the
//! time is the leader's, given in), and each state machine reply becomes the request's reply.

use protocol::admin::{
    AllocateIp, AllocateIpReply, AllocateVmid, AllocateVmidReply, ApplyReply, Done, PoolApply,
    PoolDelete, ReleaseIp, SettingsPut, SettingsReply, TokenRevoke, VipApply, VipDelete, VmApply,
    VmApplyReply, VmDelete, VmDeleteReply, VmidRangeApply, VmidRangeDelete,
};
use protocol::fleet::{UnixMillis, validate_settings};
use protocol::spec::{
    SpecError, VipSpecV1, validate_ip_owner, validate_ip_pool, validate_spec, validate_vip,
    validate_vmid_range,
};
use transport::{RemoteError, Rpc};

use super::errors::unexpected;
use fleet::state::{Command, CommandReply};

fn invalid(e: SpecError) -> RemoteError {
    RemoteError::bad_request(e.to_string())
}

fn done<R: Rpc<Response = Done>>(_: &R, reply: CommandReply) -> Result<Done, RemoteError> {
    match reply {
        CommandReply::Done => Ok(Done {}),
        other => Err(unexpected(R::METHOD, &other)),
    }
}

fn applied<R: Rpc<Response = ApplyReply>>(
    _: &R,
    reply: CommandReply,
) -> Result<ApplyReply, RemoteError> {
    match reply {
        CommandReply::Applied { outcome } => Ok(ApplyReply { outcome }),
        other => Err(unexpected(R::METHOD, &other)),
    }
}

pub(crate) fn settings_put(r: &SettingsPut, now: UnixMillis) -> Result<Command, RemoteError> {
    validate_settings(&r.settings).map_err(invalid)?;
    // PVE's HA defaults stay a v1 command (`PutSettings`), so settings apply while the cluster
    // is still at v1; other HA defaults need v2 (`ApplySettings`, refused with the reason until
    // every member reads it).
    Ok(Command::put_settings(r.settings.clone(), now))
}

pub(crate) fn settings_put_reply(
    r: &SettingsPut,
    reply: CommandReply,
) -> Result<SettingsReply, RemoteError> {
    match reply {
        // The settings now in force are the ones proposed.
        CommandReply::Applied { .. } => Ok(SettingsReply {
            settings: r.settings.clone(),
        }),
        other => Err(unexpected(SettingsPut::METHOD, &other)),
    }
}

pub(crate) fn vm_apply(r: &VmApply, now: UnixMillis) -> Result<Command, RemoteError> {
    validate_spec(&r.spec).map_err(invalid)?;
    // What v1 can carry stays a v1 command (`PutVm`), so it applies while the cluster is
    // still at v1; HA settings v1 cannot carry need v2 (`ApplyVm`, refused with the reason
    // until every member reads it).
    Ok(Command::apply_vm(r.spec.clone(), now))
}

pub(crate) fn vm_apply_reply(
    _: &VmApply,
    reply: CommandReply,
) -> Result<VmApplyReply, RemoteError> {
    match reply {
        CommandReply::VmApplied {
            outcome,
            generation,
        } => Ok(VmApplyReply {
            outcome,
            generation,
        }),
        other => Err(unexpected(VmApply::METHOD, &other)),
    }
}

pub(crate) fn vm_delete(r: &VmDelete, now: UnixMillis) -> Result<Command, RemoteError> {
    Ok(Command::DeleteVm {
        name: r.name.clone(),
        now,
    })
}

pub(crate) fn vm_delete_reply(
    _: &VmDelete,
    reply: CommandReply,
) -> Result<VmDeleteReply, RemoteError> {
    match reply {
        CommandReply::VmDeleted { removed } => Ok(VmDeleteReply { removed }),
        other => Err(unexpected(VmDelete::METHOD, &other)),
    }
}

pub(crate) fn allocate_vmid(r: &AllocateVmid, now: UnixMillis) -> Result<Command, RemoteError> {
    Ok(Command::AllocateVmid {
        vm: r.vm.clone(),
        avoid: Vec::new(),
        now,
    })
}

pub(crate) fn allocate_vmid_reply(
    _: &AllocateVmid,
    reply: CommandReply,
) -> Result<AllocateVmidReply, RemoteError> {
    match reply {
        CommandReply::Vmid { vmid, .. } => Ok(AllocateVmidReply { vmid }),
        other => Err(unexpected(AllocateVmid::METHOD, &other)),
    }
}

pub(crate) fn pool_apply(r: &PoolApply, now: UnixMillis) -> Result<Command, RemoteError> {
    validate_ip_pool(&r.spec).map_err(invalid)?;
    Ok(Command::PutPool {
        spec: r.spec.clone(),
        now,
    })
}

pub(crate) fn pool_apply_reply(
    r: &PoolApply,
    reply: CommandReply,
) -> Result<ApplyReply, RemoteError> {
    applied(r, reply)
}

pub(crate) fn pool_delete(r: &PoolDelete, now: UnixMillis) -> Result<Command, RemoteError> {
    Ok(Command::DeletePool {
        name: r.name.clone(),
        now,
    })
}

pub(crate) fn pool_delete_reply(r: &PoolDelete, reply: CommandReply) -> Result<Done, RemoteError> {
    done(r, reply)
}

pub(crate) fn allocate_ip(r: &AllocateIp, now: UnixMillis) -> Result<Command, RemoteError> {
    validate_ip_owner(&r.owner).map_err(invalid)?;
    Ok(Command::AllocateIp {
        pool: r.pool.clone(),
        owner: r.owner.clone(),
        now,
    })
}

pub(crate) fn allocate_ip_reply(
    _: &AllocateIp,
    reply: CommandReply,
) -> Result<AllocateIpReply, RemoteError> {
    match reply {
        CommandReply::Ip {
            address,
            prefix_len,
            gateway,
        } => Ok(AllocateIpReply {
            address,
            prefix_len,
            gateway,
        }),
        other => Err(unexpected(AllocateIp::METHOD, &other)),
    }
}

pub(crate) fn release_ip(r: &ReleaseIp, now: UnixMillis) -> Result<Command, RemoteError> {
    Ok(Command::ReleaseIp {
        pool: r.pool.clone(),
        address: r.address,
        now,
    })
}

pub(crate) fn release_ip_reply(r: &ReleaseIp, reply: CommandReply) -> Result<Done, RemoteError> {
    done(r, reply)
}

pub(crate) fn vmid_range_apply(
    r: &VmidRangeApply,
    now: UnixMillis,
) -> Result<Command, RemoteError> {
    validate_vmid_range(&r.spec).map_err(invalid)?;
    Ok(Command::PutVmidRange {
        spec: r.spec.clone(),
        now,
    })
}

pub(crate) fn vmid_range_apply_reply(
    r: &VmidRangeApply,
    reply: CommandReply,
) -> Result<ApplyReply, RemoteError> {
    applied(r, reply)
}

pub(crate) fn vmid_range_delete(
    r: &VmidRangeDelete,
    now: UnixMillis,
) -> Result<Command, RemoteError> {
    Ok(Command::DeleteVmidRange {
        name: r.name.clone(),
        now,
    })
}

pub(crate) fn vmid_range_delete_reply(
    r: &VmidRangeDelete,
    reply: CommandReply,
) -> Result<Done, RemoteError> {
    done(r, reply)
}

pub(crate) fn vip_apply(r: &VipApply, now: UnixMillis) -> Result<Command, RemoteError> {
    validate_vip(&r.spec).map_err(invalid)?;
    // What v1 can carry stays a v1 command, so it applies while the cluster is still at v1;
    // the rest needs v2 (refused with the reason until every member reads it).
    Ok(match VipSpecV1::exact(&r.spec) {
        Some(spec) => Command::PutVip { spec, now },
        None => Command::ApplyVip {
            spec: r.spec.clone(),
            now,
        },
    })
}

pub(crate) fn vip_apply_reply(
    r: &VipApply,
    reply: CommandReply,
) -> Result<ApplyReply, RemoteError> {
    applied(r, reply)
}

pub(crate) fn vip_delete(r: &VipDelete, now: UnixMillis) -> Result<Command, RemoteError> {
    Ok(Command::DeleteVip {
        name: r.name.clone(),
        now,
    })
}

pub(crate) fn vip_delete_reply(r: &VipDelete, reply: CommandReply) -> Result<Done, RemoteError> {
    done(r, reply)
}

pub(crate) fn token_revoke(r: &TokenRevoke, now: UnixMillis) -> Result<Command, RemoteError> {
    Ok(Command::RevokeToken {
        id: r.id.clone(),
        now,
    })
}

pub(crate) fn token_revoke_reply(
    r: &TokenRevoke,
    reply: CommandReply,
) -> Result<Done, RemoteError> {
    done(r, reply)
}

#[cfg(test)]
mod tests {
    use protocol::admin::ApplyOutcome;
    use protocol::spec::VmSpec;
    use transport::RemoteCode;

    use super::*;

    #[test]
    fn an_invalid_spec_is_refused_before_it_is_proposed() {
        let req = VmApply {
            spec: VmSpec::new("web", 1),
        };
        let e = vm_apply(&req, 5).unwrap_err();
        assert_eq!(e.code, RemoteCode::BadRequest);
        assert!(e.message.contains("memory_mib"), "{}", e.message);
        assert!(e.message.contains("expected"), "{}", e.message);
    }

    #[test]
    fn a_valid_spec_becomes_a_command_at_the_leaders_time() {
        let req = VmApply {
            spec: VmSpec::new("web", 1024),
        };
        let cmd = vm_apply(&req, 1234).unwrap();
        assert!(matches!(cmd, Command::PutVm { now: 1234, ref spec } if spec.name == "web"));
    }

    #[test]
    fn replies_of_another_kind_are_reported_not_guessed() {
        let req = VmApply {
            spec: VmSpec::new("web", 1024),
        };
        let ok = vm_apply_reply(
            &req,
            CommandReply::VmApplied {
                outcome: ApplyOutcome::Created,
                generation: 1,
            },
        )
        .unwrap();
        assert_eq!(ok.generation, 1);
        let e = vm_apply_reply(&req, CommandReply::Done).unwrap_err();
        assert_eq!(e.code, RemoteCode::Internal);
        assert!(e.message.contains("admin.vm_apply"), "{}", e.message);
    }
}

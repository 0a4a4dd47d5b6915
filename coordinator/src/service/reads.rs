//! The admin reads as pure functions of the fleet state: where they run (leader after a
//! quorum check, or locally for stale reads) is decided elsewhere.

use protocol::admin::{
    Events, EventsReply, FleetGet, HostList, HostListReply, MemberList, MemberListReply, PoolList,
    PoolListReply, SettingsGet, SettingsReply, TokenList, TokenListReply, VipList, VipListReply,
    VmGet, VmList, VmListReply, VmidRangeList, VmidRangeListReply,
};
use protocol::fleet::{FleetView, StoredToken, VmRecord};
use transport::RemoteError;

use fleet::state::FleetState;

pub(crate) fn member_list(s: &FleetState, _: &MemberList) -> Result<MemberListReply, RemoteError> {
    Ok(MemberListReply {
        members: s.members().values().cloned().collect(),
    })
}

pub(crate) fn host_list(s: &FleetState, _: &HostList) -> Result<HostListReply, RemoteError> {
    Ok(HostListReply {
        hosts: s.hosts().values().cloned().collect(),
    })
}

pub(crate) fn settings_get(s: &FleetState, _: &SettingsGet) -> Result<SettingsReply, RemoteError> {
    Ok(SettingsReply {
        settings: s.settings().clone(),
    })
}

pub(crate) fn fleet_get(s: &FleetState, _: &FleetGet) -> Result<FleetView, RemoteError> {
    Ok(s.view())
}

pub(crate) fn vm_list(s: &FleetState, _: &VmList) -> Result<VmListReply, RemoteError> {
    Ok(VmListReply {
        vms: s.vms().values().cloned().collect(),
        recoveries: s.recoveries().clone(),
        migrations: s.migrations().clone(),
    })
}

pub(crate) fn vm_get(s: &FleetState, r: &VmGet) -> Result<VmRecord, RemoteError> {
    s.vm(&r.name).cloned().ok_or_else(|| {
        RemoteError::not_found(format!(
            "vm {:?} not found (`pvefleet vm ls` lists the VMs)",
            r.name
        ))
    })
}

pub(crate) fn pool_list(s: &FleetState, _: &PoolList) -> Result<PoolListReply, RemoteError> {
    Ok(PoolListReply {
        pools: s.ip_pools().values().cloned().collect(),
    })
}

pub(crate) fn vmid_range_list(
    s: &FleetState,
    _: &VmidRangeList,
) -> Result<VmidRangeListReply, RemoteError> {
    Ok(VmidRangeListReply {
        ranges: s.vmid_ranges().values().cloned().collect(),
    })
}

pub(crate) fn vip_list(s: &FleetState, _: &VipList) -> Result<VipListReply, RemoteError> {
    Ok(VipListReply {
        vips: s.vips().values().cloned().collect(),
    })
}

pub(crate) fn token_list(s: &FleetState, _: &TokenList) -> Result<TokenListReply, RemoteError> {
    Ok(TokenListReply {
        tokens: s.tokens().values().map(StoredToken::view).collect(),
    })
}

pub(crate) fn events(s: &FleetState, r: &Events) -> Result<EventsReply, RemoteError> {
    let limit = r.limit.map(|n| usize::try_from(n).unwrap_or(usize::MAX));
    Ok(EventsReply {
        events: s.events_after(r.since, limit),
        first_seq: s.first_event_seq(),
        last_seq: s.last_event_seq(),
    })
}

#[cfg(test)]
mod tests {
    use protocol::admin::ReadMode;
    use protocol::fleet::{Member, MemberRole};
    use transport::RemoteCode;

    use super::*;
    use fleet::state::Command;

    fn state_with_a_member() -> FleetState {
        let mut s = FleetState::new();
        let member = Member {
            id: 1,
            addr: "127.0.0.1:7400".into(),
            role: MemberRole::Voter,
        };
        let reply = s.apply(1, Command::AddMember { member, now: 1000 });
        assert!(reply.into_result().is_ok());
        s
    }

    #[test]
    fn reads_answer_from_the_state_and_a_missing_vm_is_not_found() {
        let s = state_with_a_member();
        let members = member_list(&s, &MemberList::default()).unwrap();
        assert_eq!(members.members.len(), 1);
        let missing = vm_get(
            &s,
            &VmGet {
                name: "web".into(),
                read: ReadMode::Stale,
            },
        )
        .unwrap_err();
        assert_eq!(missing.code, RemoteCode::NotFound);
        assert!(missing.message.contains("web"), "{}", missing.message);
        let ev = events(&s, &Events::default()).unwrap();
        assert_eq!(ev.last_seq, ev.events.last().map_or(0, |e| e.seq));
        assert!(!ev.events.is_empty());
    }
}

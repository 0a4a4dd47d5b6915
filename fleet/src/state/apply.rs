//! Applying one committed command: replay protection, then dispatch to the handler of each
//! command. Handlers check everything before changing anything, so a refused command leaves the
//! state exactly as it was.

use protocol::fleet::EventLevel;

use super::{Command, CommandReply, FleetState, StateError};

impl FleetState {
    /// Applies the command committed at log `index` and returns its reply.
    ///
    /// Deterministic: the same state and command give the same new state and reply on every
    /// member. An index at or below the last applied one is a replay and changes nothing.
    pub fn apply(&mut self, index: u64, cmd: Command) -> CommandReply {
        if let Some(last_applied) = self.last_applied
            && index <= last_applied
        {
            return CommandReply::Refused(StateError::AlreadyApplied {
                index,
                last_applied,
            });
        }
        self.last_applied = Some(index);
        match self.dispatch(cmd) {
            Ok(reply) => reply,
            Err(e) => CommandReply::Refused(e),
        }
    }

    pub(super) fn dispatch(&mut self, cmd: Command) -> Result<CommandReply, StateError> {
        match cmd {
            Command::PutVm { spec, now } => self.put_vm((*spec).into(), now),
            Command::ApplyVm { spec, now } => self.put_vm(*spec, now),
            Command::DeleteVm { name, now } => self.delete_vm(&name, now),
            Command::ReleaseVm { name, now } => self.release_vm(&name, now),
            Command::ScheduleVm {
                name,
                host,
                expected,
                now,
            } => self.schedule_vm(&name, host, expected, now),
            Command::SetVmStatus { name, status, now } => self.set_vm_status(&name, status, now),
            Command::AllocateVmid { vm, avoid, now } => self.allocate_vmid(&vm, &avoid, now),
            Command::AllocateIps { vm, now } => self.allocate_vm_ips(&vm, now),
            Command::ReleaseStaleIps { vm, now } => self.release_stale_ips(&vm, now),
            Command::AllocateIp { pool, owner, now } => {
                self.allocate_external_ip(&pool, owner, now)
            }
            Command::ReleaseIp { pool, address, now } => {
                self.release_external_ip(&pool, address, now)
            }
            Command::PutPool { spec, now } => self.put_pool(spec, now),
            Command::DeletePool { name, now } => self.delete_pool(&name, now),
            Command::PutVmidRange { spec, now } => self.put_vmid_range(spec, now),
            Command::DeleteVmidRange { name, now } => self.delete_vmid_range(&name, now),
            Command::PutVip { spec, now } => self.put_vip(spec.into(), now),
            Command::ApplyVip { spec, now } => self.put_vip(spec, now),
            Command::SetVipStandby {
                name,
                standby,
                expected_epoch,
            } => self.set_vip_standby(&name, standby, expected_epoch),
            Command::DeleteVip { name, now } => self.delete_vip(&name, now),
            Command::SetHostLiveness {
                id,
                expected,
                state,
                reason,
                now,
            } => self.set_host_liveness(id, expected, state, &reason, now),
            Command::SetVipOwner {
                name,
                owner,
                expected_epoch,
                now,
            } => self.set_vip_owner(&name, owner, expected_epoch, None, now),
            Command::MoveVip {
                name,
                owner,
                expected_epoch,
                reason,
                now,
            } => self.set_vip_owner(&name, owner, expected_epoch, Some(&reason), now),
            Command::AddTokenRecord { record } => self.add_token(record),
            Command::UseToken {
                id,
                secret_sha256,
                now,
            } => self.use_token(&id, &secret_sha256, now),
            Command::RevokeToken { id, now } => self.revoke_token(&id, now),
            Command::RegisterHost {
                id,
                name,
                labels,
                capacity,
                now,
            } => self.register_host(id, name, labels, capacity, now),
            Command::SetHostState { id, state, now } => self.set_host_state(id, state, now),
            Command::SetHostFacts { id, facts } => self.set_host_facts(id, *facts),
            Command::SetVmState { name, state, now } => self.set_vm_state(&name, state, now),
            Command::AddMember { member, now } => self.add_member(member, now),
            Command::RemoveMember { id, now } => self.remove_member(id, now),
            Command::PutSettings { settings, now } => self.put_settings(settings.into(), now),
            Command::ApplySettings { settings, now } => self.put_settings(settings, now),
            Command::StartMigration {
                name,
                to,
                purpose,
                now,
            } => self.start_migration(&name, to, purpose, now),
            Command::SetMaintenance { id, enable, now } => self.set_maintenance(id, enable, now),
            Command::HostLeaving {
                id,
                kind,
                boot_id,
                now,
            } => self.host_leaving(id, kind, boot_id, now),
            Command::HostReturned { id, boot_id, now } => self.host_returned(id, boot_id, now),
            Command::EndLeaving { id, now: _ } => self.end_leaving(id),
            Command::Once {
                request,
                seq,
                now,
                command,
            } => self.once(request, seq, now, *command),
            Command::ApplyFleet { request, now } => self.apply_fleet(*request, now),
            Command::Batch { chains } => self.batch(chains),
            Command::SetHostLabels {
                id,
                set,
                unset,
                now,
            } => self.set_host_labels(id, set, &unset, now),
            Command::RemoveHost { id, now } => self.remove_host(id, now),
            Command::AddDashboardLogin { record } => self.add_dashboard_login(record),
            Command::UseDashboardLogin {
                id,
                secret_sha256,
                now,
            } => self.use_dashboard_login(&id, &secret_sha256, now),
            Command::EndMigration {
                name,
                node,
                message,
                now,
            } => self.end_migration(&name, node.as_deref(), &message, now),
            Command::RecordEvent {
                level,
                kind,
                subject,
                message,
                now,
            } => {
                self.events.push(now, level, kind, subject, message);
                Ok(CommandReply::Done)
            }
            Command::ReportVersions { id, versions, now } => {
                self.report_versions(id, versions, now)
            }
            Command::SetClusterVersion { version, now } => self.set_cluster_version(version, now),
            Command::SetAdminRenewal { renewal_ms, now } => self.set_admin_renewal(renewal_ms, now),
            Command::AddAdmin {
                id,
                name,
                issued_at,
                expires_at,
                now,
            } => self.add_admin(id, name, issued_at, expires_at, now),
            Command::RenewAdmin {
                id,
                expires_at,
                now,
            } => self.renew_admin(id, expires_at, now),
            Command::RevokeAdmin { id, now } => self.revoke_admin(id, now),
            Command::RecoverVm {
                name,
                from,
                to,
                message,
                now,
            } => self.recover_vm(&name, from, to, &message, now),
            Command::EndRecovery {
                name,
                from,
                message,
                now,
            } => self.end_recovery(&name, from, &message, now),
            Command::HaStartFailed {
                name,
                host,
                message,
                now,
            } => self.ha_start_failed(&name, host, &message, now),
            Command::HaRelocate {
                name,
                from,
                to,
                message,
                now,
            } => self.ha_relocate(&name, from, to, &message, now),
            Command::HaGiveUp { name, message, now } => self.ha_give_up(&name, &message, now),
            Command::HaClearFailures { name, message, now } => {
                self.ha_clear_failures(&name, &message, now)
            }
        }
    }

    /// Appends a routine event.
    pub(super) fn info(
        &mut self,
        now: u64,
        kind: protocol::fleet::EventKind,
        subject: impl Into<String>,
        message: impl Into<String>,
    ) {
        self.events
            .push(now, EventLevel::Info, kind, subject, message);
    }
}

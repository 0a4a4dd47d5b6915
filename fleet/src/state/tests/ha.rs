//! PVE HA's settings in the replicated state: a spec v1 carries is still a v1 `PutVm`, the rest
//! is the v2 `ApplyVm` and waits for the cluster version; a v1 snapshot never drops them; v1's
//! `ha = true` reads as the request its desired power makes; start and stop move a
//! `started`/`stopped` request along.

use protocol::spec::{DesiredState, HaSpec, HaState, RecoveryMode, VmSpec};
use protocol::version::{HA_SETTINGS, Version};

use super::Fleet;
use crate::state::{
    CodecError, Command, StateError, decode_command, decode_snapshot, encode_command,
    encode_snapshot,
};

const V1: Version = Version(1);

fn ha_vm(ha: HaSpec) -> VmSpec {
    let mut spec = VmSpec::new("db-1", 1024);
    spec.ha = ha;
    spec
}

fn tuned() -> HaSpec {
    HaSpec {
        max_restart: Some(2),
        max_relocate: Some(3),
        recovery: Some(RecoveryMode::Recreate),
        ..HaSpec::started()
    }
}

#[test]
fn what_v1_carries_is_a_v1_command_and_the_rest_waits_for_v2() {
    for ha in [HaSpec::none(), HaSpec::started()] {
        let cmd = Command::apply_vm(ha_vm(ha), 1);
        assert!(matches!(cmd, Command::PutVm { .. }), "{ha:?}");
        let bytes = encode_command(&cmd, V1).unwrap();
        assert_eq!(decode_command(&bytes).unwrap(), cmd);
    }
    let cmd = Command::apply_vm(ha_vm(tuned()), 1);
    assert!(matches!(cmd, Command::ApplyVm { .. }));
    assert_eq!(cmd.since(), HA_SETTINGS);
    let e = encode_command(&cmd, V1).unwrap_err();
    assert!(
        matches!(
            e,
            CodecError::TooNew {
                command: "ApplyVm",
                ..
            }
        ),
        "{e}"
    );
    let bytes = encode_command(&cmd, HA_SETTINGS).unwrap();
    assert_eq!(decode_command(&bytes).unwrap(), cmd);

    // Both apply the same way.
    let mut f = Fleet::new();
    f.ok(cmd);
    assert_eq!(f.state.vm("db-1").unwrap().spec.ha, tuned());
}

#[test]
fn a_v1_ha_vm_kept_stopped_reads_as_a_stopped_request_and_stays_valid() {
    let mut f = Fleet::new();
    let mut spec = ha_vm(HaSpec::with_state(HaState::Stopped));
    spec.state = DesiredState::Stopped;
    let cmd = Command::apply_vm(spec.clone(), 1);
    let Command::PutVm { spec: v1, .. } = &cmd else {
        panic!("v1 carries a stopped HA guest: {cmd:?}");
    };
    assert!(v1.ha, "v1's ha = true");
    f.ok(cmd);
    assert_eq!(f.state.vm("db-1").unwrap().spec, spec);
}

#[test]
fn start_and_stop_move_a_started_or_stopped_request_along_and_a_disabled_vm_stays_stopped() {
    let mut f = Fleet::new();
    f.ok(Command::apply_vm(ha_vm(tuned()), 1));
    let set = |state| Command::SetVmState {
        name: "db-1".into(),
        state,
        now: 2,
    };
    f.ok(set(DesiredState::Stopped));
    let ha = f.state.vm("db-1").unwrap().spec.ha;
    assert_eq!(
        ha,
        HaSpec {
            state: Some(HaState::Stopped),
            ..tuned()
        }
    );
    f.ok(set(DesiredState::Running));
    assert_eq!(f.state.vm("db-1").unwrap().spec.ha, tuned());

    let mut disabled = ha_vm(HaSpec::with_state(HaState::Disabled));
    disabled.state = DesiredState::Stopped;
    f.ok(Command::apply_vm(disabled, 3));
    match f.err(set(DesiredState::Running)) {
        StateError::Invalid(e) => {
            assert_eq!(
                (e.field.as_str(), e.value.as_str()),
                ("ha.state", "\"disabled\"")
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_v1_snapshot_holds_v1_specs_exactly_and_refuses_settings_it_would_drop() {
    let mut f = Fleet::new();
    f.ok(Command::apply_vm(ha_vm(HaSpec::started()), 1));
    let bytes = encode_snapshot(&f.state, V1).unwrap();
    assert_eq!(decode_snapshot(&bytes).unwrap(), f.state);

    f.ok(Command::apply_vm(ha_vm(tuned()), 2));
    let e = encode_snapshot(&f.state, V1).unwrap_err();
    assert!(e.to_string().contains("a VM with HA settings"), "{e}");
    let bytes = encode_snapshot(&f.state, HA_SETTINGS).unwrap();
    assert_eq!(decode_snapshot(&bytes).unwrap(), f.state);
}

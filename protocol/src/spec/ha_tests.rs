//! PVE HA's settings in a spec: both forms in spec files (`ha = true/false` and the `[vm.ha]`
//! table) in TOML and JSON, the plain struct in bincode, unknown keys refused, and validation
//! (bounds, a request that agrees with the desired power).

use super::*;
use crate::encoding;

fn vm_file(ha: &str) -> Result<VmSpec, SpecFileError> {
    let text = format!("[[vm]]\nname = \"db-1\"\nmemory_mib = 1024\n{ha}");
    parse_vm_file(&text).map(|mut specs| specs.remove(0))
}

fn tuned() -> HaSpec {
    HaSpec {
        state: Some(HaState::Started),
        max_restart: Some(3),
        max_relocate: Some(0),
        recovery: Some(RecoveryMode::Recreate),
    }
}

#[test]
fn toml_takes_the_bool_or_the_table_leaving_out_what_is_the_fleets_default() {
    let cases = [
        ("", HaSpec::none()),
        ("ha = false\n", HaSpec::none()),
        ("ha = true\n", HaSpec::started()),
        ("[vm.ha]\n", HaSpec::none()),
        ("[vm.ha]\nstate = \"started\"\n", HaSpec::started()),
        (
            "[vm.ha]\nstate = \"started\"\nmax_restart = 3\nmax_relocate = 0\n\
             recovery = \"recreate\"\n",
            tuned(),
        ),
        (
            "ha = { state = \"ignored\", recovery = \"none\" }\n",
            HaSpec {
                state: Some(HaState::Ignored),
                recovery: Some(RecoveryMode::None),
                ..HaSpec::none()
            },
        ),
    ];
    for (text, want) in cases {
        assert_eq!(vm_file(text).map(|s| s.ha), Ok(want), "{text}");
    }
    let stopped = "state = \"stopped\"\n[vm.ha]\nstate = \"disabled\"\n";
    assert_eq!(
        vm_file(stopped).map(|s| s.ha.state),
        Ok(Some(HaState::Disabled))
    );
}

#[test]
fn toml_refuses_unknown_keys_values_and_types_naming_what_is_allowed() {
    let refused = |text: &str| match vm_file(text) {
        Err(SpecFileError::Toml(m)) => m,
        other => panic!("{text}: {other:?}"),
    };
    let m = refused("[vm.ha]\nstate = \"started\"\nmax_restarts = 2\n");
    assert!(
        m.contains("max_restarts") && m.contains("max_restart"),
        "{m}"
    );
    let m = refused("[vm.ha]\nstate = \"running\"\n");
    assert!(m.contains("running") && m.contains("started"), "{m}");
    assert!(m.contains("ignored"), "{m}");
    let m = refused("[vm.ha]\nrecovery = \"migrate\"\n");
    assert!(m.contains("relocate") && m.contains("recreate"), "{m}");
    let m = refused("ha = \"yes\"\n");
    assert!(m.contains("true, false or a table"), "{m}");
    let m = refused("[vm.ha]\nmax_restart = -1\n");
    assert!(m.contains("max_restart") || m.contains("-1"), "{m}");
}

#[test]
fn toml_writes_the_table_and_reads_it_back() {
    let mut spec = VmSpec::new("db-1", 1024);
    for ha in [HaSpec::none(), HaSpec::started(), tuned()] {
        spec.ha = ha;
        let text = toml::to_string(&VmSpecFile {
            vm: vec![spec.clone()],
        })
        .unwrap();
        assert!(text.contains("[vm.ha]"), "{text}");
        assert_eq!(parse_vm_file(&text), Ok(vec![spec.clone()]), "{text}");
    }
}

#[test]
fn json_takes_both_forms_and_writes_the_struct() {
    let read = |v: serde_json::Value| serde_json::from_value::<HaSpec>(v);
    assert_eq!(read(serde_json::json!(true)).unwrap(), HaSpec::started());
    assert_eq!(read(serde_json::json!(false)).unwrap(), HaSpec::none());
    assert_eq!(read(serde_json::json!({})).unwrap(), HaSpec::none());
    assert_eq!(
        read(serde_json::json!({"state": null, "max_relocate": 2})).unwrap(),
        HaSpec {
            max_relocate: Some(2),
            ..HaSpec::none()
        }
    );
    assert!(read(serde_json::json!({"state": "started", "extra": 1})).is_err());
    assert!(read(serde_json::json!("started")).is_err());
    for ha in [HaSpec::none(), HaSpec::started(), tuned()] {
        let json = serde_json::to_value(ha).unwrap();
        assert!(json.is_object(), "{json}");
        assert_eq!(read(json).unwrap(), ha);
    }
    assert_eq!(
        serde_json::to_value(tuned()).unwrap(),
        serde_json::json!({"state": "started", "max_restart": 3, "max_relocate": 0,
                           "recovery": "recreate"})
    );
    let mut spec = VmSpec::new("db-1", 1024);
    spec.ha = tuned();
    let text = serde_json::to_string(&spec).unwrap();
    assert_eq!(serde_json::from_str::<VmSpec>(&text).unwrap(), spec);
}

#[test]
fn bincode_is_the_plain_struct_in_every_case() {
    let states = [
        None,
        Some(HaState::Started),
        Some(HaState::Stopped),
        Some(HaState::Disabled),
        Some(HaState::Ignored),
    ];
    let recoveries = [
        RecoveryMode::Relocate,
        RecoveryMode::Recreate,
        RecoveryMode::None,
    ];
    for state in states {
        for recovery in recoveries {
            let ha = HaSpec {
                state,
                max_restart: Some(10),
                max_relocate: None,
                recovery: Some(recovery),
            };
            let bytes = encoding::encode(&ha).unwrap();
            assert_eq!(encoding::decode::<HaSpec>(&bytes).unwrap(), ha);
        }
    }
    // Four absent options: four bytes, the layout the golden files hold.
    assert_eq!(encoding::encode(&HaSpec::none()).unwrap(), vec![0, 0, 0, 0]);
    let mut spec = VmSpec::new("db-1", 1024);
    spec.ha = tuned();
    let bytes = encoding::encode(&spec).unwrap();
    assert_eq!(encoding::decode::<VmSpec>(&bytes).unwrap(), spec);
}

#[test]
fn limits_are_bounded_and_the_request_agrees_with_the_desired_power() {
    let mut spec = VmSpec::new("db-1", 1024);
    spec.ha = HaSpec {
        max_restart: Some(11),
        ..HaSpec::started()
    };
    let e = validate_spec(&spec).unwrap_err();
    assert_eq!(
        e.to_string(),
        "ha.max_restart = 11 is not allowed: expected an integer 0-10"
    );
    spec.ha = HaSpec {
        max_relocate: Some(11),
        ..HaSpec::started()
    };
    assert_eq!(validate_spec(&spec).unwrap_err().field, "ha.max_relocate");
    spec.ha = HaSpec {
        max_restart: Some(10),
        max_relocate: Some(0),
        ..HaSpec::started()
    };
    validate_spec(&spec).unwrap();

    let refused = |ha: HaState, state: DesiredState| {
        let mut spec = VmSpec::new("db-1", 1024);
        spec.ha = HaSpec::with_state(ha);
        spec.state = state;
        validate_spec(&spec).err()
    };
    let e = refused(HaState::Stopped, DesiredState::Running).unwrap();
    assert_eq!(
        (e.field.as_str(), e.value.as_str()),
        ("ha.state", "\"stopped\"")
    );
    assert!(e.allowed.contains("write ha.state = \"started\""), "{e}");
    let e = refused(HaState::Started, DesiredState::Stopped).unwrap();
    assert_eq!(e.value, "\"started\"");
    assert!(e.allowed.contains("write ha.state = \"stopped\""), "{e}");
    let e = refused(HaState::Disabled, DesiredState::Running).unwrap();
    assert!(e.allowed.contains("state = \"stopped\""), "{e}");
    for (ha, state) in [
        (HaState::Started, DesiredState::Running),
        (HaState::Stopped, DesiredState::Stopped),
        (HaState::Disabled, DesiredState::Stopped),
        (HaState::Ignored, DesiredState::Running),
        (HaState::Ignored, DesiredState::Stopped),
    ] {
        assert_eq!(refused(ha, state), None, "{ha} with {state}");
    }
    // In a file, the error names the entry.
    let e = vm_file("state = \"stopped\"\nha = true\n").unwrap_err();
    assert!(e.to_string().contains("vm[0].ha.state"), "{e}");
}

#[test]
fn start_and_stop_flip_only_a_started_or_stopped_request_and_only_those_fence() {
    use DesiredState::{Running, Stopped};
    assert_eq!(
        HaSpec::started().following(Stopped),
        HaSpec::with_state(HaState::Stopped)
    );
    assert_eq!(tuned().following(Stopped).state, Some(HaState::Stopped));
    assert_eq!(tuned().following(Stopped).max_restart, Some(3));
    assert_eq!(
        HaSpec::with_state(HaState::Stopped).following(Running),
        HaSpec::started()
    );
    for kept in [
        HaSpec::none(),
        HaSpec::with_state(HaState::Disabled),
        HaSpec::with_state(HaState::Ignored),
    ] {
        assert_eq!(kept.following(Running), kept);
        assert_eq!(kept.following(Stopped), kept);
        assert!(!kept.fences());
    }
    assert!(HaSpec::started().fences());
    assert!(HaSpec::with_state(HaState::Stopped).fences());
}

#[test]
fn what_a_vm_leaves_out_is_the_fleets_default_read_when_used() {
    let defaults = HaDefaults {
        max_restart: 0,
        max_relocate: 4,
        recovery: RecoveryMode::Recreate,
        ..HaDefaults::default()
    };
    assert_eq!(
        HaSpec::started().policy(&defaults),
        HaPolicy {
            state: Some(HaState::Started),
            max_restart: 0,
            max_relocate: 4,
            recovery: RecoveryMode::Recreate,
        }
    );
    // What the VM says wins, field by field.
    assert_eq!(
        tuned().policy(&defaults),
        HaPolicy {
            state: Some(HaState::Started),
            max_restart: 3,
            max_relocate: 0,
            recovery: RecoveryMode::Recreate,
        }
    );
    let own_mode = HaSpec {
        recovery: Some(RecoveryMode::Relocate),
        ..HaSpec::started()
    };
    assert_eq!(own_mode.policy(&defaults).recovery, RecoveryMode::Relocate);
    assert_eq!(own_mode.policy(&defaults).max_relocate, 4);
    // PVE's defaults unless the operator changes them.
    assert_eq!(
        HaSpec::started().policy(&HaDefaults::default()),
        HaPolicy {
            state: Some(HaState::Started),
            max_restart: DEFAULT_MAX_RESTART,
            max_relocate: DEFAULT_MAX_RELOCATE,
            recovery: RecoveryMode::Relocate,
        }
    );
    assert!(HaSpec::started().policy(&defaults).fences());
    assert!(!HaSpec::none().policy(&defaults).fences());
    assert!(HaSpec::started().only_state() && !tuned().only_state());
}

//! Reading systemd inside the container: `systemctl show` output as a unit's state, and
//! `systemctl is-system-running` as boot finished or not. Pure parsers; the container runs
//! the commands.

use std::collections::BTreeMap;

/// The `systemctl show` properties [`UnitState`] reads.
pub const SHOW_PROPERTIES: &[&str] = &[
    "ActiveState",
    "SubState",
    "Result",
    "MainPID",
    "InvocationID",
    "ActiveEnterTimestampMonotonic",
    "StatusText",
    "UnitFileState",
    "ConditionResult",
    "ConditionTimestampMonotonic",
    "NRestarts",
    "Type",
    "NotifyAccess",
    "WatchdogUSec",
    "WatchdogTimestampMonotonic",
    "LoadState",
];

/// `KEY=VALUE` lines of `systemctl show` (values may contain `=`).
pub fn parse_show(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// One unit as `systemctl show` describes it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UnitState {
    /// Every property read.
    pub props: BTreeMap<String, String>,
}

impl UnitState {
    /// From `systemctl show -p ...` output.
    pub fn parse(text: &str) -> UnitState {
        UnitState {
            props: parse_show(text),
        }
    }

    /// A property, empty when absent.
    pub fn get(&self, key: &str) -> &str {
        self.props.get(key).map(String::as_str).unwrap_or("")
    }

    /// `active`, `inactive`, `failed`, `activating`, ...
    pub fn active_state(&self) -> &str {
        self.get("ActiveState")
    }

    /// `running`, `dead`, `start`, ...
    pub fn sub_state(&self) -> &str {
        self.get("SubState")
    }

    /// The main process (0 when none).
    pub fn main_pid(&self) -> u64 {
        self.get("MainPID").parse().unwrap_or(0)
    }

    /// How many times systemd restarted it after failures.
    pub fn restarts(&self) -> u64 {
        self.get("NRestarts").parse().unwrap_or(0)
    }

    /// Whether it is up and running: for `Type=notify` that means the daemon sent `READY=1`.
    pub fn is_running(&self) -> bool {
        self.active_state() == "active" && self.sub_state() == "running" && self.main_pid() != 0
    }

    /// Whether it was asked to start and did not because a `Condition*=` failed: inactive,
    /// not failed, with a recorded condition check that came out false.
    pub fn skipped_by_condition(&self) -> bool {
        self.active_state() == "inactive"
            && self.get("ConditionResult") == "no"
            && self
                .get("ConditionTimestampMonotonic")
                .parse::<u64>()
                .unwrap_or(0)
                > 0
    }

    /// One line for messages.
    pub fn summary(&self) -> String {
        format!(
            "{}/{} result={} pid={} restarts={} condition={} status={:?}",
            self.active_state(),
            self.sub_state(),
            self.get("Result"),
            self.main_pid(),
            self.restarts(),
            self.get("ConditionResult"),
            self.get("StatusText")
        )
    }
}

/// What `systemctl is-system-running` said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SystemState {
    /// Booted, every unit fine.
    Running,
    /// Booted, some unit failed.
    Degraded,
    /// Anything else (`starting`, `stopping`, `offline`, no answer).
    Other(String),
}

impl SystemState {
    /// From the command's output.
    pub fn parse(stdout: &str) -> SystemState {
        match stdout.trim() {
            "running" => SystemState::Running,
            "degraded" => SystemState::Degraded,
            other => SystemState::Other(other.to_string()),
        }
    }

    /// Whether boot finished (`running` or `degraded`).
    pub fn booted(&self) -> bool {
        matches!(self, SystemState::Running | SystemState::Degraded)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOTIFY_RUNNING: &str = "Type=notify\nNotifyAccess=main\nActiveState=active\n\
        SubState=running\nResult=success\nMainPID=123\nNRestarts=0\n\
        StatusText=serving; leader=1\nWatchdogUSec=30s\nExecStart={ path=/a ; argv[]=/a --x=1 }\n";

    #[test]
    fn show_output_is_split_at_the_first_equals_sign() {
        let props = parse_show(NOTIFY_RUNNING);
        assert_eq!(props["StatusText"], "serving; leader=1");
        assert_eq!(props["ExecStart"], "{ path=/a ; argv[]=/a --x=1 }");
        assert_eq!(props["WatchdogUSec"], "30s");
    }

    #[test]
    fn a_notify_unit_with_a_main_pid_is_running() {
        let unit = UnitState::parse(NOTIFY_RUNNING);
        assert!(unit.is_running());
        assert!(!unit.skipped_by_condition());
        assert_eq!(unit.main_pid(), 123);
    }

    #[test]
    fn an_activating_unit_is_not_running() {
        let unit = UnitState::parse("ActiveState=activating\nSubState=start\nMainPID=9\n");
        assert!(!unit.is_running());
    }

    #[test]
    fn only_a_checked_and_failed_condition_counts_as_skipped() {
        let skipped = UnitState::parse(
            "ActiveState=inactive\nSubState=dead\nConditionResult=no\n\
             ConditionTimestampMonotonic=81234\n",
        );
        assert!(skipped.skipped_by_condition());
        let never_started = UnitState::parse(
            "ActiveState=inactive\nSubState=dead\nConditionResult=no\n\
             ConditionTimestampMonotonic=0\n",
        );
        assert!(!never_started.skipped_by_condition());
        let failed = UnitState::parse(
            "ActiveState=failed\nSubState=failed\nConditionResult=yes\n\
             ConditionTimestampMonotonic=81234\n",
        );
        assert!(!failed.skipped_by_condition());
    }

    #[test]
    fn running_and_degraded_mean_booted() {
        assert_eq!(SystemState::parse("running\n"), SystemState::Running);
        assert!(SystemState::parse("degraded\n").booted());
        assert!(!SystemState::parse("starting\n").booted());
        assert_eq!(SystemState::parse(""), SystemState::Other(String::new()));
    }
}

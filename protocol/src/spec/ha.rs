//! PVE HA's per-VM settings, as `pve-ha-manager` names them (`ha-manager add vm:100 --state
//! started --max_restart 1 --max_relocate 1`), in the VM spec: whether the fleet's HA manages
//! the VM, what it asks for, and how hard it tries before it gives up.
//!
//! ```toml
//! [[vm]]
//! name = "db-1"
//! ha = true              # the short form: state = "started" with PVE's defaults
//!
//! [vm.ha]                # or the table (each key optional, unknown keys refused)
//! state = "started"      # started | stopped | disabled | ignored
//! max_restart = 1        # start failures retried on the same host (0-10)
//! max_relocate = 1       # then moves to the best untried host (0-10)
//! recovery = "relocate"  # relocate | recreate | none
//! ```
//!
//! `ha = false` (or no `ha` at all) leaves the VM out of the fleet's HA. A limit or recovery
//! mode the VM leaves out is the fleet's default ([`HaDefaults`], the `[settings.ha]` table of
//! a fleet file), read when it is used: changing a default changes every VM that does not say.
//! Whether a VM is an HA guest at all (`state`) has no fleet default on purpose: an HA guest
//! is stopped hard when its host loses its lease, which nobody should get without asking. Spec files are read
//! with serde's human-readable formats (TOML, JSON), which take the bool or the table; the
//! replicated and wire forms are bincode, which is not self-describing, so there the settings
//! are always the plain struct (see the `Deserialize` impl).

use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};

use super::vm_parts::DesiredState;

/// PVE's default `max_restart` (and the fleet's).
pub const DEFAULT_MAX_RESTART: u32 = 1;
/// PVE's default `max_relocate` (and the fleet's).
pub const DEFAULT_MAX_RELOCATE: u32 = 1;
/// The largest `max_restart` and `max_relocate` accepted (PVE's bound too).
pub const MAX_HA_TRIES: u32 = 10;

/// What the fleet's HA is asked to do with a VM (PVE's HA resource `state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HaState {
    /// Keep it running: a failed start is retried (`max_restart`, then `max_relocate`), and
    /// after its host is fenced it is recovered on another host. The request agrees with the
    /// VM's desired power: `state = "running"`.
    Started,
    /// Keep it stopped, but still an HA guest: fenced with its host, and recovered (stopped)
    /// elsewhere. Goes with `state = "stopped"`.
    Stopped,
    /// Kept stopped and never recovered: the way out of PVE's `error` state (disable, fix the
    /// cause, enable again). Goes with `state = "stopped"`.
    Disabled,
    /// HA never touches it: not stopped when its host fences itself, not recovered. The VM is
    /// otherwise managed as any other.
    Ignored,
}

impl HaState {
    /// The value as the spec writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            HaState::Started => "started",
            HaState::Stopped => "stopped",
            HaState::Disabled => "disabled",
            HaState::Ignored => "ignored",
        }
    }
}

impl fmt::Display for HaState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a VM of a fenced host is brought back.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RecoveryMode {
    /// PVE's own recovery: within the same PVE cluster, the same VM (same VMID, same disks)
    /// is moved to another node; needs its disks on shared storage. The default.
    #[default]
    Relocate,
    /// Built anew from the spec on any suitable host (any PVE cluster): opt-in, because what
    /// was on local disks is lost.
    Recreate,
    /// Not recovered: left to the operator.
    None,
}

impl RecoveryMode {
    /// The value as the spec writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            RecoveryMode::Relocate => "relocate",
            RecoveryMode::Recreate => "recreate",
            RecoveryMode::None => "none",
        }
    }
}

impl fmt::Display for RecoveryMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A VM's HA settings (PVE's HA resource options), as its spec says them: a limit or mode
/// left `None` is the fleet's default ([`HaSpec::policy`]). The default is "not under the
/// fleet's HA", which is what `ha = false` (or no `ha`) means.
///
/// Validation ([`validate_spec`](super::validate_spec)) ties `state` to the VM's desired
/// power: `started` needs `state = "running"`; `stopped` and `disabled` need
/// `state = "stopped"`. `pvefleet vm start|stop` flips `started` and `stopped` along with the
/// desired power, as `ha-manager` does for `qm start|stop` of an HA guest.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize)]
pub struct HaSpec {
    /// `None`: not under the fleet's HA (the old `ha = false`).
    pub state: Option<HaState>,
    /// How many times a failed start is retried on the same host (PVE `max_restart`, 0-10);
    /// `None`: the fleet's default.
    pub max_restart: Option<u32>,
    /// Then how many times the VM is moved to the best host it has not been tried on yet
    /// (PVE `max_relocate`, 0-10); `None`: the fleet's default.
    pub max_relocate: Option<u32>,
    /// How the VM is brought back after its host is fenced; `None`: the fleet's default.
    pub recovery: Option<RecoveryMode>,
}

/// The fleet's HA defaults (`[settings.ha]`): the limits and recovery mode of every HA VM
/// whose spec leaves them out. PVE's own defaults unless the operator changes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HaDefaults {
    /// `max_restart` of VMs that do not say (0-10; PVE: 1).
    pub max_restart: u32,
    /// `max_relocate` of VMs that do not say (0-10; PVE: 1).
    pub max_relocate: u32,
    /// The recovery mode of VMs that do not say (PVE's only one: `relocate`).
    pub recovery: RecoveryMode,
    /// What a host's clean shutdown or reboot does to its guests (PVE's `shutdown_policy`,
    /// default `conditional`); an agent restart never moves or fences anything.
    pub shutdown_policy: ShutdownPolicy,
}

impl Default for HaDefaults {
    fn default() -> HaDefaults {
        HaDefaults {
            max_restart: DEFAULT_MAX_RESTART,
            max_relocate: DEFAULT_MAX_RELOCATE,
            recovery: RecoveryMode::default(),
            shutdown_policy: ShutdownPolicy::default(),
        }
    }
}

/// PVE HA's `shutdown_policy` (datacenter.cfg `ha: shutdown_policy=...`), the fleet-wide
/// answer to a host whose agent says the host is going down cleanly
/// (docs/design/maintenance.md, "Shutdown policy").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ShutdownPolicy {
    /// The guests stay on the host, frozen: not recovered while it is down (up to the freeze
    /// hold), started again when it is back.
    Freeze,
    /// The guests are recovered elsewhere once the host is fenced, as after a failure.
    Failover,
    /// The host is drained first (a maintenance that ends by itself when it is back).
    Migrate,
    /// A reboot freezes, a power-off fails over (PVE's default).
    #[default]
    Conditional,
}

impl fmt::Display for ShutdownPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ShutdownPolicy::Freeze => "freeze",
            ShutdownPolicy::Failover => "failover",
            ShutdownPolicy::Migrate => "migrate",
            ShutdownPolicy::Conditional => "conditional",
        })
    }
}

/// A VM's HA settings in force: its spec's, with the fleet's defaults for what it leaves out
/// ([`HaSpec::policy`]). What the planners decide with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct HaPolicy {
    /// `None`: not under the fleet's HA.
    pub state: Option<HaState>,
    /// Failed starts retried on the same host.
    pub max_restart: u32,
    /// Then moves to untried hosts.
    pub max_relocate: u32,
    /// How the VM is brought back after its host is fenced.
    pub recovery: RecoveryMode,
}

impl HaPolicy {
    /// Whether the VM is an HA guest for fencing ([`HaSpec::fences`]).
    pub fn fences(&self) -> bool {
        matches!(self.state, Some(HaState::Started | HaState::Stopped))
    }
}

impl HaSpec {
    /// Not under the fleet's HA (`ha = false`).
    pub fn none() -> HaSpec {
        HaSpec::default()
    }

    /// `state` with the fleet's defaults for the rest (`ha = true` is `started`).
    pub fn with_state(state: HaState) -> HaSpec {
        HaSpec {
            state: Some(state),
            ..HaSpec::default()
        }
    }

    /// `ha = true`: started, with the fleet's defaults.
    pub fn started() -> HaSpec {
        HaSpec::with_state(HaState::Started)
    }

    /// The settings in force: these, with `defaults` for what they leave out.
    pub fn policy(&self, defaults: &HaDefaults) -> HaPolicy {
        HaPolicy {
            state: self.state,
            max_restart: self.max_restart.unwrap_or(defaults.max_restart),
            max_relocate: self.max_relocate.unwrap_or(defaults.max_relocate),
            recovery: self.recovery.unwrap_or(defaults.recovery),
        }
    }

    /// Whether only `state` is set (every limit and the mode are the fleet's defaults): what
    /// encoding v1's bool `ha` can carry.
    pub fn only_state(&self) -> bool {
        self.max_restart.is_none() && self.max_relocate.is_none() && self.recovery.is_none()
    }

    /// Whether the VM is an HA guest for fencing: its host stops it when its lease runs out,
    /// it never starts at host boot by itself (`onboot` is forced off), and the agent marks it
    /// `ha=1` in its managed notes. True for `started` and `stopped` only: a `disabled` guest
    /// is kept stopped anyway and an `ignored` one is never touched by HA.
    pub fn fences(&self) -> bool {
        matches!(self.state, Some(HaState::Started | HaState::Stopped))
    }

    /// These settings after `pvefleet vm start|stop` set the desired power to `power`:
    /// `started` and `stopped` follow it (as `ha-manager` does for `qm start|stop`);
    /// `disabled`, `ignored` and "not HA" stay as they are.
    pub fn following(self, power: DesiredState) -> HaSpec {
        match self.state {
            Some(HaState::Started | HaState::Stopped) => HaSpec {
                state: Some(match power {
                    DesiredState::Running => HaState::Started,
                    DesiredState::Stopped => HaState::Stopped,
                }),
                ..self
            },
            _ => self,
        }
    }
}

/// [`HaSpec`] as bincode lays it out, and the table form of the human-readable formats.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    #[serde(default)]
    state: Option<HaState>,
    #[serde(default)]
    max_restart: Option<u32>,
    #[serde(default)]
    max_relocate: Option<u32>,
    #[serde(default)]
    recovery: Option<RecoveryMode>,
}

impl From<Table> for HaSpec {
    fn from(t: Table) -> HaSpec {
        HaSpec {
            state: t.state,
            max_restart: t.max_restart,
            max_relocate: t.max_relocate,
            recovery: t.recovery,
        }
    }
}

/// Human-readable formats: `true`, `false` or a table.
struct BoolOrTable;

impl<'de> Visitor<'de> for BoolOrTable {
    type Value = HaSpec;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(
            "true, false or a table [vm.ha] with state (started, stopped, disabled, ignored), \
             max_restart, max_relocate and recovery (relocate, recreate, none)",
        )
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<HaSpec, E> {
        // `true`: started, every limit the fleet's default.
        Ok(if v { HaSpec::started() } else { HaSpec::none() })
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<HaSpec, A::Error> {
        Table::deserialize(de::value::MapAccessDeserializer::new(map)).map(HaSpec::from)
    }
}

impl<'de> Deserialize<'de> for HaSpec {
    /// TOML and JSON (human-readable): `true` (started, the fleet's defaults), `false` (not HA) or a
    /// table whose keys are all optional. bincode (not self-describing): the plain struct, as
    /// `Serialize` writes it in every format.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<HaSpec, D::Error> {
        if deserializer.is_human_readable() {
            deserializer.deserialize_any(BoolOrTable)
        } else {
            // The same four fields in the same order as the derived `Serialize`.
            Table::deserialize(deserializer).map(HaSpec::from)
        }
    }
}

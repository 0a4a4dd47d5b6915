//! Bytes in the Raft log and in snapshots: the encoding [`Version`] (big-endian `u16`), then
//! the value as that version lays it out (bincode 2, standard config).
//!
//! Commands and snapshots are written at the **cluster version** the caller passes (see
//! `versions`), never at a version some member cannot read; a command newer than that version
//! is refused with [`CodecError::TooNew`]. Reading dispatches explicitly on the version: each
//! version this build supports has its decoder, and any other is
//! [`CodecError::Unsupported`], which the member treats as fatal (it stops rather than apply
//! something else than its peers).
//!
//! Layouts per version (keep this list when a version is added):
//! - v1: `Command` as far as `SetClusterVersion` (v2 only appended variants, so v1 entries
//!   decode with today's enum); `FleetState` frozen in `snapshot_v1`.
//! - v2: `Command` with the admin and VIP commands; `FleetState` as defined in this build.
//!   `Command::PutVip` keeps the v1 layout of a VIP (`VipSpecV1`) at every version;
//!   `Command::ApplyVip` (v2) carries the fields v2 added. Likewise `Command::PutVm` keeps the
//!   v1 layout of a VM spec (`VmSpecV1`, `ha` a bool) and `Command::ApplyVm` (v2) carries PVE
//!   HA's settings. `Command::ApplyFleet` (a whole fleet file, all or nothing) and
//!   `Command::Batch` (the reconciler's steps of many VMs in one entry) are v2 only; a batch
//!   holding a command of a later version needs that version.

use protocol::encoding::{self, EncodingError};
use protocol::version::{self, Version, VersionRange};

use super::snapshot_v1::{self, SnapshotV1};
use super::{Command, CommandReply, FleetState};

/// Bytes of the version prefix.
const PREFIX_LEN: usize = 2;

/// Encoding or decoding failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodecError {
    /// Nothing to decode, or less than the version prefix.
    #[error("empty {what}: no encoding version")]
    Empty {
        /// Command, reply or snapshot.
        what: &'static str,
    },
    /// Written at (or asked to be written at) a version this build does not support.
    #[error(
        "{what} at encoding {found} is not supported by this build (it reads {supported}): \
         run a release that reads {found}"
    )]
    Unsupported {
        /// Command, reply or snapshot.
        what: &'static str,
        /// The version found or asked for.
        found: Version,
        /// What this build reads.
        supported: VersionRange,
    },
    /// The command exists only from a later version than the cluster's.
    #[error(
        "{command} needs cluster version {needs}, the cluster is at {cluster}: it becomes \
         available once every member runs a release that reads {needs}"
    )]
    TooNew {
        /// The command's name.
        command: &'static str,
        /// The version that introduced it.
        needs: Version,
        /// The cluster version it was to be written at.
        cluster: Version,
    },
    /// The body is malformed for its version.
    #[error("malformed {what} at encoding {version}: {reason}")]
    Malformed {
        /// Command, reply or snapshot.
        what: &'static str,
        /// The version it claims.
        version: Version,
        /// The decoder's explanation.
        reason: String,
    },
    /// The value could not be encoded.
    #[error("cannot encode {what}: {reason}")]
    Encode {
        /// Command, reply or snapshot.
        what: &'static str,
        /// The encoder's explanation.
        reason: String,
    },
}

fn supported(what: &'static str, found: Version) -> Result<(), CodecError> {
    if found.is_supported() {
        Ok(())
    } else {
        Err(CodecError::Unsupported {
            what,
            found,
            supported: VersionRange::this_build(),
        })
    }
}

fn prefixed<T: serde::Serialize>(
    what: &'static str,
    version: Version,
    value: &T,
) -> Result<Vec<u8>, CodecError> {
    supported(what, version)?;
    let body = encoding::encode(value).map_err(|e| CodecError::Encode {
        what,
        reason: e.to_string(),
    })?;
    let mut out = Vec::with_capacity(PREFIX_LEN + body.len());
    out.extend_from_slice(&version.0.to_be_bytes());
    out.extend_from_slice(&body);
    Ok(out)
}

/// The version of `bytes` (checked to be one this build reads) and the body after it.
fn split<'a>(what: &'static str, bytes: &'a [u8]) -> Result<(Version, &'a [u8]), CodecError> {
    let (prefix, body) = bytes
        .split_first_chunk::<PREFIX_LEN>()
        .ok_or(CodecError::Empty { what })?;
    let version = Version(u16::from_be_bytes(*prefix));
    supported(what, version)?;
    Ok((version, body))
}

fn malformed(what: &'static str, version: Version) -> impl Fn(EncodingError) -> CodecError {
    move |e| CodecError::Malformed {
        what,
        version,
        reason: e.to_string(),
    }
}

/// A command for the Raft log at the cluster version `cluster`.
///
/// # Errors
/// [`CodecError::TooNew`] if the command needs a later version, [`CodecError::Unsupported`]
/// if this build cannot write `cluster`.
pub fn encode_command(cmd: &Command, cluster: Version) -> Result<Vec<u8>, CodecError> {
    let needs = cmd.since();
    if needs > cluster {
        return Err(CodecError::TooNew {
            command: cmd.name(),
            needs,
            cluster,
        });
    }
    // v1 is the only layout so far: nothing to translate for older readers.
    prefixed("command", cluster, cmd)
}

/// A command read back from the Raft log, whatever supported version wrote it.
///
/// # Errors
/// [`CodecError::Unsupported`] for a version this build does not read (the member must stop),
/// [`CodecError::Malformed`] for bytes that are not a command of their version.
pub fn decode_command(bytes: &[u8]) -> Result<Command, CodecError> {
    let what = "command";
    let (version, body) = split(what, bytes)?;
    let cmd: Command = match version.0 {
        // v2 only appended variants: a v1 entry is a v2 entry without them (checked below).
        1 | 2 => encoding::decode(body).map_err(malformed(what, version))?,
        _ => return Err(unreachable_version(what, version)),
    };
    // An entry written at `version` holds only what `version` carries.
    if cmd.since() > version {
        return Err(CodecError::Malformed {
            what,
            version,
            reason: format!("{} is not part of encoding {version}", cmd.name()),
        });
    }
    Ok(cmd)
}

/// A version `split` accepted but no decoder arm names: a supported version without its
/// decoder is a bug of this build, reported rather than misread.
fn unreachable_version(what: &'static str, version: Version) -> CodecError {
    CodecError::Malformed {
        what,
        version,
        reason: "this build lists the version as supported but has no decoder for it".into(),
    }
}

/// A reply as returned to the proposer (always on the member that applied it: this build).
///
/// # Errors
/// [`CodecError::Encode`] if bincode refuses the value.
pub fn encode_reply(reply: &CommandReply) -> Result<Vec<u8>, CodecError> {
    prefixed("reply", version::CURRENT, reply)
}

/// A reply read by the proposer.
///
/// # Errors
/// As [`decode_command`].
pub fn decode_reply(bytes: &[u8]) -> Result<CommandReply, CodecError> {
    let what = "reply";
    let (version, body) = split(what, bytes)?;
    encoding::decode(body).map_err(malformed(what, version))
}

/// The whole state as a snapshot at the cluster version `cluster`, so that any member can
/// install it.
///
/// # Errors
/// [`CodecError::Unsupported`] if this build cannot write `cluster`, [`CodecError::Encode`]
/// if bincode refuses the state. Never an empty snapshot.
pub fn encode_snapshot(state: &FleetState, cluster: Version) -> Result<Vec<u8>, CodecError> {
    match cluster.0 {
        1 => {
            // Never drop data silently: v2 data while the cluster is at v1 is a bug.
            if state.admins().next().is_some() || state.admin_renewal_ms() != 0 {
                return Err(CodecError::Encode {
                    what: "snapshot",
                    reason: "the state holds operator identities, which encoding v1 cannot carry"
                        .into(),
                });
            }
            let view = snapshot_v1::v1_view(state).ok_or_else(|| CodecError::Encode {
                what: "snapshot",
                reason: "the state holds a VIP with labels, preemption or checks, a host \
                         with a state reason, a VM with HA settings, a recovery, failed \
                         starts or HA defaults in the settings, which encoding v1 cannot \
                         carry"
                    .into(),
            })?;
            prefixed("snapshot", cluster, &view)
        }
        _ => prefixed("snapshot", cluster, state),
    }
}

/// A state read back from a snapshot, whatever supported version wrote it.
///
/// # Errors
/// As [`decode_command`].
pub fn decode_snapshot(bytes: &[u8]) -> Result<FleetState, CodecError> {
    let what = "snapshot";
    let (version, body) = split(what, bytes)?;
    match version.0 {
        1 => encoding::decode::<SnapshotV1>(body)
            .map(FleetState::from)
            .map_err(malformed(what, version)),
        2 => encoding::decode(body).map_err(malformed(what, version)),
        _ => Err(unreachable_version(what, version)),
    }
}

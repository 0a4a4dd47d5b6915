//! Why the VIP testbed could not be set up, driven or read. Each message names the step and,
//! for the system tools, what the testbed needs (root, iproute2, nftables).

use std::io;
use std::time::Duration;

use lab::LabError;
use node_agent::vip::addresses::VipError;

/// A failure of the testbed (`ip` and `nft` failures are the launcher's: [`LabError::Ip`],
/// [`LabError::Nft`]).
#[derive(Debug, thiserror::Error)]
pub enum BedError {
    /// A thread could not move into a network namespace.
    #[error("cannot enter the network namespace {netns}: {source}")]
    Enter {
        /// The namespace.
        netns: String,
        /// The system's reason.
        #[source]
        source: io::Error,
    },
    /// A system call of the testbed itself failed (a socket, a thread, a file).
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The system's reason.
        #[source]
        source: io::Error,
    },
    /// The launcher failed.
    #[error(transparent)]
    Lab(#[from] LabError),
    /// A `pvefleet` command failed or printed something unexpected.
    #[error("pvefleet {args}: {reason}")]
    Cli {
        /// Its arguments.
        args: String,
        /// Its exit status and output, or what could not be read from it.
        reason: String,
    },
    /// A state was not reached in time.
    #[error("{what} not reached within {after:?}; last seen: {last}")]
    Timeout {
        /// The state waited for.
        what: String,
        /// How long the testbed waited.
        after: Duration,
        /// What it saw last.
        last: String,
    },
    /// Reading a host's VIP addresses failed.
    #[error("reading the VIP addresses of {host}: {source}")]
    Addresses {
        /// The host.
        host: String,
        /// The netlink error.
        #[source]
        source: VipError,
    },
    /// A fault named a part the testbed does not have (e.g. no owner to fault).
    #[error("{0}")]
    NoSuch(String),
}

/// `BedError::Io` for `what`.
pub(crate) fn io(what: impl Into<String>) -> impl FnOnce(io::Error) -> BedError {
    let what = what.into();
    move |source| BedError::Io { what, source }
}

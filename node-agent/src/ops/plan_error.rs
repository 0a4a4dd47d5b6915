//! [`PlanError`]: why no configure plan can be made. Its own file because turning the command
//! into a desired VM (`desired.rs`) refuses with it as well as the plan (`plan.rs`) that reads
//! the desired VM.

/// Why no plan can be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// A value cannot be written (names the spec or config field).
    #[error("invalid {field}: {reason}")]
    Invalid {
        /// The field.
        field: String,
        /// What is wrong.
        reason: String,
    },
    /// The spec asks for a disk smaller than it is; PVE cannot shrink disks.
    #[error(
        "disk {slot} is {current_gib} GiB and the spec asks for {desired_gib} GiB: disks are never shrunk; set size_gib to at least {current_gib}"
    )]
    Shrink {
        /// The slot.
        slot: String,
        /// Its size now, in GiB (rounded up).
        current_gib: u64,
        /// The spec's size.
        desired_gib: u64,
    },
    /// A new volume needs a storage and none is known.
    #[error("{what} needs a storage: give the disk a storage in the spec")]
    NoStorage {
        /// What needs it (`disk scsi1`, `the EFI disk`).
        what: String,
    },
    /// A NIC draws from a pool but the command carries no address for it.
    #[error("net{nic} draws from pool '{pool}' but no address was allocated for it")]
    MissingAddress {
        /// NIC index.
        nic: u8,
        /// Pool name.
        pool: String,
    },
    /// A disk slot the spec wants holds something else.
    #[error("slot {slot} holds {holds}; choose another slot")]
    SlotTaken {
        /// The slot.
        slot: String,
        /// What is there.
        holds: String,
    },
}

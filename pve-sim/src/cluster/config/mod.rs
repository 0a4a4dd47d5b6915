//! A VM's config file: what PVE knows about its keys, its text and digest, the API's reads
//! and updates of it, and the edits made behind the API (locks left behind, configs moved).

pub(super) mod disks;
pub(super) mod keys;
pub(super) mod lock;
pub(super) mod parse;
pub(super) mod privileges;
pub(super) mod read;
pub(super) mod relocate;
pub(super) mod text;
pub(super) mod update;

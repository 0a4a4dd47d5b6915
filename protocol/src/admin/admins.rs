//! Admin requests about operator identities: `pvefleet admin ls|add|revoke`. An admin
//! certificate is issued by the cluster for a key the operator's CLI generated (only the CSR
//! travels), recorded in the fleet state, revocable by id, and renewable only up to the
//! record's `renew_until` (docs/design/trust.md).
//!
//! These requests exist from encoding v2: a cluster still at v1 (a member not yet upgraded)
//! answers `Unavailable` until every member runs a release that reads v2.

use serde::{Deserialize, Serialize};

use super::ReadMode;
use crate::fleet::AdminRecord;
use crate::identity::NodeId;
use crate::rpc::Rpc;

/// `pvefleet admin ls`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdminList {
    /// Read freshness.
    pub read: ReadMode,
}

/// Every admin identity the fleet knows, by id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdminListReply {
    /// The records, by id.
    pub admins: Vec<AdminRecord>,
}

impl Rpc for AdminList {
    const METHOD: &'static str = "admin.admin_list";
    type Response = AdminListReply;
}

/// `pvefleet admin add NAME`: a new admin identity and its first certificate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdminAdd {
    /// Who it is for.
    pub name: String,
    /// PEM of a certificate signing request made with the new admin's key.
    pub csr_pem: String,
    /// Lifetime of the certificate in seconds; absent = the cluster's default (30 days).
    pub ttl_secs: Option<u64>,
}

/// The new identity and its certificate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdminAddReply {
    /// The record as stored.
    pub record: AdminRecord,
    /// The certificate (PEM) for the CSR's key, naming `record.id`.
    pub cert_pem: String,
}

impl Rpc for AdminAdd {
    const METHOD: &'static str = "admin.admin_add";
    type Response = AdminAddReply;
}

/// `pvefleet admin revoke ID`: the id's certificates are refused from now on, everywhere.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdminRevoke {
    /// The admin id.
    pub id: NodeId,
}

impl Rpc for AdminRevoke {
    const METHOD: &'static str = "admin.admin_revoke";
    type Response = super::Done;
}

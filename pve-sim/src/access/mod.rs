//! Access control as pve-access-control models it, reduced to what an agent needs to mint a
//! least-privilege token on another cluster: users, roles (PVE's built-in ones and custom
//! ones), ACL entries and API tokens, and the permission evaluation every API method's check
//! goes through.
//!
//! ```text
//!  SimConfig.tokens ─▶ Registry (users, tokens, custom roles, ACL) ◀─ /access methods (endpoints)
//!                          │ snapshot
//!  authenticated Caller ──▶ Grants: Full | Audit | Acl ─▶ privileges on a path ─▶ perm checks
//! ```
//!
//! Three kinds of callers (see [`Standing`]): `root@pam` and the configured tokens that are not
//! read-only hold every privilege, configured read-only tokens every `*.Audit` privilege, and
//! users and tokens created through the API what their ACL entries grant, evaluated as
//! `PVE::RPCEnvironment::permissions` does (most specific path wins, `propagate`, `NoAccess`,
//! privilege separation of tokens). Groups, pools and realms other than `pam`/`pve` are not
//! modelled; only `root@pam` logs in with a password.

mod acl;
mod control;
mod endpoints;
mod grants;
pub(crate) mod privileges;
mod registry;

pub(crate) use control::AccessControl;
pub(crate) use endpoints::handle;
pub(crate) use grants::{Grants, Standing};

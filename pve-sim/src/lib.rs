//! A stateful Proxmox VE simulator that speaks the real PVE API.
//!
//! ```text
//!  HTTPS client ──▶ server (TLS, auth, faults) ─┐                   access (users, roles, ACLs, tokens)
//!                                               ├─▶ Sim::handle ─▶ router + permissions + schema ─▶ cluster model
//!  in-process  ──────────────────────────────────┘                                                │        │
//!                                                     tasks (UPIDs, logs, time scale) ◀───────────┘        │
//!  other simulator's server ◀── remote migration (HTTPS, pinned fingerprint, API token) ◀─────────────────┘
//! ```
//!
//! - [`Sim`] is the entry point: build it from a [`SimConfig`], call it in process, or serve it
//!   over HTTPS with [`server::Server`].
//! - Requests are validated against the official schema (`schema/endpoints-9.1.json`, the
//!   fleet's methods, plus `schema/testbed-9.1.json`, the read of one PVE HA resource) with the
//!   exact error texts of PVE's `JSONSchema.pm`; unknown parameters are refused.
//! - The model keeps each VM's raw config text, its SHA1 `digest`, `lock:` lines, snapshots,
//!   pending changes and run state, and runs operations as tasks with UPIDs of the owning node.
//! - [`faults::Faults`] injects latency, 5xx answers, dropped responses, failing tasks, dead
//!   nodes and mute guest agents.
//! - Host failures for HA recovery: [`Sim::power_node`] powers a node off, on or through a
//!   reset ([`node_power`]: its VMs die, it stops answering while off, it boots with a new
//!   boot time); [`Sim::move_vm_config`] moves a stopped VM's config to another node as
//!   pve-ha-manager does for a fenced node; [`Sim::set_ha_resources`] puts guests under PVE's
//!   own HA manager ([`ha`], read back by `GET /cluster/ha/resources`); [`Sim::set_vm_lock`]
//!   leaves the `lock:` a backup or migration cut short by a dead node leaves, and
//!   [`Sim::clear_vm_lock`] removes it from a (possibly powered-off) node's directory as root
//!   does in `/etc/pve`.
//! - Over HTTPS the same controls live under `/_sim/...` (see the `server` module's control
//!   endpoints): `faults`, `vm/{vmid}/power`, `vm/{vmid}/lock`, `nodes/{node}/power`,
//!   `pmxcfs/move-config`, `pmxcfs/clear-lock`, `ha/resources`, `snippets/...`.
//! - Access control as PVE has it for least-privilege API tokens: users, built-in and custom
//!   roles, ACLs and tokens created through `/access/...`, every method's permission check
//!   evaluated for them as `PVE::RPCEnvironment` does; `root@pam` and the configured tokens
//!   keep their full (or, `read_only`, audit) privileges.
//! - Remote migration between two simulators (two PVE clusters), as Proxmox Datacenter Manager
//!   drives it: `POST .../remote_migrate` on the source talks HTTPS to the target with the API
//!   token of `target-endpoint`, pinned to the target's certificate fingerprint (`GET
//!   /nodes/{node}/certificates/info`); the target's `mtunnel` opens the tunnel whose commands
//!   (one HTTPS request each to `/_sim/mtunnel/{node}/{vmid}`, PVE uses a websocket) receive
//!   the VM. [`Sim::set_remote_timeout`] bounds each of those requests.
//!
//! The simulator builds its JSON on its own, independently of the `pve` client's types, so a
//! decoding bug in the client fails a test instead of being mirrored.

mod access;
pub mod api;
mod auth;
mod certificate;
pub mod client_backend;
mod cluster;
pub mod config;
pub mod error;
pub mod faults;
pub mod ha;
pub mod node_power;
mod param_value;
pub mod route;
pub mod schema;
pub mod server;
mod sim;
mod uuid;

pub use api::{ApiError, Caller, Params, Reply};
pub use client_backend::SimBackend;
pub use config::SimConfig;
pub use error::SimError;
pub use route::{HttpMethod, Route};
pub use sim::{RawReply, Sim};

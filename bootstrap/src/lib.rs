//! Bootstrapping trust in a pvefleet cluster: the cluster CA, node keys and certificates, join
//! tokens, the node directory on disk, and the pure parts of `init` and joining.
//!
//! ```text
//!  pvefleet init ──▶ ClusterCa::create ──▶ node + admin certificates ──▶ NodeDir (0600 keys)
//!  pvefleet token create ──▶ token_terms (1 use, 1 h by default) ──▶ TokenRecord (replicated,
//!                            hashed) + JoinToken text (printed once)
//!  joining node: read_join_token (file, stdin or environment; never argv) ──▶ JoinToken::parse ─ pins CA sha256 ─▶ JoinRequest{token, CSR} ──▶ coordinator
//!  coordinator: token_record::verify(record, token, our CA, now) ──▶ ClusterCa::issue(CSR, role, id)
//!  pvefleet CLI, lab, tests ──▶ CliConfig (pvefleet.toml: CA, admin certificate, members)
//! ```
//!
//! Everything here is synchronous and, apart from key generation and the file writes in
//! [`paths`], [`init`](mod@init) and [`join`], free of effects: time comes in as unix seconds.

pub mod ca;
pub mod cert;
pub mod cli_config;
pub mod cluster_config;
mod csr_key;
pub mod error;
pub mod init;
pub mod join;
pub mod key;
pub mod names;
pub mod paths;
pub mod token;
pub mod token_input;
pub mod token_policy;
pub mod token_record;

pub use ca::ClusterCa;
pub use cert::{
    CertIdentity, cert_identity, certificate_not_after, certificate_sha256, needs_renewal,
};
pub use cli_config::{CONFIG_ENV, CONFIG_FILE_NAME, CliConfig, ConfigError, CoordinatorAddr};
pub use cluster_config::{ClusterConfig, MemberAddr};
pub use error::BootstrapError;
pub use init::{InitOutcome, init};
pub use join::{JoinError, JoinedNode, PendingJoin, check_renewed, prepare_join};
pub use key::NodeKey;
pub use names::{CertNames, cert_names};
pub use paths::NodeDir;
pub use token::{JoinToken, TokenError};
pub use token_input::{JOIN_TOKEN_ENV, TokenInputError, check_join_arguments, read_join_token};
pub use token_policy::{
    DEFAULT_TOKEN_TTL, DEFAULT_TOKEN_USES, TokenTerms, TokenTermsError, token_terms,
};
pub use token_record::{TokenRecord, verify};

//! `pvefleet admin ls|add|revoke`: operator identities. `add` makes the new admin's key here
//! and sends only a signing request, so the cluster never holds an operator's key; it writes
//! the key, the certificate, the CA and a configuration into one directory, to be handed to
//! that operator as a whole. `revoke` refuses to revoke the identity the configuration in use
//! presents unless told to: the operator would lock themselves out.

use std::path::{Path, PathBuf};

use bootstrap::cli_config::{CONFIG_FILE_NAME, CliConfig, ConfigError};
use bootstrap::paths::{read_public, write_public, write_secret};
use bootstrap::{BootstrapError, JoinError, NodeDir, NodeKey, cert_identity};
use protocol::admin::{AdminAdd, AdminAddReply, AdminList, AdminRevoke};
use protocol::fleet::validate_admin_name;
use protocol::{NodeId, Role};

use super::Session;
use super::token::whole_seconds;
use crate::args::{AdminAddArgs, AdminCommand};
use crate::exit::CliError;
use crate::output::{AdminAdded, AdminRevoked};

pub(crate) async fn run(session: &mut Session<'_>, command: &AdminCommand) -> Result<(), CliError> {
    match command {
        AdminCommand::Ls => {
            let reply = session
                .client()?
                .call(&AdminList {
                    read: session.read(),
                })
                .await?;
            session.print(&reply)
        }
        AdminCommand::Add(args) => add(session, args).await,
        AdminCommand::Revoke {
            id,
            yes_revoke_myself,
        } => {
            if !yes_revoke_myself {
                refuse_own_identity(session, *id)?;
            }
            session.client()?.call(&AdminRevoke { id: *id }).await?;
            session.print(&AdminRevoked { revoked: *id })
        }
    }
}

async fn add(session: &mut Session<'_>, args: &AdminAddArgs) -> Result<(), CliError> {
    validate_admin_name(&args.name).map_err(CliError::Usage)?;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| default_out_dir(&args.name));
    let dir = NodeDir::new(std::path::absolute(&out).unwrap_or(out));
    refuse_non_empty(dir.root())?;
    let current = session.config()?.config.clone();
    // Everything that can fail here does so before the cluster records an identity.
    let ca_pem = read_public(&current.ca).map_err(CliError::AdminPrepare)?;
    let key = NodeKey::generate().map_err(CliError::AdminPrepare)?;
    let csr_pem = key.csr_pem().map_err(CliError::AdminPrepare)?;
    // Made before the call, so an unusable place (a directory others may write to, no
    // permission) costs no identity; removed again if the call fails and it was made here.
    let made_here = !dir.root().exists();
    dir.create().map_err(CliError::AdminPrepare)?;

    let request = AdminAdd {
        name: args.name.clone(),
        csr_pem,
        ttl_secs: args.ttl.map(whole_seconds),
    };
    let reply = match call(session, &request).await {
        Ok(reply) => reply,
        Err(e) => {
            if made_here {
                // Still empty: `remove_dir` removes nothing else.
                let _ = std::fs::remove_dir(dir.root());
            }
            return Err(e);
        }
    };
    let id = reply.record.id;
    let added =
        save(&dir, &key, &ca_pem, &reply, &current).map_err(|e| CliError::AdminNotSaved {
            id,
            dir: dir.root().to_path_buf(),
            reason: e.to_string(),
        })?;
    session.print(&added)
}

async fn call(session: &mut Session<'_>, request: &AdminAdd) -> Result<AdminAddReply, CliError> {
    Ok(session.client()?.call(request).await?)
}

/// `./pvefleet-admin-NAME`, the name reduced to letters, digits, `.`, `_` and `-` (any run of
/// other characters becomes one `-`), so it is one plain path component whatever was typed.
pub fn default_out_dir(name: &str) -> PathBuf {
    let mut safe = String::new();
    for c in name.chars() {
        if c.is_alphanumeric() || matches!(c, '.' | '_' | '-') {
            safe.push(c);
        } else if !safe.ends_with('-') {
            safe.push('-');
        }
    }
    // Leading dots would hide the directory (or make it `..`); edge dashes are noise.
    let safe = safe.trim_matches(|c| c == '-' || c == '.');
    let safe = if safe.is_empty() { "admin" } else { safe };
    PathBuf::from(format!("pvefleet-admin-{safe}"))
}

/// Refuses an existing directory with anything in it: its files may be another admin's, and
/// mixing two admins' keys and certificates in one place is how they get handed to the wrong
/// person.
fn refuse_non_empty(dir: &Path) -> Result<(), CliError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => {
            return Err(CliError::Usage(format!(
                "cannot use {} for the new admin's files: {e}; pass --out DIR with a new or empty \
                 directory",
                dir.display()
            )));
        }
    };
    if entries.into_iter().next().is_some() {
        return Err(CliError::Usage(format!(
            "{} exists and is not empty: the new admin's files go into a directory of their own; \
             pass --out DIR with a new or empty directory",
            dir.display()
        )));
    }
    Ok(())
}

/// Why the cluster's answer could not be turned into the admin's files.
#[derive(Debug, thiserror::Error)]
enum SaveError {
    /// The certificate is not for the key whose request was sent, or names another identity.
    #[error("its certificate was refused: {0}")]
    Check(#[from] JoinError),
    /// A file could not be written.
    #[error("its files could not be written: {0}")]
    Write(#[from] BootstrapError),
    /// The configuration could not be written.
    #[error("its configuration could not be written: {0}")]
    Config(#[from] ConfigError),
}

/// Checks the certificate the cluster issued and writes the admin's directory: the key first
/// (a certificate is useless without it), the configuration last (it names the other files).
fn save(
    dir: &NodeDir,
    key: &NodeKey,
    ca_pem: &str,
    reply: &AdminAddReply,
    current: &CliConfig,
) -> Result<AdminAdded, SaveError> {
    if !key.matches_certificate(&reply.cert_pem)? {
        return Err(JoinError::WrongKey.into());
    }
    let issued = cert_identity(&reply.cert_pem)?;
    if (issued.role, issued.node_id) != (Role::Admin, reply.record.id) {
        return Err(JoinError::WrongIdentity {
            expected: format!("{}-{}", Role::Admin, reply.record.id),
            got: format!("{}-{}", issued.role, issued.node_id),
        }
        .into());
    }
    write_secret(&dir.admin_key(), key.private_key_pem())?;
    write_public(&dir.admin_cert(), &reply.cert_pem)?;
    write_public(&dir.ca_cert(), ca_pem)?;
    let config = dir.root().join(CONFIG_FILE_NAME);
    CliConfig::for_node_dir(dir.root(), current.coordinators.clone()).write(&config)?;
    Ok(AdminAdded {
        record: reply.record.clone(),
        dir: dir.root().to_path_buf(),
        key: dir.admin_key(),
        cert: dir.admin_cert(),
        ca: dir.ca_cert(),
        config,
    })
}

/// Refuses to revoke `id` when it is the admin whose certificate the configuration presents.
/// A configuration holding a coordinator's certificate is no admin id, whatever its number.
fn refuse_own_identity(session: &mut Session<'_>, id: NodeId) -> Result<(), CliError> {
    let loaded = session.config()?;
    let material = |e: BootstrapError| CliError::Config(ConfigError::Material(e));
    let own =
        cert_identity(&read_public(&loaded.config.cert).map_err(material)?).map_err(material)?;
    if own.role == Role::Admin && own.node_id == id {
        return Err(CliError::RevokeSelf {
            id,
            config: loaded.path.clone(),
        });
    }
    Ok(())
}

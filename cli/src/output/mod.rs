//! What `pvefleet` prints: every result as a table for people or, with `--output json`, as one
//! JSON document for scripts. Rendering is pure: the current time and the host names are
//! passed in a [`Context`], so the same values always print the same text.
//!
//! ```text
//!  reply (protocol type or a report below) ──Render::table(ctx)──▶ aligned text
//!                                           └─serde_json──────────▶ pretty JSON + newline
//! ```
//!
//! The JSON of a reply is the protocol type itself (field names as in `protocol::admin`), so
//! scripts see the same names as the Rust API; times are Unix milliseconds there.

mod admins;
mod cluster;
mod doctor;
mod explain;
pub mod follow;
mod hosts;
pub mod human;
pub mod printable;
pub mod progress;
mod reports;
mod resources;
mod settings;
pub mod table;
mod tokens;
mod vips;
mod vm;
mod vm_ops;

use std::collections::BTreeMap;

use protocol::NodeId;
use protocol::fleet::UnixMillis;
use protocol::spec::HaDefaults;
use serde::Serialize;

pub use admins::{AdminAdded, admin_state};
pub use hosts::HostShown;
pub use reports::{
    AdminRevoked, Applied, ApplyReport, Deleted, IpAllocated, IpReleased, MemberAdded,
    MemberRemoved, TokenRevoked, VmidAllocated,
};
pub use resources::pool_size;
pub use tokens::{EventsPage, token_state};
pub use vips::{VipMoved, VipTable};
pub use vm_ops::SnapshotChanged;

/// How results are printed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum OutputFormat {
    /// Aligned tables and `key: value` blocks, sizes and ages in human units; control characters
    /// in the text are shown escaped (ESC as `\u{1b}`, CR as `\r`, a line break as `\n`).
    #[default]
    Table,
    /// One JSON document on stdout.
    Json,
}

/// What rendering may depend on besides the value itself.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Context {
    /// The current time, for ages.
    pub now: UnixMillis,
    /// Host names by node id, to show hosts by name (missing ones are shown by id).
    pub hosts: BTreeMap<NodeId, String>,
    /// The fleet's HA defaults, to show the limits a VM leaves to them (unknown: shown as
    /// `default`).
    pub ha_defaults: Option<HaDefaults>,
}

impl Context {
    /// A context at `now` without host names.
    pub fn at(now: UnixMillis) -> Context {
        Context {
            now,
            hosts: BTreeMap::new(),
            ha_defaults: None,
        }
    }

    /// The host's name, or `host <id>` when unknown; `-` for none.
    pub fn host(&self, id: Option<NodeId>) -> String {
        match id {
            None => "-".to_string(),
            Some(id) => self
                .hosts
                .get(&id)
                .cloned()
                .unwrap_or_else(|| format!("host {id}")),
        }
    }
}

/// A value `pvefleet` can print.
pub trait Render: Serialize {
    /// The text for people, ending with a newline.
    fn table(&self, ctx: &Context) -> String;
}

/// The value in `format`: its table (control characters escaped, see [`printable`]), or its JSON
/// document (pretty, newline-terminated, exact).
pub fn render<T: Render + ?Sized>(
    value: &T,
    format: OutputFormat,
    ctx: &Context,
) -> Result<String, serde_json::Error> {
    match format {
        // The one gate for table text: whatever a `table` built by hand (reports, notes around
        // tables) cannot put a control character other than its own line breaks on screen.
        OutputFormat::Table => Ok(printable::terminal_text(&value.table(ctx)).into_owned()),
        OutputFormat::Json => json(value),
    }
}

/// The value as pretty JSON followed by a newline.
pub fn json<T: Serialize + ?Sized>(value: &T) -> Result<String, serde_json::Error> {
    let mut text = serde_json::to_string_pretty(value)?;
    text.push('\n');
    Ok(text)
}

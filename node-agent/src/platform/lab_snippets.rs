//! Cloud-init snippets on the lab platform: a simulated node has no storage directory to write
//! into, so the file goes to the simulator's control API (`PUT /_sim/snippets/...`), which
//! stores it where PVE would list it (`<storage>:snippets/<file>`).

use pve::backend::BoxFuture;

use super::lab_control::LabControl;
use crate::ops::{SnippetError, SnippetWriter};

/// Hands snippets to the simulator serving this host's node.
#[derive(Debug, Clone)]
pub struct LabSnippetWriter {
    control: LabControl,
}

impl LabSnippetWriter {
    /// Writes through `control`.
    pub fn new(control: LabControl) -> Self {
        Self { control }
    }
}

impl SnippetWriter for LabSnippetWriter {
    fn write<'a>(
        &'a self,
        _node: &'a str,
        storage: &'a str,
        file: &'a str,
        content: &'a str,
    ) -> BoxFuture<'a, Result<String, SnippetError>> {
        Box::pin(async move {
            self.control
                .put_snippet(storage, file, content)
                .await
                .map_err(|e| SnippetError::Simulator(e.to_string()))
        })
    }

    fn remove<'a>(
        &'a self,
        _node: &'a str,
        _storage: &'a str,
        _file: &'a str,
    ) -> BoxFuture<'a, Result<bool, SnippetError>> {
        Box::pin(async {
            Err(SnippetError::Unsupported(
                "the simulator offers no way to remove a snippet file",
            ))
        })
    }
}

//! API paths of the typed calls, built only from validated node names and VMIDs so no path
//! segment needs escaping (snapshot names are validated too; UPIDs go through
//! [`crate::request::segment`]).

use crate::error::PveError;
use crate::props::{check_node, check_vmid};

/// `/nodes/{node}{tail}`.
pub(crate) fn node_path(node: &str, tail: &str) -> Result<String, PveError> {
    check_node("node", node)?;
    Ok(format!("/nodes/{node}{tail}"))
}

/// `/nodes/{node}/qemu/{vmid}{tail}`.
pub(crate) fn vm_path(node: &str, vmid: u32, tail: &str) -> Result<String, PveError> {
    check_node("node", node)?;
    check_vmid("vmid", vmid)?;
    Ok(format!("/nodes/{node}/qemu/{vmid}{tail}"))
}

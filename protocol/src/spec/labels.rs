//! [`Labels`]: the key/value labels a host carries and a VM's placement may require. Hosts,
//! sessions and specs all name them, so they are their own file below the spec types.

use std::collections::BTreeMap;

/// Labels a host carries and a VM may require (`zone = "a"`).
pub type Labels = BTreeMap<String, String>;

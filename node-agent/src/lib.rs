//! `pvefleet-agent`, the node agent on every PVE host (being built: issue 4). So far: the
//! executor's on-disk journal that makes every coordinator command run at most once.

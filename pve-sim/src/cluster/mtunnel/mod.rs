//! The receiving end of a remote migration: the `mtunnel` call and its `qmtunnel` task, the
//! tunnel tickets, the open tunnel and the commands it takes.

pub(super) mod commands;
pub(super) mod endpoint;
mod ticket;
pub(super) mod tunnel;

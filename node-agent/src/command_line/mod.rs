//! The daemon's command line, from flags to effects: [`args`] is what clap reads, [`job`]
//! reads what a command works with (its configuration file, a join token) in one tested
//! function, [`commands`] carries it out, [`error`] says why it failed and with which exit code. The binary is only the edge: parse, prepare, start
//! logging and the runtime, dispatch, exit.

pub mod args;
pub mod commands;
pub mod error;
pub mod job;

//! The daemon's command line, from flags to effects: [`args`] is what clap reads,
//! [`settings`] resolves `run`'s settings (flag > configuration file > recorded > default) in
//! one tested function, [`commands`] carries a command out. The binary is only the edge:
//! parse, read the file, start logging and the runtime, dispatch, exit.

pub mod args;
pub mod commands;
pub mod settings;

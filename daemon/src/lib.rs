//! What pvefleet's programs share at their edge, written once: systemd's readiness and
//! watchdog notification ([`notify`]), the shutdown signals ([`signal`]), the log setup
//! ([`logging`]) and the man pages and shell completions generated from each binary's clap
//! definition ([`generate`]). `pvefleet-coordinator` and `pvefleet-agent` use all of it,
//! `pvefleet` the log setup and generation. It depends on no workspace member: what a program
//! reports to systemd is its own, given through [`notify::Health`].

pub mod generate;
pub mod logging;
pub mod notify;
pub mod signal;

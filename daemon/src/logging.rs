//! Log setup of every pvefleet program: human-readable lines on stderr (journald keeps a
//! daemon's stderr), filtered by RUST_LOG if set, else by the program's configured filter;
//! colours only when stderr is a terminal, so journald and log files get plain text.

use tracing_subscriber::EnvFilter;

/// Installs the global subscriber: RUST_LOG wins over `default_filter` (e.g. `info`, or the
/// `log` field of a configuration file). A second call in one process changes nothing.
pub fn init(default_filter: &str) {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default_filter));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}

/// Checks a configured log filter before the program starts, so a bad `log` field is reported
/// against its file instead of silently falling back.
///
/// # Errors
/// Why `filter` is not a filter (the parser's words).
pub fn check_filter(filter: &str) -> Result<(), String> {
    EnvFilter::try_new(filter)
        .map(drop)
        .map_err(|e| e.to_string())
}

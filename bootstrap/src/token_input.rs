//! How a joining node receives its join token: from a file (`--token-file PATH`), from standard
//! input (`--token-file -`) or from the environment ([`JOIN_TOKEN_ENV`]); never from its
//! arguments, which every local user can read (`ps`, `/proc/PID/cmdline`). A process's
//! environment and standard input are visible only to its own user and root.
//!
//! ```text
//!  --token-file PATH ─▶ open once ─▶ fstat: regular file, mode & 077 == 0 ─▶ read (bounded) ─┐
//!  --token-file -    ─▶ first line of standard input (bounded) ───────────────────────────────┤─▶ trimmed text
//!  PVEFLEET_JOIN_TOKEN (only without --token-file) ───────────────────────────────────────────┘
//!  join TOKEN ADDR (the old form) ─▶ refused by check_join_arguments, the token never echoed
//! ```
//!
//! A token file that group or others can read is refused, as a private key is
//! ([`paths::read_secret`](crate::paths::read_secret)): the token may have leaked, and a join
//! with it would hand the cluster's trust to whoever read it. No message here ever contains the
//! token or any part of it; parsing (and its errors, which never show the secret) is
//! [`JoinToken::parse`](crate::token::JoinToken::parse)'s.

use std::ffi::OsString;
use std::fs::File;
use std::io::{self, BufRead, Read};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The environment variable a join token may be given in.
pub const JOIN_TOKEN_ENV: &str = "PVEFLEET_JOIN_TOKEN";
/// The `--token-file` value that means standard input.
pub const STDIN_PATH: &str = "-";
/// The most bytes read from any source: a token is about 110 characters, at most ~205.
const MAX_TOKEN_BYTES: u64 = 4096;

/// Why no join token could be read. No variant carries the token or a part of it.
#[derive(Debug, thiserror::Error)]
pub enum TokenInputError {
    /// The old form `join TOKEN ADDR`: the token was on the command line.
    #[error(
        "`{command}` no longer takes the join token as an argument: every local user can read \
         a process's arguments (ps, /proc/PID/cmdline). Give only the address as argument and \
         the token in a file (--token-file PATH, mode 0600), on standard input (--token-file -) \
         or in the environment variable {JOIN_TOKEN_ENV}, e.g. `{command} --token-file - ADDR`; \
         if this host is shared, consider the token seen and create a new one (`pvefleet token \
         revoke ID`, `pvefleet token create`)"
    )]
    InArguments {
        /// The command, e.g. `pvefleet-agent join`.
        command: &'static str,
    },
    /// Neither `--token-file` nor the environment variable.
    #[error(
        "no join token given: pass --token-file PATH (a file of mode 0600), --token-file - to \
         read it from standard input, or set {JOIN_TOKEN_ENV}"
    )]
    Missing,
    /// The token file could not be opened or read.
    #[error("cannot {op} the join token file {}: {source}", path.display())]
    Io {
        /// What we were doing ("open", "inspect", "read").
        op: &'static str,
        /// The file.
        path: PathBuf,
        /// The system's reason.
        #[source]
        source: io::Error,
    },
    /// Standard input could not be read.
    #[error("cannot read the join token from standard input: {0}")]
    Stdin(#[source] io::Error),
    /// The token file is a directory, a FIFO, a device...
    #[error(
        "the join token file {} is not a regular file: write the token to a file of mode 0600, \
         or pipe it in with --token-file -",
        path.display()
    )]
    NotRegular {
        /// The path given.
        path: PathBuf,
    },
    /// The token file may be read by group or others.
    #[error(
        "the join token file {} is readable by group or others (mode {mode:04o}); a join token \
         must be private: run `chmod 600 {}`, and if others could read it, revoke the token \
         (`pvefleet token revoke ID`) and create a new one",
        path.display(),
        path.display()
    )]
    Insecure {
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// The source holds no token (empty or only whitespace).
    #[error("{origin} holds no join token: it is empty")]
    Empty {
        /// Where it was read from.
        origin: String,
    },
    /// The source holds more than any token could be.
    #[error(
        "{origin} holds more than {MAX_TOKEN_BYTES} bytes: it is not a join token (a token is \
         one line pvf1.<CA hash>.<id>.<secret>)"
    )]
    TooLong {
        /// Where it was read from.
        origin: String,
    },
    /// The source holds bytes that are not text.
    #[error("{origin} is not text: it is not a join token")]
    NotText {
        /// Where it was read from.
        origin: String,
    },
}

/// Refuses the old form `join TOKEN ADDR`. `addr` is the positional argument taken as the
/// address and `extra` any positional argument after it: the old form has two, and a lone
/// argument shaped like a token (`join TOKEN`) is refused too, so that its text is never
/// echoed by an address error later.
pub fn check_join_arguments(
    command: &'static str,
    addr: &str,
    extra: Option<&str>,
) -> Result<(), TokenInputError> {
    if extra.is_some() || looks_like_token(addr) {
        return Err(TokenInputError::InArguments { command });
    }
    Ok(())
}

/// Whether `word` has a token's shape: `<prefix>.<64 hex digits>.<id>.<secret>`. A host name
/// never has a 64-hex-digit label, so an address is never taken for a token.
pub fn looks_like_token(word: &str) -> bool {
    let parts: Vec<&str> = word.trim().split('.').collect();
    parts.len() >= 4 && parts[1].len() == 64 && parts[1].bytes().all(|b| b.is_ascii_hexdigit())
}

/// Whether `token_file` asks for standard input (so a terminal can be prompted).
pub fn reads_stdin(token_file: Option<&Path>) -> bool {
    token_file.is_some_and(|p| p.as_os_str() == STDIN_PATH)
}

/// What a `join` command does: reads the token from `token_file` (`-`: this process's
/// standard input, with a prompt on stderr when that is a terminal) or else from the
/// environment variable [`JOIN_TOKEN_ENV`] ([`read_join_token`]).
///
/// # Errors
/// As [`read_join_token`].
pub fn read_join_token_of_process(token_file: Option<&Path>) -> Result<String, TokenInputError> {
    use std::io::IsTerminal;
    let stdin = std::io::stdin();
    if reads_stdin(token_file) && stdin.is_terminal() {
        eprint!("join token (paste it, then Enter): ");
    }
    read_join_token(
        token_file,
        std::env::var_os(JOIN_TOKEN_ENV),
        &mut stdin.lock(),
    )
}

/// Reads the join token text, trimmed: from `token_file` (`-`: the first line of `stdin`) if
/// given, else from `env` (the value of [`JOIN_TOKEN_ENV`]). The text is not parsed here.
pub fn read_join_token(
    token_file: Option<&Path>,
    env: Option<OsString>,
    stdin: &mut dyn BufRead,
) -> Result<String, TokenInputError> {
    match (token_file, env) {
        (Some(path), _) if reads_stdin(Some(path)) => read_stdin(stdin),
        (Some(path), _) => read_file(path),
        (None, Some(value)) => {
            let origin = || format!("the environment variable {JOIN_TOKEN_ENV}");
            let text = value
                .into_string()
                .map_err(|_| TokenInputError::NotText { origin: origin() })?;
            if text.len() as u64 > MAX_TOKEN_BYTES {
                return Err(TokenInputError::TooLong { origin: origin() });
            }
            non_empty(&text, origin)
        }
        (None, None) => Err(TokenInputError::Missing),
    }
}

fn read_stdin(stdin: &mut dyn BufRead) -> Result<String, TokenInputError> {
    let origin = || "standard input".to_string();
    let mut line = Vec::new();
    stdin
        .take(MAX_TOKEN_BYTES + 1)
        .read_until(b'\n', &mut line)
        .map_err(TokenInputError::Stdin)?;
    if line.len() as u64 > MAX_TOKEN_BYTES {
        return Err(TokenInputError::TooLong { origin: origin() });
    }
    let text =
        String::from_utf8(line).map_err(|_| TokenInputError::NotText { origin: origin() })?;
    non_empty(&text, origin)
}

/// Opens `path` once and checks the opened file, not the path, so it cannot be swapped between
/// the check and the read.
fn read_file(path: &Path) -> Result<String, TokenInputError> {
    let io_err = |op| {
        move |source| TokenInputError::Io {
            op,
            path: path.to_path_buf(),
            source,
        }
    };
    let file = File::open(path).map_err(io_err("open"))?;
    let meta = file.metadata().map_err(io_err("inspect"))?;
    if !meta.is_file() {
        return Err(TokenInputError::NotRegular {
            path: path.to_path_buf(),
        });
    }
    let mode = meta.mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(TokenInputError::Insecure {
            path: path.to_path_buf(),
            mode,
        });
    }
    let origin = || format!("the join token file {}", path.display());
    let mut bytes = Vec::new();
    file.take(MAX_TOKEN_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(io_err("read"))?;
    if bytes.len() as u64 > MAX_TOKEN_BYTES {
        return Err(TokenInputError::TooLong { origin: origin() });
    }
    let text =
        String::from_utf8(bytes).map_err(|_| TokenInputError::NotText { origin: origin() })?;
    non_empty(&text, origin)
}

fn non_empty(text: &str, origin: impl FnOnce() -> String) -> Result<String, TokenInputError> {
    match text.trim() {
        "" => Err(TokenInputError::Empty { origin: origin() }),
        token => Ok(token.to_string()),
    }
}

#[cfg(test)]
#[path = "token_input_tests.rs"]
mod tests;

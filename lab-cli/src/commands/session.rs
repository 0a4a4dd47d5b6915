//! [`Session`]: what a running lab command shares with the dispatcher — how to print
//! (`--output`) and where (standard output, or a test's buffer).

use std::io::Write;

use cli::output::OutputFormat;

use crate::error::LabCliError;

/// The output of a running command.
pub(crate) struct Session<'a> {
    /// `--output`.
    pub(crate) format: OutputFormat,
    /// Where results go (narration goes to standard error).
    pub(crate) out: &'a mut (dyn Write + Send),
}

impl Session<'_> {
    /// Writes `text` and flushes, so a reader of a pipe sees it at once.
    pub(crate) fn write(&mut self, text: &str) -> Result<(), LabCliError> {
        self.out
            .write_all(text.as_bytes())
            .and_then(|()| self.out.flush())
            .map_err(|e| LabCliError::Output(e.to_string()))
    }

    /// With `--output json`.
    pub(crate) fn json(&self) -> bool {
        self.format == OutputFormat::Json
    }
}

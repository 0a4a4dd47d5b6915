//! Reading a scenario: its text as TOML into the file's entries ([`super::file`]), then
//! checked as a whole (`validate`). Pure but for [`load`]'s one file read.

use std::path::Path;

use super::error::ScenarioError;
use super::file::RawFile;
use super::model::Scenario;
use super::validate;

/// Reads and checks a scenario from its text.
///
/// # Errors
/// [`ScenarioError::Toml`] for text that is not TOML or an unknown top-level key;
/// [`ScenarioError::Invalid`] naming the entry and key otherwise.
pub fn parse(text: &str) -> Result<Scenario, ScenarioError> {
    let raw: RawFile = toml::from_str(text).map_err(|e| ScenarioError::Toml(e.to_string()))?;
    validate::scenario(raw)
}

/// Reads and checks the scenario file at `path`.
///
/// # Errors
/// [`ScenarioError::Read`], or what [`parse`] refuses.
pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
    let text = std::fs::read_to_string(path).map_err(|source| ScenarioError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    parse(&text)
}

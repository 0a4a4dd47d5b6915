//! A typed view of the [`Journal`]: commands are fingerprinted by the SHA-256 of their bincode
//! encoding and results are stored with bincode, so callers never handle raw bytes.

use std::marker::PhantomData;

use serde::Serialize;
use serde::de::DeserializeOwned;
use sha2::{Digest, Sha256};

use crate::error::JournalError;
use crate::journal::{Begin, Journal};

/// A [`Journal`] for commands of type `C` with results of type `R`. Neither type may use
/// serde features bincode cannot encode (`flatten`, `untagged`, `serde_json::Value`).
#[derive(Debug)]
pub struct TypedJournal<C, R> {
    journal: Journal,
    types: PhantomData<fn(&C) -> R>,
}

impl<C, R> Clone for TypedJournal<C, R> {
    fn clone(&self) -> Self {
        TypedJournal {
            journal: self.journal.clone(),
            types: PhantomData,
        }
    }
}

impl<C: Serialize, R: Serialize + DeserializeOwned> TypedJournal<C, R> {
    /// Wraps a journal; all commands recorded through it must be of type `C`.
    pub fn new(journal: Journal) -> Self {
        TypedJournal {
            journal,
            types: PhantomData,
        }
    }

    /// The untyped journal underneath (for [`Journal::abandon`], [`Journal::prune`] and such).
    pub fn journal(&self) -> &Journal {
        &self.journal
    }

    /// SHA-256 of the command's bincode encoding: equal commands give equal fingerprints.
    pub fn fingerprint(command: &C) -> Result<[u8; 32], JournalError> {
        let bytes = bincode::serde::encode_to_vec(command, bincode::config::standard())?;
        Ok(Sha256::digest(&bytes).into())
    }

    /// [`Journal::begin`] for a typed command; a stored result is decoded to `R`.
    pub async fn begin(&self, id: &str, command: &C) -> Result<Begin<R>, JournalError> {
        let fingerprint = Self::fingerprint(command)?;
        Ok(match self.journal.begin(id, &fingerprint).await? {
            Begin::Run => Begin::Run,
            Begin::Done(bytes) => Begin::Done(decode(&bytes)?),
            Begin::InProgress => Begin::InProgress,
            Begin::InDoubt => Begin::InDoubt,
        })
    }

    /// [`Journal::finish`] with a typed result.
    pub async fn finish(&self, id: &str, result: &R) -> Result<(), JournalError> {
        self.journal.finish(id, &encode(result)?).await
    }

    /// [`Journal::resolve_in_doubt`] with a typed result.
    pub async fn resolve_in_doubt(&self, id: &str, result: &R) -> Result<(), JournalError> {
        self.journal.resolve_in_doubt(id, &encode(result)?).await
    }
}

fn encode<R: Serialize>(result: &R) -> Result<Vec<u8>, JournalError> {
    Ok(bincode::serde::encode_to_vec(
        result,
        bincode::config::standard(),
    )?)
}

fn decode<R: DeserializeOwned>(bytes: &[u8]) -> Result<R, JournalError> {
    let (value, read) = bincode::serde::decode_from_slice(bytes, bincode::config::standard())?;
    match bytes.len().saturating_sub(read) {
        0 => Ok(value),
        trailing => Err(JournalError::TrailingBytes(trailing)),
    }
}

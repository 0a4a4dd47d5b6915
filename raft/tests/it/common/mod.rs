//! Test support shared by the raft crate's integration tests: a trivial replicated machine.

#![allow(dead_code, unreachable_pub)]

pub mod certs;

use raft::Machine;

/// Commands starting with this prefix followed by a big-endian `u32` grow the state by that many
/// bytes: a large snapshot from small log entries.
pub const PAD: &[u8] = b"pad:";

/// An append-only list of (index, command), plus padding: easy to compare across members, and a
/// restore that merged instead of replacing would show up as extra items.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ListMachine {
    pub items: Vec<(u64, Vec<u8>)>,
    pub padding: Vec<u8>,
}

/// A command that adds `bytes` bytes of padding.
pub fn pad_command(bytes: u32) -> Vec<u8> {
    let mut command = PAD.to_vec();
    command.extend_from_slice(&bytes.to_be_bytes());
    command
}

/// A command the test machine cannot read (as a newer build's command would be).
pub const UNREADABLE: &[u8] = b"unreadable";

impl Machine for ListMachine {
    fn apply(&mut self, index: u64, command: &[u8]) -> Result<Vec<u8>, String> {
        if command == UNREADABLE {
            return Err(format!("entry {index} is not a command this machine reads"));
        }
        if let Some(len) = command.strip_prefix(PAD) {
            let len = u32::from_be_bytes(len.try_into().unwrap());
            let start = self.padding.len();
            self.padding
                .extend((0..len as usize).map(|i| ((start + i) as u64 ^ index) as u8));
        }
        self.items.push((index, command.to_vec()));
        Ok((self.items.len() as u64).to_be_bytes().to_vec())
    }

    fn snapshot(&self) -> Result<Vec<u8>, String> {
        let mut out = Vec::new();
        out.extend_from_slice(&(self.items.len() as u64).to_be_bytes());
        for (index, command) in &self.items {
            out.extend_from_slice(&index.to_be_bytes());
            out.extend_from_slice(&(command.len() as u64).to_be_bytes());
            out.extend_from_slice(command);
        }
        out.extend_from_slice(&self.padding);
        Ok(out)
    }

    fn restore(&mut self, snapshot: &[u8]) -> Result<(), String> {
        let mut rest = snapshot;
        let mut take = |n: usize| -> Result<&[u8], String> {
            if rest.len() < n {
                return Err("truncated snapshot".to_owned());
            }
            let (head, tail) = rest.split_at(n);
            rest = tail;
            Ok(head)
        };
        let read_u64 = |b: &[u8]| u64::from_be_bytes(b.try_into().unwrap());
        let count = read_u64(take(8)?);
        let mut items = Vec::new();
        for _ in 0..count {
            let index = read_u64(take(8)?);
            let len = read_u64(take(8)?) as usize;
            items.push((index, take(len)?.to_vec()));
        }
        self.items = items;
        self.padding = rest.to_vec();
        Ok(())
    }
}

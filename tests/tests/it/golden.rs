//! The golden encodings (`pvefleet_tests::golden`, files in `tests/golden/vN/`): every encoding
//! version's checked-in bytes are read by this build and written back identically at their
//! version, this build's own version matches its checked-in bytes, and every method and every
//! replicated command has a sample. `make golden` writes the files of a new version (never
//! over an existing one).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use fleet::state::{CodecError, decode_command, encode_command};
use protocol::version::{CURRENT, OLDEST, Version};
use pvefleet_tests::golden::{Golden, commands, sampled_methods, samples};

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("golden")
}

fn version_dir(v: Version) -> PathBuf {
    golden_dir().join(format!("v{}", v.0))
}

fn to_hex(bytes: &[u8]) -> String {
    let mut out = String::new();
    for line in bytes.chunks(32) {
        for b in line {
            write!(out, "{b:02x}").unwrap();
        }
        out.push('\n');
    }
    out
}

fn from_hex(text: &str, path: &Path) -> Vec<u8> {
    let digits: Vec<u8> = text.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    assert!(
        digits.len().is_multiple_of(2),
        "{}: odd number of hex digits",
        path.display()
    );
    digits
        .chunks(2)
        .map(|pair| {
            let pair = std::str::from_utf8(pair).unwrap();
            u8::from_str_radix(pair, 16)
                .unwrap_or_else(|_| panic!("{}: {pair:?} is not hex", path.display()))
        })
        .collect()
}

/// The checked-in files of each version directory, by sample name.
fn checked_in() -> BTreeMap<Version, BTreeMap<String, Vec<u8>>> {
    let mut out = BTreeMap::new();
    for dir in std::fs::read_dir(golden_dir()).expect("tests/golden exists") {
        let dir = dir.unwrap().path();
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let version = name
            .strip_prefix('v')
            .and_then(|n| n.parse().ok())
            .map(Version)
            .unwrap_or_else(|| panic!("{}: expected a directory vN", dir.display()));
        let mut files = BTreeMap::new();
        for file in std::fs::read_dir(&dir).unwrap() {
            let path = file.unwrap().path();
            let sample = path
                .file_name()
                .unwrap()
                .to_string_lossy()
                .strip_suffix(".hex")
                .unwrap_or_else(|| panic!("{}: expected NAME.hex", path.display()))
                .to_string();
            let text = std::fs::read_to_string(&path).unwrap();
            files.insert(sample, from_hex(&text, &path));
        }
        out.insert(version, files);
    }
    out
}

#[test]
fn every_checked_in_encoding_of_every_supported_version_reads_and_writes_back_identically() {
    let samples: BTreeMap<String, Golden> =
        samples().into_iter().map(|g| (g.name.clone(), g)).collect();
    let all = checked_in();
    assert!(
        all.contains_key(&OLDEST),
        "no golden encodings of {OLDEST}, the oldest version this build claims to read"
    );
    let mut failures = Vec::new();
    for (version, files) in &all {
        assert!(
            version.is_supported(),
            "tests/golden/v{} is a version this build no longer reads ({OLDEST}..={CURRENT}): \
             remove the directory in the same change that moves OLDEST past it",
            version.0
        );
        for (name, bytes) in files {
            let Some(sample) = samples.get(name) else {
                failures.push(format!(
                    "{version} {name}: this build has no such message or command any more \
                     (removing one breaks older peers; keep it, or move OLDEST past {version})"
                ));
                continue;
            };
            match (sample.reencode)(*version, bytes) {
                Ok(again) if &again == bytes => {}
                Ok(_) => failures.push(format!(
                    "{version} {name}: read, but written back differently at {version}"
                )),
                Err(e) => failures.push(format!("{version} {name}: not readable: {e}")),
            }
            // What this build writes for a reader of `version` is what that release wrote.
            if let Some(Ok(written)) = (sample.encode)(*version)
                && &written != bytes
            {
                failures.push(format!(
                    "{version} {name}: this build writes the sample differently at {version}: \
                     a layout changed without a new version (bump protocol::version::CURRENT \
                     and keep a decoder of the old layout)"
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn this_builds_encodings_are_checked_in_for_its_version() {
    let dir = version_dir(CURRENT);
    let update = std::env::var_os("UPDATE_GOLDEN").is_some();
    let mut missing = Vec::new();
    for sample in samples() {
        let Some(bytes) = (sample.encode)(CURRENT) else {
            continue;
        };
        let bytes = bytes.unwrap_or_else(|e| panic!("{}: {e}", sample.name));
        let path = dir.join(format!("{}.hex", sample.name));
        if path.exists() {
            continue; // compared with the build's bytes by the test above
        }
        if update {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&path, to_hex(&bytes)).unwrap();
        } else {
            missing.push(sample.name);
        }
    }
    assert!(
        missing.is_empty(),
        "no golden encoding at {CURRENT} of: {}\nwrite them with `make golden` and check \
         them in (existing files are never overwritten)",
        missing.join(", ")
    );
}

#[test]
fn every_method_and_every_replicated_command_has_a_sample() {
    let sampled = sampled_methods();
    let mut methods: BTreeSet<&str> = protocol::admin::METHODS.iter().copied().collect();
    methods.extend(protocol::agent::METHODS.iter().copied());
    methods.extend([
        <protocol::join::JoinRequest as protocol::Rpc>::METHOD,
        <protocol::join::RenewRequest as protocol::Rpc>::METHOD,
        <raft::network::messages::AppendEntriesRpc as protocol::Rpc>::METHOD,
        <raft::network::messages::VoteRpc as protocol::Rpc>::METHOD,
        <raft::network::messages::InstallSnapshotRpc as protocol::Rpc>::METHOD,
    ]);
    let unsampled: Vec<_> = methods.iter().filter(|m| !sampled.contains(**m)).collect();
    assert!(
        unsampled.is_empty(),
        "methods without a golden sample (add them to tests/src/golden.rs): {unsampled:?}"
    );

    // bincode writes a variant's index first (one byte below 251): the samples must cover
    // every index, and the next one must not be a command.
    let mut indices = BTreeSet::new();
    for cmd in commands() {
        let bytes = encode_command(&cmd, CURRENT).unwrap();
        indices.insert(bytes[2]);
    }
    let count = u8::try_from(indices.len()).unwrap();
    assert_eq!(
        indices,
        (0..count).collect::<BTreeSet<u8>>(),
        "sampled command variants are not contiguous"
    );
    let mut next = CURRENT.0.to_be_bytes().to_vec();
    next.extend_from_slice(&[count, 0, 0, 0, 0]);
    assert!(
        matches!(decode_command(&next), Err(CodecError::Malformed { .. })),
        "command variant {count} exists but has no golden sample (add it to tests/src/golden.rs)"
    );
}

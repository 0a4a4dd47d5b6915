//! The lab's disk-fault library (`disk-fault/`, docs/chaos.md): loaded with `LD_PRELOAD` into
//! coreutils' `sync FILE` (one `fsync`, or `fdatasync` with `-d`), it fails or delays exactly
//! the syncs its control file and directory say, and leaves every other sync alone.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails by panicking

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use lab::Binaries;
use lab::binaries::DISK_FAULT_LIB;

/// `sync [-d] FILE` under the library, its control file saying `control`, faults limited to
/// the files under `under`.
fn sync(lib: &Path, control: &Path, under: &Path, data_only: bool, file: &Path) -> Output {
    let mut cmd = Command::new("sync");
    if data_only {
        cmd.arg("-d");
    }
    cmd.arg(file)
        .env("LD_PRELOAD", lib)
        .env("PVEFLEET_DISK_FAULT", control)
        .env("PVEFLEET_DISK_FAULT_UNDER", under)
        .output()
        .expect("coreutils' sync")
}

#[test]
fn syncs_under_the_directory_fail_or_wait_as_the_control_file_says_and_others_do_not() {
    let lib = Binaries::beside_current_exe()
        .unwrap()
        .dir
        .join(DISK_FAULT_LIB);
    assert!(
        lib.is_file(),
        "{} is missing: cargo build -p pvefleet-disk-fault",
        lib.display()
    );
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("journal");
    std::fs::create_dir(&journal).unwrap();
    let inside = journal.join("segment-1");
    let outside = dir.path().join("other");
    std::fs::write(&inside, b"x").unwrap();
    std::fs::write(&outside, b"x").unwrap();
    let control = dir.path().join("disk.ctl");

    std::fs::write(&control, "ok\n").unwrap();
    for data_only in [false, true] {
        let out = sync(&lib, &control, &journal, data_only, &inside);
        assert!(out.status.success(), "ok, data only {data_only}: {out:?}");
    }

    std::fs::write(&control, "fail\n").unwrap();
    for data_only in [false, true] {
        let out = sync(&lib, &control, &journal, data_only, &inside);
        assert!(
            !out.status.success(),
            "fail, data only {data_only}: {out:?}"
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("Input/output error"), "{stderr}");
        // A file elsewhere is not touched.
        let out = sync(&lib, &control, &journal, data_only, &outside);
        assert!(
            out.status.success(),
            "outside, data only {data_only}: {out:?}"
        );
    }

    std::fs::write(&control, "slow 400\n").unwrap();
    let started = Instant::now();
    let out = sync(&lib, &control, &journal, true, &inside);
    assert!(out.status.success(), "{out:?}");
    // A lower bound only: the delay is a sleep before the real call.
    assert!(started.elapsed() >= Duration::from_millis(400));
}

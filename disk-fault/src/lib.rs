//! The lab's disk faults, as an `LD_PRELOAD` library: a process started with
//! `LD_PRELOAD=libpvefleet_disk_fault.so` has its `fsync(2)` and `fdatasync(2)` go through
//! here. While the control file [`CONTROL_ENV`] names says so, a sync of a file under the
//! directory [`UNDER_ENV`] names (every file when unset) is made slow or fails with `EIO`,
//! as a dying disk or a full thin pool does; otherwise the real call runs at once.
//!
//! The control file holds one line, read again at every sync (a write takes effect at the
//! next one):
//!
//! ```text
//! ok            the real call
//! slow 800      the real call, 800 ms late
//! fail          -1 with errno EIO, the real call not made
//! ```
//!
//! Nothing in the product changes: the process syncs as it always does and sees what a real
//! disk would make it see (the coordinator's journal treats a failed sync as fatal and stops
//! its member, which systemd starts again). The scenario runner's `slow-disk`, `fail-disk` and
//! `heal-disk` events and the chaos campaign drive it; it is never linked into a program.

use std::ffi::{CStr, c_int};
use std::path::Path;
use std::sync::OnceLock;
use std::time::Duration;

/// The environment variable naming the control file.
pub const CONTROL_ENV: &str = "PVEFLEET_DISK_FAULT";
/// The environment variable naming the directory whose files the faults touch.
pub const UNDER_ENV: &str = "PVEFLEET_DISK_FAULT_UNDER";
/// The longest delay a `slow` line may ask for (a longer one is taken as this).
const MAX_DELAY: Duration = Duration::from_secs(30);

/// What the control file asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    /// The real call.
    None,
    /// The real call, late.
    Slow(Duration),
    /// `EIO`.
    Fail,
}

/// The control file's line read back; anything unknown is no fault (a fault is never made up).
fn parse(text: &str) -> Fault {
    let mut words = text.split_whitespace();
    match (words.next(), words.next()) {
        (Some("fail"), None) => Fault::Fail,
        (Some("slow"), Some(ms)) => ms.parse::<u64>().map_or(Fault::None, |ms| {
            Fault::Slow(Duration::from_millis(ms).min(MAX_DELAY))
        }),
        _ => Fault::None,
    }
}

/// The fault for a sync of `fd` now.
fn fault_for(fd: c_int) -> Fault {
    let Some(control) = std::env::var_os(CONTROL_ENV) else {
        return Fault::None;
    };
    let fault = std::fs::read_to_string(&control).map_or(Fault::None, |t| parse(&t));
    if fault == Fault::None {
        return fault;
    }
    match std::env::var_os(UNDER_ENV) {
        None => fault,
        Some(under) => {
            let file = std::fs::read_link(format!("/proc/self/fd/{fd}"));
            match file {
                Ok(path) if path.starts_with(Path::new(&under)) => fault,
                _ => Fault::None,
            }
        }
    }
}

/// `fsync(2)` or `fdatasync(2)`.
type SyncFn = unsafe extern "C" fn(c_int) -> c_int;

static REAL_FSYNC: OnceLock<Option<SyncFn>> = OnceLock::new();
static REAL_FDATASYNC: OnceLock<Option<SyncFn>> = OnceLock::new();

/// The next definition of `name` after this library's (libc's).
fn next(name: &CStr) -> Option<SyncFn> {
    // SAFETY: dlsym with RTLD_NEXT and a NUL-terminated name has no preconditions; the
    // symbol, when found, is libc's function of this very signature.
    let found = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) };
    if found.is_null() {
        None
    } else {
        // SAFETY: `found` is the address of `int NAME(int)` (fsync or fdatasync).
        Some(unsafe { std::mem::transmute::<*mut libc::c_void, SyncFn>(found) })
    }
}

fn set_errno(value: c_int) {
    // SAFETY: __errno_location returns this thread's errno, always valid to write.
    unsafe { *libc::__errno_location() = value };
}

fn sync(fd: c_int, real: &OnceLock<Option<SyncFn>>, name: &CStr) -> c_int {
    match fault_for(fd) {
        Fault::Fail => {
            set_errno(libc::EIO);
            return -1;
        }
        Fault::Slow(delay) => std::thread::sleep(delay),
        Fault::None => {}
    }
    match real.get_or_init(|| next(name)) {
        // SAFETY: the real function, called as the caller called us.
        Some(call) => unsafe { call(fd) },
        None => {
            set_errno(libc::ENOSYS);
            -1
        }
    }
}

/// `fsync(2)`, through the fault.
///
/// # Safety
/// As `fsync(2)`: any `fd` is allowed (a bad one fails with `EBADF`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fsync(fd: c_int) -> c_int {
    sync(fd, &REAL_FSYNC, c"fsync")
}

/// `fdatasync(2)`, through the fault.
///
/// # Safety
/// As `fdatasync(2)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fdatasync(fd: c_int) -> c_int {
    sync(fd, &REAL_FDATASYNC, c"fdatasync")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_control_line_is_read_back_and_anything_else_is_no_fault() {
        assert_eq!(parse("fail\n"), Fault::Fail);
        assert_eq!(parse("slow 800\n"), Fault::Slow(Duration::from_millis(800)));
        assert_eq!(parse("slow 99999999"), Fault::Slow(MAX_DELAY));
        assert_eq!(parse("ok\n"), Fault::None);
        assert_eq!(parse(""), Fault::None);
        assert_eq!(parse("slow"), Fault::None);
        assert_eq!(parse("slow soon"), Fault::None);
        assert_eq!(parse("fail now"), Fault::None);
    }
}

//! The two places confinement needs what safe Rust cannot say: asking the kernel which Landlock
//! ABI it has, and putting made rulesets in force on the calling thread. Nothing else of the
//! crate is unsafe.

use std::os::fd::{AsRawFd as _, OwnedFd};
use std::sync::Arc;

/// `LANDLOCK_CREATE_RULESET_VERSION`: asks `landlock_create_ruleset` for the ABI version.
const VERSION: libc::c_uint = 1;

/// The kernel's Landlock ABI, or why it has none (`ENOSYS`: not built in; `EOPNOTSUPP`: built
/// in but not enabled at boot).
pub(super) fn abi() -> Result<i32, String> {
    #[expect(
        unsafe_code,
        reason = "a raw system call with a null attribute and size 0, which the kernel defines \
                  as the version query; no memory is passed"
    )]
    // SAFETY: with the VERSION flag, the attribute pointer must be null and the size 0; the
    // call reads and writes no memory of ours.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            VERSION,
        )
    };
    if v >= 1 {
        return Ok(i32::try_from(v).unwrap_or(i32::MAX));
    }
    Err(match std::io::Error::last_os_error().raw_os_error() {
        Some(libc::EOPNOTSUPP) => "Landlock is built into this kernel but not enabled at boot \
             (add `landlock` to the `lsm=` kernel parameter)"
            .to_owned(),
        _ => "this kernel has no Landlock (it came with Linux 5.13)".to_owned(),
    })
}

/// Puts `layers` (made rulesets, in order) in force on the calling thread, after setting its
/// `no_new_privs`, which Landlock requires of an unprivileged process. Both hold for the thread
/// and every process it starts from then on, for good: only a thread of its own, which ends
/// after starting one process, may call this.
pub(super) fn restrict_this_thread(layers: &[Arc<OwnedFd>]) -> std::io::Result<()> {
    nix::sys::prctl::set_no_new_privs()?;
    for fd in layers {
        #[expect(
            unsafe_code,
            reason = "a raw system call on a ruleset descriptor the caller keeps open; no \
                      memory is passed"
        )]
        // SAFETY: `fd` is an open Landlock ruleset descriptor (kept alive by the `Arc` for the
        // call) and the flags are 0; the call reads and writes no memory of ours.
        let done = unsafe { libc::syscall(libc::SYS_landlock_restrict_self, fd.as_raw_fd(), 0u32) };
        if done != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

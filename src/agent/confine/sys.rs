//! The two places confinement needs what safe Rust cannot say: asking the kernel which Landlock
//! ABI it has, and putting made rulesets in force in a forked child before it execs. Nothing
//! else of the crate is unsafe.

use std::os::fd::{AsRawFd as _, OwnedFd};
use std::os::unix::process::CommandExt as _;
use std::process::Command;
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

/// Makes `cmd`'s child put `layers` in force (each a made ruleset, in order) before it execs,
/// after setting `no_new_privs`, which Landlock requires of an unprivileged process. A child
/// that cannot is not run: the spawn fails with the kernel's error.
pub(super) fn in_force(cmd: &mut Command, layers: Vec<Arc<OwnedFd>>) {
    let fds: Vec<i32> = layers.iter().map(|fd| fd.as_raw_fd()).collect();
    #[expect(
        unsafe_code,
        reason = "pre_exec runs between fork and exec; the closure makes only system calls \
                  (prctl, landlock_restrict_self) on file descriptors the parent keeps open, \
                  and allocates nothing"
    )]
    // SAFETY: in the forked child only async-signal-safe work may happen: the closure reads a
    // vector allocated before the fork (never freed or grown in the child) and makes two kinds
    // of raw system call. `layers` is moved into the closure, so the descriptors stay open in
    // the parent until the command is dropped, after the spawn.
    unsafe {
        cmd.pre_exec(move || {
            let _keep = &layers;
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            for &fd in &fds {
                if libc::syscall(libc::SYS_landlock_restrict_self, fd, 0u32) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
}

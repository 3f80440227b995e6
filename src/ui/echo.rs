//! The terminal's echo of control characters (its ECHOCTL mode), off while the live display is
//! on screen. The display redraws itself by moving the cursor up as many lines as it drew, and
//! it draws each line as wide as the terminal, so the `^C` a terminal echoes for Ctrl-C starts
//! a line of its own below the display: the next redraw then starts a line too low and leaves
//! the header it drew first on screen, frozen. With ECHOCTL off, Ctrl-C is echoed as the control
//! character itself, which moves nothing.

use std::sync::atomic::{AtomicBool, Ordering};

use nix::sys::termios::{LocalFlags, SetArg, tcgetattr, tcsetattr};

/// Whether swarm turned the echo off, and so owes the terminal turning it back on.
static OFF: AtomicBool = AtomicBool::new(false);

/// Turns the echo of control characters off on stderr's terminal, where it is on.
pub(super) fn off() {
    let stderr = std::io::stderr();
    let Ok(mut modes) = tcgetattr(&stderr) else {
        return;
    };
    if !modes.local_flags.contains(LocalFlags::ECHOCTL) {
        return;
    }
    modes.local_flags.remove(LocalFlags::ECHOCTL);
    if tcsetattr(&stderr, SetArg::TCSANOW, &modes).is_ok() {
        OFF.store(true, Ordering::SeqCst);
    }
}

/// Turns it back on, if `off` turned it off; the terminal's other modes stay as they are now.
pub(super) fn restore() {
    if !OFF.swap(false, Ordering::SeqCst) {
        return;
    }
    let stderr = std::io::stderr();
    if let Ok(mut modes) = tcgetattr(&stderr) {
        modes.local_flags.insert(LocalFlags::ECHOCTL);
        let _ = tcsetattr(&stderr, SetArg::TCSANOW, &modes);
    }
}

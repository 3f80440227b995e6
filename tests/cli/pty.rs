//! A pseudo-terminal for swarm's stderr, and the screen a user would see.

use std::io::Read as _;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Condvar, Mutex, PoisonError};

/// What swarm wrote on a terminal of `cols` × `rows`, and how it exited.
pub struct Screen {
    pub status: ExitStatus,
    /// Every byte written to the terminal, escape codes and all.
    pub bytes: Vec<u8>,
    /// The screen as it was left (make it tall enough that nothing scrolls off).
    pub text: String,
    pub stdout: String,
}

/// What the terminal has received so far, and whether every writer has let go of it.
type Seen = (Vec<u8>, bool);

/// swarm running with its stderr on a pseudo-terminal.
pub struct Terminal {
    child: Child,
    cols: u16,
    rows: u16,
    seen: Arc<(Mutex<Seen>, Condvar)>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Terminal {
    /// Starts `cmd` with its stderr on a terminal of `cols` × `rows` (stdout piped, stdin as
    /// set).
    pub fn start(mut cmd: Command, cols: u16, rows: u16) -> Self {
        let size = nix::pty::Winsize {
            ws_row: rows,
            ws_col: cols,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        let pty = nix::pty::openpty(&size, None).expect("openpty");
        let child = cmd
            .env("TERM", "xterm-256color")
            .stderr(Stdio::from(pty.slave))
            .stdout(Stdio::piped())
            .spawn()
            .expect("starting swarm");
        // The command held the last copy of the terminal's other end here: the reader sees
        // its end once swarm and its children have closed theirs.
        drop(cmd);
        let seen = Arc::new((Mutex::new((Vec::new(), false)), Condvar::new()));
        let mut master = std::fs::File::from(pty.master);
        let shared = Arc::clone(&seen);
        let reader = std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            loop {
                let n = match master.read(&mut buf) {
                    // EIO: every writer has closed the terminal.
                    Ok(0) | Err(_) => 0,
                    Ok(n) => n,
                };
                let (lock, changed) = &*shared;
                let mut seen = lock.lock().unwrap_or_else(PoisonError::into_inner);
                seen.0.extend_from_slice(&buf[..n]);
                seen.1 = n == 0;
                changed.notify_all();
                if n == 0 {
                    break;
                }
            }
        });
        Self {
            child,
            cols,
            rows,
            seen,
            reader: Some(reader),
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits until the screen shows `text`; panics if the terminal closes first.
    pub fn wait_for(&self, text: &str) {
        let (lock, changed) = &*self.seen;
        let mut seen = lock.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if screen_text(&seen.0, self.cols, self.rows).contains(text) {
                return;
            }
            assert!(
                !seen.1,
                "the terminal closed without showing {text:?}:\n{}",
                screen_text(&seen.0, self.cols, self.rows)
            );
            seen = changed.wait(seen).unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Waits for swarm to exit and the terminal to close.
    pub fn finish(mut self) -> Screen {
        let output = self.child.wait_with_output().expect("waiting for swarm");
        if let Some(reader) = self.reader.take() {
            reader.join().expect("reading the terminal");
        }
        let (lock, _) = &*self.seen;
        let bytes = std::mem::take(&mut lock.lock().unwrap_or_else(PoisonError::into_inner).0);
        Screen {
            status: output.status,
            text: screen_text(&bytes, self.cols, self.rows),
            bytes,
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        }
    }
}

/// Runs `cmd` to its end with its stderr on a terminal of `cols` × `rows`.
pub fn run_on_terminal(cmd: Command, cols: u16, rows: u16) -> Screen {
    Terminal::start(cmd, cols, rows).finish()
}

/// The screen `bytes` leave on a terminal of `cols` × `rows`, row by row (a line as wide as
/// the terminal would otherwise run into the next).
fn screen_text(bytes: &[u8], cols: u16, rows: u16) -> String {
    let nonzero = |n: u16| std::num::NonZeroU16::new(n).expect("a terminal has a size");
    let mut parser = vt100::Parser::new(nonzero(rows), nonzero(cols), 0);
    parser.process(bytes);
    parser.screen().rows(0, cols).collect::<Vec<_>>().join("\n")
}

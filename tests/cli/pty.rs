//! A pseudo-terminal for swarm's stderr, and the screen a user would see at the end.

use std::io::Read as _;
use std::process::{Command, ExitStatus, Stdio};

/// What swarm wrote on a terminal of `cols` × `rows`, and how it exited.
pub struct Screen {
    pub status: ExitStatus,
    /// Every byte written to the terminal, escape codes and all.
    pub bytes: Vec<u8>,
    /// The screen as it was left (make it tall enough that nothing scrolls off).
    pub text: String,
    pub stdout: String,
}

/// Runs `cmd` with its stderr on a pseudo-terminal (stdout piped, stdin as set) and reads the
/// terminal until swarm and everything it started have let go of it.
pub fn run_on_terminal(mut cmd: Command, cols: u16, rows: u16) -> Screen {
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
    // Dropping the command drops the last copy of the terminal's other end here: the reader
    // sees its end once swarm and its children have closed theirs.
    drop(cmd);
    let mut master = std::fs::File::from(pty.master);
    let reader = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            match master.read(&mut buf) {
                // EIO: every writer has closed the terminal.
                Ok(0) | Err(_) => break,
                Ok(n) => bytes.extend_from_slice(&buf[..n]),
            }
        }
        bytes
    });
    let output = child.wait_with_output().expect("waiting for swarm");
    let bytes = reader.join().expect("reading the terminal");
    let nonzero = |n: u16| std::num::NonZeroU16::new(n).expect("a terminal has a size");
    let mut parser = vt100::Parser::new(nonzero(rows), nonzero(cols), 0);
    parser.process(&bytes);
    // Row by row: a line as wide as the terminal would otherwise run into the next.
    let text = parser.screen().rows(0, cols).collect::<Vec<_>>().join("\n");
    Screen {
        status: output.status,
        bytes,
        text,
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
    }
}

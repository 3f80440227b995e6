//! swarm on a pseudo-terminal (its stdin, stdout and stderr), what it prints there, and the
//! screen a user would be left with. Tests wait for what swarm prints, never for a time.

use std::io::{Read as _, Write as _};
use std::os::fd::OwnedFd;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

/// How long swarm may print nothing before a test gives up on it, so that a swarm that never
/// prints what a test waits for fails the test instead of hanging it. No test waits for it
/// otherwise.
const SILENCE: Duration = Duration::from_secs(120);

/// How swarm exited and what it left on the terminal.
pub struct Screen {
    pub status: ExitStatus,
    /// Every byte written to the terminal, escape codes and all.
    pub bytes: Vec<u8>,
    /// Everything printed, carriage returns left out.
    pub printed: String,
    /// The screen as it was left, row by row (make it tall enough that nothing scrolls off).
    pub text: String,
    /// Whether the terminal echoes control characters as `^C` (its ECHOCTL mode) once swarm
    /// has exited.
    pub echoctl: bool,
}

impl Screen {
    pub fn code(&self) -> i32 {
        self.status.code().expect("an exit code")
    }
}

/// swarm running on a pseudo-terminal.
pub struct Terminal {
    child: Child,
    input: std::fs::File,
    output: Receiver<Vec<u8>>,
    bytes: Vec<u8>,
    cols: u16,
    rows: u16,
}

impl Terminal {
    /// Starts `cmd` with a terminal of `cols` × `rows` as its stdin, stdout and stderr.
    pub fn start(mut cmd: Command, cols: u16, rows: u16) -> Self {
        let size = nix::pty::Winsize {
            ws_row: rows,
            ws_col: cols,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        let pty = nix::pty::openpty(Some(&size), None).expect("a pseudo-terminal");
        let end = |fd: &OwnedFd| Stdio::from(fd.try_clone().expect("a copy of the terminal"));
        cmd.stdin(end(&pty.slave))
            .stdout(end(&pty.slave))
            .stderr(end(&pty.slave));
        let child = cmd.spawn().expect("starting swarm");
        // The command holds the terminal's other side; once it and swarm let go, reading ends.
        drop(cmd);
        drop(pty.slave);
        let master = std::fs::File::from(pty.master);
        let input = master.try_clone().expect("a copy of the terminal");
        let (send, output) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut master = master;
            let mut buf = [0u8; 4096];
            // Linux answers EIO once no process holds the other side: the end of the output.
            while let Ok(n @ 1..) = master.read(&mut buf) {
                if send.send(buf[..n].to_vec()).is_err() {
                    break;
                }
            }
        });
        Self {
            child,
            input,
            output,
            bytes: Vec::new(),
            cols,
            rows,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Reads until `text` has been printed; returns everything printed so far.
    pub fn read_until(&mut self, text: &str) -> String {
        loop {
            let printed = printed(&self.bytes);
            if printed.contains(text) {
                return printed;
            }
            match self.output.recv_timeout(SILENCE) {
                Ok(bytes) => self.bytes.extend(bytes),
                Err(RecvTimeoutError::Disconnected) => {
                    panic!("swarm's output ended before {text:?}:\n{printed}")
                }
                Err(RecvTimeoutError::Timeout) => {
                    panic!("swarm printed nothing more before {text:?}:\n{printed}")
                }
            }
        }
    }

    /// Waits until the screen, as the terminal shows it now, holds `text`; returns the screen,
    /// row by row.
    pub fn screen_until(&mut self, text: &str) -> String {
        // A screen that keeps changing (a clock on it) never falls silent: it is given as long.
        let since = std::time::Instant::now();
        loop {
            let screen = self.screen();
            if screen.contains(text) {
                return screen;
            }
            assert!(
                since.elapsed() < SILENCE,
                "the screen never held {text:?}:\n{screen}"
            );
            match self.output.recv_timeout(SILENCE) {
                Ok(bytes) => self.bytes.extend(bytes),
                Err(RecvTimeoutError::Disconnected) => {
                    panic!("swarm's output ended before {text:?} was on the screen:\n{screen}")
                }
                Err(RecvTimeoutError::Timeout) => {
                    panic!("the screen never held {text:?}:\n{screen}")
                }
            }
        }
    }

    /// The screen as the terminal shows it now, row by row.
    pub fn screen(&self) -> String {
        let nonzero = |n: u16| std::num::NonZeroU16::new(n).expect("a terminal has a size");
        let mut parser = vt100::Parser::new(nonzero(self.rows), nonzero(self.cols), 0);
        parser.process(&self.bytes);
        parser
            .screen()
            .rows(0, self.cols)
            .collect::<Vec<_>>()
            .join("\n")
    }

    pub fn type_line(&mut self, line: &str) {
        self.type_bytes(format!("{line}\n").as_bytes());
    }

    /// Types `bytes` as they are: `b"\x03"` is Ctrl-C.
    pub fn type_bytes(&mut self, bytes: &[u8]) {
        self.input.write_all(bytes).expect("typing on the terminal");
    }

    /// Waits for swarm to exit and the terminal to close.
    pub fn finish(mut self) -> Screen {
        while let Ok(bytes) = self.output.recv_timeout(SILENCE) {
            self.bytes.extend(bytes);
        }
        let status = self.child.wait().expect("waiting for swarm");
        // Asked of the terminal's other side, as Linux answers for its pair.
        let echoctl = nix::sys::termios::tcgetattr(&self.input)
            .expect("the terminal's modes")
            .local_flags
            .contains(nix::sys::termios::LocalFlags::ECHOCTL);
        let nonzero = |n: u16| std::num::NonZeroU16::new(n).expect("a terminal has a size");
        let mut parser = vt100::Parser::new(nonzero(self.rows), nonzero(self.cols), 0);
        parser.process(&self.bytes);
        // Row by row: a line as wide as the terminal would otherwise run into the next.
        let text = parser
            .screen()
            .rows(0, self.cols)
            .collect::<Vec<_>>()
            .join("\n");
        Screen {
            status,
            printed: printed(&self.bytes),
            bytes: self.bytes,
            text,
            echoctl,
        }
    }
}

fn printed(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).replace('\r', "")
}

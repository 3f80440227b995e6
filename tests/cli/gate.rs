//! A point in an agent's script where it stops until the test lets it go, built from two
//! named pipes: the agent's write to the first returns once the test reads it (the test knows
//! the agent got there), and its read of the second returns once the test writes (the agent
//! goes on). Tests wait for events this way, never for a length of time.

use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::mpsc;
use std::time::Duration;

pub struct Gate {
    reached: PathBuf,
    go: PathBuf,
}

impl Gate {
    /// Two named pipes in `dir` (a directory of the test's own), named after `name`.
    pub fn new(dir: &Path, name: &str) -> Self {
        std::fs::create_dir_all(dir).unwrap();
        let gate = Self {
            reached: dir.join(format!("{name}.reached")),
            go: dir.join(format!("{name}.go")),
        };
        for fifo in [&gate.reached, &gate.go] {
            nix::unistd::mkfifo(fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        }
        gate
    }

    /// The shell words an agent's script runs to reach the gate and wait there.
    pub fn shell(&self) -> String {
        format!(
            "echo reached > '{}' && cat '{}' > /dev/null",
            self.reached.display(),
            self.go.display()
        )
    }

    /// The same for the first agent only: a later one (the attempt a resumed run makes again)
    /// passes without stopping.
    pub fn shell_once(&self) -> String {
        let passed = self.reached.with_extension("passed");
        format!(
            "{{ [ -e '{0}' ] || {{ touch '{0}' && {1}; }}; }}",
            passed.display(),
            self.shell()
        )
    }

    /// Waits until an agent has reached the gate; panics if `swarm` ends first.
    pub fn reached(&self, swarm: &mut Child) {
        let (tx, rx) = mpsc::channel();
        let reached = self.reached.clone();
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = std::fs::File::open(reached).and_then(|mut f| f.read_to_string(&mut text));
            let _ = tx.send(text);
        });
        loop {
            // The wait is for the agent; the timeout only lets swarm's end be noticed.
            match rx.recv_timeout(Duration::from_millis(50)) {
                Ok(_) => return,
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => panic!("the gate's reader ended"),
            }
            if let Some(status) = swarm.try_wait().unwrap() {
                // Let the reading thread go before failing.
                let _ = std::fs::OpenOptions::new().write(true).open(&self.reached);
                panic!("swarm ended ({status}) before an agent reached the gate");
            }
        }
    }

    /// Lets the agent waiting at the gate go on.
    pub fn release(&self) {
        let mut go = std::fs::OpenOptions::new()
            .write(true)
            .open(&self.go)
            .unwrap();
        go.write_all(b"go\n").unwrap();
    }
}

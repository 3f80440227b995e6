//! A named pipe that every process of an agent holds open from its start: the test's read of it
//! ends once the last of them has exited, however it ended (killed, or done). Tests wait for
//! processes to be gone this way, never for a length of time.

use std::fs::File;
use std::io::Read as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

use nix::fcntl::{FcntlArg, OFlag, fcntl};

pub struct Lifeline {
    path: PathBuf,
    /// Open from the start, so what holders write stays in the pipe until it is read.
    reader: File,
}

impl Lifeline {
    /// A named pipe in `dir` (a directory of the test's own), named after `name`.
    pub fn new(dir: &Path, name: &str) -> Self {
        std::fs::create_dir_all(dir).unwrap();
        let path = dir.join(format!("{name}.lifeline"));
        nix::unistd::mkfifo(&path, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        // Opened without waiting for a holder, then made blocking, so that a read waits for
        // the holders to go.
        let reader = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(nix::libc::O_NONBLOCK)
            .open(&path)
            .unwrap();
        fcntl(&reader, FcntlArg::F_SETFL(OFlag::empty())).unwrap();
        Self { path, reader }
    }

    /// The shell words an agent runs first: from then on it and every process it starts hold
    /// the pipe (as descriptor 9). Opened for reading and writing, which never waits, so an
    /// agent the test is not watching runs on.
    pub fn shell(&self) -> String {
        format!("exec 9<>'{}' && echo held >&9", self.path.display())
    }

    /// Waits until no process holds the pipe; returns how many agents took hold of it since
    /// the last call.
    pub fn ended(&mut self) -> usize {
        let mut held = String::new();
        self.reader.read_to_string(&mut held).unwrap();
        held.lines().count()
    }
}

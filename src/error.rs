//! The errors that choose how swarm exits: the exit codes (SPEC §9), bad input (`Usage`), a
//! repository another run holds (`Busy`) and a bug in swarm (`Internal`). The ground floor:
//! every room may use it and it uses no other room of swarm. It prints nothing; `lib.rs` prints
//! every error and picks the exit code.

use std::fmt;

/// Exit codes (SPEC §9).
pub mod exit {
    pub const OK: u8 = 0;
    pub const FAILED: u8 = 1;
    pub const USAGE: u8 = 2;
    pub const NEEDS_HUMAN: u8 = 3;
    pub const BUSY: u8 = 4;
    pub const RESUMABLE: u8 = 75;
}

/// Bad input from the user: exit 2, nothing ran.
#[derive(Debug)]
pub struct Usage {
    pub message: String,
    pub hint: Option<String>,
}

impl Usage {
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            hint: None,
        }
    }

    #[must_use]
    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

impl fmt::Display for Usage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Usage {}

/// Another run holds the repository: exit 4.
#[derive(Debug)]
pub struct Busy {
    pub holder: String,
}

impl fmt::Display for Busy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "another swarm run holds this repository: {}",
            self.holder
        )
    }
}

impl std::error::Error for Busy {}

/// A panic of the owner thread: a bug in swarm. What ran is recorded as far as it got, so a
/// run it cut short is resumable.
#[derive(Debug)]
pub(crate) struct Internal(pub String);

impl fmt::Display for Internal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "internal error: {}", self.0)
    }
}

impl std::error::Error for Internal {}

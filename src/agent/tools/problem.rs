//! Why a tool call did not do what was asked, as the model is told it.

use std::io;

/// Why a call did not do what was asked; the text follows `error: `.
pub(super) enum Problem {
    Refused(String),
    Failed(String),
}

pub(super) fn failed(text: impl Into<String>) -> Problem {
    Problem::Failed(text.into())
}

pub(super) fn refused(raw: &str, why: &str) -> Problem {
    Problem::Refused(format!("refused: {raw} {why}"))
}

pub(super) fn not_found(raw: &str) -> Problem {
    failed(format!("no such file or directory: {raw}"))
}

pub(super) fn io_failed(raw: &str, e: &io::Error) -> Problem {
    match e.kind() {
        io::ErrorKind::NotFound => not_found(raw),
        _ => failed(format!("{raw}: {e}")),
    }
}

/// A file of the task's directory that was not read (a FIFO, too large).
pub(super) fn unread(raw: &str, why: &crate::planted::Refused) -> Problem {
    match why {
        crate::planted::Refused::Missing => not_found(raw),
        why => failed(format!("{raw} {why}")),
    }
}

impl Problem {
    pub(super) fn text(self) -> String {
        match self {
            Self::Refused(why) | Self::Failed(why) => why,
        }
    }
}

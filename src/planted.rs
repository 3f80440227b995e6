//! Files a task could have planted: a task's processes run as the user, so wherever swarm
//! reads or writes a file a task can reach (its spawn file, its transcript and stdout, a file
//! of its checkout), the task may have put a symbolic link to a file elsewhere, a named pipe
//! (whose open and read wait for a writer for ever), a device, or a file of any size. Such a
//! file is opened here only: never through a final symbolic link, never waiting on a FIFO,
//! taken only when it is a regular file, and read only up to a cap.

use std::fs::{File, OpenOptions};
use std::io::Read as _;
use std::os::unix::fs::{FileTypeExt as _, OpenOptionsExt as _};
use std::path::Path;

use nix::fcntl::OFlag;

/// Why a file a task could have planted was not taken.
#[derive(Debug)]
pub(crate) enum Refused {
    /// Nothing is there.
    Missing,
    /// A symbolic link, which swarm does not follow.
    Link,
    /// Not a regular file: what it is ("a FIFO (named pipe)", "a directory").
    NotRegular(&'static str),
    /// Larger than the cap (in bytes) it is read under.
    TooLarge(u64),
    /// It could not be opened or read.
    Io(std::io::Error),
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::Missing => f.write_str("does not exist"),
            Refused::Link => f.write_str("is a symbolic link, which swarm does not follow"),
            Refused::NotRegular(what) => write!(f, "is {what}, not a regular file"),
            Refused::TooLarge(cap) => write!(f, "is over {}", crate::ui::bytes(*cap)),
            Refused::Io(e) => write!(f, "could not be read: {e}"),
        }
    }
}

impl std::error::Error for Refused {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Refused::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<Refused> for std::io::Error {
    fn from(refused: Refused) -> Self {
        match refused {
            Refused::Io(e) => e,
            Refused::Missing => std::io::Error::new(std::io::ErrorKind::NotFound, refused),
            other => std::io::Error::other(other),
        }
    }
}

/// Opens `path` as `options` say, without following a final symbolic link or waiting on a
/// FIFO, and only if it is a regular file.
pub(crate) fn open_with(path: &Path, options: &mut OpenOptions) -> Result<File, Refused> {
    let file = options
        .custom_flags((OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK).bits())
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(code) if code == nix::errno::Errno::ELOOP as i32 => Refused::Link,
            // Opening a FIFO to write without a reader, with O_NONBLOCK.
            Some(code) if code == nix::errno::Errno::ENXIO as i32 => {
                Refused::NotRegular("a FIFO (named pipe)")
            }
            _ if e.kind() == std::io::ErrorKind::NotFound => Refused::Missing,
            _ => Refused::Io(e),
        })?;
    let kind = file.metadata().map_err(Refused::Io)?.file_type();
    if kind.is_file() {
        return Ok(file);
    }
    Err(Refused::NotRegular(if kind.is_fifo() {
        "a FIFO (named pipe)"
    } else if kind.is_dir() {
        "a directory"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else {
        "something else"
    }))
}

/// Opens `path` to read.
pub(crate) fn open(path: &Path) -> Result<File, Refused> {
    open_with(path, OpenOptions::new().read(true))
}

/// The whole of `path`, when it holds at most `cap` bytes.
pub(crate) fn read(path: &Path, cap: u64) -> Result<Vec<u8>, Refused> {
    let file = open(path)?;
    let mut bytes = Vec::new();
    file.take(cap.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(Refused::Io)?;
    if bytes.len() as u64 > cap {
        return Err(Refused::TooLarge(cap));
    }
    Ok(bytes)
}

/// The first `most` bytes of `path` (all of it when it is shorter).
pub(crate) fn read_start(path: &Path, most: u64) -> Result<Vec<u8>, Refused> {
    let file = open(path)?;
    let mut bytes = Vec::new();
    file.take(most)
        .read_to_end(&mut bytes)
        .map_err(Refused::Io)?;
    Ok(bytes)
}

/// A new, empty file at `path` for swarm to write and read back, in place of whatever was
/// there (a task's link or FIFO is removed, not followed or opened).
pub(crate) fn replace(path: &Path) -> std::io::Result<File> {
    clear(path)?;
    // `create_new` follows no link: what a task put there since is an error, not a target.
    OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(path)
}

/// Removes whatever is at `path` (a file, or a link, never followed); nothing there is no
/// error.
pub(crate) fn clear(path: &Path) -> std::io::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use super::{Refused, open_with, read, replace};

    #[test]
    fn a_fifo_is_refused_at_once_without_waiting_for_a_writer() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("spawn.jsonl");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let refused = read(&fifo, 1024).unwrap_err();
        assert_eq!(
            refused.to_string(),
            "is a FIFO (named pipe), not a regular file"
        );
        // To write, with no reader: the open itself would wait.
        let mut append = std::fs::OpenOptions::new();
        append.append(true);
        assert!(matches!(
            open_with(&fifo, &mut append),
            Err(Refused::NotRegular(_))
        ));
    }

    #[test]
    fn a_link_is_not_followed_a_large_file_not_read_and_a_missing_one_said_so() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("elsewhere");
        std::fs::write(&target, "twelve bytes").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(matches!(read(&link, 1024), Err(Refused::Link)));
        assert!(matches!(read(&target, 11), Err(Refused::TooLarge(11))));
        assert_eq!(read(&target, 12).unwrap(), b"twelve bytes");
        assert!(matches!(
            read(&dir.path().join("none"), 1),
            Err(Refused::Missing)
        ));
        assert!(matches!(
            read(dir.path(), 1),
            Err(Refused::NotRegular("a directory"))
        ));
    }

    #[test]
    fn a_replaced_file_is_new_and_what_the_link_led_to_is_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("users-file");
        std::fs::write(&target, "keep me").unwrap();
        let path = dir.path().join("transcript.log");
        std::os::unix::fs::symlink(&target, &path).unwrap();
        let mut file = replace(&path).unwrap();
        file.write_all(b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        assert!(!path.symlink_metadata().unwrap().file_type().is_symlink());
    }
}

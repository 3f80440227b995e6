//! A full disk, named: a write that found no room says which path it was for and which disk
//! holds it (its device and mount point), so that the user knows what to free. Swarm stops
//! resumably on one (see `agent::Fault`), wherever it writes: the board, the event log,
//! transcripts, checkouts.

use std::path::{Path, PathBuf};

/// A write to `path` found its disk full (or the user's quota spent).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Full {
    path: PathBuf,
    /// The disk, in words: "device 8:1, mounted at /home".
    disk: Option<String>,
}

impl Full {
    /// The disk holding `path` is full; which disk that is is looked up now.
    pub(crate) fn at(path: &Path) -> Self {
        Self {
            path: path.to_owned(),
            disk: describe(path),
        }
    }
}

impl std::fmt::Display for Full {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the disk holding {}", self.path.display())?;
        if let Some(disk) = &self.disk {
            write!(f, " ({disk})")?;
        }
        f.write_str(" is full")
    }
}

impl std::error::Error for Full {}

/// Whether `e` says there is no room: no space left, or the quota spent.
pub(crate) fn is_full(e: &std::io::Error) -> bool {
    use nix::errno::Errno;
    e.raw_os_error()
        .is_some_and(|code| [Errno::ENOSPC as i32, Errno::EDQUOT as i32].contains(&code))
}

/// `e`, met writing `path`: when it says there is no room, it names the path and the disk.
pub(crate) fn name(path: &Path, e: std::io::Error) -> std::io::Error {
    if is_full(&e) {
        std::io::Error::new(std::io::ErrorKind::StorageFull, Full::at(path))
    } else {
        e
    }
}

/// `std::fs::write`, naming the path and its disk when there is no room.
pub(crate) fn write(path: &Path, bytes: impl AsRef<[u8]>) -> std::io::Result<()> {
    std::fs::write(path, bytes).map_err(|e| name(path, e))
}

/// The full disk `e` names, anywhere in its chain.
pub(crate) fn full(e: &anyhow::Error) -> Option<&Full> {
    e.downcast_ref::<Full>().or_else(|| {
        e.chain().find_map(|cause| {
            cause.downcast_ref::<Full>().or_else(|| {
                cause
                    .downcast_ref::<std::io::Error>()?
                    .get_ref()?
                    .downcast_ref::<Full>()
            })
        })
    })
}

/// The disk holding `path` (or, for a path not made yet, its nearest existing parent), in
/// words: its device's numbers and, where the system says, where it is mounted.
pub(crate) fn describe(path: &Path) -> Option<String> {
    let existing = path.ancestors().find(|p| p.symlink_metadata().is_ok())?;
    let numbers = device_numbers(nix::sys::stat::stat(existing).ok()?.st_dev);
    let canonical = existing.canonicalize().ok()?;
    Some(match mount_point(&canonical, &numbers) {
        Some(mount) => format!("device {numbers}, mounted at {}", mount.display()),
        None => format!("device {numbers}"),
    })
}

/// A device's numbers as the system shows them: `8:1` (major and minor) on Linux.
#[cfg(target_os = "linux")]
fn device_numbers(dev: nix::libc::dev_t) -> String {
    format!(
        "{}:{}",
        nix::sys::stat::major(dev),
        nix::sys::stat::minor(dev)
    )
}

#[cfg(not(target_os = "linux"))]
fn device_numbers(dev: nix::libc::dev_t) -> String {
    dev.to_string()
}

/// Where the file system of device `numbers` ("8:1") holding `path` is mounted, as
/// `/proc/self/mountinfo` lists it (Linux): the longest mount point above `path` of that
/// device, else of any.
fn mount_point(path: &Path, numbers: &str) -> Option<PathBuf> {
    let table = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let mut best: Option<(bool, PathBuf)> = None;
    for line in table.lines() {
        // id parent major:minor root mount-point options …
        let fields: Vec<&str> = line.split(' ').collect();
        let (Some(device), Some(mount)) = (fields.get(2), fields.get(4)) else {
            continue;
        };
        let mount = PathBuf::from(unescape(mount));
        if !path.starts_with(&mount) {
            continue;
        }
        let same = *device == numbers;
        let better = best.as_ref().is_none_or(|(was_same, was)| {
            (same, mount.as_os_str().len()) > (*was_same, was.as_os_str().len())
        });
        if better {
            best = Some((same, mount));
        }
    }
    best.map(|(_, mount)| mount)
}

/// A mount point as mountinfo writes it: space, tab, newline and backslash as octal escapes.
fn unescape(field: &str) -> String {
    let mut out = String::new();
    let mut rest = field;
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        let code = rest.get(at + 1..at + 4);
        if let Some(byte) = code.and_then(|c| u8::from_str_radix(c, 8).ok()) {
            out.push(char::from(byte));
            rest = &rest[at + 4..];
        } else {
            out.push('\\');
            rest = &rest[at + 1..];
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::{Full, full, name};

    #[test]
    fn a_full_disk_is_named_by_its_path_and_device_and_found_in_any_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("board.db");
        let said = Full::at(&path).to_string();
        assert!(
            said.starts_with(&format!("the disk holding {} (device ", path.display())),
            "{said}"
        );
        assert!(said.ends_with(") is full"), "{said}");

        let no_room = std::io::Error::from_raw_os_error(nix::errno::Errno::ENOSPC as i32);
        let named = anyhow::Error::new(name(&path, no_room)).context("writing the event log");
        assert_eq!(full(&named).map(ToString::to_string), Some(said.clone()));
        let on_top = anyhow::anyhow!("database or disk is full").context(Full::at(&path));
        assert_eq!(full(&on_top).map(ToString::to_string), Some(said));
        let other = std::io::Error::from_raw_os_error(nix::errno::Errno::EACCES as i32);
        assert!(full(&anyhow::Error::new(name(&path, other))).is_none());
    }

    #[test]
    fn mount_points_are_read_as_mountinfo_escapes_them() {
        assert_eq!(super::unescape("/mnt/my\\040disk"), "/mnt/my disk");
        assert_eq!(super::unescape("/a\\b"), "/a\\b");
    }
}

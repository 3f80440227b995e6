//! Opening the board whole: waiting for another swarm setting it up, and refusing a board that
//! does not read as one, or that was emptied while runs are on record; swarm never recreates or
//! deletes it.

use std::path::Path;

/// How long opening the board waits for another swarm holding it.
pub(super) const BUSY_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Whether `SQLite` answered one of `codes` somewhere in the chain of `e`.
fn sqlite_said(e: &anyhow::Error, codes: &[rusqlite::ErrorCode]) -> bool {
    e.chain().any(|cause| {
        cause
            .downcast_ref::<rusqlite::Error>()
            .and_then(rusqlite::Error::sqlite_error_code)
            .is_some_and(|code| codes.contains(&code))
    })
}

/// Whether `SQLite` found no room on the disk somewhere in the chain of `e`.
pub fn is_full(e: &anyhow::Error) -> bool {
    sqlite_said(e, &[rusqlite::ErrorCode::DiskFull])
}

pub(super) fn is_busy(e: &anyhow::Error) -> bool {
    use rusqlite::ErrorCode::{DatabaseBusy, DatabaseLocked};
    sqlite_said(e, &[DatabaseBusy, DatabaseLocked])
}

/// A board that does not read as one is the user's to look at: swarm never recreates or deletes
/// it. Other errors pass as they are, with the board's path.
pub(super) fn damaged(path: &Path, e: anyhow::Error) -> anyhow::Error {
    use rusqlite::ErrorCode::{DatabaseCorrupt, NotADatabase};
    if !sqlite_said(&e, &[NotADatabase, DatabaseCorrupt]) {
        return e.context(format!("board {}", path.display()));
    }
    e.context(format!(
        "the board {} is damaged; swarm leaves it as it is. Keep it for a look and start a fresh one with `mv {0} {0}.damaged` (its runs are then no longer known to swarm)",
        path.display()
    ))
}

/// The board this process opened last, for the advice on a damage found only as it is read.
static OPENED: std::sync::Mutex<Option<std::path::PathBuf>> = std::sync::Mutex::new(None);

pub(super) fn opened(path: &Path) {
    *OPENED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(path.to_owned());
}

/// What to do about `e` when it is a damage of the board that showed only as the board was read
/// (a page in the middle of it): opening it found nothing wrong.
pub fn damage_hint(e: &anyhow::Error) -> Option<String> {
    use rusqlite::ErrorCode::{DatabaseCorrupt, NotADatabase};
    if !sqlite_said(e, &[NotADatabase, DatabaseCorrupt]) {
        return None;
    }
    let path = OPENED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone()?;
    Some(format!(
        "the board {0} is damaged; swarm leaves it as it is. Keep it for a look and start a fresh one with `mv {0} {0}.damaged` (its runs are then no longer known to swarm; what they merged stays on their branches)",
        path.display()
    ))
}

/// A board emptied to 0 bytes while runs are on record lost them; `SQLite` would take it for a new
/// board and forget them silently.
pub(super) fn refuse_emptied(swarm_dir: &Path, path: &Path) -> anyhow::Result<()> {
    let size = |p: &Path| std::fs::metadata(p).map(|m| m.len()).ok();
    let wal = path.with_extension("db-wal");
    let emptied = size(path) == Some(0) && size(&wal).unwrap_or(0) == 0;
    let runs_on_record =
        std::fs::read_dir(swarm_dir.join("runs")).is_ok_and(|mut entries| entries.next().is_some());
    if emptied && runs_on_record {
        anyhow::bail!(
            "the board {} is empty, but runs are on record in {}; swarm leaves it as it is. Restore it from a backup, or start a fresh one with `mv {0} {0}.empty`",
            path.display(),
            swarm_dir.join("runs").display()
        );
    }
    Ok(())
}

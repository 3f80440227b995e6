//! Messages a person sends a task while it runs (`swarm steer`, the interface's `/steer`, the
//! mirror's): each a file in the task's mailbox, `<run dir>/steer/<task>/`, taken once by the
//! attempt that delivers it (moved into `delivered/` there, which only one taker can do). The
//! built-in agent takes them before each request to the model; every agent's attempt takes
//! those waiting when it starts, first in its prompt; an agent of one's own finds the mailbox in
//! `$SWARM_STEER`.

use std::path::{Path, PathBuf};

/// The variable that names the mailbox of the attempt's task.
pub const VAR: &str = "SWARM_STEER";

/// How a message is framed where an agent reads it: the person's words, as theirs.
pub fn framed(text: &str) -> String {
    format!(
        "A message from the person steering this task (follow it where it fits the task):\n{text}"
    )
}

/// Task `task`'s mailbox in the run directory `run_dir`.
pub fn mailbox(run_dir: &Path, task: &str) -> PathBuf {
    run_dir.join("steer").join(task)
}

/// Leaves `text` in `mailbox`, whole or not at all (written aside, then renamed in).
pub fn post(mailbox: &Path, text: &str) -> std::io::Result<PathBuf> {
    // Named by the time, then by the order in this process: names sort as messages came.
    static SENT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    std::fs::create_dir_all(mailbox)?;
    let n = SENT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let at = jiff::Timestamp::now().as_millisecond();
    let name = format!("{at:015}-{n:06}-{}", std::process::id());
    let aside = mailbox.join(format!(".{name}.tmp"));
    std::fs::write(&aside, text)?;
    let path = mailbox.join(format!("{name}.msg"));
    std::fs::rename(&aside, &path)?;
    Ok(path)
}

/// The messages waiting in `mailbox`, oldest first, each taken: none if there is no mailbox.
/// A message another taker moved first is its, not this one's.
pub fn take(mailbox: &Path) -> Vec<String> {
    let mut waiting: Vec<PathBuf> = match std::fs::read_dir(mailbox) {
        Ok(entries) => entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "msg"))
            .collect(),
        Err(_) => return Vec::new(),
    };
    waiting.sort();
    let delivered = mailbox.join("delivered");
    if std::fs::create_dir_all(&delivered).is_err() {
        return Vec::new();
    }
    waiting
        .into_iter()
        .filter_map(|p| {
            let to = delivered.join(p.file_name()?);
            std::fs::rename(&p, &to).ok()?;
            std::fs::read_to_string(&to).ok()
        })
        .collect()
}

/// The mailbox an attempt's environment names, if it names one.
pub fn of_env(env: &[(String, String)]) -> Option<PathBuf> {
    env.iter()
        .find(|(k, _)| k == VAR)
        .map(|(_, v)| PathBuf::from(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_taken_once_oldest_first() {
        let dir = tempfile::tempdir().unwrap();
        let mailbox = mailbox(dir.path(), "t");
        assert!(take(&mailbox).is_empty());
        post(&mailbox, "first").unwrap();
        post(&mailbox, "second").unwrap();
        assert_eq!(take(&mailbox), ["first", "second"]);
        assert!(take(&mailbox).is_empty());
    }
}

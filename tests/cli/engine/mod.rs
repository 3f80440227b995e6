//! The engine: task files, read-only tasks, scheduling, failures, timeouts, resume, reports.
//! The helpers here serve every module below.

mod agent_tasks;
mod checkouts;
mod crashes;
mod failures;
mod interrupts;
mod scheduling;
mod spawning;
mod task_files;

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::TestRepo;

/// Writes a task file from JSON values (so paths and quotes need no hand-escaping).
fn task_file(repo: &TestRepo, tasks: &[Value]) -> PathBuf {
    let lines: Vec<String> = tasks.iter().map(Value::to_string).collect();
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    repo.tasks(&refs)
}

/// `path` as a shell word; the temp paths used here hold no quote characters.
fn sh(path: &Path) -> String {
    let s = path.display().to_string();
    assert!(!s.contains('\''), "unexpected quote in {s}");
    format!("'{s}'")
}

fn path_arg(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The status of one task in `swarm status --json` output.
fn task_field<'a>(status: &'a Value, id: &str, field: &str) -> &'a Value {
    status["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == id)
        .unwrap_or_else(|| panic!("no task {id} in {status:#}"))
        .get(field)
        .unwrap_or(&Value::Null)
}

fn task_status<'a>(status: &'a Value, id: &str) -> &'a str {
    task_field(status, id, "status").as_str().unwrap()
}

/// The run directories under `.git/swarm/runs`.
fn run_dirs(repo: &TestRepo) -> Vec<PathBuf> {
    match std::fs::read_dir(repo.swarm_dir().join("runs")) {
        Ok(entries) => entries.map(|e| e.unwrap().path()).collect(),
        Err(_) => Vec::new(),
    }
}

fn swarm_branches(repo: &TestRepo) -> String {
    repo.git(&["branch", "--list", "swarm/*"])
}

fn lines_of(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Whether a process exists and is not a zombie (a zombie has been killed, only not reaped).
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the parenthesised command name.
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z') && !rest.starts_with('X')),
        Err(_) => false,
    }
}

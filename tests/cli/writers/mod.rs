//! Writers: worktrees on their own branches, in-memory merges into the integration branch,
//! parking on conflicts, landing, resume after a crash, and `swarm gc`. Assertions compare
//! trees, branches, files and exit codes, not messages, where they can. The helpers here serve
//! every module below.

mod conflicts;
mod crashes;
mod failures;
mod forecast;
mod gc;
mod ladder;
mod landing;
mod merges;

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use crate::{TestRepo, run_id, status_json};

/// Each task of the newest run: id → its record as `status --json` shows it.
fn tasks_of(repo: &TestRepo) -> BTreeMap<String, Value> {
    status_json(repo)["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .map(|t| (t["id"].as_str().unwrap().to_owned(), t.clone()))
        .collect()
}

fn events(repo: &TestRepo, run: &str) -> Vec<Value> {
    let path = repo.swarm_dir().join("runs").join(run).join("events.jsonl");
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Local branches under `swarm/`.
pub(crate) fn swarm_branches(repo: &TestRepo) -> Vec<String> {
    repo.git(&[
        "for-each-ref",
        "--format=%(refname:short)",
        "refs/heads/swarm/",
    ])
    .lines()
    .map(str::to_owned)
    .collect()
}

/// Paths in a commit's tree.
fn tree_paths(repo: &TestRepo, rev: &str) -> Vec<String> {
    repo.git(&["ls-tree", "-r", "--name-only", rev])
        .lines()
        .map(str::to_owned)
        .collect()
}

fn show(repo: &TestRepo, rev: &str, path: &str) -> String {
    repo.git(&["show", &format!("{rev}:{path}")])
}

fn path_str(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Two writers start from the same tip and change the same line; `b` finishes later, so `a`
/// merges and `b` is parked. `after` depends on `b`.
fn run_with_a_conflict(repo: &TestRepo, extra: &[&str]) -> (std::process::Output, String) {
    let tasks = repo.tasks(&[
        r#"{"id":"a","run":"printf 'pub fn one() -> u32 {\n    2\n}\n' > src/lib.rs"}"#,
        &serde_json::json!({
            "id": "b",
            "run": format!(
                "{}; printf 'pub fn one() -> u32 {{\\n    3\\n}}\\n' > src/lib.rs",
                crate::after_event(repo, "merged", "a")
            ),
        })
        .to_string(),
        r#"{"id":"after","run":"echo after > after.txt","deps":["b"]}"#,
    ]);
    let mut args = vec!["run", path_str(&tasks), "-j", "2"];
    args.extend_from_slice(extra);
    let out = repo.swarm(&args);
    let run = run_id(repo);
    (out, run)
}

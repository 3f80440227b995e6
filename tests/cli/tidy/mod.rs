//! Runs a user can tidy: `swarm drop` of an unfinished run (its record, checkouts and branches
//! go, work no other branch has stays), and `swarm retry` of a parked or failed writer, in a run
//! that has not finished and in one that ended. Assertions look at the repository, its branches
//! and files and the board, not only at messages. The helpers here serve both modules.

mod drop;
mod retry;

use std::io::{BufReader, Read as _};
use std::path::Path;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::{Value, json};

use crate::fake_llm::{FakeLlm, Reply};
use crate::gate::Gate;
use crate::{TestRepo, assert_exit, outside, read_until, run_id};

/// `src/lib.rs` as writer `a` (2) or `b` (3) leaves it.
fn lib(n: u32) -> String {
    format!("pub fn one() -> u32 {{\n    {n}\n}}\n")
}

/// The shell words that write `src/lib.rs` as `lib(n)`.
fn write_lib(n: u32) -> String {
    format!("printf 'pub fn one() -> u32 {{\\n    {n}\\n}}\\n' > src/lib.rs")
}

/// `path` as a shell word; the temp paths used here hold no quote characters.
fn sh(path: &Path) -> String {
    let s = path.display().to_string();
    assert!(!s.contains('\''), "unexpected quote in {s}");
    format!("'{s}'")
}

/// Two writers that change the same line: `a` merges first, `b` (which waits for that merge,
/// unless the file `go` exists) is parked; `after` needs `b`. Then `more`.
fn conflicting(repo: &TestRepo, go: &Path, more: &[Value]) -> std::path::PathBuf {
    let b = format!(
        "[ -e {} ] || {{ {}; }}; {}",
        sh(go),
        crate::after_event(repo, "merged", "a"),
        write_lib(3)
    );
    let mut tasks = vec![
        json!({"id": "a", "run": write_lib(2)}),
        json!({"id": "b", "run": b}),
        json!({"id": "after", "run": "echo after > after.txt", "deps": ["b"]}),
    ];
    tasks.extend_from_slice(more);
    let lines: Vec<String> = tasks.iter().map(Value::to_string).collect();
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    repo.tasks(&refs)
}

/// A run interrupted (Ctrl-C) once `a` was merged and `b` parked, while the reader `slow` still
/// ran; `after` was skipped. Returns its id.
fn interrupted_with_a_parked_writer(repo: &TestRepo) -> String {
    let gate = Gate::new(&outside(repo, "gates"), "slow");
    let slow =
        json!({"id": "slow", "run": format!("{}; echo slow", gate.shell_once()), "mode": "read"});
    let tasks = conflicting(repo, &outside(repo, "go"), &[slow]);
    let mut child = repo.spawn(&["run", tasks.to_str().unwrap(), "-j", "3"]);
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    gate.reached(&mut child);
    read_until(&mut stderr, "Parked b");
    kill(Pid::from_raw(child.id() as i32), Signal::SIGINT).unwrap();
    let mut said = String::new();
    stderr.read_to_string(&mut said).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_exit(&out, 75);
    run_id(repo)
}

/// `swarm runs --json`.
fn runs_json(repo: &TestRepo) -> Vec<Value> {
    let out = repo.swarm(&["runs", "--json"]);
    assert_exit(&out, 0);
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Local branches under `swarm/`, with their commits.
fn swarm_branches(repo: &TestRepo) -> Vec<(String, String)> {
    repo.git(&[
        "for-each-ref",
        "--format=%(refname:short) %(objectname)",
        "refs/heads/swarm/",
    ])
    .lines()
    .filter_map(|l| l.split_once(' '))
    .map(|(name, commit)| (name.to_owned(), commit.to_owned()))
    .collect()
}

/// A model server that refuses every key (HTTP 401).
fn refusing_server() -> FakeLlm {
    FakeLlm::start(|_, _| Reply::error(401, "invalid api key"))
}

/// `swarm ARGS` with `llm` as its model endpoint.
fn with_model(repo: &TestRepo, llm: &FakeLlm, args: &[&str]) -> std::process::Output {
    repo.swarm_cmd()
        .env("SWARM_API_BASE", llm.base_url())
        .env("SWARM_API_KEY", "sk-wrong-key-0123")
        .args(args)
        .output()
        .unwrap()
}

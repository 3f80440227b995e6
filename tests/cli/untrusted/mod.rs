//! Writers are untrusted: `run` writers stand in for agents that commit, reset, stash, check
//! out, rewrite config and refs, change file types and write what they should not. Each test
//! checks what the user's repository looks like afterwards: its branch, its refs, stash,
//! config and hooks, what landed and what was kept. The helpers here serve every module below.

mod contents;
mod git_dir;
mod guarded_files;
mod history;

use std::collections::BTreeMap;

use serde_json::Value;

use crate::{TestRepo, status_json};

fn task(repo: &TestRepo, id: &str) -> Value {
    status_json(repo)["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .find(|t| t["id"] == id)
        .cloned()
        .unwrap_or_else(|| panic!("no task {id}"))
}

fn run_tasks(repo: &TestRepo, lines: &[&str], extra: &[&str]) -> std::process::Output {
    let tasks = repo.tasks(lines);
    let mut args = vec!["run", tasks.to_str().unwrap()];
    args.extend_from_slice(extra);
    repo.swarm(&args)
}

/// Runs one writer per script, `t0`, `t1`, …
fn run_scripts(repo: &TestRepo, scripts: &[&str], extra: &[&str]) -> std::process::Output {
    let lines: Vec<String> = scripts
        .iter()
        .enumerate()
        .map(|(n, s)| serde_json::json!({ "id": format!("t{n}"), "run": s }).to_string())
        .collect();
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    run_tasks(repo, &lines, extra)
}

/// Everything of the user's repository that no agent may change: every ref outside swarm's
/// own namespace (with what it points at), the stash and its log, the config and the hooks.
/// `Landed` leaves out `main`, which a landing fast-forwards.
fn untouchable(repo: &TestRepo, main: Main) -> BTreeMap<String, Vec<u8>> {
    let git = repo.root.join(".git");
    let mut out = BTreeMap::new();
    let refs: Vec<String> = repo
        .git(&["for-each-ref", "--format=%(refname) %(objectname)"])
        .lines()
        .filter(|l| !l.starts_with("refs/heads/swarm/"))
        .filter(|l| main == Main::Same || !l.starts_with("refs/heads/main "))
        .map(str::to_owned)
        .collect();
    let refs = refs.join("\n");
    out.insert("refs".to_owned(), refs.into_bytes());
    out.insert(
        "stash list".to_owned(),
        repo.git(&["stash", "list"]).into_bytes(),
    );
    for file in ["config", "HEAD", "logs/refs/stash", "packed-refs"] {
        out.insert(
            file.to_owned(),
            std::fs::read(git.join(file)).unwrap_or_default(),
        );
    }
    for entry in std::fs::read_dir(git.join("hooks")).unwrap() {
        let path = entry.unwrap().path();
        let name = format!("hooks/{}", path.file_name().unwrap().to_string_lossy());
        out.insert(name, std::fs::read(&path).unwrap());
    }
    out
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Main {
    Same,
    Landed,
}

/// `git -c` identity for agents' own commits (they run with a cleared git environment).
const AGENT_GIT: &str = "git -c user.name=Agent -c user.email=agent@example.com";

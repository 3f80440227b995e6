//! `swarm gc`: the checkouts of finished tasks and the files killed runs left behind go; a
//! branch with unmerged commits is never deleted.

use std::fmt::Write as _;

use anyhow::Context as _;
use serde_json::{Value, json};

use super::context::{Globals, open_board, open_repo};
use super::layout::{Lock, deps_root};
use crate::error::{Usage, exit};
use crate::store::Board;
use crate::ui;

/// One thing `gc` (or `drop`) does, or would do with `--dry-run` (or before the question).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Cleaning {
    RemoveWorktree(std::path::PathBuf),
    Remove(std::path::PathBuf),
    DeleteBranch {
        branch: String,
        why: String,
    },
    KeepBranch {
        branch: String,
        why: &'static str,
    },
    /// The refs a run spread over machines left on the remote (`refs/swarm/<run>/`).
    DeleteRemoteRefs {
        run: String,
        refs: usize,
    },
    KeepRemoteRun {
        run: String,
    },
    /// A process a killed run's tasks left running (`pid command`), stopped.
    StopProcess(String),
    /// A run taken out of the board: its record, tasks, attempts, merges, events and goals.
    ForgetRun {
        run: String,
        tasks: usize,
    },
    /// A goal of the queue a dropped run had taken, waiting in the queue again.
    Requeue {
        goal: i64,
    },
}

impl Cleaning {
    pub(super) fn line(&self) -> String {
        match self {
            Self::RemoveWorktree(path) => format!("remove worktree {}", path.display()),
            Self::Remove(path) => format!("remove {}", path.display()),
            Self::DeleteBranch { branch, why } => format!("delete branch {branch} ({why})"),
            Self::KeepBranch { branch, why } => format!("keep branch {branch} ({why})"),
            Self::DeleteRemoteRefs { run, refs } => {
                format!("delete {refs} ref(s) of ended run {run} on the remote")
            }
            Self::KeepRemoteRun { run } => {
                format!("keep the refs of run {run} on the remote (it has not ended)")
            }
            Self::StopProcess(process) => format!("stop process {process}"),
            Self::ForgetRun { run, tasks } => format!(
                "forget run {run} in the board ({}, their attempts and events)",
                ui::count(*tasks, "task", "tasks")
            ),
            Self::Requeue { goal } => format!("put goal {goal} back in the queue"),
        }
    }

    pub(super) fn to_json(&self, dry_run: bool) -> Value {
        match self {
            Self::RemoveWorktree(path) => {
                json!({ "action": "remove-worktree", "path": path, "done": !dry_run })
            }
            Self::Remove(path) => json!({ "action": "remove", "path": path, "done": !dry_run }),
            Self::DeleteBranch { branch, why } => json!({
                "action": "delete-branch",
                "branch": branch,
                "reason": why,
                "done": !dry_run,
            }),
            Self::KeepBranch { branch, why } => json!({
                "action": "keep-branch",
                "branch": branch,
                "reason": why,
                "done": false,
            }),
            Self::DeleteRemoteRefs { run, refs } => json!({
                "action": "delete-remote-refs",
                "run": run,
                "refs": refs,
                "reason": "ended",
                "done": !dry_run,
            }),
            Self::KeepRemoteRun { run } => json!({
                "action": "keep-remote-run",
                "run": run,
                "reason": "not ended",
                "done": false,
            }),
            Self::StopProcess(process) => json!({
                "action": "stop-process",
                "process": process,
                "done": !dry_run,
            }),
            Self::ForgetRun { run, tasks } => json!({
                "action": "forget-run",
                "run": run,
                "tasks": tasks,
                "done": !dry_run,
            }),
            Self::Requeue { goal } => json!({
                "action": "requeue",
                "goal": goal,
                "done": !dry_run,
            }),
        }
    }
}

/// Why a branch with commits no other branch has is kept.
pub(super) const UNMERGED: &str = "has commits no other branch has";

pub(super) fn gc(g: &Globals, dry_run: bool, remote: Option<&str>) -> anyhow::Result<u8> {
    let repo = open_repo(g)?;
    let _lock = Lock::acquire(&repo, "gc")?;
    let mut actions = Vec::new();
    if let Some(remote) = remote {
        remote_refs(&repo, remote, dry_run, &mut actions)?;
    }
    // Linked worktrees, as swarm made them before each task had a repository of its own.
    for (name, path) in repo.worktrees_with_prefix("swarm-")? {
        if !dry_run {
            repo.remove_worktree(&name, &path)?;
        }
        actions.push(Cleaning::RemoveWorktree(path));
    }
    let board = open_board(&repo)?;
    for run in board.run_ids()? {
        run_leftovers(&board, &run, dry_run, &mut actions)?;
    }
    // A branch swarm made goes only when another branch holds every commit of it; one swarm
    // did not make (a name of the user's under `swarm/`) is never touched.
    let mut made = Vec::new();
    for run in board.run_ids()? {
        let tasks: Vec<String> = board.load_tasks(&run)?.into_iter().map(|t| t.id).collect();
        made.push((run, tasks));
    }
    let branches = repo.branches_with_prefix("")?;
    for (name, tip) in repo.branches_with_prefix("swarm/")? {
        let ours = made.iter().any(|(run, tasks)| {
            let tasks: Vec<&str> = tasks.iter().map(String::as_str).collect();
            crate::schedule::made_by_run(&name, run, &tasks)
        });
        if !ours {
            actions.push(Cleaning::KeepBranch {
                branch: name,
                why: "not swarm's",
            });
            continue;
        }
        let held = branches
            .iter()
            .filter(|(other, _)| *other != name && !other.starts_with(&format!("{name}-")))
            .try_fold(false, |found, (_, other_tip)| {
                anyhow::Ok(found || repo.contains(other_tip, &tip)?)
            })?;
        if held {
            if !dry_run {
                repo.delete_branch_at(&name, &tip)?;
            }
            actions.push(Cleaning::DeleteBranch {
                branch: name,
                why: "merged".to_owned(),
            });
        } else {
            actions.push(Cleaning::KeepBranch {
                branch: name,
                why: UNMERGED,
            });
        }
    }
    if g.json {
        let actions: Vec<Value> = actions.iter().map(|a| a.to_json(dry_run)).collect();
        ui::out(&serde_json::to_string_pretty(
            &json!({ "dry_run": dry_run, "actions": actions }),
        )?)?;
        return Ok(exit::OK);
    }
    let verb = if dry_run { "would " } else { "" };
    let mut out = String::new();
    for a in &actions {
        let _ = writeln!(out, "{verb}{}", a.line());
    }
    if actions.is_empty() {
        out.push_str("nothing to clean\n");
    }
    ui::out(&out)?;
    Ok(exit::OK)
}

/// What run `run` left on the machine: its task checkouts (the directory its run directory
/// names) and the deps' files of a run that was killed and never resumed (a run removes its
/// own). Each is removed, unless `dry_run`, and listed in `actions`.
pub(super) fn run_leftovers(
    board: &Board,
    run: &str,
    dry_run: bool,
    actions: &mut Vec<Cleaning>,
) -> anyhow::Result<()> {
    let named = board.run_dir(run).join(crate::schedule::CHECKOUTS_FILE);
    if let Ok(bytes) = std::fs::read(&named) {
        use std::os::unix::ffi::OsStringExt as _;
        let dir = std::path::PathBuf::from(std::ffi::OsString::from_vec(bytes));
        if dir.is_dir() {
            for entry in std::fs::read_dir(&dir)? {
                let path = entry?.path();
                // The writers' files, each of which goes with its task's name.
                if path.file_name() == Some(std::ffi::OsStr::new(crate::git::PLACES)) {
                    continue;
                }
                if !dry_run {
                    crate::git::remove_checkout(&path)?;
                }
                actions.push(Cleaning::RemoveWorktree(path));
            }
            if !dry_run {
                crate::git::remove_checkout(&dir)?;
            }
        }
    }
    let deps = deps_root(&board.run_dir(run), run);
    if deps.exists() {
        if !dry_run {
            std::fs::remove_dir_all(&deps)
                .with_context(|| format!("could not remove {}", deps.display()))?;
        }
        actions.push(Cleaning::Remove(deps));
    }
    Ok(())
}

/// The refs of runs spread over machines that ended (or whose record is gone) go from the
/// remote: what a coordinator kept for failed and parked tasks, or could not remove.
fn remote_refs(
    repo: &crate::git::Repo,
    remote: &str,
    dry_run: bool,
    actions: &mut Vec<Cleaning>,
) -> anyhow::Result<()> {
    use crate::remote::{Expect, Pushed, RunInfo, Transport, Update};
    let transport = Transport::new(repo.workdir(), remote);
    let refs = transport.fetch("refs/swarm/").map_err(|e| {
        anyhow::Error::new(Usage::new(format!(
            "the remote {remote} does not answer: {}",
            e.0
        )))
    })?;
    let mut runs: std::collections::BTreeMap<&str, Vec<(&String, &crate::git::CommitId)>> =
        std::collections::BTreeMap::new();
    for (name, oid) in &refs {
        if let Some((run, _)) = name.split_once('/') {
            runs.entry(run).or_default().push((name, oid));
        }
    }
    for (run, names) in runs {
        let ended = names
            .iter()
            .find(|(name, _)| name.ends_with("/run") && name.matches('/').count() == 1)
            .is_none_or(|(_, oid)| {
                crate::remote::read::<RunInfo>(repo, oid).is_ok_and(|info| info.ended)
            });
        if !ended {
            actions.push(Cleaning::KeepRemoteRun {
                run: run.to_owned(),
            });
            continue;
        }
        if !dry_run {
            let updates: Vec<Update> = names
                .iter()
                .map(|(name, oid)| Update {
                    name: format!("refs/swarm/{name}"),
                    to: None,
                    expect: Expect::Is((*oid).clone()),
                })
                .collect();
            match transport.push(&updates) {
                Ok(Pushed::Done) => {}
                Ok(Pushed::Refused(why)) => {
                    anyhow::bail!(
                        "the remote {remote} changed the refs of run {run} meanwhile ({why}); nothing of it was deleted"
                    )
                }
                Err(e) => anyhow::bail!(Usage::new(format!(
                    "the remote {remote} did not take the deletion: {}",
                    e.0
                ))),
            }
        }
        actions.push(Cleaning::DeleteRemoteRefs {
            run: run.to_owned(),
            refs: names.len(),
        });
    }
    Ok(())
}

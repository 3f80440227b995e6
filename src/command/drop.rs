//! `swarm drop`: an unfinished run the user gives up on goes: the processes its tasks left,
//! its checkouts, the branches whose commits something else holds, its directory and its
//! record in the board; the queue's goals it took go back to the queue. A branch holding work
//! nowhere else is kept and named: dropping never loses a commit.

use std::fmt::Write as _;

use anyhow::bail;
use serde_json::json;

use super::context::{Globals, open_board, open_repo, refuse_when_nested};
use super::gc::{Cleaning, UNMERGED, run_leftovers};
use super::layout::Lock;
use crate::error::{Usage, exit};
use crate::git::{CommitId, Repo};
use crate::preview::{Answer, Terminal as _};
use crate::store::{Board, RunRecord, RunStatus};
use crate::ui::{self, Verb};

/// The exit code of a question answered with Ctrl-C: a shell's for a command it interrupted.
const INTERRUPTED: u8 = 130;

/// How long a stray process of the run gets between SIGTERM and SIGKILL.
const KILL_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

pub(super) fn drop_run(g: &Globals, run: Option<&str>, yes: bool) -> anyhow::Result<u8> {
    if let Some(code) = refuse_when_nested(g) {
        return Ok(code);
    }
    let repo = open_repo(g)?;
    let mut board = open_board(&repo)?;
    let run_id = match run {
        Some(r) => r.to_owned(),
        None => board.latest_run(true)?.ok_or_else(|| {
            Usage::new("there is no unfinished run to drop")
                .hint("`swarm gc` removes what finished runs left behind")
        })?,
    };
    // Held until the run is gone: no swarm takes it up meanwhile.
    let _lock = Lock::acquire(&repo, &format!("{run_id} (being dropped)"))?;
    let record = board.load_run(&run_id)?.ok_or_else(|| {
        Usage::new(format!("no run {run_id:?} in this repository"))
            .hint("`swarm runs` lists the runs of this repository")
    })?;
    refuse(&board, &record)?;
    let asking = !yes && crate::preview::interactive();
    if !yes && !asking {
        bail!(
            Usage::new(format!(
                "dropping run {run_id} deletes it; off a terminal swarm does that only with --yes"
            ))
            .hint(format!("swarm drop {run_id} --yes"))
        );
    }
    let dropping = Dropping::gather(&repo, &board, &run_id)?;
    let planned = dropping.planned(&board)?;
    if asking {
        // This swarm holds the lock now: a run on record as running is one whose process went.
        let state = super::inspect::RunState::of(&run_id, record.status, None);
        let question = format!(
            "Drop run {run_id} ({}, {})? [y/N] ",
            state.as_str(),
            ui::count(dropping.tasks, "task", "tasks")
        );
        let answer = ask(&planned, &question)?;
        if answer != Confirmed::Yes {
            if g.json {
                let actions: Vec<_> = planned.iter().map(|a| a.to_json(true)).collect();
                ui::out(&serde_json::to_string_pretty(
                    &json!({ "run": run_id, "dropped": false, "actions": actions }),
                )?)?;
            }
            ui::say(
                false,
                Verb::Kept,
                &format!("run {run_id}; nothing was dropped"),
            );
            return Ok(if answer == Confirmed::Interrupted {
                INTERRUPTED
            } else {
                exit::OK
            });
        }
    }
    let done = dropping.carry_out(&repo, &mut board)?;
    if g.json {
        let actions: Vec<_> = done.iter().map(|a| a.to_json(false)).collect();
        ui::out(&serde_json::to_string_pretty(
            &json!({ "run": run_id, "dropped": true, "actions": actions }),
        )?)?;
    } else {
        ui::out(&said(&run_id, &done))?;
    }
    Ok(exit::OK)
}

/// A run about to be dropped, and what goes with it.
struct Dropping {
    run: String,
    /// How many tasks it has.
    tasks: usize,
    /// Processes its tasks left running.
    strays: Vec<crate::agent::stray::Stray>,
    branches: Vec<Branch>,
    /// The queue's goals it took.
    requeued: Vec<i64>,
}

impl Dropping {
    fn gather(repo: &Repo, board: &Board, run: &str) -> anyhow::Result<Self> {
        let tasks = board.load_tasks(run)?;
        let task_ids: Vec<&str> = tasks.iter().map(|t| t.id.as_str()).collect();
        let requeued = board
            .queue()
            .items()?
            .into_iter()
            .filter(|item| item.run_id.as_deref() == Some(run))
            .map(|item| item.id)
            .collect();
        Ok(Self {
            run: run.to_owned(),
            tasks: tasks.len(),
            strays: crate::agent::stray::find(run),
            branches: judge_branches(repo, run, &task_ids)?,
            requeued,
        })
    }

    /// What dropping does, in order, before anything is done.
    fn planned(&self, board: &Board) -> anyhow::Result<Vec<Cleaning>> {
        let mut planned: Vec<Cleaning> = self.stopped();
        run_leftovers(board, &self.run, true, &mut planned)?;
        planned.extend(self.branches.iter().map(Branch::cleaning));
        planned.push(Cleaning::Remove(board.run_dir(&self.run)));
        planned.push(Cleaning::ForgetRun {
            run: self.run.clone(),
            tasks: self.tasks,
        });
        planned.extend(self.requeued.iter().map(|&goal| Cleaning::Requeue { goal }));
        Ok(planned)
    }

    fn stopped(&self) -> Vec<Cleaning> {
        self.strays
            .iter()
            .map(|s| Cleaning::StopProcess(format!("{} {}", s.pid, s.command)))
            .collect()
    }

    /// Drops the run, in the order that leaves one a second `swarm drop` can finish whatever
    /// stops this one: its processes, its checkouts, its branches, its directory, and last
    /// its record. Returns what was done.
    fn carry_out(self, repo: &Repo, board: &mut Board) -> anyhow::Result<Vec<Cleaning>> {
        if !self.strays.is_empty() {
            crate::agent::stray::stop(&self.strays, KILL_GRACE);
        }
        let mut done = self.stopped();
        run_leftovers(board, &self.run, false, &mut done)?;
        for b in &self.branches {
            done.push(b.carry_out(repo)?);
        }
        let dir = board.run_dir(&self.run);
        match std::fs::remove_dir_all(&dir) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(
                    anyhow::Error::new(e).context(format!("could not remove {}", dir.display()))
                );
            }
            _ => done.push(Cleaning::Remove(dir)),
        }
        let dropped = board.drop_run(&self.run)?;
        done.push(Cleaning::ForgetRun {
            run: self.run.clone(),
            tasks: dropped.tasks,
        });
        done.extend(
            dropped
                .requeued
                .iter()
                .map(|&goal| Cleaning::Requeue { goal }),
        );
        Ok(done)
    }
}

/// What was done, as text: a line each, the run dropped, and what to do with the branches kept.
fn said(run: &str, done: &[Cleaning]) -> String {
    let mut out = String::new();
    for a in done {
        let _ = writeln!(out, "{}", a.line());
    }
    let tasks = done.iter().find_map(|a| match a {
        Cleaning::ForgetRun { tasks, .. } => Some(*tasks),
        _ => None,
    });
    let _ = writeln!(
        out,
        "dropped run {run} ({})",
        ui::count(tasks.unwrap_or_default(), "task", "tasks")
    );
    let kept: Vec<&str> = done
        .iter()
        .filter_map(|a| match a {
            Cleaning::KeepBranch { branch, .. } => Some(branch.as_str()),
            _ => None,
        })
        .collect();
    if let [first, ..] = kept.as_slice() {
        let _ = writeln!(
            out,
            "kept {} with work no other branch has, listed above: `git log {first}` shows what one holds, `git branch -D {first}` deletes it once it is no longer wanted",
            ui::count(kept.len(), "branch", "branches"),
        );
    }
    out
}

/// Refuses what is not for `drop`: a finished run (nothing to drop), and one whose landing on
/// the user's branch was cut short (`swarm resume` finishes it first).
fn refuse(board: &Board, record: &RunRecord) -> anyhow::Result<()> {
    let run = &record.id;
    if record.status == RunStatus::Finished {
        bail!(
            Usage::new(format!(
                "run {run} finished (exit code {}); there is nothing to drop",
                record.exit_code.unwrap_or_default()
            ))
            .hint("`swarm gc` removes the checkouts finished runs left and the branches another branch holds")
        );
    }
    if board.run_dir(run).join("landing").exists() {
        bail!(
            Usage::new(format!(
                "run {run} stopped while it was landing on your branch; dropping it now would leave your checkout half landed"
            ))
            .hint(format!("`swarm resume {run}` finishes the landing"))
        );
    }
    Ok(())
}

/// A branch of the run and what becomes of it.
struct Branch {
    name: String,
    tip: CommitId,
    /// What holds all of its commits, when something does: it may go.
    held_by: Option<String>,
}

impl Branch {
    fn cleaning(&self) -> Cleaning {
        match &self.held_by {
            Some(holder) => Cleaning::DeleteBranch {
                branch: self.name.clone(),
                why: format!("{holder} holds its commits"),
            },
            None => Cleaning::KeepBranch {
                branch: self.name.clone(),
                why: UNMERGED,
            },
        }
    }

    /// Deletes the branch if something holds it and it is still where it was read.
    fn carry_out(&self, repo: &Repo) -> anyhow::Result<Cleaning> {
        if self.held_by.is_some() && !repo.delete_branch_at(&self.name, &self.tip)? {
            return Ok(Cleaning::KeepBranch {
                branch: self.name.clone(),
                why: "checked out, or moved since it was read",
            });
        }
        Ok(self.cleaning())
    }
}

/// The run's branches (`swarm/<run>`, `swarm/<run>-<task>`, their kept attempts), each with
/// what holds its commits: a branch that is not the run's, the checkout's HEAD, or the run's
/// integration branch when that one is kept. The run's other branches never vouch for each
/// other, so two that hold the same commits are never both deleted.
fn judge_branches(repo: &Repo, run: &str, tasks: &[&str]) -> anyhow::Result<Vec<Branch>> {
    let (ours, others): (Vec<_>, Vec<_>) = repo
        .branches_with_prefix("")?
        .into_iter()
        .partition(|(name, _)| crate::schedule::made_by_run(name, run, tasks));
    let head = repo.resolve("HEAD").ok();
    let holder = |tip: &CommitId| -> anyhow::Result<Option<String>> {
        for (name, other) in &others {
            if repo.contains(other, tip)? {
                return Ok(Some(name.clone()));
            }
        }
        if let Some(head) = &head
            && repo.contains(head, tip)?
        {
            return Ok(Some("HEAD".to_owned()));
        }
        Ok(None)
    };
    let integration = format!("swarm/{run}");
    let kept_integration = match ours.iter().find(|(name, _)| *name == integration) {
        Some((_, tip)) if holder(tip)?.is_none() => Some(tip.clone()),
        _ => None,
    };
    let mut out = Vec::with_capacity(ours.len());
    for (name, tip) in ours {
        let mut held_by = holder(&tip)?;
        if held_by.is_none()
            && name != integration
            && let Some(kept) = &kept_integration
            && repo.contains(kept, &tip)?
        {
            held_by = Some(integration.clone());
        }
        out.push(Branch { name, tip, held_by });
    }
    // The integration branch first, then the others by name.
    out.sort_by_key(|b| (b.name != integration, b.name.clone()));
    Ok(out)
}

/// The user's answer to the question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Confirmed {
    Yes,
    No,
    Interrupted,
}

/// Shows what dropping does, on the terminal, and asks `question`: `y` drops; Enter, `n`, the
/// end of the input and anything else keep the run; Ctrl-C too.
fn ask(planned: &[Cleaning], question: &str) -> anyhow::Result<Confirmed> {
    let mut terminal = crate::preview::Tty::new();
    let mut shown = String::new();
    for a in planned {
        let _ = writeln!(shown, "  {}", a.line());
    }
    terminal.show(&shown)?;
    terminal.show(question)?;
    Ok(match terminal.answer() {
        Answer::Line(line) => match line.trim().to_ascii_lowercase().as_str() {
            "y" | "yes" => Confirmed::Yes,
            _ => Confirmed::No,
        },
        Answer::End => {
            terminal.show("\n")?;
            Confirmed::No
        }
        Answer::Interrupted => {
            terminal.show("\n")?;
            Confirmed::Interrupted
        }
    })
}

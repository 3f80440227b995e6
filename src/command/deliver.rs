//! A finished run's result delivered as change requests (`--deliver pr`, `pr-per-task`,
//! `stack`): what delivery needs gathered from the run (its merged writers from the log, the
//! writers each builds on from the plan, titles and descriptions), carried out by `deliver`,
//! and what it did as the run's landing, its pull requests and its records.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::config::Options;
use crate::deliver::{self, Dress, Job, Merged, Stop, Why};
use crate::error::exit;
use crate::git::{CommitId, Repo};
use crate::plan::{Action, Plan};
use crate::report::{Landing, LandingAction, PullRequest};
use crate::schedule::Layout;
use crate::store::{Board, Delivery, Event, Logged, RunEvent, RunRecord, TaskRecord, TaskStatus};

/// What delivery came to: the landing the summary says, the requests, and the exit code when
/// it stopped (75 for the environment, 2 for what the user must change).
pub(super) struct Outcome {
    pub(super) landing: Landing,
    pub(super) pull_requests: Vec<PullRequest>,
    pub(super) stopped: Option<u8>,
}

/// The run's pieces delivery reads.
pub(super) struct Run<'a> {
    pub(super) repo: &'a Repo,
    pub(super) layout: &'a Layout,
    pub(super) options: &'a Options,
    pub(super) plan: &'a Plan,
    pub(super) record: &'a RunRecord,
    pub(super) tasks: &'a [TaskRecord],
    pub(super) events: &'a [Logged],
    /// The goals' texts, when the run had goals.
    pub(super) goals: Vec<&'a str>,
    pub(super) tip: &'a CommitId,
}

/// Delivers the finished run `run`, its report `report` the whole run's description; records
/// each request in the board as it is made.
pub(super) fn deliver(board: &mut Board, run: &Run<'_>, report: &str) -> anyhow::Result<Outcome> {
    let layout = run.layout;
    let integration = layout.integration_ref.trim_start_matches("refs/heads/");
    let resume = format!("swarm resume {}", layout.run);
    let stopped = |why: &str, code: u8, pull_requests: Vec<PullRequest>| {
        let then = if code == exit::RESUMABLE {
            format!("`{resume}` tries again")
        } else {
            format!("once that is fixed, `{resume}` delivers it")
        };
        Outcome {
            landing: Landing {
                action: LandingAction::Stopped,
                branch: Some(integration.to_owned()),
                commit: Some(run.tip.to_string()),
                reason: Some(why.to_owned()),
                command: Some(resume.clone()),
                message: Some(format!(
                    "Not delivered: {why}. The merged work is on `{integration}`; {then}."
                )),
            },
            pull_requests,
            stopped: Some(code),
        }
    };
    let target = match deliver::target(run.repo, run.options, &|n| std::env::var(n).ok()) {
        Ok(target) => target,
        Err(e) => {
            let why = format!("{e:#}");
            record_stop(board, &layout.run, &why, false)?;
            return Ok(stopped(&why, exit::USAGE, Vec::new()));
        }
    };
    let title = run_title(run.record, &run.goals);
    let name = name_of(run.options, run.record, &run.goals);
    let job = Job {
        repo: run.repo,
        target: &target,
        run: &layout.run,
        mode: run.options.deliver.unwrap_or(crate::config::Deliver::Land),
        base: layout.base.clone(),
        tip: run.tip.clone(),
        name,
        merged: merged_writers(run),
        title,
        dress: Dress {
            title: run
                .options
                .pr_title
                .clone()
                .unwrap_or_else(|| crate::config::Defaults::pr_title().to_owned()),
            draft: run.options.pr_draft,
            labels: run.options.pr_labels.clone(),
            reviewers: run.options.pr_reviewers.clone(),
        },
    };
    let body = |task: Option<&str>| match task {
        None => report.to_owned(),
        Some(task) => task_body(run, task),
    };
    let mut record = |d: &deliver::Delivered| -> anyhow::Result<()> {
        let event = RunEvent::Delivered(shown(d).delivery);
        match &d.task {
            Some(task) => board.event(&layout.run, &Event::task(task, event)),
            None => board.event(&layout.run, &Event::run(event)),
        }
    };
    match deliver::deliver(&job, &body, &mut record) {
        Ok(done) => {
            let pull_requests: Vec<PullRequest> = done.delivered.iter().map(shown).collect();
            let mut message = format!(
                "Delivered as {} into `{}` on {}:",
                match pull_requests.len() {
                    1 => "a pull request".to_owned(),
                    n => format!("{n} pull requests"),
                },
                target.base_branch,
                target.transport.remote()
            );
            for pr in &pull_requests {
                let d = &pr.delivery;
                let _ = write!(message, " #{} {}", d.number, d.url);
                if !matches!(d.outcome.as_str(), "opened" | "updated" | "unchanged") {
                    let _ = write!(message, " ({})", d.outcome);
                }
                message.push(',');
            }
            message.pop();
            message.push('.');
            if let Some(whole) = in_whole(&done.in_whole) {
                message.push(' ');
                message.push_str(&whole);
            }
            Ok(Outcome {
                landing: Landing {
                    action: LandingAction::Delivered,
                    branch: Some(integration.to_owned()),
                    commit: Some(run.tip.to_string()),
                    reason: None,
                    command: None,
                    message: Some(message),
                },
                pull_requests,
                stopped: None,
            })
        }
        Err((done, stop)) => {
            let environment = matches!(stop, Stop::Environment(_));
            record_stop(board, &layout.run, stop.why(), environment)?;
            let code = if environment {
                exit::RESUMABLE
            } else {
                exit::USAGE
            };
            Ok(stopped(
                stop.why(),
                code,
                done.delivered.iter().map(shown).collect(),
            ))
        }
    }
}

fn record_stop(board: &mut Board, run: &str, why: &str, environment: bool) -> anyhow::Result<()> {
    board.event(
        run,
        &Event::run(RunEvent::DeliveryStopped {
            why: why.to_owned(),
            environment,
        }),
    )
}

/// A request delivered, as its record and the summary and the report show it.
fn shown(d: &deliver::Delivered) -> PullRequest {
    PullRequest {
        task: d.task.clone(),
        delivery: Delivery {
            number: d.number,
            url: d.url.clone(),
            head: d.head.clone(),
            base: d.base.clone(),
            commit: d.commit.to_string(),
            outcome: d.outcome.as_str().to_owned(),
        },
    }
}

/// The pull requests a run's log records, the newest of each (the whole run's, a task's).
pub(super) fn recorded(events: &[Logged]) -> Vec<PullRequest> {
    let mut out: Vec<PullRequest> = Vec::new();
    for e in events {
        if let RunEvent::Delivered(delivery) = &e.event {
            out.retain(|p| p.task != e.task);
            out.push(PullRequest {
                task: e.task.clone(),
                delivery: delivery.clone(),
            });
        }
    }
    out
}

/// The sentence on the writers in the whole run's request, when there are any.
fn in_whole(writers: &[(String, Why)]) -> Option<String> {
    if writers.is_empty() {
        return None;
    }
    let each: Vec<String> = writers
        .iter()
        .map(|(task, why)| match why {
            Why::BuildsOn(on) => format!("{task} (it builds on {})", on.join(" and ")),
            Why::AfterWhole(on) => format!("{task} (it builds on {on}, which is there)"),
            Why::DoesNotApply => format!("{task} (its change does not apply alone)"),
        })
        .collect();
    Some(format!(
        "In the pull request of the run's result, not one of their own: {}.",
        each.join(", ")
    ))
}

/// The run's goal: its first goal's text, or a single goal's as its source names it.
fn goal_of<'r>(record: &'r RunRecord, goals: &[&'r str]) -> Option<&'r str> {
    goals
        .first()
        .copied()
        .or_else(|| record.source.strip_prefix("goal: "))
}

/// What names the run: its goal, or its task file's name without the extension.
fn run_words(record: &RunRecord, goals: &[&str]) -> String {
    match goal_of(record, goals) {
        Some(goal) => goal.to_owned(),
        None => std::path::Path::new(&record.source)
            .file_stem()
            .map_or_else(
                || record.source.clone(),
                |s| s.to_string_lossy().into_owned(),
            ),
    }
}

/// The run's title: its goal (the first, with how many more), or `swarm: ` and its task file's
/// name.
fn run_title(record: &RunRecord, goals: &[&str]) -> String {
    let first_line = goal_of(record, goals).map(|g| g.lines().next().unwrap_or_default().trim());
    match (first_line, goals.len()) {
        (None, _) => format!("swarm: {}", run_words(record, goals)),
        (Some(goal), 0 | 1) => cut(goal),
        (Some(goal), n) => cut(&format!("{goal} (and {} more goals)", n - 1)),
    }
}

/// The name of the run's branch on the remote: `pr-branch`, else made of the run's words.
fn name_of(options: &Options, record: &RunRecord, goals: &[&str]) -> String {
    options
        .pr_branch
        .clone()
        .unwrap_or_else(|| deliver::default_name(&run_words(record, goals)))
}

/// Where a run that opens pull requests delivers, for the `--on-escalate` hook's JSON
/// (`deliver`): the mode, the remote, the branch its requests go into, the run's branch there
/// (a task's is it, `-` and the task's id), and the pull requests recorded so far (a resumed
/// run's); `None` for a run that opens none.
pub(super) fn note(
    options: &Options,
    record: &RunRecord,
    goals: &[&str],
    base_branch: Option<&str>,
    events: &[Logged],
) -> Option<serde_json::Value> {
    if !deliver::opens_requests(options.deliver) {
        return None;
    }
    Some(serde_json::json!({
        "mode": options.deliver.map(crate::config::Choice::word),
        "remote": options
            .deliver_remote
            .clone()
            .unwrap_or_else(|| crate::config::Defaults::deliver_remote().to_owned()),
        "base": base_branch,
        "branch": name_of(options, record, goals),
        "pull_requests": recorded(events),
    }))
}

/// At most 72 characters, as titles are.
fn cut(text: &str) -> String {
    const MOST: usize = 72;
    match text.char_indices().nth(MOST - 1) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

/// A task's title: its id and its title, or the first line of its prompt or command.
fn task_title(plan: &Plan, task: &str) -> String {
    let Some(t) = plan.tasks.iter().find(|t| t.id.as_str() == task) else {
        return task.to_owned();
    };
    let words = t.title.clone().unwrap_or_else(|| match &t.action {
        Action::Prompt(p) | Action::Run(p) => p.lines().next().unwrap_or_default().to_owned(),
    });
    cut(&format!("{task}: {}", words.trim()))
}

/// The writers merged and standing (not parked or taken out since), in the order they last
/// merged, each with the change its merge made and the merged writers it builds on.
fn merged_writers(run: &Run<'_>) -> Vec<Merged> {
    let done = |id: &str| {
        run.tasks
            .iter()
            .any(|t| t.id == id && t.status == TaskStatus::Done)
    };
    let mut order: Vec<(String, CommitId, CommitId)> = Vec::new();
    for e in run.events {
        if let (Some(task), RunEvent::Merged { before, after, .. }) = (&e.task, &e.event) {
            order.retain(|(t, ..)| t != task);
            order.push((task.clone(), CommitId::new(before), CommitId::new(after)));
        }
    }
    let merged: Vec<&str> = order
        .iter()
        .map(|(t, ..)| t.as_str())
        .filter(|t| done(t))
        .collect();
    let changes: BTreeMap<&str, (&CommitId, &CommitId)> = order
        .iter()
        .map(|(t, before, after)| (t.as_str(), (before, after)))
        .collect();
    deliver::plan::writers(run.plan, &merged)
        .into_iter()
        .map(|writer| {
            let (before, after) = changes[writer.id.as_str()];
            Merged {
                before: before.clone(),
                after: after.clone(),
                title: task_title(run.plan, &writer.id),
                writer,
            }
        })
        .collect()
}

/// A task's request's description: its prompt (or command), its result, and its check with
/// the last lines it printed.
fn task_body(run: &Run<'_>, task: &str) -> String {
    const CHECK_LINES: usize = 40;
    let mut out = format!(
        "Task `{task}` of swarm run `{}`, merged into the run's work and opened on its own.\n",
        run.layout.run
    );
    if let Some(t) = run.plan.tasks.iter().find(|t| t.id.as_str() == task) {
        match &t.action {
            Action::Prompt(p) => {
                let _ = write!(out, "\n## Prompt\n\n{p}\n");
            }
            Action::Run(c) => {
                let _ = write!(out, "\n## Command\n\n```\n{c}\n```\n");
            }
        }
    }
    let Some(record) = run.tasks.iter().find(|t| t.id == task) else {
        return out;
    };
    if let Some(result) = record.result.as_deref().filter(|r| !r.trim().is_empty()) {
        let _ = write!(out, "\n## Result\n\n{}\n", result.trim());
    }
    // The check of its last attempt, the one merged, beside that attempt's transcript.
    let log = record
        .transcript
        .as_deref()
        .map(|t| std::path::Path::new(t).with_extension("check.log"));
    if let Some(text) = log.and_then(|log| std::fs::read_to_string(log).ok()) {
        let lines: Vec<&str> = text.lines().collect();
        let tail = &lines[lines.len().saturating_sub(CHECK_LINES)..];
        let _ = write!(
            out,
            "\n## Check\n\nIt passed on the task's checkout before the merge; its last lines:\n\n~~~\n{}\n~~~\n",
            tail.join("\n").replace("~~~", "~ ~ ~")
        );
    }
    out
}

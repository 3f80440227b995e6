//! The final report (the deliverable, then the run summary), the short summary for stdout, and
//! the DAG as Mermaid or DOT. Formats what it is given; computes no state.

use std::fmt::Write as _;
use std::time::Duration;

use serde_json::{Value, json};

mod attention;
mod escape;
mod graph;
mod html;
mod layout;
mod svg;
mod usage;

pub use escape::xml as escape_xml;
pub use graph::{dot, mermaid};
pub use html::{html, timeline};
pub use svg::{html as graph_html, svg};
pub use usage::AgentUsage;

use crate::plan::Plan;
use crate::store::{GoalRecord, GoalStatus, RunEvent, RunRecord, TaskRecord, TaskStatus};

/// A parked task and what to tell a human about it.
#[derive(Debug, Clone)]
pub struct Parked {
    pub task: String,
    pub branch: String,
    pub paths: Vec<String>,
    /// Why the resolver attempt failed, when one was made.
    pub resolver: Option<String>,
    /// Each rung of the conflict ladder tried, and why it did not merge.
    pub rungs: Vec<(String, String)>,
    /// Why it is held for review rather than conflicting, when it is.
    pub reason: Option<String>,
    /// For a writer the gate took out: the last lines of the gate's red run.
    pub gate_output: Vec<String>,
}

/// A conflict foreseen while writers ran: `task`'s change against `with`'s (none: against
/// what was merged since it started), in `paths`; `came` when one of them then conflicted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Foreseen {
    pub task: String,
    pub with: Option<String>,
    pub paths: Vec<String>,
    pub came: bool,
}

/// One gate run, as the report's "Gate" section lists it.
#[derive(Debug, Clone)]
pub struct GateRun {
    pub run: u32,
    /// `batch`, `bisect` or `base`.
    pub probe: String,
    pub tip: String,
    /// The writers whose merges it tested.
    pub batch: Vec<String>,
    /// `green`, `red`, `interrupted`, or `running` when the run ended first.
    pub verdict: String,
    pub ms: i64,
}

/// What became of the run's merged work, as the summary says it and its JSON gives it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Landing {
    pub action: LandingAction,
    /// The branch holding the merged work: the user's once fast-forwarded, else the
    /// integration branch; `None` when nothing was merged.
    pub branch: Option<String>,
    /// The commit the merged work ends at.
    pub commit: Option<String>,
    /// Why the work was not landed, when it could have been.
    pub reason: Option<String>,
    /// The command that goes on from here: `git merge --ff-only …` or `swarm resume …`.
    pub command: Option<String>,
    /// All of it in one sentence; `None` with `--land none`, which says nothing.
    pub message: Option<String>,
}

/// A change request the run's result was delivered as (`--deliver pr`, `pr-per-task`,
/// `stack`), as the report, the summary, `swarm status` and the JSON name it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PullRequest {
    /// The task whose change it holds; `None` for the whole run's result.
    pub task: Option<String>,
    #[serde(flatten)]
    pub delivery: crate::store::Delivery,
}

impl PullRequest {
    /// `#3 task a: swarm/tasks-a into main, opened (https://…)`: what the summary and the
    /// report list.
    pub fn line(&self) -> String {
        let what = self
            .task
            .as_deref()
            .map_or_else(|| "the run's result".to_owned(), |t| format!("task {t}"));
        let d = &self.delivery;
        format!(
            "#{} {what}: {} into {}, {} ({})",
            d.number, d.head, d.base, d.outcome, d.url
        )
    }
}

/// What the repository's memory gave a run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recalled {
    /// Each goal's planning (`None`: a single goal's): the past runs recalled, and the lessons
    /// they taught, by number.
    pub plans: Vec<(Option<String>, Vec<String>, Vec<i64>)>,
    /// Each task whose agent was told lessons, and their numbers.
    pub told: Vec<(String, Vec<i64>)>,
    /// The lessons the planner's model distilled from this run (`lessons = "model"`).
    pub distilled: Vec<i64>,
}

fn lesson_names(ids: &[i64]) -> String {
    ids.iter()
        .map(|n| format!("L{n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What landing did, or why it did not happen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LandingAction {
    /// The user's branch was fast-forwarded to the integration tip.
    FastForwarded,
    /// The integration branch was kept (`--land branch` or `none`, or the user's branch was not
    /// ready for a fast-forward).
    Kept,
    /// Nothing was merged; the user's branch is as it was.
    NothingMerged,
    /// A signal stopped the run.
    Interrupted,
    /// A fault of the environment stopped the run.
    Stopped,
    /// Someone else moved the integration branch; nothing is landed.
    Halted,
    /// The token budget was spent.
    OverBudget,
    /// Pushed and opened as change requests on the forge (`--deliver pr` and the like).
    Delivered,
}

/// One goal of a multi-goal run, with its tasks (indices into the run's tasks).
pub struct GoalFacts {
    pub record: GoalRecord,
    pub tasks: Vec<usize>,
    /// The task whose result is the goal's deliverable.
    pub deliverable: Option<usize>,
}

/// Everything a report shows, gathered by the caller.
pub struct Facts<'a> {
    pub run: &'a RunRecord,
    pub plan: &'a Plan,
    pub tasks: &'a [TaskRecord],
    /// Failed or unfinished attempts: (task, number, outcome, transcript).
    pub failed_attempts: &'a [(String, u32, String, String)],
    /// Attempts that continued an earlier attempt's agent session: (task, number).
    pub continued: &'a [(String, u32)],
    pub parked: &'a [Parked],
    /// Merges in order: (task, merge commit, the rung of the conflict ladder that resolved its
    /// conflict).
    pub merges: &'a [(String, String, Option<String>)],
    /// Repairs made to a planned goal's plan: (kind, message).
    pub repairs: &'a [(String, String)],
    /// What happened to the integration branch.
    pub landing: Option<&'a Landing>,
    /// The change requests the result was delivered as.
    pub pull_requests: &'a [PullRequest],
    /// What memory gave the run's planners and agents.
    pub recalled: &'a Recalled,
    /// Why the run stopped merging for a human, when it did.
    pub halted: Option<&'a str>,
    pub exit_code: i32,
    /// The goals of a multi-goal run (none for a single goal or a task file).
    pub goals: &'a [GoalFacts],
    /// What the run says about its goals as a whole: a failed dependency pass, dropped
    /// dependencies, a deadlock.
    pub goal_notes: &'a [String],
    /// The last lines of stderr of each failed task's last failed attempt: (task, attempt,
    /// lines).
    pub output_tails: &'a [(String, u32, Vec<String>)],
    /// How long the run ran, start to end, over every swarm that ran it.
    pub wall: Duration,
    /// Tokens the planner's model calls used (plans, dependency passes); `None` when nothing
    /// was planned.
    pub planning_tokens: Option<u64>,
    /// The gate's runs, in order (none without a gate).
    pub gate_runs: &'a [GateRun],
    /// The writers the gate took out, with the tip it failed on.
    pub culprits: &'a [(String, String)],
    /// Conflicts foreseen while writers ran, and whether each came.
    pub foreseen: &'a [Foreseen],
    /// Every attempt's span of time, for the HTML report's timeline.
    pub spans: &'a [Span],
    /// What each member of the run's pools did, in the order of their names (none when no
    /// attempt went through a pool).
    pub agents: &'a [AgentUsage],
    /// Branches keeping what refused attempts of unfinished tasks left: (task, branch).
    pub kept: &'a [(String, String)],
    /// The picks of tasks with candidates: (task, its `RunEvent::Picked`).
    pub picks: &'a [(String, RunEvent)],
    /// What confined the run's tasks, as a sentence.
    pub confinement: &'a str,
}

/// One attempt from its start to its end (milliseconds since the epoch) and how it ended
/// (`succeeded`, `failed`, `interrupted`, …; `running` when the log has no end yet).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    pub task: String,
    pub attempt: u32,
    pub start: i64,
    pub end: i64,
    pub outcome: &'static str,
}

/// Counts of tasks by status.
pub fn counts(tasks: &[TaskRecord]) -> Vec<(TaskStatus, usize)> {
    let order = [
        TaskStatus::Done,
        TaskStatus::Failed,
        TaskStatus::Skipped,
        TaskStatus::Parked,
        TaskStatus::Interrupted,
        TaskStatus::Committed,
        TaskStatus::Running,
        TaskStatus::Pending,
    ];
    order
        .iter()
        .map(|&s| (s, tasks.iter().filter(|t| t.status == s).count()))
        .filter(|(_, n)| *n > 0)
        .collect()
}

pub fn counts_line(tasks: &[TaskRecord]) -> String {
    let parts: Vec<String> = counts(tasks)
        .iter()
        .map(|(s, n)| format!("{n} {}", s.as_str()))
        .collect();
    format!(
        "{}: {}",
        crate::ui::count(tasks.len(), "task", "tasks"),
        parts.join(", ")
    )
}

/// The Markdown report: the deliverable's result (one section per goal in a multi-goal run),
/// then "Needs attention" (when something does), then "Run summary".
pub fn markdown(f: &Facts<'_>) -> String {
    let mut out = String::new();
    if f.goals.is_empty() {
        out.push_str(&deliverable(f));
    } else {
        for g in f.goals {
            out.push_str(&goal_section(f, g));
        }
    }
    out.push_str(&attention::needs_attention(f));
    out.push_str(&run_summary(f));
    out
}

/// The single deliverable of a run that is not multi-goal: the reducer's result, as the agent
/// wrote it (it is Markdown of its own, so it is not escaped), or why there is none.
fn deliverable(f: &Facts<'_>) -> String {
    let mut out = String::new();
    match f.plan.deliverable() {
        Some(i) => {
            let t = &f.tasks[i];
            match (&t.status, &t.result) {
                (TaskStatus::Done, Some(r)) => {
                    out.push_str(r.trim_end());
                    out.push_str("\n\n");
                }
                _ => {
                    let _ = writeln!(
                        out,
                        "_The final task {} did not finish ({}); there is no deliverable._\n",
                        named(f.plan, &t.id),
                        t.status.as_str()
                    );
                }
            }
        }
        None => out.push_str(
            "_This plan has no reducer task and more than one final task, so there is no single deliverable; each task's result is in the board (`swarm status`)._\n\n",
        ),
    }
    out
}

/// A goal's section: its text, status and why, what it needed, and its deliverable.
fn goal_section(f: &Facts<'_>, g: &GoalFacts) -> String {
    let mut out = String::new();
    let r = &g.record;
    let _ = writeln!(out, "## Goal {}: {}\n", r.id, escape::markdown(&r.text));
    let mut status = format!("Status: **{}**", r.status.as_str());
    if let Some(why) = &r.reason {
        let _ = write!(status, " ({})", escape::markdown(why));
    }
    let _ = writeln!(out, "{status}.  ");
    match r.needs.as_deref() {
        Some([]) => out.push_str("Needs no other goal.\n\n"),
        Some(needs) => {
            let list: Vec<String> = needs
                .iter()
                .map(|n| format!("goal {} ({})", n.goal, escape::markdown(&n.reason)))
                .collect();
            let _ = writeln!(out, "Needs {}.\n", list.join("; "));
        }
        None => out.push_str("Its dependencies were never inferred.\n\n"),
    }
    match g.deliverable.map(|i| &f.tasks[i]) {
        Some(t) if t.status == TaskStatus::Done && t.result.is_some() => {
            out.push_str(t.result.as_deref().unwrap_or_default().trim_end());
            out.push_str("\n\n");
        }
        Some(t) => {
            let _ = writeln!(
                out,
                "_Its final task {} did not finish ({}); there is no deliverable._\n",
                named(f.plan, &t.id),
                t.status.as_str()
            );
        }
        None if g.tasks.is_empty() => {
            out.push_str("_It was never planned, so there is no deliverable._\n\n");
        }
        None => out.push_str(
            "_Its plan has no single final task, so there is no single deliverable._\n\n",
        ),
    }
    out
}

/// The report of one goal, for `--final-out-dir`: its section and its tasks.
pub fn goal_markdown(f: &Facts<'_>, g: &GoalFacts) -> String {
    let mut out = goal_section(f, g);
    let _ = writeln!(
        out,
        "Run `{}` ({}); the run's whole report covers every goal.\n",
        f.run.id,
        f.run.status.as_str()
    );
    if !g.tasks.is_empty() {
        out.push_str("| task | status | attempts | note |\n|---|---|---|---|\n");
        for &i in &g.tasks {
            let t = &f.tasks[i];
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} |",
                named(f.plan, &t.id),
                t.status.as_str(),
                t.attempts,
                escape::markdown(t.error.as_deref().unwrap_or(""))
            );
        }
    }
    out
}

/// "Candidates": for each task that picked among candidates, its rule, the one it merged,
/// and each other one with its check's outcome, its change's size, its branch and why it lost.
fn candidates_section(f: &Facts<'_>) -> String {
    let mut out = String::new();
    for (task, pick) in f.picks {
        let RunEvent::Picked {
            select,
            winner,
            reasons,
            candidates,
        } = pick
        else {
            continue;
        };
        if out.is_empty() {
            out.push_str("\n### Candidates\n\n");
        }
        let _ = writeln!(
            out,
            "{} merged {} ({select}){}:\n",
            named(f.plan, task),
            escape::code(winner),
            reasons
                .as_deref()
                .map(|r| format!(": {}", escape::markdown(r)))
                .unwrap_or_default()
        );
        for c in candidates {
            let size = match (c.added, c.removed) {
                (Some(a), Some(r)) => format!("+{a} −{r}, "),
                _ => String::new(),
            };
            let branch = if c.green && c.id != *winner {
                format!(
                    ", kept on {}",
                    escape::code(&format!("swarm/{}-{}", f.run.id, c.id))
                )
            } else {
                String::new()
            };
            let _ = writeln!(
                out,
                "- {}: {size}{}{branch}",
                escape::code(&c.id),
                escape::markdown(&c.why)
            );
        }
        out.push('\n');
    }
    out
}

/// "Run summary": the run and its totals, its tasks, skips, repairs, merges, graphs.
fn run_summary(f: &Facts<'_>) -> String {
    let mut out = String::new();
    out.push_str("## Run summary\n\n");
    let _ = writeln!(
        out,
        "Run `{}` from {} ({}), base `{}`.  ",
        f.run.id,
        escape::code(&f.run.source),
        f.run.status.as_str(),
        &f.run.base_commit[..f.run.base_commit.len().min(12)],
    );
    let _ = writeln!(
        out,
        "{}. Exit code {}.  ",
        counts_line(f.tasks),
        f.exit_code
    );
    let _ = writeln!(out, "{}  ", totals_line(f));
    let _ = writeln!(out, "{}\n", f.confinement);
    if let Some(l) = f.landing.and_then(|l| l.message.as_deref()) {
        let _ = writeln!(out, "{l}\n");
    }
    for (goal, runs, lessons) in &f.recalled.plans {
        let whose = goal
            .as_deref()
            .map_or_else(|| "The plan".to_owned(), |g| format!("Goal {g}'s plan"));
        let taught = if lessons.is_empty() {
            String::new()
        } else {
            format!(" and lessons {} they taught", lesson_names(lessons))
        };
        let _ = writeln!(
            out,
            "{whose} was made knowing what past goals of runs {} came to{taught} (`swarm memory list`).\n",
            runs.join(", ")
        );
    }
    if !f.recalled.told.is_empty() {
        let told: Vec<String> = f
            .recalled
            .told
            .iter()
            .map(|(task, lessons)| format!("{task} ({})", lesson_names(lessons)))
            .collect();
        let _ = writeln!(
            out,
            "Agents told lessons of earlier runs about the files they change: {}.\n",
            told.join(", ")
        );
    }
    if !f.recalled.distilled.is_empty() {
        let _ = writeln!(
            out,
            "The planner's model distilled lessons {} from this run for later ones.\n",
            lesson_names(&f.recalled.distilled)
        );
    }
    if !f.pull_requests.is_empty() {
        let _ = writeln!(out, "Pull requests:\n");
        for pr in f.pull_requests {
            let _ = writeln!(out, "- {}", escape::markdown(&pr.line()));
        }
        let _ = writeln!(out);
    }
    if !f.goals.is_empty() {
        let done = f
            .goals
            .iter()
            .filter(|g| g.record.status == GoalStatus::Done)
            .count();
        let _ = writeln!(out, "{} goals, {done} done.\n", f.goals.len());
        for note in f.goal_notes {
            let _ = writeln!(out, "- {}", escape::markdown(note));
        }
        if !f.goal_notes.is_empty() {
            out.push('\n');
        }
        out.push_str("### Goal graph\n\n```mermaid\n");
        out.push_str(&graph::goal_mermaid(f.goals));
        out.push_str("```\n\n");
    }

    out.push_str(
        "| task | lane | mode | status | attempts | time | tokens | cached | cost |\n|---|---|---|---|---|---|---|---|---|\n",
    );
    for (t, spec) in f.tasks.iter().zip(&f.plan.tasks) {
        let continued = continued_of(f, &t.id);
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            named(f.plan, &t.id),
            escape::markdown(spec.lane.as_str()),
            spec.mode.as_str(),
            t.status.as_str(),
            if continued.is_empty() {
                t.attempts.to_string()
            } else {
                let n: Vec<String> = continued.iter().map(u32::to_string).collect();
                format!("{} ({} continued)", t.attempts, n.join(", "))
            },
            crate::ui::duration(Duration::from_millis(t.elapsed_ms.max(0) as u64)),
            t.tokens,
            cached(t.cached_tokens, t.prompt_tokens),
            match Priced::of(t, spec) {
                Priced::Free => "-".to_owned(),
                _ => cost(t.cost),
            },
        );
    }

    out.push_str(&usage::section(f));
    out.push_str(&candidates_section(f));

    let skipped: Vec<&TaskRecord> = f
        .tasks
        .iter()
        .filter(|t| t.status == TaskStatus::Skipped)
        .collect();
    if !skipped.is_empty() {
        out.push_str("\n### Skipped\n\n");
        for t in skipped {
            let _ = writeln!(
                out,
                "- {}: {}",
                named(f.plan, &t.id),
                escape::markdown(t.error.as_deref().unwrap_or("a dependency did not finish"))
            );
        }
    }
    if !f.repairs.is_empty() {
        out.push_str("\n### Plan repairs\n\n");
        for (kind, message) in f.repairs {
            let _ = writeln!(out, "- {kind}: {}", escape::markdown(message));
        }
    }
    out.push_str(&attention::gate_section(f));
    if !f.foreseen.is_empty() {
        out.push_str("\n### Conflicts foreseen\n\n");
        for c in f.foreseen {
            let with = match &c.with {
                Some(w) => format!("with {}", named(f.plan, w)),
                None => "with what was merged since it started".to_owned(),
            };
            let came = if c.came {
                "the conflict came"
            } else {
                "no conflict came"
            };
            let paths: Vec<String> = c.paths.iter().map(|p| escape::code(p)).collect();
            let _ = writeln!(
                out,
                "- {} {with}, in {}: {came}",
                named(f.plan, &c.task),
                paths.join(", ")
            );
        }
    }
    if !f.merges.is_empty() {
        out.push_str("\n### Merges\n\n");
        for (task, commit, rung) in f.merges {
            let by = match rung
                .as_deref()
                .map(|r| r.split_once(' ').unwrap_or((r, "")))
            {
                Some(("structural", tool)) => {
                    let by =
                        format!(" after a conflict, resolved by the syntax-aware merge {tool}");
                    by.trim_end().to_owned()
                }
                Some(("redo", _)) => {
                    " after a conflict, done again on the integration tip".to_owned()
                }
                Some(_) => " after a conflict, resolved by its agent".to_owned(),
                None => String::new(),
            };
            let _ = writeln!(
                out,
                "- {} merged as `{}`{by}",
                named(f.plan, task),
                &commit[..commit.len().min(12)]
            );
        }
    }

    out.push_str(if f.goals.is_empty() {
        "\n### Graph\n\n```mermaid\n"
    } else {
        "\n### Task graph\n\n```mermaid\n"
    });
    out.push_str(&mermaid(f.plan, Some(f.tasks)));
    out.push_str("```\n");
    out
}

/// What the run used in all: its wall time, the tasks' tokens (and the planner's, when it
/// planned), of the tasks' prompt tokens those cached, and the tasks' cost.
struct Totals {
    wall: Duration,
    task_tokens: u64,
    /// Of the tasks' tokens, their prompts' (0 where no agent said).
    task_prompt_tokens: u64,
    /// Of the prompts' tokens, those the provider had cached.
    task_cached_tokens: u64,
    planning_tokens: Option<u64>,
    cost: Cost,
}

/// What the tasks cost, as far as their agents said.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
struct Cost {
    /// The sum of the costs the agents gave.
    known: f64,
    /// The tasks whose agents gave a cost.
    priced: usize,
    /// The tasks whose agents ran and gave none.
    unknown: usize,
}

impl Cost {
    fn of(f: &Facts<'_>) -> Self {
        let mut c = Self::default();
        for (t, spec) in f.tasks.iter().zip(&f.plan.tasks) {
            match Priced::of(t, spec) {
                Priced::Known(cost) => {
                    c.known += cost;
                    c.priced += 1;
                }
                Priced::Unknown => c.unknown += 1,
                Priced::Free => {}
            }
        }
        c
    }

    /// The sum of the known costs; `None` when no task's cost is known.
    fn sum(self) -> Option<f64> {
        (self.priced > 0).then_some(self.known)
    }

    /// `$0.0300`; with tasks of unknown cost among them, `$0.0300, not counting 1 task of
    /// unknown cost`; `unknown` when no agent said; `-` when no agent ran (commands cost
    /// nothing, as their rows say).
    fn line(self) -> String {
        match (self.priced, self.unknown) {
            (0, 0) => "-".to_owned(),
            (0, _) => "unknown".to_owned(),
            (_, 0) => cost(Some(self.known)),
            (_, n) => format!(
                "{}, not counting {} of unknown cost",
                cost(Some(self.known)),
                crate::ui::count(n, "task", "tasks")
            ),
        }
    }
}

/// Whether a task's cost is known, unknown, or nothing to know.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Priced {
    /// Its agent said what it cost.
    Known(f64),
    /// An agent ran it and did not say.
    Unknown,
    /// A command, or a task that never ran: no model was paid for it.
    Free,
}

impl Priced {
    fn of(t: &TaskRecord, spec: &crate::plan::Task) -> Self {
        match t.cost {
            Some(cost) => Self::Known(cost),
            None if is_command(spec) || t.attempts == 0 => Self::Free,
            None => Self::Unknown,
        }
    }
}

fn totals(f: &Facts<'_>) -> Totals {
    Totals {
        wall: f.wall,
        task_tokens: f.tasks.iter().map(|t| t.tokens).sum(),
        task_prompt_tokens: f.tasks.iter().map(|t| t.prompt_tokens).sum(),
        task_cached_tokens: f.tasks.iter().map(|t| t.cached_tokens).sum(),
        planning_tokens: f.planning_tokens,
        cost: Cost::of(f),
    }
}

/// `Wall time 1m02s; tokens: 1200 by the tasks (900 of their 1000 prompt tokens cached: 90 %),
/// 300 for planning; cost of the tasks: $0.0100.`
fn totals_line(f: &Facts<'_>) -> String {
    let t = totals(f);
    let cached = crate::ui::cached_share(t.task_cached_tokens, t.task_prompt_tokens)
        .map(|share| {
            format!(
                " ({} of their {} prompt tokens cached: {share})",
                t.task_cached_tokens, t.task_prompt_tokens
            )
        })
        .unwrap_or_default();
    let planning = t
        .planning_tokens
        .map(|n| format!(", {n} for planning"))
        .unwrap_or_default();
    format!(
        "Wall time {}; tokens: {} by the tasks{cached}{planning}; cost of the tasks: {}.",
        crate::ui::duration(t.wall),
        t.task_tokens,
        t.cost.line()
    )
}

/// A task as the report names it: its id as code, then its title when it has one
/// (`` `t3` — Add tracing to handlers ``).
fn named(plan: &Plan, id: &str) -> String {
    let title = plan
        .tasks
        .iter()
        .find(|t| t.id.as_str() == id)
        .and_then(|t| t.title.as_deref())
        .filter(|t| !t.trim().is_empty());
    match title {
        Some(title) => format!("{} — {}", escape::code(id), escape::markdown(title)),
        None => escape::code(id),
    }
}

/// The short human summary for stdout.
pub fn summary(f: &Facts<'_>, report_path: &str) -> String {
    let mut out = format!("run {}: {}\n", f.run.id, counts_line(f.tasks));
    for g in f.goals {
        let r = &g.record;
        let why = r
            .reason
            .as_ref()
            .map(|w| format!(" ({w})"))
            .unwrap_or_default();
        let text = crate::ui::one_line(&r.text, 60);
        let _ = writeln!(out, "goal {} {}{why}: {text}", r.id, r.status.as_str());
    }
    for p in f.parked {
        let why = p.reason.clone().unwrap_or_else(|| p.paths.join(", "));
        let _ = writeln!(out, "parked: {} on branch {} ({why})", p.task, p.branch);
    }
    for (task, pick) in f.picks {
        if let RunEvent::Picked {
            select,
            winner,
            candidates,
            ..
        } = pick
        {
            let others: Vec<String> = candidates
                .iter()
                .filter(|c| c.green && c.id != *winner)
                .map(|c| format!("swarm/{}-{}", f.run.id, c.id))
                .collect();
            let kept = if others.is_empty() {
                String::new()
            } else {
                format!("; the other green ones kept on {}", others.join(", "))
            };
            let _ = writeln!(out, "picked: {winner} for {task} ({select}){kept}");
        }
    }
    for t in f
        .tasks
        .iter()
        .filter(|t| t.status == TaskStatus::Failed && !t.is_candidate())
    {
        let _ = writeln!(
            out,
            "failed: {}: {}",
            t.id,
            t.error.as_deref().unwrap_or("unknown error")
        );
    }
    for (task, branch) in f.kept {
        let _ = writeln!(
            out,
            "kept: what an attempt of {task} left is on branch {branch}"
        );
    }
    if let Some(l) = f.landing.and_then(|l| l.message.as_deref()) {
        let _ = writeln!(out, "{l}");
    }
    for pr in f.pull_requests {
        let _ = writeln!(out, "pull request {}", pr.line());
    }
    let _ = writeln!(out, "report: {report_path}");
    out
}

/// The summary as JSON.
pub fn json(f: &Facts<'_>, report_path: &str) -> Value {
    let counts: serde_json::Map<String, Value> = counts(f.tasks)
        .into_iter()
        .map(|(s, n)| (s.as_str().to_owned(), n.into()))
        .collect();
    let totals = totals(f);
    json!({
        "run": f.run.id,
        "status": f.run.status.as_str(),
        "exit_code": f.exit_code,
        "base": f.run.base_commit,
        "integration_branch": f.run.integration_ref.trim_start_matches("refs/heads/"),
        "counts": counts,
        "tasks": f.tasks.iter().map(|t| json!({
            "id": t.id,
            "status": t.status.as_str(),
            "attempts": t.attempts,
            "continued": continued_of(f, &t.id),
            "elapsed_ms": t.elapsed_ms,
            "error": t.error,
            "tokens": t.tokens,
            "prompt_tokens": t.prompt_tokens,
            "cached_tokens": t.cached_tokens,
            "cost": t.cost,
            "kept_branches": f.kept.iter().filter(|(k, _)| *k == t.id).map(|(_, b)| b).collect::<Vec<_>>(),
            "transcript": t.transcript,
            "stderr_tail": f.output_tails.iter().find(|(task, ..)| task == &t.id).map_or(&[][..], |(.., l)| l.as_slice()),
        })).collect::<Vec<_>>(),
        "goals": f.goals.iter().map(|g| json!({
            "id": g.record.id,
            "text": g.record.text,
            "status": g.record.status.as_str(),
            "reason": g.record.reason,
            "needs": g.record.needs,
            "tasks": g.tasks.iter().map(|&i| f.tasks[i].id.as_str()).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "parked": f.parked.iter().map(|p| {
            let mut v = json!({"task": p.task, "branch": p.branch, "paths": p.paths, "reason": p.reason});
            // A writer the gate took out: the gate's last lines.
            if !p.gate_output.is_empty() {
                v["gate_output"] = json!(p.gate_output);
            }
            v
        }).collect::<Vec<_>>(),
        "landing": f.landing,
        "pull_requests": f.pull_requests,
        "recalled": {
            "plans": f.recalled.plans.iter().map(|(goal, runs, lessons)| json!({"goal": goal, "runs": runs, "lessons": lessons})).collect::<Vec<_>>(),
            "told": f.recalled.told.iter().map(|(task, lessons)| json!({"task": task, "lessons": lessons})).collect::<Vec<_>>(),
            "distilled": f.recalled.distilled,
        },
        "totals": {
            "elapsed_ms": totals.wall.as_millis() as u64,
            "task_tokens": totals.task_tokens,
            "task_prompt_tokens": totals.task_prompt_tokens,
            "task_cached_tokens": totals.task_cached_tokens,
            "planning_tokens": totals.planning_tokens,
            "cost": totals.cost.sum(),
            "tasks_of_unknown_cost": totals.cost.unknown,
        },
        "report": report_path,
    })
}

fn is_command(task: &crate::plan::Task) -> bool {
    matches!(task.action, crate::plan::Action::Run(_))
}

/// A task's cached tokens and their share of its prompt tokens (`900 (90 %)`), or `-` where
/// no prompt token is known.
fn cached(cached: u64, prompt: u64) -> String {
    crate::ui::cached_share(cached, prompt)
        .map_or_else(|| "-".to_owned(), |s| format!("{cached} ({s})"))
}

/// A cost in dollars, or "unknown" (never shown as zero when the agent did not say).
fn cost(c: Option<f64>) -> String {
    c.map_or_else(|| "unknown".to_owned(), |c| format!("${c:.4}"))
}

/// The numbers of task `id`'s attempts that continued an earlier one's session.
fn continued_of(f: &Facts<'_>, id: &str) -> Vec<u32> {
    f.continued
        .iter()
        .filter(|(task, _)| task == id)
        .map(|&(_, n)| n)
        .collect()
}

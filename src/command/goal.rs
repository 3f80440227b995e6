//! `swarm --goal TEXT`: summarise the repository, have the model plan the goal, record the
//! plan and its repairs, then run it like a task file. Several goals (and the queue) are
//! recorded and handed to the scheduler, which plans each when it can.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use super::context::{Globals, refuse_when_nested};
use super::run::{NewRun, Reads, guard_files};
use super::settings::{Configured, MAX_FAN_IN, PLANNING_HINT, model_client, settings};
use crate::error::{Usage, exit};
use crate::git::Repo;
use crate::plan::Plan;
use crate::planner;
use crate::preview::Consent;
use crate::schedule::{GoalRun, Settings};
use crate::store::{Event, GoalRecord, GoalStatus, RunEvent, RunStatus};
use crate::ui;
use crate::ui::Verb;

/// Lines of the README the planner sees.
const README_LINES: usize = 40;
/// Entries of the top-level tree the planner sees.
const TREE_ENTRIES: usize = 60;

pub(super) fn run_goal(
    g: &Globals,
    goal: &str,
    output: PlanOutput<'_>,
    asked: Question,
    configured: &Configured,
) -> anyhow::Result<u8> {
    let options = &configured.options;
    if let Some(code) = refuse_when_nested(g) {
        return Ok(code);
    }
    if goal.trim().is_empty() {
        anyhow::bail!(Usage::new("--goal is empty"));
    }
    if !output.only {
        // A run that may not run unconfined stops before the model is asked for a plan.
        super::settings::confinement(options)?;
    }
    // A plan given is read before anything is recorded: one with problems runs nothing.
    let given = output.given.map(read_given).transpose()?;
    let jobs = options.jobs.unwrap_or(crate::config::Defaults::jobs()) as usize;
    let client = model_client(options, jobs)?.ok_or_else(|| {
        Usage::new("planning a goal needs a model, and none is configured").hint(PLANNING_HINT)
    })?;
    let run = NewRun::begin(
        g,
        format!("goal: {}", ui::one_line(goal, 100)),
        options,
        None,
        &Reads {
            plan_out: output.file,
            files: Vec::new(),
        },
    )?;
    // The goal whole, for a resume of a run stopped while it was planned; and for
    // `--plan-only`, that it is planned only (and where the plan goes), so that such a resume
    // runs nothing either.
    let run_dir = run.board.run_dir(&run.record.id);
    std::fs::write(run_dir.join(GOAL_FILE), goal)?;
    // Kept beside the goal, so that a resume runs this plan too rather than asking for one.
    if let Some(plan) = &given {
        std::fs::write(run_dir.join(GIVEN_PLAN_FILE), plan.to_jsonl())?;
    }
    if output.only {
        let out = output.file.map(|f| g.dir.join(f)).unwrap_or_default();
        std::fs::write(
            run_dir.join(PLAN_ONLY_FILE),
            out.as_os_str().as_encoded_bytes(),
        )?;
    }
    let goal = Goal {
        text: goal,
        output,
        asked,
        client: &client,
    };
    plan_and_launch(
        g,
        run,
        &goal,
        options,
        &configured.profiles,
        configured.file.clone(),
    )
}

/// A goal as swarm keeps it: a secret's value typed into it (the value of a variable swarm
/// hides, such as a token) is hidden before it is shown, stored, planned or sent to a model,
/// and swarm says so.
pub(super) fn without_secrets(g: &Globals, text: &str) -> String {
    let hidden = crate::secret::redact(text);
    if hidden != text {
        ui::say(
            g.quiet,
            Verb::Note,
            "the goal holds a secret's value (of a variable swarm hides); it is kept, shown and planned as [redacted]",
        );
    }
    hidden.into_owned()
}

/// The file in a run's directory that holds a single-goal run's goal.
pub(super) const GOAL_FILE: &str = "goal.md";

/// The file in a run's directory that marks a `--plan-only` run, holding the `--plan-out` path
/// (empty without one).
const PLAN_ONLY_FILE: &str = "plan-only";
/// In a goal's run directory, the plan `--plan` gave it (the task-file format).
const GIVEN_PLAN_FILE: &str = "given-plan.jsonl";

/// The plan of `--plan FILE`: a file that cannot be read, or a plan with problems (each named
/// with its line), is a usage error.
fn read_given(file: &Path) -> anyhow::Result<Plan> {
    Plan::load(file).map_err(|e| match e.downcast::<crate::plan::Invalid>() {
        Ok(invalid) => anyhow::Error::new(invalid),
        Err(e) => anyhow::Error::new(Usage::new(format!("--plan: {e:#}"))),
    })
}

/// A run started with `--plan-only`.
pub(super) struct PlanOnly {
    /// Its `--plan-out`, if it had one.
    pub(super) plan_out: Option<std::path::PathBuf>,
}

/// Whether the run whose directory is `run_dir` was started with `--plan-only`.
pub(super) fn plan_only_of(run_dir: &Path) -> Option<PlanOnly> {
    use std::os::unix::ffi::OsStringExt as _;
    let bytes = std::fs::read(run_dir.join(PLAN_ONLY_FILE)).ok()?;
    Some(PlanOnly {
        plan_out: (!bytes.is_empty()).then(|| std::ffi::OsString::from_vec(bytes).into()),
    })
}

/// A single goal to plan, and what to do with the plan.
pub(super) struct Goal<'a> {
    pub(super) text: &'a str,
    pub(super) output: PlanOutput<'a>,
    pub(super) asked: Question,
    pub(super) client: &'a crate::llm::Client,
}

/// Where a single goal's plan goes besides the run's directory.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct PlanOutput<'a> {
    /// `--plan-out`: the plan in the task-file format.
    pub(super) file: Option<&'a Path>,
    /// `--plan-only`: print the plan and run nothing.
    pub(super) only: bool,
    /// `--plan`: the plan to run, made before (its path, from the directory swarm started in).
    pub(super) given: Option<&'a Path>,
}

/// Whether a single goal's plan is shown and asked about before it runs. Several goals are
/// never asked about: each is planned inside the run, while the others' tasks may be running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Question {
    /// When stdin and stderr are terminals, show the plan and ask.
    Ask,
    /// `--yes`, or a git hook: run the plan as planned.
    Skip,
}

impl Question {
    pub(super) fn unless(skip: bool) -> Self {
        if skip { Self::Skip } else { Self::Ask }
    }
}

/// The exit code of a question answered with Ctrl-C: a shell's for a command it interrupted.
const INTERRUPTED: u8 = 130;

/// Plans a recorded single-goal run's goal and runs the plan. A signal while planning stops the
/// run resumably (exit 75): a resume plans the goal again.
pub(super) fn plan_and_launch(
    g: &Globals,
    mut run: NewRun,
    goal: &Goal<'_>,
    options: &crate::config::Options,
    profiles: &super::pools::Agents,
    config_file: Option<std::path::PathBuf>,
) -> anyhow::Result<u8> {
    let Goal {
        text: goal,
        output,
        asked,
        client,
    } = *goal;
    let run_id = run.record.id.clone();
    if let Some(tracer) = &run.trace {
        super::trace::planner(tracer, client);
    }
    let given = run.board.run_dir(&run_id).join(GIVEN_PLAN_FILE);
    if given.exists() {
        // `--plan`: the plan was made before; nothing is asked of the model or the user.
        let plan = Plan::load(&given)?;
        run.board.event(
            &run_id,
            &Event::run(RunEvent::Planned {
                tasks: plan.len(),
                requests: 0,
                tokens: 0,
                repairs: 0,
                input_tokens: None,
                output_tokens: None,
            }),
        )?;
        ui::say(
            g.quiet,
            Verb::Planned,
            &format!(
                "{} given with --plan",
                ui::count(plan.len(), "task", "tasks")
            ),
        );
        let mut run_settings = settings(options, &plan, profiles)?;
        guard_files(&run.repo, &mut run_settings, config_file)?;
        run_settings.llm = Some(client.clone());
        return run.launch(g, plan, &run_settings, options, None);
    }
    let summary = summarize(&run.repo)?;
    ui::say(g.quiet, Verb::Planning, &ui::one_line(goal, 100));
    let board = &mut run.board;
    let recalled = super::memory::recall(g, board, options, &run_id, None, goal)?;
    if !recalled.runs.is_empty() {
        ui::say(
            g.quiet,
            Verb::Note,
            &format!(
                "the planner is given what {} of this repository came to",
                ui::count(recalled.runs.len(), "past goal", "past goals")
            ),
        );
    }
    let mut notes = Vec::new();
    // The first Ctrl-C stops planning at its next request; the second ends swarm at once.
    let signals = crate::signal::handle(|| {}, || {});
    let planned = planner::plan(
        client,
        goal,
        &summary,
        &recalled.text,
        MAX_FAN_IN,
        &crate::signal::requested,
        &mut |n| {
            if let Some(line) = crate::schedule::notice_line(&n) {
                ui::say(g.quiet, Verb::Retrying, &format!("planning: {line}"));
            }
            notes.push(n);
        },
    );
    drop(signals);
    for n in &notes {
        board.event(&run_id, &Event::run(crate::schedule::notice_event(n)))?;
    }
    let planned = match planned {
        Ok(p) => p,
        Err(_) if crate::signal::requested() => {
            board.set_run_status(
                &run_id,
                RunStatus::Interrupted,
                Some(i32::from(exit::RESUMABLE)),
                &Event::run(RunEvent::PlanningInterrupted),
            )?;
            ui::say(
                g.quiet,
                Verb::Interrupted,
                &format!("while planning: `swarm resume {run_id}` plans the goal again"),
            );
            return Ok(exit::RESUMABLE);
        }
        // A fault outside the goal (a refused key, an endpoint that does not answer): fixed,
        // a resume plans it again.
        Err(e) if let Some(fault) = crate::agent::Fault::of_model_error(&e) => {
            let code = fault.kind.exit_code();
            board.set_run_status(
                &run_id,
                RunStatus::Interrupted,
                Some(i32::from(code)),
                &Event::run(RunEvent::Fault {
                    kind: fault.kind.as_str().to_owned(),
                    why: fault.why.clone(),
                }),
            )?;
            ui::say(
                g.quiet,
                Verb::Stopped,
                &format!(
                    "while planning: {}. Once that is fixed, `swarm resume {run_id}` plans the goal again",
                    fault.why
                ),
            );
            return Ok(code);
        }
        Err(e) => {
            board.set_run_status(
                &run_id,
                RunStatus::Finished,
                Some(i32::from(exit::FAILED)),
                &Event::run(RunEvent::PlanningFailed {
                    error: format!("{e:#}"),
                }),
            )?;
            return Err(e);
        }
    };
    // Its writers run as candidates when asked: the plan asked about holds them.
    let mut planned = planned;
    planned.plan = planned
        .plan
        .with_candidates(super::settings::candidates_of(options))?;
    for r in &planned.repairs {
        board.event(
            &run_id,
            &Event::run(RunEvent::PlanRepair {
                goal: None,
                kind: r.kind.to_owned(),
                message: r.message.clone(),
            }),
        )?;
    }
    board.event(
        &run_id,
        &Event::run(RunEvent::Planned {
            tasks: planned.plan.len(),
            requests: planned.requests,
            tokens: planned.usage.total_tokens,
            repairs: planned.repairs.len(),
            input_tokens: Some(planned.usage.prompt_tokens),
            output_tokens: Some(planned.usage.completion_tokens),
        }),
    )?;
    let plan_out = output.file.map(|out| {
        if out.is_absolute() {
            out.to_owned()
        } else {
            g.dir.join(out)
        }
    });
    let limits = crate::config::SpawnLimits::of(options);
    let more = crate::schedule::Ceiling::of(&planned.plan, &limits)
        .describe()
        .map(|m| format!("; {m}"))
        .unwrap_or_default();
    ui::say(
        g.quiet,
        Verb::Planned,
        &format!(
            "{} ({}, {} tokens){more}",
            ui::count(planned.plan.len(), "task", "tasks"),
            ui::count(planned.repairs.len(), "repair", "repairs"),
            planned.usage.total_tokens
        ),
    );
    if output.only {
        let ceiling = crate::schedule::Ceiling::of(&planned.plan, &limits);
        return plan_only(
            g,
            board,
            &run_id,
            &planned.plan,
            &ceiling,
            plan_out.as_deref(),
        );
    }
    // Checked before the question, so that a yes is not answered with an error.
    let mut run_settings = settings(options, &planned.plan, profiles)?;
    let plan = if asked == Question::Ask && crate::preview::interactive() {
        let tty = &mut crate::preview::Tty::new();
        match crate::preview::consent(&planned.plan, &limits, tty)? {
            Consent::Run => planned.plan,
            Consent::RunEdited(edited) => {
                board.event(
                    &run_id,
                    &Event::run(RunEvent::PlanEdited {
                        tasks: edited.len(),
                    }),
                )?;
                run_settings = settings(options, &edited, profiles)?;
                edited
            }
            Consent::Declined {
                edited,
                interrupted,
            } => {
                let kept = Declined {
                    plan: &planned.plan,
                    edited: edited.as_deref(),
                    interrupted,
                };
                return declined(board, &run_id, &kept, plan_out.as_deref());
            }
        }
    } else {
        planned.plan
    };
    if let Some(out) = &plan_out {
        write_plan(out, &plan.to_jsonl())?;
    }
    guard_files(&run.repo, &mut run_settings, config_file)?;
    // The planner's client runs the tasks too: one in-flight limit, and what it learned of the
    // server (its context, whether it passes function calls or takes streams) kept.
    run_settings.llm = Some(client.clone());
    run.launch(g, plan, &run_settings, options, None)
}

/// `--plan-only`: keeps the plan (in `--plan-out` and the run's directory), ends the run, and
/// prints the plan: as a tree with the command that runs it, or with `--json` as JSONL.
fn plan_only(
    g: &Globals,
    board: &mut crate::store::Board,
    run_id: &str,
    plan: &crate::plan::Plan,
    ceiling: &crate::schedule::Ceiling,
    plan_out: Option<&Path>,
) -> anyhow::Result<u8> {
    let text = plan.to_jsonl();
    if let Some(out) = plan_out {
        write_plan(out, &text)?;
    }
    let run_copy = board.run_dir(run_id).join("plan.jsonl");
    std::fs::write(&run_copy, &text)?;
    board.set_run_status(
        run_id,
        RunStatus::Finished,
        Some(i32::from(exit::OK)),
        &Event::run(RunEvent::PlanOnly),
    )?;
    if g.json {
        ui::out(&text)?;
    } else {
        ui::out(&format!(
            "{}{}\n\nTo run it: swarm run {}",
            crate::preview::tree(plan, crate::preview::stdout_width(), ceiling),
            crate::preview::counts(plan, ceiling),
            shell_word(plan_out.unwrap_or(&run_copy))
        ))?;
    }
    Ok(exit::OK)
}

/// A plan the user chose not to run.
struct Declined<'a> {
    plan: &'a crate::plan::Plan,
    /// The text of the user's last edit, which had problems.
    edited: Option<&'a str>,
    /// Answered with Ctrl-C.
    interrupted: bool,
}

/// Keeps a declined plan (in `--plan-out` and the run's directory; the user's edit, when they
/// made one, in the run's directory, since it is what they will want back), ends the run and
/// says where the plan is. Shown whatever `-q` says: it ends the dialog the user just had.
fn declined(
    board: &mut crate::store::Board,
    run_id: &str,
    kept: &Declined<'_>,
    plan_out: Option<&Path>,
) -> anyhow::Result<u8> {
    let text = kept.plan.to_jsonl();
    if let Some(out) = plan_out {
        write_plan(out, &text)?;
    }
    let run_copy = board.run_dir(run_id).join("plan.jsonl");
    std::fs::write(&run_copy, kept.edited.unwrap_or(&text))?;
    let code = if kept.interrupted {
        INTERRUPTED
    } else {
        exit::OK
    };
    board.set_run_status(
        run_id,
        RunStatus::Finished,
        Some(i32::from(code)),
        &Event::run(RunEvent::PlanDeclined {
            interrupted: kept.interrupted,
        }),
    )?;
    let note = if kept.edited.is_some() {
        format!(
            "your edit of the plan (it has problems); nothing ran. Once they are fixed: swarm run {}",
            shell_word(&run_copy)
        )
    } else {
        format!(
            "the plan; nothing ran. To run it: swarm run {}",
            shell_word(plan_out.unwrap_or(&run_copy))
        )
    };
    ui::say(false, Verb::Kept, &note);
    Ok(code)
}

/// Writes the plan to `--plan-out`.
fn write_plan(out: &Path, text: &str) -> anyhow::Result<()> {
    super::output::write_atomic(out, text.as_bytes())
        .map_err(|e| e.context(format!("could not write the plan to {}", out.display())))
}

/// `path` as a shell word.
fn shell_word(path: &Path) -> String {
    crate::shell::word(&path.display().to_string())
}

/// `swarm --goal A --goal B …`, `--goals-file`, and `swarm queue run`: records the goals (or
/// takes the queue's), then runs them together; the scheduler infers which needs which and
/// plans each when it can.
pub(super) fn run_goals(
    g: &Globals,
    goals: &[String],
    from_queue: bool,
    configured: &Configured,
) -> anyhow::Result<u8> {
    let options = &configured.options;
    if let Some(code) = refuse_when_nested(g) {
        return Ok(code);
    }
    if let Some(n) = goals.iter().position(|t| t.trim().is_empty()) {
        anyhow::bail!(Usage::new(format!("goal {} is empty", n + 1)));
    }
    // Checked before anything is recorded: a run that cannot plan must not be started.
    let plan = crate::plan::Plan::from_tasks(Vec::new())?;
    let mut settings = settings(options, &plan, &configured.profiles)?;
    goal_run_client(&settings)?;
    let source = if from_queue {
        "queue".to_owned()
    } else {
        format!("{} goals", goals.len())
    };
    let reads = Reads {
        plan_out: None,
        files: Vec::new(),
    };
    let mut run = NewRun::begin(g, source, options, None, &reads)?;
    guard_files(&run.repo, &mut settings, configured.file.clone())?;
    let run_id = run.record.id.clone();
    if from_queue {
        run.board.queue_mut().take(&run_id)?;
    } else {
        let records: Vec<GoalRecord> = goals
            .iter()
            .enumerate()
            .map(|(n, text)| GoalRecord {
                id: format!("g{}", n + 1),
                text: text.trim().to_owned(),
                needs: None,
                status: GoalStatus::Pending,
                reason: None,
                queue_id: None,
            })
            .collect();
        run.board.goals_mut().add(&run_id, &records)?;
    }
    let records = run.board.goals().load(&run_id)?;
    let goals = goal_run(
        g,
        &run.repo,
        &mut run.board,
        options,
        &settings,
        &run_id,
        records,
    )?;
    run.launch(g, plan, &settings, options, Some(goals))
}

/// The planners' model client: the run's own, so planners and the built-in agent share one
/// limit on requests in flight.
fn goal_run_client(settings: &Settings) -> anyhow::Result<crate::llm::Client> {
    settings.llm.clone().ok_or_else(|| {
        Usage::new("planning goals needs a model, and none is configured")
            .hint(PLANNING_HINT)
            .into()
    })
}

/// What the scheduler needs to plan a run's goals.
/// What the scheduler needs to plan run `run`'s goals, with what memory recalls for each goal
/// still to plan.
pub(super) fn goal_run(
    g: &Globals,
    repo: &Repo,
    board: &mut crate::store::Board,
    options: &crate::config::Options,
    settings: &Settings,
    run: &str,
    goals: Vec<GoalRecord>,
) -> anyhow::Result<GoalRun> {
    let mut recalled = BTreeMap::new();
    for goal in goals.iter().filter(|g| g.status == GoalStatus::Pending) {
        let found = super::memory::recall(g, board, options, run, Some(&goal.id), &goal.text)?;
        if !found.text.is_empty() {
            recalled.insert(goal.id.clone(), found.text);
        }
    }
    Ok(GoalRun {
        recalled,
        recall: super::memory::recall_joining(g, options, run),
        client: goal_run_client(settings)?,
        summary: summarize(repo)?,
        max_fan_in: MAX_FAN_IN,
        from_queue: goals.iter().any(|g| g.queue_id.is_some()),
        goals,
    })
}

/// Goals from a file, one a line; blank lines and `#` comments are skipped.
pub(super) fn read_goals_file(path: &Path) -> anyhow::Result<Vec<String>> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        Usage::new(format!(
            "could not read the goals file {}: {e}",
            path.display()
        ))
    })?;
    let goals: Vec<String> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect();
    if goals.is_empty() {
        anyhow::bail!(Usage::new(format!(
            "the goals file {} holds no goal (one a line)",
            path.display()
        )));
    }
    Ok(goals)
}

/// What the planner is told about the repository: the top of its file tree, the head of its
/// README, and its languages by file count.
fn summarize(repo: &Repo) -> anyhow::Result<String> {
    let root = repo.workdir();
    let files = crate::git::list_files(root)?;
    let mut top: BTreeMap<String, usize> = BTreeMap::new();
    let mut languages: BTreeMap<String, usize> = BTreeMap::new();
    for f in &files {
        let first = match f.split_once('/') {
            Some((dir, _)) => format!("{dir}/"),
            None => f.clone(),
        };
        *top.entry(first).or_default() += 1;
        if let Some(ext) = Path::new(f).extension().and_then(|e| e.to_str()) {
            *languages.entry(ext.to_ascii_lowercase()).or_default() += 1;
        }
    }
    let mut out = format!("{} files.\n\nTop level:\n", files.len());
    for (name, n) in top.iter().take(TREE_ENTRIES) {
        if name.ends_with('/') {
            let _ = writeln!(out, "- {name} ({n} files)");
        } else {
            let _ = writeln!(out, "- {name}");
        }
    }
    if top.len() > TREE_ENTRIES {
        let _ = writeln!(out, "- … and {} more", top.len() - TREE_ENTRIES);
    }
    let mut by_count: Vec<(&String, &usize)> = languages.iter().collect();
    by_count.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let langs: Vec<String> = by_count
        .iter()
        .take(10)
        .map(|(ext, n)| format!(".{ext} ({n})"))
        .collect();
    if !langs.is_empty() {
        let _ = writeln!(out, "\nFile types: {}", langs.join(", "));
    }
    let readme = files
        .iter()
        .find(|f| !f.contains('/') && f.to_ascii_lowercase().starts_with("readme"));
    if let Some(name) = readme
        && let Ok(text) = std::fs::read_to_string(root.join(name))
    {
        let head: Vec<&str> = text.lines().take(README_LINES).collect();
        let _ = write!(out, "\n{name} (first lines):\n{}\n", head.join("\n"));
    }
    Ok(out)
}

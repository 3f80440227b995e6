//! A run's life: the checks before it starts, recording it, running it, landing it, and its
//! report. Resuming one is `resume`'s.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};

use crate::config::{Deliver, Land, Options, to_record};
use crate::error::{Usage, exit};
use crate::git::{CommitId, Repo};
use crate::plan::Plan;
use crate::report::{self, Facts, Landing, LandingAction};
use crate::schedule::{Dispatcher, Ending, GoalRun, Layout, Settings};
use crate::store::{
    Board, Event, GoalStatus, Logged, RunEvent, RunRecord, RunStatus, TaskRecord, TaskStatus,
};
use crate::ui::{self, Ui};

use super::context::{Globals, open_repo, open_run_board, refuse_when_nested};
use super::facts::{
    gate_runs, goal_facts, goal_notes, merges, output_tails, parked_tasks, planning_tokens,
    repairs, run_time, time_marks,
};
use super::layout::{Lock, deps_root, new_run_id, worktree_root};
use super::output;
use super::settings::{Configured, settings};
use super::stored::read_events;

/// What a run checks before anything is recorded: that it could land, and that every output
/// path is good (see `output::check`).
pub(super) fn check_before_run(
    g: &Globals,
    repo: &Repo,
    options: &Options,
    reads: &Reads<'_>,
) -> anyhow::Result<()> {
    check_open_operation(repo, options)?;
    super::mirror::check()?;
    super::trace::check(options)?;
    crate::git::check_included(repo.workdir(), &options.include).map_err(|why| {
        Usage::new(format!("`include`: {why}"))
            .hint("name the files and directories of the repository to copy into each checkout")
    })?;
    if crate::deliver::opens_requests(options.deliver) {
        // Refused now, before any model time is spent, rather than once the work is done.
        crate::deliver::target(repo, options, &|n| std::env::var(n).ok())?;
    }
    if let Some(remote) = &options.remote {
        crate::remote::poll()?;
        crate::remote::Key::from_env()?;
        check_remote(repo, remote)?;
    }
    output::check_all(
        repo,
        &g.dir,
        g.quiet,
        &[
            (
                "--final-out",
                options.final_out.as_deref(),
                output::Kind::File,
            ),
            (
                "--final-out-dir",
                options.final_out_dir.as_deref(),
                output::Kind::Dir,
            ),
            ("--plan-out", reads.plan_out, output::Kind::File),
        ],
        &reads.files,
    )
}

/// Refuses a run spread over a remote git does not reach: a misspelt name, a URL that is not
/// a repository, a login refused. Once it runs, an outage is waited out instead.
fn check_remote(repo: &Repo, remote: &str) -> anyhow::Result<()> {
    let transport = crate::remote::Transport::new(repo.workdir(), remote);
    let mut tries = 0;
    loop {
        match transport.probe() {
            Ok(()) => return Ok(()),
            Err(e) if tries >= REMOTE_TRIES => {
                bail!(
                    Usage::new(format!("--remote {remote}: git cannot reach it: {}", e.0)).hint(
                        format!("check that {remote} is a remote's name (`git remote -v` lists them) or a URL git can fetch from, that the repository there exists, and that this machine may read it")
                    )
                );
            }
            Err(_) => {
                tries += 1;
                std::thread::sleep(crate::remote::transport::retry_wait(tries));
            }
        }
    }
}

/// Tries of the remote before a run refuses to start on it.
const REMOTE_TRIES: u32 = 2;

/// Refuses a run that would land while git has an operation open in the checkout.
fn check_open_operation(repo: &Repo, options: &Options) -> anyhow::Result<()> {
    if landing_of(options) != Land::Auto {
        return Ok(());
    }
    if let Some(op) = repo.open_operation() {
        bail!(
            Usage::new(format!(
                "a {op} is in progress in {}; a run that lands would change the checkout under it",
                repo.workdir().display()
            ))
            .hint(format!(
                "finish or abort the {op} first, or pass --land branch (the work then waits on its branch)"
            ))
        );
    }
    Ok(())
}

pub(super) fn run_file(g: &Globals, tasks: &Path, configured: &Configured) -> anyhow::Result<u8> {
    let options = &configured.options;
    if let Some(code) = refuse_when_nested(g) {
        return Ok(code);
    }
    let path = if tasks.is_absolute() {
        tasks.to_owned()
    } else {
        g.dir.join(tasks)
    };
    let plan = Plan::load(&path).map_err(|e| match e.downcast::<crate::plan::Invalid>() {
        Ok(invalid) => anyhow::Error::new(invalid),
        Err(e) => anyhow::Error::new(Usage::new(format!("{e:#}"))),
    })?;
    let plan = plan
        .with_candidates(super::settings::candidates_of(options))
        .map_err(|e| Usage::new(format!("{e:#}")))?;
    let mut settings = settings(options, &plan, &configured.profiles)?;
    let run = NewRun::begin(
        g,
        tasks.display().to_string(),
        options,
        Some(&plan),
        &Reads {
            plan_out: None,
            files: vec![path.clone()],
        },
    )?;
    let named = std::iter::once(path).chain(configured.file.clone());
    guard_files(&run.repo, &mut settings, named)?;
    // Nobody is asked about a task file: what its tasks may add is said as it starts.
    if let Some(more) = crate::schedule::Ceiling::of(&plan, &settings.spawn).describe() {
        ui::say(
            g.quiet,
            ui::Verb::Note,
            &format!("{more} tasks while they run"),
        );
    }
    run.launch(g, plan, &settings, options, None)
}

/// The report's sentence on what confined the run's tasks: on this machine, and spread over
/// machines, that each worker's kernel decides for the tasks it runs (and says so when it
/// cannot confine them).
fn confinement_summary(settings: &Settings) -> String {
    let here = settings.confine.in_force.summary();
    if settings.remote.is_none() {
        return here;
    }
    format!(
        "On this machine (the gate, resolvers and the tasks it ran): {here} Each worker confines the tasks it runs as its own kernel allows, and says so when it cannot."
    )
}

fn task_specs(plan: &Plan) -> Vec<(String, serde_json::Value)> {
    plan.tasks
        .iter()
        .map(|t| (t.id.to_string(), t.to_json()))
        .collect()
}

/// The file in a run's directory that lists the files its writers may not change unseen (see
/// `Settings::guarded`), for a resume.
pub(super) const GUARDED_FILE: &str = "guarded";

/// Adds the files among `files` that the repository tracks to the files no writer's change to
/// is merged unseen: swarm reads commands from them.
pub(super) fn guard_files(
    repo: &Repo,
    settings: &mut Settings,
    files: impl IntoIterator<Item = PathBuf>,
) -> anyhow::Result<()> {
    let top = std::fs::canonicalize(repo.workdir())?;
    for file in files {
        let Ok(file) = std::fs::canonicalize(&file) else {
            continue;
        };
        if let Ok(rel) = file.strip_prefix(&top) {
            let rel = rel.to_string_lossy().into_owned();
            if !settings.guarded.contains(&rel) {
                settings.guarded.push(rel);
            }
        }
    }
    Ok(())
}

/// What a new run reads, which its outputs must not overwrite, and where its plan goes.
pub(super) struct Reads<'a> {
    pub(super) plan_out: Option<&'a Path>,
    pub(super) files: Vec<PathBuf>,
}

/// A run recorded in the board and holding the lock, not yet started.
pub(super) struct NewRun {
    pub(super) repo: Repo,
    pub(super) lock: Lock,
    pub(super) board: Board,
    pub(super) record: RunRecord,
    pub(super) base: CommitId,
    /// Whether the plan's tasks went into the board with the run.
    pub(super) tasks_stored: bool,
    /// The run's trace, when it is exported.
    pub(super) trace: Option<crate::trace::Tracer>,
}

impl NewRun {
    /// Takes the repository's lock and records the run, with its tasks when the plan is known
    /// (in one transaction, so a kill never leaves a task file's run without its tasks).
    pub(super) fn begin(
        g: &Globals,
        source: String,
        options: &Options,
        plan: Option<&Plan>,
        reads: &Reads<'_>,
    ) -> anyhow::Result<Self> {
        let repo = open_repo(g)?;
        check_before_run(g, &repo, options, reads)?;
        let run_id = new_run_id();
        let lock = Lock::acquire(&repo, &run_id)?;
        let base = match &options.base {
            None if repo.is_unborn() => {
                return Err(Usage::new(
                    "the repository has no commit yet, and a run starts from one",
                )
                .hint("make one: git commit --allow-empty -m init")
                .into());
            }
            None => repo.resolve("HEAD")?,
            Some(rev) => repo.resolve(rev).map_err(|e| {
                anyhow::Error::new(
                    Usage::new(format!("--base {rev}: {e:#}"))
                        .hint("--base takes a commit, a branch or a tag (`git log --oneline --all` lists them)"),
                )
            })?,
        };
        // Checked before anything is written: a bad --worktree-dir is an input error.
        worktree_root(&repo, options.worktree_dir.as_deref())?;
        let mut board = open_run_board(g, &repo)?;
        // Before the run is recorded: its start is the trace's.
        let trace = super::trace::start(&mut board, &run_id, options)?;
        let record = RunRecord {
            id: run_id.clone(),
            created_at: crate::store::now_ms(),
            finished_at: None,
            status: RunStatus::Running,
            exit_code: None,
            source,
            base_commit: base.to_string(),
            integration_ref: format!("refs/heads/swarm/{run_id}"),
            options: to_record(options)?,
        };
        board.create_run(&record, &plan.map(task_specs).unwrap_or_default())?;
        Ok(Self {
            repo,
            lock,
            board,
            record,
            base,
            tasks_stored: plan.is_some(),
            trace,
        })
    }

    /// Stores the plan, makes the integration branch and runs it.
    pub(super) fn launch(
        mut self,
        g: &Globals,
        plan: Plan,
        settings: &Settings,
        options: &Options,
        goals: Option<GoalRun>,
    ) -> anyhow::Result<u8> {
        let run_id = self.record.id.clone();
        if !self.tasks_stored {
            self.board.add_tasks(&run_id, &task_specs(&plan))?;
        }
        // After the board knows the run, so a kill in between leaves a run that resume can finish.
        self.repo
            .create_branch(&format!("swarm/{run_id}"), &self.base)?;
        crate::disk::write(
            &self.board.run_dir(&run_id).join("plan.jsonl"),
            plan.to_jsonl(),
        )?;
        crate::disk::write(
            &self.board.run_dir(&run_id).join(GUARDED_FILE),
            settings.guarded.join("\n"),
        )?;
        let layout = Layout {
            worktrees: worktree_root(&self.repo, options.worktree_dir.as_deref())?.join(&run_id),
            deps: deps_root(&self.board.run_dir(&run_id), &run_id),
            run_dir: self.board.run_dir(&run_id),
            run: run_id,
            base: self.base,
            integration_ref: self.record.integration_ref,
        };
        execute(
            g,
            &self.repo,
            &mut self.board,
            plan,
            settings,
            &layout,
            options,
            self.lock,
            goals,
            self.trace,
        )
    }
}

#[expect(
    clippy::too_many_arguments,
    reason = "the pieces of one run, gathered by two callers"
)]
pub(super) fn execute(
    g: &Globals,
    repo: &Repo,
    board: &mut Board,
    plan: Plan,
    settings: &Settings,
    layout: &Layout,
    options: &Options,
    lock: Lock,
    goals: Option<GoalRun>,
    trace: Option<crate::trace::Tracer>,
) -> anyhow::Result<u8> {
    let mut ui = Ui::new(g.quiet, g.progress);
    if let crate::agent::confine::InForce::Unavailable(why) = &settings.confine.in_force {
        ui.note(
            crate::ui::Verb::Note,
            &format!("tasks run unconfined: {why}"),
        );
    }
    if options.web {
        // Served until swarm exits; the page reads the board and the log as `swarm web` does.
        let url = super::web::spawn(repo, &layout.run)?;
        ui.note(crate::ui::Verb::Started, &format!("the run's page: {url}"));
    }
    // A run that opens pull requests tells its `--on-escalate` hook where they go; agents are
    // told what earlier runs taught about the files their tasks change.
    let delivery = if crate::deliver::opens_requests(options.deliver) {
        let record = board
            .load_run(&layout.run)?
            .context("the run vanished from the board")?;
        let goal_records = board.goals().load(&layout.run)?;
        let texts: Vec<&str> = goal_records.iter().map(|g| g.text.as_str()).collect();
        let events = read_events(&board.events_path(&layout.run))?;
        let base_branch = options.base.clone().or_else(|| repo.head_branch());
        super::deliver::note(options, &record, &texts, base_branch.as_deref(), &events)
    } else {
        None
    };
    let lessons = super::memory::lessons(g, board, options)?;
    // The chats are told the run's start here, its escalations and pauses by the loop, and its
    // end below.
    let source = board
        .load_run(&layout.run)?
        .map(|r| r.source)
        .unwrap_or_default();
    let resumed = board
        .history()
        .time_marks(&layout.run)?
        .iter()
        .any(|(_, mark)| matches!(mark, crate::store::TimeMark::Resumed { .. }));
    let mirror = super::mirror::start(repo, layout, &source, plan.tasks.len(), resumed)?;
    let tuned;
    if let Some(tracer) = &trace {
        super::trace::know(tracer, &plan, settings);
    }
    let settings =
        if delivery.is_some() || !lessons.is_empty() || mirror.is_some() || trace.is_some() {
            tuned = Settings {
                delivery,
                lessons,
                mirror: mirror.as_ref().map(crate::mirror::Mirror::outbox),
                trace: trace.as_ref().map(crate::trace::Tracer::feed),
                ..settings.clone()
            };
            &tuned
        } else {
            settings
        };
    let records = board.load_tasks(&layout.run)?;
    // Around the run loop (which handles signals itself while it runs): the run is recorded,
    // landed and reported after it, each step whole. A first signal then waits for them (the
    // landing is one transaction); a second ends swarm at once, resumably.
    let signals = crate::signal::handle(|| {}, || {});
    let outcome = Dispatcher::new(
        plan, repo, board, &mut ui, settings, layout, &records, goals,
    )?
    .run();
    ui.finish();
    let (ending, plan, tip) = outcome?;
    let plan = &plan;
    let records = board.load_tasks(&layout.run)?;
    let goals = goal_facts(plan, board.goals().load(&layout.run)?);
    // Read once: a long run's log holds tens of thousands of events.
    let events: Vec<Logged> = read_events(&board.events_path(&layout.run))?;
    let parked = parked_tasks(&events, &records);
    let halted = (ending == Ending::Halted)
        .then(|| {
            events.iter().rev().find_map(|e| match &e.event {
                RunEvent::IntegrationMoved(m) => Some(m.reason.as_str()),
                _ => None,
            })
        })
        .flatten();
    // What stopped a faulted run.
    let fault = match &ending {
        Ending::Faulted(fault) => Some(fault.why.as_str()),
        _ => None,
    };
    let any = |s: TaskStatus| records.iter().any(|t| t.status == s && !t.is_candidate());
    let goal_unfinished = goals.iter().any(|g| {
        matches!(
            g.record.status,
            GoalStatus::Failed | GoalStatus::Skipped | GoalStatus::Pending
        )
    });
    let code = match ending {
        Ending::Interrupted | Ending::OverBudget => exit::RESUMABLE,
        Ending::Faulted(ref fault) => fault.kind.exit_code(),
        Ending::Halted => exit::NEEDS_HUMAN,
        Ending::Finished if !parked.is_empty() => exit::NEEDS_HUMAN,
        Ending::Finished
            if any(TaskStatus::Failed) || any(TaskStatus::Skipped) || goal_unfinished =>
        {
            exit::FAILED
        }
        Ending::Finished => exit::OK,
    };
    let integration = layout.integration_ref.trim_start_matches("refs/heads/");
    let resume = format!("swarm resume {}", layout.run);
    // A run stopped early says where its merged work is, or that there is none yet.
    let any_merged = tip != layout.base;
    let so_far = if any_merged {
        format!("merged work so far is on `{integration}`")
    } else {
        "nothing was merged yet".to_owned()
    };
    let stopped = |action, reason: Option<&str>, command: String, message: String| Landing {
        action,
        branch: any_merged.then(|| integration.to_owned()),
        commit: any_merged.then(|| tip.to_string()),
        reason: reason.map(str::to_owned),
        command: Some(command),
        message: Some(message),
    };
    let landing = if ending == Ending::Interrupted {
        stopped(
            LandingAction::Interrupted,
            None,
            resume.clone(),
            format!("Interrupted: `{resume}` continues the run; {so_far}."),
        )
    } else if let Some(why) = fault {
        stopped(
            LandingAction::Stopped,
            Some(why),
            resume.clone(),
            format!(
                "Stopped: {why}. Once that is fixed, `{resume}` runs again what it cut short, with no retry spent; {so_far}."
            ),
        )
    } else if let Some(why) = halted.filter(|_| ending == Ending::Halted) {
        Landing {
            action: LandingAction::Halted,
            branch: Some(integration.to_owned()),
            commit: Some(tip.to_string()),
            reason: Some(why.to_owned()),
            command: None,
            message: Some(format!("Not landed: {why}.")),
        }
    } else if ending == Ending::OverBudget {
        let command = format!("{resume} --budget-tokens N");
        stopped(
            LandingAction::OverBudget,
            None,
            command.clone(),
            format!(
                "Stopped at the token budget ({} tokens): `{command}` with a larger N continues the run; {so_far}.",
                options.budget_tokens.unwrap_or_default(),
            ),
        )
    } else {
        let how = landing_of(options);
        if how == Land::Auto && tip != layout.base {
            board.event(
                &layout.run,
                &Event::run(RunEvent::Landing {
                    from: layout.base.to_string(),
                    to: tip.to_string(),
                }),
            )?;
        }
        let mut landing = land(repo, layout, &tip, how, parked.is_empty())?;
        // What lands is what was merged: a run with writers parked or failed says which are
        // not in it, in the same line.
        if let (Some(message), Some(left)) = (&mut landing.message, left_out_writers(&records))
            && landing.commit.is_some()
        {
            message.push(' ');
            message.push_str(&left);
        }
        landing
    };
    let mut status = match ending {
        Ending::Interrupted | Ending::OverBudget | Ending::Halted | Ending::Faulted(_) => {
            RunStatus::Interrupted
        }
        Ending::Finished => RunStatus::Finished,
    };
    let mut code = code;
    let failed_attempts = board.failed_attempts(&layout.run)?;
    let continued = board.continued_attempts(&layout.run)?;
    let merges = merges(&events, &records);
    let kept = super::facts::kept_branches(repo, &layout.run, &records)?;
    let (gate_runs, culprits) = gate_runs(&events);
    let foreseen = super::facts::foreseen(&events);
    let picks = super::facts::picks(&events);
    let repairs = repairs(&events);
    let goal_notes = if goals.is_empty() {
        Vec::new()
    } else {
        goal_notes(&events)
    };
    let output_tails = output_tails(&events, &records);
    let spans = super::facts::attempt_spans(&events, crate::store::now_ms());
    let agents = super::facts::agent_usage(board, &layout.run, &events)?;
    let confinement = confinement_summary(settings);
    let pull_requests = super::deliver::recorded(&events);
    let recalled = super::facts::recalled(&events);
    // The run as it ends, for a report written before its end is recorded (the description of
    // a pull request).
    let mut ending_run = board
        .load_run(&layout.run)?
        .context("the run vanished from the board")?;
    ending_run.status = status;
    ending_run.exit_code = Some(i32::from(code));
    let mut facts = Facts {
        run: &ending_run,
        plan,
        tasks: &records,
        failed_attempts: &failed_attempts,
        continued: &continued,
        parked: &parked,
        merges: &merges,
        repairs: &repairs,
        landing: Some(&landing),
        pull_requests: &pull_requests,
        recalled: &recalled,
        halted,
        exit_code: i32::from(code),
        goals: &goals,
        goal_notes: &goal_notes,
        output_tails: &output_tails,
        wall: run_time(
            ending_run.created_at,
            &time_marks(&events),
            events.last().map(|e| e.at),
            None,
        ),
        planning_tokens: planning_tokens(&events),
        gate_runs: &gate_runs,
        culprits: &culprits,
        foreseen: &foreseen,
        spans: &spans,
        agents: &agents,
        kept: &kept,
        picks: &picks,
        confinement: &confinement,
    };
    let delivery = if ending == Ending::Finished
        && crate::deliver::opens_requests(options.deliver)
        && tip != layout.base
    {
        let run = super::deliver::Run {
            repo,
            layout,
            options,
            plan,
            record: &ending_run,
            tasks: &records,
            events: &events,
            goals: goals.iter().map(|g| g.record.text.as_str()).collect(),
            tip: &tip,
        };
        Some(super::deliver::deliver(
            board,
            &run,
            &report::markdown(&facts),
        )?)
    } else {
        None
    };
    let (landing, pull_requests) = match delivery {
        Some(delivery) => {
            if let Some(stopped) = delivery.stopped {
                code = stopped;
                status = RunStatus::Interrupted;
            }
            (delivery.landing, delivery.pull_requests)
        }
        None => (landing.clone(), pull_requests.clone()),
    };
    // What the run's goals came to, for later planners, before the run's end is recorded (a
    // run stopped in it keeps it when it is resumed). Memory is a help, not the run's: one
    // that cannot keep it says so, and the run ends as it did.
    let recalled_now;
    if status == RunStatus::Finished {
        let single = std::fs::read_to_string(layout.run_dir.join(super::goal::GOAL_FILE)).ok();
        let end = super::memory::RunEnd {
            run: &layout.run,
            plan,
            tasks: &records,
            goals: &goals,
            single: single.as_deref(),
            parked: &parked,
            events: &events,
            elapsed_ms: i64::try_from(facts.wall.as_millis()).unwrap_or(i64::MAX),
            client: settings.llm.as_ref(),
        };
        match super::memory::remember(g, board, options, &end) {
            Ok(kept) if kept != super::memory::Kept::default() => {
                let mut r = recalled.clone();
                r.distilled = kept.distilled;
                facts.planning_tokens = Some(facts.planning_tokens.unwrap_or(0) + kept.tokens);
                recalled_now = r;
                facts.recalled = &recalled_now;
            }
            Ok(_) => {}
            Err(e) if crate::store::is_full(&e) => return Err(e),
            Err(e) => ui::say(
                g.quiet,
                ui::Verb::Note,
                &format!("memory could not keep what this run came to: {e:#}"),
            ),
        }
    }
    board.set_run_status(
        &layout.run,
        status,
        Some(i32::from(code)),
        &Event::run(RunEvent::RunEnded {
            status: status.as_str().to_owned(),
            exit_code: code,
            landing: landing.message.clone(),
            reason: super::reason::of_ending(&ending, halted, &events),
        }),
    )?;
    let run = board
        .load_run(&layout.run)?
        .context("the run vanished from the board")?;
    facts.run = &run;
    facts.landing = Some(&landing);
    facts.pull_requests = &pull_requests;
    facts.exit_code = i32::from(code);
    let text = report::markdown(&facts);
    let report_path = layout.run_dir.join("report.md");
    output::write_atomic(&report_path, text.as_bytes())?;
    let mut shown = report_path.display().to_string();
    if let Some(out) = &options.final_out {
        let out = if out.is_absolute() {
            out.clone()
        } else {
            g.dir.join(out)
        };
        let page;
        let bytes = if as_html(options, &out) {
            page = report::html(&facts);
            page.as_bytes()
        } else {
            text.as_bytes()
        };
        output::write_atomic(&out, bytes)
            .with_context(|| format!("could not write the report to {}", out.display()))?;
        shown = out.display().to_string();
    }
    if let Some(dir) = &options.final_out_dir
        && !goals.is_empty()
    {
        let dir = if dir.is_absolute() {
            dir.clone()
        } else {
            g.dir.join(dir)
        };
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("could not create {}", dir.display()))?;
        for goal in &goals {
            let path = dir.join(format!("{}.md", goal.record.id));
            output::write_atomic(&path, report::goal_markdown(&facts, goal).as_bytes())
                .with_context(|| format!("could not write the report to {}", path.display()))?;
        }
    }
    drop(lock);
    let summary = report::summary(&facts, &shown);
    let printed = if g.json {
        ui::out(&serde_json::to_string_pretty(&report::json(
            &facts, &shown,
        ))?)
    } else {
        ui::out(&summary)
    };
    // A reader of the summary that went away changes nothing of how the run ended.
    match printed {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        other => other?,
    }
    if let Some(mirror) = mirror
        && let Some(why) = mirror.finish(crate::mirror::words::ended(&summary))
    {
        ui::say(
            g.quiet,
            ui::Verb::Note,
            &format!("the Telegram mirror dropped messages the Bot API did not take: {why}"),
        );
    }
    if let Some(tracer) = trace {
        super::trace::finish(tracer, g.quiet);
    }
    // The run is over and on record: a signal from here to the exit changes nothing of it.
    crate::signal::keep_until_exit(signals);
    Ok(code)
}

/// The lines of a run's event log, as `T`; a line cut short by a kill (or of a kind this swarm
/// does not know) is skipped, not fatal.
/// Whether `--final-out` gets the HTML report: as `--report-format` says, else by the file's
/// extension (`.html`, `.htm`).
fn as_html(options: &Options, out: &Path) -> bool {
    match options.report_format {
        Some(crate::config::ReportFormat::Html) => true,
        Some(crate::config::ReportFormat::Markdown) => false,
        None => out
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("html") || e.eq_ignore_ascii_case("htm")),
    }
}

/// The writers whose work is not in what the run merged (`It holds the work of 9 of 10
/// writers; not in it: w7 (parked), w9 (failed).`), when there are any.
fn left_out_writers(records: &[TaskRecord]) -> Option<String> {
    const NAMED: usize = 5;
    let writers: Vec<&TaskRecord> = records
        .iter()
        .filter(|t| t.spec["mode"] == "write" && !t.is_candidate())
        .collect();
    let out: Vec<String> = writers
        .iter()
        .filter(|t| {
            matches!(
                t.status,
                TaskStatus::Failed | TaskStatus::Parked | TaskStatus::Skipped
            )
        })
        .map(|t| format!("{} ({})", t.id, t.status.as_str()))
        .collect();
    if out.is_empty() {
        return None;
    }
    let mut named = out[..out.len().min(NAMED)].join(", ");
    if out.len() > NAMED {
        named = format!("{named} and {} more", out.len() - NAMED);
    }
    Some(format!(
        "It holds the work of {} of {} writers; not in it: {named}.",
        writers.len() - out.len(),
        writers.len()
    ))
}

/// What becomes of the integration branch here: as `--land` says when the run lands, kept
/// (`--deliver branch`), or kept quietly when pull requests take the result (the delivery then
/// says where it went).
fn landing_of(options: &Options) -> Land {
    match options.deliver {
        None | Some(Deliver::Land) => options.land.unwrap_or(Land::Auto),
        Some(Deliver::Branch) => Land::Branch,
        Some(Deliver::Pr | Deliver::PrPerTask | Deliver::Stack) => Land::None,
    }
}

/// Takes the integration branch to the user per `--land`; returns what became of it. The
/// integration branch is deleted once the user's branch holds all of it, if `drop_branch`
/// (parked tasks name it in their instructions, so then it stays).
pub(super) fn land(
    repo: &Repo,
    layout: &Layout,
    tip: &CommitId,
    how: Land,
    drop_branch: bool,
) -> anyhow::Result<Landing> {
    let integration = layout.integration_ref.trim_start_matches("refs/heads/");
    if *tip == layout.base {
        // Nothing was merged: the branch would only repeat the base.
        repo.delete_branch_at(integration, tip)?;
        return Ok(Landing {
            action: LandingAction::NothingMerged,
            branch: None,
            commit: None,
            reason: None,
            command: None,
            message: Some("Nothing was merged; your branch is as it was.".to_owned()),
        });
    }
    let take = format!("git merge --ff-only {integration}");
    let kept = |reason: Option<String>, message: Option<String>| Landing {
        action: LandingAction::Kept,
        branch: Some(integration.to_owned()),
        commit: Some(tip.to_string()),
        reason,
        command: Some(take.clone()),
        message,
    };
    match how {
        Land::None => Ok(kept(None, None)),
        Land::Branch => Ok(kept(
            None,
            Some(format!(
                "The merged work is on `{integration}`; take it with `{take}`."
            )),
        )),
        Land::Auto => {
            match crate::git::land(repo, &layout.base, tip, &layout.run_dir.join("landing"))? {
                crate::git::Landing::FastForwarded { branch } => {
                    let kept = if drop_branch {
                        repo.delete_branch_at(integration, tip)?;
                        String::new()
                    } else {
                        format!("; `{integration}` is kept for the parked tasks")
                    };
                    let message = format!(
                        "Landed: `{branch}` fast-forwarded to {} and the checkout updated{kept}.",
                        tip.short()
                    );
                    Ok(Landing {
                        action: LandingAction::FastForwarded,
                        branch: Some(branch),
                        commit: Some(tip.to_string()),
                        reason: None,
                        command: None,
                        message: Some(message),
                    })
                }
                crate::git::Landing::Kept { reason } => {
                    let message = format!(
                        "Not landed ({reason}): the merged work is on `{integration}`; take it with `{take}`."
                    );
                    Ok(kept(Some(reason), Some(message)))
                }
            }
        }
    }
}

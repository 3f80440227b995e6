//! Table tests of the core's policies: a run in some state, an input, and the effects that
//! follow, each effect written as a short line (`brief`). No git, no board, no processes: the
//! inputs are what the executor would hand over.

use std::time::{Duration, Instant};

use crate::agent::cli::UsageLimit;
use crate::git::CommitId;
use crate::plan::Plan;
use crate::schedule::Settings;
use crate::schedule::job::{Report, Verdict};
use crate::store::{GoalRecord, GoalStatus, Moved, RunEvent};
use crate::ui::Told;

use super::backoff;
use super::dag::State;
use super::slot::Totals;
use super::{Core, Effect, Ending, Found, Hold, Input, MergeOutcome, PlanAnswer, Rec, Start};

pub(super) fn plan(lines: &[&str]) -> Plan {
    let (tasks, problems) = Plan::read(&lines.join("\n"));
    assert!(problems.is_empty(), "{problems:?}");
    Plan::from_tasks(tasks).unwrap()
}

pub(super) fn commit(name: &str) -> CommitId {
    CommitId::new(name)
}

/// A run of `lines` on `settings`, begun and opened, its clock at `now` seconds.
struct Run<'s> {
    core: Core<'s>,
    t0: Instant,
    now: Duration,
}

impl<'s> Run<'s> {
    fn new(settings: &'s Settings, lines: &[&str]) -> Self {
        Self::with_goals(settings, lines, None)
    }

    fn with_goals(
        settings: &'s Settings,
        lines: &[&str],
        goals: Option<(Vec<GoalRecord>, bool)>,
    ) -> Self {
        let mut core = Core::new(
            settings,
            Start {
                plan: plan(lines),
                records: &[],
                tip: commit("base"),
                base: commit("base"),
                green: None,
                gate_runs: 0,
                goals,
                seed: 7,
            },
        );
        let begun = core.begin(Found::default());
        assert!(begun.is_empty(), "{begun:?}");
        Self {
            core,
            t0: Instant::now(),
            now: Duration::ZERO,
        }
    }

    /// A run resumed from the board's `records`, its integration tip recorded at `tip`, and
    /// what the executor found in git: the run, and what it does as it begins.
    fn resumed(
        settings: &'s Settings,
        lines: &[&str],
        records: &[crate::store::TaskRecord],
        tip: &str,
        found: Found,
    ) -> (Self, Vec<String>) {
        let mut core = Core::new(
            settings,
            Start {
                plan: plan(lines),
                records,
                tip: commit(tip),
                base: commit("base"),
                green: None,
                gate_runs: 1,
                goals: None,
                seed: 7,
            },
        );
        let begun = core.begin(found);
        let begun = begun.iter().map(|e| brief(&core, e)).collect();
        let run = Self {
            core,
            t0: Instant::now(),
            now: Duration::ZERO,
        };
        (run, begun)
    }

    /// The clock moves to `secs` after the start.
    fn at(&mut self, secs: u64) -> &mut Self {
        self.now = Duration::from_secs(secs);
        self
    }

    /// What the core does on `input`, an effect a line.
    fn on(&mut self, input: Input) -> Vec<String> {
        let fx = self.core.on(input, self.t0 + self.now);
        fx.iter().map(|e| brief(&self.core, e)).collect()
    }

    fn open(&mut self) -> Vec<String> {
        self.on(Input::Open)
    }

    fn ended(&mut self, report: Report) -> Vec<String> {
        self.on(Input::Ended {
            report,
            limit_wait: Duration::ZERO,
        })
    }

    /// How the run ends now, and what it records then.
    fn finish(&mut self) -> (Ending, Vec<String>) {
        assert!(self.core.done(), "the run is not done");
        let (ending, fx) = self.core.finish();
        let lines = fx.iter().map(|e| brief(&self.core, e)).collect();
        (ending, lines)
    }
}

pub(super) fn report(task: usize, attempt: u32, verdict: Verdict) -> Report {
    Report {
        task,
        attempt,
        verdict,
        elapsed: Duration::from_secs(1),
        used: Totals::default(),
        session: None,
        stderr_tail: Vec::new(),
        spawn: None,
    }
}

fn ok(task: usize, attempt: u32) -> Report {
    report(
        task,
        attempt,
        Verdict::Succeeded {
            result: "done".to_owned(),
            commit: None,
        },
    )
}

fn committed(task: usize, attempt: u32, c: &str) -> Report {
    report(
        task,
        attempt,
        Verdict::Succeeded {
            result: "done".to_owned(),
            commit: Some(commit(c)),
        },
    )
}

fn failed(task: usize, attempt: u32, why: &str) -> Report {
    report(task, attempt, Verdict::Failed(why.to_owned()))
}

/// An effect as one short line.
pub(super) fn brief(core: &Core<'_>, e: &Effect) -> String {
    let id = |i: &usize| core.id(*i).to_owned();
    match e {
        Effect::Start {
            task, attempt, tip, ..
        } => format!("start {}#{attempt} at {tip}", id(task)),
        Effect::Publish { task, attempt, tip } => {
            format!("publish {}#{attempt} at {tip}", id(task))
        }
        Effect::StartResolver { task, tip } => format!("resolve {} at {tip}", id(task)),
        Effect::StartGate {
            number,
            probe,
            tip,
            batch,
        } => {
            let batch: Vec<String> = batch.iter().map(id).collect();
            format!(
                "gate #{number} {} at {tip} [{}]",
                probe.as_str(),
                batch.join(" ")
            )
        }
        Effect::Merge { task, tip, onto } => {
            let onto = if *onto { " (moving onto it)" } else { "" };
            format!("merge {} into {tip}{onto}", id(task))
        }
        Effect::CleanUp { task, merged, .. } => {
            let merged = if *merged { " (merged)" } else { "" };
            format!("clean up {}{merged}", id(task))
        }
        Effect::DropSnapshots(tip) => format!("drop snapshots but {tip}'s"),
        Effect::Park { task, hold } => match hold {
            Hold::Conflict { paths, .. } => {
                format!("park {}: conflict in {}", id(task), paths.join(" "))
            }
            Hold::Review { why, .. } | Hold::Gate { why, .. } => {
                format!("park {}: {why}", id(task))
            }
        },
        Effect::Escalate(_) => "escalate the run".to_owned(),
        Effect::Rewind { from, to, .. } => format!("rewind {from} to {to}"),
        Effect::Record(rec) => format!("record {}", rec_brief(rec)),
        Effect::Tell(told) => format!("tell {}", told_brief(told)),
        Effect::StopAttempts => "stop attempts".to_owned(),
        Effect::WatchEndpoint(wait) => format!("watch the endpoint for {}s", wait.as_secs()),
        Effect::InferNeeds(goals) => format!("infer needs of goals {goals:?}"),
        Effect::PlanGoal(gi) => format!("plan goal {gi}"),
        Effect::StopPlanning => "stop planning".to_owned(),
        Effect::PollQueue => "poll the queue".to_owned(),
        Effect::WritePlan => "write the plan".to_owned(),
        Effect::KeptCheckout(i) => format!("keep {}'s checkout", id(i)),
        Effect::Forecast { writers, tip } => {
            let writers: Vec<String> = writers.iter().map(id).collect();
            format!("forecast [{}] at {tip}", writers.join(" "))
        }
        Effect::Note { task, text } => format!("note to {}: {text}", id(task)),
    }
}

/// The name of an event, as its `Debug` begins.
fn event(e: &impl std::fmt::Debug) -> String {
    let text = format!("{e:?}");
    text.split([' ', '(', '{'])
        .next()
        .unwrap_or_default()
        .to_owned()
}

fn rec_brief(rec: &Rec) -> String {
    match rec {
        Rec::Run(e) => format!("run {}", event(e)),
        Rec::Task(id, e) => format!("{id} {}", event(e)),
        Rec::Session(id, s) => format!("{id} session {s:?}"),
        Rec::Spent { id, totals } => format!("{id} spent {}", totals.tokens),
        Rec::Succeeded { id, commit, .. } => match commit {
            Some(c) => format!("{id} committed {c}"),
            None => format!("{id} succeeded"),
        },
        Rec::Failed {
            id,
            failures,
            status,
            retry,
            ..
        } => {
            let retry = if *retry { ", retried" } else { "" };
            format!("{id} failed ({status:?}, failure {failures}{retry})")
        }
        Rec::Interrupted { id, .. } => format!("{id} interrupted"),
        Rec::Limited { id, stops_run, .. } => {
            let stops = if *stops_run { " (stops the run)" } else { "" };
            format!("{id} limited{stops}")
        }
        Rec::Faulted { id, kind, .. } => format!("{id} fault ({kind})"),
        Rec::MarkInterrupted(ids) => format!("interrupted [{}]", ids.join(" ")),
        Rec::Skipped(skips) => {
            let skips: Vec<String> = skips
                .iter()
                .map(|(id, why)| format!("{id} ({why})"))
                .collect();
            format!("skipped {}", skips.join(", "))
        }
        Rec::Merged { id, after, .. } => format!("{id} merged at {after}"),
        Rec::MergeRecovered { id, .. } => format!("{id} merge recovered"),
        Rec::TipRecovered { after, .. } => format!("tip recovered at {after}"),
        Rec::Resolved { id, commit, .. } => format!("{id} resolved as {commit}"),
        Rec::GatePassed { tip, .. } => format!("gate passed at {tip}"),
        Rec::MergeAgain(ids) => format!("merge again [{}]", ids.join(" ")),
        Rec::GoalStatus { goal, status, .. } => format!("goal {goal} {status:?}"),
        Rec::GoalNeeds { rows, .. } => {
            let rows: Vec<String> = rows
                .iter()
                .map(|(g, needs)| {
                    let needs: Vec<&str> = needs.iter().map(|n| n.goal.as_str()).collect();
                    format!("{g} needs [{}]", needs.join(" "))
                })
                .collect();
            format!("goal needs: {}", rows.join(", "))
        }
        Rec::TasksAdded(specs) => {
            let ids: Vec<&str> = specs.iter().map(|(id, _)| id.as_str()).collect();
            format!("tasks added [{}]", ids.join(" "))
        }
    }
}

fn told_brief(t: &Told) -> String {
    match t {
        Told::Ended {
            id, how, detail, ..
        } => match detail {
            Some(d) => format!("{id} {how:?}: {d}"),
            None => format!("{id} {how:?}"),
        },
        Told::Tail(lines) => format!("tail of {} line(s)", lines.len()),
        Told::Retry {
            id,
            attempt,
            retry,
            retries,
            ..
        } => format!("retry {id}#{attempt} (retry {retry} of {retries})"),
        Told::Skipped { id, why } => format!("skipped {id} ({why})"),
        Told::Merged { id, .. } => format!("merged {id}"),
        Told::Stopping(stop) => format!("stopping: {stop:?}"),
        other => format!("{other:?}"),
    }
}

fn lines(expected: &[&str]) -> Vec<String> {
    expected.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn backoff_grows_and_is_capped() {
    let b = Duration::from_secs(1);
    let mut rng = fastrand::Rng::with_seed(7);
    assert!(backoff(b, 1, &mut rng) <= Duration::from_millis(1200));
    assert!(backoff(b, 3, &mut rng) >= Duration::from_millis(3200));
    assert!(backoff(b, 30, &mut rng) <= Duration::from_secs(72));
}

#[test]
fn a_failed_attempt_is_retried_after_its_backoff_then_fails_for_good_and_skips_below() {
    let settings = Settings::sample(2);
    let mut run = Run::new(
        &settings,
        &[
            r#"{"id":"w","run":"x","mode":"write"}"#,
            r#"{"id":"after","run":"x","mode":"read","deps":["w"]}"#,
        ],
    );
    let table: Vec<(u64, Input, Vec<String>)> = vec![
        (0, Input::Open, lines(&["start w#1 at base"])),
        (
            1,
            Input::Ended {
                report: failed(0, 1, "boom"),
                limit_wait: Duration::ZERO,
            },
            lines(&[
                "record w failed (Pending, failure 1, retried)",
                "tell w Failed: boom",
                "tell tail of 0 line(s)",
                "tell retry w#2 (retry 1 of 1)",
            ]),
        ),
        // The backoff (1 s, give or take a fifth) is not over.
        (1, Input::Tick, lines(&[])),
        (3, Input::Tick, lines(&["start w#2 at base"])),
        (
            4,
            Input::Ended {
                report: failed(0, 2, "boom again"),
                limit_wait: Duration::ZERO,
            },
            lines(&[
                "record w failed (Failed, failure 2)",
                "tell w Failed: boom again",
                "tell tail of 0 line(s)",
                "keep w's checkout",
                "record skipped after (dependency w failed)",
                "tell skipped after (dependency w failed)",
            ]),
        ),
    ];
    for (at, input, expected) in table {
        let seen = run.at(at).on(input);
        assert_eq!(seen, expected);
    }
    assert_eq!(run.finish(), (Ending::Finished, lines(&[])));
}

/// The totals the records among `fx` carry for their tasks, in order.
fn recorded_totals(fx: &[Effect]) -> Vec<Totals> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::Record(
                Rec::Succeeded { totals, .. }
                | Rec::Failed { totals, .. }
                | Rec::Interrupted { totals, .. }
                | Rec::Spent { totals, .. },
            ) => Some(*totals),
            _ => None,
        })
        .collect()
}

fn used(tokens: u64, prompt_tokens: u64, cached_tokens: u64, cost: Option<f64>) -> Totals {
    Totals {
        tokens,
        prompt_tokens,
        cached_tokens,
        cost,
    }
}

#[test]
fn a_tasks_totals_add_up_its_attempts_cached_tokens_among_them_and_go_on_after_a_resume() {
    let settings = Settings::sample(2);
    let tasks = [r#"{"id":"a","prompt":"p","mode":"read"}"#];
    let mut run = Run::new(&settings, &tasks);
    assert_eq!(run.open(), ["start a#1 at base"]);
    let mut first = failed(0, 1, "boom");
    first.used = used(100, 80, 60, None);
    let fx = run.core.on(
        Input::Ended {
            report: first,
            limit_wait: Duration::ZERO,
        },
        run.t0,
    );
    assert_eq!(recorded_totals(&fx), [used(100, 80, 60, None)]);
    assert_eq!(run.at(3).on(Input::Tick), ["start a#2 at base"]);
    let mut second = ok(0, 2);
    second.used = used(50, 40, 30, Some(0.02));
    let fx = run.core.on(
        Input::Ended {
            report: second,
            limit_wait: Duration::ZERO,
        },
        run.t0 + Duration::from_secs(4),
    );
    assert_eq!(recorded_totals(&fx), [used(150, 120, 90, Some(0.02))]);

    // Resumed from what the board holds of an attempt cut short, the next attempt adds to it.
    let mut a = super::sim::world::record("a", serde_json::json!({"id": "a"}));
    a.status = crate::store::TaskStatus::Interrupted;
    a.attempts = 1;
    (a.tokens, a.prompt_tokens, a.cached_tokens, a.cost) = (150, 120, 90, Some(0.02));
    let (mut run, begun) = Run::resumed(&settings, &tasks, &[a], "base", Found::default());
    assert!(begun.is_empty(), "{begun:?}");
    assert_eq!(run.open(), ["start a#2 at base"]);
    let mut third = ok(0, 2);
    third.used = used(10, 8, 8, Some(0.01));
    let fx = run.core.on(
        Input::Ended {
            report: third,
            limit_wait: Duration::ZERO,
        },
        run.t0,
    );
    assert_eq!(recorded_totals(&fx), [used(160, 128, 98, Some(0.03))]);
}

#[test]
fn a_budget_spent_by_an_attempt_lets_the_others_finish_and_starts_nothing() {
    let mut settings = Settings::sample(2);
    settings.budget_tokens = Some(100);
    let mut run = Run::new(
        &settings,
        &[
            r#"{"id":"a","run":"x","mode":"read"}"#,
            r#"{"id":"b","run":"x","mode":"read"}"#,
            r#"{"id":"c","run":"x","mode":"read"}"#,
        ],
    );
    assert_eq!(run.open(), ["start a#1 at base", "start b#1 at base"]);
    let mut spent = ok(0, 1);
    spent.used.tokens = 150;
    assert_eq!(
        run.ended(spent),
        [
            "record a succeeded",
            "tell a Finished",
            "record run BudgetSpent",
            "tell stopping: Budget { used: 150, budget: 100, running: 1 }",
        ]
    );
    // b finishes and is recorded; c never starts.
    assert_eq!(
        run.ended(ok(1, 1)),
        ["record b succeeded", "tell b Finished"]
    );
    assert_eq!(
        run.finish(),
        (Ending::OverBudget, lines(&["record interrupted []"]))
    );
}

#[test]
fn a_pool_member_at_its_limit_pauses_alone_and_the_task_goes_to_another() {
    let mut settings = Settings::sample(2);
    settings.pool = Some("p".to_owned());
    settings
        .pools
        .insert("p".to_owned(), vec!["m1".to_owned(), "m2".to_owned()]);
    let mut run = Run::new(&settings, &[r#"{"id":"a","prompt":"do it"}"#]);
    assert_eq!(run.open(), ["start a#1 at base"]);
    assert_eq!(run.core.slots[0].member.as_deref(), Some("m1"));
    let limited = report(
        0,
        1,
        Verdict::Limited(UsageLimit {
            message: "out of credits".to_owned(),
            resets_at: None,
            lasting: false,
        }),
    );
    let seen = run.on(Input::Ended {
        report: limited,
        limit_wait: Duration::from_secs(60),
    });
    assert_eq!(
        seen,
        [
            "record a MemberLimited",
            "record a limited",
            "tell Limited { id: \"a\", elapsed: 1s, limit: Member { member: \"m1\", message: \"out of credits\", wait: 60s, lasting: false, out: false, max_wait: 900s } }",
            "start a#2 at base",
        ]
    );
    assert_eq!(run.core.slots[0].member.as_deref(), Some("m2"));
}

#[test]
fn a_halted_merge_queue_merges_nothing_more_and_the_run_winds_down() {
    let settings = Settings::sample(2);
    let mut run = Run::new(
        &settings,
        &[
            r#"{"id":"w","run":"x","mode":"write"}"#,
            r#"{"id":"v","run":"x","mode":"write"}"#,
            r#"{"id":"after","run":"x","mode":"read","deps":["w"]}"#,
        ],
    );
    assert_eq!(run.open(), ["start w#1 at base", "start v#1 at base"]);
    run.core.prepared(0, Some(commit("base")), None);
    run.core.prepared(1, Some(commit("base")), None);
    assert_eq!(
        run.ended(committed(0, 1, "cw")),
        ["record w committed cw", "merge w into base"]
    );
    let moved = Moved {
        integration: "swarm/r".to_owned(),
        found: Some("elsewhere".to_owned()),
        backup: Some("swarm/r@moved-elsewhere".to_owned()),
        tip: "base".to_owned(),
        reason: "the integration branch was moved".to_owned(),
    };
    let outcome = MergeOutcome::Moved(Box::new(moved));
    assert_eq!(
        run.on(Input::Merge { task: 0, outcome }),
        [
            "record run IntegrationMoved",
            "tell Halted(\"the integration branch was moved\")",
            "escalate the run",
            "tell stopping: Halted { why: \"the integration branch was moved\", running: 1 }",
        ]
    );
    // v's commit waits for a resume: it is not merged.
    assert_eq!(run.ended(committed(1, 1, "cv")), ["record v committed cv"]);
    assert_eq!(
        run.finish(),
        (Ending::Halted, lines(&["record interrupted []"]))
    );
}

#[test]
fn a_signal_during_a_merge_stops_the_attempts_and_the_merge_still_lands() {
    let settings = Settings::sample(2);
    let mut run = Run::new(
        &settings,
        &[
            r#"{"id":"w","run":"x","mode":"write"}"#,
            r#"{"id":"r","run":"x","mode":"read"}"#,
            r#"{"id":"after","run":"x","mode":"read","deps":["w"]}"#,
        ],
    );
    assert_eq!(run.open(), ["start w#1 at base", "start r#1 at base"]);
    run.core.prepared(0, Some(commit("base")), None);
    assert_eq!(
        run.ended(committed(0, 1, "cw")),
        ["record w committed cw", "merge w into base"]
    );
    assert_eq!(
        run.on(Input::Signal),
        ["stop attempts", "tell stopping: Signal { running: 1 }"]
    );
    let merged = MergeOutcome::Merged {
        before: commit("base"),
        after: commit("m1"),
        ms: 1.0,
    };
    // Merged and cleaned up; `after` is ready but nothing starts any more.
    assert_eq!(
        run.on(Input::Merge {
            task: 0,
            outcome: merged
        }),
        [
            "record w merged at m1",
            "tell merged w",
            "clean up w (merged)",
            "drop snapshots but m1's",
        ]
    );
    let cut = report(1, 1, Verdict::Interrupted);
    assert_eq!(
        run.ended(cut),
        ["record r interrupted", "tell r Interrupted"]
    );
    assert_eq!(
        run.finish(),
        (Ending::Interrupted, lines(&["record interrupted []"]))
    );
}

/// A limit on spawning, how the run sets it, the parent's line, the tasks it asks for, and
/// why they are refused.
type SpawnCase = (
    &'static str,
    fn(&mut Settings),
    &'static str,
    usize,
    &'static str,
);

#[test]
fn a_spawn_past_each_limit_is_refused_and_joins_nothing() {
    let spawn = |n: usize| -> String {
        (0..n)
            .map(|k| format!(r#"{{"id":"s{k}","prompt":"more"}}"#))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let table: &[SpawnCase] = &[
        (
            "no spawn key",
            |_| {},
            r#"{"id":"p","prompt":"x","mode":"read"}"#,
            1,
            "p may not add tasks: its line gives no \"spawn\" (the most tasks it may add)",
        ),
        (
            "spawning off",
            |s| s.spawn.which = crate::config::Spawning::Off,
            r#"{"id":"p","prompt":"x","mode":"read","spawn":5}"#,
            1,
            "spawning is off in this run (spawning = \"off\")",
        ),
        (
            "its own spawn",
            |_| {},
            r#"{"id":"p","prompt":"x","mode":"read","spawn":2}"#,
            3,
            "3 tasks, past what p's \"spawn\" allows (2 in all below it, 2 left)",
        ),
        (
            "max-children",
            |s| s.spawn.children = 2,
            r#"{"id":"p","prompt":"x","mode":"read","spawn":9}"#,
            3,
            "3 tasks, past max-children (2 a task)",
        ),
        (
            "max-depth",
            |s| s.spawn.depth = 0,
            r#"{"id":"p","prompt":"x","mode":"read","spawn":9}"#,
            1,
            "p is at depth 0, and max-depth is 0: its tasks may not spawn",
        ),
        (
            "max-spawned",
            |s| s.spawn.tasks = 2,
            r#"{"id":"p","prompt":"x","mode":"read","spawn":9}"#,
            3,
            "3 tasks, past max-spawned (2 a run, 2 left)",
        ),
        (
            "spawns-per-minute",
            |s| s.spawn.per_minute = 2,
            r#"{"id":"p","prompt":"x","mode":"read","spawn":9}"#,
            3,
            "3 tasks, past spawns-per-minute (2 a minute, 2 left now); try again later",
        ),
    ];
    for (name, set, line, asked, why) in table {
        let mut settings = Settings::sample(2);
        set(&mut settings);
        let mut run = Run::new(&settings, &[line]);
        assert_eq!(run.open(), ["start p#1 at base"], "{name}");
        let mut done = ok(0, 1);
        done.spawn = Some(Ok(spawn(*asked)));
        assert_eq!(
            run.ended(done),
            [
                "record p succeeded".to_owned(),
                format!("tell SpawnRefused {{ id: \"p\", why: {why:?} }}"),
                "tell p Finished".to_owned(),
            ],
            "{name}"
        );
        assert_eq!(run.core.plan.len(), 1, "{name}");
    }
}

#[test]
fn a_spawn_within_the_limits_joins_and_its_tasks_start_beside_the_running_ones() {
    let settings = Settings::sample(3);
    let mut run = Run::new(
        &settings,
        &[
            r#"{"id":"p","prompt":"x","mode":"read","spawn":2}"#,
            r#"{"id":"slow","run":"x","mode":"read"}"#,
        ],
    );
    assert_eq!(run.open(), ["start p#1 at base", "start slow#1 at base"]);
    let mut done = ok(0, 1);
    done.spawn = Some(Ok([
        r#"{"id":"a","prompt":"more"}"#,
        r#"{"id":"b","prompt":"more"}"#,
    ]
    .join("\n")));
    assert_eq!(
        run.ended(done),
        [
            "record p succeeded",
            "write the plan",
            "tell Spawned { id: \"p\", children: 2, then: false }",
            "tell p Finished",
            "start p.a#1 at base",
            "start p.b#1 at base",
        ]
    );
    // A second end of the same attempt is refused, and changes nothing.
    assert_eq!(run.ended(ok(0, 1)), lines(&[]));
    assert_eq!(run.core.refused.len(), 1);
}

#[test]
fn a_goals_tasks_join_while_another_goals_run() {
    let settings = Settings::sample(3);
    let goal = |id: &str| GoalRecord {
        id: id.to_owned(),
        text: format!("goal {id}"),
        needs: Some(Vec::new()),
        status: GoalStatus::Pending,
        reason: None,
        queue_id: None,
    };
    let mut run = Run::with_goals(&settings, &[], Some((vec![goal("g1"), goal("g2")], false)));
    assert_eq!(
        run.open(),
        [
            "tell Planning { goal: \"g1\", text: \"goal g1\" }",
            "plan goal 0",
            "tell Planning { goal: \"g2\", text: \"goal g2\" }",
            "plan goal 1",
        ]
    );
    let planned = |ids: &[&str], goal: &str| PlanAnswer::Tasks {
        tasks: plan(
            &ids.iter()
                .map(|id| format!(r#"{{"id":"{goal}.{id}","run":"x","mode":"read"}}"#))
                .collect::<Vec<_>>()
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>(),
        )
        .tasks,
        repairs: Vec::new(),
        requests: 1,
        tokens: 10,
    };
    assert_eq!(
        run.on(Input::Planned {
            goal: 1,
            answer: planned(&["t"], "g2"),
        }),
        [
            "record tasks added [g2.t]",
            "record goal g2 Planned",
            "write the plan",
            "tell Planned { goal: \"g2\", tasks: 1, repairs: 0, tokens: 10, spawning: None }",
            "start g2.t#1 at base",
        ]
    );
    // g1's tasks join while g2.t runs, and start in the slots left.
    assert_eq!(
        run.on(Input::Planned {
            goal: 0,
            answer: planned(&["a", "b"], "g1"),
        }),
        [
            "record tasks added [g1.a g1.b]",
            "record goal g1 Planned",
            "write the plan",
            "tell Planned { goal: \"g1\", tasks: 2, repairs: 0, tokens: 10, spawning: None }",
            "start g1.a#1 at base",
            "start g1.b#1 at base",
        ]
    );
    assert_eq!(
        run.ended(ok(0, 1)),
        [
            "record g2.t succeeded",
            "tell g2.t Finished",
            "record goal g2 Done",
            "tell GoalEnded { goal: \"g2\", text: \"goal g2\", how: Done }",
        ]
    );
}

#[test]
fn a_red_batch_is_bisected_and_its_culprit_taken_out_and_the_rest_merged_again() {
    let mut settings = Settings::sample(3);
    settings.gate = Some("make test".to_owned());
    let mut run = Run::new(
        &settings,
        &[
            r#"{"id":"a","run":"x","mode":"write"}"#,
            r#"{"id":"b","run":"x","mode":"write"}"#,
        ],
    );
    assert_eq!(run.open(), ["start a#1 at base", "start b#1 at base"]);
    for i in 0..2 {
        run.core.prepared(i, Some(commit("base")), None);
    }
    let merged = |before: &str, after: &str| MergeOutcome::Merged {
        before: commit(before),
        after: commit(after),
        ms: 1.0,
    };
    assert_eq!(
        run.ended(committed(0, 1, "ca")),
        ["record a committed ca", "merge a into base"]
    );
    // Merged, but not done before the gate passes; the gate starts on the new tip.
    assert_eq!(
        run.on(Input::Merge {
            task: 0,
            outcome: merged("base", "m1")
        }),
        [
            "record a merged at m1",
            "tell merged a",
            "clean up a (merged)",
            "drop snapshots but m1's",
            "gate #1 batch at m1 [a]",
        ]
    );
    assert_eq!(
        run.ended(committed(1, 1, "cb")),
        ["record b committed cb", "merge b into m1"]
    );
    assert_eq!(
        run.on(Input::Merge {
            task: 1,
            outcome: merged("m1", "m2")
        }),
        [
            "record b merged at m2",
            "tell merged b",
            "clean up b (merged)",
            "drop snapshots but m2's"
        ]
    );
    let red = |n| report(0, n, Verdict::Failed("tests fail".to_owned()));
    let green = |n| {
        report(
            0,
            n,
            Verdict::Succeeded {
                result: String::new(),
                commit: None,
            },
        )
    };
    // The first batch (a alone) is red: a is the culprit once the base is known green.
    assert_eq!(
        run.on(Input::Gated(red(1))),
        [
            "tell GateEnded { tip: \"m1\", verdict: \"red\", green: false, elapsed: 1s }",
            "tell tail of 0 line(s)",
            "record run GateFinished",
            "gate #2 base at base []",
        ]
    );
    assert_eq!(
        run.on(Input::Gated(green(2))),
        [
            "tell GateEnded { tip: \"base\", verdict: \"green\", green: true, elapsed: 1s }",
            "record run GateFinished",
            "record merge again [b]",
            "park a: the gate fails on m1, the first tip that merges it (gate: make test)",
            "tell Parked { id: \"a\", why: Held(\"the gate fails on m1, the first tip that merges it (gate: make test)\") }",
            "rewind m2 to base",
            "tell TakenOut { culprit: \"a\", tip: \"base\", again: [\"b\"] }",
            "drop snapshots but base's",
            "merge b into base",
        ]
    );
    assert_eq!(
        run.on(Input::Merge {
            task: 1,
            outcome: merged("base", "m3")
        }),
        [
            "record b merged at m3",
            "tell merged b",
            "clean up b (merged)",
            "drop snapshots but m3's",
            "gate #3 batch at m3 [b]",
        ]
    );
    assert_eq!(
        run.on(Input::Gated(green(3))),
        [
            "tell GateEnded { tip: \"m3\", verdict: \"green\", green: true, elapsed: 1s }",
            "record gate passed at m3",
        ]
    );
    assert_eq!(run.core.final_tip(), commit("m3"));
    assert_eq!(run.finish(), (Ending::Finished, lines(&[])));
    // Nothing the core was told was impossible.
    assert!(run.core.refused.is_empty(), "{:?}", run.core.refused);
}

#[test]
fn a_merge_the_board_lost_before_the_gate_passed_is_recorded_on_resume_and_waits_for_the_gate() {
    let mut settings = Settings::sample(2);
    settings.gate = Some("make test".to_owned());
    let tasks = [r#"{"id":"a","run":"x","mode":"write"}"#];
    // The board holds `a` committed; the merge that made m1 was made in git, and then a full
    // disk lost its record.
    let mut a = super::sim::world::record("a", serde_json::json!({"id": "a"}));
    a.status = crate::store::TaskStatus::Committed;
    a.commit_id = Some("ca".to_owned());
    a.start_commit = Some("base".to_owned());
    let records = [a];
    let (mut run, begun) = Run::resumed(
        &settings,
        &tasks,
        &records,
        "base",
        Found {
            tip: Some(commit("m1")),
            ungated: vec![(0, commit("m1"))],
            ..Found::default()
        },
    );
    assert_eq!(
        begun,
        [
            "record tip recovered at m1",
            "record a merge recovered",
            "tell merged a",
            "clean up a (merged)",
        ]
    );
    // Not done before the gate passes on m1.
    assert_eq!(run.open(), ["gate #2 batch at m1 [a]"]);
    assert!(!run.core.done());
    let green = report(
        0,
        2,
        Verdict::Succeeded {
            result: String::new(),
            commit: None,
        },
    );
    assert_eq!(
        run.on(Input::Gated(green)),
        [
            "tell GateEnded { tip: \"m1\", verdict: \"green\", green: true, elapsed: 1s }",
            "record gate passed at m1",
        ]
    );
    assert_eq!(run.finish(), (Ending::Finished, lines(&[])));
    assert!(run.core.refused.is_empty(), "{:?}", run.core.refused);
}

fn merged(before: &str, after: &str) -> MergeOutcome {
    MergeOutcome::Merged {
        before: commit(before),
        after: commit(after),
        ms: 1.0,
    }
}

fn gate_run(n: u32, green: bool) -> Report {
    let verdict = if green {
        Verdict::Succeeded {
            result: String::new(),
            commit: None,
        }
    } else {
        Verdict::Failed("tests fail".to_owned())
    };
    report(0, n, verdict)
}

/// Two writers under a gate, `a` merged at m1 with the gate running on it, `b` committed.
fn gated_pair(settings: &Settings) -> Run<'_> {
    let mut run = Run::new(
        settings,
        &[
            r#"{"id":"a","run":"x","mode":"write"}"#,
            r#"{"id":"b","run":"x","mode":"write"}"#,
        ],
    );
    assert_eq!(run.open(), ["start a#1 at base", "start b#1 at base"]);
    for i in 0..2 {
        run.core.prepared(i, Some(commit("base")), None);
    }
    assert_eq!(
        run.ended(committed(0, 1, "ca")),
        ["record a committed ca", "merge a into base"]
    );
    let fx = run.on(Input::Merge {
        task: 0,
        outcome: merged("base", "m1"),
    });
    assert_eq!(
        fx.last().map(String::as_str),
        Some("gate #1 batch at m1 [a]")
    );
    run
}

#[test]
fn a_gate_verdict_that_comes_while_a_merge_is_out_waits_for_the_merge() {
    let mut settings = Settings::sample(3);
    settings.gate = Some("make test".to_owned());
    let mut run = gated_pair(&settings);
    assert_eq!(
        run.ended(committed(1, 1, "cb")),
        ["record b committed cb", "merge b into m1"]
    );
    // Red on m1 while b's merge is out: nothing is decided yet.
    assert_eq!(run.on(Input::Gated(gate_run(1, false))), lines(&[]));
    // b's merge is back: then the verdict, and the base is tested before a is blamed.
    assert_eq!(
        run.on(Input::Merge {
            task: 1,
            outcome: merged("m1", "m2")
        }),
        [
            "record b merged at m2",
            "tell merged b",
            "clean up b (merged)",
            "drop snapshots but m2's",
            "tell GateEnded { tip: \"m1\", verdict: \"red\", green: false, elapsed: 1s }",
            "tell tail of 0 line(s)",
            "record run GateFinished",
            "gate #2 base at base []",
        ]
    );
    // The take-out moves the branch back from where it is, m2, not from m1.
    let fx = run.on(Input::Gated(gate_run(2, true)));
    assert!(fx.contains(&"rewind m2 to base".to_owned()), "{fx:#?}");
    assert_eq!(fx.last().map(String::as_str), Some("merge b into base"));
    assert!(run.core.refused.is_empty(), "{:?}", run.core.refused);
}

#[test]
fn a_branch_moved_under_the_gates_take_out_halts_the_merges() {
    let mut settings = Settings::sample(3);
    settings.gate = Some("make test".to_owned());
    let mut run = gated_pair(&settings);
    assert_eq!(
        run.on(Input::Gated(gate_run(1, false))),
        [
            "tell GateEnded { tip: \"m1\", verdict: \"red\", green: false, elapsed: 1s }",
            "tell tail of 0 line(s)",
            "record run GateFinished",
            "gate #2 base at base []",
        ]
    );
    let fx = run.on(Input::Gated(gate_run(2, true)));
    assert!(fx.contains(&"rewind m1 to base".to_owned()), "{fx:#?}");
    // The executor found the branch elsewhere, kept what was there and put it at base.
    let moved = Moved {
        integration: "swarm/r".to_owned(),
        found: Some("x".to_owned()),
        backup: Some("swarm/r@moved-x".to_owned()),
        tip: "base".to_owned(),
        reason: "moved by something other than swarm".to_owned(),
    };
    let fx = run.on(Input::Moved(Box::new(moved)));
    assert_eq!(
        fx[..2],
        [
            "record run IntegrationMoved",
            "tell Halted(\"moved by something other than swarm\")"
        ]
    );
    // b ends without merging; nothing more is merged.
    assert_eq!(run.ended(committed(1, 1, "cb")), ["record b committed cb"]);
    assert!(run.core.refused.is_empty(), "{:?}", run.core.refused);
}

#[test]
fn a_culprit_parked_before_the_branch_moved_back_is_taken_out_on_resume() {
    let mut settings = Settings::sample(2);
    settings.gate = Some("make test".to_owned());
    let tasks = [
        r#"{"id":"a","run":"x","mode":"write"}"#,
        r#"{"id":"b","run":"x","mode":"write"}"#,
    ];
    // The board: a parked as the gate's culprit, b to be merged again; the branch still at
    // m2, which merges both (a kill came before it was moved back).
    let writer = |id: &str, status, c: &str| {
        let mut r = super::sim::world::record(id, serde_json::json!({ "id": id }));
        r.status = status;
        r.commit_id = Some(c.to_owned());
        r.start_commit = Some("base".to_owned());
        r
    };
    let records = [
        writer("a", crate::store::TaskStatus::Parked, "ca"),
        writer("b", crate::store::TaskStatus::Committed, "cb"),
    ];
    let (mut run, begun) = Run::resumed(
        &settings,
        &tasks,
        &records,
        "m2",
        Found {
            ungated: vec![(0, commit("m1")), (1, commit("m2"))],
            ..Found::default()
        },
    );
    assert_eq!(
        begun,
        [
            "record merge again [b]",
            "rewind m2 to base",
            "tell TakenOut { culprit: \"a\", tip: \"base\", again: [\"b\"] }",
            "drop snapshots but base's",
            "merge b into base",
        ]
    );
    assert!(run.core.refused.is_empty(), "{:?}", run.core.refused);
    let fx = run.on(Input::Merge {
        task: 1,
        outcome: merged("base", "m3"),
    });
    assert_eq!(
        fx.first().map(String::as_str),
        Some("record b merged at m3")
    );
    // Once open, the gate tests b's merge, and nothing else: a stays parked.
    assert_eq!(run.open(), ["gate #2 batch at m3 [b]"]);
    assert!(run.core.refused.is_empty(), "{:?}", run.core.refused);
}

/// Two writers from `base`: `w` merged at `m1`, then `v` committed at `cv`, its merge asked
/// for.
fn conflicting_pair(settings: &Settings) -> Run<'_> {
    let mut run = Run::new(
        settings,
        &[
            r#"{"id":"w","run":"x","mode":"write"}"#,
            r#"{"id":"v","run":"x","mode":"write"}"#,
        ],
    );
    assert_eq!(run.open(), ["start w#1 at base", "start v#1 at base"]);
    run.core.prepared(0, Some(commit("base")), None);
    run.core.prepared(1, Some(commit("base")), None);
    run.ended(committed(0, 1, "cw"));
    run.on(Input::Merge {
        task: 0,
        outcome: merged("base", "m1"),
    });
    assert_eq!(
        run.ended(committed(1, 1, "cv")),
        ["record v committed cv", "merge v into m1"]
    );
    run
}

fn conflicted() -> MergeOutcome {
    MergeOutcome::Conflicted {
        paths: vec!["f.rs".to_owned()],
    }
}

#[test]
fn a_conflict_climbs_each_rung_once_merging_again_between_and_is_parked_after_the_last() {
    let mut settings = Settings::sample(2);
    settings.ladder = vec![
        crate::schedule::Rung::Structural,
        crate::schedule::Rung::Resolve,
    ];
    settings.structural = Some(crate::schedule::Structural {
        program: "mergiraf".into(),
        version: "mergiraf 0.20.0".to_owned(),
    });
    let mut run = conflicting_pair(&settings);
    assert_eq!(
        run.on(Input::Merge {
            task: 1,
            outcome: conflicted()
        }),
        [
            "record v Resolving",
            "tell Resolving { id: \"v\", paths: [\"f.rs\"], rung: \"structural\" }",
            "resolve v at m1",
        ]
    );
    // The structural merge fails: said, and v's own commit is merged again.
    assert_eq!(
        run.ended(failed(1, 1, "conflict markers are left in f.rs")),
        [
            "tell ResolverEnded { id: \"v\", elapsed: 1s }",
            "record v RungFailed",
            "merge v into m1",
        ]
    );
    assert_eq!(
        run.on(Input::Merge {
            task: 1,
            outcome: conflicted()
        }),
        [
            "record v Resolving",
            "tell Resolving { id: \"v\", paths: [\"f.rs\"], rung: \"resolve\" }",
            "resolve v at m1",
        ]
    );
    assert_eq!(
        run.ended(failed(1, 1, "the agent gave up")),
        [
            "tell ResolverEnded { id: \"v\", elapsed: 1s }",
            "record v RungFailed",
            "merge v into m1",
        ]
    );
    let parked = run.on(Input::Merge {
        task: 1,
        outcome: conflicted(),
    });
    assert_eq!(parked[0], "park v: conflict in f.rs");
    let hold = run.core.slots[1].climbed.clone();
    assert_eq!(
        hold,
        [
            (
                crate::schedule::Rung::Structural,
                "conflict markers are left in f.rs".to_owned()
            ),
            (
                crate::schedule::Rung::Resolve,
                "the agent gave up".to_owned()
            ),
        ]
    );
}

#[test]
fn a_rung_that_resolves_has_its_merge_commit_moved_onto_and_no_later_rung_runs() {
    let mut settings = Settings::sample(2);
    settings.ladder = vec![
        crate::schedule::Rung::Structural,
        crate::schedule::Rung::Resolve,
    ];
    settings.structural = Some(crate::schedule::Structural {
        program: "mergiraf".into(),
        version: "mergiraf 0.20.0".to_owned(),
    });
    let mut run = conflicting_pair(&settings);
    run.on(Input::Merge {
        task: 1,
        outcome: conflicted(),
    });
    assert_eq!(
        run.ended(committed(1, 1, "rv")),
        [
            "tell ResolverEnded { id: \"v\", elapsed: 1s }",
            "record v resolved as rv",
            "merge v into m1 (moving onto it)",
        ]
    );
    assert!(run.core.slots[1].climbed.is_empty());
}

#[test]
fn a_rung_the_run_cannot_climb_is_passed_over_and_said_in_the_park() {
    // The default ladder: the structural merge, with no mergiraf found.
    let settings = Settings::sample(2);
    let mut run = conflicting_pair(&settings);
    let parked = run.on(Input::Merge {
        task: 1,
        outcome: conflicted(),
    });
    assert_eq!(parked[0], "park v: conflict in f.rs");
    let climbed = &run.core.slots[1].climbed;
    assert_eq!(climbed.len(), 2, "{climbed:?}");
    assert!(
        climbed[0].1.starts_with("no structural merge tool"),
        "{climbed:?}"
    );
    assert!(
        climbed[1]
            .1
            .starts_with("a `run` task is run again only when"),
        "{climbed:?}"
    );
}

#[test]
fn a_prompt_task_is_redone_on_the_tip_and_its_commit_merged_not_moved_onto() {
    let mut settings = Settings::sample(2);
    settings.ladder = vec![crate::schedule::Rung::Redo];
    let mut run = Run::new(
        &settings,
        &[
            r#"{"id":"w","prompt":"x","mode":"write"}"#,
            r#"{"id":"v","prompt":"y","mode":"write"}"#,
        ],
    );
    assert_eq!(run.open(), ["start w#1 at base", "start v#1 at base"]);
    run.core.prepared(0, Some(commit("base")), None);
    run.core.prepared(1, Some(commit("base")), None);
    run.ended(committed(0, 1, "cw"));
    run.on(Input::Merge {
        task: 0,
        outcome: merged("base", "m1"),
    });
    run.ended(committed(1, 1, "cv"));
    assert_eq!(
        run.on(Input::Merge {
            task: 1,
            outcome: conflicted()
        }),
        [
            "record v Resolving",
            "tell Resolving { id: \"v\", paths: [\"f.rs\"], rung: \"redo\" }",
            "resolve v at m1",
        ]
    );
    // Its commit is the task done on m1: merged as a writer's is, not moved onto.
    assert_eq!(
        run.ended(committed(1, 1, "rv")),
        [
            "tell ResolverEnded { id: \"v\", elapsed: 1s }",
            "record v resolved as rv",
            "merge v into m1",
        ]
    );
}

#[test]
fn running_writers_are_compared_at_the_interval_and_a_pair_is_said_once() {
    let mut settings = Settings::sample(2);
    settings.forecast = crate::config::Forecast::Tell;
    settings.forecast_interval = Duration::from_secs(10);
    let mut run = Run::new(
        &settings,
        &[
            r#"{"id":"w","run":"x","mode":"write"}"#,
            r#"{"id":"v","run":"x","mode":"write"}"#,
        ],
    );
    assert_eq!(run.open(), ["start w#1 at base", "start v#1 at base"]);
    run.core.prepared(0, Some(commit("base")), None);
    run.core.prepared(1, Some(commit("base")), None);
    // The first look comes one interval after there is something to compare.
    assert!(run.at(5).on(Input::Tick).is_empty());
    assert_eq!(run.at(16).on(Input::Tick), ["forecast [w v] at base"]);
    // Nothing more is asked while a look is out.
    assert!(run.at(40).on(Input::Tick).is_empty());
    let looked = || {
        Input::Forecast(super::Looked {
            writers: 2,
            probes: 1,
            foreseen: vec![super::Foreseen {
                later: 1,
                with: Some(0),
                paths: vec!["f.rs".to_owned()],
            }],
        })
    };
    assert_eq!(
        run.on(looked()),
        [
            "record run ForecastLooked",
            "record v ConflictForecast",
            "tell Forecast { id: \"v\", with: Some(\"w\"), paths: [\"f.rs\"] }",
            "note to v: swarm: your change to f.rs is likely to conflict with the change of task w, running beside you, when it is merged. Keep your edits there small, and do not reformat or move code you do not need to change.\n",
        ]
    );
    assert!(run.at(45).on(Input::Tick).is_empty());
    assert_eq!(run.at(50).on(Input::Tick), ["forecast [w v] at base"]);
    // The same pair again: looked at, not said again.
    assert_eq!(run.on(looked()), ["record run ForecastLooked"]);
    // A writer that ended is not compared, nor said.
    run.ended(committed(0, 1, "cw"));
    run.on(Input::Merge {
        task: 0,
        outcome: merged("base", "m1"),
    });
    assert_eq!(run.at(90).on(Input::Tick), ["forecast [v] at m1"]);
    let stale = Input::Forecast(super::Looked {
        writers: 1,
        probes: 1,
        foreseen: vec![super::Foreseen {
            later: 0,
            with: None,
            paths: vec!["f.rs".to_owned()],
        }],
    });
    assert_eq!(run.on(stale), ["record run ForecastLooked"]);
}

#[test]
fn a_lone_writer_at_the_tip_is_not_looked_at_and_off_never_looks() {
    let mut settings = Settings::sample(2);
    settings.forecast = crate::config::Forecast::Watch;
    settings.forecast_interval = Duration::from_secs(10);
    let mut run = Run::new(&settings, &[r#"{"id":"w","run":"x","mode":"write"}"#]);
    assert_eq!(run.open(), ["start w#1 at base"]);
    run.core.prepared(0, Some(commit("base")), None);
    assert!(run.at(100).on(Input::Tick).is_empty());
    assert_eq!(run.core.next_wake(run.t0 + run.now), None);

    let off = Settings::sample(2);
    let mut run = Run::new(
        &off,
        &[
            r#"{"id":"w","run":"x","mode":"write"}"#,
            r#"{"id":"v","run":"x","mode":"write"}"#,
        ],
    );
    run.open();
    run.core.prepared(0, Some(commit("base")), None);
    run.core.prepared(1, Some(commit("base")), None);
    assert!(run.at(1000).on(Input::Tick).is_empty());
}

#[test]
fn with_hold_the_later_writer_is_merged_only_once_the_other_is() {
    let mut settings = Settings::sample(2);
    settings.forecast = crate::config::Forecast::Hold;
    settings.forecast_interval = Duration::from_secs(10);
    let mut run = Run::new(
        &settings,
        &[
            r#"{"id":"w","run":"x","mode":"write"}"#,
            r#"{"id":"v","run":"x","mode":"write"}"#,
        ],
    );
    run.open();
    run.core.prepared(0, Some(commit("base")), None);
    run.core.prepared(1, Some(commit("base")), None);
    assert!(run.at(1).on(Input::Tick).is_empty());
    assert_eq!(run.at(11).on(Input::Tick), ["forecast [w v] at base"]);
    run.on(Input::Forecast(super::Looked {
        writers: 2,
        probes: 1,
        foreseen: vec![super::Foreseen {
            later: 1,
            with: Some(0),
            paths: vec!["f.rs".to_owned()],
        }],
    }));
    // v ends first: its merge waits for w.
    assert_eq!(
        run.ended(committed(1, 1, "cv")),
        [
            "record v committed cv",
            "record v HeldForMerge",
            "tell HeldForMerge { id: \"v\", with: \"w\" }",
        ]
    );
    assert_eq!(
        run.ended(committed(0, 1, "cw")),
        ["record w committed cw", "merge w into base"]
    );
    // Once w is merged, v joins the queue, and its merge is made on the tip that holds w's.
    let fx = run.on(Input::Merge {
        task: 0,
        outcome: merged("base", "m1"),
    });
    assert_eq!(
        fx.last().map(String::as_str),
        Some("merge v into m1"),
        "{fx:?}"
    );
}

#[test]
fn a_rung_of_the_ladder_spends_from_the_runs_budget() {
    let mut settings = Settings::sample(2);
    settings.ladder = vec![crate::schedule::Rung::Resolve];
    settings.budget_tokens = Some(100);
    let mut run = conflicting_pair(&settings);
    run.on(Input::Merge {
        task: 1,
        outcome: conflicted(),
    });
    let mut spent = committed(1, 1, "rv");
    spent.used.tokens = 150;
    let fx = run.ended(spent);
    assert!(fx.contains(&"record run BudgetSpent".to_owned()), "{fx:?}");
    // The board is told, so that a resumed run counts them too.
    assert!(fx.contains(&"record v spent 150".to_owned()), "{fx:?}");
}

/// Task `task`'s pick of `winner`'s commit `c`, which started at `base`.
fn picked(task: usize, winner: &str, c: &str) -> Report {
    report(
        task,
        1,
        Verdict::Picked(Box::new(crate::schedule::job::pick::Picked {
            result: format!("{winner}'s result"),
            commit: commit(c),
            start: commit("base"),
            event: RunEvent::Picked {
                select: "smallest-green".to_owned(),
                winner: winner.to_owned(),
                reasons: None,
                candidates: Vec::new(),
            },
        })),
    )
}

#[test]
fn candidates_run_side_by_side_are_kept_not_merged_and_the_pick_merges_its_winner_once() {
    let settings = Settings::sample(3);
    let mut run = Run::new(
        &settings,
        &[
            r#"{"id":"w","run":"x","candidates":3,"check":"t"}"#,
            r#"{"id":"after","run":"x","mode":"read","deps":["w"]}"#,
        ],
    );
    // The plan: w.c1, w.c2, w.c3, w (waiting for them), after.
    let table: Vec<(u64, Input, Vec<String>)> = vec![
        (
            0,
            Input::Open,
            lines(&[
                "start w.c1#1 at base",
                "start w.c2#1 at base",
                "start w.c3#1 at base",
            ]),
        ),
        // A green candidate is done, its commit kept: nothing is merged.
        (
            1,
            Input::Ended {
                report: committed(1, 1, "c2"),
                limit_wait: Duration::ZERO,
            },
            lines(&[
                "record w.c2 committed c2",
                "clean up w.c2",
                "tell w.c2 Finished: a candidate of w, kept for its pick",
            ]),
        ),
        // One that fails does not skip its task.
        (
            2,
            Input::Ended {
                report: failed(0, 1, "check failed"),
                limit_wait: Duration::ZERO,
            },
            lines(&[
                "record w.c1 failed (Pending, failure 1, retried)",
                "tell w.c1 Failed: check failed",
                "tell tail of 0 line(s)",
                "tell retry w.c1#2 (retry 1 of 1)",
            ]),
        ),
        (4, Input::Tick, lines(&["start w.c1#2 at base"])),
        (
            5,
            Input::Ended {
                report: failed(0, 2, "check failed"),
                limit_wait: Duration::ZERO,
            },
            lines(&[
                "record w.c1 failed (Failed, failure 2)",
                "tell w.c1 Failed: check failed",
                "tell tail of 0 line(s)",
                "keep w.c1's checkout",
            ]),
        ),
        // The last candidate ends: the pick starts.
        (
            6,
            Input::Ended {
                report: committed(2, 1, "c3"),
                limit_wait: Duration::ZERO,
            },
            lines(&[
                "record w.c3 committed c3",
                "clean up w.c3",
                "tell w.c3 Finished: a candidate of w, kept for its pick",
                "start w#1 at base",
            ]),
        ),
        // The winner's commit is the task's, merged from where the winner started.
        (
            7,
            Input::Ended {
                report: picked(3, "w.c3", "c3"),
                limit_wait: Duration::ZERO,
            },
            lines(&[
                "record w Picked",
                "record w committed c3",
                "merge w into base",
            ]),
        ),
        (
            7,
            Input::Merge {
                task: 3,
                outcome: merged("base", "m1"),
            },
            lines(&[
                "record w merged at m1",
                "tell merged w",
                "clean up w (merged)",
                "drop snapshots but m1's",
                "start after#1 at m1",
            ]),
        ),
    ];
    for (at, input, expected) in table {
        let seen = run.at(at).on(input);
        assert_eq!(seen, expected);
    }
    assert_eq!(run.core.slots[3].start_commit, Some(commit("base")));
    assert_eq!(
        run.ended(ok(4, 1)),
        lines(&["record after succeeded", "tell after Finished"])
    );
    assert_eq!(run.finish(), (Ending::Finished, lines(&[])));
}

#[test]
fn a_pick_with_no_green_candidate_fails_once_and_skips_below() {
    let settings = Settings::sample(2);
    let mut run = Run::new(
        &settings,
        &[
            r#"{"id":"w","run":"x","candidates":2}"#,
            r#"{"id":"after","run":"x","mode":"read","deps":["w"]}"#,
        ],
    );
    assert_eq!(
        run.open(),
        lines(&["start w.c1#1 at base", "start w.c2#1 at base"])
    );
    // Each candidate fails, is retried, and fails for good; then the pick starts.
    let mut due = vec![(0, 1), (1, 1)];
    let mut now = 0;
    while let Some((c, attempt)) = due.pop() {
        now += 1;
        let _ = run.at(now).ended(failed(c, attempt, "red"));
        if due.is_empty() {
            now += 10;
            for line in run.at(now).on(Input::Tick) {
                if let Some(rest) = line.strip_prefix("start w.c") {
                    let (c, attempt) = rest.split_once('#').unwrap();
                    let attempt = attempt.split(' ').next().unwrap();
                    due.push((c.parse::<usize>().unwrap() - 1, attempt.parse().unwrap()));
                }
            }
        }
    }
    assert_eq!(run.core.dag.state(2), State::Running);
    let fx = run.ended(failed(
        2,
        1,
        "no candidate was green: w.c1 failed; w.c2 failed",
    ));
    assert_eq!(
        fx,
        lines(&[
            "record w failed (Failed, failure 1)",
            "tell w Failed: no candidate was green: w.c1 failed; w.c2 failed",
            "tell tail of 0 line(s)",
            "record skipped after (dependency w failed)",
            "tell skipped after (dependency w failed)",
        ])
    );
    assert_eq!(run.finish().0, Ending::Finished);
}

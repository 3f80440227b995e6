//! What a run's report is made of, read from its event log and board: parked writers, the
//! end of failed attempts' stderr, merges, repairs, the goals, the gate's runs, wall time and
//! planning tokens.

use crate::plan::Plan;
use crate::report::{self, GoalFacts, Parked};
use crate::store::{GoalRecord, Logged, RunEvent, TaskRecord, TaskStatus, TimeMark};

/// Every attempt's span, from its `task_started` to the event that ended it (a success, a
/// failure, an interruption, a usage limit, a fault), in the order they started; one with no
/// end yet ends `now`.
pub(super) fn attempt_spans(events: &[Logged], now: i64) -> Vec<report::Span> {
    let mut spans: Vec<report::Span> = Vec::new();
    let mut open: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for e in events {
        let Some(task) = e.task.as_deref() else {
            continue;
        };
        let outcome = match &e.event {
            RunEvent::TaskStarted { attempt, .. } => {
                open.insert(task, spans.len());
                spans.push(report::Span {
                    task: task.to_owned(),
                    attempt: *attempt,
                    start: e.at,
                    end: now,
                    outcome: "running",
                });
                continue;
            }
            RunEvent::TaskSucceeded { .. } => "succeeded",
            RunEvent::TaskFailed { .. } => "failed",
            RunEvent::TaskInterrupted { .. } => "interrupted",
            RunEvent::UsageLimit { .. } => "limited",
            RunEvent::Fault { .. } => "fault",
            _ => continue,
        };
        if let Some(i) = open.remove(task) {
            spans[i].end = e.at.max(spans[i].start);
            spans[i].outcome = outcome;
        }
    }
    spans
}

/// Parked tasks with their branches and conflicting paths, from the event log of the board.
pub(super) fn parked_tasks(events: &[Logged], records: &[TaskRecord]) -> Vec<Parked> {
    records
        .iter()
        .filter(|t| t.status == TaskStatus::Parked)
        .map(|t| {
            let parking = events.iter().rev().find_map(|e| match &e.event {
                RunEvent::Parked(p) if e.task.as_deref() == Some(t.id.as_str()) => Some(p),
                _ => None,
            });
            Parked {
                task: t.id.clone(),
                branch: parking.map(|p| p.branch.clone()).unwrap_or_default(),
                paths: parking.map(|p| p.paths.clone()).unwrap_or_default(),
                resolver: parking.and_then(|p| p.resolver.clone()),
                rungs: parking
                    .map(|p| {
                        p.rungs
                            .iter()
                            .map(|r| (r.rung.clone(), r.why.clone()))
                            .collect()
                    })
                    .unwrap_or_default(),
                reason: parking.and_then(|p| p.reason.clone()),
                gate_output: parking.map(|p| p.gate_output.clone()).unwrap_or_default(),
            }
        })
        .collect()
}

/// For each failed task, the last lines of stderr its last failed attempt left.
pub(super) fn output_tails(
    events: &[Logged],
    records: &[TaskRecord],
) -> Vec<(String, u32, Vec<String>)> {
    records
        .iter()
        .filter(|t| t.status == TaskStatus::Failed)
        .filter_map(|t| {
            events.iter().rev().find_map(|e| match &e.event {
                RunEvent::TaskFailed {
                    attempt,
                    stderr_tail,
                    ..
                } if e.task.as_deref() == Some(t.id.as_str()) => {
                    Some((t.id.clone(), *attempt, stderr_tail.clone()))
                }
                _ => None,
            })
        })
        .collect()
}

/// How long swarm has run a run: from its creation (planning included) to where the first
/// swarm stopped, then each resume to where its swarm stopped, not the time between; a span
/// still open (a live run) runs to `now`, one whose swarm was killed to the run's last event.
/// `swarm runs`, `status`, the live page and the report all say this.
pub(super) fn run_time(
    created_at: i64,
    marks: &[(i64, TimeMark)],
    last_event_at: Option<i64>,
    now: Option<i64>,
) -> std::time::Duration {
    let (mut total, mut open) = (0i64, Some(created_at));
    for &(at, mark) in marks {
        match mark {
            TimeMark::Ended => {
                if let Some(start) = open.take() {
                    total += at - start;
                }
            }
            TimeMark::Resumed { before } => {
                if let Some(start) = open.take() {
                    total += before.unwrap_or(start).max(start) - start;
                }
                open = Some(at);
            }
        }
    }
    if let Some(start) = open {
        let end = now.or(last_event_at).unwrap_or(start);
        total += end.max(start) - start;
    }
    std::time::Duration::from_millis(u64::try_from(total).unwrap_or(0))
}

/// The marks of `run_time` in a run's log as read back whole (the report's).
pub(super) fn time_marks(events: &[Logged]) -> Vec<(i64, TimeMark)> {
    let mut marks = Vec::new();
    let mut before = None;
    for e in events {
        match e.event {
            RunEvent::RunResumed { .. } => marks.push((e.at, TimeMark::Resumed { before })),
            RunEvent::RunEnded { .. } | RunEvent::RunAbandoned { .. } => {
                marks.push((e.at, TimeMark::Ended));
            }
            _ => {}
        }
        before = Some(e.at);
    }
    marks
}

/// Tokens the planner's model calls used: plans, dependency passes and distilled lessons. `None` when the run
/// planned nothing (a task file).
pub(super) fn planning_tokens(events: &[Logged]) -> Option<u64> {
    events
        .iter()
        .filter_map(|e| match e.event {
            RunEvent::Planned { tokens, .. }
            | RunEvent::GoalPlanned { tokens, .. }
            | RunEvent::GoalsInferred { tokens, .. }
            | RunEvent::Distilled { tokens, .. } => Some(tokens),
            _ => None,
        })
        .reduce(|a, b| a + b)
}

/// What memory gave the run: each goal's planning (the goal, `None` for a single goal; the
/// past runs; the lessons they taught), and the lessons each task's agent was told.
pub(super) fn recalled(events: &[Logged]) -> crate::report::Recalled {
    let mut out = crate::report::Recalled::default();
    for e in events {
        match &e.event {
            RunEvent::Recalled {
                goal,
                runs,
                lessons,
            } => {
                out.plans.retain(|(g, ..)| g != goal);
                out.plans
                    .push((goal.clone(), runs.clone(), lessons.clone()));
            }
            RunEvent::Distilled { lessons, .. } => out.distilled.clone_from(lessons),
            RunEvent::Told { lessons } => {
                if let Some(task) = &e.task {
                    out.told.retain(|(t, _)| t != task);
                    out.told.push((task.clone(), lessons.clone()));
                }
            }
            _ => {}
        }
    }
    out
}

/// Each goal with its tasks and the task holding its deliverable.
pub(super) fn goal_facts(plan: &Plan, records: Vec<GoalRecord>) -> Vec<GoalFacts> {
    records
        .into_iter()
        .map(|record| {
            let tasks = plan.goal_tasks(&record.id);
            GoalFacts {
                deliverable: plan.deliverable_among(&tasks),
                record,
                tasks,
            }
        })
        .collect()
}

/// What the event log says about the goals as a whole, one line each.
pub(super) fn goal_notes(events: &[Logged]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            RunEvent::GoalNeedsFailed { goals, error } => Some(format!(
                "The dependency pass failed ({error}), so goals {} ran as independent.",
                goals.join(", ")
            )),
            RunEvent::GoalNeedDropped {
                goal,
                needs,
                reason,
                why,
            } => Some(format!(
                "Dropped the inferred dependency of goal {goal} on goal {needs} ({reason}): {why}."
            )),
            RunEvent::Deadlock { stuck } => Some(format!(
                "Deadlock: nothing was running and nothing could become ready; stuck: {}.",
                stuck.join("; ")
            )),
            _ => None,
        })
        .collect()
}

/// The merges that stand, in the order they were last made: (task, merge commit, the rung of
/// the conflict ladder that resolved its conflict, when one did). A writer merged again (after
/// the gate took a culprit out) is listed once, at its last merge, and one parked since (the
/// culprit the gate took out) not at all.
pub(super) fn merges(
    events: &[Logged],
    records: &[TaskRecord],
) -> Vec<(String, String, Option<String>)> {
    let stands = |task: &str| {
        !records
            .iter()
            .any(|t| t.id == task && t.status == TaskStatus::Parked)
    };
    let mut out: Vec<(String, String, Option<String>)> = Vec::new();
    let mut resolved: std::collections::HashMap<&str, String> = std::collections::HashMap::new();
    for e in events {
        let task = e.task.as_deref().unwrap_or_default();
        match &e.event {
            RunEvent::Resolved { rung, tool, .. } => {
                let rung = rung.clone().unwrap_or_else(|| "resolve".to_owned());
                let by = match tool {
                    Some(tool) => format!("{rung} ({tool})"),
                    None => rung,
                };
                resolved.insert(task, by);
            }
            RunEvent::Merged { after, .. } => {
                out.retain(|(t, _, _)| t != task);
                out.push((task.to_owned(), after.clone(), resolved.remove(task)));
            }
            _ => {}
        }
    }
    out.retain(|(task, _, _)| stands(task));
    out
}

/// The conflicts foreseen while writers ran, and whether each came: one of its two writers'
/// merges then conflicted (a rung of the ladder tried, or a park for a conflict).
pub(super) fn foreseen(events: &[Logged]) -> Vec<crate::report::Foreseen> {
    let mut out: Vec<(usize, crate::report::Foreseen)> = Vec::new();
    for (n, e) in events.iter().enumerate() {
        if let (Some(task), RunEvent::ConflictForecast { with, paths }) = (&e.task, &e.event) {
            out.push((
                n,
                crate::report::Foreseen {
                    task: task.clone(),
                    with: with.clone(),
                    paths: paths.clone(),
                    came: false,
                },
            ));
        }
    }
    for (n, f) in &mut out {
        f.came = events[*n..].iter().any(|e| {
            let of = |t: &str| e.task.as_deref() == Some(t);
            let ours = of(&f.task) || f.with.as_deref().is_some_and(of);
            let conflict = match &e.event {
                RunEvent::Resolving { .. } => true,
                RunEvent::Parked(p) => p.reason.is_none() && !p.paths.is_empty(),
                _ => false,
            };
            ours && conflict
        });
    }
    out.into_iter().map(|(_, f)| f).collect()
}

/// What the refused attempts of tasks that did not end done left, kept on branches of their
/// own (`swarm/<run>-<task>@<attempt>`) that are still there: (task, branch).
pub(super) fn kept_branches(
    repo: &crate::git::Repo,
    run: &str,
    records: &[TaskRecord],
) -> anyhow::Result<Vec<(String, String)>> {
    let prefix = format!("swarm/{run}-");
    let mut out = Vec::new();
    for (name, _) in repo.branches_with_prefix(&prefix)? {
        let Some((task, attempt)) = name[prefix.len()..].rsplit_once('@') else {
            continue;
        };
        let task = task.strip_suffix("-resolve").unwrap_or(task);
        let ended_badly = records
            .iter()
            .any(|t| t.id == task && t.status != TaskStatus::Done);
        if ended_badly && attempt.bytes().all(|b| b.is_ascii_digit()) {
            out.push((task.to_owned(), name));
        }
    }
    out.sort();
    Ok(out)
}

/// The picks of tasks with candidates, in order: (task, the pick).
pub(super) fn picks(events: &[Logged]) -> Vec<(String, RunEvent)> {
    events
        .iter()
        .filter(|e| matches!(e.event, RunEvent::Picked { .. }))
        .filter_map(|e| Some((e.task.clone()?, e.event.clone())))
        .collect()
}

/// The gate's runs in order (a run the log shows started but not finished is `running`), and
/// the writers it took out with the tip that failed.
pub(super) fn gate_runs(events: &[Logged]) -> (Vec<report::GateRun>, Vec<(String, String)>) {
    let mut runs: Vec<report::GateRun> = Vec::new();
    let mut culprits = Vec::new();
    for e in events {
        match &e.event {
            RunEvent::GateStarted {
                run,
                probe,
                tip,
                batch,
                ..
            } => runs.push(report::GateRun {
                run: *run,
                probe: probe.clone(),
                tip: tip.clone(),
                batch: batch.clone(),
                verdict: "running".to_owned(),
                ms: 0,
            }),
            RunEvent::GateFinished {
                run, verdict, ms, ..
            } => {
                if let Some(r) = runs
                    .iter_mut()
                    .rev()
                    .find(|r| r.run == *run && r.verdict == "running")
                {
                    r.verdict.clone_from(verdict);
                    r.ms = *ms;
                }
            }
            RunEvent::GateCulprit { task, tip, .. } => {
                culprits.push((task.clone(), tip.clone()));
            }
            _ => {}
        }
    }
    // A run cut short by the end of its swarm is not running any more.
    for r in &mut runs {
        if r.verdict == "running" {
            "cut short".clone_into(&mut r.verdict);
        }
    }
    (runs, culprits)
}

/// The repairs made to a plan: (kind, message).
pub(super) fn repairs(events: &[Logged]) -> Vec<(String, String)> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            RunEvent::PlanRepair { kind, message, .. } => Some((kind.clone(), message.clone())),
            _ => None,
        })
        .collect()
}

/// What each pool member did in the run: the attempts its `task_started` events name, with
/// their tokens, cost and usage limits from the board; by member name.
pub(super) fn agent_usage(
    board: &crate::store::Board,
    run: &str,
    events: &[Logged],
) -> anyhow::Result<Vec<report::AgentUsage>> {
    use std::collections::BTreeMap;
    let mut by_task: BTreeMap<&str, BTreeMap<u32, &str>> = BTreeMap::new();
    for e in events {
        if let (
            Some(task),
            RunEvent::TaskStarted {
                attempt,
                agent: Some(agent),
                ..
            },
        ) = (e.task.as_deref(), &e.event)
        {
            by_task.entry(task).or_default().insert(*attempt, agent);
        }
    }
    let mut usage: BTreeMap<&str, report::AgentUsage> = BTreeMap::new();
    for (task, members) in by_task {
        for a in board.history().attempts(run, task)? {
            let Some(&agent) = members.get(&a.number) else {
                continue;
            };
            let u = usage.entry(agent).or_insert_with(|| report::AgentUsage {
                agent: agent.to_owned(),
                attempts: 0,
                limited: 0,
                tokens: 0,
                cost: None,
            });
            u.attempts += 1;
            if a.outcome.as_deref() == Some("usage_limit") {
                u.limited += 1;
            }
            u.tokens += a.tokens;
            if let Some(c) = a.cost {
                u.cost = Some(u.cost.unwrap_or(0.0) + c);
            }
        }
    }
    Ok(usage.into_values().collect())
}

#[cfg(test)]
mod tests {
    use super::{Logged, RunEvent, TimeMark, planning_tokens, run_time, time_marks};

    fn at(ms: i64, event: RunEvent) -> Logged {
        Logged {
            at: ms,
            task: None,
            event,
        }
    }

    #[test]
    fn run_time_counts_each_swarm_that_ran_the_run_from_its_creation_not_the_time_between() {
        let started = RunEvent::RunStarted {
            tasks: 1,
            base: "b".into(),
        };
        let ended = RunEvent::RunEnded {
            status: "interrupted".into(),
            exit_code: 75,
            landing: None,
            reason: None,
        };
        // Created at 500, planned, started at 1,000.
        let events = [
            at(1_000, started),
            at(3_000, ended),
            // Resumed an hour later and killed: its span ends at its last event.
            at(3_603_000, RunEvent::RunResumed { pid: 1 }),
            at(3_604_000, RunEvent::NoChanges),
            // Resumed again, and still running.
            at(7_200_000, RunEvent::RunResumed { pid: 2 }),
        ];
        let marks = time_marks(&events);
        assert_eq!(
            marks,
            [
                (3_000, TimeMark::Ended),
                (
                    3_603_000,
                    TimeMark::Resumed {
                        before: Some(3_000)
                    }
                ),
                (
                    7_200_000,
                    TimeMark::Resumed {
                        before: Some(3_604_000)
                    }
                ),
            ]
        );
        let live = run_time(500, &marks, Some(7_200_000), Some(7_200_500));
        assert_eq!(live.as_millis(), 2_500 + 1_000 + 500);
        // Killed since: the last span ends at its last event.
        let gone = run_time(500, &marks, Some(7_200_100), None);
        assert_eq!(gone.as_millis(), 2_500 + 1_000 + 100);
        assert_eq!(run_time(5, &[], None, None).as_millis(), 0);
    }

    #[test]
    fn planning_tokens_add_up_plans_and_dependency_passes_and_are_none_without_them() {
        let events = [
            at(
                1,
                RunEvent::GoalsInferred {
                    goals: vec!["g1".into(), "g2".into()],
                    edges: 0,
                    dropped: 0,
                    requests: 1,
                    tokens: 10,
                },
            ),
            at(
                2,
                RunEvent::GoalPlanned {
                    goal: "g1".into(),
                    tasks: 2,
                    requests: 1,
                    tokens: 32,
                    repairs: 0,
                },
            ),
        ];
        assert_eq!(planning_tokens(&events), Some(42));
        assert_eq!(planning_tokens(&[at(1, RunEvent::NoChanges)]), None);
    }
}

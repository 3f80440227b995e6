//! The merge queue's gate: its runs as jobs on the pool, what their verdicts do to the
//! integration tip (a red batch bisected, its culprit taken out and parked, the merges after
//! it made again), and its state after a crash. The bisection itself is `schedule::gate`.

use std::time::Instant;

use super::super::dag::{State, Transition};
use super::super::gate::{self, GateState, Next, Probe};
use super::super::job::{Job, JobKind, Report, Verdict};
use super::super::run::Run;
use crate::agent::{Fault, FaultKind, Invocation};
use crate::git::CommitId;
use crate::store::RunEvent;
use crate::ui::Verb;

/// The gate: runs on the integration tip after merges, bisects a red batch, finds the culprit
/// for the merge queue to take out (see the README's "The gate").
pub(in crate::schedule) struct Gate {
    /// What it knows of the merges since the last green tip.
    state: GateState,
    /// What its run going on tests, and when it started (for the live display).
    shown: Option<(String, Instant)>,
}

/// What a gate run's report asks of the merge queue.
pub(super) enum Finished {
    /// Nothing: it waits, or the merges it passed are done.
    Nothing,
    /// The run stops: the gate fails on the base, or something outside it cut it short.
    Fault(Fault),
    /// A merge fails the gate: the merge queue takes it out.
    Culprit(TakeOut),
}

/// A merge taken out: the integration tip goes back to `back_to` (the tip before it), it is
/// parked with the gate's last lines, and the merges after it are merged again.
pub(super) struct TakeOut {
    pub(super) command: String,
    pub(super) culprit: gate::Merged,
    pub(super) later: Vec<gate::Merged>,
    pub(super) back_to: CommitId,
    pub(super) tail: Vec<String>,
}

impl Gate {
    /// The gate of a run starting or resumed: the newest tip it passed on, as the board
    /// recorded it (the base, untested, until one); its runs of an earlier process keep their
    /// transcripts and numbers.
    pub(in crate::schedule) fn resume(
        command: String,
        green: Option<CommitId>,
        layout: &super::super::Layout,
    ) -> Self {
        let tested = green.is_some();
        let green = green.unwrap_or_else(|| layout.base.clone());
        let mut state = GateState::new(command, green, tested);
        state.runs = std::fs::read_dir(layout.run_dir.join("attempts"))
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| {
                let name = e.file_name();
                let name = name.to_string_lossy();
                name.starts_with("gate-") && name.ends_with(".log")
            })
            .count()
            .try_into()
            .unwrap_or(u32::MAX);
        Self { state, shown: None }
    }

    /// Whether the run waits for it before it ends.
    pub(super) fn busy(&self) -> bool {
        self.state.busy()
    }

    /// Its run going on: what it tests and when it started.
    pub(super) fn running(&self) -> Option<(String, Instant)> {
        self.shown.clone()
    }

    /// The newest tip it passed on.
    pub(super) fn green(self) -> CommitId {
        self.state.green
    }

    /// A writer merged at `tip`: its dependents wait for the gate to pass on a tip holding it.
    pub(super) fn merged(&mut self, task: usize, tip: CommitId) {
        self.state.pending.push(gate::Merged { task, tip });
    }

    /// The gate run to start next, recorded as started, if one is due.
    pub(super) fn next(&mut self, run: &mut Run<'_>) -> anyhow::Result<Option<Job>> {
        let g = &mut self.state;
        let Some((probe, tip)) = g.next_run() else {
            return Ok(None);
        };
        g.runs += 1;
        let number = g.runs;
        let batch = batch_ids(run, g, &probe);
        let (settings, layout) = (run.settings, run.layout);
        let name = format!("gate-{number}");
        let transcript = layout.run_dir.join("attempts").join(format!("{name}.log"));
        let tmp = run.scratch.acquire(GATE_KEY);
        let cwd = gate_checkout_path(layout);
        let mut env = vec![
            ("SWARM_RUN_ID".to_owned(), layout.run.clone()),
            ("SWARM_ACTIVE".to_owned(), "1".to_owned()),
            ("SWARM_GATE_TIP".to_owned(), tip.to_string()),
        ];
        // Its own TMPDIR and block of ports, as an attempt's.
        env.extend(super::super::attempt_env(&mut run.ports, GATE_KEY, &tmp));
        let command = g.command.clone();
        let job = Job {
            task: 0,
            attempt: number,
            kind: JobKind::Gate { tip: tip.clone() },
            invocation: Invocation {
                command: command.clone(),
                argv: Vec::new(),
                env_drop: Vec::new(),
                env_pass: Vec::new(),
                stdin: None,
                cwd: cwd.clone(),
                env,
                timeout: settings.task_timeout,
                stall: None,
                header: format!(
                    "swarm run {} gate run {number} ({}) on {}\ncommand: {command}\ncwd: {}\n",
                    layout.run,
                    probe.as_str(),
                    tip,
                    cwd.display()
                ),
                transcript: transcript.clone(),
                transcript_cap: settings.transcript_cap,
                stdout_file: None,
            },
            builtin: None,
            parser: None,
            acp: None,
            deps_dir: None,
            user_checkout: run.repo.workdir().to_owned(),
            session: None,
            prepare: settings.prepare.clone(),
            tmp,
            spawn_file: None,
        };
        run.record.run_event(RunEvent::GateStarted {
            run: number,
            probe: probe.as_str().to_owned(),
            tip: tip.to_string(),
            batch: batch.clone(),
            transcript: transcript.display().to_string(),
        })?;
        let what = match &probe {
            Probe::Base => format!("gate on the base {}", tip.short()),
            _ => format!("gate on {} ({})", tip.short(), batch.join(", ")),
        };
        run.ui.note(Verb::Started, &what);
        let shown = match &probe {
            Probe::Base => format!("the base {}", tip.short()),
            Probe::Batch { .. } => format!("{} on {}", batch.join(", "), tip.short()),
            Probe::Step { .. } => format!("bisecting: {} on {}", batch.join(", "), tip.short()),
        };
        g.running = Some((probe, tip));
        self.shown = Some((shown, Instant::now()));
        Ok(Some(job))
    }

    /// Takes a gate run's report: a green tip releases the writers it holds, a red one is
    /// bisected, a culprit is found.
    pub(super) fn finish(&mut self, run: &mut Run<'_>, report: Report) -> anyhow::Result<Finished> {
        let g = &mut self.state;
        let Some((probe, tip)) = g.running.clone() else {
            return Ok(Finished::Nothing);
        };
        self.shown = None;
        run.ports.release(GATE_KEY);
        run.scratch.release(GATE_KEY);
        let batch = batch_ids(run, g, &probe);
        let ms = i64::try_from(report.elapsed.as_millis()).unwrap_or(i64::MAX);
        let (verdict, green) = match &report.verdict {
            Verdict::Succeeded { .. } => ("green", Some(true)),
            Verdict::Failed(_) => ("red", Some(false)),
            Verdict::Interrupted | Verdict::Limited(_) | Verdict::Fault(_) => ("interrupted", None),
        };
        let finished = RunEvent::GateFinished {
            run: report.attempt,
            probe: probe.as_str().to_owned(),
            tip: tip.to_string(),
            batch,
            verdict: verdict.to_owned(),
            ms,
            tail: report.stderr_tail.clone(),
        };
        let line = format!("gate on {}: {verdict}", tip.short());
        let tone = if green == Some(true) {
            Verb::Done
        } else {
            Verb::Failed
        };
        run.ui.task_finished(&line, tone, report.elapsed, None);
        let Some(green) = green else {
            // Not known: a resume runs it again.
            g.running = None;
            run.record.run_event(finished)?;
            return Ok(match report.verdict {
                Verdict::Fault(f) => Finished::Fault(f),
                _ => Finished::Nothing,
            });
        };
        if !green {
            run.ui.output_tail(&report.stderr_tail);
            g.red_tail.clone_from(&report.stderr_tail);
        }
        let next = g.finished(green);
        if green && matches!(probe, Probe::Batch { .. }) {
            run.record.gate_passed(&tip, finished)?;
        } else {
            run.record.run_event(finished)?;
        }
        match next {
            Next::Wait => Ok(Finished::Nothing),
            Next::Passed(n) => {
                let passed = g.pass(n);
                for m in passed {
                    run.transition(Transition::Done(m.task))?;
                }
                Ok(Finished::Nothing)
            }
            Next::Culprit(at) => {
                let tail = std::mem::take(&mut g.red_tail);
                self.take_out(run, at, tail).map(Finished::Culprit)
            }
            Next::BaseFails => {
                let mut why = format!(
                    "the gate fails before any change: `{}` fails on the base {}",
                    g.command,
                    tip.short()
                );
                let tail = &report.stderr_tail;
                if !tail.is_empty() {
                    let from = tail.len().saturating_sub(5);
                    why.push_str("; its last lines: ");
                    why.push_str(&tail[from..].join(" | "));
                }
                Ok(Finished::Fault(Fault {
                    kind: FaultKind::Gate,
                    why,
                }))
            }
        }
    }

    /// Merge `at` (1-based) of those waiting for the gate fails it: the merges before it
    /// passed, and it and those after it are the merge queue's to take out.
    fn take_out(
        &mut self,
        run: &mut Run<'_>,
        at: usize,
        tail: Vec<String>,
    ) -> anyhow::Result<TakeOut> {
        let g = &mut self.state;
        let passed = g.pass(at - 1);
        let culprit = g.pending.remove(0);
        let later: Vec<gate::Merged> = g.pending.drain(..).collect();
        for m in &passed {
            run.transition(Transition::Done(m.task))?;
        }
        Ok(TakeOut {
            command: g.command.clone(),
            culprit,
            later,
            back_to: g.green.clone(),
            tail,
        })
    }

    /// On a resume: the merges since the last green tip wait for the gate again, oldest
    /// first, their writers not done (their dependents wait). Before the dag settles.
    pub(super) fn recover(&mut self, run: &mut Run<'_>, tip: &CommitId) -> anyhow::Result<()> {
        let g = &mut self.state;
        let mut chain = Vec::new();
        let mut at = tip.clone();
        while at != g.green {
            let parents = run.repo.parents(&at)?;
            let Some(first) = parents.first().cloned() else {
                break;
            };
            let task = run.slots.iter().position(|s| {
                s.commit
                    .as_ref()
                    .is_some_and(|c| *c == at || parents.get(1) == Some(c))
            });
            if let Some(task) = task {
                chain.push(gate::Merged {
                    task,
                    tip: at.clone(),
                });
            }
            at = first;
        }
        if at != g.green {
            // The green tip is not on the branch (it cannot be, but then): all is tested
            // again from the base.
            g.green = run.layout.base.clone();
            g.tested = false;
        }
        chain.reverse();
        for m in &chain {
            if run.dag.state(m.task) == State::Done {
                run.dag.on(&run.plan, Transition::Committed(m.task));
            }
        }
        g.pending = chain;
        Ok(())
    }

    /// Whether this writer's merge waits for the gate.
    pub(super) fn waits_for(&self, i: usize) -> bool {
        self.state.pending.iter().any(|m| m.task == i)
    }
}

/// The gate's key for its block of ports and its temporary directory (tasks' keys are their
/// indices).
const GATE_KEY: usize = usize::MAX;

/// The ids of the writers whose merges a gate run tests.
fn batch_ids(run: &Run<'_>, g: &GateState, probe: &Probe) -> Vec<String> {
    let n = match probe {
        Probe::Batch { len } => *len,
        Probe::Step { at } => *at,
        Probe::Base => 0,
    };
    g.pending
        .iter()
        .take(n)
        .map(|m| run.id(m.task).to_owned())
        .collect()
}

/// The gate's own checkout: a name no task id can take.
pub(in crate::schedule) fn gate_checkout_path(layout: &super::super::Layout) -> std::path::PathBuf {
    layout.worktrees.join("(gate)")
}

/// Whether the integration ref at `found` is where the gate was moving it back to when
/// swarm was killed: an earlier tip on the recorded tip's first-parent line, every merge
/// after it one of a culprit (parked) or of a writer waiting to be merged again.
pub(super) fn rewound_to(run: &Run<'_>, tip: &CommitId, found: &CommitId) -> anyhow::Result<bool> {
    let mut at = tip.clone();
    for _ in 0..=run.slots.len() {
        if at == *found {
            return Ok(true);
        }
        let parents = run.repo.parents(&at)?;
        let ours = run.slots.iter().enumerate().any(|(i, s)| {
            matches!(run.dag.state(i), State::Parked | State::Committed)
                && s.commit
                    .as_ref()
                    .is_some_and(|c| *c == at || parents.get(1) == Some(c))
        });
        let Some(first) = parents.first().filter(|_| ours) else {
            return Ok(false);
        };
        at = first.clone();
    }
    Ok(false)
}

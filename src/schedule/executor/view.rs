//! What the live display shows, read off the run as it is: the counts, one row per running
//! attempt, and how long the rest should take.

use std::time::{Duration, Instant};

use crate::plan::Mode;
use crate::ui::{Frame, Row, Standing};

use super::super::core::dag::State;
use super::super::core::{Core, Ending};
use crate::ui::Ui;

/// Hands the display the run as it is now: `running` attempts (this process's and those out
/// with workers, whose rows are there too), the gate's run, if one goes on, as a row of its
/// own with the id `gate`, and once the run is over, how it `ended`.
pub(super) fn show(
    core: &Core<'_>,
    ui: &mut Ui,
    running: usize,
    gate: Option<(String, Instant)>,
    ended: Option<&Ending>,
) {
    let now = Instant::now();
    let mut frame = frame(core, running, now);
    frame.standing = match ended {
        None if core.stopping() => Standing::Stopping,
        None | Some(Ending::Finished) => Standing::Running,
        Some(Ending::Interrupted) => Standing::Interrupted,
        Some(Ending::OverBudget | Ending::Halted | Ending::Faulted(_)) => Standing::Stopped,
    };
    if let Some((what, started)) = gate {
        frame.rows.push(Row {
            key: usize::MAX,
            id: "gate".to_owned(),
            title: Some(what),
            lane: "gate".to_owned(),
            attempt: 1,
            resolving: false,
            elapsed: now.saturating_duration_since(started),
        });
        frame.rows.sort_by_key(|r| std::cmp::Reverse(r.elapsed));
    }
    ui.show(&frame);
}

fn frame(run: &Core<'_>, running: usize, now: Instant) -> Frame {
    let mut f = Frame {
        finished: run.dag.finished(),
        total: run.plan.len(),
        running,
        ..Frame::default()
    };
    for (i, (task, slot)) in run.plan.tasks.iter().zip(&run.slots).enumerate() {
        match run.dag.state(i) {
            State::Done if task.mode == Mode::Write && slot.commit.is_some() => f.merged += 1,
            State::Parked => f.parked += 1,
            State::Failed => f.failed += 1,
            _ => {}
        }
        if let Some(started) = slot.started {
            f.rows.push(Row {
                key: i,
                id: task.id.to_string(),
                title: task.title.clone(),
                lane: task.lane.as_str().to_owned(),
                attempt: slot.attempts,
                resolving: run.dag.state(i) == State::Resolving,
                elapsed: now.saturating_duration_since(started),
            });
        }
    }
    f.rows.sort_by_key(|r| std::cmp::Reverse(r.elapsed));
    f.eta = eta(run, now);
    f
}

/// How long the rest of the run should take: each task left is expected to take as long as
/// the finished tasks of its mode took on average (or of any mode, when none of its own has
/// finished), a running one less what it has run; the run then takes the longer of its
/// remaining critical path and its remaining work spread over the slots. `None` until a task
/// has finished in this process.
fn eta(run: &Core<'_>, now: Instant) -> Option<Duration> {
    let took = |mode: Option<Mode>| {
        let times: Vec<Duration> = run
            .plan
            .tasks
            .iter()
            .zip(&run.slots)
            .filter(|(t, _)| mode.is_none_or(|m| t.mode == m))
            .filter_map(|(_, s)| s.took)
            .collect();
        let n = u32::try_from(times.len()).ok().filter(|&n| n > 0)?;
        Some(times.iter().sum::<Duration>() / n)
    };
    let overall = took(None)?;
    let by_mode = [Mode::Read, Mode::Write].map(|m| took(Some(m)).unwrap_or(overall));
    let left: Vec<Duration> = run
        .plan
        .tasks
        .iter()
        .zip(&run.slots)
        .enumerate()
        .map(|(i, (task, slot))| {
            let expected = by_mode[usize::from(task.mode == Mode::Write)];
            match run.dag.state(i) {
                s if s.is_final() => Duration::ZERO,
                State::Committed => Duration::ZERO,
                _ => match slot.started {
                    Some(started) => super::super::eta::left_of_running(
                        expected,
                        now.saturating_duration_since(started),
                    ),
                    None => expected,
                },
            }
        })
        .collect();
    Some(super::super::eta::remaining(
        &run.plan,
        &left,
        run.settings.jobs,
    ))
}

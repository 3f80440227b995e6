//! A failed attempt, taken on the owner thread: the task is retried after its backoff, held
//! for a resume, or failed with its dependents skipped.

use std::time::Instant;

use super::super::dag::Transition;
use super::super::job::Report;
use super::super::record::{Failure, Totals};
use super::super::run::Run;
use super::super::{Checkout, backoff};
use crate::plan::Mode;
use crate::store::TaskStatus;
use crate::ui::Verb;

/// An attempt failed: the task is retried after a backoff, waits for a resume (the run
/// is stopping), or has failed and its dependents are skipped.
pub(super) fn failed(
    run: &mut Run<'_>,
    stopping: bool,
    id: &str,
    report: &Report,
    why: &str,
    totals: Totals,
) -> anyhow::Result<()> {
    let i = report.task;
    let failures = run.slots[i].failures + 1;
    run.slots[i].failures = failures;
    let retries_left = failures <= run.settings.retries;
    let retry = retries_left && !stopping;
    let status = match (retries_left, stopping) {
        (true, false) => TaskStatus::Pending,
        // A resume gives it the retry it has left.
        (true, true) => TaskStatus::Interrupted,
        (false, _) => TaskStatus::Failed,
    };
    let failure = Failure {
        failures,
        status,
        why,
        retry,
    };
    run.record.attempt_failed(id, report, totals, &failure)?;
    if retry {
        let wait = backoff(run.settings.backoff, failures);
        run.dag.on(
            &run.plan,
            Transition::Delayed(i, crate::time::deadline(Instant::now(), wait)),
        );
        // The failure, what it left on stderr, then the retry: one line each, so a time
        // taken and a time to wait never share one.
        run.ui
            .task_finished(id, Verb::Failed, report.elapsed, Some(why));
        run.ui.output_tail(&report.stderr_tail);
        run.ui.note(
            Verb::Retrying,
            &format!(
                "{id}: attempt {} in {} (retry {failures} of {})",
                report.attempt + 1,
                crate::ui::duration(wait),
                run.settings.retries,
            ),
        );
    } else if retries_left {
        run.dag.on(&run.plan, Transition::Interrupted(i));
        run.ui
            .task_finished(id, Verb::Interrupted, report.elapsed, Some(why));
        run.ui.output_tail(&report.stderr_tail);
    } else {
        run.ui
            .task_finished(id, Verb::Failed, report.elapsed, Some(why));
        run.ui.output_tail(&report.stderr_tail);
        if run.plan.tasks[i].mode == Mode::Write {
            // Kept for inspection until `swarm gc`.
            let path = run.layout.worktree(id, Checkout::Task);
            run.ui.note(
                Verb::Kept,
                &format!("worktree of {id} at {}", path.display()),
            );
        }
        run.transition(Transition::Failed(i))?;
    }
    Ok(())
}

//! Why a run stands where it stands, in words: what `swarm runs` says of each run (read from
//! its state and the event that ended it), and what a run that stops short records as its
//! reason. The one place these words are chosen.

use crate::agent::FaultKind;
use crate::schedule::Ending;
use crate::store::{Logged, RunEvent, RunStatus};

use super::inspect::RunState;

/// A `swarm worker` that stopped: its attempts went back to the run.
pub(super) const WORKER_STOPPED: &str = "stopped; its attempts went back to the run";

/// Why a run that did not finish stopped, for its `run_ended` event; `None` for one that
/// finished. `halted` is why the merges were halted, `events` the run's log so far.
pub(super) fn of_ending(
    ending: &Ending,
    halted: Option<&str>,
    events: &[Logged],
) -> Option<String> {
    // What this swarm recorded since it took the run up.
    let since_start = || {
        events.iter().rev().take_while(|e| {
            !matches!(
                e.event,
                RunEvent::RunResumed { .. } | RunEvent::RunStarted { .. }
            )
        })
    };
    Some(match ending {
        Ending::Finished => return None,
        Ending::Faulted(fault) => {
            // The kind the attempt that met it recorded: the loop stops for an endpoint that
            // did not come back as for a fault of the machine, with the endpoint's words.
            let met = since_start().find_map(|e| match &e.event {
                RunEvent::Fault { kind, why } if *why == fault.why => FaultKind::named(kind),
                _ => None,
            });
            of_fault(met.unwrap_or(fault.kind), &fault.why)
        }
        Ending::OverBudget => "the token budget was spent".to_owned(),
        Ending::Halted => match halted {
            Some(why) => format!("halted: {why}"),
            None => "halted".to_owned(),
        },
        Ending::Interrupted => {
            // A usage limit the run does not wait for stops it as a signal does.
            let limited = since_start().any(|e| {
                matches!(
                    e.event,
                    RunEvent::UsageLimit {
                        stops_run: true,
                        ..
                    }
                )
            });
            if limited {
                "an agent's usage limit".to_owned()
            } else {
                "interrupted".to_owned()
            }
        }
    })
}

/// Why a run stands where it stands: `None` while it runs; else from the event that ended it
/// (its last), or from its status and exit code for a run recorded before swarm kept a reason.
pub(super) fn of_run(
    state: RunState,
    status: RunStatus,
    exit_code: Option<i32>,
    last: Option<&RunEvent>,
) -> Option<String> {
    match state {
        RunState::Running => return None,
        RunState::Stopped => return Some("its swarm process went away (killed?)".to_owned()),
        RunState::Interrupted | RunState::Finished => {}
    }
    let said = match last {
        Some(RunEvent::RunEnded {
            reason: Some(why), ..
        }) => Some(why.clone()),
        Some(RunEvent::Fault { kind, why }) => Some(of_fault(
            FaultKind::named(kind).unwrap_or(FaultKind::Environment),
            why,
        )),
        Some(RunEvent::PlanningInterrupted) => Some("interrupted while planning".to_owned()),
        Some(RunEvent::PlanOnly) => Some("planned only".to_owned()),
        Some(RunEvent::PlanDeclined { interrupted: false }) => Some("plan declined".to_owned()),
        Some(RunEvent::PlanDeclined { interrupted: true }) => {
            Some("plan declined with Ctrl-C".to_owned())
        }
        Some(RunEvent::PlanningFailed { error }) => Some(format!("planning failed: {error}")),
        Some(RunEvent::RunAbandoned { reason }) => Some(reason.clone()),
        _ => None,
    };
    said.or_else(|| match (status, exit_code) {
        (RunStatus::Finished, Some(0)) => Some("done".to_owned()),
        (RunStatus::Finished, Some(1)) => Some("some tasks failed or were skipped".to_owned()),
        (RunStatus::Finished, Some(3)) => Some("parked work waits for a human".to_owned()),
        (RunStatus::Interrupted, Some(75)) => Some("stopped early".to_owned()),
        (_, Some(code)) => Some(format!("exit code {code}")),
        (_, None) => None,
    })
}

/// A fault that stopped a run, in words: for a fault of the machine, its account up to the
/// details (`swarm logs` has them whole).
fn of_fault(kind: FaultKind, why: &str) -> String {
    match kind {
        FaultKind::Credentials => "the model endpoint refused the key".to_owned(),
        FaultKind::Unreachable => "the model endpoint did not answer".to_owned(),
        FaultKind::Environment | FaultKind::Gate => {
            let end = [" (", "; "]
                .iter()
                .filter_map(|cut| why.find(cut))
                .min()
                .unwrap_or(why.len());
            why[..end].to_owned()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_says_what_ended_it_and_an_older_record_its_exit_code() {
        let of = |status, code, last: Option<RunEvent>| {
            of_run(RunState::Finished, status, code, last.as_ref())
        };
        let fault = RunEvent::Fault {
            kind: "credentials".into(),
            why: "the model endpoint refused swarm's key (HTTP 401 from …)".into(),
        };
        assert_eq!(
            of(RunStatus::Interrupted, Some(2), Some(fault)).as_deref(),
            Some("the model endpoint refused the key")
        );
        assert_eq!(
            of(RunStatus::Finished, Some(0), Some(RunEvent::PlanOnly)).as_deref(),
            Some("planned only")
        );
        let ended = |reason: Option<&str>| RunEvent::RunEnded {
            status: "finished".into(),
            exit_code: 3,
            landing: None,
            reason: reason.map(str::to_owned),
        };
        assert_eq!(
            of(RunStatus::Finished, Some(3), Some(ended(None))).as_deref(),
            Some("parked work waits for a human")
        );
        assert_eq!(
            of(
                RunStatus::Interrupted,
                Some(75),
                Some(ended(Some("interrupted")))
            )
            .as_deref(),
            Some("interrupted")
        );
        let full = RunEvent::Fault {
            kind: "environment".into(),
            why: "the disk holding /tmp is full (12 KiB free); the attempt failed with: x".into(),
        };
        assert_eq!(
            of(RunStatus::Interrupted, Some(75), Some(full)).as_deref(),
            Some("the disk holding /tmp is full")
        );
        assert_eq!(
            of_run(RunState::Running, RunStatus::Running, None, None),
            None
        );
    }
}

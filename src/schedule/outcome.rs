//! An attempt's report as the remote carries it, and back: a worker turns what its pool
//! reported into an `Outcome`, the coordinator turns the `Outcome` into the report its own
//! pool would have made, so everything after (records, merges, retries) is as for a local
//! attempt.

use std::time::{Duration, UNIX_EPOCH};

use super::core::slot::Totals;
use super::job::{Report, Verdict};
use crate::agent::cli::UsageLimit;
use crate::agent::{Fault, FaultKind};
use crate::git::CommitId;
use crate::remote::{Limit, Outcome, Status};

/// What a worker pushes for its attempt of `task`.
pub(super) fn outcome(task: &str, generation: u32, worker: &str, report: &Report) -> Outcome {
    let mut o = Outcome {
        task: task.to_owned(),
        attempt: report.attempt,
        generation,
        worker: worker.to_owned(),
        status: Status::Succeeded,
        result: None,
        commit: None,
        why: None,
        fault: None,
        limit: None,
        tokens: report.used.tokens,
        prompt_tokens: report.used.prompt_tokens,
        cached_tokens: report.used.cached_tokens,
        cost: report.used.cost,
        elapsed_ms: u64::try_from(report.elapsed.as_millis()).unwrap_or(u64::MAX),
        stderr_tail: report.stderr_tail.clone(),
        spawn: report.spawn.clone(),
    };
    match &report.verdict {
        Verdict::Succeeded { result, commit } => {
            o.result = Some(result.clone());
            o.commit = commit.as_ref().map(ToString::to_string);
        }
        // A pick runs where the run is, never on a worker.
        Verdict::Picked(picked) => {
            o.result = Some(picked.result.clone());
            o.commit = Some(picked.commit.to_string());
        }
        Verdict::Failed(why) => {
            o.status = Status::Failed;
            o.why = Some(why.clone());
        }
        Verdict::Interrupted => o.status = Status::Interrupted,
        Verdict::Limited(limit) => {
            o.status = Status::Limited;
            o.limit = Some(Limit {
                message: limit.message.clone(),
                resets_at_ms: limit.resets_at.and_then(|t| {
                    t.duration_since(UNIX_EPOCH)
                        .ok()
                        .and_then(|d| u64::try_from(d.as_millis()).ok())
                }),
                lasting: limit.lasting,
            });
        }
        Verdict::Fault(fault) => {
            o.status = Status::Fault;
            o.fault = Some(fault.kind.as_str().to_owned());
            o.why = Some(fault.why.clone());
        }
    }
    o
}

/// The report of task `i`'s attempt that `o` tells of, as the coordinator's pool would make it.
pub(super) fn report(i: usize, o: &Outcome) -> Report {
    let why = || {
        o.why
            .clone()
            .unwrap_or_else(|| "no reason given".to_owned())
    };
    let verdict = match o.status {
        Status::Succeeded => Verdict::Succeeded {
            result: o.result.clone().unwrap_or_default(),
            commit: o.commit.as_deref().map(CommitId::new),
        },
        Status::Failed => Verdict::Failed(why()),
        Status::Interrupted => Verdict::Interrupted,
        Status::Limited => {
            let limit = o.limit.clone().unwrap_or(Limit {
                message: why(),
                resets_at_ms: None,
                lasting: false,
            });
            Verdict::Limited(UsageLimit {
                message: limit.message,
                resets_at: limit
                    .resets_at_ms
                    .map(|ms| UNIX_EPOCH + Duration::from_millis(ms)),
                lasting: limit.lasting,
            })
        }
        Status::Fault => Verdict::Fault(Fault {
            kind: match o.fault.as_deref() {
                Some("credentials") => FaultKind::Credentials,
                Some("unreachable") => FaultKind::Unreachable,
                Some("gate") => FaultKind::Gate,
                _ => FaultKind::Environment,
            },
            why: format!("on worker {}: {}", o.worker, why()),
        }),
    };
    Report {
        task: i,
        attempt: o.attempt,
        verdict,
        elapsed: Duration::from_millis(o.elapsed_ms),
        used: Totals {
            tokens: o.tokens,
            prompt_tokens: o.prompt_tokens,
            cached_tokens: o.cached_tokens,
            cost: o.cost,
        },
        // A session lives on the worker's machine: a later attempt starts afresh.
        session: None,
        stderr_tail: o.stderr_tail.clone(),
        spawn: o.spawn.clone(),
    }
}

/// The status's name in the event log.
pub(super) fn status_name(s: Status) -> &'static str {
    match s {
        Status::Succeeded => "succeeded",
        Status::Failed => "failed",
        Status::Interrupted => "interrupted",
        Status::Limited => "limited",
        Status::Fault => "fault",
    }
}

#[cfg(test)]
mod tests {
    use super::{outcome, report};
    use crate::git::CommitId;
    use crate::schedule::core::slot::Totals;
    use crate::schedule::job::{Report, Verdict};
    use std::time::Duration;

    fn sample(verdict: Verdict) -> Report {
        Report {
            task: 3,
            attempt: 2,
            verdict,
            elapsed: Duration::from_millis(1500),
            used: Totals {
                tokens: 40,
                prompt_tokens: 30,
                cached_tokens: 20,
                cost: Some(0.5),
            },
            session: Some("s".into()),
            stderr_tail: vec!["boom".into()],
            spawn: Some(Ok("{\"id\":\"c\",\"run\":\"true\"}\n".into())),
        }
    }

    #[test]
    fn a_report_survives_the_remote_but_its_session() {
        let commit = CommitId::new("0123456789abcdef0123456789abcdef01234567");
        let ok = sample(Verdict::Succeeded {
            result: "done".into(),
            commit: Some(commit.clone()),
        });
        let o = outcome("t", 7, "w1", &ok);
        let json = serde_json::to_string(&o).unwrap();
        let back = report(5, &serde_json::from_str(&json).unwrap());
        assert_eq!((back.task, back.attempt), (5, 2));
        assert_eq!(back.used, ok.used, "tokens, cached tokens and cost");
        assert_eq!(back.elapsed, Duration::from_millis(1500));
        assert!(back.session.is_none());
        assert_eq!(back.spawn, ok.spawn);
        let Verdict::Succeeded { result, commit: c } = back.verdict else {
            panic!("not a success");
        };
        assert_eq!((result.as_str(), c), ("done", Some(commit)));

        let failed = report(
            0,
            &outcome("t", 1, "w1", &sample(Verdict::Failed("bad".into()))),
        );
        assert!(matches!(failed.verdict, Verdict::Failed(ref w) if w == "bad"));
        assert_eq!(failed.stderr_tail, ["boom"]);
        let fault = crate::agent::Fault {
            kind: crate::agent::FaultKind::Environment,
            why: "disk full".into(),
        };
        let faulted = report(0, &outcome("t", 1, "w9", &sample(Verdict::Fault(fault))));
        assert!(
            matches!(faulted.verdict, Verdict::Fault(ref f) if f.why == "on worker w9: disk full")
        );
    }
}

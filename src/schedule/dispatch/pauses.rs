//! The dispatcher's pauses: an agent's provider out of usage until its reset, and a model
//! endpoint that stopped answering. Nothing new starts during either; a pause too long, or one
//! no wait ends, stops the run resumably.

use std::time::{Duration, Instant};

use std::sync::mpsc::Sender;

use super::endpoint::EndpointWatch;
use crate::agent::cli::UsageLimit;
use crate::agent::{Fault, FaultKind};
use crate::schedule::Message;
use crate::schedule::dag::Transition;
use crate::schedule::job::Report;
use crate::schedule::record::Totals;
use crate::schedule::run::Run;
use crate::store::RunEvent;
use crate::ui::Verb;

/// How long the run pauses for a usage limit whose reset the agent did not say.
const DEFAULT_LIMIT_WAIT: Duration = Duration::from_secs(60);

/// How long until a usage limit resets: the time the agent gave, or `DEFAULT_LIMIT_WAIT`.
pub(super) fn limit_wait(limit: &UsageLimit) -> Duration {
    limit.resets_at.map_or(DEFAULT_LIMIT_WAIT, |t| {
        t.duration_since(std::time::SystemTime::now())
            .unwrap_or_default()
    })
}

/// What holds new attempts back, and what stops the run for a pause too long.
#[derive(Default)]
pub(super) struct Pauses {
    /// No attempt starts before this: an agent's provider said its usage limit resets then.
    until: Option<Instant>,
    /// A usage limit resets later than `max_limit_wait`: the run stops (resumable).
    limit_stop: Option<String>,
    /// The model endpoint, while it does not answer: nothing new starts.
    endpoint: EndpointWatch,
}

impl Pauses {
    /// Whether new attempts wait now.
    pub(super) fn holds(&self, now: Instant) -> bool {
        self.until.is_some_and(|t| t > now) || self.endpoint.is_away()
    }

    /// Why the run stops for a usage limit, once.
    pub(super) fn take_limit_stop(&mut self) -> Option<String> {
        self.limit_stop.take()
    }

    /// An attempt found the model endpoint away: the task runs again (no failure counted)
    /// once it answers, and nothing new starts until then; the run stops instead when it
    /// waits for no endpoint.
    /// The fault that stops the run instead, if any; `faulted` says the run already stops for
    /// one.
    #[expect(
        clippy::too_many_arguments,
        reason = "the attempt's report and what the run around it holds"
    )]
    pub(super) fn endpoint_away(
        &mut self,
        run: &mut Run<'_>,
        tx: &Sender<Message>,
        faulted: bool,
        id: &str,
        report: &Report,
        fault: &Fault,
        totals: Totals,
    ) -> anyhow::Result<Option<Fault>> {
        let i = report.task;
        run.record
            .attempt_faulted(id, report, totals, fault.kind.as_str(), &fault.why)?;
        run.ui
            .task_finished(id, Verb::Interrupted, report.elapsed, Some(&fault.why));
        let wait = run.settings.endpoint_wait;
        let client = run.settings.llm.as_ref().filter(|_| !wait.is_zero());
        let Some(client) = client.filter(|_| !faulted) else {
            run.dag.on(&run.plan, Transition::Interrupted(i));
            return Ok(Some(Fault {
                kind: FaultKind::Environment,
                why: fault.why.clone(),
            }));
        };
        run.dag
            .on(&run.plan, Transition::Delayed(i, Instant::now()));
        if !self.endpoint.is_away() {
            self.endpoint.away(client, wait, tx)?;
            run.record.run_event(RunEvent::EndpointWaiting {
                why: fault.why.clone(),
                wait_ms: wait.as_millis() as u64,
            })?;
            run.ui.note(
                Verb::Paused,
                &format!(
                    "no new attempts while swarm checks the model endpoint, for up to {}",
                    crate::ui::duration(wait)
                ),
            );
        }
        Ok(None)
    }

    /// The checks of an endpoint that went away ended: it answers again, or it stayed away
    /// as long as the run waits and the run stops, resumable: the fault it stops for.
    pub(super) fn endpoint_checked(
        &mut self,
        run: &mut Run<'_>,
        gone: Option<String>,
    ) -> anyhow::Result<Option<Fault>> {
        let away = self.endpoint.back();
        Ok(match gone {
            None => {
                run.record.run_event(RunEvent::EndpointAnswers {
                    after_ms: away.as_millis() as u64,
                })?;
                run.ui.note(
                    Verb::Note,
                    &format!(
                        "the model endpoint answers again after {}",
                        crate::ui::duration(away)
                    ),
                );
                None
            }
            Some(cause) => {
                let why = format!(
                    "the model endpoint has not answered for {} (the last check: {cause})",
                    crate::ui::duration(away)
                );
                run.record.run_event(RunEvent::Fault {
                    kind: "environment".to_owned(),
                    why: why.clone(),
                })?;
                Some(Fault {
                    kind: FaultKind::Environment,
                    why,
                })
            }
        })
    }

    /// An attempt met its provider's usage limit: the task waits (no failure counted) and no
    /// attempt starts until the reset; a reset beyond `max_limit_wait` stops the run instead.
    pub(super) fn limited(
        &mut self,
        run: &mut Run<'_>,
        id: &str,
        report: &Report,
        limit: &UsageLimit,
        totals: Totals,
    ) -> anyhow::Result<()> {
        let i = report.task;
        let wait = limit_wait(limit);
        let too_long = limit.lasting || wait > run.settings.max_limit_wait;
        let wait_ms = wait.as_millis() as u64;
        run.record
            .attempt_limited(id, report, totals, &limit.message, wait_ms, too_long)?;
        let what = if limit.lasting {
            format!(
                "usage limit ({}); it lasts until a cap is raised or credits are bought",
                limit.message
            )
        } else {
            format!(
                "usage limit ({}); resets in {}",
                limit.message,
                crate::ui::duration(wait)
            )
        };
        run.ui
            .task_finished(id, Verb::Limited, report.elapsed, Some(&what));
        let text = format!("{id}: {what}");
        if limit.lasting {
            run.dag.on(&run.plan, Transition::Interrupted(i));
            self.limit_stop = Some(format!(
                "{text}; `swarm resume` continues the run once it is"
            ));
        } else if too_long {
            run.dag.on(&run.plan, Transition::Interrupted(i));
            self.limit_stop = Some(format!(
                "{text}, past the {} this run waits; `swarm resume` continues it later",
                crate::ui::duration(run.settings.max_limit_wait)
            ));
        } else {
            let until = crate::time::deadline(Instant::now(), wait);
            self.until = Some(self.until.map_or(until, |p| p.max(until)));
            run.dag.on(&run.plan, Transition::Delayed(i, until));
            run.ui.note(
                Verb::Paused,
                &format!("no new attempts for {}", crate::ui::duration(wait)),
            );
        }
        Ok(())
    }
}

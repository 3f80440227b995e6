//! What holds new attempts back for the whole run: an agent's provider out of usage until its
//! reset, and a model endpoint that stopped answering. A pause too long, or one no wait ends,
//! stops the run resumably.

use std::time::{Duration, Instant};

use crate::agent::cli::UsageLimit;
use crate::agent::{Fault, FaultKind};
use crate::store::RunEvent;
use crate::ui::{Ended, Limit, Stop, Told};

use super::dag::Transition;
use super::slot::Totals;
use super::{Core, Effect, Rec};
use crate::schedule::job::Report;

/// What holds new attempts back.
#[derive(Debug, Default)]
pub(super) struct Pauses {
    /// No attempt starts before this: an agent's provider said its usage limit resets then.
    until: Option<Instant>,
    /// A usage limit resets later than `max_limit_wait`: the run stops (resumable).
    limit_stop: Option<Stop>,
    /// Since when the model endpoint has been away, while it is: nothing new starts.
    endpoint_away: Option<Instant>,
}

impl Pauses {
    /// Whether new attempts wait now.
    pub(super) fn holds(&self, now: Instant) -> bool {
        self.until.is_some_and(|t| t > now) || self.endpoint_away.is_some()
    }

    /// Why the run stops for a usage limit, once.
    pub(super) fn take_limit_stop(&mut self) -> Option<Stop> {
        self.limit_stop.take()
    }

    /// The checks of an endpoint that went away ended, at `now`: it answers again, or it
    /// stayed away as long as the run waits and the run stops, resumable: the fault it stops
    /// for.
    pub(super) fn endpoint_checked(
        &mut self,
        gone: Option<String>,
        now: Instant,
        fx: &mut Vec<Effect>,
    ) -> Option<Fault> {
        let away = self
            .endpoint_away
            .take()
            .map_or(Duration::ZERO, |since| now.saturating_duration_since(since));
        match gone {
            None => {
                fx.push(Effect::Record(Rec::Run(RunEvent::EndpointAnswers {
                    after_ms: away.as_millis() as u64,
                })));
                fx.push(Effect::Tell(Told::EndpointBack(away)));
                None
            }
            Some(cause) => {
                let why = format!(
                    "the model endpoint has not answered for {} (the last check: {cause})",
                    crate::ui::duration(away)
                );
                fx.push(Effect::Record(Rec::Run(RunEvent::Fault {
                    kind: "environment".to_owned(),
                    why: why.clone(),
                })));
                Some(Fault {
                    kind: FaultKind::Environment,
                    why,
                })
            }
        }
    }
}

impl Core<'_> {
    /// An attempt found the model endpoint away: the task runs again (no failure counted)
    /// once it answers, and nothing new starts until then; the run stops instead when it
    /// waits for no endpoint.
    pub(super) fn endpoint_away(
        &mut self,
        id: &str,
        report: Report,
        fault: &Fault,
        totals: Totals,
        now: Instant,
        fx: &mut Vec<Effect>,
    ) {
        let i = report.task;
        let told = super::told_end(id, Ended::Interrupted, &report, Some(fault.why.clone()));
        fx.push(Effect::Record(Rec::Faulted {
            id: id.to_owned(),
            report,
            totals,
            kind: fault.kind.as_str(),
            why: fault.why.clone(),
        }));
        fx.push(told);
        let wait = self.settings.endpoint_wait;
        let watched = self.settings.llm.is_some() && !wait.is_zero();
        if !watched || self.stop.fault.is_some() {
            self.transition(Transition::Interrupted(i), fx);
            self.stop.fault.get_or_insert(Fault {
                kind: FaultKind::Environment,
                why: fault.why.clone(),
            });
            return;
        }
        self.transition(Transition::Delayed(i, now), fx);
        if self.pauses.endpoint_away.is_none() {
            self.pauses.endpoint_away = Some(now);
            fx.push(Effect::WatchEndpoint(wait));
            fx.push(Effect::Record(Rec::Run(RunEvent::EndpointWaiting {
                why: fault.why.clone(),
                wait_ms: wait.as_millis() as u64,
            })));
            fx.push(Effect::Tell(Told::PausedForEndpoint(wait)));
        }
    }

    /// An attempt met its provider's usage limit, whose reset is `wait` away: the task waits
    /// (no failure counted) and no attempt starts until the reset; a reset beyond
    /// `max_limit_wait` stops the run instead.
    #[expect(
        clippy::too_many_arguments,
        reason = "the attempt's report, its limit and what the run around it holds"
    )]
    pub(super) fn run_limited(
        &mut self,
        id: &str,
        report: Report,
        limit: &UsageLimit,
        wait: Duration,
        totals: Totals,
        now: Instant,
        fx: &mut Vec<Effect>,
    ) {
        let i = report.task;
        let max_wait = self.settings.max_limit_wait;
        let too_long = limit.lasting || wait > max_wait;
        let said = Limit::Run {
            message: limit.message.clone(),
            wait,
            lasting: limit.lasting,
        };
        Self::limited(id, report, totals, limit, wait, said.clone(), too_long, fx);
        if too_long {
            self.transition(Transition::Interrupted(i), fx);
            self.pauses.limit_stop = Some(Stop::Limit {
                id: id.to_owned(),
                limit: said,
                max_wait,
            });
        } else {
            let until = crate::time::deadline(now, wait);
            self.pauses.until = Some(self.pauses.until.map_or(until, |p| p.max(until)));
            self.transition(Transition::Delayed(i, until), fx);
            fx.push(Effect::Tell(Told::PausedForLimit(wait)));
        }
    }
}

impl Core<'_> {
    /// An attempt met a usage limit (`said`, `wait` until it resets): the board records it,
    /// and whether it stops the run, and the terminal is told.
    #[expect(
        clippy::too_many_arguments,
        reason = "the attempt's report and its limit, as the run and a pool's member word it"
    )]
    pub(super) fn limited(
        id: &str,
        report: Report,
        totals: Totals,
        limit: &UsageLimit,
        wait: Duration,
        said: Limit,
        stops_run: bool,
        fx: &mut Vec<Effect>,
    ) {
        let elapsed = report.elapsed;
        fx.push(Effect::Record(Rec::Limited {
            id: id.to_owned(),
            report,
            totals,
            message: limit.message.clone(),
            wait_ms: wait.as_millis() as u64,
            stops_run,
        }));
        fx.push(Effect::Tell(Told::Limited {
            id: id.to_owned(),
            elapsed,
            limit: said,
        }));
    }
}

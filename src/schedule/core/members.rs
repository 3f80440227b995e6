//! Which agent an attempt goes to when its agent is a pool (`pool:NAME`), and how many
//! attempts of each profile run at once (`max-concurrent`). A pool's attempt goes to the
//! member with the most room: under its cap and not paused, then the fewest failed attempts in
//! the last ten minutes, then the fewest running, then the pool's order; a task whose last
//! attempt was cut short goes back to the member its session belongs to when that one has
//! room. A member at its usage limit pauses alone until its reset; the pool's tasks wait only
//! while every member is paused, and the run stops (resumable) only once every member is out
//! for the rest of the run (a limit that lasts, or resets past `max-limit-wait`).

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use crate::agent::Agent;
use crate::agent::cli::UsageLimit;
use crate::plan::{Action, Task};
use crate::schedule::Settings;
use crate::store::RunEvent;
use crate::ui::{Limit, Stop, Told};

use super::dag::Transition;
use super::slot::{Slot, Totals};
use super::{Core, Effect, Rec};
use crate::schedule::job::Report;

/// Failed attempts this recent count against a member when choosing.
const RECENT: Duration = Duration::from_secs(600);

/// The agents attempts go to, as the run stands now.
#[derive(Debug, Default)]
pub(super) struct Members {
    /// By agent (profile or member) name.
    standing: BTreeMap<String, Standing>,
    /// The agent each running attempt counts against, by task.
    running: BTreeMap<usize, String>,
    /// Pools every member of which is paused, once noted.
    held: BTreeSet<String>,
    /// Every member of a pool is out for the run: the run stops (resumable).
    limit_stop: Option<Stop>,
}

/// One agent's standing.
#[derive(Debug, Default)]
struct Standing {
    running: usize,
    /// It takes no attempt before this: its usage limit resets then.
    until: Option<Instant>,
    /// Out for the rest of the run.
    out: bool,
    /// When its recent attempts failed.
    failures: Vec<Instant>,
}

/// Whether task `i`'s next attempt may start now; for a pool's task, the member it goes to
/// is set in its `slot`. A task held back waits in the ready queue.
pub(super) fn admit(
    m: &mut Members,
    settings: &Settings,
    i: usize,
    task: &Task,
    slot: &mut Slot,
    now: Instant,
    fx: &mut Vec<Effect>,
) -> bool {
    if !matches!(task.action, Action::Prompt(_)) {
        return true;
    }
    m.wake(now, fx);
    let Some(pool) = settings.pool_for(task.agent.as_deref()) else {
        // A profile used directly: its cap only, when profiles have caps.
        if settings.max_concurrent.is_empty() {
            return true;
        }
        let Some(Agent::Cli(profile)) = settings.agent_for(task.agent.as_deref()) else {
            return true;
        };
        if !m.has_room(settings, &profile.name, now) {
            return false;
        }
        m.take(i, &profile.name);
        return true;
    };
    let Some(members) = settings.pools.get(pool) else {
        return true;
    };
    let previous = slot.member.clone();
    let rooms: Vec<Room> = members
        .iter()
        .map(|name| Room {
            free: m.has_room(settings, name, now),
            failures: m.recent_failures(name, now),
            running: m.running_of(name),
            previous: previous.as_ref() == Some(name),
        })
        .collect();
    let Some(member) = choose(&rooms).map(|n| members[n].clone()) else {
        m.note_held(pool, members, now, fx);
        return false;
    };
    m.held.remove(pool);
    if previous.as_ref().is_some_and(|p| *p != member) && slot.session.is_some() {
        // The session belongs to the member that ran it: another starts one of its own.
        slot.session = None;
        fx.push(Effect::Record(Rec::Session(task.id.to_string(), None)));
    }
    slot.member = Some(member.clone());
    m.take(i, &member);
    true
}

impl Members {
    /// Task `i`'s attempt ended: its agent has room again.
    pub(super) fn release(&mut self, i: usize) {
        if let Some(name) = self.running.remove(&i)
            && let Some(s) = self.standing.get_mut(&name)
        {
            s.running = s.running.saturating_sub(1);
        }
    }

    /// An attempt of `member` failed: it counts against the member for a while.
    pub(super) fn failed(&mut self, member: Option<&str>, now: Instant) {
        let Some(member) = member else {
            return;
        };
        let s = self.standing.entry(member.to_owned()).or_default();
        s.failures
            .retain(|&at| now.saturating_duration_since(at) < RECENT);
        s.failures.push(now);
    }

    /// When a paused member's limit resets next, after `now`: the loop wakes then.
    pub(super) fn next_reset(&self, now: Instant) -> Option<Instant> {
        self.standing
            .values()
            .filter_map(|s| s.until)
            .filter(|&u| u > now)
            .min()
    }

    /// Why the run stops for its pools' usage limits, once.
    pub(super) fn take_limit_stop(&mut self) -> Option<Stop> {
        self.limit_stop.take()
    }

    /// Whether agent `name` may take an attempt now.
    fn has_room(&self, settings: &Settings, name: &str, now: Instant) -> bool {
        let cap = settings.max_concurrent.get(name).copied();
        let Some(s) = self.standing.get(name) else {
            return cap != Some(0);
        };
        !s.out && s.until.is_none_or(|u| u <= now) && cap.is_none_or(|c| s.running < c)
    }

    fn recent_failures(&self, name: &str, now: Instant) -> usize {
        self.standing.get(name).map_or(0, |s| {
            s.failures
                .iter()
                .filter(|&&at| now.saturating_duration_since(at) < RECENT)
                .count()
        })
    }

    fn running_of(&self, name: &str) -> usize {
        self.standing.get(name).map_or(0, |s| s.running)
    }

    fn take(&mut self, i: usize, name: &str) {
        self.standing.entry(name.to_owned()).or_default().running += 1;
        self.running.insert(i, name.to_owned());
    }

    /// Members whose limit has reset take attempts again.
    fn wake(&mut self, now: Instant, fx: &mut Vec<Effect>) {
        for (name, s) in &mut self.standing {
            if s.until.is_some_and(|u| u <= now) {
                s.until = None;
                fx.push(Effect::Record(Rec::Run(RunEvent::MemberBack {
                    member: name.clone(),
                })));
                fx.push(Effect::Tell(Told::MemberBack(name.clone())));
            }
        }
    }

    /// No member of `pool` has room: when every one still in the run is paused, the pool's
    /// tasks wait for the first reset, as noted once.
    fn note_held(&mut self, pool: &str, members: &[String], now: Instant, fx: &mut Vec<Effect>) {
        let standing: Vec<Option<&Standing>> =
            members.iter().map(|m| self.standing.get(m)).collect();
        let paused = standing
            .iter()
            .all(|s| s.is_some_and(|s| s.out || s.until.is_some()));
        let first = standing
            .iter()
            .filter_map(|s| s.and_then(|s| s.until))
            .min();
        let Some(first) = first.filter(|_| paused) else {
            return;
        };
        if !self.held.insert(pool.to_owned()) {
            return;
        }
        let wait = first.saturating_duration_since(now);
        fx.push(Effect::Record(Rec::Run(RunEvent::PoolPaused {
            pool: pool.to_owned(),
            resumes_in_ms: wait.as_millis() as u64,
        })));
        fx.push(Effect::Tell(Told::PoolPaused {
            pool: pool.to_owned(),
            wait,
        }));
    }
}

impl Core<'_> {
    /// A pool's member met its usage limit: it alone is paused until its reset (or out for
    /// the run), and the task goes back to the ready queue for another member, no failure
    /// counted. The report back when the attempt was not a pool's: the run's pause takes it
    /// then.
    #[expect(
        clippy::too_many_arguments,
        reason = "the attempt's report, its limit and what the run around it holds"
    )]
    pub(super) fn member_limited(
        &mut self,
        id: &str,
        report: Report,
        limit: &UsageLimit,
        wait: Duration,
        totals: Totals,
        now: Instant,
        fx: &mut Vec<Effect>,
    ) -> Option<Report> {
        let i = report.task;
        let settings = self.settings;
        let (Some(member), Some(pool)) = (
            self.slots[i].member.clone(),
            settings.pool_for(self.plan.tasks[i].agent.as_deref()),
        ) else {
            return Some(report);
        };
        let members = settings
            .pools
            .get(pool)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let max_wait = settings.max_limit_wait;
        let out = limit.lasting || wait > max_wait;
        let s = self.members.standing.entry(member.clone()).or_default();
        if out {
            s.out = true;
            s.until = None;
        } else {
            let until = crate::time::deadline(now, wait);
            s.until = Some(s.until.map_or(until, |u| u.max(until)));
        }
        let all_out = members
            .iter()
            .all(|m| self.members.standing.get(m).is_some_and(|s| s.out));
        fx.push(Effect::Record(Rec::Task(
            id.to_owned(),
            RunEvent::MemberLimited {
                pool: pool.to_owned(),
                member: member.clone(),
                resets_in_ms: (!limit.lasting).then_some(wait.as_millis() as u64),
                out,
            },
        )));
        let said = Limit::Member {
            member,
            message: limit.message.clone(),
            wait,
            lasting: limit.lasting,
            out,
            max_wait,
        };
        Self::limited(id, report, totals, limit, wait, said, all_out, fx);
        if all_out {
            let pool = pool.to_owned();
            self.transition(Transition::Interrupted(i), fx);
            self.members.limit_stop = Some(Stop::PoolOut(pool));
        } else {
            // Ready again at once: another member takes it, or it waits for the first reset.
            self.transition(Transition::Delayed(i, now), fx);
        }
        None
    }
}

/// A member as the choice sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Room {
    /// Under its cap, not paused, not out.
    free: bool,
    /// Its failed attempts in the last ten minutes.
    failures: usize,
    running: usize,
    /// The task's last attempt went to it (its session is this member's).
    previous: bool,
}

/// The member (by position in the pool) an attempt goes to: the one the task's session
/// belongs to when it is free, else the free one with the fewest recent failures, then the
/// fewest running, then the first in the pool's order; none when no member is free.
fn choose(rooms: &[Room]) -> Option<usize> {
    if let Some(n) = rooms.iter().position(|r| r.previous && r.free) {
        return Some(n);
    }
    rooms
        .iter()
        .enumerate()
        .filter(|(_, r)| r.free)
        .min_by_key(|&(n, r)| (r.failures, r.running, n))
        .map(|(n, _)| n)
}

#[cfg(test)]
mod tests {
    use super::{Room, choose};

    fn room(free: bool, failures: usize, running: usize) -> Room {
        Room {
            free,
            failures,
            running,
            previous: false,
        }
    }

    #[test]
    fn the_free_member_with_fewest_recent_failures_then_fewest_running_then_first_is_chosen() {
        assert_eq!(choose(&[room(true, 0, 0), room(true, 0, 0)]), Some(0));
        assert_eq!(choose(&[room(true, 0, 2), room(true, 0, 1)]), Some(1));
        assert_eq!(choose(&[room(true, 1, 0), room(true, 0, 3)]), Some(1));
        assert_eq!(choose(&[room(false, 0, 0), room(true, 4, 4)]), Some(1));
        assert_eq!(choose(&[room(false, 0, 0), room(false, 0, 0)]), None);
        assert_eq!(choose(&[]), None);
    }

    #[test]
    fn a_task_goes_back_to_its_sessions_member_only_while_that_one_is_free() {
        let previous = |free| Room {
            previous: true,
            ..room(free, 3, 1)
        };
        assert_eq!(choose(&[room(true, 0, 0), previous(true)]), Some(1));
        assert_eq!(choose(&[room(true, 0, 0), previous(false)]), Some(0));
    }
}

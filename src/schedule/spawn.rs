//! Tasks a running task adds to the run (see the README's "Tasks that add tasks"): what an
//! attempt that succeeded asked to spawn (the lines its agent wrote to `$SWARM_SPAWN`, or gave
//! the built-in agent's `add_tasks` tool), checked as a task file is and against the limits,
//! then joined to the plan with the task's continuation (`then`). Owned by the owner thread,
//! which records what joins in the same transaction as the attempt's success, so a spawn is
//! taken exactly once, whatever kills swarm when.

use std::collections::{HashMap, VecDeque};
use std::ops::Range;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::plan::{Action, Plan, Task, TaskId};

/// The most bytes a spawn may hold; past it the whole spawn is refused.
pub(crate) const MAX_SPAWN_BYTES: u64 = 1024 * 1024;

/// How many tasks may be spawned, and how fast; each a run option (README).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpawnLimits {
    /// Tasks one task may spawn.
    pub children: u32,
    /// Levels of spawning below the plan's own tasks (which are at depth 0).
    pub depth: u32,
    /// Tasks spawned in one run, resumes included.
    pub tasks: u32,
    /// Tasks spawned in the run in any 60 seconds.
    pub per_minute: u32,
}

impl Default for SpawnLimits {
    fn default() -> Self {
        Self {
            children: 50,
            depth: 3,
            tasks: 500,
            per_minute: 120,
        }
    }
}

/// What an attempt may still spawn, as `$SWARM_CAPACITY` and the `capacity` tool give it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub(crate) struct Capacity {
    /// Attempts running in this process, this one included.
    pub(crate) running: usize,
    /// Slots of `--jobs` no attempt holds.
    pub(crate) free_slots: usize,
    /// Tasks this task may still spawn.
    pub(crate) children_left: u32,
    /// Levels its spawned tasks may spawn below them (0: they may not spawn).
    pub(crate) depth_left: u32,
    /// Tasks the run may still have spawned.
    pub(crate) run_left: u32,
    /// Tasks that may be spawned in the coming minute.
    pub(crate) minute_left: u32,
}

/// What an attempt's spawn did to the plan.
#[derive(Debug, Default)]
pub(super) struct Joined {
    /// The indices the tasks that joined got (its children, then its continuation).
    pub(super) added: Range<usize>,
    /// Their ids and task-file lines, for the board.
    pub(super) specs: Vec<(String, serde_json::Value)>,
    /// The children among them.
    pub(super) children: Vec<String>,
    /// Why what the agent asked for was refused, if it was; the task succeeds all the same.
    pub(super) refused: Option<String>,
}

/// Spawning's state over the run.
pub(super) struct Spawns {
    limits: SpawnLimits,
    /// Each task's depth: 0 for the plan's, its parent's + 1 for a spawned one.
    depth: Vec<u32>,
    /// How many tasks each task has spawned (its continuation included).
    children: Vec<u32>,
    /// Tasks spawned in the run, before a resume too.
    spawned: u32,
    /// When tasks were spawned in the last minute (one entry per task), in this process.
    recent: VecDeque<Instant>,
}

const MINUTE: Duration = Duration::from_secs(60);

impl Spawns {
    /// The state of a run starting or resumed: depths and counts from the tasks' parents.
    pub(super) fn new(plan: &Plan, limits: SpawnLimits) -> Self {
        let mut this = Self {
            limits,
            depth: Vec::with_capacity(plan.len()),
            children: vec![0; plan.len()],
            spawned: 0,
            recent: VecDeque::new(),
        };
        this.count(plan, 0);
        this
    }

    /// Counts the tasks from `from` on: their depths, and their parents' children.
    fn count(&mut self, plan: &Plan, from: usize) {
        let index: HashMap<&TaskId, usize> = plan
            .tasks
            .iter()
            .enumerate()
            .map(|(i, t)| (&t.id, i))
            .collect();
        self.children.resize(plan.len(), 0);
        for t in &plan.tasks[from..] {
            let parent = t.parent.as_ref().and_then(|p| index.get(p).copied());
            let depth = match parent {
                Some(p) => {
                    self.children[p] += 1;
                    self.spawned += 1;
                    self.depth.get(p).map_or(1, |d| d + 1)
                }
                None => 0,
            };
            self.depth.push(depth);
        }
    }

    /// What task `i`'s attempt may spawn, with `running` attempts (its own included) in
    /// `jobs` slots.
    pub(super) fn capacity(
        &mut self,
        i: usize,
        running: usize,
        jobs: usize,
        now: Instant,
    ) -> Capacity {
        self.forget_before(now);
        let l = &self.limits;
        let depth = self.depth.get(i).copied().unwrap_or(0);
        let may = depth < l.depth;
        Capacity {
            running,
            free_slots: jobs.saturating_sub(running),
            children_left: if may {
                l.children
                    .saturating_sub(self.children.get(i).copied().unwrap_or(0))
            } else {
                0
            },
            depth_left: l.depth.saturating_sub(depth + 1),
            run_left: l.tasks.saturating_sub(self.spawned),
            minute_left: l
                .per_minute
                .saturating_sub(u32::try_from(self.recent.len()).unwrap_or(u32::MAX)),
        }
    }

    fn forget_before(&mut self, now: Instant) {
        while self
            .recent
            .front()
            .is_some_and(|&t| now.saturating_duration_since(t) >= MINUTE)
        {
            self.recent.pop_front();
        }
    }

    /// Task `i`'s attempt succeeded having asked to spawn `asked` (the lines, or why they
    /// could not be read): the tasks that may join, join the plan, then its continuation
    /// (which is never refused: it comes from the task's own line).
    /// `runnable` says why a task cannot run in this run (an agent it does not have).
    pub(super) fn join(
        &mut self,
        plan: &mut Plan,
        i: usize,
        asked: Option<&Result<String, String>>,
        now: Instant,
        runnable: &dyn Fn(&Task) -> Result<(), String>,
    ) -> Joined {
        let start = plan.len();
        let mut joined = Joined {
            added: start..start,
            ..Joined::default()
        };
        // Most attempts spawn nothing: the plan is not linked again for them.
        if asked.is_none() && plan.tasks[i].then.is_none() {
            return joined;
        }
        let parent = plan.tasks[i].clone();
        let children = match asked {
            None => Ok(Vec::new()),
            Some(Err(why)) => Err(why.clone()),
            Some(Ok(text)) => self.children_of(plan, i, &parent, text, now, runnable),
        };
        let children = match children {
            Ok(c) => c,
            Err(why) => {
                joined.refused = Some(why);
                Vec::new()
            }
        };
        let mut ids: Vec<TaskId> = children.iter().map(|t| t.id.clone()).collect();
        let mut tasks = children;
        let mut added = link(plan, &parent, &mut tasks, &ids);
        if let Err(why) = &added
            && !ids.is_empty()
        {
            // What the children named does not link into the run (an unknown dep, an id
            // taken, a cycle): they are refused, and the continuation joins alone.
            joined.refused = Some(why.clone());
            ids.clear();
            tasks.clear();
            added = link(plan, &parent, &mut tasks, &ids);
        }
        let added = match added {
            Ok(added) => added,
            Err(why) => {
                let why = format!("its continuation does not join: {why}");
                joined.refused = Some(match joined.refused.take() {
                    Some(r) => format!("{r}; {why}"),
                    None => why,
                });
                tasks.clear();
                ids.clear();
                start..start
            }
        };
        for _ in &ids {
            self.recent.push_back(now);
        }
        if !tasks.is_empty() {
            self.count(plan, start);
        }
        joined.specs = tasks
            .iter()
            .map(|t| (t.id.to_string(), t.to_json()))
            .collect();
        joined.children = ids.iter().map(ToString::to_string).collect();
        joined.added = added;
        joined
    }

    /// The tasks of a spawn, each checked as a task-file line, namespaced under the parent and
    /// depending on it; or why the spawn is refused.
    fn children_of(
        &mut self,
        plan: &Plan,
        i: usize,
        parent: &Task,
        text: &str,
        now: Instant,
        runnable: &dyn Fn(&Task) -> Result<(), String>,
    ) -> Result<Vec<Task>, String> {
        let (tasks, problems) = Plan::read(text);
        if let Some(p) = problems.first() {
            return Err(format!(
                "line {} of the spawn: {} ({} problem(s) in all)",
                p.line,
                p.what(),
                problems.len()
            ));
        }
        if tasks.is_empty() {
            return Ok(tasks);
        }
        let asked = u32::try_from(tasks.len()).unwrap_or(u32::MAX);
        let limits = self.limits;
        let cap = self.capacity(i, 0, 0, now);
        let depth = self.depth.get(i).copied().unwrap_or(0);
        if depth >= limits.depth {
            return Err(format!(
                "{} is at depth {depth}, and max-depth is {}: its tasks may not spawn",
                parent.id, limits.depth
            ));
        }
        if asked > cap.children_left {
            return Err(format!(
                "{asked} tasks, past max-children ({} a task)",
                limits.children
            ));
        }
        if asked > cap.run_left {
            return Err(format!(
                "{asked} tasks, past max-spawned ({} a run, {} left)",
                limits.tasks, cap.run_left
            ));
        }
        if asked > cap.minute_left {
            return Err(format!(
                "{asked} tasks, past spawns-per-minute ({} a minute, {} left now); try again later",
                limits.per_minute, cap.minute_left
            ));
        }
        let local: HashMap<&TaskId, TaskId> = tasks
            .iter()
            .map(|t| Ok((&t.id, namespaced(&parent.id, &t.id)?)))
            .collect::<Result<_, String>>()?;
        let mut out = Vec::with_capacity(tasks.len());
        for t in &tasks {
            if t.parent.is_some() {
                return Err(format!(
                    "task {:?}: \"parent\" is swarm's to set",
                    t.id.as_str()
                ));
            }
            if matches!(parent.action, Action::Prompt(_)) {
                commands_refused(t)?;
            }
            let mut c = t.clone();
            c.id = local[&t.id].clone();
            let mut deps = vec![parent.id.clone()];
            for d in &t.deps {
                let d = local.get(d).cloned().unwrap_or_else(|| d.clone());
                if !deps.contains(&d) {
                    deps.push(d);
                }
            }
            c.deps = deps;
            c.parent = Some(parent.id.clone());
            c.agent = c.agent.or_else(|| parent.agent.clone());
            c.line = plan.len() + out.len() + 1;
            runnable(&c)?;
            out.push(c);
        }
        Ok(out)
    }
}

/// `tasks` and the parent's continuation (depending on `children`) joined to the plan: the
/// indices they got. The plan is left as it was when they do not link into it.
fn link(
    plan: &mut Plan,
    parent: &Task,
    tasks: &mut Vec<Task>,
    children: &[TaskId],
) -> Result<Range<usize>, String> {
    tasks.extend(continuation(parent, children)?);
    if tasks.is_empty() {
        return Ok(plan.len()..plan.len());
    }
    plan.extend(tasks.clone()).map_err(|e| format!("{e:#}"))
}

/// What an agent spawns runs through an agent: a command of its own (`run`, `check`, in a
/// continuation too) would run outside whatever confines the agent.
fn commands_refused(t: &Task) -> Result<(), String> {
    if matches!(t.action, Action::Run(_)) || t.check.is_some() {
        return Err(format!(
            "task {:?}: a task an agent spawns has a prompt and no check (only a run task may spawn commands)",
            t.id.as_str()
        ));
    }
    t.then.as_deref().map_or(Ok(()), commands_refused)
}

/// A task's continuation as it joins, if it has one: `<parent>.<id>`, depending on the
/// parent, what it names and every child.
fn continuation(parent: &Task, children: &[TaskId]) -> Result<Option<Task>, String> {
    let Some(then) = parent.then.as_deref() else {
        return Ok(None);
    };
    let mut c = then.clone();
    c.id = namespaced(&parent.id, &then.id)?;
    let mut deps = vec![parent.id.clone()];
    for d in then.deps.iter().chain(children) {
        if !deps.contains(d) {
            deps.push(d.clone());
        }
    }
    c.deps = deps;
    c.parent = Some(parent.id.clone());
    c.agent = c.agent.or_else(|| parent.agent.clone());
    Ok(Some(c))
}

fn namespaced(parent: &TaskId, id: &TaskId) -> Result<TaskId, String> {
    TaskId::parse(&format!("{parent}.{id}")).map_err(|e| format!("task {:?}: {e}", id.as_str()))
}

/// Why a spawned task cannot run in this run: its agent (or its continuation's) is not one
/// the run has.
pub(super) fn runnable(settings: &super::Settings, t: &Task) -> Result<(), String> {
    let name = t.agent.as_deref();
    let pooled = settings
        .pool_for(name)
        .is_some_and(|p| settings.pools.contains_key(p));
    if matches!(t.action, Action::Prompt(_)) && !pooled && settings.agent_for(name).is_none() {
        return Err(format!(
            "task {:?}: the run has no agent {:?} (a spawned task takes the run's agent, its parent's, or one the plan's tasks name)",
            t.id.as_str(),
            t.agent.as_deref().unwrap_or("auto")
        ));
    }
    t.then
        .as_deref()
        .map_or(Ok(()), |then| runnable(settings, then))
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::{SpawnLimits, Spawns};
    use crate::plan::{Plan, Task};

    fn plan(lines: &[&str]) -> Plan {
        Plan::parse(&lines.join("\n"), "test").unwrap()
    }

    /// Every task can run.
    const OK: &dyn Fn(&Task) -> Result<(), String> = &|_| Ok(());

    const LIMITS: SpawnLimits = SpawnLimits {
        children: 3,
        depth: 2,
        tasks: 4,
        per_minute: 10,
    };

    #[test]
    fn depths_and_counts_are_read_back_from_the_parents_on_resume() {
        let p = plan(&[
            r#"{"id":"a","run":"x"}"#,
            r#"{"id":"a.b","run":"x","deps":["a"],"parent":"a"}"#,
            r#"{"id":"a.b.c","run":"x","deps":["a.b"],"parent":"a.b"}"#,
        ]);
        let mut s = Spawns::new(&p, LIMITS);
        let now = Instant::now();
        let a = s.capacity(0, 1, 4, now);
        assert_eq!((a.children_left, a.depth_left, a.run_left), (2, 1, 2));
        let b = s.capacity(1, 1, 4, now);
        assert_eq!((b.children_left, b.depth_left), (2, 0));
        // At the deepest level nothing may be spawned.
        assert_eq!(s.capacity(2, 1, 4, now).children_left, 0);
    }

    #[test]
    fn a_refused_spawn_still_brings_the_continuation_and_adds_nothing_else() {
        let mut p = plan(&[r#"{"id":"a","run":"x","then":{"run":"y"}}"#]);
        let mut s = Spawns::new(&p, LIMITS);
        let lines = "{\"id\":\"c1\",\"run\":\"x\"}\n".to_owned()
            + "{\"id\":\"c2\",\"run\":\"x\"}\n{\"id\":\"c3\",\"run\":\"x\"}\n{\"id\":\"c4\",\"run\":\"x\"}\n";
        let j = s.join(&mut p, 0, Some(&Ok(lines)), Instant::now(), OK);
        assert_eq!(
            j.refused.as_deref(),
            Some("4 tasks, past max-children (3 a task)")
        );
        assert!(j.children.is_empty());
        let ids: Vec<&str> = p.tasks.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(ids, ["a", "a.then"]);
        assert_eq!(p.tasks[1].deps.len(), 1);
    }

    #[test]
    fn spawned_tasks_depend_on_their_parent_and_on_each_other_by_local_id() {
        let mut p = plan(&[
            r#"{"id":"base","run":"x"}"#,
            r#"{"id":"a","run":"x","then":{"id":"sum","run":"y"}}"#,
        ]);
        let mut s = Spawns::new(&p, LIMITS);
        let lines = "{\"id\":\"one\",\"run\":\"x\"}\n{\"id\":\"two\",\"run\":\"x\",\"deps\":[\"one\",\"base\"]}\n";
        let j = s.join(&mut p, 1, Some(&Ok(lines.into())), Instant::now(), OK);
        assert_eq!(j.refused, None);
        assert_eq!(j.children, ["a.one", "a.two"]);
        assert_eq!(j.added, 2..5);
        let deps = |i: usize| -> Vec<&str> {
            p.tasks[i]
                .deps
                .iter()
                .map(crate::plan::TaskId::as_str)
                .collect()
        };
        assert_eq!(deps(2), ["a"]);
        assert_eq!(deps(3), ["a", "a.one", "base"]);
        assert_eq!(deps(4), ["a", "a.one", "a.two"]);
        assert_eq!(p.tasks[4].id.as_str(), "a.sum");
    }

    #[test]
    fn the_rate_counts_the_last_minute_only() {
        let mut p = plan(&[r#"{"id":"a","run":"x"}"#, r#"{"id":"b","run":"x"}"#]);
        let limits = SpawnLimits {
            per_minute: 2,
            ..SpawnLimits::default()
        };
        let mut s = Spawns::new(&p, limits);
        let t0 = Instant::now();
        let two = "{\"id\":\"c1\",\"run\":\"x\"}\n{\"id\":\"c2\",\"run\":\"x\"}\n".to_owned();
        assert_eq!(
            s.join(&mut p, 0, Some(&Ok(two.clone())), t0, OK).refused,
            None
        );
        let refused = s.join(&mut p, 1, Some(&Ok(two.clone())), t0, OK).refused;
        assert!(refused.is_some_and(|r| r.contains("spawns-per-minute")));
        let later = t0 + Duration::from_secs(61);
        assert_eq!(s.join(&mut p, 1, Some(&Ok(two)), later, OK).refused, None);
    }
}

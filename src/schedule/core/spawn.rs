//! Tasks a running task adds to the run (see the manual's "Tasks that add tasks" (docs/src/task-files.md)): what an
//! attempt that succeeded asked to spawn (the lines its agent wrote to `$SWARM_SPAWN`, or gave
//! the built-in agent's `add_tasks` tool), checked as a task file is and against the limits,
//! then joined to the plan with the task's continuation (`then`). Owned by the owner thread,
//! which records what joins in the same transaction as the attempt's success, so a spawn is
//! taken exactly once, whatever kills swarm when.

use std::collections::{HashMap, VecDeque};
use std::ops::Range;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::config::{SpawnLimits, Spawning};
use crate::plan::{Action, Plan, Task, TaskId};

/// What a plan may grow to while it runs, before it runs: which of its tasks may add tasks
/// and how many at most, as its user is told (the question before a goal runs, `--plan-only`,
/// the start of a run).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ceiling {
    /// The plan's tasks that may add tasks, each with the most it and the tasks it adds may
    /// add, in plan order.
    pub tasks: Vec<(String, u32)>,
    /// The most all of them may add: their sum, bounded by `max-spawned`.
    pub total: u32,
    /// Every task may add tasks (`spawning = "all"`).
    pub every: bool,
}

impl Ceiling {
    /// The plan's own tasks (not those an earlier attempt spawned) under these limits.
    pub fn of(plan: &Plan, limits: &SpawnLimits) -> Self {
        Self::of_tasks(&plan.tasks, limits)
    }

    /// As `of`, for some of a plan's tasks (a goal's).
    pub fn of_tasks(tasks: &[Task], limits: &SpawnLimits) -> Self {
        let bound = limits.tree().min(limits.tasks);
        let tasks: Vec<(String, u32)> = tasks
            .iter()
            .filter(|t| t.parent.is_none())
            .filter_map(|t| {
                let most = limits.allowance(t).min(bound);
                (most > 0).then(|| (t.id.to_string(), most))
            })
            .collect();
        let total = tasks
            .iter()
            .fold(0u32, |sum, (_, n)| sum.saturating_add(*n))
            .min(limits.tasks);
        Self {
            every: limits.which == Spawning::All && !tasks.is_empty(),
            tasks,
            total,
        }
    }

    /// The most task `id` of the plan may add, when it may.
    pub fn of_task(&self, id: &str) -> Option<u32> {
        self.tasks.iter().find(|(t, _)| t == id).map(|&(_, n)| n)
    }

    /// `t3 may add up to 50 more`, `t3 and t7 may add up to 80 more`, `every task may add
    /// tasks, up to 500 more`; none when no task may.
    pub fn describe(&self) -> Option<String> {
        const NAMED: usize = 3;
        let total = self.total;
        if total == 0 {
            return None;
        }
        if self.every {
            return Some(format!("every task may add tasks, up to {total} more"));
        }
        let ids: Vec<&str> = self.tasks.iter().map(|(t, _)| t.as_str()).collect();
        let who = match ids.len() {
            1 => ids[0].to_owned(),
            n if n <= NAMED => format!("{} and {}", ids[..n - 1].join(", "), ids[n - 1]),
            n => format!(
                "{} and {}",
                ids[..NAMED].join(", "),
                crate::ui::count(n - NAMED, "other", "others")
            ),
        };
        Some(format!("{who} may add up to {total} more"))
    }
}

/// What an attempt may still spawn, as `$SWARM_CAPACITY` and the `capacity` tool give it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub(crate) struct Capacity {
    /// Attempts running in this process, this one included.
    pub(crate) running: usize,
    /// Slots of `--jobs` no attempt holds.
    pub(crate) free_slots: usize,
    /// Tasks this task may still spawn: within `max-children` and what its `spawn` (and
    /// those of the tasks above it) allows.
    pub(crate) children_left: u32,
    /// Levels its spawned tasks may spawn below them (0: they may not spawn).
    pub(crate) depth_left: u32,
    /// Tasks the run may still have spawned.
    pub(crate) run_left: u32,
    /// Tasks that may be spawned in the coming minute.
    pub(crate) minute_left: u32,
}

impl Capacity {
    /// Whether the attempt may spawn anything at all, now or once the minute has passed: only
    /// then does it get a spawn file, and the built-in agent its tools to add tasks.
    pub(crate) fn may_spawn(&self, limits: &SpawnLimits) -> bool {
        self.children_left > 0 && self.run_left > 0 && limits.per_minute > 0
    }
}

/// What an attempt's spawn did to the plan.
#[derive(Debug, Default)]
pub(in crate::schedule) struct Joined {
    /// The indices the tasks that joined got (its children, then its continuation).
    pub(in crate::schedule) added: Range<usize>,
    /// Their ids and task-file lines, for the board.
    pub(in crate::schedule) specs: Vec<(String, serde_json::Value)>,
    /// The children among them.
    pub(in crate::schedule) children: Vec<String>,
    /// Why what the agent asked for was refused, if it was; the task succeeds all the same.
    pub(in crate::schedule) refused: Option<String>,
}

/// One task, as spawning sees it.
#[derive(Debug)]
struct Node {
    parent: Option<TaskId>,
    /// 0 for the plan's tasks, its parent's + 1 for a spawned one.
    depth: u32,
    /// The most tasks it and the tasks below it may add (see `SpawnLimits::allowance`).
    allowance: u32,
    /// Tasks added below it so far: by it, or by the tasks below it.
    below: u32,
    /// Tasks it added itself.
    children: u32,
    /// The id its continuation joins with, when it has one.
    then: Option<TaskId>,
}

/// Spawning's state over the run, by task id: the plan's tasks, each spawned task and the
/// tasks a goal's planning adds are all learnt as they join the plan (`learn`), whatever their
/// place in it.
pub(in crate::schedule) struct Spawns {
    limits: SpawnLimits,
    nodes: HashMap<TaskId, Node>,
    /// Tasks spawned in the run, before a resume too.
    spawned: u32,
    /// When tasks were spawned in the last minute (one entry per task), in this process.
    recent: VecDeque<Instant>,
}

const MINUTE: Duration = Duration::from_secs(60);

/// What a spawned line costs: itself and the continuations it brings (its `then`, that one's
/// `then`, …), which join later without being asked for again.
fn weight(t: &Task) -> u32 {
    let mut n = 1u32;
    let mut then = t.then.as_deref();
    while let Some(c) = then {
        n = n.saturating_add(1);
        then = c.then.as_deref();
    }
    n
}

impl Spawns {
    /// The state of a run starting or resumed: every task of its plan learnt.
    pub(in crate::schedule) fn new(plan: &Plan, limits: SpawnLimits) -> Self {
        let mut this = Self {
            limits,
            nodes: HashMap::with_capacity(plan.len()),
            spawned: 0,
            recent: VecDeque::new(),
        };
        this.learn(plan, 0..plan.len());
        this
    }

    /// Tasks that joined the plan at `added` (the plan read back on a resume, a goal planned,
    /// a spawn, tasks learnt from the remote): each gets its depth and allowance, and a task a
    /// spawn brought is charged, with its continuations, to the tasks above it. A task already
    /// known is left as it is.
    pub(in crate::schedule) fn learn(&mut self, plan: &Plan, added: Range<usize>) {
        for t in &plan.tasks[added] {
            if self.nodes.contains_key(&t.id) {
                continue;
            }
            let parent = t.parent.as_ref().and_then(|p| self.nodes.get_key_value(p));
            let depth = parent.map_or(0, |(_, n)| n.depth + 1);
            // A continuation was charged with the line that brought it, or comes from the plan.
            let charged = parent
                .filter(|(_, n)| n.then.as_ref() != Some(&t.id))
                .map(|(p, _)| p.clone());
            let then = t
                .then
                .as_deref()
                .and_then(|c| namespaced(&t.id, &c.id).ok());
            self.nodes.insert(
                t.id.clone(),
                Node {
                    parent: parent.map(|(p, _)| p.clone()),
                    depth,
                    allowance: self.limits.allowance(t),
                    below: 0,
                    children: 0,
                    then,
                },
            );
            if let Some(p) = charged {
                self.charge(&p, weight(t));
            }
        }
    }

    /// `n` tasks spawned by task `id`: counted for it, every task above it and the run.
    fn charge(&mut self, id: &TaskId, n: u32) {
        self.spawned = self.spawned.saturating_add(n);
        if let Some(node) = self.nodes.get_mut(id) {
            node.children = node.children.saturating_add(n);
        }
        let mut at = Some(id.clone());
        while let Some(node) = at.as_ref().and_then(|a| self.nodes.get_mut(a)) {
            node.below = node.below.saturating_add(n);
            at.clone_from(&node.parent);
        }
    }

    /// What task `id` and the tasks above it still allow below them: the least of what each
    /// one's allowance leaves, with the task that allows least.
    fn allowed_below<'a>(&'a self, id: &'a TaskId) -> (u32, Option<&'a TaskId>) {
        let (mut left, mut by) = (u32::MAX, None);
        let mut at = Some(id);
        while let Some(a) = at {
            let Some(node) = self.nodes.get(a) else {
                break;
            };
            let here = node.allowance.saturating_sub(node.below);
            if here < left {
                (left, by) = (here, Some(a));
            }
            at = node.parent.as_ref();
        }
        (left, by)
    }

    /// What task `id`'s attempt may spawn, with `running` attempts (its own included) in
    /// `jobs` slots.
    pub(in crate::schedule) fn capacity(
        &self,
        id: &TaskId,
        running: usize,
        jobs: usize,
        now: Instant,
    ) -> Capacity {
        let l = &self.limits;
        let recent = self
            .recent
            .iter()
            .filter(|&&t| now.saturating_duration_since(t) < MINUTE)
            .count();
        let (depth, children) = self.nodes.get(id).map_or((0, 0), |n| (n.depth, n.children));
        let children_left = if depth < l.depth && self.nodes.contains_key(id) {
            l.children
                .saturating_sub(children)
                .min(self.allowed_below(id).0)
        } else {
            0
        };
        Capacity {
            running,
            free_slots: jobs.saturating_sub(running),
            children_left,
            depth_left: l.depth.saturating_sub(depth + 1),
            run_left: l.tasks.saturating_sub(self.spawned),
            minute_left: l
                .per_minute
                .saturating_sub(u32::try_from(recent).unwrap_or(u32::MAX)),
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
    /// (which is never refused: it comes from the task's own line). The caller learns what
    /// joined (`learn`) once it has its places in the run.
    /// `runnable` says why a task cannot run in this run (an agent it does not have).
    pub(in crate::schedule) fn join(
        &mut self,
        plan: &mut Plan,
        i: usize,
        asked: Option<&Result<String, String>>,
        now: Instant,
        runnable: &dyn Fn(&Task) -> Result<(), String>,
    ) -> Joined {
        self.forget_before(now);
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
            Some(Ok(text)) => self.children_of(plan, &parent, text, now, runnable),
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
        for t in tasks.iter().filter(|t| ids.contains(&t.id)) {
            for _ in 0..weight(t) {
                self.recent.push_back(now);
            }
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
        self.within_limits(parent, &tasks, now)?;
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
            // Its candidates would be tasks the spawn's limits never counted.
            if t.picks() || t.then.as_deref().is_some_and(Task::picks) {
                return Err(format!(
                    "task {:?}: a spawned task may not run as candidates",
                    t.id.as_str()
                ));
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

    /// Why `parent` may not add `tasks` now, if it may not: where the run and the plan allow
    /// spawning at all, then each limit in turn.
    fn within_limits(&mut self, parent: &Task, tasks: &[Task], now: Instant) -> Result<(), String> {
        let id = &parent.id;
        let asked = tasks.iter().fold(0u32, |n, t| n.saturating_add(weight(t)));
        let limits = self.limits;
        let cap = self.capacity(id, 0, 0, now);
        let Some(node) = self.nodes.get(id) else {
            return Err(format!("{id} is not a task of the run swarm knows"));
        };
        if node.allowance == 0 {
            return Err(match limits.which {
                Spawning::Off => "spawning is off in this run (spawning = \"off\")".to_owned(),
                _ => format!(
                    "{id} may not add tasks: its line gives no \"spawn\" (the most tasks it may add)"
                ),
            });
        }
        let depth = node.depth;
        if depth >= limits.depth {
            return Err(format!(
                "{id} is at depth {depth}, and max-depth is {}: its tasks may not spawn",
                limits.depth
            ));
        }
        if asked > limits.children.saturating_sub(node.children) {
            return Err(format!(
                "{asked} tasks, past max-children ({} a task)",
                limits.children
            ));
        }
        let (left, by) = self.allowed_below(id);
        if asked > left {
            let by = by.unwrap_or(id);
            let allows = self.nodes.get(by).map_or(0, |n| n.allowance);
            return Err(format!(
                "{asked} tasks, past what {by}'s \"spawn\" allows ({allows} in all below it, {left} left)"
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
        Ok(())
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
pub(in crate::schedule) fn runnable(
    settings: &crate::schedule::Settings,
    t: &Task,
) -> Result<(), String> {
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

    use serde_json::json;

    use super::Spawns;
    use crate::config::{SpawnLimits, Spawning};
    use crate::plan::{Plan, Task, TaskId};

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
        which: Spawning::Plan,
    };

    fn id(s: &str) -> TaskId {
        TaskId::parse(s).unwrap()
    }

    fn lines(ids: &[&str]) -> String {
        ids.iter()
            .map(|i| json!({"id": i, "run": "x"}).to_string() + "\n")
            .collect()
    }

    /// The spawn of task `i`, joined and learnt as the loop does: why it was refused, if it was.
    fn spawn(s: &mut Spawns, p: &mut Plan, i: usize, text: &str, now: Instant) -> Option<String> {
        let j = s.join(p, i, Some(&Ok(text.to_owned())), now, OK);
        s.learn(p, j.added.clone());
        j.refused
    }

    #[test]
    fn depths_and_counts_are_read_back_from_the_parents_on_resume() {
        let p = plan(&[
            r#"{"id":"a","run":"x","spawn":4}"#,
            r#"{"id":"a.b","run":"x","deps":["a"],"parent":"a","spawn":2}"#,
            r#"{"id":"a.b.c","run":"x","deps":["a.b"],"parent":"a.b","spawn":2}"#,
        ]);
        let s = Spawns::new(&p, LIMITS);
        let now = Instant::now();
        let a = s.capacity(&id("a"), 1, 4, now);
        assert_eq!((a.children_left, a.depth_left, a.run_left), (2, 1, 2));
        let b = s.capacity(&id("a.b"), 1, 4, now);
        assert_eq!((b.children_left, b.depth_left), (1, 0));
        // At the deepest level nothing may be spawned, whatever its line says.
        assert_eq!(s.capacity(&id("a.b.c"), 1, 4, now).children_left, 0);
    }

    #[test]
    fn a_task_without_spawn_may_not_add_tasks_unless_the_run_lets_every_task() {
        let lines1 = lines(&["c1"]);
        let mut p = plan(&[r#"{"id":"a","run":"x"}"#]);
        let mut s = Spawns::new(&p, LIMITS);
        let now = Instant::now();
        assert!(!s.capacity(&id("a"), 1, 4, now).may_spawn(&LIMITS));
        let refused = spawn(&mut s, &mut p, 0, &lines1, now).unwrap();
        assert!(refused.contains("its line gives no \"spawn\""), "{refused}");
        assert_eq!(p.len(), 1);

        let off = SpawnLimits {
            which: Spawning::Off,
            ..LIMITS
        };
        let mut p = plan(&[r#"{"id":"a","run":"x","spawn":3}"#]);
        let mut s = Spawns::new(&p, off);
        let refused = spawn(&mut s, &mut p, 0, &lines1, now).unwrap();
        assert_eq!(refused, "spawning is off in this run (spawning = \"off\")");

        let all = SpawnLimits {
            which: Spawning::All,
            ..LIMITS
        };
        let mut p = plan(&[r#"{"id":"a","run":"x"}"#]);
        let mut s = Spawns::new(&p, all);
        assert!(s.capacity(&id("a"), 1, 4, now).may_spawn(&all));
        assert_eq!(spawn(&mut s, &mut p, 0, &lines1, now), None);
        assert_eq!(p.len(), 2);
    }

    #[test]
    fn what_a_task_allows_holds_for_every_task_below_it() {
        let limits = SpawnLimits {
            children: 10,
            depth: 3,
            tasks: 100,
            per_minute: 100,
            which: Spawning::Plan,
        };
        // `a` allows 3 below it in all; its child may allow more, but `a` binds.
        let mut p = plan(&[r#"{"id":"a","run":"x","spawn":3}"#]);
        let mut s = Spawns::new(&p, limits);
        let now = Instant::now();
        let child = "{\"id\":\"b\",\"run\":\"x\",\"spawn\":10}\n";
        assert_eq!(spawn(&mut s, &mut p, 0, child, now), None);
        let b = 1;
        assert_eq!(s.capacity(&id("a.b"), 1, 4, now).children_left, 2);
        let refused = spawn(&mut s, &mut p, b, &lines(&["x", "y", "z"]), now).unwrap();
        assert_eq!(
            refused,
            "3 tasks, past what a's \"spawn\" allows (3 in all below it, 2 left)"
        );
        assert_eq!(spawn(&mut s, &mut p, b, &lines(&["x", "y"]), now), None);
        assert_eq!(s.capacity(&id("a"), 1, 4, now).children_left, 0);
        assert_eq!(p.len(), 4);
        // Read back from the plan, the same is left.
        let again = Spawns::new(&p, limits);
        assert_eq!(again.allowed_below(&id("a.b")).0, 0);
        assert_eq!(again.spawned, 3);
    }

    #[test]
    fn a_spawned_line_is_charged_with_its_continuation_and_the_plans_continuation_is_free() {
        let mut p = plan(&[r#"{"id":"a","run":"x","spawn":4,"then":{"run":"y"}}"#]);
        let mut s = Spawns::new(&p, LIMITS);
        let now = Instant::now();
        let line = "{\"id\":\"b\",\"run\":\"x\",\"then\":{\"id\":\"sum\",\"run\":\"y\"}}\n";
        assert_eq!(spawn(&mut s, &mut p, 0, line, now), None);
        let ids: Vec<&str> = p.tasks.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(ids, ["a", "a.b", "a.then"]);
        // `a.b` and the continuation it brings: 2 of the run's 4, and of what `a` allows.
        assert_eq!(s.spawned, 2);
        assert_eq!(s.capacity(&id("a"), 1, 4, now).children_left, 1);
        // `a.b`'s continuation joins later without being charged again.
        let j = s.join(&mut p, 1, None, now, OK);
        s.learn(&p, j.added.clone());
        assert_eq!(p.tasks[3].id.as_str(), "a.b.sum");
        assert_eq!(s.spawned, 2);
        assert_eq!(Spawns::new(&p, LIMITS).spawned, 2);
    }

    #[test]
    fn tasks_that_join_later_are_known_by_id_wherever_they_land_in_the_plan() {
        // A goal's tasks join after a spawn's: each keeps its own depth and allowance.
        let mut p = plan(&[r#"{"id":"g1.a","run":"x","spawn":2}"#]);
        let mut s = Spawns::new(&p, LIMITS);
        let now = Instant::now();
        let deep = "{\"id\":\"b\",\"run\":\"x\",\"spawn\":1}\n";
        assert_eq!(spawn(&mut s, &mut p, 0, deep, now), None);
        let goal = p
            .extend(vec![
                Plan::read(r#"{"id":"g2.a","run":"x","spawn":1}"#)
                    .0
                    .remove(0),
                Plan::read(r#"{"id":"g2.b","run":"x"}"#).0.remove(0),
            ])
            .unwrap();
        s.learn(&p, goal);
        let g2a = s.capacity(&id("g2.a"), 1, 4, now);
        assert_eq!((g2a.children_left, g2a.depth_left), (1, 1));
        assert_eq!(s.capacity(&id("g2.b"), 1, 4, now).children_left, 0);
        // `g1.a.b` is still at depth 1, with its own line's allowance within `g1.a`'s.
        let b = s.capacity(&id("g1.a.b"), 1, 4, now);
        assert_eq!((b.children_left, b.depth_left), (1, 0));
        assert_eq!(spawn(&mut s, &mut p, 1, &lines(&["c"]), now), None);
        let c = p
            .tasks
            .iter()
            .position(|t| t.id.as_str() == "g1.a.b.c")
            .unwrap();
        // At max-depth 2, the task at depth 2 may add nothing.
        let refused = spawn(&mut s, &mut p, c, &lines(&["d"]), now).unwrap();
        assert!(refused.contains("may not add tasks"), "{refused}");
    }

    #[test]
    fn a_refused_spawn_still_brings_the_continuation_and_adds_nothing_else() {
        let mut p = plan(&[r#"{"id":"a","run":"x","spawn":10,"then":{"run":"y"}}"#]);
        let mut s = Spawns::new(&p, LIMITS);
        let refused = spawn(
            &mut s,
            &mut p,
            0,
            &lines(&["c1", "c2", "c3", "c4"]),
            Instant::now(),
        );
        assert_eq!(
            refused.as_deref(),
            Some("4 tasks, past max-children (3 a task)")
        );
        let ids: Vec<&str> = p.tasks.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(ids, ["a", "a.then"]);
        assert_eq!(p.tasks[1].deps.len(), 1);
    }

    #[test]
    fn spawned_tasks_depend_on_their_parent_and_on_each_other_by_local_id() {
        let mut p = plan(&[
            r#"{"id":"base","run":"x"}"#,
            r#"{"id":"a","run":"x","spawn":3,"then":{"id":"sum","run":"y"}}"#,
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
        let mut p = plan(&[
            r#"{"id":"a","run":"x","spawn":10}"#,
            r#"{"id":"b","run":"x","spawn":10}"#,
        ]);
        let limits = SpawnLimits {
            per_minute: 2,
            ..SpawnLimits::default()
        };
        let mut s = Spawns::new(&p, limits);
        let t0 = Instant::now();
        assert_eq!(spawn(&mut s, &mut p, 0, &lines(&["c1", "c2"]), t0), None);
        let refused = spawn(&mut s, &mut p, 1, &lines(&["c1", "c2"]), t0);
        assert!(refused.is_some_and(|r| r.contains("spawns-per-minute")));
        let later = t0 + Duration::from_secs(61);
        assert_eq!(spawn(&mut s, &mut p, 1, &lines(&["c1", "c2"]), later), None);
    }
}

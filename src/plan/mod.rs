//! Plans: `Task`, `TaskId`, `Mode`, `Lane`; parsing and validating task files (JSONL), and the
//! DAG with its priorities. Does no I/O beyond reading the task file.

use std::fmt;
use std::path::Path;
use std::time::Duration;

use anyhow::Context as _;
use petgraph::Direction::{Incoming, Outgoing};
use petgraph::algo::tarjan_scc;
use petgraph::graph::{DiGraph, NodeIndex};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub mod candidates;
mod parse;
pub mod repair;

pub use parse::{parse_duration, parse_wait};

/// A task's id: `[A-Za-z0-9._-]{1,64}`, holding no `..`, ending in neither `.` nor `.lock`: it
/// names files and branches (`swarm/<run>-<id>`), and git refuses such branch names.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct TaskId(String);

impl TaskId {
    pub fn parse(s: &str) -> Result<Self, String> {
        let ok_chars = s
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
        if s.is_empty() || s.len() > 64 || !ok_chars {
            return Err(format!(
                "bad id {s:?}: ids are 1 to 64 characters of A-Z a-z 0-9 . _ -"
            ));
        }
        // What git refuses in a branch name, within these characters (git check-ref-format):
        // `..` anywhere, a name ending in `.`, or one ending in `.lock` (case-sensitively).
        if s.contains("..") || s.ends_with('.') || s.as_bytes().ends_with(b".lock") {
            return Err(format!(
                "bad id {s:?}: an id may not hold \"..\" or end in \".\" or \".lock\" (git refuses such branch names)"
            ));
        }
        Ok(Self(s.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Whether a task may change the repository.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Read,
    Write,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Write => "write",
        }
    }
}

/// A task's role. Unknown lanes are kept by name and default to `Mode::Write` (fail closed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lane {
    Researcher,
    Analyst,
    Reviewer,
    Writer,
    Coder,
    Reducer,
    Worker,
    Other(String),
}

impl Lane {
    pub fn parse(s: &str) -> Self {
        match s {
            "researcher" => Self::Researcher,
            "analyst" => Self::Analyst,
            "reviewer" => Self::Reviewer,
            "writer" => Self::Writer,
            "coder" => Self::Coder,
            "reducer" => Self::Reducer,
            "worker" => Self::Worker,
            other => Self::Other(other.to_owned()),
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            Self::Researcher => "researcher",
            Self::Analyst => "analyst",
            Self::Reviewer => "reviewer",
            Self::Writer => "writer",
            Self::Coder => "coder",
            Self::Reducer => "reducer",
            Self::Worker => "worker",
            Self::Other(s) => s,
        }
    }

    /// Whether a task of this lane runs once its deps have ended, whatever their outcome, on
    /// what finished: a reducer delivers what it can, told what is missing, rather than being
    /// skipped with the run's deliverable.
    pub fn runs_on_what_finished(&self) -> bool {
        *self == Self::Reducer
    }

    fn default_mode(&self) -> Mode {
        match self {
            Self::Researcher | Self::Analyst | Self::Reviewer | Self::Writer | Self::Reducer => {
                Mode::Read
            }
            Self::Coder | Self::Worker | Self::Other(_) => Mode::Write,
        }
    }
}

/// What a task does: ask an agent, or run a shell command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    Prompt(String),
    Run(String),
}

/// One node of the plan, as written in the task file.
#[derive(Debug, Clone)]
pub struct Task {
    pub id: TaskId,
    pub action: Action,
    pub deps: Vec<TaskId>,
    pub lane: Lane,
    pub mode: Mode,
    pub title: Option<String>,
    pub agent: Option<String>,
    pub timeout: Option<Duration>,
    pub check: Option<String>,
    pub files: Vec<String>,
    /// The continuation that joins the run when this task's attempt succeeds: it depends on
    /// the tasks the attempt spawned (and on this task) and gets their results.
    pub then: Option<Box<Task>>,
    /// The task whose attempt spawned this one.
    pub parent: Option<TaskId>,
    /// The most tasks this task, and the tasks it adds, may add to the run in all while it
    /// runs (see the manual's "Tasks that add tasks" (docs/src/task-files.md)); none may when unset.
    pub spawn: Option<u32>,
    /// A `run` task whose command may run again on a newer tip: after its merge conflicts, the
    /// conflict ladder's `redo` rung runs it again there.
    pub repeat: bool,
    /// A writer that may end with no change: its agent's doing nothing is not a failure.
    pub may_be_empty: bool,
    /// Run as this many attempts side by side, one of them merged (see `candidates`): the
    /// task then waits for its candidates and picks.
    pub candidates: Option<candidates::Candidates>,
    /// For a candidate, the task it is one of.
    pub candidate_of: Option<TaskId>,
    /// 1-based line in the task file it came from.
    pub line: usize,
}

impl Task {
    /// Whether it picks one of its candidates rather than running an agent itself.
    pub fn picks(&self) -> bool {
        self.candidates.is_some_and(|c| c.n >= 2)
    }

    /// Whether it runs once its deps have ended, whatever their outcome: a reducer (see
    /// `Lane::runs_on_what_finished`), and a task picking among its candidates, some of which
    /// may fail.
    pub fn runs_on_what_finished(&self) -> bool {
        self.lane.runs_on_what_finished() || self.picks()
    }

    /// The task as one line of the task-file format.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("id".into(), self.id.as_str().into());
        match &self.action {
            Action::Prompt(p) => m.insert("prompt".into(), p.as_str().into()),
            Action::Run(r) => m.insert("run".into(), r.as_str().into()),
        };
        m.insert(
            "deps".into(),
            self.deps.iter().map(|d| Value::from(d.as_str())).collect(),
        );
        m.insert("lane".into(), self.lane.as_str().into());
        m.insert("mode".into(), self.mode.as_str().into());
        if let Some(t) = &self.title {
            m.insert("title".into(), t.as_str().into());
        }
        if let Some(a) = &self.agent {
            m.insert("agent".into(), a.as_str().into());
        }
        if let Some(t) = self.timeout {
            m.insert("timeout".into(), t.as_secs_f64().into());
        }
        if let Some(c) = &self.check {
            m.insert("check".into(), c.as_str().into());
        }
        if !self.files.is_empty() {
            m.insert(
                "files".into(),
                self.files.iter().map(|f| Value::from(f.as_str())).collect(),
            );
        }
        if let Some(t) = &self.then {
            m.insert("then".into(), t.to_json());
        }
        if let Some(p) = &self.parent {
            m.insert("parent".into(), p.as_str().into());
        }
        if let Some(n) = self.spawn {
            m.insert("spawn".into(), n.into());
        }
        if self.repeat {
            m.insert("repeat".into(), true.into());
        }
        if self.may_be_empty {
            m.insert("may-be-empty".into(), true.into());
        }
        candidates::to_json(self, &mut m);
        Value::Object(m)
    }
}

/// One thing wrong with a task file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub line: usize,
    pub task: Option<String>,
    pub message: String,
}

impl Problem {
    /// The problem without its line: `task "x": message`, or the message alone.
    pub fn what(&self) -> String {
        match &self.task {
            Some(t) => format!("task {t:?}: {}", self.message),
            None => self.message.clone(),
        }
    }
}

/// A task file that cannot run: every problem found, in line order, and what to do about them
/// when swarm knows.
#[derive(Debug)]
pub struct Invalid {
    pub source: String,
    pub problems: Vec<Problem>,
    pub hint: Option<String>,
}

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.problems.len();
        write!(
            f,
            "{} has {n} problem{}; nothing ran",
            self.source,
            if n == 1 { "" } else { "s" }
        )?;
        for p in &self.problems {
            write!(f, "\n  {}:{}: {}", self.source, p.line, p.what())?;
        }
        Ok(())
    }
}

impl std::error::Error for Invalid {}

/// A task file in another shape of JSON than JSONL, read whole: one array of tasks, or task
/// objects over several lines each (as JSON is pretty-printed). The problem that says so and a
/// hint with the `jq` command that writes the file as JSONL; `None` for a file of any other
/// shape, whose lines are then read one by one.
fn not_jsonl(text: &str, source: &str) -> Option<Invalid> {
    let first = text.lines().position(|l| !l.trim().is_empty())? + 1;
    let what = |message: &str| Problem {
        line: first,
        task: None,
        message: format!("{message}; a task file is JSONL: one task object per line"),
    };
    let (problems, filter) = if text.trim_start().starts_with('[') {
        let mut problems = vec![what("the file is a JSON array")];
        if let Err(e) = serde_json::from_str::<Value>(text) {
            problems.push(Problem {
                line: e.line(),
                task: None,
                message: format!("not valid JSON: {e}"),
            });
        }
        (problems, "'.[]'")
    } else if spread_objects(text) {
        (vec![what("a task in this file spans several lines")], ".")
    } else {
        return None;
    };
    let path = Path::new(source);
    let mut jsonl = path.with_extension("jsonl");
    if jsonl == path {
        jsonl = path.with_extension("lines.jsonl");
    }
    Some(Invalid {
        source: source.to_owned(),
        problems,
        hint: Some(format!(
            "`jq -c {filter} {} > {}` writes it as JSONL",
            crate::shell::word(source),
            crate::shell::word(&jsonl.display().to_string())
        )),
    })
}

/// Whether `text` is JSON objects one after the other, one of them over several lines.
fn spread_objects(text: &str) -> bool {
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    let (mut start, mut spread) = (0, false);
    while let Some(value) = stream.next() {
        let Ok(Value::Object(_)) = value else {
            return false;
        };
        let end = stream.byte_offset();
        spread |= text[start..end].trim().contains('\n');
        start = end;
    }
    spread
}

/// A validated DAG of tasks. Node `i` of the graph is `tasks[i]`; edges run from a dep to its
/// dependent.
#[derive(Debug, Clone)]
pub struct Plan {
    pub tasks: Vec<Task>,
    /// petgraph lists a node's edges newest first, so `link` adds them last task first and each
    /// task's deps last first: `deps` then come out as the task lists them and `dependents` in
    /// ascending task index.
    graph: DiGraph<(), ()>,
}

impl Plan {
    /// Reads and validates a task file.
    pub fn load(path: &Path) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("could not read the task file {}", path.display()))?;
        Ok(Self::parse(&text, &path.display().to_string())?)
    }

    /// Parses JSONL text; `source` names it in problems.
    pub fn parse(text: &str, source: &str) -> Result<Self, Invalid> {
        if let Some(invalid) = not_jsonl(text, source) {
            return Err(invalid);
        }
        let (tasks, mut problems) = Self::read(text);
        if tasks.is_empty() && problems.is_empty() {
            problems.push(Problem {
                line: 1,
                task: None,
                message: "the file has no tasks".into(),
            });
        }
        let plan = Self::link(tasks, &mut problems);
        if problems.is_empty() {
            Ok(plan)
        } else {
            problems.sort_by_key(|p| p.line);
            Err(Invalid {
                source: source.to_owned(),
                problems,
                hint: None,
            })
        }
    }

    /// Parses JSONL text into tasks, each checked alone (not linked): the tasks read, and
    /// every problem found.
    pub fn read(text: &str) -> (Vec<Task>, Vec<Problem>) {
        let mut problems = Vec::new();
        let mut tasks = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            if raw.trim().is_empty() {
                continue;
            }
            match serde_json::from_str::<Value>(raw) {
                Ok(Value::Object(obj)) => {
                    if let Some(task) = parse::task(&obj, line, &mut problems) {
                        tasks.push(task);
                    }
                }
                Ok(_) => problems.push(Problem {
                    line,
                    task: None,
                    message: "a task must be a JSON object".into(),
                }),
                Err(e) => problems.push(Problem {
                    line,
                    task: None,
                    message: format!("not valid JSON: {e}"),
                }),
            }
        }
        (tasks, problems)
    }

    /// Builds the plan from tasks stored by an earlier run (already validated then).
    pub fn from_tasks(tasks: Vec<Task>) -> anyhow::Result<Self> {
        let mut problems = Vec::new();
        let plan = Self::link(tasks, &mut problems);
        anyhow::ensure!(
            problems.is_empty(),
            "the stored plan is inconsistent: {}",
            problems[0].message
        );
        Ok(plan)
    }

    /// Resolves deps to indices, reporting duplicate ids, unknown deps and cycles; a task
    /// with candidates and none yet gets them first (`candidates::expand`).
    fn link(tasks: Vec<Task>, problems: &mut Vec<Problem>) -> Self {
        let tasks = candidates::expand(tasks, problems);
        let mut index = std::collections::HashMap::new();
        for (i, t) in tasks.iter().enumerate() {
            if let Some(&first) = index.get(&t.id) {
                let first: &Task = &tasks[first];
                problems.push(Problem {
                    line: t.line,
                    task: Some(t.id.to_string()),
                    message: format!("duplicate id; first defined on line {}", first.line),
                });
            } else {
                index.insert(t.id.clone(), i);
            }
        }
        // (dep, dependent) in file order, a dep a task lists twice kept once.
        let mut edges: Vec<(usize, usize)> = Vec::with_capacity(tasks.len() * 2);
        for (i, t) in tasks.iter().enumerate() {
            let own = edges.len();
            for d in &t.deps {
                match index.get(d) {
                    Some(&j) if !edges[own..].contains(&(j, i)) => edges.push((j, i)),
                    Some(_) => {}
                    None => problems.push(Problem {
                        line: t.line,
                        task: Some(t.id.to_string()),
                        message: format!("unknown dependency {:?}", d.as_str()),
                    }),
                }
            }
        }
        for t in &tasks {
            if let Some(p) = &t.parent
                && !index.contains_key(p)
            {
                problems.push(Problem {
                    line: t.line,
                    task: Some(t.id.to_string()),
                    message: format!("unknown parent {:?}", p.as_str()),
                });
            }
        }
        let mut graph = DiGraph::with_capacity(tasks.len(), edges.len());
        for _ in &tasks {
            graph.add_node(());
        }
        for &(j, i) in edges.iter().rev() {
            graph.add_edge(NodeIndex::new(j), NodeIndex::new(i), ());
        }
        let plan = Self { tasks, graph };
        let mut cycles: Vec<Vec<usize>> = tarjan_scc(&plan.graph)
            .into_iter()
            .filter(|scc| scc.len() > 1 || plan.graph.contains_edge(scc[0], scc[0]))
            .filter_map(|scc| {
                let members: Vec<usize> = scc.iter().map(|n| n.index()).collect();
                find_cycle(&members, |i| plan.deps(i))
            })
            .collect();
        // In file order: the order tarjan_scc finds them in follows the order edges were added.
        cycles.sort_unstable_by_key(|cycle| cycle[0]);
        for cycle in cycles {
            let path: Vec<&str> = cycle.iter().map(|&i| plan.tasks[i].id.as_str()).collect();
            let first = &plan.tasks[cycle[0]];
            problems.push(Problem {
                line: first.line,
                task: Some(first.id.to_string()),
                message: format!("dependency cycle: {} → {}", path.join(" → "), path[0]),
            });
        }
        plan
    }

    /// The plan with candidates `c` given to every writer that says nothing of them (see
    /// `candidates::give`); an id its candidates cannot take is an error naming the task.
    pub fn with_candidates(self, c: Option<candidates::Candidates>) -> anyhow::Result<Self> {
        let Some(c) = c.filter(|c| c.n >= 2) else {
            return Ok(self);
        };
        let mut tasks = self.tasks;
        candidates::give(&mut tasks, c);
        let mut problems = Vec::new();
        let plan = Self::link(tasks, &mut problems);
        if let Some(p) = problems.first() {
            anyhow::bail!("--candidates {}: {}", c.n, p.what());
        }
        Ok(plan)
    }

    /// Appends tasks whose deps name tasks of the plan or each other (a goal planned while the
    /// run goes); returns the indices they got. The graph is linked anew, not grown: an edge
    /// added to an existing task would list its new dependent first.
    pub fn extend(&mut self, tasks: Vec<Task>) -> anyhow::Result<std::ops::Range<usize>> {
        let start = self.len();
        let mut all = self.tasks.clone();
        all.extend(tasks);
        let mut problems = Vec::new();
        let linked = Self::link(all, &mut problems);
        if let Some(p) = problems.first() {
            anyhow::bail!("task {}: {}", p.task.as_deref().unwrap_or("?"), p.message);
        }
        *self = linked;
        Ok(start..self.len())
    }

    /// The tasks with their ids (and deps) prefixed by `goal` and a dot, so the tasks of
    /// several goals can share one run: `scan` of goal `g2` becomes `g2.scan`. An id cut to
    /// fit the 64-character limit that then collides is an error.
    pub fn namespaced(&self, goal: &str) -> anyhow::Result<Vec<Task>> {
        let rename = |id: &TaskId| {
            let room = 64usize.saturating_sub(goal.len() + 1);
            let cut: String = id.as_str().chars().take(room).collect();
            TaskId::parse(&format!("{goal}.{cut}")).map_err(|e| anyhow::anyhow!(e))
        };
        let mut seen = std::collections::HashSet::new();
        let mut out = Vec::with_capacity(self.len());
        for t in &self.tasks {
            let mut t = t.clone();
            t.id = rename(&t.id)?;
            anyhow::ensure!(
                seen.insert(t.id.clone()),
                "two task ids of goal {goal} become {} when namespaced",
                t.id
            );
            t.deps = t.deps.iter().map(rename).collect::<anyhow::Result<_>>()?;
            t.parent = t.parent.as_ref().map(rename).transpose()?;
            out.push(t);
        }
        Ok(out)
    }

    pub fn len(&self) -> usize {
        self.tasks.len()
    }

    /// The tasks task `i` depends on, in the order its `deps` lists them.
    pub fn deps(&self, i: usize) -> impl Iterator<Item = usize> + '_ {
        self.graph
            .neighbors_directed(NodeIndex::new(i), Incoming)
            .map(NodeIndex::index)
    }

    /// The tasks that depend on task `i`, in ascending index.
    pub fn dependents(&self, i: usize) -> impl Iterator<Item = usize> + '_ {
        self.graph
            .neighbors_directed(NodeIndex::new(i), Outgoing)
            .map(NodeIndex::index)
    }

    /// Priority of each task: the number of tasks on the longest path from it to the end of the
    /// DAG, itself included. Longer remaining paths start first.
    pub fn priorities(&self) -> Vec<u32> {
        let order = self.topological_order();
        let mut prio = vec![1u32; self.len()];
        for &i in order.iter().rev() {
            let below = self.dependents(i).map(|d| prio[d]).max().unwrap_or(0);
            prio[i] = below + 1;
        }
        prio
    }

    /// Kahn's algorithm; ties keep file order.
    pub fn topological_order(&self) -> Vec<usize> {
        let mut indegree: Vec<usize> = (0..self.len()).map(|i| self.deps(i).count()).collect();
        let mut ready: std::collections::VecDeque<usize> =
            (0..self.len()).filter(|&i| indegree[i] == 0).collect();
        let mut order = Vec::with_capacity(self.len());
        while let Some(i) = ready.pop_front() {
            order.push(i);
            for d in self.dependents(i) {
                indegree[d] -= 1;
                if indegree[d] == 0 {
                    ready.push_back(d);
                }
            }
        }
        order
    }

    /// The task whose result is the run's deliverable: the last `reducer`-lane task, else the
    /// single sink, else none.
    pub fn deliverable(&self) -> Option<usize> {
        if let Some(i) = self.tasks.iter().rposition(|t| t.lane == Lane::Reducer) {
            return Some(i);
        }
        let sinks: Vec<usize> = (0..self.len())
            .filter(|&i| self.dependents(i).next().is_none())
            .collect();
        (sinks.len() == 1).then(|| sinks[0])
    }

    /// The tasks of goal `goal` in a plan of several goals: those whose ids it prefixes
    /// (`goal.`), in plan order.
    pub fn goal_tasks(&self, goal: &str) -> Vec<usize> {
        let prefix = format!("{goal}.");
        (0..self.len())
            .filter(|&i| self.tasks[i].id.as_str().starts_with(&prefix))
            .collect()
    }

    /// The deliverable of a goal's `tasks`: its last `reducer`-lane task, else its single task
    /// no other of them depends on, else none.
    pub fn deliverable_among(&self, tasks: &[usize]) -> Option<usize> {
        if let Some(&i) = tasks
            .iter()
            .rev()
            .find(|&&i| self.tasks[i].lane == Lane::Reducer)
        {
            return Some(i);
        }
        let sinks: Vec<usize> = tasks
            .iter()
            .copied()
            .filter(|&i| !self.dependents(i).any(|d| tasks.contains(&d)))
            .collect();
        (sinks.len() == 1).then(|| sinks[0])
    }

    /// The plan in the task-file format.
    pub fn to_jsonl(&self) -> String {
        let mut out = String::new();
        for t in &self.tasks {
            out.push_str(&t.to_json().to_string());
            out.push('\n');
        }
        out
    }
}

/// One cycle through the strongly connected `members`, as a list of task indices in dependency
/// order (each depends on the one before it); `deps(i)` lists what task `i` depends on. `None`
/// only for members that are no such component (empty, or a task with no dep among them).
fn find_cycle<I: Iterator<Item = usize>>(
    members: &[usize],
    deps: impl Fn(usize) -> I,
) -> Option<Vec<usize>> {
    let start = *members.iter().min()?;
    // Walk dependencies inside the component until a task repeats; the repeat closes a cycle.
    let mut path = vec![start];
    let mut current = start;
    loop {
        let next = deps(current).filter(|d| members.contains(d)).min()?;
        if let Some(pos) = path.iter().position(|&p| p == next) {
            let mut cycle = path.split_off(pos);
            cycle.reverse();
            // Rotate so the cycle starts at its earliest-listed task.
            let min_pos = cycle
                .iter()
                .enumerate()
                .min_by_key(|(_, t)| **t)
                .map_or(0, |(k, _)| k);
            cycle.rotate_left(min_pos);
            return Some(cycle);
        }
        path.push(next);
        current = next;
    }
}

#[cfg(test)]
mod tests;

//! A run's event log as spans: pure, handed each event of `events.jsonl` as it is written and a
//! way to read an attempt's record, handing back the spans that ended. Span ids are derived
//! from the run's id and what they stand for, so a resumed run's spans join the trace its
//! first part began, and an agent is told its attempt's span before it starts.

use std::collections::{BTreeMap, HashMap};

use crate::store::{Logged, RunEvent};

/// A trace's id: 16 bytes.
pub type TraceId = [u8; 16];
/// A span's id: 8 bytes.
pub type SpanId = [u8; 8];

/// The trace of run `run`.
pub fn trace_id(run: &str) -> TraceId {
    let digest = ring::digest::digest(
        &ring::digest::SHA256,
        format!("swarm trace\0{run}").as_bytes(),
    );
    let mut id = [0; 16];
    id.copy_from_slice(&digest.as_ref()[..16]);
    id
}

/// The span of what `parts` name in run `run`.
pub fn span_id(run: &str, parts: &[&str]) -> SpanId {
    let mut text = format!("swarm span\0{run}");
    for p in parts {
        text.push('\0');
        text.push_str(p);
    }
    let digest = ring::digest::digest(&ring::digest::SHA256, text.as_bytes());
    let mut id = [0; 8];
    id.copy_from_slice(&digest.as_ref()[..8]);
    id
}

/// The span of attempt `number` of task `task`: the parent an agent's own spans join.
pub fn attempt_span(run: &str, task: &str, number: u32) -> SpanId {
    span_id(run, &["attempt", task, &number.to_string()])
}

/// The span of gate run `number`.
pub fn gate_span(run: &str, number: u32) -> SpanId {
    span_id(run, &["gate", &number.to_string()])
}

/// An attribute's value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Str(String),
    Int(i64),
    Float(f64),
    Bool(bool),
    Strs(Vec<String>),
}

impl From<&str> for Value {
    fn from(s: &str) -> Self {
        Value::Str(s.to_owned())
    }
}

impl From<String> for Value {
    fn from(s: String) -> Self {
        Value::Str(s)
    }
}

impl From<u64> for Value {
    fn from(n: u64) -> Self {
        Value::Int(i64::try_from(n).unwrap_or(i64::MAX))
    }
}

impl From<u32> for Value {
    fn from(n: u32) -> Self {
        Value::Int(i64::from(n))
    }
}

impl From<usize> for Value {
    fn from(n: usize) -> Self {
        Value::Int(i64::try_from(n).unwrap_or(i64::MAX))
    }
}

pub type Attributes = Vec<(&'static str, Value)>;

/// Something that happened at an instant in a span's time.
#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    pub at_ms: i64,
    pub name: &'static str,
    pub attributes: Attributes,
}

/// A span that ended, as the collector is sent it.
#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    pub id: SpanId,
    pub parent: Option<SpanId>,
    pub name: String,
    pub start_ms: i64,
    pub end_ms: i64,
    pub attributes: Attributes,
    pub marks: Vec<Mark>,
    /// Why it failed, when it did (the span's status is then an error).
    pub error: Option<String>,
}

/// What runs an attempt: an agent, or a `run` task's command.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Doer {
    #[default]
    Agent,
    Command,
}

/// The agent and model an attempt ran, as far as swarm knows them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AgentInfo {
    pub doer: Doer,
    /// The profile's name (`claude`, `codex`, `openai`, `exec`, a pool's member).
    pub name: String,
    /// The provider (`anthropic`, `openai`), when the agent names one.
    pub provider: Option<String>,
    pub model: Option<String>,
}

/// Who runs what: the run's agent, the tasks' own, the pools' members, the planner's model.
#[derive(Debug, Clone, Default)]
pub struct Agents {
    pub run: Option<AgentInfo>,
    pub tasks: HashMap<String, AgentInfo>,
    pub members: HashMap<String, AgentInfo>,
    pub planner: Option<AgentInfo>,
}

/// What an attempt used and how it ended, as the board recorded it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Figures {
    /// `succeeded`, `failed`, `interrupted`, `usage_limit`, `fault`.
    pub outcome: String,
    pub tokens: u64,
    pub prompt_tokens: u64,
    pub cached_tokens: u64,
    pub cost: Option<f64>,
}

/// A span begun and not yet ended.
#[derive(Debug, Clone)]
struct Open {
    span: Span,
}

impl Open {
    fn new(id: SpanId, parent: Option<SpanId>, name: String, start_ms: i64) -> Open {
        Open {
            span: Span {
                id,
                parent,
                name,
                start_ms,
                end_ms: start_ms,
                attributes: Vec::new(),
                marks: Vec::new(),
                error: None,
            },
        }
    }

    fn set(&mut self, key: &'static str, value: impl Into<Value>) {
        let value = value.into();
        match self.span.attributes.iter_mut().find(|(k, _)| *k == key) {
            Some(kv) => kv.1 = value,
            None => self.span.attributes.push((key, value)),
        }
    }

    fn get(&self, key: &str) -> Option<&Value> {
        self.span
            .attributes
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v)
    }

    fn end(mut self, at_ms: i64) -> Span {
        self.span.end_ms = at_ms.max(self.span.start_ms);
        self.span
    }
}

/// A task's span and what its end depends on.
struct TaskSpan {
    open: Open,
    /// A writer (it had a checkout): it ends at its merge or park, not at its success.
    writer: bool,
    /// The rung that resolved its conflict, for its merge.
    rung: Option<String>,
}

/// Turns a run's events into spans.
pub struct Builder {
    run: String,
    agents: Agents,
    /// The run's span, or this resume's.
    top: Option<Open>,
    /// A resume after every swarm before it was killed: the run's own span, which none of them
    /// sent, begun when the run was made (see `lost_root`).
    root: Option<Open>,
    /// When the run was made, if the run's span is this process's to send.
    lost_root: Option<i64>,
    goals: BTreeMap<String, Open>,
    tasks: BTreeMap<String, TaskSpan>,
    attempts: BTreeMap<(String, u32), (Open, Option<String>)>,
    gates: BTreeMap<u32, Open>,
    landing: Option<Open>,
    /// Attempts' figures, recorded with their ends, until their events come.
    figures: HashMap<(String, u32), Figures>,
    /// The spans of tasks that ended, for what happens to them after (a gate's parking).
    ended_tasks: HashMap<String, SpanId>,
    /// What runs each attempt, told as it starts, until its start's event comes.
    doers: HashMap<(String, u32), AgentInfo>,
    /// When the last event was recorded.
    last_ms: i64,
}

impl Builder {
    pub fn new(run: &str) -> Builder {
        Builder {
            run: run.to_owned(),
            agents: Agents::default(),
            top: None,
            root: None,
            lost_root: None,
            goals: BTreeMap::new(),
            tasks: BTreeMap::new(),
            attempts: BTreeMap::new(),
            gates: BTreeMap::new(),
            landing: None,
            figures: HashMap::new(),
            doers: HashMap::new(),
            ended_tasks: HashMap::new(),
            last_ms: 0,
        }
    }

    /// This process sends the run's own span too, begun `created` (ms): every swarm that ran
    /// the run before was killed before it could (a `kill -9`), so the collector has none.
    pub fn send_lost_root(&mut self, created: i64) {
        self.lost_root = Some(created);
    }

    pub fn trace(&self) -> TraceId {
        trace_id(&self.run)
    }

    /// Who runs what, once the run's settings are known.
    pub fn know(&mut self, agents: Agents) {
        self.agents = agents;
    }

    fn id(&self, parts: &[&str]) -> SpanId {
        span_id(&self.run, parts)
    }

    /// The top span, begun at `at` when no event began it (a log that does not open with the
    /// run's start).
    fn top_id(&mut self, at: i64) -> SpanId {
        if self.top.is_none() {
            self.begin_top(at, false);
        }
        self.top.as_ref().map(|t| t.span.id).unwrap_or_default()
    }

    fn begin_top(&mut self, at: i64, resumed: bool) {
        let root = self.id(&["run"]);
        let mut top = if resumed {
            if let Some(created) = self.lost_root.take() {
                let mut run = Open::new(root, None, "invoke_workflow swarm".to_owned(), created);
                run.set("gen_ai.operation.name", "invoke_workflow");
                run.set("gen_ai.agent.name", "swarm");
                run.set("swarm.run.id", self.run.clone());
                self.root = Some(run);
            }
            let id = self.id(&["resume", &at.to_string()]);
            Open::new(id, Some(root), "resume swarm".to_owned(), at)
        } else {
            Open::new(root, None, "invoke_workflow swarm".to_owned(), at)
        };
        top.set("gen_ai.operation.name", "invoke_workflow");
        top.set("gen_ai.agent.name", "swarm");
        top.set("swarm.run.id", self.run.clone());
        self.top = Some(top);
    }

    /// The goal task `task` belongs to (its id starts with the goal's and a dot).
    fn goal_of(&self, task: &str) -> Option<String> {
        self.goals
            .keys()
            .filter(|g| {
                task.strip_prefix(g.as_str())
                    .is_some_and(|rest| rest.starts_with('.'))
            })
            .max_by_key(|g| g.len())
            .cloned()
    }

    fn agent_of(&self, task: &str, member: Option<&str>) -> Option<AgentInfo> {
        member
            .and_then(|m| self.agents.members.get(m))
            .or_else(|| self.agents.tasks.get(task))
            .or(self.agents.run.as_ref())
            .cloned()
    }

    /// Attempt `number` of `task` is run by `agent`; its start's event follows.
    pub fn doer(&mut self, task: &str, number: u32, agent: AgentInfo) {
        self.doers.insert((task.to_owned(), number), agent);
    }

    /// Attempt `number` of `task` ended with `figures`; its event follows.
    pub fn figures(&mut self, task: &str, number: u32, figures: Figures) {
        self.figures.insert((task.to_owned(), number), figures);
    }

    /// The spans `event` ended.
    pub fn on(&mut self, event: &Logged) -> Vec<Span> {
        let at = event.at;
        self.last_ms = self.last_ms.max(at);
        let mut ended = Vec::new();
        let task = event.task.as_deref();
        match &event.event {
            RunEvent::RunStarted { tasks, base } => {
                self.begin_top(at, false);
                if let Some(top) = &mut self.top {
                    top.set("swarm.run.tasks", *tasks);
                    top.set("swarm.run.base", base.clone());
                }
            }
            RunEvent::RunResumed { .. } => {
                // A resume in the same process as what it resumes (`swarm retry`): the part
                // before ends here.
                ended.extend(self.end_all(at));
                self.begin_top(at, true);
            }
            RunEvent::Planned {
                tasks,
                requests,
                tokens,
                repairs,
                input_tokens,
                output_tokens,
            } => {
                let parent = self.top_id(at);
                let start = self.top.as_ref().map_or(at, |t| t.span.start_ms);
                let mut span = self.planning(
                    &["plan"],
                    parent,
                    start,
                    at,
                    Some((*tasks, *requests, *tokens, *repairs)),
                    None,
                );
                for (key, n) in [
                    ("gen_ai.usage.input_tokens", input_tokens),
                    ("gen_ai.usage.output_tokens", output_tokens),
                ] {
                    if let Some(n) = n {
                        span.attributes.push((key, (*n).into()));
                    }
                }
                ended.push(span);
            }
            RunEvent::PlanningFailed { error } => {
                let parent = self.top_id(at);
                let start = self.top.as_ref().map_or(at, |t| t.span.start_ms);
                ended.push(self.planning(&["plan"], parent, start, at, None, Some(error.clone())));
            }
            RunEvent::PlanningInterrupted => {
                let parent = self.top_id(at);
                let start = self.top.as_ref().map_or(at, |t| t.span.start_ms);
                let why = Some("interrupted".to_owned());
                ended.push(self.planning(&["plan"], parent, start, at, None, why));
            }
            RunEvent::GoalAdded { goal, text } => {
                let parent = self.top_id(at);
                let mut open = Open::new(
                    self.id(&["goal", goal]),
                    Some(parent),
                    format!("goal {goal}"),
                    at,
                );
                open.set("swarm.goal.id", goal.clone());
                open.set("swarm.goal.text", crate::ui::one_line(text, 200));
                self.goals.insert(goal.clone(), open);
            }
            RunEvent::GoalPlanned {
                goal,
                tasks,
                requests,
                tokens,
                repairs,
            } => {
                let (parent, start) = match self.goals.get(goal) {
                    Some(g) => (g.span.id, g.span.start_ms),
                    None => (self.top_id(at), at),
                };
                ended.push(self.planning(
                    &["plan", goal],
                    parent,
                    start,
                    at,
                    Some((*tasks, *requests, *tokens, *repairs)),
                    None,
                ));
            }
            RunEvent::GoalPlanningFailed { goal, error } => {
                if let Some(g) = self.goals.get(goal) {
                    let (parent, start) = (g.span.id, g.span.start_ms);
                    ended.push(self.planning(
                        &["plan", goal],
                        parent,
                        start,
                        at,
                        None,
                        Some(error.clone()),
                    ));
                }
                ended.extend(self.end_goal(goal, "planning failed", Some(error), at));
            }
            RunEvent::GoalEnded { goal, status } => {
                ended.extend(self.end_goal(goal, status, None, at));
            }
            RunEvent::GoalSkipped { goal, reason } | RunEvent::GoalStuck { goal, reason } => {
                let status = if matches!(event.event, RunEvent::GoalSkipped { .. }) {
                    "skipped"
                } else {
                    "stuck"
                };
                ended.extend(self.end_goal(goal, status, Some(reason), at));
            }
            RunEvent::TaskStarted { attempt, agent, .. } => {
                if let Some(task) = task {
                    ended.extend(self.attempt_started(task, *attempt, agent.as_deref(), at));
                }
            }
            RunEvent::Worktree { .. } => {
                if let Some(t) = task.and_then(|t| self.tasks.get_mut(t)) {
                    t.writer = true;
                    t.open.set("swarm.task.mode", "write");
                }
            }
            RunEvent::TaskSucceeded { attempt, .. } => {
                if let Some(task) = task {
                    ended.extend(self.attempt_ended(task, *attempt, None, at));
                    if self.tasks.get(task).is_some_and(|t| !t.writer) {
                        ended.extend(self.end_task(task, "done", None, at));
                    }
                }
            }
            RunEvent::TaskFailed {
                attempt,
                error,
                retry,
                ..
            } => {
                if let Some(task) = task {
                    ended.extend(self.attempt_ended(task, *attempt, Some(error), at));
                    if !retry {
                        ended.extend(self.end_task(task, "failed", Some(error), at));
                    }
                }
            }
            RunEvent::TaskInterrupted { attempt } => {
                if let Some(task) = task {
                    if let Some(n) = attempt {
                        let why = "interrupted".to_owned();
                        ended.extend(self.attempt_ended(task, *n, Some(&why), at));
                    }
                    ended.extend(self.end_task(task, "interrupted", None, at));
                }
            }
            RunEvent::TaskSkipped { reason } => {
                if let Some(task) = task {
                    ended.extend(self.end_task(task, "skipped", reason.as_ref(), at));
                }
            }
            RunEvent::NoChanges => {
                if let Some(task) = task {
                    ended.extend(self.end_task(task, "done", None, at));
                }
            }
            RunEvent::Resolved { rung, .. } => {
                if let Some(t) = task.and_then(|t| self.tasks.get_mut(t)) {
                    t.rung = Some(rung.clone().unwrap_or_else(|| "resolve".to_owned()));
                }
            }
            RunEvent::Merged { after, ms, .. } => {
                if let Some(task) = task {
                    let ms = if ms.is_finite() { *ms as i64 } else { 0 };
                    ended.extend(self.merge(task, at - ms.max(0), at, after));
                    ended.extend(self.end_task(task, "done", None, at));
                }
            }
            RunEvent::MergeRecovered { commit } => {
                if let Some(task) = task {
                    if let Some(t) = self.tasks.get_mut(task) {
                        t.rung = Some("recovered".to_owned());
                    }
                    ended.extend(self.merge(task, at, at, commit));
                    ended.extend(self.end_task(task, "done", None, at));
                }
            }
            RunEvent::Parked(parking) => {
                let mut attrs: Attributes = vec![
                    ("swarm.park.branch", parking.branch.clone().into()),
                    ("swarm.park.paths", Value::Strs(parking.paths.clone())),
                ];
                if let Some(reason) = &parking.reason {
                    attrs.push(("swarm.park.reason", reason.clone().into()));
                }
                if let Some(task) = task {
                    ended.extend(self.park(task, at, attrs));
                }
            }
            RunEvent::Escalated { .. } => {
                let attrs = task
                    .map(|t| vec![("swarm.task.id", t.into())])
                    .unwrap_or_default();
                self.mark(None, at, "swarm.escalated", attrs);
            }
            RunEvent::UsageLimit {
                message,
                wait_ms,
                stops_run,
            } => {
                if let Some(task) = task
                    && let Some(n) = self.attempts.keys().find(|(t, _)| t == task).map(|k| k.1)
                {
                    ended.extend(self.attempt_ended(task, n, Some(message), at));
                }
                let mut attrs: Attributes = vec![
                    ("swarm.pause.wait_ms", (*wait_ms).into()),
                    ("swarm.pause.stops_run", Value::Bool(*stops_run)),
                    (
                        "swarm.pause.message",
                        crate::ui::one_line(message, 300).into(),
                    ),
                ];
                if let Some(t) = task {
                    attrs.push(("swarm.task.id", t.into()));
                }
                self.mark(None, at, "swarm.usage_limit", attrs);
            }
            RunEvent::PoolPaused {
                pool,
                resumes_in_ms,
            } => {
                let attrs = vec![
                    ("swarm.pool", pool.clone().into()),
                    ("swarm.pause.wait_ms", (*resumes_in_ms).into()),
                ];
                self.mark(None, at, "swarm.pool_paused", attrs);
            }
            RunEvent::MemberLimited {
                pool,
                member,
                resets_in_ms,
                out,
            } => {
                let mut attrs = vec![
                    ("swarm.pool", pool.clone().into()),
                    ("swarm.pool.member", member.clone().into()),
                    ("swarm.pool.member_out", Value::Bool(*out)),
                ];
                if let Some(ms) = resets_in_ms {
                    attrs.push(("swarm.pause.wait_ms", (*ms).into()));
                }
                self.mark(None, at, "swarm.member_limited", attrs);
            }
            RunEvent::Fault { kind, why } => {
                if let Some(task) = task
                    && let Some(n) = self.attempts.keys().find(|(t, _)| t == task).map(|k| k.1)
                {
                    ended.extend(self.attempt_ended(task, n, Some(why), at));
                }
                let attrs = vec![
                    ("swarm.fault.kind", kind.clone().into()),
                    ("swarm.fault.why", crate::ui::one_line(why, 300).into()),
                ];
                self.mark(None, at, "swarm.fault", attrs);
            }
            RunEvent::BudgetSpent { budget, used, .. } => {
                let attrs = vec![
                    ("swarm.budget.tokens", (*budget).into()),
                    ("swarm.budget.used", (*used).into()),
                ];
                self.mark(None, at, "swarm.budget_spent", attrs);
            }
            RunEvent::GateStarted {
                run,
                probe,
                tip,
                batch,
                ..
            } => {
                let parent = self.top_id(at);
                let mut open = Open::new(
                    gate_span(&self.run, *run),
                    Some(parent),
                    format!("gate {run}"),
                    at,
                );
                open.set("swarm.gate.run", *run);
                open.set("swarm.gate.probe", probe.clone());
                open.set("swarm.gate.tip", tip.clone());
                open.set("swarm.gate.batch", Value::Strs(batch.clone()));
                self.gates.insert(*run, open);
            }
            RunEvent::GateFinished {
                run, verdict, ms, ..
            } => {
                let mut open = self.gates.remove(run).unwrap_or_else(|| {
                    let parent = self.top.as_ref().map(|t| t.span.id);
                    Open::new(
                        gate_span(&self.run, *run),
                        parent,
                        format!("gate {run}"),
                        at - ms,
                    )
                });
                open.set("swarm.gate.verdict", verdict.clone());
                if verdict == "red" {
                    open.span.error = Some("the gate failed".to_owned());
                }
                ended.push(open.end(at));
            }
            RunEvent::GateCulprit { task: culprit, .. } => {
                let attrs = vec![("swarm.task.id", culprit.clone().into())];
                self.mark(None, at, "swarm.gate_culprit", attrs);
            }
            RunEvent::Landing { from, to } => {
                let parent = self.top_id(at);
                let mut open =
                    Open::new(self.id(&["landing"]), Some(parent), "land".to_owned(), at);
                open.set("swarm.landing.from", from.clone());
                open.set("swarm.landing.to", to.clone());
                self.landing = Some(open);
            }
            RunEvent::RunEnded {
                status,
                exit_code,
                landing,
                reason,
            } => {
                if let Some(mut open) = self.landing.take() {
                    if let Some(said) = landing {
                        open.set("swarm.landing.outcome", said.clone());
                    }
                    ended.push(open.end(at));
                }
                if let Some(top) = &mut self.top {
                    top.set("swarm.run.status", status.clone());
                    top.set("swarm.run.exit_code", u32::from(*exit_code));
                    if let Some(reason) = reason {
                        top.set("swarm.run.reason", reason.clone());
                    }
                }
                ended.extend(self.end_all(at));
            }
            _ => {}
        }
        ended
    }

    /// Every span still open, ended at the last event seen (the log stopped: a kill, a
    /// planning that failed).
    pub fn finish(&mut self) -> Vec<Span> {
        let at = self.last_ms;
        self.end_all(at)
    }

    fn end_all(&mut self, at: i64) -> Vec<Span> {
        let mut ended = Vec::new();
        for ((_, _), (open, _)) in std::mem::take(&mut self.attempts) {
            ended.push(open.end(at));
        }
        for (_, t) in std::mem::take(&mut self.tasks) {
            ended.push(t.open.end(at));
        }
        for (_, g) in std::mem::take(&mut self.gates) {
            ended.push(g.end(at));
        }
        for (_, g) in std::mem::take(&mut self.goals) {
            ended.push(g.end(at));
        }
        if let Some(l) = self.landing.take() {
            ended.push(l.end(at));
        }
        if let Some(top) = self.top.take() {
            // The run's span, sent here for the swarms killed before, ends as this one does.
            if let Some(mut root) = self.root.take() {
                for key in [
                    "swarm.run.status",
                    "swarm.run.exit_code",
                    "swarm.run.reason",
                ] {
                    if let Some(v) = top.get(key) {
                        root.set(key, v.clone());
                    }
                }
                ended.push(top.end(at));
                ended.push(root.end(at));
            } else {
                ended.push(top.end(at));
            }
        }
        ended
    }

    /// A planning span: what it planned (tasks, requests, tokens, repairs) or why it failed.
    fn planning(
        &self,
        key: &[&str],
        parent: SpanId,
        start: i64,
        at: i64,
        planned: Option<(usize, u32, u64, usize)>,
        error: Option<String>,
    ) -> Span {
        let mut open = Open::new(self.id(key), Some(parent), "plan swarm".to_owned(), start);
        open.set("gen_ai.operation.name", "plan");
        open.set("gen_ai.agent.name", "swarm");
        if let Some(goal) = key.get(1) {
            open.set("swarm.goal.id", *goal);
        }
        if let Some(planner) = &self.agents.planner {
            if let Some(p) = &planner.provider {
                open.set("gen_ai.provider.name", p.clone());
            }
            if let Some(m) = &planner.model {
                open.set("gen_ai.request.model", m.clone());
            }
        }
        if let Some((tasks, requests, tokens, repairs)) = planned {
            open.set("gen_ai.plan.step.count", tasks);
            open.set("swarm.plan.requests", requests);
            open.set("swarm.usage.total_tokens", tokens);
            open.set("swarm.plan.repairs", repairs);
        }
        if let Some(e) = error {
            open.set("error.type", "planning_failed");
            open.span.error = Some(e);
        }
        open.end(at)
    }

    fn end_goal(&mut self, goal: &str, status: &str, why: Option<&String>, at: i64) -> Vec<Span> {
        let Some(mut open) = self.goals.remove(goal) else {
            return Vec::new();
        };
        // Its tasks end with it, should any still be open.
        let mine: Vec<String> = self
            .tasks
            .keys()
            .filter(|t| {
                t.strip_prefix(goal)
                    .is_some_and(|rest| rest.starts_with('.'))
            })
            .cloned()
            .collect();
        let mut ended = Vec::new();
        for t in mine {
            ended.extend(self.end_task(&t, "unfinished", None, at));
        }
        open.set("swarm.goal.status", status);
        if let Some(why) = why {
            open.set("swarm.goal.reason", crate::ui::one_line(why, 300));
        }
        if status != "done" && status != "finished" {
            open.set("error.type", status);
        }
        ended.push(open.end(at));
        ended
    }

    fn attempt_started(
        &mut self,
        task: &str,
        number: u32,
        member: Option<&str>,
        at: i64,
    ) -> Vec<Span> {
        let mut ended = Vec::new();
        if !self.tasks.contains_key(task) {
            let parent = match self.goal_of(task) {
                Some(g) => self.goals[&g].span.id,
                None => self.top_id(at),
            };
            // A task's span is this part's of the run: a resume's is another.
            let part = self
                .top
                .as_ref()
                .map(|t| hex(&t.span.id))
                .unwrap_or_default();
            let mut open = Open::new(
                self.id(&["task", task, &part]),
                Some(parent),
                format!("task {task}"),
                at,
            );
            open.set("swarm.task.id", task);
            open.set("swarm.task.mode", "read");
            self.tasks.insert(
                task.to_owned(),
                TaskSpan {
                    open,
                    writer: false,
                    rung: None,
                },
            );
        }
        // An attempt of the task still open ends as this one starts.
        let stale: Vec<(String, u32)> = self
            .attempts
            .keys()
            .filter(|(t, _)| t == task)
            .cloned()
            .collect();
        for key in stale {
            if let Some((open, _)) = self.attempts.remove(&key) {
                ended.push(open.end(at));
            }
        }
        let parent = self.tasks[task].open.span.id;
        let agent = self
            .doers
            .remove(&(task.to_owned(), number))
            .or_else(|| self.agent_of(task, member))
            .unwrap_or_default();
        let operation = match agent.doer {
            Doer::Agent => "invoke_agent",
            Doer::Command => "execute_tool",
        };
        let name = if agent.name.is_empty() {
            operation.to_owned()
        } else {
            format!("{operation} {}", agent.name)
        };
        let mut open = Open::new(
            attempt_span(&self.run, task, number),
            Some(parent),
            name,
            at,
        );
        open.set("gen_ai.operation.name", operation);
        match agent.doer {
            Doer::Agent if !agent.name.is_empty() => {
                open.set("gen_ai.agent.name", agent.name.clone());
            }
            Doer::Command => open.set("gen_ai.tool.name", agent.name.clone()),
            Doer::Agent => {}
        }
        if let Some(p) = &agent.provider {
            open.set("gen_ai.provider.name", p.clone());
        }
        if let Some(m) = &agent.model {
            open.set("gen_ai.request.model", m.clone());
        }
        open.set("swarm.task.id", task);
        open.set("swarm.attempt.number", number);
        open.set("swarm.attempt.retry", number.saturating_sub(1));
        self.attempts
            .insert((task.to_owned(), number), (open, member.map(str::to_owned)));
        ended
    }

    fn attempt_ended(
        &mut self,
        task: &str,
        number: u32,
        error: Option<&String>,
        at: i64,
    ) -> Vec<Span> {
        let Some((mut open, _)) = self.attempts.remove(&(task.to_owned(), number)) else {
            return Vec::new();
        };
        let figures = self.figures.remove(&(task.to_owned(), number));
        // An agent that says nothing of its tokens (an exec agent) has no usage to show.
        if let Some(f) = figures
            .as_ref()
            .filter(|f| f.tokens > 0 || f.cost.is_some())
        {
            open.set("gen_ai.usage.input_tokens", f.prompt_tokens);
            open.set(
                "gen_ai.usage.output_tokens",
                f.tokens.saturating_sub(f.prompt_tokens),
            );
            open.set("gen_ai.usage.cache_read.input_tokens", f.cached_tokens);
            open.set("swarm.usage.total_tokens", f.tokens);
            if let Some(cost) = f.cost {
                open.set("swarm.cost.usd", Value::Float(cost));
            }
        }
        if let Some(f) = &figures {
            open.set("swarm.attempt.outcome", f.outcome.clone());
        }
        if let Some(why) = error {
            let outcome = figures.map_or_else(|| "failed".to_owned(), |f| f.outcome);
            open.set("error.type", outcome);
            open.span.error = Some(crate::ui::one_line(why, 500));
        } else if figures.is_none() {
            open.set("swarm.attempt.outcome", "succeeded");
        }
        vec![open.end(at)]
    }

    fn end_task(&mut self, task: &str, status: &str, why: Option<&String>, at: i64) -> Vec<Span> {
        let mut ended = Vec::new();
        let open_attempts: Vec<(String, u32)> = self
            .attempts
            .keys()
            .filter(|(t, _)| t == task)
            .cloned()
            .collect();
        for key in open_attempts {
            if let Some((open, _)) = self.attempts.remove(&key) {
                ended.push(open.end(at));
            }
        }
        if let Some(TaskSpan { mut open, .. }) = self.tasks.remove(task) {
            self.ended_tasks.insert(task.to_owned(), open.span.id);
            open.set("swarm.task.status", status);
            if let Some(why) = why {
                open.span.error = Some(crate::ui::one_line(why, 500));
            }
            if matches!(status, "failed" | "parked" | "interrupted") {
                open.set("error.type", status);
                if open.span.error.is_none() {
                    open.span.error = Some(status.to_owned());
                }
            }
            ended.push(open.end(at));
        }
        ended
    }

    /// A writer parked: an event on its span and the span ends, when it is open; when it
    /// ended already (merged, then taken out by the gate), a span of the parking under it.
    fn park(&mut self, task: &str, at: i64, attrs: Attributes) -> Vec<Span> {
        if let Some(t) = self.tasks.get_mut(task) {
            t.open.span.marks.push(Mark {
                at_ms: at,
                name: "swarm.parked",
                attributes: attrs,
            });
            return self.end_task(task, "parked", None, at);
        }
        let parent = match self.ended_tasks.get(task) {
            Some(id) => *id,
            None => self.top_id(at),
        };
        let mut open = Open::new(
            self.id(&["park", task, &at.to_string()]),
            Some(parent),
            format!("park {task}"),
            at,
        );
        open.set("swarm.task.id", task);
        open.set("swarm.task.status", "parked");
        open.set("error.type", "parked");
        for (k, v) in attrs {
            open.set(k, v);
        }
        open.span.error = Some("parked".to_owned());
        vec![open.end(at)]
    }

    fn merge(&mut self, task: &str, start: i64, at: i64, commit: &str) -> Vec<Span> {
        // A writer merged again (after the gate took out a culprit) merges under the span
        // its task had.
        let (parent, rung) = match (self.tasks.get(task), self.ended_tasks.get(task)) {
            (Some(t), _) => (t.open.span.id, t.rung.clone()),
            (None, Some(id)) => (*id, None),
            (None, None) => (self.top_id(at), None),
        };
        let mut open = Open::new(
            self.id(&["merge", task, commit]),
            Some(parent),
            format!("merge {task}"),
            start.min(at),
        );
        open.set("swarm.task.id", task);
        open.set("swarm.merge.rung", rung.unwrap_or_else(|| "git".to_owned()));
        open.set("swarm.merge.commit", commit);
        vec![open.end(at)]
    }

    /// An event on the task's span, or on the top span (`task` none, or not open).
    fn mark(&mut self, task: Option<&str>, at: i64, name: &'static str, attributes: Attributes) {
        let mark = Mark {
            at_ms: at,
            name,
            attributes,
        };
        if let Some(t) = task.and_then(|t| self.tasks.get_mut(t)) {
            t.open.span.marks.push(mark);
            return;
        }
        self.top_id(at);
        if let Some(top) = &mut self.top {
            top.span.marks.push(mark);
        }
    }
}

/// `bytes` in lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

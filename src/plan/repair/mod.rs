//! Plan repair: turns a planner's lenient JSON draft into a valid `Plan`, deterministically,
//! recording every change it makes. Does no I/O and never asks the planner anything itself.

use std::collections::{HashMap, HashSet};

use petgraph::algo::tarjan_scc;
use petgraph::graph::{DiGraph, NodeIndex};
use serde_json::Value;

use super::{Action, Lane, Mode, Plan, Task, TaskId};

/// What a created reducer is asked to do; the planner did not write one.
const REDUCER_PROMPT: &str = "You are the final step of this run. Read the results of every task \
you depend on and combine them into the final deliverable for the goal: one coherent Markdown \
document. Open with a short summary that answers the goal directly. Organise the rest by theme, \
not by task; keep concrete details (file paths, commands, numbers, sources); reconcile \
contradictions between results or flag them plainly; end with open questions and next steps. \
Remove repetition, and do not claim anything that no result supports.";

/// What an intermediate reducer of a fan-in tree is asked to do.
const PART_PROMPT: &str = "Combine the results of the tasks you depend on into one faithful \
Markdown summary for the run's final report. Keep every distinct finding, detail, source and \
caveat; merge duplicates; note contradictions; do not add conclusions of your own.";

const NO_TASK_LIST: &str = "the planner's answer has no task list: expected an array of tasks \
or an object with a \"tasks\" array";

/// One change made to a planner's draft, shown in events and the report.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Repair {
    pub kind: &'static str,
    pub message: String,
}

/// A task as the planner wrote it, before validation: every field lenient.
#[derive(Debug, Clone, Default)]
pub struct DraftTask {
    pub id: String,
    pub title: Option<String>,
    pub prompt: Option<String>,
    pub run: Option<String>,
    pub deps: Vec<String>,
    pub lane: Option<String>,
    pub mode: Option<String>,
    pub files: Vec<String>,
    /// The most tasks it may add while it runs (see `Task::spawn`).
    pub spawn: Option<u32>,
}

/// A draft task while it is repaired: deps are indices into the working list.
struct Node {
    id: String,
    title: Option<String>,
    action: Action,
    deps: Vec<usize>,
    lane: Lane,
    wanted_mode: Option<String>,
    mode: Mode,
    files: Vec<String>,
    spawn: Option<u32>,
}

impl Node {
    /// A read-only task, made by repair, that combines the results of `deps`.
    fn combiner(id: String, title: String, prompt: &str, deps: Vec<usize>, lane: Lane) -> Self {
        let action = Action::Prompt(prompt.to_owned());
        let (title, files) = (Some(title), Vec::new());
        Self {
            id,
            title,
            action,
            deps,
            lane,
            wanted_mode: None,
            mode: Mode::Read,
            files,
            spawn: None,
        }
    }
}

/// Records one repair: `note!(repairs, "kind" => "format {}", args)`.
macro_rules! note {
    ($repairs:expr, $kind:literal => $($message:tt)+) => {
        $repairs.push(Repair { kind: $kind, message: format!($($message)+) })
    };
}

/// Reads a draft from the planner's JSON: an array of task objects, or an object with a "tasks"
/// array (also accept "plan" as the key). Unknown fields are ignored; a non-string id becomes its
/// JSON text; deps may be strings or numbers; a task with neither prompt nor run gets its title as
/// prompt if any, else is dropped with a Repair recorded. Err(message) when there is no task list.
pub fn parse_draft(value: &Value) -> Result<(Vec<DraftTask>, Vec<Repair>), String> {
    let Some(items) = task_list(value) else {
        return Err(NO_TASK_LIST.to_owned());
    };
    let (mut draft, mut repairs) = (Vec::new(), Vec::new());
    for (i, item) in items.iter().enumerate() {
        let Value::Object(obj) = item else {
            note!(repairs, "dropped_task" => "dropped item {} of the plan: not an object", i + 1);
            continue;
        };
        let id = match obj.get("id") {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
        };
        let field = |key: &str| obj.get(key).and_then(text);
        // Planners often spell deps the way other tools do.
        let deps = ["deps", "depends_on", "dependencies"]
            .iter()
            .find_map(|k| obj.get(*k));
        let mut task = DraftTask {
            title: field("title"),
            prompt: field("prompt"),
            run: field("run"),
            deps: strings(deps),
            lane: field("lane"),
            mode: field("mode"),
            files: strings(obj.get("files")),
            spawn: spawn_of(obj.get("spawn")),
            id,
        };
        if fill_prompt(&mut task, i, &mut repairs) {
            draft.push(task);
        }
    }
    Ok((draft, repairs))
}

/// A draft's `spawn`, leniently: a number (or a number in a string) of tasks, at most
/// `MAX_SPAWN`; anything else, or 0, is none.
fn spawn_of(value: Option<&Value>) -> Option<u32> {
    let n = match value? {
        Value::Number(n) => n.as_u64()?,
        Value::String(s) => s.trim().parse().ok()?,
        _ => return None,
    };
    let n = u32::try_from(n.min(u64::from(super::parse::MAX_SPAWN))).ok()?;
    (n > 0).then_some(n)
}

fn task_list(value: &Value) -> Option<&Vec<Value>> {
    match value {
        Value::Array(items) => Some(items),
        Value::Object(obj) => ["tasks", "plan"]
            .iter()
            .find_map(|k| task_list(obj.get(*k)?)),
        _ => None,
    }
}

/// A scalar as text; blank strings, nulls, arrays and objects are absent.
fn text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) if !s.trim().is_empty() => Some(s.clone()),
        Value::Number(_) | Value::Bool(_) => Some(value.to_string()),
        _ => None,
    }
}

/// A list of scalars (or one scalar) as texts.
fn strings(value: Option<&Value>) -> Vec<String> {
    match value {
        Some(Value::Array(items)) => items.iter().filter_map(text).collect(),
        Some(v) => text(v).into_iter().collect(),
        None => Vec::new(),
    }
}

/// How a task is named in a repair before it has a valid id.
fn shown(id: &str, pos: usize) -> String {
    if id.is_empty() {
        format!("#{}", pos + 1)
    } else {
        format!("{id:?}")
    }
}

/// Clears blank texts and gives a task without prompt or run its title as prompt; false when it
/// has nothing to do at all.
fn fill_prompt(t: &mut DraftTask, pos: usize, repairs: &mut Vec<Repair>) -> bool {
    for text in [&mut t.prompt, &mut t.run, &mut t.title] {
        *text = text.take().filter(|s| !s.trim().is_empty());
    }
    if t.prompt.is_some() || t.run.is_some() {
        return true;
    }
    let shown = shown(&t.id, pos);
    let Some(title) = t.title.clone() else {
        note!(repairs, "dropped_task" => "dropped task {shown}: no prompt, run or title");
        return false;
    };
    note!(repairs, "empty_prompt" => "task {shown} has no prompt: its title is used");
    t.prompt = Some(title);
    true
}

/// The first dependency cycle in the draft (after ids are sanitised and unknown/self deps
/// dropped), as ids in dependency order, e.g. `["a", "b", "c"]` for a → b → c → a.
pub fn find_cycle(draft: &[DraftTask]) -> Option<Vec<String>> {
    let nodes = prepare(draft.to_vec(), &mut Vec::new());
    let cycle = cycle_in(&nodes)?;
    Some(cycle.into_iter().map(|i| nodes[i].id.clone()).collect())
}

/// Repairs a draft into a valid plan. `max_fan_in`: the most deps one reducer may take (its
/// context budget); wider fan-in becomes a tree of intermediate reducers. Values below 2 count
/// as 2. An empty draft gives an empty plan.
pub fn repair(draft: Vec<DraftTask>, max_fan_in: usize) -> anyhow::Result<(Plan, Vec<Repair>)> {
    let mut repairs = Vec::new();
    let mut nodes = prepare(draft, &mut repairs);
    break_cycles(&mut nodes, &mut repairs);
    settle_modes(&mut nodes, &mut repairs);
    let mut order = Vec::new();
    if !nodes.is_empty() {
        let reducer = settle_reducer(&mut nodes, &mut repairs);
        order.extend(0..nodes.len());
        let inserted = build_fan_in(&mut nodes, reducer, max_fan_in.max(2), &mut repairs);
        // The tasks inserted to cap fan-in go just before the reducer they feed.
        let at = order
            .iter()
            .position(|&i| i == reducer)
            .unwrap_or(order.len());
        order.splice(at..at, inserted);
        order_writers(&mut nodes, &mut repairs);
    }
    let ids = nodes
        .iter()
        .map(|n| {
            TaskId::parse(&n.id).map_err(|e| anyhow::anyhow!("repaired task id {:?}: {e}", n.id))
        })
        .collect::<anyhow::Result<Vec<TaskId>>>()?;
    let tasks = order.iter().enumerate().map(|(pos, &i)| {
        let n = &nodes[i];
        Task {
            id: ids[i].clone(),
            action: n.action.clone(),
            deps: n.deps.iter().map(|&d| ids[d].clone()).collect(),
            lane: n.lane.clone(),
            mode: n.mode,
            title: n.title.clone(),
            agent: None,
            timeout: None,
            check: None,
            files: n.files.clone(),
            then: None,
            parent: None,
            spawn: n.spawn,
            repeat: false,
            may_be_empty: false,
            candidates: None,
            candidate_of: None,
            line: pos + 1,
        }
    });
    let plan = Plan::from_tasks(tasks.collect())?;
    Ok((plan, repairs))
}

/// Picks each task's action, sanitises and deduplicates ids, and resolves deps (steps 1 and 2).
fn prepare(draft: Vec<DraftTask>, repairs: &mut Vec<Repair>) -> Vec<Node> {
    let (mut nodes, mut raw_deps, mut used) = (Vec::new(), Vec::new(), HashSet::new());
    let (mut by_raw, mut by_base, mut by_id) = (HashMap::new(), HashMap::new(), HashMap::new());
    for (pos, mut t) in draft.into_iter().enumerate() {
        if !fill_prompt(&mut t, pos, repairs) {
            continue;
        }
        let shown = shown(&t.id, pos);
        let action = match (t.prompt, t.run) {
            (Some(prompt), run) => {
                if run.is_some() {
                    note!(repairs, "dropped_run" => "task {shown} has a prompt and a run: run dropped");
                }
                Action::Prompt(prompt)
            }
            (None, Some(run)) => Action::Run(run),
            // `fill_prompt` leaves a prompt or a run, or drops the task.
            (None, None) => continue,
        };
        let base = sanitize(&t.id).unwrap_or_else(|| format!("task-{}", pos + 1));
        if base != t.id {
            note!(repairs, "sanitized_id" => "task {shown} is now {base:?}");
        }
        let id = unique(&base, "", &used);
        if id != base {
            note!(repairs, "duplicate_id" => "id {base:?} is used more than once: now {id:?}");
        }
        let k = nodes.len();
        by_raw.entry(t.id).or_insert(k);
        by_base.entry(base).or_insert(k);
        by_id.insert(id.clone(), k);
        used.insert(id.clone());
        raw_deps.push(t.deps);
        let lane = lane_of(t.lane.as_deref());
        let (title, wanted_mode, files, spawn) = (t.title, t.mode, t.files, t.spawn);
        nodes.push(Node {
            id,
            title,
            action,
            deps: vec![],
            lane,
            wanted_mode,
            mode: Mode::Write,
            files,
            spawn,
        });
    }
    for (k, raw) in raw_deps.iter().enumerate() {
        for dep in raw {
            // A dep may name a task as the planner wrote it or as it is now called.
            let target = by_raw.get(dep).or_else(|| by_id.get(dep)).copied();
            let target = target.or_else(|| by_base.get(&sanitize(dep)?).copied());
            let id = &nodes[k].id;
            match target {
                Some(j) if j == k => {
                    note!(repairs, "dropped_self_dep" => "task {id:?} depended on itself");
                }
                Some(j) if !nodes[k].deps.contains(&j) => nodes[k].deps.push(j),
                Some(_) => {}
                None => {
                    note!(repairs, "dropped_unknown_dep" => "task {id:?} depended on {dep:?}");
                }
            }
        }
    }
    nodes
}

/// Makes `raw` a valid id: other characters become '-', runs of '-' collapse, '-' is trimmed,
/// 64 characters at most, no `.lock` ending. None when nothing usable is left.
fn sanitize(raw: &str) -> Option<String> {
    if TaskId::parse(raw).is_ok() {
        return Some(raw.to_owned());
    }
    let mut id = String::new();
    for c in raw.chars() {
        let c = if c.is_ascii_alphanumeric() || matches!(c, '.' | '_') {
            c
        } else {
            '-'
        };
        if !(c == '-' && id.ends_with('-')) {
            id.push(c);
        }
    }
    let mut id = id.trim_matches('-').to_owned();
    id.truncate(64);
    let mut id = id.trim_end_matches('-').to_owned();
    // Git refuses ref names ending in `.lock`, case-sensitively.
    if id.as_bytes().ends_with(b".lock") {
        let dot = id.len() - 5;
        id.replace_range(dot..=dot, "-");
    }
    (!id.is_empty() && !id.chars().all(|c| c == '.')).then_some(id)
}

/// `stem` + `suffix`, else with `-2`, `-3`… appended, cut to 64 characters and not in `used`.
fn unique(stem: &str, suffix: &str, used: &HashSet<String>) -> String {
    let mut n = 1;
    loop {
        let tail = if n == 1 {
            suffix.to_owned()
        } else {
            format!("{suffix}-{n}")
        };
        let id = format!("{}{tail}", &stem[..stem.len().min(64 - tail.len())]);
        if !used.contains(&id) {
            return id;
        }
        n += 1;
    }
}

/// A lane by name, case aside; unknown lanes keep their name, as in task files.
fn lane_of(raw: Option<&str>) -> Lane {
    let Some(raw) = raw.map(str::trim).filter(|s| !s.is_empty()) else {
        return Lane::Worker;
    };
    match Lane::parse(&raw.to_ascii_lowercase()) {
        Lane::Other(_) => Lane::Other(raw.to_owned()),
        lane => lane,
    }
}

/// One cycle, as indices where each depends on the one before it (and the first on the last).
fn cycle_in(nodes: &[Node]) -> Option<Vec<usize>> {
    let mut graph = DiGraph::<usize, ()>::new();
    let index: Vec<NodeIndex> = (0..nodes.len()).map(|i| graph.add_node(i)).collect();
    for (i, n) in nodes.iter().enumerate() {
        for &d in &n.deps {
            graph.add_edge(index[d], index[i], ());
        }
    }
    let members: Vec<usize> = tarjan_scc(&graph)
        .into_iter()
        .filter(|scc| scc.len() > 1)
        .map(|scc| scc.into_iter().map(NodeIndex::index).collect::<Vec<_>>())
        .min_by_key(|members| members.iter().min().copied())?;
    super::find_cycle(&members, |i| nodes[i].deps.iter().copied())
}

fn break_cycles(nodes: &mut [Node], repairs: &mut Vec<Repair>) {
    while let Some(cycle) = cycle_in(nodes) {
        let path: Vec<&str> = cycle.iter().map(|&i| nodes[i].id.as_str()).collect();
        let shown = format!("{} → {}", path.join(" → "), path[0]);
        // (dependent, dep) for every edge of the cycle.
        let edges: Vec<(usize, usize)> = (0..cycle.len())
            .map(|k| (cycle[k], cycle[(k + cycle.len() - 1) % cycle.len()]))
            .collect();
        let mut cut: Vec<(usize, usize)> = edges.iter().copied().filter(|(a, d)| d > a).collect();
        if cut.is_empty() {
            cut.extend(edges.last());
        }
        for (a, d) in cut {
            let (dependent, dep) = (&nodes[a].id, &nodes[d].id);
            note!(repairs, "broke_cycle" => "{dependent:?} no longer needs {dep:?}: cycle {shown}");
            nodes[a].deps.retain(|&x| x != d);
        }
    }
}

fn settle_modes(nodes: &mut [Node], repairs: &mut Vec<Repair>) {
    for n in nodes {
        // Commands may change anything, as in task files; otherwise the lane decides.
        let default = match n.action {
            Action::Run(_) => Mode::Write,
            Action::Prompt(_) => n.lane.default_mode(),
        };
        let wanted = n
            .wanted_mode
            .as_deref()
            .map(|m| m.trim().to_ascii_lowercase());
        n.mode = match wanted.as_deref() {
            None => default,
            Some("read") => Mode::Read,
            Some("write") => Mode::Write,
            Some(other) => {
                let (id, now) = (&n.id, default.as_str());
                note!(repairs, "bad_mode" => "task {id:?} had mode {other:?}: now {now}");
                default
            }
        };
    }
}

/// Leaves exactly one reducer, read-only, that every other sink feeds; returns its index. A
/// created reducer is appended to `nodes`.
fn settle_reducer(nodes: &mut Vec<Node>, repairs: &mut Vec<Repair>) -> usize {
    let is_sink = sinks(nodes);
    let reducers: Vec<usize> = (0..nodes.len())
        .filter(|&i| nodes[i].lane == Lane::Reducer)
        .collect();
    // A reducer that others depend on cannot be final; keeping its edges beats keeping its lane.
    let kept = reducers.iter().rev().copied().find(|&i| is_sink[i]);
    for &i in reducers.iter().filter(|&&i| Some(i) != kept) {
        let why = if is_sink[i] {
            "a later reducer is kept"
        } else {
            "other tasks depend on it"
        };
        note!(repairs, "demoted_reducer" => "task {:?} is now lane analyst: {why}", nodes[i].id);
        nodes[i].lane = Lane::Analyst;
    }
    let read_sink = (0..nodes.len())
        .filter(|&i| is_sink[i] && nodes[i].mode == Mode::Read)
        .max_by_key(|&i| (nodes[i].deps.len(), i));
    let reducer = if let Some(i) = kept {
        i
    } else if let Some(i) = read_sink {
        let id = &nodes[i].id;
        note!(repairs, "promoted_reducer" => "task {id:?}, a read-only sink, is the reducer");
        nodes[i].lane = Lane::Reducer;
        i
    } else {
        let id = unique("reduce", "", &nodes.iter().map(|n| n.id.clone()).collect());
        note!(repairs, "created_reducer" => "no read-only task ends the plan: added {id:?}");
        let deps = (0..nodes.len()).filter(|&i| is_sink[i]).collect();
        let title = "Combine the results into the final deliverable".to_owned();
        nodes.push(Node::combiner(
            id,
            title,
            REDUCER_PROMPT,
            deps,
            Lane::Reducer,
        ));
        nodes.len() - 1
    };
    let is_sink = sinks(nodes);
    for i in (0..nodes.len()).filter(|&i| is_sink[i] && i != reducer) {
        let (orphan, to) = (&nodes[i].id, &nodes[reducer].id);
        note!(repairs, "wired_orphan" => "task {orphan:?} now feeds reducer {to:?}");
        nodes[reducer].deps.push(i);
    }
    if nodes[reducer].mode == Mode::Write {
        note!(repairs, "read_only_reducer" => "reducer {:?} is now read-only", nodes[reducer].id);
        nodes[reducer].mode = Mode::Read;
    }
    reducer
}

fn sinks(nodes: &[Node]) -> Vec<bool> {
    let mut is_sink = vec![true; nodes.len()];
    for &d in nodes.iter().flat_map(|n| &n.deps) {
        is_sink[d] = false;
    }
    is_sink
}

/// Splits the reducer's inputs into groups of at most `max` under intermediate reducers, level by
/// level, until it fits. Returns the new tasks' indices in the order they are listed.
fn build_fan_in(
    nodes: &mut Vec<Node>,
    reducer: usize,
    max: usize,
    repairs: &mut Vec<Repair>,
) -> Vec<usize> {
    let mut inserted = Vec::new();
    let mut used: HashSet<String> = nodes.iter().map(|n| n.id.clone()).collect();
    while nodes[reducer].deps.len() > max {
        let inputs = std::mem::take(&mut nodes[reducer].deps);
        let groups = inputs.len().div_ceil(max);
        let (mut next, mut made, mut start) = (Vec::new(), Vec::new(), 0);
        for g in 0..groups {
            // Even groups: sizes differ by one at most.
            let size = inputs.len() / groups + usize::from(g < inputs.len() % groups);
            let group = inputs[start..start + size].to_vec();
            start += size;
            if let [only] = group[..] {
                next.push(only);
                continue;
            }
            let id = unique(
                &nodes[reducer].id,
                &format!("-part-{}", inserted.len() + 1),
                &used,
            );
            used.insert(id.clone());
            made.push(id.clone());
            next.push(nodes.len());
            inserted.push(nodes.len());
            let title = format!("Combine part of the inputs to {}", nodes[reducer].id);
            nodes.push(Node::combiner(id, title, PART_PROMPT, group, Lane::Analyst));
        }
        let (id, n, made) = (&nodes[reducer].id, inputs.len(), made.join(", "));
        note!(repairs, "fan_in_tree" => "reducer {id:?} had {n} inputs, over {max}: added {made}");
        nodes[reducer].deps = next;
    }
    inserted
}

/// Orders writers that declare a common file: the later-listed waits for the earlier. When
/// either already reaches the other they cannot run at once, and when neither does the new edge
/// cannot close a cycle, so the reverse edge is never needed.
fn order_writers(nodes: &mut [Node], repairs: &mut Vec<Repair>) {
    let norm = |f: &String| f.trim().trim_start_matches("./").to_owned();
    let writers: Vec<(usize, HashSet<String>)> = (0..nodes.len())
        .filter(|&i| nodes[i].mode == Mode::Write && !nodes[i].files.is_empty())
        .map(|i| (i, nodes[i].files.iter().map(norm).collect()))
        .collect();
    for (k, (a, a_files)) in writers.iter().enumerate() {
        for (b, b_files) in &writers[k + 1..] {
            let Some(file) = a_files.intersection(b_files).min() else {
                continue;
            };
            if reaches(nodes, *a, *b) || reaches(nodes, *b, *a) {
                continue;
            }
            let (later, first) = (&nodes[*b].id, &nodes[*a].id);
            note!(repairs, "file_overlap_edge" => "{later:?} waits for {first:?}: both write {file}");
            nodes[*b].deps.push(*a);
        }
    }
}

/// Whether `to` depends on `from`, directly or through others.
fn reaches(nodes: &[Node], from: usize, to: usize) -> bool {
    let mut seen = vec![false; nodes.len()];
    let mut stack = vec![to];
    while let Some(i) = stack.pop() {
        for &d in &nodes[i].deps {
            if d == from {
                return true;
            }
            if !std::mem::replace(&mut seen[d], true) {
                stack.push(d);
            }
        }
    }
    false
}

#[cfg(test)]
mod tests;

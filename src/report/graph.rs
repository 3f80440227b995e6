//! The DAG and the goals' graph as pictures: Mermaid (in the report, and `swarm graph`) and
//! Graphviz DOT. Every text in them is escaped for where it lands.

use std::fmt::Write as _;

use super::{GoalFacts, escape};
use crate::plan::Plan;
use crate::store::{GoalStatus, TaskRecord, TaskStatus};

/// The goals' graph as a Mermaid flowchart, coloured by status. Goal ids (`g1`, …) are made
/// by swarm, so they serve as node ids.
pub(super) fn goal_mermaid(goals: &[GoalFacts]) -> String {
    let mut out = String::from("flowchart LR\n");
    for g in goals {
        let r = &g.record;
        let text = escape::mermaid(&crate::ui::one_line(&r.text, 40));
        let _ = writeln!(
            out,
            "  {}[\"{}: {text}<br/>{}\"]",
            r.id,
            r.id,
            r.status.as_str()
        );
    }
    for g in goals {
        for n in g.record.needs.iter().flatten() {
            if goals.iter().any(|o| o.record.id == n.goal) {
                let _ = writeln!(out, "  {} --> {}", n.goal, g.record.id);
            }
        }
    }
    out.push_str(
        "  classDef done fill:#c8e6c9,stroke:#2e7d32\n  classDef failed fill:#ffcdd2,stroke:#c62828\n  classDef skipped fill:#eeeeee,stroke:#9e9e9e\n  classDef parked fill:#ffe0b2,stroke:#ef6c00\n  classDef pending fill:#ffffff,stroke:#616161\n",
    );
    for class in ["done", "failed", "skipped", "parked", "pending"] {
        let members: Vec<&str> = goals
            .iter()
            .filter(|g| goal_class(g.record.status) == class)
            .map(|g| g.record.id.as_str())
            .collect();
        if !members.is_empty() {
            let _ = writeln!(out, "  class {} {class}", members.join(","));
        }
    }
    out
}

fn goal_class(s: GoalStatus) -> &'static str {
    match s {
        GoalStatus::Done => "done",
        GoalStatus::Failed => "failed",
        GoalStatus::Skipped => "skipped",
        GoalStatus::Parked => "parked",
        GoalStatus::Pending | GoalStatus::Planned => "pending",
    }
}

/// A task as a graph names it, before escaping: `t3 — Add tracing to handlers`, the title cut
/// to keep the node small.
fn graph_label(task: &crate::plan::Task) -> String {
    match task.title.as_deref().filter(|t| !t.trim().is_empty()) {
        Some(title) => format!("{} — {}", task.id, crate::ui::one_line(title, 40)),
        None => task.id.to_string(),
    }
}

pub(super) fn status_class(s: TaskStatus) -> &'static str {
    match s {
        TaskStatus::Done => "done",
        TaskStatus::Failed => "failed",
        TaskStatus::Skipped => "skipped",
        TaskStatus::Parked => "parked",
        TaskStatus::Running | TaskStatus::Committed => "running",
        TaskStatus::Pending | TaskStatus::Interrupted => "pending",
    }
}

/// Mermaid node ids must be simple; task ids may hold dots and dashes.
fn node(i: usize) -> String {
    format!("t{i}")
}

/// The tasks other tasks spawned, grouped under their parent (by index), parents in plan
/// order.
fn spawned_groups(plan: &Plan) -> Vec<(usize, Vec<usize>)> {
    let index: std::collections::HashMap<&str, usize> = plan
        .tasks
        .iter()
        .enumerate()
        .map(|(i, t)| (t.id.as_str(), i))
        .collect();
    let mut groups: std::collections::BTreeMap<usize, Vec<usize>> =
        std::collections::BTreeMap::new();
    for (i, t) in plan.tasks.iter().enumerate() {
        if let Some(&p) = t.parent.as_ref().and_then(|p| index.get(p.as_str())) {
            groups.entry(p).or_default().push(i);
        }
    }
    groups.into_iter().collect()
}

/// The DAG as a Mermaid flowchart, coloured by status when statuses are given.
pub fn mermaid(plan: &Plan, tasks: Option<&[TaskRecord]>) -> String {
    let mut out = String::from("flowchart TD\n");
    for (i, t) in plan.tasks.iter().enumerate() {
        let below = match tasks {
            Some(ts) => ts[i].status.as_str(),
            None => t.lane.as_str(),
        };
        let (label, below) = (escape::mermaid(&graph_label(t)), escape::mermaid(below));
        let _ = writeln!(out, "  {}[\"{label}<br/>{below}\"]", node(i));
    }
    for i in 0..plan.len() {
        for d in plan.deps(i) {
            let _ = writeln!(out, "  {} --> {}", node(d), node(i));
        }
    }
    for (parent, children) in spawned_groups(plan) {
        let label = escape::mermaid(&format!("spawned by {}", plan.tasks[parent].id));
        let _ = writeln!(out, "  subgraph s{parent}[\"{label}\"]");
        for c in children {
            let _ = writeln!(out, "    {}", node(c));
        }
        out.push_str(
            "  end
",
        );
    }
    if let Some(ts) = tasks {
        out.push_str(
            "  classDef done fill:#c8e6c9,stroke:#2e7d32\n  classDef failed fill:#ffcdd2,stroke:#c62828\n  classDef skipped fill:#eeeeee,stroke:#9e9e9e\n  classDef parked fill:#ffe0b2,stroke:#ef6c00\n  classDef running fill:#bbdefb,stroke:#1565c0\n  classDef pending fill:#ffffff,stroke:#616161\n",
        );
        for class in ["done", "failed", "skipped", "parked", "running", "pending"] {
            let members: Vec<String> = ts
                .iter()
                .enumerate()
                .filter(|(_, t)| status_class(t.status) == class)
                .map(|(i, _)| node(i))
                .collect();
            if !members.is_empty() {
                let _ = writeln!(out, "  class {} {class}", members.join(","));
            }
        }
    }
    out
}

/// The DAG in Graphviz DOT.
pub fn dot(plan: &Plan, tasks: Option<&[TaskRecord]>) -> String {
    let mut out = String::from("digraph swarm {\n  rankdir=TB;\n  node [shape=box];\n");
    for (i, t) in plan.tasks.iter().enumerate() {
        let (below, color) = match tasks {
            Some(ts) => (
                ts[i].status.as_str(),
                match status_class(ts[i].status) {
                    "done" => "palegreen",
                    "failed" => "lightpink",
                    "parked" => "orange",
                    "running" => "lightblue",
                    "skipped" => "lightgrey",
                    _ => "white",
                },
            ),
            None => (t.lane.as_str(), "white"),
        };
        let _ = writeln!(
            out,
            "  {} [label=\"{}\\n{below}\", style=filled, fillcolor={color}];",
            node(i),
            escape::dot(&graph_label(t)),
            below = escape::dot(below),
        );
    }
    for i in 0..plan.len() {
        for d in plan.deps(i) {
            let _ = writeln!(out, "  {} -> {};", node(d), node(i));
        }
    }
    for (parent, children) in spawned_groups(plan) {
        let label = escape::dot(&format!("spawned by {}", plan.tasks[parent].id));
        let _ = writeln!(
            out,
            "  subgraph cluster_{parent} {{\n    label=\"{label}\";"
        );
        for c in children {
            let _ = writeln!(out, "    {};", node(c));
        }
        out.push_str("  }\n");
    }
    out.push_str("}\n");
    out
}

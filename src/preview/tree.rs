//! The plan drawn as a tree, one line a task: `id — title`, lane, mode, what else it waits for
//! and the files a writer expects to touch. A pure function of the plan and a width.
//!
//! Where a task goes: tasks are taken in dependency order (file order among equals), and each is
//! drawn under the one of its deps that is drawn last so far, so that reading down, every task
//! comes after everything it needs. Its other deps are named on its line (`also after x, y`).
//! A task is drawn once, so the tree has as many lines as the plan has tasks.

use crate::plan::{Action, Mode, Plan, Task};
use crate::schedule::Ceiling;
use crate::ui::{count, cut, one_line};

/// The longest title drawn, in characters, whatever the width: a title taken from a prompt can
/// be a page long.
const TITLE_MAX: usize = 72;
/// Never cut the `id — title` column narrower than this, even on a narrow terminal.
const LEFT_MIN: usize = 16;
/// At most this much of a narrow terminal is kept for the notes after the mode (`also after`,
/// `files`) before titles are cut for them.
const NOTES_ROOM: usize = 20;
const READER: &str = "reader";
const WRITER: &str = "WRITER";

/// The plan as a tree, each line cut to `width` characters when given (a terminal's width);
/// a task that may add tasks says how many at most (`ceiling`).
pub fn tree(plan: &Plan, width: Option<usize>, ceiling: &Ceiling) -> String {
    let rows = rows(plan);
    let lefts: Vec<String> = rows
        .iter()
        .map(|r| {
            let t = &plan.tasks[r.task];
            format!("{}{} — {}", r.prefix, t.id, one_line(&title(t), TITLE_MAX))
        })
        .collect();
    let lane_width = plan
        .tasks
        .iter()
        .map(|t| t.lane.as_str().chars().count())
        .max()
        .unwrap_or(0);
    let notes: Vec<String> = rows.iter().map(|r| notes(plan, r, ceiling)).collect();
    let widest = lefts.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    let widest_notes = notes.iter().map(|n| n.chars().count()).max().unwrap_or(0);
    let fixed = 2 + lane_width + 2 + WRITER.len();
    let left_width = match width {
        Some(w) => widest.min(
            w.saturating_sub(fixed + widest_notes.min(NOTES_ROOM))
                .max(LEFT_MIN),
        ),
        None => widest,
    };
    let mut out = String::new();
    for ((row, left), notes) in rows.iter().zip(&lefts).zip(&notes) {
        let t = &plan.tasks[row.task];
        let mode = match t.mode {
            Mode::Read => READER,
            Mode::Write => WRITER,
        };
        let left = cut(left, left_width);
        let pad = left_width - left.chars().count();
        let line = format!(
            "{left}{:pad$}  {:lane_width$}  {mode}{notes}",
            "",
            t.lane.as_str()
        );
        let line = match width {
            Some(w) => cut(&line, w),
            None => line,
        };
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// What a row says after the mode: how many tasks it may add, its other deps and its files,
/// each after two spaces.
fn notes(plan: &Plan, row: &Row, ceiling: &Ceiling) -> String {
    let task = &plan.tasks[row.task];
    let mut notes = String::new();
    if let Some(n) = ceiling.of_task(task.id.as_str()).filter(|_| !ceiling.every) {
        notes.push_str("  may add up to ");
        notes.push_str(&n.to_string());
    }
    if !row.also_after.is_empty() {
        let names: Vec<&str> = row
            .also_after
            .iter()
            .map(|&d| plan.tasks[d].id.as_str())
            .collect();
        notes.push_str("  also after ");
        notes.push_str(&names.join(", "));
    }
    if !task.files.is_empty() {
        notes.push_str("  files: ");
        notes.push_str(&task.files.join(", "));
    }
    notes
}

/// `4 tasks: 3 readers, 1 writer`, and what the tasks may add while they run (`; t3 may add
/// up to 50 more`).
pub fn counts(plan: &Plan, ceiling: &Ceiling) -> String {
    let writers = writers(plan);
    let mut line = format!(
        "{}: {}, {}",
        count(plan.len(), "task", "tasks"),
        count(plan.len() - writers, "reader", "readers"),
        count(writers, "writer", "writers")
    );
    if let Some(more) = ceiling.describe() {
        line.push_str("; ");
        line.push_str(&more);
    }
    line
}

/// `Run 4 tasks (1 writer)? [Y/n/e] `, or with tasks that may add tasks, `Run 4 tasks (1
/// writer), and up to 50 more they may add? [Y/n/e] `: a yes agrees to the most the run may
/// grow to.
pub fn question(plan: &Plan, ceiling: &Ceiling) -> String {
    let writers = match writers(plan) {
        0 => "no writers".to_owned(),
        n => count(n, "writer", "writers"),
    };
    let more = match ceiling.total {
        0 => String::new(),
        n => format!(", and up to {n} more they may add"),
    };
    format!(
        "Run {} ({writers}){more}? [Y/n/e] ",
        count(plan.len(), "task", "tasks")
    )
}

fn writers(plan: &Plan) -> usize {
    plan.tasks.iter().filter(|t| t.mode == Mode::Write).count()
}

/// What a task's line calls it: its title, else its prompt, else `$ ` and its command.
fn title(task: &Task) -> String {
    match (&task.title, &task.action) {
        (Some(title), _) if !title.trim().is_empty() => title.clone(),
        (_, Action::Prompt(prompt)) => prompt.clone(),
        (_, Action::Run(command)) => format!("$ {command}"),
    }
}

/// One line of the tree: the task, the branches drawn before it, and its deps other than the
/// one it is drawn under.
/// Each task of `plan` in the order the tree draws it, with the branches it hangs from
/// (`├─ `, `└─ `, `│  `): the same tree as `tree`, for the interface's rows.
pub fn branches(plan: &Plan) -> Vec<(usize, String)> {
    rows(plan).into_iter().map(|r| (r.task, r.prefix)).collect()
}

struct Row {
    task: usize,
    prefix: String,
    also_after: Vec<usize>,
}

fn rows(plan: &Plan) -> Vec<Row> {
    let n = plan.len();
    // Each task is placed as the last child of its parent, which only ever inserts into the
    // drawn order: tasks drawn before keep their order, so a task placed after its deps stays
    // after them.
    let mut drawn: Vec<usize> = Vec::with_capacity(n);
    let mut parent: Vec<Option<usize>> = vec![None; n];
    let mut depth = vec![0usize; n];
    for i in plan.topological_order() {
        let at = |t: usize, drawn: &[usize]| drawn.iter().position(|&d| d == t);
        let under = plan.deps(i).max_by_key(|&d| at(d, &drawn));
        let Some(p) = under else {
            drawn.push(i);
            continue;
        };
        let mut end = at(p, &drawn).map_or(drawn.len(), |k| k + 1);
        while end < drawn.len() && depth[drawn[end]] > depth[p] {
            end += 1;
        }
        drawn.insert(end, i);
        parent[i] = Some(p);
        depth[i] = depth[p] + 1;
    }
    // Whether each task is the last drawn child of its parent (or the last root), for the
    // branch it hangs from and the line it continues below it.
    let mut last = vec![false; n];
    let mut seen = vec![false; n + 1];
    for &i in drawn.iter().rev() {
        let slot = parent[i].unwrap_or(n);
        if !seen[slot] {
            seen[slot] = true;
            last[i] = true;
        }
    }
    drawn
        .iter()
        .map(|&i| {
            let mut prefix = String::new();
            let mut up = parent[i];
            let mut me = i;
            // Built from the task up to its root, right to left.
            while let Some(p) = up {
                let piece = if me == i {
                    if last[me] { "└─ " } else { "├─ " }
                } else if last[me] {
                    "   "
                } else {
                    "│  "
                };
                prefix.insert_str(0, piece);
                me = p;
                up = parent[p];
            }
            Row {
                task: i,
                prefix,
                also_after: plan.deps(i).filter(|&d| Some(d) != parent[i]).collect(),
            }
        })
        .collect()
}

//! The DAG as a picture: an SVG drawn from the layered layout (`layout`), left to right by
//! dependency level, each task a box with its id and title, coloured by status for a run, the
//! critical path drawn heavier. No browser or Graphviz needed to make it.

use std::fmt::Write as _;

use super::escape;
use super::layout::{critical_path, layered};
use crate::plan::Plan;
use crate::store::TaskRecord;

/// A box's size and the gaps between boxes, in pixels.
const W: usize = 200;
const H: usize = 44;
const GAP_X: usize = 64;
const GAP_Y: usize = 16;
const MARGIN: usize = 16;
/// A title is cut to this many characters in its box.
const TITLE: usize = 28;

/// Fill and stroke of a box by the status class (see `graph::status_class`).
const COLOURS: [(&str, &str, &str); 6] = [
    ("done", "#c8e6c9", "#2e7d32"),
    ("failed", "#ffcdd2", "#c62828"),
    ("skipped", "#eeeeee", "#9e9e9e"),
    ("parked", "#ffe0b2", "#ef6c00"),
    ("running", "#bbdefb", "#1565c0"),
    ("pending", "#ffffff", "#616161"),
];

/// The DAG as a standalone SVG document, coloured by status when the run's tasks are given.
/// Each box is a `rect` of class `node` (and its status's class) with `data-id`; each edge a
/// `path` of class `edge` with `data-from` (the dependency) and `data-to`.
pub fn svg(plan: &Plan, tasks: Option<&[TaskRecord]>) -> String {
    let n = plan.len();
    let deps: Vec<Vec<usize>> = (0..n).map(|i| plan.deps(i).collect()).collect();
    let layout = layered(n, &deps);
    // For a run, the longest chain by the time its tasks took; for a plan, by their number.
    let weight: Vec<u64> = match tasks {
        Some(ts) => ts
            .iter()
            .map(|t| u64::try_from(t.elapsed_ms).unwrap_or(0).max(1))
            .collect(),
        None => vec![1; n],
    };
    let critical = critical_path(&deps, &weight);
    let on_path = |i: usize| critical.contains(&i);
    let at = |i: usize| {
        (
            MARGIN + layout.column[i] * (W + GAP_X),
            MARGIN + layout.row[i] * (H + GAP_Y),
        )
    };
    let width = 2 * MARGIN + layout.columns * W + layout.columns.saturating_sub(1) * GAP_X;
    let height = 2 * MARGIN + layout.rows * H + layout.rows.saturating_sub(1) * GAP_Y;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">"#
    );
    out.push_str("<style>");
    for (class, fill, stroke) in COLOURS {
        let _ = write!(out, ".{class}{{fill:{fill};stroke:{stroke}}}");
    }
    out.push_str(
        ".node{stroke-width:1}.node.critical{stroke-width:3}.edge{fill:none;stroke:#757575;stroke-width:1.2}.edge.critical{stroke:#212121;stroke-width:2.5}.id{font-weight:bold}</style>\n",
    );
    out.push_str(r##"<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" markerUnits="userSpaceOnUse" orient="auto"><path d="M0,0L10,5L0,10z" fill="#757575"/></marker></defs>"##);
    out.push('\n');
    for (i, ds) in deps.iter().enumerate() {
        let (x2, y2) = at(i);
        for &d in ds {
            let (x1, y1) = at(d);
            let (x1, y1, y2) = (x1 + W, y1 + H / 2, y2 + H / 2);
            let mid = usize::midpoint(x1, x2);
            let class = if on_path(i) && on_path(d) && critical.windows(2).any(|w| w == [d, i]) {
                "edge critical"
            } else {
                "edge"
            };
            let _ = writeln!(
                out,
                r#"<path class="{class}" data-from="{}" data-to="{}" d="M{x1},{y1} C{mid},{y1} {mid},{y2} {x2},{y2}" marker-end="url(#arrow)"/>"#,
                escape::xml(plan.tasks[d].id.as_str()),
                escape::xml(plan.tasks[i].id.as_str()),
            );
        }
    }
    for (i, task) in plan.tasks.iter().enumerate() {
        let (x, y) = at(i);
        let status = tasks.map_or("pending", |ts| super::graph::status_class(ts[i].status));
        let heavy = if on_path(i) { " critical" } else { "" };
        let id = escape::xml(task.id.as_str());
        // The lane for a plan, the status for a run; the whole title when pointed at.
        let what = match tasks {
            Some(ts) => ts[i].status.as_str(),
            None => task.lane.as_str(),
        };
        let title = task.title.as_deref().unwrap_or_default();
        let _ = writeln!(
            out,
            r#"<g><title>{id} ({}): {}</title><rect class="node {status}{heavy}" data-id="{id}" x="{x}" y="{y}" width="{W}" height="{H}" rx="4"/><text class="id" x="{}" y="{}">{}</text><text x="{}" y="{}">{}</text></g>"#,
            escape::xml(what),
            escape::xml(&crate::ui::one_line(title, usize::MAX)),
            x + 8,
            y + 18,
            escape::xml(&crate::ui::one_line(task.id.as_str(), TITLE)),
            x + 8,
            y + 35,
            escape::xml(&crate::ui::one_line(title, TITLE)),
        );
    }
    out.push_str("</svg>\n");
    out
}

/// The SVG in a page of its own, for a browser.
pub fn html(plan: &Plan, tasks: Option<&[TaskRecord]>, title: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n</head>\n<body style=\"margin:0\">\n{}</body>\n</html>\n",
        escape::xml(title),
        svg(plan, tasks)
    )
}

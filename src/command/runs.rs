//! `swarm runs`: the runs of the repository, newest first, as a table or as JSON.

use std::fmt::Write as _;

use serde_json::json;

use super::context::{Globals, START_A_RUN, open_board, open_repo};
use super::inspect::{RunState, lock_holder, run_duration};
use crate::error::exit;
use crate::store::{RunListing, now_ms};
use crate::ui::{self, Verb};

/// How much of a run's source (a goal's text, a task file's path) a row shows.
const SOURCE_WIDTH: usize = 60;

/// How much of why a run stopped a row shows.
const REASON_WIDTH: usize = 40;

/// A run as a row shows it.
struct Row<'a> {
    run: &'a RunListing,
    state: RunState,
    duration_ms: u64,
    /// Why it stands where it stands; `None` while it runs.
    reason: Option<String>,
}

pub(super) fn runs(g: &Globals) -> anyhow::Result<u8> {
    let repo = open_repo(g)?;
    let board = open_board(&repo)?;
    let listings = board.history().runs()?;
    let holder = lock_holder(&repo);
    let now = now_ms();
    let rows: Vec<Row<'_>> = listings
        .iter()
        .map(|run| {
            let state = RunState::of(&run.id, run.status, holder.as_deref());
            let times = (run.created_at, run.last_event_at);
            let took = run_duration(&board, &run.id, state, times, now)?;
            Ok(Row {
                run,
                state,
                duration_ms: took.as_millis() as u64,
                reason: super::reason::of_run(
                    state,
                    run.status,
                    run.exit_code,
                    run.last_event.as_ref(),
                ),
            })
        })
        .collect::<anyhow::Result<_>>()?;
    if g.json {
        let items: Vec<serde_json::Value> = rows
            .iter()
            .map(|r| {
                json!({
                    "id": r.run.id,
                    "started_at": r.run.created_at,
                    "finished_at": r.run.finished_at,
                    "status": r.state.as_str(),
                    "reason": r.reason,
                    "exit_code": r.run.exit_code,
                    "duration_ms": r.duration_ms,
                    "tasks": r.run.tasks,
                    "source": r.run.source,
                })
            })
            .collect();
        ui::out(&serde_json::to_string_pretty(&items)?)?;
        return Ok(exit::OK);
    }
    if rows.is_empty() {
        ui::say(
            g.quiet,
            Verb::Empty,
            &format!("no runs in this repository yet ({START_A_RUN} starts one)"),
        );
        return Ok(exit::OK);
    }
    ui::out(&table(&rows))?;
    Ok(exit::OK)
}

/// The rows under a header, in columns.
fn table(rows: &[Row<'_>]) -> String {
    let cells: Vec<[String; 8]> = rows
        .iter()
        .map(|r| {
            [
                r.run.id.clone(),
                crate::time::local_minute(r.run.created_at),
                r.state.as_str().to_owned(),
                r.run
                    .exit_code
                    .map_or_else(|| "-".to_owned(), |c| c.to_string()),
                ui::duration(std::time::Duration::from_millis(r.duration_ms)),
                r.run.tasks.to_string(),
                r.reason
                    .as_deref()
                    .map_or_else(|| "-".to_owned(), |w| ui::one_line(w, REASON_WIDTH)),
                ui::one_line(&r.run.source, SOURCE_WIDTH),
            ]
        })
        .collect();
    let header = [
        "RUN", "STARTED", "STATUS", "EXIT", "TIME", "TASKS", "REASON", "SOURCE",
    ];
    // At least as wide as the widest duration of under ten hours (`59.9s`, `9h59m`), so the
    // columns stand still as a run's time grows.
    let least = [0, 0, 0, 0, 5, 0, 0, 0];
    let width = |i: usize| {
        cells
            .iter()
            .map(|c| c[i].chars().count())
            .chain([header[i].len(), least[i]])
            .max()
            .unwrap_or(0)
    };
    let widths: Vec<usize> = (0..header.len()).map(width).collect();
    let mut out = String::new();
    let header = header.map(str::to_owned);
    for row in std::iter::once(&header).chain(&cells) {
        let [id, started, status, code, time, tasks, reason, source] = row;
        let line = format!(
            "{id:<w0$}  {started:<w1$}  {status:<w2$}  {code:>w3$}  {time:>w4$}  {tasks:>w5$}  {reason:<w6$}  {source}",
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2],
            w3 = widths[3],
            w4 = widths[4],
            w5 = widths[5],
            w6 = widths[6],
        );
        let _ = writeln!(out, "{}", line.trim_end());
    }
    out
}

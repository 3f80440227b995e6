//! `swarm web`: one read-only page of a run, served on 127.0.0.1 for as long as someone
//! watches. The page and its script are in the binary (`page.html`); what it shows comes from
//! the board and the event log: the DAG as SVG, the state as JSON, each task as `swarm show
//! --json` gives it, and new events as server-sent events (the log tailed, never the whole
//! state polled). Every request must carry the run's token, unguessable, printed with the URL,
//! and name the page's own address as its `Host`. The HTTP is `http`'s, the event streams
//! `stream`'s; this module says what each address answers.

mod http;
mod stream;

use std::io::Read as _;
use std::net::TcpListener;
use std::path::PathBuf;

use serde_json::{Value, json};

use super::context::{Globals, open_board, open_repo};
use super::facts::{attempt_spans, merges, parked_tasks};
use super::inspect::pick_run;
use super::stored::{read_events, stored_plan};
use crate::error::Usage;
use crate::store::{Board, Logged, RunStatus};
use crate::ui::Verb;
use crate::{report, ui};

/// The page, as embedded: its `{{…}}` places are filled when it is asked for (`Site::page`).
pub(crate) const PAGE: &str = include_str!("page.html");

pub(super) fn web(g: &Globals, run: Option<&str>, bind: &str, port: u16) -> anyhow::Result<u8> {
    let repo = open_repo(g)?;
    let board = open_board(&repo)?;
    let record = pick_run(&board, run)?;
    drop(board);
    let url = serve(&repo, &record.id, bind, port)?;
    ui::say(
        g.quiet,
        Verb::Started,
        &format!("the page of run {} (Ctrl-C stops it)", record.id),
    );
    ui::out(&format!("{url}\n"))?;
    // The page is served from threads of its own until Ctrl-C ends swarm.
    loop {
        std::thread::park();
    }
}

/// The page of run `run` served on 127.0.0.1 at a free port from threads of their own, until
/// swarm exits (`--web`); its URL.
pub(super) fn spawn(repo: &crate::git::Repo, run: &str) -> anyhow::Result<String> {
    serve(repo, run, "127.0.0.1", 0)
}

/// Serves the page of run `run` on `bind:port` from threads of their own; its URL, with a new
/// token.
fn serve(repo: &crate::git::Repo, run: &str, bind: &str, port: u16) -> anyhow::Result<String> {
    let token = token()?;
    let listener = TcpListener::bind((bind, port)).map_err(|e| {
        anyhow::Error::new(
            Usage::new(format!("could not listen on {bind}:{port}: {e}"))
                .hint("another --port, or 0 for a free one"),
        )
    })?;
    let addr = listener.local_addr()?;
    let url = format!("http://{addr}/?token={token}");
    let git_dir = repo.common_dir().to_owned();
    let log = Board::open(&git_dir.join("swarm"))?.events_path(run);
    let streams = stream::Streams::start(git_dir.clone(), run.to_owned(), log, stream::bound())?;
    let site = Site {
        git_dir,
        workdir: repo.workdir().to_owned(),
        run: run.to_owned(),
        token,
    };
    http::serve(listener, site, http::Hosts::new(bind, addr), streams)?;
    Ok(url)
}

/// 128 random bits, in hex.
fn token() -> anyhow::Result<String> {
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().fold(String::new(), |mut s, b| {
        use std::fmt::Write as _;
        let _ = write!(s, "{b:02x}");
        s
    }))
}

/// What every request is answered from.
#[derive(Clone)]
struct Site {
    git_dir: PathBuf,
    workdir: PathBuf,
    run: String,
    token: String,
}

/// What a request is answered with.
enum Answer {
    Reply(Reply),
    /// The run's events, as they come (`/events`).
    Stream,
}

/// A whole answer: its status, its type and its body.
#[derive(Clone, Debug)]
struct Reply {
    status: u16,
    content_type: &'static str,
    body: Vec<u8>,
    headers: Vec<(&'static str, String)>,
}

impl Reply {
    fn new(content_type: &'static str, body: impl Into<Vec<u8>>) -> Self {
        Self {
            status: 200,
            content_type,
            body: body.into(),
            headers: Vec::new(),
        }
    }

    fn json(value: &Value) -> Self {
        Self::new("application/json", value.to_string())
    }

    /// A status other than 200, said in plain text.
    fn text(status: u16, text: impl Into<Vec<u8>>) -> Self {
        Self {
            status,
            ..Self::new("text/plain; charset=utf-8", text)
        }
    }

    fn with_header(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }
}

impl Site {
    /// The answer to a `GET` of `path` with `query`.
    fn answer(&self, path: &str, query: &str) -> Answer {
        let param = |name: &str| {
            query.split('&').find_map(|kv| {
                let (k, v) = kv.split_once('=')?;
                (k == name).then(|| percent_decode(v))
            })
        };
        // The token is compared whole; without it nothing is told, not even what exists.
        if param("token").as_deref() != Some(self.token.as_str()) {
            return Answer::Reply(Reply::text(403, "forbidden\n"));
        }
        let answer = match path {
            "/" => Ok(Some(Reply::new("text/html; charset=utf-8", self.page()))),
            "/graph.svg" => self
                .graph()
                .map(|svg| Some(Reply::new("image/svg+xml", svg))),
            "/state" => self.state().map(|v| Some(Reply::json(&v))),
            "/task" => self
                .task(param("id").as_deref().unwrap_or_default())
                .map(|v| v.as_ref().map(Reply::json)),
            "/events" => return Answer::Stream,
            _ => Ok(None),
        };
        Answer::Reply(match answer {
            Ok(Some(reply)) => reply,
            Ok(None) => Reply::text(404, "not found\n"),
            Err(e) => Reply::text(500, format!("{e:#}\n")),
        })
    }

    /// The page as it reads before its script runs (and without one): the header, the graph
    /// and the timeline of the run as it is now. The script then keeps them up to date.
    fn page(&self) -> String {
        let (header, graph, timeline, live) = match self.look().and_then(|(header, state)| {
            let timeline = state["timeline"].as_str().unwrap_or_default().to_owned();
            Ok((header, self.graph()?, timeline))
        }) {
            Ok((header, graph, timeline)) => (header, graph, timeline, String::new()),
            // The script tries again and says what fails; the page says it at once.
            Err(e) => (
                Header::of_run(&self.run),
                String::new(),
                String::new(),
                format!("{e:#}"),
            ),
        };
        fill(
            PAGE,
            &[
                ("title", &report::escape_xml(&header.title)),
                ("run", &report::escape_xml(&header.run)),
                ("counts", &report::escape_xml(&header.counts)),
                ("elapsed", &report::escape_xml(&header.elapsed)),
                ("live", &report::escape_xml(&live)),
                ("graph", &graph),
                ("timeline", &timeline),
            ],
        )
    }

    fn board(&self) -> anyhow::Result<Board> {
        Board::open(&self.git_dir.join("swarm"))
    }

    fn graph(&self) -> anyhow::Result<String> {
        let board = self.board()?;
        let records = board.load_tasks(&self.run)?;
        let plan = stored_plan(&records)?;
        Ok(report::svg(&plan, Some(&records)))
    }

    /// The run as the page's header and side show it, the header's texts made (`header`).
    fn state(&self) -> anyhow::Result<Value> {
        let (header, mut state) = self.look()?;
        state["header"] = json!(header);
        Ok(state)
    }

    /// The run now: the header's texts, and the rest as `/state` gives it.
    fn look(&self) -> anyhow::Result<(Header, Value)> {
        let board = self.board()?;
        let record = board
            .load_run(&self.run)?
            .ok_or_else(|| anyhow::anyhow!("run {} is gone from the board", self.run))?;
        let records = board.load_tasks(&self.run)?;
        let events: Vec<Logged> = read_events(&board.events_path(&self.run))?;
        let now = crate::store::now_ms();
        let spans = attempt_spans(&events, now);
        let by_status = report::counts(&records);
        let counts: serde_json::Map<String, Value> = by_status
            .iter()
            .map(|(s, n)| (s.as_str().to_owned(), json!(n)))
            .collect();
        let merges: Vec<Value> = merges(&events, &records)
            .into_iter()
            .map(|(task, commit, rung)| json!({"task": task, "commit": commit, "rung": rung}))
            .collect();
        let parked: Vec<Value> = parked_tasks(&events, &records)
            .into_iter()
            .map(|p| {
                json!({
                    "task": p.task,
                    "branch": p.branch,
                    "paths": p.paths,
                    "command": format!("git log -p {b} --not {base}\ngit merge {b}", b = p.branch, base = record.base_commit),
                })
            })
            .collect();
        let elapsed = super::facts::run_time(
            record.created_at,
            &super::facts::time_marks(&events),
            events.last().map(|e| e.at),
            (record.status == RunStatus::Running).then_some(now),
        );
        let eta = (record.status == RunStatus::Running)
            .then(|| {
                let plan = stored_plan(&records).ok()?;
                let jobs = record.options["jobs"].as_u64().unwrap_or(4);
                let jobs = usize::try_from(jobs).unwrap_or(1);
                crate::schedule::eta::from_records(&plan, &records, jobs, now)
            })
            .flatten()
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        let header = Header {
            title: format!("swarm run {}", record.id),
            run: format!("swarm run {} ({})", record.id, record.status.as_str()),
            counts: by_status
                .iter()
                .map(|(status, n)| format!("{n} {}", status.as_str()))
                .collect::<Vec<_>>()
                .join(", "),
            elapsed: elapsed_text(elapsed, eta),
        };
        let state = json!({
            "run": {"id": record.id, "status": record.status.as_str(), "exit_code": record.exit_code},
            "counts": counts,
            "elapsed_ms": u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
            "eta_ms": eta,
            "tasks": records.iter().map(|t| json!({
                "id": t.id,
                "status": t.status.as_str(),
                "attempts": t.attempts,
            })).collect::<Vec<_>>(),
            "timeline": report::timeline(&spans),
            "merges": merges,
            "parked": parked,
            "pull_requests": super::deliver::recorded(&events),
            "foreseen": super::facts::foreseen(&events).into_iter().map(|f| json!({
                "task": f.task,
                "with": f.with,
                "paths": f.paths,
                "came": f.came,
            })).collect::<Vec<_>>(),
        });
        Ok((header, state))
    }

    fn task(&self, id: &str) -> anyhow::Result<Option<Value>> {
        let repo = crate::git::Repo::discover(&self.workdir)?;
        super::show::task_json(&repo, &self.board()?, &self.run, id)
    }
}

/// The texts of the page's header, made once for the page the server renders and for the
/// script that keeps it up to date (`/state`'s `header`).
#[derive(Debug, serde::Serialize)]
struct Header {
    /// The document's title.
    title: String,
    /// The run and its status.
    run: String,
    /// How many tasks are in each status.
    counts: String,
    /// How long the run has taken, and how long it may still take while it runs.
    elapsed: String,
}

impl Header {
    /// What the header says of run `run` when nothing more can be read.
    fn of_run(run: &str) -> Self {
        Self {
            title: format!("swarm run {run}"),
            run: format!("swarm run {run}"),
            counts: String::new(),
            elapsed: String::new(),
        }
    }
}

/// `12.3s elapsed`, and `, about 40s left` when an estimate is given (milliseconds).
fn elapsed_text(elapsed: std::time::Duration, eta_ms: Option<u64>) -> String {
    let left = eta_ms.map_or(String::new(), |ms| {
        format!(", about {}s left", ms.saturating_add(500) / 1000)
    });
    format!("{:.1}s elapsed{left}", elapsed.as_secs_f64())
}

/// `page` with each `{{name}}` replaced by its value (already HTML).
fn fill(page: &str, values: &[(&str, &str)]) -> String {
    values.iter().fold(page.to_owned(), |page, (name, value)| {
        page.replace(&format!("{{{{{name}}}}}"), value)
    })
}

/// `%XX` and `+` in a query value.
fn percent_decode(s: &str) -> String {
    // A `+` in a query is a space; the `%2B` a plus is sent as decodes to a plus.
    percent_encoding::percent_decode_str(&s.replace('+', " "))
        .decode_utf8_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::{PAGE, elapsed_text, fill, percent_decode};

    #[test]
    fn every_place_of_the_page_is_filled_once() {
        let names = [
            "title", "run", "counts", "elapsed", "live", "graph", "timeline",
        ];
        for name in names {
            assert_eq!(
                PAGE.matches(&format!("{{{{{name}}}}}")).count(),
                1,
                "{name}"
            );
        }
        let filled = fill(PAGE, &names.map(|n| (n, "x")));
        assert!(!filled.contains("{{"), "a place is left unfilled");
    }

    #[test]
    fn elapsed_time_is_said_with_what_is_left_when_known() {
        let d = std::time::Duration::from_millis(12_345);
        assert_eq!(elapsed_text(d, None), "12.3s elapsed");
        assert_eq!(
            elapsed_text(d, Some(39_600)),
            "12.3s elapsed, about 40s left"
        );
    }

    #[test]
    fn query_values_are_decoded() {
        assert_eq!(percent_decode("a%2Eb+c"), "a.b c");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz"), "%zz");
        assert_eq!(percent_decode("%41"), "A");
    }

    #[test]
    fn an_encoded_plus_stays_a_plus_and_bad_utf8_is_replaced() {
        assert_eq!(percent_decode("a%2Bb"), "a+b");
        assert_eq!(percent_decode("%FFa"), "\u{FFFD}a");
    }
}

//! `swarm web`: one read-only page of a run, served on 127.0.0.1 for as long as someone
//! watches. The page and its script are in the binary (`page.html`); what it shows comes from
//! the board and the event log: the DAG as SVG, the state as JSON, each task as `swarm show
//! --json` gives it, and new events as server-sent events (the log tailed, never the whole
//! state polled). Every request must carry the run's token, unguessable, printed with the URL.

use std::io::{Read, Seek as _, SeekFrom, Write as _};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tiny_http::{Header, Request, Response, Server, StatusCode};

use super::facts::{attempt_spans, merges, parked_tasks};
use super::inspect::pick_run;
use super::run::{read_events, stored_plan};
use super::{Globals, open_board, open_repo};
use crate::store::{Board, Logged, RunStatus};
use crate::ui::Verb;
use crate::{Usage, exit, report, ui};

/// The page, as embedded.
pub(crate) const PAGE: &str = include_str!("page.html");

/// How often the event log is looked at for new lines while a page listens.
const TAIL: Duration = Duration::from_millis(200);
/// A comment line this often keeps a quiet stream open through proxies.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

pub(super) fn web(g: &Globals, run: Option<&str>, bind: &str, port: u16) -> anyhow::Result<u8> {
    let repo = open_repo(g)?;
    let board = open_board(&repo)?;
    let record = pick_run(&board, run)?;
    let (server, url, site) = listen(&repo, &record.id, bind, port)?;
    ui::say(
        g.quiet,
        Verb::Started,
        &format!("the page of run {} (Ctrl-C stops it)", record.id),
    );
    ui::out(&format!("{url}\n"))?;
    serve(&server, &site);
    Ok(exit::OK)
}

/// The page of run `run` served on 127.0.0.1 at a free port from a thread of its own, until
/// swarm exits (`--web`); its URL.
pub(super) fn spawn(repo: &crate::git::Repo, run: &str) -> anyhow::Result<String> {
    let (server, url, site) = listen(repo, run, "127.0.0.1", 0)?;
    std::thread::Builder::new()
        .name("swarm-web".to_owned())
        .spawn(move || serve(&server, &site))?;
    Ok(url)
}

/// A server for run `run` on `bind:port`, its URL with a new token, and what it answers from.
fn listen(
    repo: &crate::git::Repo,
    run: &str,
    bind: &str,
    port: u16,
) -> anyhow::Result<(Server, String, Site)> {
    let token = token()?;
    let server = Server::http((bind, port)).map_err(|e| {
        anyhow::Error::new(
            Usage::new(format!("could not listen on {bind}:{port}: {e}"))
                .hint("another --port, or 0 for a free one"),
        )
    })?;
    let addr = server
        .server_addr()
        .to_ip()
        .map_or_else(|| format!("{bind}:{port}"), |a| a.to_string());
    let url = format!("http://{addr}/?token={token}");
    let site = Site {
        git_dir: repo.common_dir().to_owned(),
        workdir: repo.workdir().to_owned(),
        run: run.to_owned(),
        token,
    };
    Ok((server, url, site))
}

/// Answers every request, each on a thread of its own: a page's event stream holds its
/// request for as long as it is open.
fn serve(server: &Server, site: &Site) {
    for request in server.incoming_requests() {
        let site = site.clone();
        std::thread::spawn(move || {
            let _ = site.answer(request);
        });
    }
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

impl Site {
    fn answer(&self, request: Request) -> std::io::Result<()> {
        let (path, query) = request.url().split_once('?').unwrap_or((request.url(), ""));
        let param = |name: &str| {
            query.split('&').find_map(|kv| {
                let (k, v) = kv.split_once('=')?;
                (k == name).then(|| percent_decode(v))
            })
        };
        // The token is compared whole; without it nothing is told, not even what exists.
        if param("token").as_deref() != Some(self.token.as_str()) {
            return request.respond(Response::from_string("forbidden\n").with_status_code(403));
        }
        let path = path.to_owned();
        let id = param("id");
        let answer = match path.as_str() {
            "/" => Ok(Some(with_type(
                Response::from_string(PAGE),
                "text/html; charset=utf-8",
            ))),
            "/graph.svg" => self
                .graph()
                .map(|svg| Some(with_type(Response::from_string(svg), "image/svg+xml"))),
            "/state" => self.state().map(|v| {
                Some(with_type(
                    Response::from_string(v.to_string()),
                    "application/json",
                ))
            }),
            "/task" => self.task(id.as_deref().unwrap_or_default()).map(|v| {
                v.map(|v| with_type(Response::from_string(v.to_string()), "application/json"))
            }),
            "/events" => return self.events(request),
            _ => Ok(None),
        };
        match answer {
            Ok(Some(response)) => request.respond(response),
            Ok(None) => request.respond(Response::from_string("not found\n").with_status_code(404)),
            Err(e) => request.respond(
                Response::from_string(format!("{e:#}\n")).with_status_code(StatusCode(500)),
            ),
        }
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

    /// The run as the page's header and side show it.
    fn state(&self) -> anyhow::Result<Value> {
        let board = self.board()?;
        let record = board
            .load_run(&self.run)?
            .ok_or_else(|| anyhow::anyhow!("run {} is gone from the board", self.run))?;
        let records = board.load_tasks(&self.run)?;
        let events: Vec<Logged> = read_events(&board.events_path(&self.run))?;
        let now = crate::store::now_ms();
        let spans = attempt_spans(&events, now);
        let counts: serde_json::Map<String, Value> = report::counts(&records)
            .into_iter()
            .map(|(s, n)| (s.as_str().to_owned(), json!(n)))
            .collect();
        let merges: Vec<Value> = merges(&events, &records)
            .into_iter()
            .map(|(task, commit)| json!({"task": task, "commit": commit}))
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
        Ok(json!({
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
        }))
    }

    fn task(&self, id: &str) -> anyhow::Result<Option<Value>> {
        let repo = crate::git::Repo::discover(&self.workdir)?;
        super::show::task_json(&repo, &self.board()?, &self.run, id)
    }

    /// New events as they are logged, each with its task's status now; an `end` event once
    /// the run is no longer running. Written as they come (a response of its own: no length,
    /// no chunks, flushed at each event, ended by closing).
    fn events(&self, request: Request) -> std::io::Result<()> {
        let board = match self.board() {
            Ok(board) => board,
            Err(e) => {
                return request
                    .respond(Response::from_string(format!("{e:#}\n")).with_status_code(500));
            }
        };
        let path = board.events_path(&self.run);
        let mut tail = Tail {
            offset: std::fs::metadata(&path).map_or(0, |m| m.len()),
            path,
            board,
            run: self.run.clone(),
            out: Vec::new(),
        };
        let mut w = request.into_writer();
        w.write_all(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n",
        )?;
        w.flush()?;
        let mut quiet_since = Instant::now();
        loop {
            let finished = tail.finished();
            tail.look()?;
            if finished {
                // What the run logged last is out; then the page is told it ended.
                tail.out.extend_from_slice(b"event: end\ndata: {}\n\n");
            } else if tail.out.is_empty() && quiet_since.elapsed() >= KEEP_ALIVE {
                tail.out.extend_from_slice(b": still here\n\n");
            }
            if !tail.out.is_empty() {
                // A page that went away ends the stream here.
                w.write_all(&tail.out)?;
                w.flush()?;
                tail.out.clear();
                quiet_since = Instant::now();
            }
            if finished {
                return Ok(());
            }
            std::thread::sleep(TAIL);
        }
    }
}

/// The event log, tailed: new lines become server-sent events in `out`.
struct Tail {
    path: PathBuf,
    offset: u64,
    board: Board,
    run: String,
    out: Vec<u8>,
}

impl Tail {
    /// Reads what the log got since the last look into `out` as events.
    fn look(&mut self) -> std::io::Result<()> {
        let mut file = match std::fs::File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        };
        file.seek(SeekFrom::Start(self.offset))?;
        let mut new = Vec::new();
        file.read_to_end(&mut new)?;
        // Only whole lines: a line being written is read at the next look.
        let Some(last) = new.iter().rposition(|&b| b == b'\n') else {
            return Ok(());
        };
        self.offset += (last + 1) as u64;
        let statuses: std::collections::HashMap<String, &'static str> = self
            .board
            .load_tasks(&self.run)
            .unwrap_or_default()
            .into_iter()
            .map(|t| (t.id, t.status.as_str()))
            .collect();
        for line in new[..last].split(|&b| b == b'\n') {
            let Ok(logged) = serde_json::from_slice::<Logged>(line) else {
                continue;
            };
            let (kind, _) = logged.event.kind_and_detail();
            let status = logged
                .task
                .as_deref()
                .and_then(|t| statuses.get(t).copied());
            let data =
                json!({"task": logged.task, "kind": kind, "status": status, "at": logged.at});
            self.out
                .extend_from_slice(format!("data: {data}\n\n").as_bytes());
        }
        Ok(())
    }

    fn finished(&self) -> bool {
        self.board
            .load_run(&self.run)
            .ok()
            .flatten()
            .is_none_or(|r| r.status != RunStatus::Running)
    }
}

/// A header of fixed ASCII text (`None` would be a name or value the server refuses).
fn header(name: &str, value: &str) -> Option<Header> {
    Header::from_bytes(name.as_bytes(), value.as_bytes()).ok()
}

fn with_type<R: Read>(mut response: Response<R>, kind: &str) -> Response<R> {
    for h in [
        header("Content-Type", kind),
        header("Cache-Control", "no-store"),
    ]
    .into_iter()
    .flatten()
    {
        response.add_header(h);
    }
    response
}

/// `%XX` and `+` in a query value.
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::percent_decode;

    #[test]
    fn query_values_are_decoded() {
        assert_eq!(percent_decode("a%2Eb+c"), "a.b c");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz"), "%zz");
        assert_eq!(percent_decode("%41"), "A");
    }
}

//! `swarm web`: the page of a run, over plain HTTP on 127.0.0.1: the token, what each address
//! answers, and events streamed as a run goes.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};

use crate::{TestRepo, assert_exit, outside};

/// `swarm web` with `args`, started; its page's address (`127.0.0.1:PORT`) and token.
pub struct Page {
    child: Child,
    addr: String,
    token: String,
}

impl Page {
    pub fn start(repo: &TestRepo, args: &[&str]) -> Self {
        let mut cmd = repo.swarm_cmd();
        cmd.arg("web").args(args);
        Self::started(cmd)
    }

    /// `swarm web` with `args`, allowed `limit` open file descriptors at most (`ulimit -n`).
    pub fn start_with_descriptors(repo: &TestRepo, limit: u32, args: &[&str]) -> Self {
        let mut cmd = repo.command("sh");
        cmd.arg("-c")
            .arg(format!("ulimit -n {limit} && exec \"$0\" web \"$@\""))
            .arg(env!("CARGO_BIN_EXE_swarm"))
            .args(args);
        Self::started(cmd)
    }

    fn started(mut cmd: Command) -> Self {
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line
            .trim()
            .strip_prefix("http://")
            .unwrap_or_else(|| panic!("{line}"));
        let (addr, token) = url.split_once("/?token=").unwrap();
        Self {
            child,
            addr: addr.to_owned(),
            token: token.to_owned(),
        }
    }

    fn port(&self) -> &str {
        self.addr.rsplit_once(':').unwrap().1
    }

    fn connect(&self, path: &str) -> TcpStream {
        self.connect_as(path, &self.addr)
    }

    /// A connection that asked for `path` with `host` as its `Host`.
    fn connect_as(&self, path: &str, host: &str) -> TcpStream {
        let mut s = TcpStream::connect(&self.addr).unwrap();
        write!(
            s,
            "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        s
    }

    /// A connection to the event stream and its answer's head: the stream goes on after it.
    pub fn stream(&self) -> (TcpStream, String) {
        let mut s = self.connect(&self.with_token("/events"));
        let mut head = Vec::new();
        let mut byte = [0];
        while !head.ends_with(b"\r\n\r\n") {
            assert_eq!(s.read(&mut byte).unwrap(), 1, "{head:?}");
            head.push(byte[0]);
        }
        (s, String::from_utf8(head).unwrap())
    }

    /// An event stream, asked for again while the server says it has as many as it serves (a
    /// 503, as a page is told when the bound is full), as a browser does. The server lets a
    /// page in as soon as it has read the end of a gone one, which the test cannot wait on:
    /// the bound of two minutes only ends a test whose server never does.
    pub fn stream_when_let_in(&self) -> (TcpStream, String) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        loop {
            let (s, head) = self.stream();
            if !head.starts_with("HTTP/1.1 503 ") || std::time::Instant::now() >= deadline {
                return (s, head);
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// The status of a GET of `path` with `host` as its `Host`.
    fn status_as(&self, path: &str, host: &str) -> u16 {
        let mut head = String::new();
        BufReader::new(self.connect_as(path, host))
            .read_line(&mut head)
            .unwrap();
        head.split(' ').nth(1).unwrap().parse().unwrap()
    }

    /// The status and the body (de-chunked) of a GET of `path`.
    fn get(&self, path: &str) -> (u16, String) {
        let mut raw = Vec::new();
        self.connect(path).read_to_end(&mut raw).unwrap();
        let raw = String::from_utf8_lossy(&raw).into_owned();
        let (head, body) = raw.split_once("\r\n\r\n").unwrap();
        let status = head.split(' ').nth(1).unwrap().parse().unwrap();
        let body = if head
            .to_ascii_lowercase()
            .contains("transfer-encoding: chunked")
        {
            dechunk(body)
        } else {
            body.to_owned()
        };
        (status, body)
    }

    /// The page's URL, with its token.
    pub fn url(&self) -> String {
        format!("http://{}/?token={}", self.addr, self.token)
    }

    /// `path` with the token.
    fn with_token(&self, path: &str) -> String {
        let sep = if path.contains('?') { '&' } else { '?' };
        format!("{path}{sep}token={}", self.token)
    }
}

impl Drop for Page {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 {
            break;
        }
        out.push_str(&rest[..n]);
        body = rest[n..].strip_prefix("\r\n").unwrap_or(&rest[n..]);
    }
    out
}

#[test]
fn the_page_of_a_finished_run_answers_only_with_its_token() {
    let repo = TestRepo::new();
    let tasks = repo.tasks(&[
        r#"{"id":"ok","title":"fine","mode":"read","run":"echo fine"}"#,
        r#"{"id":"bad","title":"breaks","mode":"read","run":"echo broken-output >&2; exit 4"}"#,
        r#"{"id":"after","title":"never","mode":"read","deps":["bad"],"run":"true"}"#,
    ]);
    assert_exit(
        &repo.swarm(&["run", tasks.to_str().unwrap(), "--retries", "0"]),
        1,
    );
    let page = Page::start(&repo, &[]);
    for path in [
        "/",
        "/state",
        "/graph.svg",
        "/?token=",
        "/?token=0123",
        "/state?token=x",
    ] {
        assert_eq!(page.get(path), (403, "forbidden\n".to_owned()), "{path}");
    }
    let (status, html) = page.get(&page.with_token("/"));
    assert_eq!(status, 200);
    assert!(html.starts_with("<!DOCTYPE html>") && html.contains("EventSource"));
    // Embedded whole: nothing is fetched from another host.
    for outside in ["src=\"http", "href=\"http", "url(http", "import "] {
        assert!(!html.contains(outside), "{outside}");
    }
    let (status, svg) = page.get(&page.with_token("/graph.svg"));
    assert_eq!(status, 200);
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let nodes: Vec<(&str, &str)> = doc
        .descendants()
        .filter(|n| n.has_tag_name("rect") && n.attribute("data-id").is_some())
        .map(|n| {
            (
                n.attribute("data-id").unwrap(),
                n.attribute("class").unwrap(),
            )
        })
        .collect();
    assert_eq!(nodes.len(), 3);
    assert!(
        nodes
            .iter()
            .any(|(id, class)| *id == "bad" && class.contains("failed")),
        "{nodes:?}"
    );
    let (_, state) = page.get(&page.with_token("/state"));
    let state: serde_json::Value = serde_json::from_str(&state).unwrap();
    assert_eq!(state["run"]["status"], "finished");
    assert!(state["eta_ms"].is_null());
    assert_eq!(state["counts"]["failed"], 1);
    assert_eq!(state["counts"]["skipped"], 1);
    assert!(
        state["timeline"]
            .as_str()
            .unwrap()
            .contains("data-task=\"bad\"")
    );
    let (_, task) = page.get(&page.with_token("/task?id=bad"));
    let task: serde_json::Value = serde_json::from_str(&task).unwrap();
    assert_eq!(task["status"], "failed");
    assert!(
        task["error"].as_str().unwrap().contains("exit code 4"),
        "{task}"
    );
    let tail = task["transcript"]["tail"].to_string();
    assert!(tail.contains("broken-output"), "{tail}");
    assert_eq!(page.get(&page.with_token("/task?id=nope")).0, 404);
    assert_eq!(page.get(&page.with_token("/nothing")).0, 404);
    // A finished run's stream ends at once.
    let (_, events) = page.get(&page.with_token("/events"));
    assert!(events.contains("event: end"), "{events}");
}

#[test]
fn the_page_reads_right_before_its_script_runs() {
    let repo = TestRepo::new();
    let tasks = repo.tasks(&[
        r#"{"id":"ok","title":"fine","mode":"read","run":"echo fine"}"#,
        r#"{"id":"bad","title":"breaks","mode":"read","run":"exit 4"}"#,
        r#"{"id":"after","title":"never","mode":"read","deps":["bad"],"run":"true"}"#,
    ]);
    assert_exit(
        &repo.swarm(&["run", tasks.to_str().unwrap(), "--retries", "0"]),
        1,
    );
    let run = crate::run_id(&repo);
    let page = Page::start(&repo, &[]);
    let (status, html) = page.get(&page.with_token("/"));
    assert_eq!(status, 200);
    // The page as a browser without JavaScript shows it: no script has run.
    let header = &html[html.find("<header>").unwrap()..html.find("</header>").unwrap()];
    let text_of = |id: &str| {
        let open = format!("id=\"{id}\"");
        let from = header
            .find(&open)
            .unwrap_or_else(|| panic!("no #{id}: {header}"));
        let from = from + header[from..].find('>').unwrap() + 1;
        header[from..from + header[from..].find('<').unwrap()].to_owned()
    };
    assert_eq!(text_of("run"), format!("swarm run {run} (finished)"));
    assert_eq!(text_of("counts"), "1 done, 1 failed, 1 skipped");
    let elapsed = text_of("elapsed");
    assert!(
        elapsed.ends_with("s elapsed") && elapsed[..elapsed.len() - 9].parse::<f64>().is_ok(),
        "{elapsed}"
    );
    assert!(html.contains(&format!("<title>swarm run {run}</title>")));
    assert!(!html.contains("{{"), "a place of the page is left unfilled");
    // The graph and the timeline are drawn in it too, the timeline under one heading.
    assert_eq!(html.matches("<rect class=\"node ").count(), 3, "{html}");
    assert!(html.contains("data-task=\"bad\""), "{html}");
    assert_eq!(html.matches("Timeline").count(), 1, "{html}");
    // What the script writes there is what the page was made with.
    let (_, state) = page.get(&page.with_token("/state"));
    let state: serde_json::Value = serde_json::from_str(&state).unwrap();
    assert_eq!(state["header"]["run"], text_of("run"));
    assert_eq!(state["header"]["counts"], text_of("counts"));
    assert_eq!(state["header"]["title"], format!("swarm run {run}"));
}

#[test]
fn a_running_runs_page_streams_each_change_as_it_happens() {
    let repo = TestRepo::new();
    let go = outside(&repo, "go");
    let wait = |id: &str| {
        format!(
            r#"{{"id":"{id}","title":"{id}","mode":"read","run":"while [ ! -e {}-{id} ]; do sleep 0.01; done"}}"#,
            go.display()
        )
    };
    let tasks = repo.tasks(&[&wait("one"), &wait("two")]);
    let mut run = repo.spawn(&["run", tasks.to_str().unwrap()]);
    // The page of the run once it is on record.
    let page = loop {
        let status = repo.swarm(&["status", "--json"]);
        if status.status.success() {
            break Page::start(&repo, &[]);
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    let mut stream = BufReader::new(page.connect(&page.with_token("/events")));
    let mut read = String::new();
    let mut until = |text: &str| loop {
        let mut line = String::new();
        assert!(
            stream.read_line(&mut line).unwrap() > 0,
            "the stream ended before {text}:\n{read}"
        );
        read.push_str(&line);
        if line.contains(text) {
            return;
        }
    };
    until("text/event-stream");
    std::fs::write(format!("{}-one", go.display()), "").unwrap();
    until(r#""kind":"task_succeeded","status":"done","task":"one""#);
    // One task finished: the page can say how long the other should take.
    let (_, state) = page.get(&page.with_token("/state"));
    let state: serde_json::Value = serde_json::from_str(&state).unwrap();
    assert!(state["eta_ms"].is_u64(), "{state}");
    std::fs::write(format!("{}-two", go.display()), "").unwrap();
    until(r#""task":"two""#);
    until("event: end");
    assert!(run.wait().unwrap().success());
}

#[test]
fn a_run_with_web_serves_its_own_page_while_it_runs() {
    let repo = TestRepo::new();
    let go = outside(&repo, "go");
    let tasks = repo.tasks(&[&format!(
        r#"{{"id":"wait","title":"wait","mode":"read","run":"while [ ! -e {} ]; do sleep 0.01; done"}}"#,
        go.display()
    )]);
    let mut run = repo
        .swarm_cmd()
        .args(["run", tasks.to_str().unwrap(), "--web"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(run.stderr.take().unwrap());
    let read = crate::read_until(&mut err, "the run's page: http://");
    let url = read
        .lines()
        .find_map(|l| l.split("the run's page: http://").nth(1))
        .unwrap()
        .trim();
    let (addr, token) = url.split_once("/?token=").unwrap();
    let page = Page {
        child: Command::new("true").spawn().unwrap(),
        addr: addr.to_owned(),
        token: token.to_owned(),
    };
    assert_eq!(page.get("/state").0, 403);
    let (status, state) = page.get(&page.with_token("/state"));
    assert_eq!(status, 200);
    let state: serde_json::Value = serde_json::from_str(&state).unwrap();
    assert_eq!(state["run"]["status"], "running");
    assert_eq!(state["tasks"][0]["id"], "wait");
    std::fs::write(&go, "").unwrap();
    let mut rest = String::new();
    err.read_to_string(&mut rest).unwrap();
    assert!(run.wait().unwrap().success(), "{read}{rest}");
}

/// A run whose one task waits for a word to go on, started and running.
pub struct WaitingRun {
    child: Child,
    go: std::path::PathBuf,
    stderr: BufReader<std::process::ChildStderr>,
}

impl WaitingRun {
    pub fn start(repo: &TestRepo) -> Self {
        let go = outside(repo, "go");
        let tasks = repo.tasks(&[&format!(
            r#"{{"id":"wait","title":"wait","mode":"read","run":"while [ ! -e {} ]; do sleep 0.01; done"}}"#,
            go.display()
        )]);
        let mut child = repo.spawn(&["run", tasks.to_str().unwrap()]);
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        crate::read_until(&mut stderr, "Started wait");
        Self { child, go, stderr }
    }

    /// Lets the task end, and the run with it.
    pub fn finish(mut self) {
        std::fs::write(&self.go, "").unwrap();
        let mut rest = String::new();
        self.stderr.read_to_string(&mut rest).unwrap();
        assert!(self.child.wait().unwrap().success(), "{rest}");
    }
}

#[test]
fn the_page_still_answers_after_two_thousand_streams_came_and_went_under_256_descriptors() {
    let repo = TestRepo::new();
    let run = WaitingRun::start(&repo);
    // With 256 descriptors, at most 256 / 8 = 32 streams are open at once.
    let page = Page::start_with_descriptors(&repo, 256, &[]);
    let bound = 32;
    // Pages that read a little of their stream and go, fewer at a time than the bound, so
    // each is let in once the server has read the end of the batch before (on a loaded
    // machine the kernel may hand it those ends a little after the next pages came: they are
    // asked for again then, as a browser does).
    for _ in 0..100 {
        let batch: Vec<_> = (0..20).map(|_| page.stream_when_let_in()).collect();
        for (_, head) in &batch {
            assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
            assert!(head.contains("text/event-stream"), "{head}");
        }
    }
    for path in ["/", "/state", "/graph.svg"] {
        assert_eq!(page.get(&page.with_token(path)).0, 200, "{path}");
    }
    // The bound full: the next pages are told to come back later, and the page still
    // answers everything else.
    let open: Vec<_> = (0..bound).map(|_| page.stream()).collect();
    for (_, head) in &open {
        assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
    }
    for _ in 0..3 {
        let (mut refused, head) = page.stream();
        assert!(head.starts_with("HTTP/1.1 503 "), "{head}");
        assert!(head.contains("\r\nRetry-After: 5\r\n"), "{head}");
        let mut body = String::new();
        refused.read_to_string(&mut body).unwrap();
        assert_eq!(body, "too many event streams; try again later\n");
    }
    for path in ["/", "/state", "/task?id=wait"] {
        assert_eq!(page.get(&page.with_token(path)).0, 200, "{path}");
    }
    // Once they leave, new streams are let in again, as many as the bound, and they follow
    // the run to its end. The server counts a page gone when it reads the page's end of the
    // stream: until then a new page may still be told to come back later, as a browser is.
    drop(open);
    let mut open: Vec<_> = (0..bound).map(|_| page.stream_when_let_in()).collect();
    for (_, head) in &open {
        assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
    }
    run.finish();
    let mut rest = String::new();
    open[0].0.read_to_string(&mut rest).unwrap();
    assert!(rest.contains(r#""task":"wait""#), "{rest}");
    assert!(rest.ends_with("event: end\ndata: {}\n\n"), "{rest}");
}

#[test]
fn requests_for_another_host_are_refused_at_every_address() {
    let repo = TestRepo::new();
    let tasks = repo.tasks(&[r#"{"id":"ok","mode":"read","run":"echo fine"}"#]);
    assert_exit(&repo.swarm(&["run", tasks.to_str().unwrap()]), 0);
    let page = Page::start(&repo, &[]);
    let port = page.port();
    for path in [
        "/",
        "/graph.svg",
        "/state",
        "/task?id=ok",
        "/events",
        "/nothing",
    ] {
        let path = page.with_token(path);
        // A page of another site whose name was made to point at 127.0.0.1 (DNS rebinding).
        for host in [
            format!("evil.example:{port}"),
            "evil.example".to_owned(),
            format!("127.0.0.1.evil.example:{port}"),
            format!("localhost:{}", port.parse::<u16>().unwrap() + 1),
        ] {
            assert_eq!(page.status_as(&path, &host), 421, "{path} {host}");
        }
        let expected = if path.starts_with("/nothing") {
            404
        } else {
            200
        };
        for host in [
            format!("127.0.0.1:{port}"),
            format!("localhost:{port}"),
            format!("LOCALHOST:{port}"),
            format!("[::1]:{port}"),
        ] {
            assert_eq!(page.status_as(&path, &host), expected, "{path} {host}");
        }
    }
    // Refused before the token is looked at; without a Host, nothing is answered either.
    assert_eq!(page.status_as("/", &format!("evil.example:{port}")), 421);
    let mut s = TcpStream::connect(&page.addr).unwrap();
    write!(s, "GET {} HTTP/1.1\r\n\r\n", page.with_token("/")).unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 421 "), "{answer}");
}

#[test]
fn a_page_bound_to_another_address_answers_to_that_address() {
    let repo = TestRepo::new();
    let tasks = repo.tasks(&[r#"{"id":"ok","mode":"read","run":"echo fine"}"#]);
    assert_exit(&repo.swarm(&["run", tasks.to_str().unwrap()]), 0);
    let page = Page::start(&repo, &["--bind", "127.0.0.2"]);
    assert!(page.addr.starts_with("127.0.0.2:"), "{}", page.addr);
    let port = page.port();
    let path = page.with_token("/state");
    assert_eq!(page.status_as(&path, &format!("127.0.0.2:{port}")), 200);
    assert_eq!(page.status_as(&path, &format!("localhost:{port}")), 200);
    assert_eq!(page.status_as(&path, &format!("127.0.0.3:{port}")), 421);
    assert_eq!(page.status_as(&path, &format!("evil.example:{port}")), 421);
}

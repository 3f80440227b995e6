//! The live page and the HTML report in a real browser: Debian's Chromium, driven headless
//! through the `WebDriver` protocol of `chromedriver` (plain HTTP on 127.0.0.1). Where they are
//! not installed the tests are reported as ignored, saying so (build.rs); with `CI` set they
//! run, and their absence fails them (`.ci/run` installs them).

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::{TestRepo, assert_exit, outside};

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// chromedriver and one headless Chromium session of it.
struct Browser {
    driver: Child,
    port: u16,
    session: String,
    profile: tempfile::TempDir,
}

impl Browser {
    /// Started; a test that comes here needs them (where they are missing it is ignored,
    /// but under CI), so their absence fails it.
    fn start() -> Self {
        assert!(
            std::path::Path::new(CHROMIUM).exists() && std::path::Path::new(CHROMEDRIVER).exists(),
            "{CHROMIUM} or {CHROMEDRIVER} is missing: apt-get install chromium chromium-driver (.ci/run does)"
        );
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let driver = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let profile = tempfile::tempdir().unwrap();
        let mut b = Self {
            driver,
            port,
            session: String::new(),
            profile,
        };
        // Up once it answers its status.
        for _ in 0..1000 {
            if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let args = [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            &format!("--user-data-dir={}", b.profile.path().display()),
        ];
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": CHROMIUM, "args": args},
        }}});
        let answer = b.call("POST", "/session", &caps);
        answer["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session: {answer}"))
            .clone_into(&mut b.session);
        b
    }

    /// One command of the `WebDriver` protocol; its JSON answer.
    fn call(&self, method: &str, path: &str, body: &Value) -> Value {
        let body = body.to_string();
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        write!(
            s,
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        // chromedriver keeps the connection open: the answer is as long as it says.
        let mut reader = BufReader::new(s);
        let mut length = 0;
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            if line.trim().is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap();
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
        serde_json::from_slice(&body)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&body)))
    }

    fn open(&self, url: &str) {
        self.call(
            "POST",
            &format!("/session/{}/url", self.session),
            &json!({"url": url}),
        );
    }

    /// What `script` (a function body) returns in the page.
    fn eval(&self, script: &str) -> Value {
        self.call(
            "POST",
            &format!("/session/{}/execute/sync", self.session),
            &json!({"script": script, "args": []}),
        )["value"]
            .clone()
    }

    /// Waits until `script` returns true in the page (about 60 s at most).
    fn wait_for(&self, what: &str, script: &str) {
        for _ in 0..3000 {
            if self.eval(script) == json!(true) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!(
            "the page never showed {what}: {}",
            self.eval("return document.body.innerText")
        );
    }

    /// Makes the window `width` pixels wide (and 900 high), as a user's would be.
    fn resize(&self, width: u32) {
        self.call(
            "POST",
            &format!("/session/{}/window/rect", self.session),
            &json!({"width": width, "height": 900}),
        );
        assert_eq!(
            self.eval("return window.innerWidth"),
            json!(width),
            "the window did not take the width"
        );
    }

    /// What the window shows now, as PNG, written as `name.png` to the directory named by
    /// `SWARM_SCREENSHOTS` when it is set (for a person to look at); else nothing is written.
    fn screenshot(&self, name: &str) {
        use base64::Engine as _;
        let Some(dir) = std::env::var_os("SWARM_SCREENSHOTS") else {
            return;
        };
        let shot = self.call(
            "GET",
            &format!("/session/{}/screenshot", self.session),
            &json!({}),
        );
        let png = base64::engine::general_purpose::STANDARD
            .decode(shot["value"].as_str().unwrap_or_else(|| panic!("{shot}")))
            .unwrap();
        assert!(png.starts_with(b"\x89PNG"), "not a PNG");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(std::path::Path::new(&dir).join(format!("{name}.png")), png).unwrap();
    }

    /// Clicks the first element `css` finds, as a user would.
    fn click(&self, css: &str) {
        let found = self.call(
            "POST",
            &format!("/session/{}/element", self.session),
            &json!({"using": "css selector", "value": css}),
        );
        let element = found["value"]
            .as_object()
            .and_then(|o| o.values().next())
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("no {css}: {found}"))
            .to_owned();
        self.call(
            "POST",
            &format!("/session/{}/element/{element}/click", self.session),
            &json!({}),
        );
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let _ = std::panic::catch_unwind(|| {
                self.call("DELETE", &format!("/session/{}", self.session), &json!({}))
            });
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// The class of task `id`'s box on the page.
fn class_is(id: &str, class: &str) -> String {
    format!(
        "const r = document.querySelector('#graph rect.node[data-id=\"{id}\"]'); return !!r && r.classList.contains('{class}');"
    )
}

#[test]
#[cfg_attr(
    not(has_chromium),
    ignore = "needs Chromium: /usr/bin/chromium or /usr/bin/chromedriver not found; install with apt-get install chromium chromium-driver"
)]
fn the_live_page_follows_a_run_of_ten_tasks_without_a_reload() {
    let browser = Browser::start();
    let repo = TestRepo::new();
    let go = outside(&repo, "go");
    let task = |i: usize| {
        let end = if i == 9 {
            "echo the-failure-said-this >&2; exit 3"
        } else {
            "true"
        };
        format!(
            r#"{{"id":"t{i}","title":"sleeper {i}","mode":"read","run":"while [ ! -e {go}-{i} ]; do sleep 0.01; done; {end}"}}"#,
            go = go.display()
        )
    };
    let lines: Vec<String> = (0..10).map(task).collect();
    let tasks = repo.tasks(&lines.iter().map(String::as_str).collect::<Vec<_>>());
    let mut run = repo.spawn(&["run", tasks.to_str().unwrap(), "-j", "10", "--retries", "0"]);
    while !repo.swarm(&["status"]).status.success() {
        std::thread::sleep(Duration::from_millis(10));
    }
    let web = crate::web::Page::start(&repo, &[]);
    let url = web.url();
    // Without its token the page tells nothing.
    browser.open(url.split('?').next().unwrap());
    assert_eq!(
        browser.eval("return document.body.innerText.trim()"),
        json!("forbidden")
    );
    browser.open(&url);
    browser.wait_for(
        "10 tasks",
        "return document.querySelectorAll('#graph rect.node').length === 10",
    );
    browser.wait_for("t0 running", &class_is("t0", "running"));
    // A mark in the page: a reload would lose it.
    browser.eval("window.swarmTestMark = 42; return true");
    std::fs::write(format!("{}-0", go.display()), "").unwrap();
    browser.wait_for("t0 done", &class_is("t0", "done"));
    std::fs::write(format!("{}-9", go.display()), "").unwrap();
    browser.wait_for("t9 failed", &class_is("t9", "failed"));
    assert_eq!(browser.eval("return window.swarmTestMark"), json!(42));
    browser.click("#graph rect.node[data-id=\"t9\"]");
    browser.wait_for(
        "t9's reason and transcript",
        "const t = document.getElementById('task').innerText; return t.includes('exit code 3') && t.includes('the-failure-said-this');",
    );
    for i in 1..9 {
        std::fs::write(format!("{}-{i}", go.display()), "").unwrap();
    }
    browser.wait_for(
        "every task ended",
        "return document.querySelectorAll('#graph rect.node.done').length === 9",
    );
    assert_eq!(browser.eval("return window.swarmTestMark"), json!(42));
    assert_eq!(run.wait().unwrap().code(), Some(1));
}

#[test]
#[cfg_attr(
    not(has_chromium),
    ignore = "needs Chromium: /usr/bin/chromium or /usr/bin/chromedriver not found; install with apt-get install chromium chromium-driver"
)]
fn a_page_refused_its_event_stream_asks_again_and_follows_the_run() {
    let browser = Browser::start();
    let repo = TestRepo::new();
    let run = crate::web::WaitingRun::start(&repo);
    // With 128 descriptors, 16 streams at most: these take them all.
    let web = crate::web::Page::start_with_descriptors(&repo, 128, &[]);
    let taken: Vec<_> = (0..16).map(|_| web.stream()).collect();
    assert!(web.stream().1.starts_with("HTTP/1.1 503 "));
    browser.open(&web.url());
    browser.wait_for("the task running", &class_is("wait", "running"));
    browser.wait_for(
        "that it does not follow the run",
        "return document.getElementById('live').innerText.includes('too many pages')",
    );
    // Room again, then the run ends: the page sees it only through a stream it opens anew.
    drop(taken);
    run.finish();
    browser.wait_for("the task done", &class_is("wait", "done"));
    assert_eq!(
        browser.eval("return document.getElementById('live').innerText"),
        json!("")
    );
}

#[test]
#[cfg_attr(
    not(has_chromium),
    ignore = "needs Chromium: /usr/bin/chromium or /usr/bin/chromedriver not found; install with apt-get install chromium chromium-driver"
)]
fn the_html_report_of_a_parked_writer_opens_with_its_graph_and_needs_attention() {
    let browser = Browser::start();
    let repo = TestRepo::new();
    let tasks = crate::graph_svg::parked_plan(&repo, false);
    let page = outside(&repo, "report.html");
    let out = repo.swarm(&[
        "run",
        tasks.to_str().unwrap(),
        "--final-out",
        page.to_str().unwrap(),
    ]);
    assert_exit(&out, 3);
    browser.open(&format!("file://{}", page.display()));
    browser.wait_for(
        "the graph",
        "return document.querySelectorAll('svg rect.node').length === 2",
    );
    browser.wait_for("b parked", "const r = document.querySelector('rect.node[data-id=\"b\"]'); return r.classList.contains('parked');");
    browser.wait_for(
        "Needs attention",
        "return [...document.querySelectorAll('h2')].some(h => h.innerText === 'Needs attention');",
    );
    browser.wait_for(
        "the timeline",
        "return document.querySelectorAll('rect.attempt').length >= 2",
    );
}

/// A plan four levels deep, as a planner makes one: three researchers, two analysts over them,
/// a writer of prose over those and the reducer last, each a `run` task that only prints.
fn four_levels(repo: &TestRepo) -> std::path::PathBuf {
    let task = |id: &str, title: &str, lane: &str, deps: &[&str]| {
        json!({"id": id, "title": title, "lane": lane, "mode": "read", "deps": deps, "run": format!("echo {id} did its part")})
            .to_string()
    };
    repo.tasks(&[
        &task(
            "gather-sources",
            "collect the sources of the claim",
            "researcher",
            &[],
        ),
        &task(
            "read-the-code",
            "read how the code does it now",
            "researcher",
            &[],
        ),
        &task(
            "survey-issues",
            "survey the open issues about it",
            "researcher",
            &[],
        ),
        &task(
            "weigh-options",
            "weigh the options found",
            "analyst",
            &["gather-sources", "read-the-code"],
        ),
        &task(
            "find-risks",
            "find the risks of each option",
            "analyst",
            &["read-the-code", "survey-issues"],
        ),
        &task(
            "draft-proposal",
            "draft the proposal",
            "writer",
            &["weigh-options", "find-risks"],
        ),
        &task(
            "final-report",
            "the report for the user",
            "reducer",
            &["draft-proposal"],
        ),
    ])
}

/// How the graph of the page open in `browser` fits its window: each box of the graph checked
/// against the window and every box around it that clips what overflows it (the graph's own
/// holder, the SVG itself). A JSON object: `nodes`, `clipped` (the ids of boxes not wholly
/// shown), `sideways` (how far the document scrolls sideways), `scale` (a box's drawn width
/// over its width in the SVG: its text is drawn that much smaller), `timelines` (how often
/// "Timeline" is written on the page).
fn fit(browser: &Browser) -> Value {
    browser.eval(
        "const view = document.documentElement.clientWidth;
         const nodes = [...document.querySelectorAll('svg rect.node')];
         const clipped = nodes.filter((r) => {
           const b = r.getBoundingClientRect();
           let left = 0, right = view;
           for (let p = r.parentElement; p && p !== document.documentElement; p = p.parentElement) {
             if (getComputedStyle(p).overflowX !== 'visible') {
               const pb = p.getBoundingClientRect();
               left = Math.max(left, pb.left);
               right = Math.min(right, pb.right);
             }
           }
           return b.width === 0 || b.left < left - 0.5 || b.right > right + 0.5;
         }).map((r) => r.getAttribute('data-id'));
         const scale = nodes.length ? Math.min(...nodes.map((r) => r.getBoundingClientRect().width / r.width.baseVal.value)) : 0;
         return {
           nodes: nodes.length,
           clipped,
           sideways: document.documentElement.scrollWidth - view,
           scale,
           timelines: (document.body.innerText.match(/Timeline/g) || []).length,
         };",
    )
}

/// Asserts that the whole graph of `nodes` boxes shows at the window's width, drawn large
/// enough to read, and that "Timeline" is written once.
fn assert_fits(browser: &Browser, width: u32, nodes: u64) {
    let fit = fit(browser);
    assert_eq!(fit["nodes"], nodes, "at {width} px: {fit}");
    assert_eq!(
        fit["clipped"],
        json!([]),
        "at {width} px, boxes cut off: {fit}"
    );
    assert_eq!(
        fit["sideways"], 0,
        "at {width} px the page scrolls sideways: {fit}"
    );
    // 12 px text drawn at 9 px or more.
    assert!(
        fit["scale"].as_f64().unwrap() >= 0.75,
        "at {width} px the graph is drawn too small to read: {fit}"
    );
    assert_eq!(fit["timelines"], 1, "at {width} px: {fit}");
}

#[test]
#[cfg_attr(
    not(has_chromium),
    ignore = "needs Chromium: /usr/bin/chromium or /usr/bin/chromedriver not found; install with apt-get install chromium chromium-driver"
)]
fn the_live_page_shows_the_whole_graph_at_1400_and_1000_pixels_and_one_timeline() {
    let browser = Browser::start();
    let repo = TestRepo::new();
    let tasks = four_levels(&repo);
    assert_exit(&repo.swarm(&["run", tasks.to_str().unwrap()]), 0);
    let web = crate::web::Page::start(&repo, &[]);
    browser.open(&web.url());
    browser.wait_for(
        "the header the script keeps",
        "return document.getElementById('counts').innerText === '7 done' && document.querySelectorAll('rect.attempt').length === 7",
    );
    for width in [1400, 1000] {
        browser.resize(width);
        assert_fits(&browser, width, 7);
        browser.screenshot(&format!("live-page-{width}"));
    }
}

#[test]
#[cfg_attr(
    not(has_chromium),
    ignore = "needs Chromium: /usr/bin/chromium or /usr/bin/chromedriver not found; install with apt-get install chromium chromium-driver"
)]
fn the_html_report_shows_the_whole_graph_at_1400_and_1000_pixels_and_one_timeline() {
    let browser = Browser::start();
    let repo = TestRepo::new();
    let tasks = four_levels(&repo);
    let page = outside(&repo, "report.html");
    let out = repo.swarm(&[
        "run",
        tasks.to_str().unwrap(),
        "--final-out",
        page.to_str().unwrap(),
    ]);
    assert_exit(&out, 0);
    browser.open(&format!("file://{}", page.display()));
    browser.wait_for(
        "the graph",
        "return document.querySelectorAll('svg rect.node').length === 7",
    );
    for width in [1400, 1000] {
        browser.resize(width);
        assert_fits(&browser, width, 7);
        browser.eval("document.querySelector('figure.graph').scrollIntoView(); return true");
        browser.screenshot(&format!("html-report-{width}"));
    }
}

//! The mirror: a run's events sent to Telegram chats and commands read back, against a fake Bot
//! API on loopback that records what it is sent, answers the first `getUpdates` with scripted
//! messages and holds every later long poll until the test ends (or a few seconds pass).

use std::io::BufReader;
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Output};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};

use crate::model_server::http::{Loopback, lock, read_body, read_head, write_response};
use crate::{TestRepo, assert_exit, outside, run_id, stderr, stdout};

const TOKEN: &str = "4242424:fake-bot-token-9c1e7a";
const CHAT: i64 = 4242;
const STRANGER: i64 = 9999;
/// How long the fake holds a long poll with nothing to hand out.
const HOLD: Duration = Duration::from_secs(3);

#[derive(Default)]
struct World {
    /// Messages to hand out at the first `getUpdates`: chat and text.
    scripted: Vec<(i64, String)>,
    handed: bool,
    /// Each `sendMessage`: chat and text.
    sent: Vec<(i64, String)>,
    /// Every request, by its method, token-checked.
    requests: Vec<String>,
    ending: bool,
}

struct FakeBot {
    world: Arc<(Mutex<World>, Condvar)>,
    server: Option<Loopback>,
}

impl FakeBot {
    fn start(scripted: &[(i64, &str)]) -> FakeBot {
        let world = Arc::new((
            Mutex::new(World {
                scripted: scripted
                    .iter()
                    .map(|(c, t)| (*c, (*t).to_owned()))
                    .collect(),
                ..World::default()
            }),
            Condvar::new(),
        ));
        let shared = Arc::clone(&world);
        let server = Loopback::start("fake-bot", move |stream| serve(&shared, stream));
        FakeBot {
            world,
            server: Some(server),
        }
    }

    fn api(&self) -> String {
        format!("http://{}", self.server.as_ref().unwrap().addr())
    }

    fn sent(&self) -> Vec<(i64, String)> {
        lock(&self.world.0).sent.clone()
    }

    fn requests(&self) -> Vec<String> {
        lock(&self.world.0).requests.clone()
    }

    /// Waits until a message sent to `chat` starts with `start`, or `swarm` exits; whether
    /// one came.
    fn wait_sent(&self, chat: i64, start: &str, swarm: &mut Child) -> bool {
        let (world, changed) = &*self.world;
        let mut w = lock(world);
        loop {
            if w.sent
                .iter()
                .any(|(c, t)| *c == chat && t.starts_with(start))
            {
                return true;
            }
            if swarm.try_wait().expect("swarm's status").is_some() {
                return false;
            }
            w = changed
                .wait_timeout(w, Duration::from_millis(100))
                .unwrap()
                .0;
        }
    }
}

impl Drop for FakeBot {
    fn drop(&mut self) {
        lock(&self.world.0).ending = true;
        self.world.1.notify_all();
        drop(self.server.take());
    }
}

fn serve(world: &Arc<(Mutex<World>, Condvar)>, stream: TcpStream) {
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    while let Ok(Some(head)) = read_head(&mut reader) {
        let Ok(body) = read_body(&mut reader, &head) else {
            return;
        };
        let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let prefix = format!("/bot{TOKEN}/");
        let Some(method) = head.target.strip_prefix(&prefix).map(str::to_owned) else {
            let answer = json!({"ok": false, "error_code": 401, "description": "Unauthorized"});
            let _ = write_response(&mut writer, 401, &[], answer.to_string().as_bytes(), false);
            continue;
        };
        let (state, changed) = &**world;
        lock(state).requests.push(method.clone());
        let result = match method.as_str() {
            "sendMessage" => {
                let mut w = lock(state);
                w.sent.push((
                    body["chat_id"].as_i64().expect("a chat_id"),
                    body["text"].as_str().expect("a text").to_owned(),
                ));
                changed.notify_all();
                json!({"message_id": w.sent.len(), "chat": {"id": body["chat_id"]}, "date": now(), "text": body["text"]})
            }
            "getUpdates" => {
                let mut w = lock(state);
                if w.handed {
                    // A long poll with nothing new: held until the test ends or a while passes.
                    w = changed
                        .wait_timeout_while(w, HOLD, |w| !w.ending)
                        .unwrap()
                        .0;
                    drop(w);
                    json!([])
                } else {
                    w.handed = true;
                    let date = now();
                    let updates: Vec<Value> = w
                        .scripted
                        .iter()
                        .enumerate()
                        .map(|(i, (chat, text))| {
                            json!({
                                "update_id": 100 + i,
                                "message": {
                                    "message_id": i + 1,
                                    "from": {"id": chat, "is_bot": false, "first_name": "Ada"},
                                    "chat": {"id": chat, "type": "private"},
                                    "date": date,
                                    "text": text,
                                }
                            })
                        })
                        .collect();
                    json!(updates)
                }
            }
            other => panic!("the mirror called {other}"),
        };
        let answer = json!({"ok": true, "result": result});
        if write_response(&mut writer, 200, &[], answer.to_string().as_bytes(), false).is_err() {
            return;
        }
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// swarm with the mirror's variables set for `fake` and chat `CHAT`.
fn mirrored(repo: &TestRepo, fake: &FakeBot) -> std::process::Command {
    let mut cmd = repo.swarm_cmd();
    cmd.env("SWARM_TELEGRAM_TOKEN", TOKEN)
        .env("SWARM_TELEGRAM_CHAT_IDS", CHAT.to_string())
        .env("SWARM_TELEGRAM_API", fake.api());
    cmd
}

/// `swarm run TASKS`, mirrored to `fake`, started with its output captured.
fn start_mirrored(repo: &TestRepo, fake: &FakeBot, tasks: &std::path::Path) -> std::process::Child {
    mirrored(repo, fake)
        .args(["run", tasks.to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// Two writers changing one line of `src/lib.rs`, the second after the first is merged (so it
/// is parked), and a task after the second.
fn conflict_tasks(repo: &TestRepo) -> std::path::PathBuf {
    repo.tasks(&[
        r#"{"id":"a","run":"printf 'pub fn one() -> u32 {\n    2\n}\n' > src/lib.rs"}"#,
        &json!({
            "id": "b",
            "run": format!(
                "{}; printf 'pub fn one() -> u32 {{\\n    3\\n}}\\n' > src/lib.rs",
                crate::after_event(repo, "merged", "a")
            ),
        })
        .to_string(),
        r#"{"id":"after","run":"echo after > after.txt","deps":["b"]}"#,
    ])
}

/// One writer that waits for the test to create `release` before it writes `out.txt`.
fn waiting_task(repo: &TestRepo, release: &Path) -> std::path::PathBuf {
    repo.tasks(&[&json!({
        "id": "w",
        "run": format!(
            "for _ in $(seq 6000); do test -e '{}' && break; sleep 0.01; done; echo done > out.txt",
            release.display()
        ),
    })
    .to_string()])
}

fn finish(swarm: Child) -> Output {
    swarm.wait_with_output().expect("swarm's output")
}

fn queued(repo: &TestRepo) -> Vec<Value> {
    let out = repo.swarm(&["queue", "list", "--json"]);
    assert_exit(&out, 0);
    serde_json::from_slice::<Vec<Value>>(&out.stdout).expect("the queue as JSON")
}

/// Every file under `dir` (recursively), as bytes, but git's objects (compressed).
fn files_under(dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.ends_with("objects") {
            continue;
        }
        if path.is_dir() {
            files_under(&path, out);
        } else if let Ok(bytes) = std::fs::read(&path) {
            out.push((path.display().to_string(), bytes));
        }
    }
}

fn holds_token(bytes: &[u8]) -> bool {
    bytes.windows(TOKEN.len()).any(|w| w == TOKEN.as_bytes())
}

#[test]
fn a_parked_writers_run_is_mirrored_start_escalation_and_end() {
    let repo = TestRepo::new();
    let fake = FakeBot::start(&[]);
    let tasks = conflict_tasks(&repo);

    let out = mirrored(&repo, &fake)
        .args(["run", tasks.to_str().unwrap(), "-j", "2"])
        .output()
        .unwrap();

    assert_exit(&out, 3);
    let run = run_id(&repo);
    let sent = fake.sent();
    assert!(sent.iter().all(|(chat, _)| *chat == CHAT), "{sent:?}");
    let texts: Vec<&str> = sent.iter().map(|(_, t)| t.as_str()).collect();
    assert!(texts.len() >= 3, "{texts:#?}");
    let start = texts[0];
    assert!(
        start.contains(&format!("swarm run {run} started")),
        "{start}"
    );
    assert!(
        start.contains("tasks.jsonl") && start.contains("(3 tasks)"),
        "{start}"
    );
    let parked = format!("swarm/{run}-b");
    let escalation = texts
        .iter()
        .find(|t| t.contains("task b is parked"))
        .unwrap_or_else(|| panic!("no escalation in {texts:#?}"));
    assert!(escalation.contains("src/lib.rs"), "{escalation}");
    assert!(
        escalation.contains(&format!("git switch swarm/{run} && git merge {parked}")),
        "{escalation}"
    );
    assert!(
        escalation.contains(&format!("git diff swarm/{run}...{parked}")),
        "{escalation}"
    );
    let end = texts[texts.len() - 1];
    assert!(end.starts_with("swarm run ended"), "{end}");
    // The summary the terminal shows, landing included.
    for line in stdout(&out).lines() {
        assert!(end.contains(line), "{line:?} is not in {end}");
    }
    assert!(
        end.contains(&format!("parked: b on branch {parked}")),
        "{end}"
    );
}

#[test]
fn a_goal_from_the_allowed_chat_is_queued_while_the_run_goes() {
    let repo = TestRepo::new();
    let fake = FakeBot::start(&[(CHAT, "/goal write the changelog")]);
    let release = outside(&repo, "release-goal");
    let tasks = waiting_task(&repo, &release);

    let mut swarm = start_mirrored(&repo, &fake, &tasks);
    let answered = fake.wait_sent(CHAT, "queued goal", &mut swarm);
    std::fs::write(&release, "").unwrap();
    let out = finish(swarm);

    assert!(
        answered,
        "no answer to /goal: {:#?}\n{}",
        fake.sent(),
        stderr(&out)
    );
    assert_exit(&out, 0);
    assert_eq!(repo.read("out.txt"), "done\n");
    let queue = queued(&repo);
    assert_eq!(queue.len(), 1, "{queue:?}");
    assert_eq!(queue[0]["text"], "write the changelog");
    // The run's end went to the chat, after the answer.
    let sent = fake.sent();
    assert!(
        sent.last().unwrap().1.starts_with("swarm run ended"),
        "{sent:?}"
    );
}

#[test]
fn a_message_from_another_chat_changes_nothing_and_is_noted() {
    let repo = TestRepo::new();
    let fake = FakeBot::start(&[(STRANGER, "/goal delete everything"), (CHAT, "/status")]);
    let release = outside(&repo, "release-stranger");
    let tasks = waiting_task(&repo, &release);

    let mut swarm = start_mirrored(&repo, &fake, &tasks);
    // Updates are taken in order: the answer to /status comes after the stranger's message.
    let answered = fake.wait_sent(CHAT, "run ", &mut swarm);
    std::fs::write(&release, "").unwrap();
    let out = finish(swarm);

    assert!(
        answered,
        "no answer to /status: {:#?}\n{}",
        fake.sent(),
        stderr(&out)
    );
    assert_exit(&out, 0);
    let status = fake
        .sent()
        .into_iter()
        .find(|(_, t)| t.starts_with("run "))
        .unwrap()
        .1;
    assert!(status.contains("1 task: "), "{status}");
    assert!(queued(&repo).is_empty());
    assert!(
        fake.sent().iter().all(|(chat, _)| *chat != STRANGER),
        "{:?}",
        fake.sent()
    );
    let run = run_id(&repo);
    let log = std::fs::read_to_string(repo.swarm_dir().join("runs").join(&run).join("mirror.log"))
        .expect("the mirror's notes");
    assert!(
        log.contains(&format!("ignored a message from chat {STRANGER}")),
        "{log}"
    );
}

#[test]
fn the_token_is_in_nothing_swarm_writes() {
    let repo = TestRepo::new();
    let fake = FakeBot::start(&[(CHAT, "/status"), (STRANGER, "/stop")]);
    let tasks = conflict_tasks(&repo);
    let report = outside(&repo, "mirror-report.md");
    let hook_log = outside(&repo, "mirror-escalations.jsonl");
    let hook = format!("cat >> '{}'", hook_log.display());

    let out = mirrored(&repo, &fake)
        .args([
            "run",
            tasks.to_str().unwrap(),
            "-j",
            "2",
            "--on-escalate",
            &hook,
        ])
        .args(["--final-out", report.to_str().unwrap()])
        .output()
        .unwrap();
    assert_exit(&out, 3);
    // A run of the same repository whose API refuses the token says so without it.
    let more = repo.tasks(&[r#"{"id":"w","run":"echo done > out.txt"}"#]);
    let refused = repo
        .swarm_cmd()
        .env("SWARM_TELEGRAM_TOKEN", format!("{TOKEN}x"))
        .env("SWARM_TELEGRAM_CHAT_IDS", CHAT.to_string())
        .env("SWARM_TELEGRAM_API", fake.api())
        .args(["--json", "run", more.to_str().unwrap()])
        .output()
        .unwrap();
    assert_exit(&refused, 0);

    let mut written = Vec::new();
    files_under(&repo.root, &mut written);
    written.push(("report".to_owned(), std::fs::read(&report).unwrap()));
    written.push(("hook".to_owned(), std::fs::read(&hook_log).unwrap()));
    for o in [&out, &refused] {
        written.push(("stdout".to_owned(), o.stdout.clone()));
        written.push(("stderr".to_owned(), o.stderr.clone()));
    }
    assert!(written.iter().any(|(p, _)| p.ends_with("events.jsonl")));
    assert!(written.iter().any(|(p, _)| p.ends_with("mirror.log")));
    for (path, bytes) in &written {
        assert!(!holds_token(bytes), "the token is in {path}");
    }
    assert!(
        stderr(&refused).contains("dropped messages"),
        "{}",
        stderr(&refused)
    );
}

#[test]
fn with_a_variable_unset_the_mirror_sends_nothing() {
    let repo = TestRepo::new();
    let fake = FakeBot::start(&[(CHAT, "/stop")]);
    let tasks = repo.tasks(&[r#"{"id":"w","run":"echo done > out.txt"}"#]);

    let no_chats = repo
        .swarm_cmd()
        .env("SWARM_TELEGRAM_TOKEN", TOKEN)
        .env("SWARM_TELEGRAM_API", fake.api())
        .args(["run", tasks.to_str().unwrap()])
        .output()
        .unwrap();
    assert_exit(&no_chats, 0);
    let no_token = repo
        .swarm_cmd()
        .env("SWARM_TELEGRAM_CHAT_IDS", CHAT.to_string())
        .env("SWARM_TELEGRAM_API", fake.api())
        .args(["run", tasks.to_str().unwrap()])
        .output()
        .unwrap();
    assert_exit(&no_token, 0);

    assert_eq!(fake.requests(), Vec::<String>::new());
}

#[test]
fn a_chat_id_that_is_not_an_integer_is_refused_before_anything_runs() {
    let repo = TestRepo::new();
    let fake = FakeBot::start(&[]);
    let tasks = repo.tasks(&[r#"{"id":"w","run":"echo done > out.txt"}"#]);

    let out = mirrored(&repo, &fake)
        .env("SWARM_TELEGRAM_CHAT_IDS", "4242,@my_channel")
        .args(["run", tasks.to_str().unwrap()])
        .output()
        .unwrap();

    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("SWARM_TELEGRAM_CHAT_IDS"),
        "{}",
        stderr(&out)
    );
    assert!(!repo.root.join("out.txt").exists());
    assert!(!repo.swarm_dir().join("runs").exists());
    assert_eq!(fake.requests(), Vec::<String>::new());
}

#[test]
fn an_unreachable_bot_api_changes_nothing_of_the_run() {
    let repo = TestRepo::new();
    // A port nothing listens on.
    let closed = {
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
        listener.local_addr().unwrap()
    };
    let tasks = repo.tasks(&[r#"{"id":"w","run":"echo done > out.txt"}"#]);

    let out = repo
        .swarm_cmd()
        .env("SWARM_TELEGRAM_TOKEN", TOKEN)
        .env("SWARM_TELEGRAM_CHAT_IDS", CHAT.to_string())
        .env("SWARM_TELEGRAM_API", format!("http://{closed}"))
        .args(["run", tasks.to_str().unwrap()])
        .output()
        .unwrap();

    assert_exit(&out, 0);
    assert_eq!(repo.read("out.txt"), "done\n");
    let status = crate::status_json(&repo);
    assert_eq!(status["run"]["status"], "finished", "{status}");
    assert_eq!(status["tasks"][0]["status"], "done", "{status}");
    let err = stderr(&out);
    assert!(
        err.contains("the Telegram mirror dropped messages"),
        "{err}"
    );
    assert!(!err.contains(TOKEN), "{err}");
}

#[test]
fn stop_from_the_allowed_chat_stops_the_run_resumably() {
    let repo = TestRepo::new();
    let fake = FakeBot::start(&[(CHAT, "/stop")]);
    let release = outside(&repo, "release-stop");
    let tasks = repo.tasks(&[
        &json!({
            "id": "w",
            "run": format!(
                "for _ in $(seq 6000); do test -e '{}' && break; sleep 0.01; done; echo done > out.txt",
                release.display()
            ),
        })
        .to_string(),
        r#"{"id":"later","run":"echo later > later.txt","deps":["w"]}"#,
    ]);

    let mut swarm = start_mirrored(&repo, &fake, &tasks);
    let answered = fake.wait_sent(CHAT, "stopping run", &mut swarm);
    std::fs::write(&release, "").unwrap();
    let out = finish(swarm);

    assert!(
        answered,
        "no answer to /stop: {:#?}\n{}",
        fake.sent(),
        stderr(&out)
    );
    assert_exit(&out, 75);
    let run = run_id(&repo);
    let end = fake.sent().last().unwrap().1.clone();
    assert!(end.contains(&format!("swarm resume {run}")), "{end}");
    // What was not started waits for the resume.
    let status = crate::status_json(&repo);
    let later = status["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == "later")
        .unwrap()
        .clone();
    assert_eq!(later["status"], "pending", "{status}");

    // Resumed, mirrored again: the chat is told it was taken up again, not started anew, and
    // the `/stop` it sent before is not acted on a second time.
    let out = mirrored(&repo, &fake)
        .args(["resume", &run])
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let sent = fake.sent();
    assert!(
        sent.iter()
            .any(|(_, t)| t.starts_with(&format!("swarm run {run} resumed: "))),
        "{sent:#?}"
    );
    assert_eq!(
        sent.iter()
            .filter(|(_, t)| t.starts_with(&format!("swarm run {run} started: ")))
            .count(),
        1,
        "{sent:#?}"
    );
    assert_eq!(
        std::fs::read_to_string(repo.root.join("later.txt")).unwrap(),
        "later\n"
    );
}

#[test]
fn a_pause_at_a_usage_limit_is_mirrored_with_until_when() {
    let repo = TestRepo::new();
    let fake = FakeBot::start(&[]);
    let fakes = crate::fake_agents::FakeAgents::beside(&repo);
    fakes.set_mode("claude", "usage-limit-once");
    let tasks = repo.tasks(&[r#"{"id":"a","prompt":"RESULT: a","lane":"analyst"}"#]);

    let out = mirrored(&repo, &fake)
        .env("PATH", fakes.path_env())
        .args([
            "run",
            tasks.to_str().unwrap(),
            "--agent",
            "claude",
            "--retries",
            "0",
        ])
        .output()
        .unwrap();

    assert_exit(&out, 0);
    let run = run_id(&repo);
    let sent = fake.sent();
    let pause = sent
        .iter()
        .find(|(_, t)| t.contains("paused at a usage limit"))
        .unwrap_or_else(|| panic!("no pause in {sent:#?}"));
    assert!(
        pause.1.starts_with(&format!(
            "swarm run {run} paused at a usage limit: no new attempts until "
        )),
        "{}",
        pause.1
    );
    assert!(pause.1.contains(" UTC (in "), "{}", pause.1);
}

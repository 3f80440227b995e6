//! Several goals in one run, against the fake OpenAI-compatible server: the dependency pass,
//! planning a goal once the goals it needs are merged, skips, deadlock, reports, and the
//! durable queue. Tasks run through an `exec:` agent script, so their timing is in the test's
//! hands. The helpers here serve every module below.

mod dependencies;
mod input;
mod queue;
mod spawning;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::fake_llm::{FakeLlm, Reply, Request, has_tool, planned_goal};
use crate::{TestRepo, outside};

const GOAL_A: &str = "GOAL-A: add alpha.txt";
const GOAL_B: &str = "GOAL-B: describe alpha.txt in beta.txt";
const GOAL_C: &str = "GOAL-C: add gamma.txt";

/// The agent: `WRITE <file>` writes the file (after a pause, with the task's id in it) and
/// reports it; `REDUCE <X>` answers with goal X's result and what its prompt says is missing;
/// `FAIL` fails. Each start is logged. The writer of the task `AGENT_GATE_TASK` first runs the
/// shell words `AGENT_GATE` (a gate's).
const AGENT: &str = r#"prompt=$(cat)
echo "start $SWARM_TASK_ID $SWARM_ATTEMPT" >> "$AGENT_LOG"
case "$prompt" in
  *"WRITE "*)
    f=$(printf '%s\n' "$prompt" | sed -n 's/.*WRITE \([A-Za-z0-9._-]*\).*/\1/p' | head -n 1)
    [ "$SWARM_TASK_ID" != "${AGENT_GATE_TASK:-}" ] || eval "$AGENT_GATE"
    sleep "${AGENT_PAUSE:-0.4}"
    printf 'written by %s\n' "$SWARM_TASK_ID" > "$f"
    echo "wrote $f" ;;
  *"REDUCE "*)
    g=$(printf '%s\n' "$prompt" | sed -n 's/.*REDUCE \([A-Z]\).*/\1/p' | head -n 1)
    echo "RESULT-$g: goal $g is finished"
    printf '%s\n' "$prompt" | sed -n 's/^- \(.*\)$/missing \1/p' ;;
  *"FAIL"*) echo "failing on purpose" >&2; exit 3 ;;
  *) echo "nothing to do" ;;
esac
echo "end $SWARM_TASK_ID" >> "$AGENT_LOG"
"#;

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

fn letter(text: &str) -> Option<char> {
    ["A", "B", "C", "D"]
        .iter()
        .find(|l| text.contains(&format!("GOAL-{l}")))
        .and_then(|l| l.chars().next())
}

/// The user message of a request.
pub fn user_text(req: &Request) -> String {
    req.messages()
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// A goal's plan: one writer per file, then a reducer.
fn plan_for(goal: char, files: &[&str]) -> Reply {
    let lower = goal.to_ascii_lowercase();
    let mut tasks: Vec<Value> = files
        .iter()
        .enumerate()
        .map(|(n, f)| {
            json!({"id": format!("{lower}w{n}"), "prompt": format!("WRITE {f}"), "deps": [], "lane": "coder"})
        })
        .collect();
    let deps: Vec<String> = (0..files.len()).map(|n| format!("{lower}w{n}")).collect();
    tasks.push(json!({"id": format!("{lower}r"), "prompt": format!("REDUCE {goal}"), "deps": deps, "lane": "reducer"}));
    Reply::ToolCalls(vec![(
        format!("plan-{goal}"),
        "submit_plan".into(),
        json!({ "tasks": tasks }),
    )])
}

fn needs_call(edges: &Value) -> Reply {
    Reply::ToolCalls(vec![(
        "needs-1".into(),
        "submit_dependencies".into(),
        json!({ "dependencies": edges }),
    )])
}

/// When each goal's planning request arrived (wall clock, ms) and what it said.
type Planning = Arc<Mutex<Vec<(char, i64, String)>>>;

/// A server that answers the dependency pass with `edges` (or `needs` when given) and plans
/// each goal with `plans`.
fn server(
    needs: impl Fn() -> Reply + Send + Sync + 'static,
    plans: impl Fn(char) -> Reply + Send + Sync + 'static,
) -> (FakeLlm, Planning) {
    let planning: Planning = Arc::default();
    let seen = planning.clone();
    let llm = FakeLlm::start(move |req, _| {
        if has_tool(req, "submit_dependencies") {
            return needs();
        }
        if has_tool(req, "submit_plan") {
            let text = user_text(req);
            let goal = letter(&planned_goal(req)).expect("a planning request names its goal");
            seen.lock().unwrap().push((goal, now_ms(), text));
            return plans(goal);
        }
        Reply::Text("unexpected request".into())
    });
    (llm, planning)
}

struct Setup {
    repo: TestRepo,
    agent: PathBuf,
    log: PathBuf,
}

fn setup() -> Setup {
    let repo = TestRepo::new();
    let agent = outside(&repo, "agent.sh");
    std::fs::write(&agent, AGENT).unwrap();
    let log = outside(&repo, "agent.log");
    Setup { repo, agent, log }
}

impl Setup {
    fn cmd(&self, llm: &FakeLlm) -> std::process::Command {
        let mut cmd = self.repo.swarm_cmd();
        cmd.env("SWARM_API_BASE", llm.base_url())
            .env("AGENT_LOG", &self.log)
            .env("SWARM_AGENT", format!("exec:sh {}", self.agent.display()));
        cmd
    }

    fn swarm(&self, llm: &FakeLlm, args: &[&str]) -> Output {
        self.cmd(llm).args(args).output().expect("running swarm")
    }

    fn starts(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.starts_with("start "))
            .map(|l| l.split(' ').nth(1).unwrap().to_owned())
            .collect()
    }
}

/// `--goal G` for each goal, then `--final-out REPORT`, then `extra`.
fn goals_args<'a>(goals: &[&'a str], report: &'a Path, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args: Vec<&str> = goals.iter().flat_map(|g| ["--goal", g]).collect();
    args.extend(["--final-out", report.to_str().unwrap()]);
    args.extend(extra);
    args
}

fn events(repo: &TestRepo) -> Vec<Value> {
    let runs = repo.swarm_dir().join("runs");
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(runs) else {
        return out;
    };
    for entry in entries {
        let path = entry.unwrap().path().join("events.jsonl");
        let text = std::fs::read_to_string(path).unwrap_or_default();
        out.extend(text.lines().filter_map(|l| serde_json::from_str(l).ok()));
    }
    out
}

fn at(e: &Value) -> i64 {
    e["at"].as_i64().unwrap()
}

/// When `task` started and when it succeeded (ms), from the event log.
fn span(events: &[Value], task: &str) -> (i64, i64) {
    let when = |kind: &str| {
        let e = events
            .iter()
            .find(|e| e["kind"] == kind && e["task"] == task);
        at(e.unwrap_or_else(|| panic!("no {kind} event for {task}")))
    };
    (when("task_started"), when("task_succeeded"))
}

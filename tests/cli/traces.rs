//! A run exported as an OpenTelemetry trace, against a collector stand-in on loopback that
//! decodes each OTLP/HTTP request with the OpenTelemetry project's published protobuf
//! definitions (`opentelemetry-proto`): the span tree of a run with two goals, a retry, a gate
//! run and a parked writer, with its `GenAI` attribute names and token counts; `TRACEPARENT` in
//! an exec agent's environment; a resumed run's spans in the same trace; and a collector that
//! is down, answers 500 or never answers, which changes nothing of how the run ends.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::BufReader;
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::{Arc, Condvar, Mutex};

use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use prost::Message as _;
use serde_json::json;

use crate::fake_agents::FakeAgents;
use crate::fake_llm::{FakeLlm, Reply, has_tool, planned_goal};
use crate::model_server::http::{Loopback, lock, read_body, read_head, write_response};
use crate::{TestRepo, assert_exit, outside, stderr, wait_until};

/// What the collector answers.
#[derive(Clone, Copy, PartialEq)]
enum Answer {
    Ok,
    /// An error status for every request.
    Status(u16),
    /// No answer at all, until the test ends: a collector that hangs.
    Never,
}

#[derive(Default)]
struct Seen {
    requests: Vec<(Vec<(String, String)>, ExportTraceServiceRequest)>,
    ending: bool,
}

struct Collector {
    seen: Arc<(Mutex<Seen>, Condvar)>,
    server: Option<Loopback>,
}

impl Collector {
    fn start(answer: Answer) -> Collector {
        let seen: Arc<(Mutex<Seen>, Condvar)> = Arc::default();
        let shared = Arc::clone(&seen);
        let server = Loopback::start("fake-collector", move |stream| {
            serve(&shared, answer, stream);
        });
        Collector {
            seen,
            server: Some(server),
        }
    }

    fn endpoint(&self) -> String {
        format!("http://{}", self.server.as_ref().unwrap().addr())
    }

    /// Every span received, in the order received.
    fn spans(&self) -> Vec<Got> {
        let seen = lock(&self.seen.0);
        let mut out = Vec::new();
        for (_, request) in &seen.requests {
            for rs in &request.resource_spans {
                let resource: BTreeMap<String, String> = rs
                    .resource
                    .iter()
                    .flat_map(|r| &r.attributes)
                    .map(|kv| (kv.key.clone(), text(kv.value.as_ref())))
                    .collect();
                for ss in &rs.scope_spans {
                    for s in &ss.spans {
                        out.push(Got {
                            name: s.name.clone(),
                            trace: hex(&s.trace_id),
                            id: hex(&s.span_id),
                            parent: hex(&s.parent_span_id),
                            attributes: s
                                .attributes
                                .iter()
                                .map(|kv| (kv.key.clone(), text(kv.value.as_ref())))
                                .collect(),
                            events: s.events.iter().map(|e| e.name.clone()).collect(),
                            error: s.status.as_ref().is_some_and(|st| st.code == 2),
                            start: s.start_time_unix_nano,
                            end: s.end_time_unix_nano,
                            resource: resource.clone(),
                        });
                    }
                }
            }
        }
        out
    }

    fn headers(&self) -> Vec<Vec<(String, String)>> {
        lock(&self.seen.0)
            .requests
            .iter()
            .map(|(h, _)| h.clone())
            .collect()
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        lock(&self.seen.0).ending = true;
        self.seen.1.notify_all();
        self.server.take();
    }
}

fn serve(seen: &(Mutex<Seen>, Condvar), answer: Answer, stream: TcpStream) {
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    while let Ok(Some(head)) = read_head(&mut reader) {
        let Ok(body) = read_body(&mut reader, &head) else {
            return;
        };
        assert_eq!(head.method, "POST");
        assert_eq!(head.target, "/v1/traces");
        assert_eq!(head.header("content-type"), Some("application/x-protobuf"));
        let request = ExportTraceServiceRequest::decode(&body[..])
            .expect("a request the published definitions decode");
        let mut w = lock(&seen.0);
        w.requests.push((head.headers.clone(), request));
        seen.1.notify_all();
        let status = match answer {
            Answer::Ok => 200,
            Answer::Status(s) => s,
            Answer::Never => {
                while !w.ending {
                    w = seen.1.wait(w).unwrap();
                }
                return;
            }
        };
        drop(w);
        let reply = ExportTraceServiceResponse::default().encode_to_vec();
        let headers = [(
            "Content-Type".to_owned(),
            "application/x-protobuf".to_owned(),
        )];
        if write_response(&mut writer, status, &headers, &reply, false).is_err() {
            return;
        }
    }
}

/// A span as the collector received it.
#[derive(Debug, Clone)]
struct Got {
    name: String,
    trace: String,
    id: String,
    parent: String,
    attributes: BTreeMap<String, String>,
    events: Vec<String>,
    error: bool,
    start: u64,
    end: u64,
    resource: BTreeMap<String, String>,
}

impl Got {
    fn attr(&self, key: &str) -> &str {
        self.attributes.get(key).map_or("", String::as_str)
    }
}

fn text(v: Option<&opentelemetry_proto::tonic::common::v1::AnyValue>) -> String {
    match v.and_then(|v| v.value.as_ref()) {
        Some(Any::StringValue(s)) => s.clone(),
        Some(Any::IntValue(n)) => n.to_string(),
        Some(Any::DoubleValue(f)) => f.to_string(),
        Some(Any::BoolValue(b)) => b.to_string(),
        Some(Any::ArrayValue(a)) => {
            let items: Vec<String> = a.values.iter().map(|v| text(Some(v))).collect();
            format!("[{}]", items.join(","))
        }
        _ => String::new(),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// The tree of spans: each span's name and key attributes, its children below it (sorted by
/// name), as the manual shows a run's trace.
fn tree(spans: &[Got]) -> String {
    const KEYS: [&str; 12] = [
        "gen_ai.operation.name",
        "gen_ai.agent.name",
        "gen_ai.provider.name",
        "gen_ai.request.model",
        "gen_ai.usage.input_tokens",
        "gen_ai.usage.output_tokens",
        "gen_ai.usage.cache_read.input_tokens",
        "swarm.cost.usd",
        "swarm.attempt.outcome",
        "swarm.attempt.retry",
        "swarm.merge.rung",
        "swarm.gate.verdict",
    ];
    fn walk(spans: &[Got], parent: &str, depth: usize, keys: &[&str], out: &mut String) {
        let mut children: Vec<&Got> = spans.iter().filter(|s| s.parent == parent).collect();
        children.sort_by(|a, b| a.name.cmp(&b.name).then(a.start.cmp(&b.start)));
        for s in children {
            let attrs: Vec<String> = keys
                .iter()
                .filter_map(|k| s.attributes.get(*k).map(|v| format!("{k}={v}")))
                .chain(
                    s.attributes
                        .get("swarm.task.status")
                        .map(|v| format!("swarm.task.status={v}")),
                )
                .collect();
            let events = if s.events.is_empty() {
                String::new()
            } else {
                format!(" events: {}", s.events.join(", "))
            };
            let _ = writeln!(
                out,
                "{}{}{}{}{}",
                "  ".repeat(depth),
                s.name,
                if attrs.is_empty() {
                    String::new()
                } else {
                    format!(" [{}]", attrs.join(" "))
                },
                if s.error { " (error)" } else { "" },
                events
            );
            walk(spans, &s.id, depth + 1, keys, out);
        }
    }
    let mut out = String::new();
    walk(spans, "", 0, &KEYS, &mut out);
    out
}

/// The exec agent: logs each start with its `TRACEPARENT`; `FLAKY` fails its first attempt;
/// `WRITE <file>` writes the file; `HOLD <file>` waits while that file exists.
const AGENT: &str = r#"prompt=$(cat)
echo "$SWARM_TASK_ID $SWARM_ATTEMPT ${TRACEPARENT:-none}" >> "$AGENT_LOG"
case "$prompt" in
  *"FLAKY"*) [ "$SWARM_ATTEMPT" != 1 ] || { echo "flaky on purpose" >&2; exit 3; } ;;
esac
case "$prompt" in
  *"HOLD "*)
    h=$(printf '%s\n' "$prompt" | sed -n 's/.*HOLD \([^ ]*\).*/\1/p' | head -n 1)
    while [ -e "$h" ]; do sleep 0.02; done ;;
esac
case "$prompt" in
  *"WRITE "*)
    f=$(printf '%s\n' "$prompt" | sed -n 's/.*WRITE \([A-Za-z0-9._-]*\).*/\1/p' | head -n 1)
    printf 'written by %s\n' "$SWARM_TASK_ID" > "$f"
    echo "wrote $f" ;;
  *) echo "nothing to do" ;;
esac
"#;

struct Setup {
    repo: TestRepo,
    agent: std::path::PathBuf,
    log: std::path::PathBuf,
}

fn setup() -> Setup {
    let repo = TestRepo::new();
    let agent = outside(&repo, "agent.sh");
    std::fs::write(&agent, AGENT).unwrap();
    let log = outside(&repo, "agent.log");
    Setup { repo, agent, log }
}

impl Setup {
    fn cmd(&self, collector: &str) -> Command {
        let mut cmd = self.repo.swarm_cmd();
        cmd.env("OTEL_EXPORTER_OTLP_ENDPOINT", collector)
            .env("AGENT_LOG", &self.log)
            .env("SWARM_AGENT", format!("exec:sh {}", self.agent.display()));
        cmd
    }

    /// Each agent start: task, attempt, `TRACEPARENT`.
    fn starts(&self) -> Vec<(String, String, String)> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(|l| {
                let mut w = l.split(' ').map(str::to_owned);
                (
                    w.next().unwrap_or_default(),
                    w.next().unwrap_or_default(),
                    w.next().unwrap_or_default(),
                )
            })
            .collect()
    }
}

fn plan_of(tasks: &serde_json::Value) -> Reply {
    Reply::ToolCalls(vec![(
        "plan-1".into(),
        "submit_plan".into(),
        json!({ "tasks": tasks }),
    )])
}

/// Two goals planned by the fake model, their tasks run by the fake `claude` (which reports
/// tokens and cost): A's second writer crashes once and is retried; B's writer writes the file
/// the gate refuses, so the gate takes it out and parks it.
fn two_goals(fakes: &FakeAgents) -> FakeLlm {
    let _ = fakes;
    FakeLlm::start(|req, _| {
        if has_tool(req, "submit_dependencies") {
            return Reply::ToolCalls(vec![(
                "needs-1".into(),
                "submit_dependencies".into(),
                json!({ "dependencies": [] }),
            )]);
        }
        if has_tool(req, "submit_plan") {
            let goal = planned_goal(req);
            if goal.contains("GOAL-A") {
                return plan_of(&json!([
                    {"id": "aw0", "prompt": "FILE: alpha.txt\nEDIT: alpha", "lane": "coder"},
                    {"id": "aw1", "prompt": "FILE: alpha1.txt\nEDIT: a1\nFAKE_MODE: exit-1-once", "lane": "coder"},
                    {"id": "ar", "prompt": "RESULT: A is done", "deps": ["aw0", "aw1"], "lane": "reducer"},
                ]));
            }
            return plan_of(&json!([
                {"id": "bw0", "prompt": "FILE: bad.txt\nEDIT: bad", "lane": "coder"},
                {"id": "br", "prompt": "RESULT: B is done", "deps": ["bw0"], "lane": "reducer"},
            ]));
        }
        Reply::Text("unexpected request".into())
    })
}

#[test]
fn a_run_of_two_goals_is_one_trace_with_its_goals_tasks_attempts_merges_and_gate() {
    let s = setup();
    let fakes = FakeAgents::install(&outside(&s.repo, "fakes"));
    let collector = Collector::start(Answer::Ok);
    let llm = two_goals(&fakes);
    let gate_log = outside(&s.repo, "gate.log");
    let gate = format!(
        "echo \"$TRACEPARENT\" >> '{}'; test ! -e bad.txt",
        gate_log.display()
    );
    let out: Output = s
        .cmd(&collector.endpoint())
        .env("PATH", fakes.path_env())
        .env("SWARM_AGENT", "claude")
        .env("SWARM_API_BASE", llm.base_url())
        .env("OTEL_EXPORTER_OTLP_HEADERS", "x-team=swarm%20ci")
        .env("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=ci")
        .args([
            "--goal",
            "GOAL-A: add alpha",
            "--goal",
            "GOAL-B: add beta",
            "--yes",
            "--gate",
            &gate,
        ])
        .output()
        .unwrap();
    // B's writer is parked by the gate: the run needs a human.
    assert_exit(&out, 3);
    assert!(
        !stderr(&out).contains("trace is incomplete"),
        "{}",
        stderr(&out)
    );
    let spans = collector.spans();
    let shown = tree(&spans);
    if let Some(path) = std::env::var_os("SWARM_TRACE_TREE") {
        std::fs::write(path, &shown).unwrap();
    }
    let named = |name: &str| -> Vec<&Got> { spans.iter().filter(|s| s.name == name).collect() };
    let one = |name: &str| -> &Got {
        let found = named(name);
        assert_eq!(found.len(), 1, "one {name} span in:\n{shown}");
        found[0]
    };

    // One trace, one root, every other span's parent in it.
    let root = one("invoke_workflow swarm");
    assert_eq!(root.parent, "");
    assert!(spans.iter().all(|s| s.trace == root.trace), "{shown}");
    for s in &spans {
        assert!(
            s.parent.is_empty() || spans.iter().any(|p| p.id == s.parent),
            "{} has no parent in the trace:\n{shown}",
            s.name
        );
        assert!(s.start <= s.end, "{}", s.name);
    }
    assert_eq!(root.attr("gen_ai.operation.name"), "invoke_workflow");
    assert_eq!(root.attr("swarm.run.exit_code"), "3");
    assert_eq!(root.resource["service.name"], "swarm");
    assert_eq!(root.resource["deployment.environment"], "ci");
    assert!(
        collector
            .headers()
            .iter()
            .all(|h| h.iter().any(|(k, v)| k == "x-team" && v == "swarm ci"))
    );

    // The goals, each with its planning span (the model, the tokens), under the root.
    let goals: Vec<&Got> = spans
        .iter()
        .filter(|s| s.name.starts_with("goal "))
        .collect();
    assert_eq!(goals.len(), 2, "{shown}");
    for g in &goals {
        assert_eq!(g.parent, root.id);
        let plan = spans
            .iter()
            .find(|s| s.name == "plan swarm" && s.parent == g.id)
            .unwrap_or_else(|| panic!("no planning span under {}:\n{shown}", g.name));
        assert_eq!(plan.attr("gen_ai.operation.name"), "plan");
        assert_eq!(plan.attr("gen_ai.provider.name"), "openai");
        assert!(!plan.attr("gen_ai.request.model").is_empty(), "{shown}");
        assert!(
            plan.attr("swarm.usage.total_tokens")
                .parse::<u64>()
                .unwrap()
                > 0,
            "{shown}"
        );
    }

    // Tasks under their goals; attempts under their tasks.
    let task = |id: &str| one(&format!("task {id}"));
    let goal_a = task("g1.aw0").parent.clone();
    assert!(goals.iter().any(|g| g.id == goal_a), "{shown}");
    let attempts_of = |t: &Got| -> Vec<Got> {
        let mut a: Vec<Got> = spans
            .iter()
            .filter(|s| s.parent == t.id && s.name.starts_with("invoke_agent"))
            .cloned()
            .collect();
        a.sort_by_key(|s| s.attr("swarm.attempt.number").to_owned());
        a
    };
    // Every attempt: the agent, its tokens and cost as the agent reported them.
    let first = attempts_of(task("g1.aw0"));
    assert_eq!(first.len(), 1, "{shown}");
    let c = &first[0];
    assert_eq!(c.name, "invoke_agent claude");
    assert_eq!(c.attr("gen_ai.operation.name"), "invoke_agent");
    assert_eq!(c.attr("gen_ai.agent.name"), "claude");
    assert_eq!(c.attr("gen_ai.provider.name"), "anthropic");
    assert_eq!(c.attr("gen_ai.usage.input_tokens"), "100");
    assert_eq!(c.attr("gen_ai.usage.output_tokens"), "50");
    assert_eq!(c.attr("gen_ai.usage.cache_read.input_tokens"), "60");
    assert_eq!(c.attr("swarm.cost.usd"), "0.0125");
    assert_eq!(c.attr("swarm.attempt.outcome"), "succeeded");
    assert_eq!(c.attr("swarm.attempt.retry"), "0");
    // The writer that crashed once: a failed attempt, then its retry.
    let flaky = attempts_of(task("g1.aw1"));
    assert_eq!(flaky.len(), 2, "{shown}");
    assert_eq!(flaky[0].attr("swarm.attempt.retry"), "0");
    assert_eq!(flaky[0].attr("swarm.attempt.outcome"), "failed");
    assert_eq!(flaky[0].attr("error.type"), "failed");
    assert!(flaky[0].error);
    assert_eq!(flaky[1].attr("swarm.attempt.retry"), "1");
    assert_eq!(flaky[1].attr("swarm.attempt.outcome"), "succeeded");
    assert_eq!(flaky[1].attr("gen_ai.usage.output_tokens"), "50");
    assert!(!flaky[1].error);
    // Merges under their writers, with the rung that merged them.
    // (Those merged after the culprit are merged again once it is out.)
    for t in ["g1.aw0", "g1.aw1", "g2.bw0"] {
        let merges = named(&format!("merge {t}"));
        assert!(!merges.is_empty(), "no merge of {t}:\n{shown}");
        for merge in merges {
            assert_eq!(merge.parent, task(t).id, "{shown}");
            assert_eq!(merge.attr("swarm.merge.rung"), "git");
        }
    }
    // The gate's runs, one red; the writer it took out parked (after its merge), the run
    // escalated.
    let gates: Vec<&Got> = spans
        .iter()
        .filter(|s| s.name.starts_with("gate "))
        .collect();
    assert!(
        gates
            .iter()
            .any(|g| g.attr("swarm.gate.verdict") == "red" && g.error),
        "{shown}"
    );
    assert!(
        gates
            .iter()
            .any(|g| g.attr("swarm.gate.verdict") == "green")
    );
    assert!(gates.iter().all(|g| g.parent == root.id));
    // Each gate run was told its span.
    let told: Vec<String> = std::fs::read_to_string(&gate_log)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(told.len(), gates.len(), "{told:?}");
    for g in &gates {
        assert!(
            told.contains(&format!("00-{}-{}-01", root.trace, g.id)),
            "{told:?}"
        );
    }
    let park = one("park g2.bw0");
    assert_eq!(park.parent, task("g2.bw0").id);
    assert_eq!(park.attr("swarm.task.status"), "parked");
    assert!(park.error);
    assert_eq!(
        root.events
            .iter()
            .filter(|e| *e == "swarm.escalated")
            .count(),
        1,
        "{shown}"
    );
    // What the agents used, summed over the attempts, is what the run's report says.
    let output: u64 = spans
        .iter()
        .filter_map(|s| s.attributes.get("gen_ai.usage.output_tokens"))
        .map(|v| v.parse::<u64>().unwrap())
        .sum();
    let attempts = spans
        .iter()
        .filter(|s| s.name.starts_with("invoke_agent"))
        .count();
    // Five tasks, one of them twice; every attempt but the crashed one reported 50.
    assert_eq!(attempts, 6, "{shown}");
    assert_eq!(output, 5 * 50, "{shown}");
    assert!(s.log.to_str().is_some());
}

#[test]
fn a_single_goals_planning_span_has_the_model_and_the_tokens_in_and_out() {
    let s = setup();
    let collector = Collector::start(Answer::Ok);
    let llm = FakeLlm::start(|_, _| {
        plan_of(&json!([{"id": "w", "prompt": "WRITE w.txt", "lane": "coder"}]))
    });
    let out = s
        .cmd(&collector.endpoint())
        .env("SWARM_API_BASE", llm.base_url())
        .env("SWARM_MODEL", "planner-model-7")
        .args(["--goal", "add w.txt", "--yes"])
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let spans = collector.spans();
    let shown = tree(&spans);
    let plan = spans
        .iter()
        .find(|s| s.name == "plan swarm")
        .unwrap_or_else(|| panic!("no planning span:\n{shown}"));
    let root = spans.iter().find(|s| s.parent.is_empty()).unwrap();
    assert_eq!(plan.parent, root.id);
    assert_eq!(plan.attr("gen_ai.operation.name"), "plan");
    assert_eq!(plan.attr("gen_ai.request.model"), "planner-model-7");
    // The writer, and the reducer repair adds: the plan's tasks.
    assert_eq!(plan.attr("gen_ai.plan.step.count"), "2", "{shown}");
    let (prompt, _) = llm.reported_usage();
    assert!(prompt > 0);
    assert_eq!(plan.attr("gen_ai.usage.input_tokens"), prompt.to_string());
    let input: u64 = plan.attr("gen_ai.usage.input_tokens").parse().unwrap();
    let output: u64 = plan.attr("gen_ai.usage.output_tokens").parse().unwrap();
    assert_eq!(
        plan.attr("swarm.usage.total_tokens"),
        (input + output).to_string()
    );
}

/// A run of `a` (held until `hold`, the path returned, is removed) then `b`, exported to
/// `collector`, started and waited for until `a`'s agent has started.
fn held_run(s: &Setup, collector: &Collector) -> (std::process::Child, std::path::PathBuf) {
    let hold = outside(&s.repo, "hold");
    std::fs::write(&hold, "").unwrap();
    let tasks = s.repo.tasks(&[
        &json!({"id": "a", "prompt": format!("HOLD {} WRITE a.txt", hold.display()), "lane": "coder"}).to_string(),
        r#"{"id":"b","prompt":"WRITE b.txt","deps":["a"],"lane":"coder"}"#,
    ]);
    let child = s
        .cmd(&collector.endpoint())
        .args(["run", tasks.to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_until("the held agent's start", || {
        s.starts().iter().any(|(t, _, _)| t == "a").then_some(())
    });
    (child, hold)
}

#[test]
fn a_resumed_run_continues_its_trace() {
    let s = setup();
    let collector = Collector::start(Answer::Ok);
    let (mut child, hold) = held_run(&s, &collector);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap()),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(75));
    std::fs::remove_file(&hold).unwrap();
    let out = s
        .cmd(&collector.endpoint())
        .args(["resume"])
        .output()
        .unwrap();
    assert_exit(&out, 0);

    let spans = collector.spans();
    let shown = tree(&spans);
    let roots: Vec<&Got> = spans.iter().filter(|s| s.parent.is_empty()).collect();
    assert_eq!(roots.len(), 1, "{shown}");
    let root = roots[0];
    assert_eq!(root.attr("swarm.run.status"), "interrupted");
    assert!(spans.iter().all(|s| s.trace == root.trace), "{shown}");
    let resume = spans
        .iter()
        .find(|s| s.name == "resume swarm")
        .unwrap_or_else(|| panic!("no resume span:\n{shown}"));
    assert_eq!(resume.parent, root.id);
    assert_eq!(resume.attr("swarm.run.status"), "finished");
    // The task's attempt after the resume, and the merges, are in the resume's part.
    let merge_b = spans
        .iter()
        .find(|s| s.name == "merge b")
        .expect("b merged");
    let task_b = spans.iter().find(|s| s.id == merge_b.parent).unwrap();
    assert_eq!(task_b.parent, resume.id, "{shown}");

    // Each attempt's exec agent was told its own span in the trace, before and after the
    // resume.
    let starts = s.starts();
    assert!(starts.len() >= 3, "{starts:?}");
    for (task_id, attempt, parent) in starts {
        let span = spans
            .iter()
            .find(|s| {
                s.attr("swarm.task.id") == task_id
                    && s.attr("swarm.attempt.number") == attempt
                    && s.name.starts_with("invoke_agent")
            })
            .unwrap_or_else(|| panic!("no span of {task_id} attempt {attempt}:\n{shown}"));
        assert_eq!(parent, format!("00-{}-{}-01", root.trace, span.id));
    }
}

/// A small run that lands, with the collector answering as `answer` says (or not there).
fn run_against(endpoint: &str) -> (Output, TestRepo) {
    let s = setup();
    let tasks = s.repo.tasks(&[
        r#"{"id":"w","prompt":"WRITE w.txt","lane":"coder"}"#,
        r#"{"id":"r","prompt":"look","deps":["w"],"lane":"reviewer"}"#,
    ]);
    let out = s
        .cmd(endpoint)
        .args(["run", tasks.to_str().unwrap()])
        .output()
        .unwrap();
    (out, s.repo)
}

fn assert_ran_and_said_once(out: &Output, repo: &TestRepo) {
    assert_exit(out, 0);
    assert_eq!(repo.read("w.txt"), "written by w\n");
    let err = stderr(out);
    assert_eq!(
        err.matches("the run's trace is incomplete at the collector")
            .count(),
        1,
        "{err}"
    );
}

#[test]
fn a_collector_that_is_down_changes_nothing_of_the_run_and_is_said_once() {
    // A port nothing listens on: bound, then let go.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (out, repo) = run_against(&format!("http://127.0.0.1:{port}"));
    assert_ran_and_said_once(&out, &repo);
    assert!(
        stderr(&out).contains(&format!("127.0.0.1:{port}/v1/traces")),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_collector_that_answers_500_changes_nothing_of_the_run_and_is_said_once() {
    let collector = Collector::start(Answer::Status(500));
    let (out, repo) = run_against(&collector.endpoint());
    assert_ran_and_said_once(&out, &repo);
    assert!(
        stderr(&out).contains("answered HTTP 500"),
        "{}",
        stderr(&out)
    );
    assert!(!collector.spans().is_empty());
}

#[test]
fn a_collector_that_never_answers_changes_nothing_of_the_run_and_is_said_once() {
    let collector = Collector::start(Answer::Never);
    let (out, repo) = run_against(&collector.endpoint());
    assert_ran_and_said_once(&out, &repo);
    assert!(stderr(&out).contains("did not answer"), "{}", stderr(&out));
}

#[test]
fn bad_otel_variables_are_refused_before_anything_runs() {
    for (var, value, said) in [
        (
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "localhost:4318",
            "OTEL_EXPORTER_OTLP_ENDPOINT=localhost:4318: not a URL",
        ),
        (
            "OTEL_EXPORTER_OTLP_HEADERS",
            "token-without-key",
            "OTEL_EXPORTER_OTLP_HEADERS: entry 1 has no `=`",
        ),
    ] {
        let s = setup();
        let tasks = s
            .repo
            .tasks(&[r#"{"id":"w","prompt":"WRITE w.txt","lane":"coder"}"#]);
        let out = s
            .cmd("http://127.0.0.1:9")
            .env(var, value)
            .args(["run", tasks.to_str().unwrap()])
            .output()
            .unwrap();
        assert_exit(&out, 2);
        assert!(stderr(&out).contains(said), "{}", stderr(&out));
        assert!(
            !stderr(&out).contains("token-without-key"),
            "{}",
            stderr(&out)
        );
        assert!(!s.repo.swarm_dir().join("runs").exists(), "nothing ran");
        let _: &Path = &s.log;
    }
}

#[test]
fn a_run_killed_with_kill_9_has_its_root_sent_once_by_its_resume() {
    let s = setup();
    let collector = Collector::start(Answer::Ok);
    let (mut child, hold) = held_run(&s, &collector);
    child.kill().unwrap();
    child.wait().unwrap();
    std::fs::remove_file(&hold).unwrap();
    let out = s
        .cmd(&collector.endpoint())
        .args(["resume"])
        .output()
        .unwrap();
    assert_exit(&out, 0);

    let spans = collector.spans();
    let shown = tree(&spans);
    // The killed swarm sent nothing of the run's own span; the resume sent it, once.
    let roots: Vec<&Got> = spans.iter().filter(|s| s.parent.is_empty()).collect();
    assert_eq!(roots.len(), 1, "{shown}");
    let root = roots[0];
    assert_eq!(root.name, "invoke_workflow swarm", "{shown}");
    assert_eq!(root.attr("swarm.run.status"), "finished", "{shown}");
    let resume = spans
        .iter()
        .find(|s| s.name == "resume swarm")
        .unwrap_or_else(|| panic!("no resume span:\n{shown}"));
    assert_eq!(resume.parent, root.id, "{shown}");
    assert!(spans.iter().all(|s| s.trace == root.trace), "{shown}");
    // Every span hangs from a span the collector has.
    for span in &spans {
        assert!(
            span.parent.is_empty() || spans.iter().any(|p| p.id == span.parent),
            "{} has a parent the collector never got:\n{shown}",
            span.name
        );
    }
}

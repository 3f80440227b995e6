use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use prost::Message as _;

use super::spans::{Builder, Figures, Span, Value, attempt_span, hex, span_id, trace_id};
use super::{Config, otlp, traceparent};
use crate::store::{Logged, Parking, RunEvent};

fn at(ms: i64, task: Option<&str>, event: RunEvent) -> Logged {
    Logged {
        at: ms,
        task: task.map(str::to_owned),
        event,
    }
}

fn attr<'a>(span: &'a Span, key: &str) -> Option<&'a Value> {
    span.attributes
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, v)| v)
}

fn feed(b: &mut Builder, events: &[Logged]) -> Vec<Span> {
    events.iter().flat_map(|e| b.on(e)).collect()
}

#[test]
fn the_traceparent_of_an_attempt_names_the_runs_trace_and_the_attempts_span() {
    let tp = traceparent("20261208-010000-ab12", "t", 2);
    assert_eq!(
        tp,
        format!(
            "00-{}-{}-01",
            hex(&trace_id("20261208-010000-ab12")),
            hex(&attempt_span("20261208-010000-ab12", "t", 2))
        )
    );
    assert_eq!(tp.len(), 55);
    // Another run, another trace; another attempt, another span.
    assert_ne!(trace_id("a"), trace_id("b"));
    assert_ne!(attempt_span("a", "t", 1), attempt_span("a", "t", 2));
}

#[test]
fn a_retried_writer_gives_two_attempts_a_merge_and_a_task_under_the_run() {
    let mut b = Builder::new("r");
    b.figures(
        "w",
        1,
        Figures {
            outcome: "failed".into(),
            ..Figures::default()
        },
    );
    let mut ended = feed(
        &mut b,
        &[
            at(
                1,
                None,
                RunEvent::RunStarted {
                    tasks: 1,
                    base: "b".into(),
                },
            ),
            at(
                2,
                Some("w"),
                RunEvent::TaskStarted {
                    attempt: 1,
                    cwd: "/c".into(),
                    agent: None,
                },
            ),
            at(
                3,
                Some("w"),
                RunEvent::Worktree {
                    path: "/c".into(),
                    start: "s".into(),
                    reuses: None,
                },
            ),
            at(
                4,
                Some("w"),
                RunEvent::TaskFailed {
                    attempt: 1,
                    error: "exit 1".into(),
                    retry: true,
                    stderr_tail: Vec::new(),
                },
            ),
        ],
    );
    b.figures(
        "w",
        2,
        Figures {
            outcome: "succeeded".into(),
            tokens: 150,
            prompt_tokens: 100,
            cached_tokens: 60,
            cost: Some(0.5),
        },
    );
    ended.extend(feed(
        &mut b,
        &[
            at(
                5,
                Some("w"),
                RunEvent::TaskStarted {
                    attempt: 2,
                    cwd: "/c".into(),
                    agent: None,
                },
            ),
            at(
                6,
                Some("w"),
                RunEvent::TaskSucceeded {
                    attempt: 2,
                    elapsed_ms: 1,
                },
            ),
            at(
                7,
                Some("w"),
                RunEvent::Resolved {
                    commit: "c".into(),
                    paths: vec!["f".into()],
                    rung: Some("structural".into()),
                    tool: None,
                },
            ),
            at(
                9,
                Some("w"),
                RunEvent::Merged {
                    commit: "c".into(),
                    before: "a".into(),
                    after: "d".into(),
                    ms: 1.0,
                },
            ),
            at(
                10,
                None,
                RunEvent::RunEnded {
                    status: "finished".into(),
                    exit_code: 0,
                    landing: None,
                    reason: None,
                },
            ),
        ],
    ));
    let names: Vec<&str> = ended.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "invoke_agent",
            "invoke_agent",
            "merge w",
            "task w",
            "invoke_workflow swarm"
        ]
    );
    let root = &ended[4];
    assert_eq!(root.parent, None);
    assert_eq!(root.id, span_id("r", &["run"]));
    let task = &ended[3];
    assert_eq!(task.parent, Some(root.id));
    assert_eq!(attr(task, "swarm.task.mode"), Some(&Value::from("write")));
    let (first, second) = (&ended[0], &ended[1]);
    assert_eq!(first.id, attempt_span("r", "w", 1));
    assert_eq!(first.error.as_deref(), Some("exit 1"));
    assert_eq!(attr(first, "gen_ai.usage.input_tokens"), None);
    assert_eq!(attr(second, "swarm.attempt.retry"), Some(&Value::Int(1)));
    assert_eq!(
        attr(second, "gen_ai.usage.input_tokens"),
        Some(&Value::Int(100))
    );
    assert_eq!(
        attr(second, "gen_ai.usage.output_tokens"),
        Some(&Value::Int(50))
    );
    assert_eq!(
        attr(second, "gen_ai.usage.cache_read.input_tokens"),
        Some(&Value::Int(60))
    );
    assert_eq!(second.parent, Some(task.id));
    let merge = &ended[2];
    assert_eq!(merge.parent, Some(task.id));
    assert_eq!(
        attr(merge, "swarm.merge.rung"),
        Some(&Value::from("structural"))
    );
    assert!(ended.iter().all(|s| s.start_ms <= s.end_ms));
}

#[test]
fn a_resume_is_a_span_under_the_runs_root_and_a_park_is_an_event_of_its_task() {
    let mut b = Builder::new("r");
    let parking = Parking {
        branch: "swarm/r-w".into(),
        commit: "c".into(),
        integration: "i".into(),
        paths: vec!["f".into()],
        resolver: None,
        rungs: Vec::new(),
        reason: None,
        gate_output: Vec::new(),
    };
    let ended = feed(
        &mut b,
        &[
            at(1, None, RunEvent::RunResumed { pid: 1 }),
            at(
                2,
                Some("w"),
                RunEvent::TaskStarted {
                    attempt: 3,
                    cwd: "/c".into(),
                    agent: None,
                },
            ),
            at(
                3,
                Some("w"),
                RunEvent::TaskSucceeded {
                    attempt: 3,
                    elapsed_ms: 1,
                },
            ),
            at(4, Some("w"), RunEvent::Parked(parking)),
        ],
    );
    // A reader's success ends it; a park of it after is a span of its own under it.
    let task = ended.iter().find(|s| s.name == "task w").unwrap();
    let park = ended.iter().find(|s| s.name == "park w").unwrap();
    assert_eq!(park.parent, Some(task.id));
    assert!(park.error.is_some());
    let rest = b.finish();
    let resume = rest.iter().find(|s| s.name == "resume swarm").unwrap();
    assert_eq!(resume.parent, Some(span_id("r", &["run"])));
    assert_eq!(task.parent, Some(resume.id));
}

#[test]
fn spans_encode_as_the_published_otlp_messages() {
    let config = Config {
        endpoint: "http://c/v1/traces".into(),
        headers: Vec::new(),
        timeout: std::time::Duration::from_secs(1),
        resource: vec![("service.name".into(), "swarm".into())],
    };
    let span = Span {
        id: span_id("r", &["run"]),
        parent: None,
        name: "invoke_workflow swarm".into(),
        start_ms: 1_000,
        end_ms: 2_000,
        attributes: vec![
            ("swarm.run.id", Value::from("r")),
            ("gen_ai.usage.input_tokens", Value::Int(7)),
            ("swarm.cost.usd", Value::Float(0.25)),
            ("swarm.gate.batch", Value::Strs(vec!["a".into()])),
        ],
        marks: Vec::new(),
        error: Some("failed".into()),
    };
    let body = otlp::encode(&config, &trace_id("r"), &[span]);
    let request = ExportTraceServiceRequest::decode(&body[..]).unwrap();
    let rs = &request.resource_spans[0];
    let s = &rs.scope_spans[0].spans[0];
    assert_eq!(s.trace_id, trace_id("r").to_vec());
    assert_eq!(s.start_time_unix_nano, 1_000_000_000);
    assert_eq!(s.status.as_ref().unwrap().code, 2);
    let values: Vec<Option<&Any>> = s
        .attributes
        .iter()
        .map(|kv| kv.value.as_ref().and_then(|v| v.value.as_ref()))
        .collect();
    assert_eq!(values[0], Some(&Any::StringValue("r".into())));
    assert_eq!(values[1], Some(&Any::IntValue(7)));
    assert_eq!(values[2], Some(&Any::DoubleValue(0.25)));
    assert!(matches!(values[3], Some(Any::ArrayValue(_))));
    assert_eq!(
        rs.resource.as_ref().unwrap().attributes[0].key,
        "service.name"
    );
}

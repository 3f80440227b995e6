//! Reading one task of a JSONL task file: its fields checked one by one, each problem reported
//! with the task's line, and the duration syntax (`90s`, `20m`, `1.5h`) timeouts share with the
//! settings. Linking tasks into a DAG is `Plan`'s.

use std::time::Duration;

use serde_json::{Map, Value};

use super::candidates::{Candidates, MAX_CANDIDATES, Select};
use super::{Action, Lane, Mode, Problem, Task, TaskId};

const FIELDS: &[&str] = &[
    "id",
    "prompt",
    "run",
    "deps",
    "lane",
    "mode",
    "title",
    "agent",
    "timeout",
    "check",
    "files",
    "then",
    "parent",
    "spawn",
    "repeat",
    "may-be-empty",
    "candidates",
    "select",
    "candidate-of",
];

/// The most a task's `spawn` may say: far past any run's `max-spawned`, and a typo beyond.
pub const MAX_SPAWN: u32 = 1_000_000;

/// The id a continuation (`then`) takes when it names none.
const THEN_ID: &str = "then";

/// The most bytes a `run` or `check` command may hold: it is one argument of `sh -c`, and Linux
/// refuses one longer than 128 KiB when the task starts.
pub const MAX_COMMAND: usize = 64 * 1024;
/// The most bytes a prompt may hold (it goes to the agent on stdin).
pub const MAX_PROMPT: usize = 1024 * 1024;
/// The most bytes any other text field may hold.
const MAX_TEXT: usize = 4 * 1024;
/// The longest duration swarm takes: a timeout or wait past it is a typo, not a plan.
pub const MAX_DURATION: Duration = Duration::from_secs(365 * 86_400);

/// The task of one JSON object on line `line`, or `None` with every problem found added.
#[expect(
    clippy::similar_names,
    reason = "`lane` and `line` are the names the file format uses"
)]
pub(super) fn task(
    obj: &Map<String, Value>,
    line: usize,
    problems: &mut Vec<Problem>,
) -> Option<Task> {
    let before = problems.len();
    let raw_id = obj.get("id").and_then(Value::as_str).map(str::to_owned);
    let then = continuation(obj, line, problems);
    let mut problem = |message: String| {
        problems.push(Problem {
            line,
            task: raw_id.clone(),
            message,
        });
    };
    for key in obj.keys() {
        if !FIELDS.contains(&key.as_str()) {
            problem(match crate::near::nearest(key, FIELDS) {
                Some(near) => format!("unknown field {key:?}; did you mean {near:?}?"),
                None => format!("unknown field {key:?} (known: {})", FIELDS.join(", ")),
            });
        }
    }
    let id = match obj.get("id") {
        Some(Value::String(s)) => match TaskId::parse(s) {
            Ok(id) => Some(id),
            Err(e) => {
                problem(e);
                None
            }
        },
        Some(_) => {
            problem("\"id\" must be a string".into());
            None
        }
        None => {
            problem("missing \"id\"".into());
            None
        }
    };
    // A text refused here is not also reported as missing or empty.
    let mut refused = false;
    let mut string = |key: &str| {
        let why = match obj.get(key) {
            None | Some(Value::Null) => return None,
            // A NUL cannot reach a process's arguments or environment.
            Some(Value::String(s)) if s.contains('\0') => format!("{key:?} holds a NUL byte"),
            Some(Value::String(s)) if s.len() > max_len(key) => format!(
                "{key:?} is {} bytes, over the {} KiB this field may hold",
                s.len(),
                max_len(key) / 1024
            ),
            Some(Value::String(s)) => return Some(s.clone()),
            Some(_) => format!("{key:?} must be a string"),
        };
        problem(why);
        refused = true;
        None
    };
    let prompt = string("prompt");
    let command = string("run");
    let lane_name = string("lane");
    let mode_name = string("mode");
    let title = string("title");
    let agent = string("agent");
    let check = string("check");
    let action = match (prompt, command) {
        _ if refused => None,
        (Some(p), None) if !p.trim().is_empty() => Some(Action::Prompt(p)),
        (None, Some(r)) if !r.trim().is_empty() => Some(Action::Run(r)),
        (Some(_), Some(_)) => {
            problem("has both \"prompt\" and \"run\"; give exactly one".into());
            None
        }
        (None, None) if !obj.contains_key("prompt") && !obj.contains_key("run") => {
            problem("has neither \"prompt\" nor \"run\"; give exactly one".into());
            None
        }
        _ => {
            problem("\"prompt\" or \"run\" is empty".into());
            None
        }
    };
    let deps = string_list(obj, "deps", &mut problem)
        .into_iter()
        .filter_map(|d| match TaskId::parse(&d) {
            Ok(id) => Some(id),
            Err(e) => {
                problem(format!("in \"deps\": {e}"));
                None
            }
        })
        .collect();
    let files = string_list(obj, "files", &mut problem);
    let lane = lane_name.map_or(Lane::Worker, |l| Lane::parse(&l));
    let mode = match mode_name.as_deref() {
        None => match action {
            Some(Action::Run(_)) => Mode::Write,
            _ => lane.default_mode(),
        },
        Some("read") => Mode::Read,
        Some("write") => Mode::Write,
        Some(other) => {
            problem(format!(
                "\"mode\" must be \"read\" or \"write\", not {other:?}"
            ));
            Mode::Write
        }
    };
    let timeout = match obj.get("timeout") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) => {
            let d = n.as_f64().and_then(|s| seconds(s).ok());
            if d.is_none() {
                problem(format!(
                    "\"timeout\" must be a positive number of seconds, at most {}",
                    MAX_DURATION.as_secs()
                ));
            }
            d
        }
        Some(Value::String(s)) => match parse_duration(s) {
            Ok(d) => Some(d),
            Err(e) => {
                problem(format!("\"timeout\": {e}"));
                None
            }
        },
        Some(_) => {
            problem("\"timeout\" must be seconds or a duration like \"90s\"".into());
            None
        }
    };
    let parent = match obj.get("parent") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => match TaskId::parse(s) {
            Ok(id) => Some(id),
            Err(e) => {
                problem(format!("in \"parent\": {e}"));
                None
            }
        },
        Some(_) => {
            problem("\"parent\" must be a task id".into());
            None
        }
    };
    let spawn = match obj.get("spawn") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) => match n.as_u64() {
            Some(n) if n <= u64::from(MAX_SPAWN) => Some(n as u32),
            _ => {
                problem(format!(
                    "\"spawn\" must be a whole number of tasks, 0 to {MAX_SPAWN}"
                ));
                None
            }
        },
        Some(_) => {
            problem(format!(
                "\"spawn\" must be a whole number of tasks, 0 to {MAX_SPAWN}"
            ));
            None
        }
    };
    let repeat = match obj.get("repeat") {
        None | Some(Value::Null | Value::Bool(false)) => false,
        Some(Value::Bool(true)) if matches!(action, Some(Action::Run(_))) => true,
        Some(Value::Bool(true)) => {
            problem(
                "\"repeat\" is for a `run` task: a prompt task is done again by its agent, told what it did before"
                    .into(),
            );
            false
        }
        Some(_) => {
            problem("\"repeat\" must be true or false".into());
            false
        }
    };
    let may_be_empty = match obj.get("may-be-empty") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => {
            problem("\"may-be-empty\" must be true or false".into());
            false
        }
    };
    let candidates = candidates(obj, mode, spawn, &mut problem);
    let candidate_of = match obj.get("candidate-of") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => match TaskId::parse(s) {
            Ok(id) => Some(id),
            Err(e) => {
                problem(format!("in \"candidate-of\": {e}"));
                None
            }
        },
        Some(_) => {
            problem("\"candidate-of\" must be a task id".into());
            None
        }
    };
    if problems.len() > before {
        return None;
    }
    Some(Task {
        id: id?,
        action: action?,
        deps,
        lane,
        mode,
        title,
        agent,
        timeout,
        check,
        files,
        then: then.map(Box::new),
        parent,
        spawn,
        repeat,
        may_be_empty,
        candidates,
        candidate_of,
        line,
    })
}

/// A task's `candidates` and `select`: a writer's, at most `MAX_CANDIDATES`, and not with
/// `spawn` (what a candidate that loses spawned would be merged all the same).
fn candidates(
    obj: &Map<String, Value>,
    mode: Mode,
    spawn: Option<u32>,
    problem: &mut impl FnMut(String),
) -> Option<Candidates> {
    let select = match obj.get("select") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Select::parse(s).or_else(|| {
            problem(format!(
                "\"select\" must be one of {}, not {s:?}",
                Select::NAMES.join(", ")
            ));
            None
        }),
        Some(_) => {
            problem(format!(
                "\"select\" must be one of {}",
                Select::NAMES.join(", ")
            ));
            None
        }
    };
    let n = match obj.get("candidates") {
        None | Some(Value::Null) => {
            if select.is_some() {
                problem("\"select\" picks among candidates: give \"candidates\" too".into());
            }
            return None;
        }
        Some(Value::Number(n)) => n
            .as_u64()
            .filter(|n| (1..=u64::from(MAX_CANDIDATES)).contains(n))
            .map(|n| n as u32),
        Some(_) => None,
    };
    let Some(n) = n else {
        problem(format!(
            "\"candidates\" must be a whole number, 1 to {MAX_CANDIDATES}"
        ));
        return None;
    };
    if n >= 2 && mode != Mode::Write {
        problem("\"candidates\" are for writers: a reader's answers are not merged, so there is nothing to pick".into());
    }
    if n >= 2 && spawn.is_some_and(|s| s > 0) {
        problem("\"candidates\" and \"spawn\" do not go together: what a losing candidate spawned would run all the same".into());
    }
    Some(Candidates {
        n,
        select: select.unwrap_or_default(),
    })
}

/// A task's `then`: a task object of its own (its id `then` unless it names one), checked
/// as any task is; its problems are the line's.
fn continuation(
    obj: &Map<String, Value>,
    line: usize,
    problems: &mut Vec<Problem>,
) -> Option<Task> {
    let raw = obj.get("then")?;
    let task = obj.get("id").and_then(Value::as_str).map(str::to_owned);
    let Value::Object(then) = raw else {
        if !raw.is_null() {
            problems.push(Problem {
                line,
                task,
                message: "\"then\" must be a task object".into(),
            });
        }
        return None;
    };
    let mut then = then.clone();
    then.entry("id").or_insert_with(|| THEN_ID.into());
    if then.contains_key("parent") {
        problems.push(Problem {
            line,
            task,
            message: "\"then\": a continuation's parent is the task that declares it".into(),
        });
        return None;
    }
    let mut own = Vec::new();
    let t = self::task(&then, line, &mut own);
    for p in own {
        problems.push(Problem {
            line,
            task: task.clone(),
            message: format!("in \"then\": {}", p.message),
        });
    }
    t
}

fn string_list(
    obj: &Map<String, Value>,
    key: &str,
    problem: &mut impl FnMut(String),
) -> Vec<String> {
    match obj.get(key) {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => {
            let mut out = Vec::new();
            for item in items {
                match item {
                    Value::String(s) => out.push(s.clone()),
                    _ => problem(format!("{key:?} must be a list of strings")),
                }
            }
            out
        }
        Some(_) => {
            problem(format!("{key:?} must be a list of strings"));
            Vec::new()
        }
    }
}

/// The most bytes field `key` may hold.
fn max_len(key: &str) -> usize {
    match key {
        "run" | "check" => MAX_COMMAND,
        "prompt" => MAX_PROMPT,
        _ => MAX_TEXT,
    }
}

/// `n` seconds, if positive and at most `MAX_DURATION`.
fn seconds(n: f64) -> Result<Duration, ()> {
    match Duration::try_from_secs_f64(n) {
        Ok(d) if !d.is_zero() && d <= MAX_DURATION => Ok(d),
        _ => Err(()),
    }
}

/// A wait, where `0` (no wait) is allowed too: otherwise as `parse_duration`.
pub fn parse_wait(s: &str) -> Result<Duration, String> {
    if s.trim() == "0" {
        return Ok(Duration::ZERO);
    }
    parse_duration(s).map_err(|e| format!("{e}, or 0"))
}

/// Parses a duration: seconds (`90`, `1.5`), or numbers with units in jiff's friendly format
/// (`90s`, `20m`, `1.5h`, `500ms`, `2d`, `1h30m`, `1h 30m`, `1 hour 30 minutes`; see
/// `time::friendly_duration`). Positive, at most `MAX_DURATION`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let text = s.trim();
    let bad = || {
        format!(
            "bad duration {text:?}: use a positive number of seconds or of ms, s, m, h or d (as in 90s, 1h30m), at most 365d"
        )
    };
    // A bare number is seconds; the friendly format wants a unit.
    if let Ok(n) = text.parse::<f64>() {
        return seconds(n).map_err(|()| bad());
    }
    match crate::time::friendly_duration(text) {
        Some(d) if !d.is_zero() && d <= MAX_DURATION => Ok(d),
        _ => Err(bad()),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::parse_duration;

    #[test]
    fn durations_accept_units() {
        assert_eq!(parse_duration("90").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("1.5h").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse_duration("1h30m").unwrap(), Duration::from_secs(5400));
        assert_eq!(
            parse_duration("1h 30m 15s").unwrap(),
            Duration::from_secs(5415)
        );
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("2d").unwrap(), Duration::from_secs(172_800));
        assert_eq!(
            parse_duration(" 365d ").unwrap(),
            Duration::from_secs(365 * 86_400)
        );
        for bad in [
            "soon",
            "-1s",
            "0",
            "0s",
            "1x",
            "h",
            "1h30",
            "366d",
            "1e300",
            "NaN",
            "inf",
            "99999999999999999999h",
            "",
        ] {
            let err = parse_duration(bad).unwrap_err();
            assert!(err.starts_with("bad duration"), "{bad}: {err}");
        }
    }

    /// jiff's friendly format takes the long names, clock times and weeks too; it wants the
    /// units largest first, a fraction on the last unit only and none on days.
    #[test]
    fn durations_read_the_friendly_format_whole() {
        for (text, secs) in [
            ("1 hour 30 minutes", 5400),
            ("1h, 30m", 5400),
            ("01:30:00", 5400),
            ("1w", 7 * 86_400),
            ("1d 12h", 129_600),
        ] {
            assert_eq!(
                parse_duration(text).unwrap(),
                Duration::from_secs(secs),
                "{text}"
            );
        }
        for bad in ["30m 1h", "1.5h 30m", "1.5d", "1 month", "1s ago", "PT1H"] {
            let err = parse_duration(bad).unwrap_err();
            assert!(err.starts_with("bad duration"), "{bad}: {err}");
        }
    }

    #[test]
    fn task_fields_past_their_limits_or_holding_nul_are_problems_at_load() {
        let problems = |line: &str| match crate::plan::Plan::parse(line, "t") {
            Ok(_) => Vec::new(),
            Err(e) => e
                .problems
                .into_iter()
                .map(|p| p.message)
                .collect::<Vec<_>>(),
        };
        let long = "x".repeat(super::MAX_COMMAND + 1);
        assert_eq!(
            problems(&format!(r#"{{"id":"a","run":"{long}"}}"#)),
            [format!(
                "\"run\" is {} bytes, over the 64 KiB this field may hold",
                long.len()
            )]
        );
        assert_eq!(
            problems(r#"{"id":"a","run":"echo a\u0000b"}"#),
            ["\"run\" holds a NUL byte"]
        );
        for timeout in ["1e300", "1e19", "-1", "0"] {
            assert_eq!(
                problems(&format!(r#"{{"id":"a","run":"true","timeout":{timeout}}}"#)),
                ["\"timeout\" must be a positive number of seconds, at most 31536000"],
                "{timeout}"
            );
        }
        assert_eq!(
            problems(r#"{"id":"a..b","run":"true"}"#),
            [
                "bad id \"a..b\": an id may not hold \"..\" or end in \".\" or \".lock\" (git refuses such branch names)"
            ]
        );
    }
}

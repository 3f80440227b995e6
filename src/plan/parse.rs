//! Reading one task of a JSONL task file: its fields checked one by one, each problem reported
//! with the task's line, and the duration syntax (`90s`, `20m`, `1.5h`) timeouts share with the
//! settings. Linking tasks into a DAG is `Plan`'s.

use std::time::Duration;

use serde_json::{Map, Value};

use super::{Action, Lane, Mode, Problem, Task, TaskId};

const FIELDS: &[&str] = &[
    "id", "prompt", "run", "deps", "lane", "mode", "title", "agent", "timeout", "check", "files",
];

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
    let mut problem = |message: String| {
        problems.push(Problem {
            line,
            task: raw_id.clone(),
            message,
        });
    };
    for key in obj.keys() {
        if !FIELDS.contains(&key.as_str()) {
            problem(format!(
                "unknown field {key:?} (known: {})",
                FIELDS.join(", ")
            ));
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
    let mut string = |key: &str| match obj.get(key) {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => {
            problem(format!("{key:?} must be a string"));
            None
        }
    };
    let prompt = string("prompt");
    let command = string("run");
    let lane_name = string("lane");
    let mode_name = string("mode");
    let title = string("title");
    let agent = string("agent");
    let check = string("check");
    let action = match (prompt, command) {
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
        Some(Value::Number(n)) => match n.as_f64() {
            Some(s) if s > 0.0 => Some(Duration::from_secs_f64(s)),
            _ => {
                problem("\"timeout\" must be a positive number of seconds".into());
                None
            }
        },
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
        line,
    })
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

/// Parses `90`, `90s`, `20m`, `1h`, `1.5h` into a duration.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (number, unit) = match s.find(|c: char| c.is_ascii_alphabetic()) {
        Some(i) => (&s[..i], &s[i..]),
        None => (s, "s"),
    };
    let scale = match unit {
        "ms" => 0.001,
        "s" => 1.0,
        "m" => 60.0,
        "h" => 3600.0,
        _ => return Err(format!("bad duration {s:?}: use a number with s, m or h")),
    };
    match number.trim().parse::<f64>() {
        Ok(n) if n > 0.0 && n.is_finite() => Ok(Duration::from_secs_f64(n * scale)),
        _ => Err(format!(
            "bad duration {s:?}: use a positive number with s, m or h"
        )),
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
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("-1s").is_err());
    }
}

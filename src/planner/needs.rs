//! The goal-dependency pass: one question to the model about which goals of a run need which
//! (a function to call, or JSON in text when the endpoint takes no functions), then a pure,
//! deterministic settling of the answer: edges naming unknown goals, self-edges, duplicates,
//! edges from goals that have started and edges that would close a cycle are dropped, each with
//! why. Touches no git and no board; the caller records what it reports and decides what an
//! unreadable answer means.

use std::collections::{HashMap, VecDeque};

use serde_json::{Value, json};

use super::answer_json;
use crate::llm::{Client, LlmError, Notice, Usage};

/// A goal as the dependency pass sees it.
#[derive(Debug, Clone, Copy)]
pub struct GoalText<'a> {
    pub id: &'a str,
    pub text: &'a str,
    /// Planned or finished already: it cannot wait for anything any more.
    pub started: bool,
}

/// `goal` can only be planned and done well after the changes of `needs` are merged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edge {
    pub goal: String,
    pub needs: String,
    pub reason: String,
}

/// What the pass found, and what it cost.
#[derive(Debug)]
pub struct Inferred {
    /// Edges kept, sorted by the position of `goal` in the goals, then of `needs`.
    pub edges: Vec<Edge>,
    /// Edges the model gave that were dropped, each with why (unknown goal, self, the goal has
    /// started, duplicate, would close the cycle g1 → g2 → g1).
    pub dropped: Vec<(Edge, String)>,
    pub usage: Usage,
    pub requests: u32,
}

const FUNCTION: &str = "submit_dependencies";

const SYSTEM_PROMPT: &str = "\
You order the goals of a run for swarm, which plans each goal and carries it out with coding \
agents on one git repository. Goals run in parallel unless one needs another.\n\n\
A goal B needs a goal A only when B builds on A's changes or results: B cannot be planned or \
done well until A's changes are merged (for example, B changes code that A introduces or \
rewrites, or B describes what A did). Goals that merely touch the same area, or that could be \
done in either order, are independent: give them no edge, so they run at the same time.\n\n\
Rules:\n\
1. Give each edge a one-sentence reason.\n\
2. A goal that has started already cannot wait for anything: never make it need another goal \
(other goals may still need it).\n\
3. Keep the fixed dependencies as they are and do not submit them again.\n\
4. No cycles: a goal must never end up waiting for itself.\n\n\
Submit the edges with the submit_dependencies function: an empty list when all goals are \
independent.";

/// The parameters of `submit_dependencies`.
fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "dependencies": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "goal": { "type": "string", "description": "id of the goal that must wait, e.g. g2" },
                        "needs": { "type": "string", "description": "id of the goal it builds on, e.g. g1" },
                        "reason": { "type": "string", "description": "one sentence: why the goal needs the other" }
                    },
                    "required": ["goal", "needs", "reason"]
                }
            }
        },
        "required": ["dependencies"]
    })
}

fn tools() -> Value {
    json!([{
        "type": "function",
        "function": {
            "name": FUNCTION,
            "description": "Submit which goals need which (an empty list when all are independent).",
            "parameters": schema(),
        }
    }])
}

/// The goals as `g1: text` lines (a goal's further lines indented under it), which have
/// started, and the fixed edges.
fn user_prompt(goals: &[GoalText<'_>], known: &[Edge]) -> String {
    let lines: Vec<String> = goals
        .iter()
        .map(|g| format!("{}: {}", g.id, g.text.trim().replace('\n', "\n    ")))
        .collect();
    let mut sections = vec![format!("Goals:\n{}", lines.join("\n"))];
    let started: Vec<&str> = goals.iter().filter(|g| g.started).map(|g| g.id).collect();
    if !started.is_empty() {
        sections.push(format!(
            "Started already (they cannot need anything; others may still need them): {}",
            started.join(", ")
        ));
    }
    if !known.is_empty() {
        let lines: Vec<String> = known
            .iter()
            .map(|e| match e.reason.as_str() {
                "" => format!("- {} needs {}", e.goal, e.needs),
                reason => format!("- {} needs {}: {reason}", e.goal, e.needs),
            })
            .collect();
        sections.push(format!(
            "Fixed dependencies from earlier passes:\n{}",
            lines.join("\n")
        ));
    }
    sections.join("\n\n") + "\n"
}

/// Asks the model which of `goals` need which, given the `known` edges of earlier passes, and
/// settles its answer. At most two requests: the second only when the endpoint refuses
/// function calls (HTTP 400/422), asking for the JSON in text instead. An answer that cannot be
/// read is an `Err`; the caller decides what that means for the run.
pub fn infer(
    client: &Client,
    goals: &[GoalText<'_>],
    known: &[Edge],
    stop: &dyn Fn() -> bool,
    notify: &mut dyn FnMut(Notice),
) -> anyhow::Result<Inferred> {
    let mut messages = vec![
        json!({ "role": "system", "content": SYSTEM_PROMPT }),
        json!({ "role": "user", "content": user_prompt(goals, known) }),
    ];
    let mut requests = 0;
    // A server already seen to pass no function calls is asked for the JSON in text at once.
    let mut with_tools = !client.calls_dropped();
    let reply = loop {
        let mut body = if with_tools {
            json!({
                "messages": messages,
                "tools": tools(),
                "tool_choice": { "type": "function", "function": { "name": FUNCTION } },
            })
        } else {
            json!({ "messages": messages })
        };
        crate::llm::AnswerCaps::put(client.answers().planning, &mut body);
        requests += 1;
        match client.chat(&body, stop, notify) {
            Ok(reply) => break reply,
            // Some servers take no tools (or no forced tool choice): ask for the JSON in text.
            Err(LlmError::Rejected {
                status: 400 | 422, ..
            }) if with_tools => {
                with_tools = false;
                messages.push(json!({
                    "role": "user",
                    "content": format!("Answer with the dependencies as one JSON object only, following this schema:\n{}", schema()),
                }));
            }
            Err(LlmError::Stopped) => anyhow::bail!("the goal-dependency pass was interrupted"),
            Err(e) => {
                return Err(
                    anyhow::Error::new(e).context("the goal-dependency pass's model call failed")
                );
            }
        }
    };
    notify(Notice::answer("needs", requests, &reply.message));
    let proposed = read_answer(&reply.message).map_err(|why| {
        anyhow::anyhow!(
            "the goal-dependency pass gave no readable answer after {requests} request(s): {why}"
        )
    })?;
    let (edges, dropped) = settle(goals, known, proposed);
    Ok(Inferred {
        edges,
        dropped,
        usage: reply.usage,
        requests,
    })
}

/// The edges in a model's answer (`choices[0].message`): the arguments of its function call,
/// else the first JSON object or array in its text (fenced or not). Either
/// `{"dependencies": [...]}` or the bare list is accepted; ids are trimmed, a missing reason
/// is empty. Nothing is checked against the goals here: [`settle`] does that.
fn read_answer(message: &Value) -> Result<Vec<Edge>, String> {
    let value = answer_json(message, |_| true, "an answer")?;
    let items = match &value {
        Value::Array(items) => items,
        other => other["dependencies"]
            .as_array()
            .ok_or_else(|| "the answer has no `dependencies` list".to_owned())?,
    };
    items.iter().map(read_edge).collect()
}

fn read_edge(item: &Value) -> Result<Edge, String> {
    let field = |key: &str| item[key].as_str().map(str::trim).unwrap_or_default();
    let (goal, needs) = (field("goal"), field("needs"));
    if goal.is_empty() || needs.is_empty() {
        return Err(format!("a dependency lacks `goal` or `needs`: {item}"));
    }
    Ok(Edge {
        goal: goal.to_owned(),
        needs: needs.to_owned(),
        reason: field("reason").to_owned(),
    })
}

/// Keeps what can be kept of the `proposed` edges, given the `known` ones (which stay as they
/// are, are assumed acyclic, and are not returned again). Drops, in the order given, edges
/// naming an unknown goal, self-edges, edges whose goal has started, and duplicates (of known
/// edges or of each other); then takes the rest sorted by the position of `goal` in `goals`,
/// then of `needs`, dropping each that would close a cycle with the known and kept edges. The
/// known edges with the kept ones are therefore acyclic.
pub fn settle(
    goals: &[GoalText<'_>],
    known: &[Edge],
    proposed: Vec<Edge>,
) -> (Vec<Edge>, Vec<(Edge, String)>) {
    let position = |id: &str| goals.iter().position(|g| g.id == id);
    let same = |a: &Edge, b: &Edge| a.goal == b.goal && a.needs == b.needs;
    let mut dropped = Vec::new();
    let mut candidates: Vec<(usize, usize, Edge)> = Vec::new();
    for edge in proposed {
        let verdict = match (position(&edge.goal), position(&edge.needs)) {
            (None, _) => Err(format!("unknown goal {}", edge.goal)),
            (_, None) => Err(format!("unknown goal {}", edge.needs)),
            (Some(g), Some(n)) if g == n => Err(format!("{} cannot need itself", edge.goal)),
            (Some(g), _) if goals[g].started => Err(format!("{} has started already", edge.goal)),
            _ if known.iter().any(|k| same(k, &edge)) => {
                Err("duplicate of a known dependency".to_owned())
            }
            _ if candidates.iter().any(|(_, _, c)| same(c, &edge)) => Err("duplicate".to_owned()),
            (Some(g), Some(n)) => Ok((g, n)),
        };
        match verdict {
            Ok((g, n)) => candidates.push((g, n, edge)),
            Err(why) => dropped.push((edge, why)),
        }
    }
    candidates.sort_by_key(|&(g, n, _)| (g, n));
    let mut kept: Vec<Edge> = Vec::new();
    for (_, _, edge) in candidates {
        let cycle = {
            let graph: Vec<&Edge> = known.iter().chain(&kept).collect();
            chain(&edge.needs, &edge.goal, &graph)
                .map(|path| format!("would close the cycle {} → {}", edge.goal, path.join(" → ")))
        };
        match cycle {
            Some(why) => dropped.push((edge, why)),
            None => kept.push(edge),
        }
    }
    (kept, dropped)
}

/// The shortest chain of "needs" leading from `from` to `to` (both included), if any; among
/// chains of one length, the one through edges listed first. Breadth-first: a run has few goals.
fn chain<'e>(from: &'e str, to: &str, edges: &[&'e Edge]) -> Option<Vec<&'e str>> {
    let mut previous: HashMap<&str, &str> = HashMap::new();
    let mut queue = VecDeque::from([from]);
    while let Some(node) = queue.pop_front() {
        if node == to {
            let mut path = vec![node];
            while let Some(&before) = previous.get(path[path.len() - 1]) {
                path.push(before);
            }
            path.reverse();
            return Some(path);
        }
        for edge in edges.iter().filter(|e| e.goal == node) {
            let next = edge.needs.as_str();
            if next != from && !previous.contains_key(next) {
                previous.insert(next, node);
                queue.push_back(next);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{Endpoint, Limits};
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::TcpListener;
    use std::sync::mpsc::{Receiver, channel};
    use std::time::Duration;

    const IDS: [&str; 5] = ["g1", "g2", "g3", "g4", "g5"];

    fn goals(n: usize) -> Vec<GoalText<'static>> {
        IDS[..n]
            .iter()
            .map(|id| GoalText {
                id,
                text: "a goal",
                started: false,
            })
            .collect()
    }

    fn edge(goal: &str, needs: &str) -> Edge {
        Edge {
            goal: goal.into(),
            needs: needs.into(),
            reason: format!("{goal} builds on {needs}"),
        }
    }

    fn reasons(dropped: &[(Edge, String)]) -> Vec<(String, String, &str)> {
        dropped
            .iter()
            .map(|(e, why)| (e.goal.clone(), e.needs.clone(), why.as_str()))
            .collect()
    }

    #[test]
    fn unknown_self_started_and_duplicate_edges_are_dropped_with_reasons() {
        let mut goals = goals(4);
        goals[2].started = true;
        let known = [edge("g2", "g1")];
        let proposed = vec![
            edge("g9", "g1"),
            edge("g2", "g7"),
            edge("g4", "g4"),
            edge("g3", "g1"),
            edge("g2", "g1"),
            edge("g4", "g1"),
            Edge {
                reason: "said twice".into(),
                ..edge("g4", "g1")
            },
            edge("g1", "g3"),
        ];
        let (kept, dropped) = settle(&goals, &known, proposed);
        assert_eq!(kept, [edge("g1", "g3"), edge("g4", "g1")]);
        let expected = [
            ("g9", "g1", "unknown goal g9"),
            ("g2", "g7", "unknown goal g7"),
            ("g4", "g4", "g4 cannot need itself"),
            ("g3", "g1", "g3 has started already"),
            ("g2", "g1", "duplicate of a known dependency"),
            ("g4", "g1", "duplicate"),
        ]
        .map(|(g, n, why)| (g.to_owned(), n.to_owned(), why));
        assert_eq!(reasons(&dropped), expected);
        assert_eq!(dropped[5].0.reason, "said twice");
    }

    #[test]
    fn two_cycle_keeps_the_edge_of_the_earlier_goal() {
        let proposed = vec![edge("g2", "g1"), edge("g1", "g2")];
        let (kept, dropped) = settle(&goals(2), &[], proposed);
        assert_eq!(kept, [edge("g1", "g2")]);
        assert_eq!(
            dropped,
            [(
                edge("g2", "g1"),
                "would close the cycle g2 → g1 → g2".into()
            )]
        );
    }

    #[test]
    fn three_cycle_is_broken_at_its_last_edge_and_the_reason_names_the_path() {
        let proposed = vec![edge("g3", "g1"), edge("g2", "g3"), edge("g1", "g2")];
        let (kept, dropped) = settle(&goals(3), &[], proposed);
        assert_eq!(kept, [edge("g1", "g2"), edge("g2", "g3")]);
        assert_eq!(
            dropped,
            [(
                edge("g3", "g1"),
                "would close the cycle g3 → g1 → g2 → g3".into()
            )]
        );
    }

    #[test]
    fn known_edges_close_cycles_too_and_are_not_returned_again() {
        let known = [edge("g2", "g1"), edge("g3", "g2")];
        let proposed = vec![edge("g1", "g3"), edge("g4", "g3")];
        let (kept, dropped) = settle(&goals(4), &known, proposed);
        assert_eq!(kept, [edge("g4", "g3")]);
        assert_eq!(
            dropped,
            [(
                edge("g1", "g3"),
                "would close the cycle g1 → g3 → g2 → g1".into()
            )]
        );
    }

    #[test]
    fn kept_edges_are_ordered_by_goal_then_need_whatever_the_answer_order() {
        let forward = vec![
            edge("g5", "g1"),
            edge("g3", "g2"),
            edge("g5", "g2"),
            edge("g3", "g1"),
            edge("g4", "g3"),
        ];
        let mut backward = forward.clone();
        backward.reverse();
        let (kept, dropped) = settle(&goals(5), &[], forward);
        assert!(dropped.is_empty());
        let expected = [
            edge("g3", "g1"),
            edge("g3", "g2"),
            edge("g4", "g3"),
            edge("g5", "g1"),
            edge("g5", "g2"),
        ];
        assert_eq!(kept, expected);
        assert_eq!(settle(&goals(5), &[], backward).0, expected);
    }

    #[test]
    fn answer_is_read_from_fenced_json_text() {
        let message = json!({
            "content": "Sure:\n```json\n{\"dependencies\": [{\"goal\": \" g2 \", \"needs\": \"g1\", \"reason\": \"uses the new client\"}]}\n```"
        });
        let edges = read_answer(&message).unwrap();
        assert_eq!(
            edges,
            [Edge {
                goal: "g2".into(),
                needs: "g1".into(),
                reason: "uses the new client".into(),
            }]
        );
        let bare = json!({ "content": "[{\"goal\": \"g3\", \"needs\": \"g2\"}]" });
        assert_eq!(read_answer(&bare).unwrap()[0].reason, "");
    }

    #[test]
    fn answer_is_read_from_function_call_arguments_before_the_text() {
        let message = json!({
            "content": "{\"dependencies\": []}",
            "tool_calls": [{"id": "1", "function": {"name": FUNCTION,
                "arguments": "{\"dependencies\":[{\"goal\":\"g2\",\"needs\":\"g1\",\"reason\":\"r\"}]}"}}]
        });
        assert_eq!(read_answer(&message).unwrap()[0].needs, "g1");
        let as_object = json!({
            "tool_calls": [{"id": "1", "function": {"name": FUNCTION,
                "arguments": {"dependencies": []}}}]
        });
        assert_eq!(read_answer(&as_object), Ok(Vec::new()));
    }

    #[test]
    fn garbage_answer_is_unreadable() {
        for message in [
            json!({ "content": "g2 needs g1, I think." }),
            json!({ "content": "{\"edges\": []}" }),
            json!({ "content": "[{\"goal\": \"g2\"}]" }),
            json!({ "tool_calls": [{"id": "1", "function": {"name": FUNCTION, "arguments": "{not json"}}] }),
            json!({ "content": null }),
        ] {
            assert!(read_answer(&message).is_err(), "{message}");
        }
    }

    #[test]
    fn prompt_lists_goals_started_ones_and_fixed_edges() {
        let mut goals = goals(3);
        goals[0].started = true;
        goals[1].text = "add retries\nto every caller";
        let prompt = user_prompt(&goals, &[edge("g3", "g1")]);
        assert!(
            prompt.starts_with(
                "Goals:\ng1: a goal\ng2: add retries\n    to every caller\ng3: a goal\n"
            )
        );
        assert!(prompt.contains(
            "Started already (they cannot need anything; others may still need them): g1\n"
        ));
        assert!(prompt.ends_with(
            "Fixed dependencies from earlier passes:\n- g3 needs g1: g3 builds on g1\n"
        ));
    }

    /// A client of a loopback endpoint that answers each request with the next scripted
    /// `(status, body)`; the bodies of the requests come back to the test.
    fn serve(script: Vec<(u16, String)>) -> (Client, Receiver<Value>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}/v1", listener.local_addr().unwrap());
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            let mut script = script.into_iter();
            loop {
                let (mut stream, _) = listener.accept().unwrap();
                let mut reader = BufReader::new(&stream);
                let (mut line, mut length, mut first) = (String::new(), 0, String::new());
                while reader.read_line(&mut line).unwrap() > 2 {
                    if first.is_empty() {
                        first.clone_from(&line);
                    }
                    if let Some(n) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        length = n.trim().parse().unwrap();
                    }
                    line.clear();
                }
                let mut content = vec![0; length];
                reader.read_exact(&mut content).unwrap();
                // The client's look for the model's context size: not a scripted request.
                if !first.starts_with("POST /v1/chat/completions ") {
                    write!(
                        stream,
                        "HTTP/1.1 404 X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    )
                    .ok();
                    continue;
                }
                let Some((status, body)) = script.next() else {
                    break;
                };
                tx.send(serde_json::from_slice(&content).unwrap()).ok();
                let len = body.len();
                write!(
                    stream,
                    "HTTP/1.1 {status} X\r\nContent-Length: {len}\r\nConnection: close\r\n\r\n{body}"
                )
                .ok();
            }
        });
        let endpoint = Endpoint {
            base,
            key: None,
            model: "m".into(),
        };
        let limits = Limits {
            connect_timeout: Duration::from_secs(2),
            read_timeout: Duration::from_secs(5),
            max_attempts: 1,
            max_wait: Duration::from_millis(10),
            max_in_flight: 1,
            answers: crate::llm::AnswerCaps::default(),
        };
        (Client::new(endpoint, limits), rx)
    }

    #[test]
    fn refused_function_call_is_asked_again_for_json_text_and_settled() {
        let answer = json!({
            "choices": [{"message": {"content":
                "```json\n{\"dependencies\": [{\"goal\": \"g2\", \"needs\": \"g1\", \"reason\": \"r\"}, {\"goal\": \"g1\", \"needs\": \"g2\", \"reason\": \"r\"}]}\n```"},
                "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}
        });
        let (client, bodies) = serve(vec![
            (
                400,
                r#"{"error": {"message": "tools are not supported"}}"#.into(),
            ),
            (200, answer.to_string()),
        ]);
        let goals = goals(2);
        let inferred = infer(&client, &goals, &[], &|| false, &mut |_| {}).unwrap();
        assert_eq!(inferred.requests, 2);
        assert_eq!(inferred.usage.total_tokens, 10);
        assert_eq!(inferred.edges, [edge_with_reason("g1", "g2")]);
        assert_eq!(inferred.dropped.len(), 1);
        let first = bodies.recv().unwrap();
        assert_eq!(first["tool_choice"]["function"]["name"], FUNCTION);
        let second = bodies.recv().unwrap();
        assert!(second.get("tools").is_none());
        assert_eq!(second["messages"].as_array().unwrap().len(), 3);
    }

    fn edge_with_reason(goal: &str, needs: &str) -> Edge {
        Edge {
            reason: "r".into(),
            ..edge(goal, needs)
        }
    }
}

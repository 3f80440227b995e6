//! The Agent Client Protocol messages swarm sends and reads, as types: JSON-RPC 2.0 envelopes,
//! the params of the requests swarm makes, the results it reads back, the requests and
//! notifications of the agent it serves, and its answers to them. Holds no logic; `acp` holds
//! the conversation.
//!
//! What swarm sends has its fields declared in alphabetical order: swarm has always written
//! its messages with sorted keys, and its transcripts read so. What it reads is read as
//! leniently as ever: a field of another type than the schema's is taken as absent (`loose`),
//! an item of a list that does not read is left out (`loose_items`), and a message that is not
//! a JSON object is no message.

use serde::de::{DeserializeOwned, Deserializer};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The JSON-RPC version of every message.
pub(super) const JSONRPC: &str = "2.0";

/// A request swarm makes of the agent.
#[derive(Serialize)]
pub(super) struct Request<'a, P> {
    pub id: u64,
    pub jsonrpc: &'static str,
    pub method: &'a str,
    pub params: P,
}

/// A notification swarm sends: `session/cancel`.
#[derive(Serialize)]
pub(super) struct Notification<P> {
    pub jsonrpc: &'static str,
    pub method: &'static str,
    pub params: P,
}

/// swarm's answer to a request of the agent.
#[derive(Serialize)]
pub(super) struct Answer<'a> {
    /// The request's id, as the agent sent it.
    pub id: &'a Value,
    pub jsonrpc: &'static str,
    pub result: Served,
}

/// swarm's refusal of a request of the agent.
#[derive(Serialize)]
pub(super) struct Refusal<'a> {
    pub error: ErrorSent,
    pub id: &'a Value,
    pub jsonrpc: &'static str,
}

#[derive(Serialize)]
pub(super) struct ErrorSent {
    pub code: i64,
    pub message: String,
}

/// `initialize`'s params.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Initialize {
    pub client_capabilities: ClientCapabilities,
    pub client_info: ClientInfo,
    pub protocol_version: u64,
}

#[derive(Serialize)]
pub(super) struct ClientCapabilities {
    pub fs: FileCapabilities,
    pub terminal: bool,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct FileCapabilities {
    pub read_text_file: bool,
    pub write_text_file: bool,
}

#[derive(Serialize)]
pub(super) struct ClientInfo {
    pub name: &'static str,
    pub version: &'static str,
}

/// `session/new`'s params, and with the session's id `session/resume`'s and `session/load`'s.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct OpenSession<'a> {
    pub cwd: &'a str,
    /// swarm gives the agent no MCP servers.
    pub mcp_servers: [Value; 0],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<&'a str>,
}

/// `session/set_mode`'s params.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct SetMode<'a> {
    pub mode_id: &'a str,
    pub session_id: &'a str,
}

/// `session/prompt`'s params: the prompt as one text block.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Prompt<'a> {
    pub prompt: [TextBlock<'a>; 1],
    pub session_id: &'a str,
}

#[derive(Serialize)]
pub(super) struct TextBlock<'a> {
    pub text: &'a str,
    #[serde(rename = "type")]
    pub kind: &'static str,
}

/// `session/cancel`'s params.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Cancel<'a> {
    pub session_id: &'a str,
}

/// What swarm answers a request of the agent with.
#[derive(Serialize)]
#[serde(untagged)]
pub(super) enum Served {
    Permission {
        outcome: PermissionOutcome,
    },
    /// `fs/read_text_file`'s answer.
    Content {
        content: String,
    },
    /// `fs/write_text_file`'s answer: `null`.
    Written,
    #[serde(rename_all = "camelCase")]
    TerminalCreated {
        terminal_id: String,
    },
    #[serde(rename_all = "camelCase")]
    TerminalOutput {
        exit_status: ExitStatus,
        output: String,
        truncated: bool,
    },
    /// `terminal/wait_for_exit`'s answer.
    Exited(ExitStatus),
    /// `{}`: a terminal released or killed.
    Done {},
}

/// The option swarm picked for a permission request, or none (`cancelled`).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct PermissionOutcome {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub option_id: Option<String>,
    pub outcome: &'static str,
}

#[derive(Serialize, Clone)]
#[serde(rename_all = "camelCase")]
pub(super) struct ExitStatus {
    pub exit_code: Option<i32>,
    pub signal: Option<String>,
}

/// A line from the agent: an answer to swarm (`result` or `error`, no `method`), or a request
/// (with an `id`) or notification of its own.
#[derive(Deserialize)]
pub(super) struct Incoming {
    #[serde(default, deserialize_with = "present")]
    pub id: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    pub method: Option<Value>,
    #[serde(default)]
    pub params: Value,
    #[serde(default, deserialize_with = "present")]
    pub result: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    pub error: Option<Value>,
}

impl Incoming {
    /// A line as a message; `None` when it is not a JSON object.
    pub fn parse(line: &str) -> Option<Self> {
        let object: Map<String, Value> = serde_json::from_str(line).ok()?;
        serde_json::from_value(Value::Object(object)).ok()
    }

    /// Whether it answers a request of swarm's.
    pub fn is_answer(&self) -> bool {
        self.method.is_none() && (self.result.is_some() || self.error.is_some())
    }

    /// Its method; empty when it has none that is a string.
    pub fn method(&self) -> &str {
        self.method
            .as_ref()
            .and_then(Value::as_str)
            .unwrap_or_default()
    }
}

/// An error the agent answered with.
#[derive(Deserialize, Default)]
pub(super) struct AgentError {
    #[serde(default, deserialize_with = "loose")]
    pub message: Option<String>,
}

/// `initialize`'s result.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(super) struct Initialized {
    #[serde(default, deserialize_with = "object")]
    pub agent_capabilities: AgentCapabilities,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(super) struct AgentCapabilities {
    #[serde(default, deserialize_with = "loose")]
    pub load_session: Option<bool>,
    #[serde(default, deserialize_with = "object")]
    pub session_capabilities: SessionCapabilities,
}

#[derive(Deserialize, Default)]
pub(super) struct SessionCapabilities {
    /// Present (an object) when the agent resumes sessions.
    #[serde(default, deserialize_with = "loose")]
    pub resume: Option<Map<String, Value>>,
}

/// `session/new`'s, `session/resume`'s and `session/load`'s result.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(super) struct Opened {
    #[serde(default, deserialize_with = "loose")]
    pub session_id: Option<String>,
    #[serde(default, deserialize_with = "object")]
    pub modes: SessionModes,
}

/// The modes an agent offers, and the one it is in.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(super) struct SessionModes {
    #[serde(default, deserialize_with = "loose")]
    pub current_mode_id: Option<String>,
    #[serde(default, deserialize_with = "loose_items")]
    pub available_modes: Vec<Mode>,
}

#[derive(Deserialize)]
pub(super) struct Mode {
    pub id: String,
}

/// `session/prompt`'s result.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(super) struct Prompted {
    #[serde(default, deserialize_with = "loose")]
    pub stop_reason: Option<String>,
    #[serde(default, deserialize_with = "object")]
    pub usage: PromptUsage,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(super) struct PromptUsage {
    #[serde(default, deserialize_with = "loose")]
    pub total_tokens: Option<u64>,
}

/// A `session/update` notification's params.
#[derive(Deserialize, Default)]
pub(super) struct Updated {
    #[serde(default, deserialize_with = "object")]
    pub update: Update,
}

/// One update of the session; swarm reads two kinds.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(super) struct Update {
    /// Its `sessionUpdate`: `agent_message_chunk`, `usage_update`, …
    #[serde(default, rename = "sessionUpdate", deserialize_with = "loose")]
    pub kind: Option<String>,
    /// An `agent_message_chunk`'s content.
    #[serde(default, deserialize_with = "object")]
    pub content: Chunk,
    /// A `usage_update`'s tokens in the context window now (not a running total).
    #[serde(default, deserialize_with = "loose")]
    pub used: Option<u64>,
    /// A `usage_update`'s cost so far.
    #[serde(default, deserialize_with = "object")]
    pub cost: Cost,
}

#[derive(Deserialize, Default)]
pub(super) struct Chunk {
    #[serde(default, deserialize_with = "loose")]
    pub text: Option<String>,
}

#[derive(Deserialize, Default)]
pub(super) struct Cost {
    #[serde(default, deserialize_with = "loose")]
    pub amount: Option<f64>,
    #[serde(default, deserialize_with = "loose")]
    pub currency: Option<String>,
}

/// `session/request_permission`'s params.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(super) struct PermissionRequest {
    #[serde(default, deserialize_with = "object")]
    pub tool_call: ToolCall,
    #[serde(default, deserialize_with = "loose_items")]
    pub options: Vec<PermissionOption>,
}

#[derive(Deserialize, Default)]
pub(super) struct ToolCall {
    #[serde(default, deserialize_with = "loose")]
    pub kind: Option<String>,
    #[serde(default, deserialize_with = "loose")]
    pub title: Option<String>,
    #[serde(default, deserialize_with = "loose_items")]
    pub locations: Vec<Location>,
}

#[derive(Deserialize)]
pub(super) struct Location {
    pub path: String,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(super) struct PermissionOption {
    #[serde(default, deserialize_with = "loose")]
    pub kind: Option<String>,
    #[serde(default, deserialize_with = "loose")]
    pub option_id: Option<String>,
}

/// `fs/read_text_file`'s params: from `line` (1-based), `limit` lines.
#[derive(Deserialize, Default)]
pub(super) struct ReadTextFile {
    #[serde(default, deserialize_with = "loose")]
    pub path: Option<String>,
    #[serde(default, deserialize_with = "loose")]
    pub line: Option<u64>,
    #[serde(default, deserialize_with = "loose")]
    pub limit: Option<u64>,
}

/// `fs/write_text_file`'s params.
#[derive(Deserialize, Default)]
pub(super) struct WriteTextFile {
    #[serde(default, deserialize_with = "loose")]
    pub path: Option<String>,
    #[serde(default, deserialize_with = "loose")]
    pub content: Option<String>,
}

/// `terminal/create`'s params.
#[derive(Deserialize, Default)]
pub(super) struct CreateTerminal {
    #[serde(default, deserialize_with = "loose")]
    pub command: Option<String>,
    #[serde(default, deserialize_with = "loose_items")]
    pub args: Vec<String>,
    #[serde(default, deserialize_with = "loose")]
    pub cwd: Option<String>,
}

/// The params of `terminal/output`, `wait_for_exit`, `kill` and `release`.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(super) struct TerminalId {
    #[serde(default, deserialize_with = "loose")]
    pub terminal_id: Option<String>,
}

/// A result or params as `T`; all of `T`'s defaults when it is not an object.
pub(super) fn read<T: DeserializeOwned + Default>(value: Value) -> T {
    match value {
        Value::Object(_) => serde_json::from_value(value).unwrap_or_default(),
        _ => T::default(),
    }
}

/// A field that is there, even as `null` (a JSON-RPC `id` or `result` may be).
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// A field as `T`, or absent when it has another type.
fn loose<'de, D: Deserializer<'de>, T: DeserializeOwned>(d: D) -> Result<Option<T>, D::Error> {
    Ok(serde_json::from_value(Value::deserialize(d)?).ok())
}

/// An object as `T` (see `read`).
fn object<'de, D: Deserializer<'de>, T: DeserializeOwned + Default>(d: D) -> Result<T, D::Error> {
    Ok(read(Value::deserialize(d)?))
}

/// The items of a list that read as `T`; none when it is no list. An item that is a list
/// itself is none of swarm's (serde would read it as a struct's fields in order).
fn loose_items<'de, D: Deserializer<'de>, T: DeserializeOwned>(d: D) -> Result<Vec<T>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::Array(items) => items
            .into_iter()
            .filter(|item| !item.is_array())
            .filter_map(|item| serde_json::from_value(item).ok())
            .collect(),
        _ => Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::{
        Answer, Cancel, ClientCapabilities, ClientInfo, ErrorSent, ExitStatus, FileCapabilities,
        Incoming, Initialize, Initialized, JSONRPC, Notification, OpenSession, PermissionOutcome,
        PermissionRequest, Prompt, Refusal, Request, Served, SetMode, TextBlock, read,
    };

    /// What swarm sent before its messages had types: `json!` values, whose keys `serde_json`
    /// writes sorted.
    fn same_bytes(typed: &impl serde::Serialize, before: &Value) {
        assert_eq!(serde_json::to_string(typed).unwrap(), before.to_string());
    }

    #[test]
    fn requests_go_out_as_they_did_before_they_had_types() {
        let init = Initialize {
            client_capabilities: ClientCapabilities {
                fs: FileCapabilities {
                    read_text_file: true,
                    write_text_file: false,
                },
                terminal: true,
            },
            client_info: ClientInfo {
                name: "swarm",
                version: "0.1.0",
            },
            protocol_version: 1,
        };
        same_bytes(
            &Request {
                id: 0,
                jsonrpc: JSONRPC,
                method: "initialize",
                params: &init,
            },
            &json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": 1,
                "clientCapabilities": {
                    "fs": { "readTextFile": true, "writeTextFile": false },
                    "terminal": true,
                },
                "clientInfo": { "name": "swarm", "version": "0.1.0" },
            }}),
        );
        let new = OpenSession {
            cwd: "/w",
            mcp_servers: [],
            session_id: None,
        };
        same_bytes(&new, &json!({ "cwd": "/w", "mcpServers": [] }));
        let resume = OpenSession {
            session_id: Some("s"),
            ..new
        };
        same_bytes(
            &resume,
            &json!({ "sessionId": "s", "cwd": "/w", "mcpServers": [] }),
        );
        same_bytes(
            &SetMode {
                mode_id: "auto",
                session_id: "s",
            },
            &json!({ "sessionId": "s", "modeId": "auto" }),
        );
        same_bytes(
            &Prompt {
                prompt: [TextBlock {
                    text: "do \"it\"\n",
                    kind: "text",
                }],
                session_id: "s",
            },
            &json!({ "sessionId": "s", "prompt": [{ "type": "text", "text": "do \"it\"\n" }] }),
        );
        same_bytes(
            &Notification {
                jsonrpc: JSONRPC,
                method: "session/cancel",
                params: Cancel { session_id: "s" },
            },
            &json!({ "jsonrpc": "2.0", "method": "session/cancel", "params": { "sessionId": "s" } }),
        );
    }

    #[test]
    fn answers_go_out_as_they_did_before_they_had_types() {
        let id = json!(7);
        let answer = |result| Answer {
            id: &id,
            jsonrpc: JSONRPC,
            result,
        };
        let status = ExitStatus {
            exit_code: Some(0),
            signal: None,
        };
        for (result, before) in [
            (
                Served::Permission {
                    outcome: PermissionOutcome {
                        option_id: Some("yes".into()),
                        outcome: "selected",
                    },
                },
                json!({ "outcome": { "outcome": "selected", "optionId": "yes" } }),
            ),
            (
                Served::Permission {
                    outcome: PermissionOutcome {
                        option_id: None,
                        outcome: "cancelled",
                    },
                },
                json!({ "outcome": { "outcome": "cancelled" } }),
            ),
            (
                Served::Content {
                    content: "a\n".into(),
                },
                json!({ "content": "a\n" }),
            ),
            (Served::Written, Value::Null),
            (
                Served::TerminalCreated {
                    terminal_id: "term-1".into(),
                },
                json!({ "terminalId": "term-1" }),
            ),
            (
                Served::TerminalOutput {
                    exit_status: status.clone(),
                    output: "hi\n".into(),
                    truncated: false,
                },
                json!({ "output": "hi\n", "truncated": false,
                        "exitStatus": { "exitCode": 0, "signal": null } }),
            ),
            (
                Served::Exited(ExitStatus {
                    exit_code: None,
                    signal: Some("SIGKILL".into()),
                }),
                json!({ "exitCode": null, "signal": "SIGKILL" }),
            ),
            (Served::Done {}, json!({})),
        ] {
            same_bytes(
                &answer(result),
                &json!({ "jsonrpc": "2.0", "id": 7, "result": before }),
            );
        }
        same_bytes(
            &Refusal {
                error: ErrorSent {
                    code: -32601,
                    message: "swarm does not serve x".into(),
                },
                id: &json!("a"),
                jsonrpc: JSONRPC,
            },
            &json!({ "jsonrpc": "2.0", "id": "a",
                     "error": { "code": -32601, "message": "swarm does not serve x" } }),
        );
    }

    #[test]
    fn what_the_agent_sends_is_read_as_leniently_as_before() {
        // A null id or result is there; a line that is no object is no message.
        let m = Incoming::parse(r#"{"id":null,"result":null}"#).unwrap();
        assert!(m.is_answer() && m.id == Some(Value::Null));
        assert!(Incoming::parse("[1]").is_none() && Incoming::parse("5").is_none());
        let m = Incoming::parse(r#"{"id":1,"method":3}"#).unwrap();
        assert!(!m.is_answer());
        assert_eq!(m.method(), "");
        // A field of another type is absent; an item that does not read is left out.
        let init: Initialized = read(json!({ "agentCapabilities": {
            "loadSession": "yes", "sessionCapabilities": { "resume": {} } } }));
        assert_eq!(init.agent_capabilities.load_session, None);
        assert!(
            init.agent_capabilities
                .session_capabilities
                .resume
                .is_some()
        );
        let asked: PermissionRequest = read(json!({
            "toolCall": { "kind": 5, "locations": [{ "path": "a" }, { "path": 1 }, "b", ["c"]] },
            "options": [{ "kind": "allow_once" }, 3, { "kind": "allow_once", "optionId": "y" }],
        }));
        assert_eq!(asked.tool_call.kind, None);
        let paths: Vec<&str> = asked
            .tool_call
            .locations
            .iter()
            .map(|l| l.path.as_str())
            .collect();
        assert_eq!(paths, ["a"]);
        assert_eq!(asked.options.len(), 2);
        assert_eq!(asked.options[0].option_id, None);
        let nothing: Initialized = read(json!([{ "loadSession": true }]));
        assert_eq!(nothing.agent_capabilities.load_session, None);
    }
}

//! The mirror's pure parts: the variables' values checked, the Bot API's updates read (who
//! wrote, what command), and the texts of the messages a run sends.

use std::fmt::Write as _;

use serde_json::Value;

use crate::error::Usage;

/// The bot's token (a secret: its name holds TOKEN, so `crate::secret` hides its value
/// wherever swarm writes).
pub const TOKEN_VAR: &str = "SWARM_TELEGRAM_TOKEN";
/// The chats allowed to read the run and command it, comma-separated ids.
pub const CHATS_VAR: &str = "SWARM_TELEGRAM_CHAT_IDS";
/// The Bot API's base URL, for a self-hosted Bot API server.
pub const API_VAR: &str = "SWARM_TELEGRAM_API";

/// Telegram refuses a message longer than 4096 characters.
const MOST_CHARS: usize = 4000;

/// The token, checked without saying it: it goes into a URL's path.
pub(super) fn token(value: &str) -> Result<String, Usage> {
    if value
        .chars()
        .any(|c| c.is_whitespace() || c.is_control() || c == '/')
    {
        return Err(Usage::new(format!(
            "{TOKEN_VAR}: a bot's token has no whitespace or slash in it"
        ))
        .hint("set it to the token @BotFather gave, such as 123456:ABC-DEF…, alone"));
    }
    Ok(value.to_owned())
}

/// The allowed chats: comma-separated integers (a group's id is negative).
pub(super) fn chats(value: &str) -> Result<Vec<i64>, Usage> {
    let mut out = Vec::new();
    for item in value.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let id = item.parse::<i64>().map_err(|_| {
            Usage::new(format!(
                "{CHATS_VAR}: {item:?} is not a chat id (an integer)"
            ))
            .hint("list the ids of the chats allowed, comma-separated: 123456789,-1001234567890")
        })?;
        if !out.contains(&id) {
            out.push(id);
        }
    }
    if out.is_empty() {
        return Err(Usage::new(format!("{CHATS_VAR}: no chat id in {value:?}")));
    }
    Ok(out)
}

/// The Bot API's base URL, without a trailing slash.
pub(super) fn api(value: &str) -> Result<String, Usage> {
    let value = value.trim().trim_end_matches('/');
    let bad = || {
        Usage::new(format!("{API_VAR}: {value:?} is not an http(s) URL"))
            .hint("the Bot API's base URL, such as https://api.telegram.org (unset, that one)")
    };
    let uri: ureq::http::Uri = value.parse().map_err(|_| bad())?;
    let scheme_ok = matches!(uri.scheme_str(), Some("http" | "https"));
    let host_ok = uri.host().is_some_and(|h| !h.is_empty());
    if !scheme_ok || !host_ok || uri.query().is_some() {
        return Err(bad());
    }
    Ok(value.to_owned())
}

/// One update of `getUpdates`: its id, and the message it holds, if any.
#[derive(Debug, Clone, PartialEq)]
pub struct Update {
    pub id: i64,
    message: Option<Message>,
}

#[derive(Debug, Clone, PartialEq)]
struct Message {
    chat: i64,
    /// Unix seconds.
    date: i64,
    text: String,
}

/// The updates in a `getUpdates` answer's `result`; an update of another kind (an edit, a
/// member joining) has no message, one that is not an update at all is left out.
pub(super) fn updates(result: &Value) -> Vec<Update> {
    let Some(items) = result.as_array() else {
        return Vec::new();
    };
    items
        .iter()
        .filter_map(|u| {
            let id = u["update_id"].as_i64()?;
            let m = if u["message"].is_object() {
                &u["message"]
            } else {
                &u["channel_post"]
            };
            let message = (|| {
                Some(Message {
                    chat: m["chat"]["id"].as_i64()?,
                    date: m["date"].as_i64().unwrap_or(0),
                    text: m["text"].as_str()?.to_owned(),
                })
            })();
            Some(Update { id, message })
        })
        .collect()
}

/// What a command asks of the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// The run's counts.
    Status,
    /// Queue a goal, as `swarm queue add` does.
    Goal(String),
    /// Stop the run resumably, as Ctrl-C does.
    Stop,
    /// How to resume the run.
    Resume,
    /// A message for a task's agent, as `swarm steer` sends it.
    Steer { task: String, text: String },
    /// Anything else: the commands there are.
    Help,
}

/// The command `text` is (`/status`, `/status@my_bot`, `/goal add a README`).
pub fn command(text: &str) -> Command {
    let text = text.trim();
    let (word, rest) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
    let word = word.split('@').next().unwrap_or_default();
    match (word, rest.trim()) {
        ("/status", _) => Command::Status,
        ("/goal", goal) if !goal.is_empty() => Command::Goal(goal.to_owned()),
        ("/stop", _) => Command::Stop,
        ("/resume", _) => Command::Resume,
        ("/steer", rest) => match rest.split_once(char::is_whitespace) {
            Some((task, text)) if !text.trim().is_empty() => Command::Steer {
                task: task.to_owned(),
                text: text.trim().to_owned(),
            },
            _ => Command::Help,
        },
        _ => Command::Help,
    }
}

/// What the mirror heard in an update.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Heard {
    /// A command from an allowed chat, to answer there.
    Command { chat: i64, command: Command },
    /// A message from a chat that is not allowed: noted, nothing else.
    Stranger { chat: i64 },
    /// No message, or one sent before the mirror started (`since`, Unix seconds).
    Nothing,
}

pub(super) fn heard(update: &Update, allowed: &[i64], since: i64) -> Heard {
    let Some(m) = &update.message else {
        return Heard::Nothing;
    };
    if !allowed.contains(&m.chat) {
        return Heard::Stranger { chat: m.chat };
    }
    if m.date < since {
        return Heard::Nothing;
    }
    Heard::Command {
        chat: m.chat,
        command: command(&m.text),
    }
}

/// What the commands are, for a message that is none of them.
pub const HELP: &str = "swarm answers /status (the run's counts), /goal TEXT (queue a goal, as `swarm queue add` does), /stop (stop the run, resumably, as Ctrl-C does), /resume (the command that resumes it) and /steer TASK TEXT (a message for a running task's agent, as `swarm steer` sends it)";

/// The run started.
pub fn started(run: &str, what: &str, tasks: usize, resumed: bool) -> String {
    let tasks = crate::ui::count(tasks, "task", "tasks");
    let verb = if resumed { "resumed" } else { "started" };
    fit(&format!("swarm run {run} {verb}: {what} ({tasks})"))
}

/// A task parked, or the run's merging halted (`task` none), from what the `--on-escalate`
/// hook is given: why, and the commands that resolve it.
pub fn escalated(info: &Value) -> String {
    let s = |key: &str| info[key].as_str().unwrap_or_default();
    let run = s("run");
    let integration = s("integration").trim_start_matches("refs/heads/");
    let Some(task) = info["task"].as_str() else {
        return fit(&format!(
            "swarm run {run} stopped merging: {}. `swarm resume {run}` merges the rest.",
            s("reason")
        ));
    };
    let branch = s("branch");
    let lines = |v: &Value| -> Vec<String> {
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    let paths = lines(&info["paths"]);
    let why = match info["reason"].as_str() {
        Some(reason) => reason.to_owned(),
        None => format!(
            "its branch conflicts with {integration} in {}",
            paths.join(", ")
        ),
    };
    let mut text = format!("swarm run {run}: task {task} is parked, not merged: {why}.");
    for rung in info["rungs"].as_array().into_iter().flatten() {
        let _ = write!(
            text,
            "\n{} did not merge it: {}.",
            rung["rung"].as_str().unwrap_or_default(),
            rung["why"].as_str().unwrap_or_default()
        );
    }
    let gate = lines(&info["gate_output"]);
    if !gate.is_empty() {
        text.push_str("\nThe gate's last lines:\n");
        text.push_str(&gate.join("\n"));
    }
    let _ = write!(
        text,
        "\nTo resolve it:\ngit log --oneline {integration}..{branch}\ngit diff {integration}...{branch}\ngit switch {integration} && git merge {branch}"
    );
    if info["reason"].is_null() {
        text.push_str("\n# fix the conflicts, then: git add -A && git commit");
    }
    if let Some(deliver) = info["deliver"].as_object()
        && !deliver.is_empty()
    {
        let _ = write!(
            text,
            "\nThe run delivers: {}",
            Value::Object(deliver.clone())
        );
    }
    fit(&text)
}

/// No new attempts until `until` (a time of day), `wait` from now, for a usage limit: the
/// run's, or that of every member of `pool` (its tasks wait).
pub fn paused(run: &str, pool: Option<&str>, until: &str, wait: &str) -> String {
    fit(&match pool {
        None => format!(
            "swarm run {run} paused at a usage limit: no new attempts until {until} (in {wait}); running tasks go on"
        ),
        Some(pool) => format!(
            "swarm run {run}: every member of pool:{pool} is at its usage limit; its tasks wait until {until} (in {wait})"
        ),
    })
}

/// The run ended: its summary as the terminal has it (the counts, what landed, the report).
pub fn ended(summary: &str) -> String {
    fit(&format!("swarm run ended\n{}", summary.trim_end()))
}

/// `text` with no secret in it, short enough for one message.
pub(super) fn fit(text: &str) -> String {
    crate::ui::cut(&crate::secret::redact(text), MOST_CHARS)
}

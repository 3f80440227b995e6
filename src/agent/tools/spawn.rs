//! The built-in agent's `add_tasks` and `capacity` tools: the tasks it adds are checked as
//! task-file lines and against what its attempt may spawn (`$SWARM_CAPACITY`, as it was when
//! the attempt started, less what it added since), then written to `$SWARM_SPAWN`, which swarm
//! reads once the attempt succeeds (see the manual's "Tasks that add tasks" (docs/src/task-files.md)). swarm checks them
//! again then: a refusal there (another task spawned first) is an event of the run.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Value, json};

use super::problem::{Problem, failed};

/// What an attempt may spawn, and where its spawn goes.
pub(super) struct Spawner {
    file: PathBuf,
    /// `$SWARM_CAPACITY` as the attempt got it.
    capacity: Value,
    /// Tasks this attempt has added.
    added: AtomicU64,
}

impl Spawner {
    /// The spawner of an attempt whose environment names its spawn file and capacity.
    pub(super) fn from_env(env: &[(String, String)]) -> Option<Self> {
        let var = |name: &str| env.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
        Some(Self {
            file: PathBuf::from(var("SWARM_SPAWN")?),
            capacity: serde_json::from_str(&var("SWARM_CAPACITY")?).ok()?,
            added: AtomicU64::new(0),
        })
    }

    fn left(&self, key: &str) -> u64 {
        self.capacity[key].as_u64().unwrap_or(0)
    }

    /// How many more tasks it may add now.
    fn room(&self) -> u64 {
        let added = self.added.load(Ordering::Relaxed);
        ["children_left", "run_left", "minute_left"]
            .iter()
            .map(|k| self.left(k).saturating_sub(added))
            .min()
            .unwrap_or(0)
    }

    pub(super) fn definitions() -> [Value; 2] {
        let task = json!({
            "type": "object",
            "description": "one task, as a line of a swarm task file: \"id\" (unique among \
                those you add; it becomes <this task>.<id>), \"prompt\" (what an agent is to \
                do; a task you add runs no command of its own, so no \"run\" or \"check\"), \
                and optionally \"deps\" (ids of tasks you add or of the run's tasks), \"mode\" \
                (\"read\" or \"write\"), \"title\", \"agent\", \"lane\", \"timeout\", \"then\", \
                \"spawn\" (the most tasks it may add in turn; leave it out and it adds none)",
            "properties": {
                "id": {"type": "string"},
                "prompt": {"type": "string"},
                "deps": {"type": "array", "items": {"type": "string"}},
                "mode": {"type": "string", "enum": ["read", "write"]},
                "title": {"type": "string"},
                "spawn": {"type": "integer", "minimum": 1},
            },
            "required": ["id"],
        });
        [
            json!({"type": "function", "function": {
                "name": "add_tasks",
                "description": "Add tasks to the run, for work you found that others can do \
                    in parallel. They start after you finish successfully, each depending on \
                    you, with your result and each other's as their deps say. Call capacity \
                    first to see how many you may add.",
                "parameters": {
                    "type": "object",
                    "properties": {"tasks": {"type": "array", "items": task}},
                    "required": ["tasks"],
                },
            }}),
            json!({"type": "function", "function": {
                "name": "capacity",
                "description": "How many tasks you may still add, and how busy the run is: \
                    running attempts, free slots, tasks left to you, levels your tasks may \
                    spawn below them, tasks left to the run and in this minute.",
                "parameters": {"type": "object", "properties": {}},
            }}),
        ]
    }

    /// The `capacity` tool's answer.
    pub(super) fn capacity(&self) -> String {
        let added = self.added.load(Ordering::Relaxed);
        let less = |k: &str| self.left(k).saturating_sub(added);
        json!({
            "running": self.capacity["running"],
            "free_slots": self.capacity["free_slots"],
            "children_left": less("children_left"),
            "depth_left": self.capacity["depth_left"],
            "run_left": less("run_left"),
            "minute_left": less("minute_left"),
            "may_add_now": self.room(),
        })
        .to_string()
    }

    /// The `add_tasks` tool: `arguments` holds `tasks`, a list of task objects.
    pub(super) fn add(&self, arguments: &str) -> Result<String, Problem> {
        let args: Value =
            serde_json::from_str(arguments).map_err(|e| failed(format!("bad arguments: {e}")))?;
        let Some(tasks) = args["tasks"].as_array().filter(|t| !t.is_empty()) else {
            return Err(failed("give `tasks`, a list of one task object or more"));
        };
        let n = tasks.len() as u64;
        let room = self.room();
        if n > room {
            let why = if self.left("children_left") == 0 && self.added.load(Ordering::Relaxed) == 0
            {
                "this task may not add tasks (its depth, or the run's limits)".to_owned()
            } else {
                format!("{n} tasks is more than the {room} you may add now")
            };
            return Err(failed(format!(
                "{why}; nothing was added, do the work yourself"
            )));
        }
        if let Some(t) = tasks.iter().find(|t| commands_in(t)) {
            return Err(failed(format!(
                "task {}: the tasks you add have a prompt and no check or run; nothing was added",
                t["id"]
            )));
        }
        let text = tasks.iter().fold(String::new(), |mut text, t| {
            let _ = writeln!(text, "{t}");
            text
        });
        let (_, problems) = crate::plan::Plan::read(&text);
        if let Some(p) = problems.first() {
            return Err(failed(format!(
                "task {} of the list: {}; nothing was added",
                p.line,
                p.what()
            )));
        }
        let mut append = std::fs::OpenOptions::new();
        append.create(true).append(true);
        crate::planted::open_with(&self.file, &mut append)
            .map_err(std::io::Error::from)
            .and_then(|mut f| f.write_all(text.as_bytes()))
            .map_err(|e| failed(format!("could not keep the tasks: {e}")))?;
        self.added.fetch_add(n, Ordering::Relaxed);
        let ids: Vec<&str> = tasks.iter().filter_map(|t| t["id"].as_str()).collect();
        Ok(format!(
            "added {n} task(s): {}. They join the run when you finish successfully; you may \
             add {} more.",
            ids.join(", "),
            self.room()
        ))
    }
}

/// Whether a task object (or its continuation) names a command.
fn commands_in(t: &Value) -> bool {
    t.get("run").is_some() || t.get("check").is_some() || t.get("then").is_some_and(commands_in)
}

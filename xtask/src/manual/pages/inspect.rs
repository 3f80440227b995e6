//! The pages of the commands that look at runs and change nothing: `runs`, `show`, `status`,
//! `logs`, `graph`, `web`.

use super::{BOARD_FILES, NO_JSON, RUN_FILES};
use crate::manual::Sections;

pub(super) const RUNS: Sections = Sections {
    page: "swarm-runs",
    description: &[],
    more: &[(
        "JSON output",
        &[
            "With **--json**, an array of objects, newest first, each with `id`, `started_at` and `finished_at` (milliseconds since the Unix epoch; `finished_at` is null until the run finishes), `status`, `reason` (null while it runs), `exit_code` (null while it runs), `duration_ms`, `tasks` and `source`. No runs: an empty array.",
        ],
    )],
    environment: &[],
    files: &[BOARD_FILES],
    see_also: &[
        "swarm-status(1)",
        "swarm-show(1)",
        "swarm-resume(1)",
        "swarm-drop(1)",
    ],
};

pub(super) const SHOW: Sections = Sections {
    page: "swarm-show",
    description: &[],
    more: &[(
        "JSON output",
        &[
            "With **--json**, one object: `run`, `id`, `title`, `lane`, `mode`, `deps`, `files`, `prompt` and `run_command` (one of them null), `spec` (the task in the task-file format), `status`, `error`, `result`, `tokens`, `cost`, `branch` and `branch_exists` (a merged writer's branch is deleted once merged), `start_commit`, `commit`, `changed_files` (null for a reader), `merge` (null, or an object with `state` (merged, parked or no-changes), `commit` and `paths`), `attempts` (each with `number`, `started_at`, `finished_at`, `duration_ms`, `outcome`, `reason`, `continued`, `tokens`, `cost` and `transcript`) and `transcript` (null, or an object with `path` and `tail`, its last lines).",
        ],
    )],
    environment: &[],
    files: &[BOARD_FILES, RUN_FILES],
    see_also: &["swarm-status(1)", "swarm-logs(1)", "swarm-runs(1)"],
};

pub(super) const STATUS: Sections = Sections {
    page: "swarm-status",
    description: &[],
    more: &[(
        "JSON output",
        &[
            "With **--json**, one object: `run` (the run as recorded: `id`, `created_at`, `finished_at`, `status`, `exit_code`, `source`, `base_commit`, `integration_ref` and `options`), `goals` (each with `id`, `text`, `needs`, `status`, `reason` and `queue_id`), `tasks` (each as recorded: `id`, `spec` (the task in the task-file format), `status`, `attempts`, `failures`, `result`, `error`, `transcript`, `started_at`, `finished_at`, `elapsed_ms` (so far, for a running task), `branch`, `start_commit`, `commit_id`, `tokens`, `cost` and `session`) and `counts` (the number of tasks in each status). Times are milliseconds since the Unix epoch.",
        ],
    )],
    environment: &[],
    files: &[BOARD_FILES],
    see_also: &["swarm-logs(1)", "swarm-resume(1)"],
};

pub(super) const LOGS: Sections = Sections {
    page: "swarm-logs",
    description: &[],
    more: &[(
        "JSON output",
        &[
            "With **--json**, one JSON object per line, as the log **events.jsonl** holds them: `seq`, `at` (milliseconds since the Unix epoch), `kind`, and `task` and `detail` where they apply. With **--path** and **--json**, one object: `events` (the log's path) and `transcripts` (with **--errors**, the paths of the failed attempts' transcripts; else empty).",
        ],
    )],
    environment: &[],
    files: &[BOARD_FILES, RUN_FILES],
    see_also: &["swarm-status(1)"],
};

pub(super) const GRAPH: Sections = Sections {
    page: "swarm-graph",
    description: &[],
    more: &[(
        "JSON output",
        &[
            "With **--json** (instead of **--format**), one object: `nodes` (each with `id`, `title`, `lane`, `mode`, `parent`, the task that spawned it or null, and, for a run, `status`; null for a task file) and `edges` (each with `from`, a dependency, and `to`, the task that needs it).",
        ],
    )],
    environment: &[],
    files: &[BOARD_FILES],
    see_also: &["swarm-tasks(5)", "dot(1)"],
};

pub(super) const WEB: Sections = Sections {
    page: "swarm-web",
    description: &[
        "A request without the URL's token is refused (403), so other users of the machine cannot read the run. A request whose Host header is not the page's own address (127.0.0.1, localhost, [::1] or the **--bind** address, with the port) is refused (421), so a page of another site that makes its name point at this machine (DNS rebinding) reads nothing. The page is embedded in swarm and fetches nothing from elsewhere; a running run's page follows it live (its events are streamed as server-sent events), a finished run's shows how it ended. At most an eighth of the file descriptor limit of pages (128 at most) follow a run at once; one more is refused (503) and asks again a few seconds later.",
    ],
    more: &[NO_JSON],
    environment: &[],
    files: &[BOARD_FILES, RUN_FILES],
    see_also: &["swarm-status(1)", "swarm-show(1)", "swarm-graph(1)"],
};

//! The pages of the commands that look at runs and change nothing: `runs`, `show`, `status`,
//! `logs`, `graph`.

use super::{BOARD_FILES, READ_EXIT, RUN_FILES};
use crate::manual::{Sections, item};

pub(super) const RUNS: Sections = Sections {
    page: "swarm-runs",
    description: &[],
    more: &[],
    exit_status: READ_EXIT,
    environment: &[],
    files: &[BOARD_FILES],
    examples: &[
        item("swarm runs", "Every run of this repository, newest first."),
        item(
            "swarm runs --json | jq -r '.[] | select(.status != \"finished\") | \"\\(.id) \\(.reason)\"'",
            "The runs a **swarm resume** (or **swarm drop**) would take, and why each stopped.",
        ),
    ],
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
    more: &[],
    exit_status: READ_EXIT,
    environment: &[],
    files: &[BOARD_FILES, RUN_FILES],
    examples: &[
        item(
            "swarm show t4",
            "Task t4 of the newest run: what it was asked, each attempt and why it ended, its result, its branch and changed files, and the end of its transcript.",
        ),
        item(
            "swarm show t4 --run 20261129-071300-ab12",
            "The same task of an older run (TAB completes run ids).",
        ),
        item(
            "swarm show t4 --json | jq -r '.attempts[] | .reason'",
            "Why each of its attempts ended.",
        ),
    ],
    see_also: &["swarm-status(1)", "swarm-logs(1)", "swarm-runs(1)"],
};

pub(super) const STATUS: Sections = Sections {
    page: "swarm-status",
    description: &[
        "Prints the run (id, status and exit code, base commit, what it ran), its goals with their status and needs, and each task with its status, attempts, time and error. With **--json**: one object with **run**, **goals** and **tasks** as the board holds them.",
    ],
    more: &[],
    exit_status: READ_EXIT,
    environment: &[],
    files: &[BOARD_FILES],
    examples: &[
        item("swarm status", "The newest run."),
        item(
            "swarm status 20261129-071300-ab12",
            "A given run (TAB completes run ids).",
        ),
        item(
            "swarm status --json | jq -r '.tasks[] | select(.status == \"failed\") | .id'",
            "The ids of the newest run's failed tasks.",
        ),
    ],
    see_also: &["swarm-logs(1)", "swarm-resume(1)"],
};

pub(super) const LOGS: Sections = Sections {
    page: "swarm-logs",
    description: &[
        "Each event is a line: its time (UTC), its kind, its task and its details. With **--json**, the events as stored, one JSON object a line. **--follow** keeps printing until the run is no longer running.",
    ],
    more: &[],
    exit_status: READ_EXIT,
    environment: &[],
    files: &[BOARD_FILES, RUN_FILES],
    examples: &[
        item(
            "swarm logs --errors",
            "The newest run's failures and errors, then the transcripts of its failed attempts.",
        ),
        item(
            "swarm logs --follow --tail 20",
            "The last 20 events, then new ones as they come, until the run ends.",
        ),
        item(
            "less \"$(swarm logs --errors --path | sed -n 2p)\"",
            "Read the transcript of the first failed attempt.",
        ),
        item(
            "swarm logs --json | jq -c 'select(.kind == \"merged\")'",
            "The merges of the newest run, as JSON.",
        ),
    ],
    see_also: &["swarm-status(1)"],
};

pub(super) const GRAPH: Sections = Sections {
    page: "swarm-graph",
    description: &[
        "For a run, each task is coloured by its status. A task file is validated first, as **swarm run** would.",
    ],
    more: &[],
    exit_status: &[
        item("0", "The graph was printed."),
        item("1", "swarm itself failed (the board could not be read)."),
        item(
            "2",
            "Usage or input error: a task file with problems (each listed with its line), no run of that id, no runs yet, or not a git repository.",
        ),
    ],
    environment: &[],
    files: &[BOARD_FILES],
    examples: &[
        item(
            "swarm graph",
            "The newest run's DAG as a Mermaid flowchart.",
        ),
        item(
            "swarm graph tasks.jsonl --format dot | dot -Tsvg > plan.svg",
            "A task file's DAG drawn by Graphviz.",
        ),
    ],
    see_also: &["swarm-tasks(5)", "dot(1)"],
};

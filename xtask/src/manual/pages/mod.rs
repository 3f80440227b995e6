//! The hand-written sections of each command's page, as data. Text uses `**bold**`, `_italic_`
//! and `` `code` ``; everything else is escaped for roff and for Markdown. Facts here are the
//! code's: keep them true when the behaviour changes (the guide in docs/src says the same things at
//! more length). The examples and the exit codes are `swarm::cli`'s, which `--help` shows too.
//!
//! Here: the list of pages and the blocks several pages share. The pages themselves are grouped
//! by what their commands do: running work (`run`), looking at runs (`inspect`), setting swarm
//! up and cleaning after it (`setup`).

use super::{Item, Sections, item};

mod inspect;
mod run;
mod setup;

use inspect::{GRAPH, LOGS, RUNS, SHOW, STATUS, WEB};
use run::{QUEUE, QUEUE_ADD, QUEUE_LIST, QUEUE_RM, QUEUE_RUN, RESUME, RETRY, RUN, SWARM, WORKER};
use setup::{CI, COMPLETIONS, CONFIG, DROP, GC};

/// Every page with sections of its own. A command missing here gets the generated sections, its
/// examples and its exit codes.
pub const PAGES: &[Sections] = &[
    SWARM,
    RUN,
    RESUME,
    RETRY,
    DROP,
    RUNS,
    SHOW,
    STATUS,
    LOGS,
    GRAPH,
    CONFIG,
    QUEUE,
    QUEUE_ADD,
    QUEUE_LIST,
    QUEUE_RM,
    QUEUE_RUN,
    GC,
    WEB,
    WORKER,
    COMPLETIONS,
    CI,
];

// ---- Blocks shared by several pages ----

/// What a run prints with **--json** (`swarm --goal`, `run`, `resume`, `retry`, `queue run`).
const SUMMARY_JSON: &str = "With **--json**, the summary is one JSON object on stdout: `run` (its id), `status`, `exit_code`, `base`, `integration_branch`, `counts` (the number of tasks in each status), `tasks` (each with `id`, `status`, `attempts`, `continued` (the numbers of the attempts that continued an agent's session), `elapsed_ms`, `error` and `transcript`), `goals` (each with `id`, `text`, `status`, `reason`, `needs` and `tasks`), `parked` (each with `task`, `branch`, `paths` and `reason`), `landing` and `report` (the path of the report).";

/// The summary's `landing`.
const LANDING_JSON: &str = "`landing` says what became of the merged work: `action` (fast-forwarded, kept, nothing-merged, interrupted, stopped, halted or over-budget), `branch` (the branch that holds the work; null when nothing was merged), `commit`, `reason` (why it was not landed), `command` (what to run next: the `git merge` that takes the work, or the `swarm resume` that continues the run) and `message` (the sentence the text summary prints; null with **--land none**).";

/// The JSON OUTPUT of the commands that run work.
const RUN_JSON: (&str, &[&str]) = ("JSON output", &[SUMMARY_JSON, LANDING_JSON]);

/// What a command without JSON output says of it.
const NO_JSON: (&str, &[&str]) = (
    "JSON output",
    &["None: with **--json**, swarm says so and exits 2."],
);

/// The variables every run reads: one per setting, below flags and above the config files. The
/// list of them is made from the options' declaration (`Env::Settings`).
const SETTINGS_ENV: &[Item] = &[item(
    "SWARM_*",
    "Every setting that a config file may hold has a variable, named after its key: a flag given on the command line wins over the variable, the variable over **.swarm.toml**, that over the user's config file, that over the default. An empty variable counts as unset; one that does not parse stops swarm with exit 2, naming it. These are they:",
)];

/// The model endpoint of the planner and the built-in agent.
const MODEL_ENV: &[Item] = &[
    item(
        "SWARM_API_BASE, OPENAI_BASE_URL",
        "The OpenAI-compatible endpoint when **--api-base** is not given, the first that is set; else https://api.openai.com/v1. With neither a base nor a key set, the built-in agent is not configured (and **--goal** stops with exit 2, saying how to configure one).",
    ),
    item(
        "SWARM_API_KEY, OPENAI_API_KEY",
        "The key, the first that is set. It has no flag and no config key, so it stays out of process lists and repositories. No agent or command but the built-in client ever receives it, and its value is replaced by [redacted] in transcripts, events, the board and reports.",
    ),
    item(
        "SWARM_MODEL, OPENAI_MODEL",
        "The model when **--model** is not given, the first that is set; else gpt-4o-mini.",
    ),
];

/// What swarm itself reads besides its settings.
const PROCESS_ENV: &[Item] = &[
    item(
        "SWARM_REMOTE_KEY",
        "For a run spread over machines (**--remote**, **swarm worker**): a secret the coordinator and every worker share (at least 16 bytes, e.g. from **openssl rand -hex 32**). With it, every record on the remote is signed (HMAC-SHA256), the coordinator refuses leases and results without a good signature, and a worker runs only runs signed with it; a worker without it refuses a signed run. No task, agent or command ever receives it, and its value is replaced by [redacted] wherever swarm writes.",
    ),
    item(
        "SWARM_REMOTE_POLL",
        "How often the coordinator and workers of a run spread over machines fetch the remote, in seconds (e.g. 0.5), from 0.01 to 600; 2 when unset. Another value is a usage error (exit 2), and so is a worker's poll longer than a third of its **--lease**.",
    ),
    item(
        "SWARM_TELEGRAM_TOKEN, SWARM_TELEGRAM_CHAT_IDS",
        "With both set, a run is mirrored to Telegram: each allowed chat (**SWARM_TELEGRAM_CHAT_IDS**, integer ids separated by commas) is sent its start, each escalation with the commands that resolve it, its pauses at usage limits and its end, and may send **/status**, **/goal** _TEXT_ (queued as **swarm queue add** does), **/stop** (as a first Ctrl-C) and **/resume** back; a message from another chat changes nothing and is noted in the run's **mirror.log**. With either unset, nothing is sent or read. A chat id that is not an integer or a token with whitespace is a usage error (exit 2). The token's value is replaced by [redacted] wherever swarm writes; the Bot API being away never fails, slows or stops a run.",
    ),
    item(
        "SWARM_TELEGRAM_API",
        "The Bot API's base URL for the mirror (a self-hosted Bot API server); else https://api.telegram.org. One that is not an http(s) URL is a usage error (exit 2).",
    ),
    item(
        "SWARM_ACTIVE",
        "Set (to 1) in every task's, agent's and hook's environment. A swarm that finds it set, started inside a task or a git hook that a task triggered, does nothing, says why and exits 0.",
    ),
    item(
        "GIT_INDEX_FILE, GIT_DIR",
        "Set by git inside its hooks: then landing defaults to **--land branch** (as with **--from-hook**), so the checkout git is working on is never touched. Every **GIT_*** variable is removed from what tasks and agents inherit.",
    ),
    item(
        "XDG_CACHE_HOME, HOME",
        "Task checkouts and snapshots go under **$XDG_CACHE_HOME/swarm/worktrees/**, else **~/.cache/swarm/worktrees/** (**~/Library/Caches/swarm/worktrees/** on macOS), unless **--worktree-dir** says otherwise.",
    ),
    item(
        "XDG_CONFIG_HOME",
        "The user's config file is **$XDG_CONFIG_HOME/swarm/config.toml**, else **~/.config/swarm/config.toml**.",
    ),
    item(
        "TERM",
        "With **TERM** unset or **dumb**, or when stderr is not a terminal, progress is plain lines instead of the live display.",
    ),
    item(
        "NO_COLOR, CLICOLOR_FORCE, CLICOLOR",
        "Colours on stderr with **--color auto** (the default): **NO_COLOR** (set and not empty) turns them off, **CLICOLOR_FORCE** (not 0) turns them on even off a terminal, **CLICOLOR=0** turns them off; else a terminal gets them. **--color always** or **never** overrides all three.",
    ),
    item(
        "VISUAL, EDITOR",
        "The editor **e** opens at the question before a goal's plan runs (run with **sh -c**, so **EDITOR=\"code --wait\"** works); **vi** when neither is set.",
    ),
    item(
        "COMPLETE",
        "Set by the completion script (**COMPLETE=bash swarm --** _words_): swarm prints the completions of the words and exits. See **swarm-completions**(1).",
    ),
];

/// What every task and agent finds in its environment.
const TASK_ENV: &[Item] = &[
    item(
        "SWARM_RUN_ID, SWARM_TASK_ID, SWARM_MODE, SWARM_ATTEMPT",
        "Given to every attempt: the run id, the task's id, read or write, and the attempt's number (1, 2, …). A conflict-resolving attempt (**--resolve-conflicts**) also gets **SWARM_RESOLVING=1**.",
    ),
    item(
        "SWARM_REPO_NAME",
        "The name of your checkout's directory (the task's own directory is a checkout named by swarm).",
    ),
    item(
        "SWARM_DEPS_DIR, SWARM_DEPS",
        "For **run** tasks: the directory holding each dependency's result as _dep_**.txt**, and the dependencies' ids separated by spaces, in the order of **deps**.",
    ),
];

/// The repository's files every command that opens the board uses.
const BOARD_FILES: &[Item] = &[
    item(
        ".git/swarm/board.db",
        "The board: an SQLite database (WAL) with the runs, goals, tasks, attempts, merges and the queue; in the git common directory, so shared by all worktrees of a clone. swarm migrates it, and never recreates or deletes it.",
    ),
    item(
        ".git/swarm/lock",
        "Held by the running swarm (its pid and run are written in it), released by the system however the process ends.",
    ),
];

/// A run's own files.
const RUN_FILES: &[Item] = &[
    item(
        ".git/swarm/runs/RUN/plan.jsonl",
        "The plan as run, in the task-file format (see **swarm-tasks**(5)).",
    ),
    item(
        ".git/swarm/runs/RUN/events.jsonl",
        "The event log, one JSON object a line (**swarm logs** shows it).",
    ),
    item(
        ".git/swarm/runs/RUN/attempts/",
        "One transcript per attempt, _task_**.**_n_**.log** (its command, stderr, stdout and outcome, at most **transcript-cap** of what it printed), and beside them _task_**.**_n_**.check.log** (the writer's check), _task_**.resolve.log** (a conflict-resolving attempt) and _task_**.escalate.log** (the **--on-escalate** command); a Codex attempt's output is kept in _task_**.**_n_**.stdout** while it runs.",
    ),
    item(
        ".git/swarm/runs/RUN/report.md",
        "The report: the deliverable, then the run summary (also written to **--final-out**).",
    ),
    item(
        ".git/swarm/runs/RUN/mirror.log",
        "What the Telegram mirror ignored (a message from a chat not allowed) or could not send, one line each, with no secret in it; only when the mirror runs (see **SWARM_TELEGRAM_TOKEN**).",
    ),
    item(
        ".git/swarm/runs/RUN/goal.md, plan-only, guarded, checkouts, landing/, deps/",
        "A single goal's text (for a resume of a run stopped while planning), and that it was started with **--plan-only** (so that resume plans it only); the files whose changes are parked for review; the directory of the run's checkouts (for **swarm gc**); the landed files while a landing is under way; the dependencies' results of **run** tasks where the system has no **/dev/shm** (else **/dev/shm/swarm-**_uid_**/**_run_**/**_task_).",
    ),
    item(
        "~/.cache/swarm/worktrees/REPO-HASH/RUN/",
        "Task checkouts and read-only snapshots, outside your working tree (see **XDG_CACHE_HOME**, **--worktree-dir**); a writer's checkout is in **(checkouts)/**, linked from its task's name, and stays there when it is set aside for the next writer. A failed writer's checkout stays until **swarm gc**.",
    ),
];

/// The config files.
const CONFIG_FILES: &[Item] = &[
    item(
        ".swarm.toml",
        "At the top of the repository: settings (TOML, the flags' names as keys: **jobs**, **max-writers**, **agent**, **check**, **land**, …) and agent profiles (**[agents.**_name_**]** with **kind**, **command**, **args**, **reader-args**, **writer-args**, **parser**, **pass-env**, **drop-env**, **set-env**, **max-concurrent**) and pools (**[pools.**_name_**]** with **members**, used as **--agent pool:**_name_), and the limits on tasks that add tasks (**spawning**, **max-children**, **max-depth**, **max-spawned**, **spawns-per-minute**; see the manual), and **transcript-cap**. It names commands swarm runs: read it before running swarm in a repository you did not write. A writer that changes it is parked for review.",
    ),
    item(
        "~/.config/swarm/config.toml",
        "The user's config file, below **.swarm.toml** (**$XDG_CONFIG_HOME/swarm/config.toml** when that is set; **--config** _file_ is read in its place). A repository's profile replaces a user profile of the same name.",
    ),
];

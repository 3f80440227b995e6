//! The hand-written sections of each command's page, as data. Text uses `**bold**` and
//! `_italic_`; everything else is escaped for roff. Facts here are the code's: keep them true
//! when the behaviour changes (the manual in docs/src says the same things at more length).
//!
//! Here: the list of pages and the blocks several pages share. The pages themselves are grouped
//! by what their commands do: running work (`run`), looking at runs (`inspect`), setting swarm
//! up and cleaning after it (`setup`).

use super::{Item, Sections, item};

mod inspect;
mod run;
mod setup;

use inspect::{GRAPH, LOGS, RUNS, SHOW, STATUS};
use run::{QUEUE, QUEUE_ADD, QUEUE_LIST, QUEUE_RM, QUEUE_RUN, RESUME, RETRY, RUN, SWARM};
use setup::{CI, COMPLETIONS, CONFIG, DROP, GC};

/// Every page with sections of its own. A command missing here gets the generated sections and
/// the common exit codes.
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
    COMPLETIONS,
    CI,
];

// ---- Blocks shared by several pages ----

/// What a run (from a goal, a task file, the queue or a resume) exits with.
const RUN_EXIT: &[Item] = &[
    item(
        "0",
        "Every task is done and every writer merged into the integration branch **swarm/**_run_ (landed on your branch, or left there, as **--land** says). Also: **--plan-only** once the plan is written; a **queue run** with an empty queue; and a swarm started inside a swarm task or hook (**SWARM_ACTIVE** set), which does nothing and says why.",
    ),
    item(
        "1",
        "Some tasks failed (their attempts and retries used up) or were skipped (a dependency failed), a goal failed or its planning did, or nothing could become ready any more (a deadlock, named in the report); the other tasks ran and their work was merged. Also: swarm itself failed (an error that is none of the below, printed as **error:** with its causes). An internal error (a bug, printed as **error: internal error:**) exits 1 too; what ran is on record and **swarm resume** goes on from there.",
    ),
    item(
        "2",
        "Usage or input error; nothing ran: a bad flag or value, a task file with problems (each listed with its line), a bad config file or **SWARM_*** variable, no agent or model configured for prompt tasks, a bad output file (**--final-out**, **--final-out-dir**, **--plan-out**), a **--base** that names no commit, a **--worktree-dir** inside the checkout, not a git repository, an empty repository, or a merge, rebase, cherry-pick, revert or bisect open in a checkout the run would land on. Also, during a run: a model endpoint that refuses swarm's key (HTTP 401 or 403): the run stops at once and is resumable once **SWARM_API_KEY** is fixed.",
    ),
    item(
        "3",
        "Needs a human. A writer was parked: its merge conflicted, or it changed a file swarm reads commands from (**.swarm.toml**, the run's task file or **--config** file when tracked) or wrote a secret's value, so it waits for review. Or something other than swarm moved the integration branch: the run stopped starting tasks and did not land. Parked branches **swarm/**_run_**-**_task_ are kept; the report's \"Needs attention\" section gives the commands to inspect and merge them, and **--on-escalate** ran once for each. Parking comes before failures: a run with both exits 3.",
    ),
    item(
        "4",
        "Another swarm holds the repository (its lock **.git/swarm/lock**); the message names its process and run. Nothing ran. Wait for it, or stop it with Ctrl-C and **swarm resume** it later.",
    ),
    item(
        "75",
        "Stopped early, resumable: **swarm resume** continues where it stopped, running no finished task again and repeating no merge. Causes: the first Ctrl-C or SIGTERM (a second one kills the running attempts at once, and also exits 75); the token budget (**--budget-tokens**) spent; an agent's usage limit that resets more than an hour away, or never by itself (for a pool, once every member's does); a fault of the machine (a full disk, named with the path and the disk, wherever swarm or a task met it, the board included; too few file descriptors); a model endpoint that stopped answering for longer than **--endpoint-wait**; your checkout changing while a task ran. A goal stopped while it was planned is planned again by the resume.",
    ),
    item(
        "130, 143",
        "A signal (128 plus its number: 130 for SIGINT, 143 for SIGTERM) ended swarm before a run had started, when there was nothing to stop and nothing to resume.",
    ),
];

/// What the commands that only read the board exit with.
const READ_EXIT: &[Item] = &[
    item("0", "The answer was printed."),
    item(
        "1",
        "swarm itself failed: the board could not be read (a damaged board is named, with what to do), or a run's files are missing.",
    ),
    item(
        "2",
        "Usage error: a bad flag, not a git repository, no runs in this repository yet, or no run of that id.",
    ),
    item("130, 143", "Interrupted by a signal (128 plus its number)."),
];

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
        "Set by the completion script (**COMPLETE=bash swarm -- **_words_): swarm prints the completions of the words and exits. See **swarm-completions**(1).",
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

//! The hand-written sections of each command's page, as data. Text uses `**bold**` and
//! `_italic_`; everything else is escaped for roff. Facts here are the code's: keep them true
//! when the behaviour changes (the README says the same things at more length).

use super::{Item, Sections, item};

/// Every page with sections of its own. A command missing here gets the generated sections and
/// the common exit codes.
pub(crate) const PAGES: &[Sections] = &[
    SWARM,
    RUN,
    RESUME,
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
        "Stopped early, resumable: **swarm resume** continues where it stopped, running no finished task again and repeating no merge. Causes: the first Ctrl-C or SIGTERM (a second one kills the running attempts at once, and also exits 75); the token budget (**--budget-tokens**) spent; an agent's usage limit that resets more than an hour away, or never by itself (for a pool, once every member's does); a fault of the machine (a full disk, too few file descriptors); a model endpoint that stopped answering for longer than **--endpoint-wait**; your checkout changing while a task ran. A goal stopped while it was planned is planned again by the resume.",
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

/// The variables every run reads: one per setting, below flags and above the config files.
const SETTINGS_ENV: &[Item] = &[
    item(
        "SWARM_JOBS, SWARM_MAX_WRITERS, SWARM_AGENT, SWARM_MODEL, SWARM_API_BASE",
        "The settings of **-j**, **--max-writers**, **--agent**, **--model** and **--api-base**. Every setting has a variable, named after its flag: a flag given on the command line wins over the variable, the variable over **.swarm.toml**, that over the user's config file, that over the default. An empty variable counts as unset; one that does not parse stops swarm with exit 2, naming it.",
    ),
    item(
        "SWARM_REQUEST_TIMEOUT, SWARM_ENDPOINT_WAIT, SWARM_MAX_TURNS, SWARM_MAX_TASK_TOKENS, SWARM_BUDGET_TOKENS",
        "**--request-timeout**, **--endpoint-wait**, **--max-turns**, **--max-task-tokens** and **--budget-tokens**.",
    ),
    item(
        "SWARM_ALLOW_PROGRAMS",
        "**--allow-program**, several separated by commas.",
    ),
    item(
        "SWARM_TASK_TIMEOUT, SWARM_STALL_TIMEOUT, SWARM_KILL_GRACE, SWARM_RETRIES, SWARM_CHECK",
        "**--task-timeout**, **--stall-timeout**, **--kill-grace**, **--retries** and **--check**.",
    ),
    item(
        "SWARM_LAND, SWARM_WORKTREE_DIR, SWARM_ON_ESCALATE",
        "**--land**, **--worktree-dir** and **--on-escalate**.",
    ),
    item(
        "SWARM_RESOLVE_CONFLICTS, SWARM_FRESH_RETRIES",
        "**--resolve-conflicts** and **--fresh-retries**: 1, true or yes; 0, false or no.",
    ),
];

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
        "One transcript per attempt, _task_**.**_n_**.log** (its command, stderr, stdout and outcome), and beside them _task_**.**_n_**.check.log** (the writer's check), _task_**.resolve.log** (a conflict-resolving attempt) and _task_**.escalate.log** (the **--on-escalate** command); a Codex attempt's output is kept in _task_**.**_n_**.stdout** while it runs.",
    ),
    item(
        ".git/swarm/runs/RUN/report.md",
        "The report: the deliverable, then the run summary (also written to **--final-out**).",
    ),
    item(
        ".git/swarm/runs/RUN/goal.md, guarded, checkouts, landing/, deps/",
        "A single goal's text (for a resume of a run stopped while planning); the files whose changes are parked for review; the directory of the run's checkouts (for **swarm gc**); the landed files while a landing is under way; the dependencies' results of **run** tasks where the system has no **/dev/shm** (else **/dev/shm/swarm-**_uid_**/**_run_**/**_task_).",
    ),
    item(
        "~/.cache/swarm/worktrees/REPO-HASH/RUN/",
        "Task checkouts and read-only snapshots, outside your working tree (see **XDG_CACHE_HOME**, **--worktree-dir**); merged writers' checkouts set aside for the next writers are under **(set aside)/**. A failed writer's checkout stays until **swarm gc**.",
    ),
];

/// The config files.
const CONFIG_FILES: &[Item] = &[
    item(
        ".swarm.toml",
        "At the top of the repository: settings (TOML, the flags' names as keys: **jobs**, **max-writers**, **agent**, **check**, **land**, …) and agent profiles (**[agents.**_name_**]** with **kind**, **command**, **args**, **reader-args**, **writer-args**, **parser**, **pass-env**, **drop-env**, **set-env**, **max-concurrent**) and pools (**[pools.**_name_**]** with **members**, used as **--agent pool:**_name_). It names commands swarm runs: read it before running swarm in a repository you did not write. A writer that changes it is parked for review.",
    ),
    item(
        "~/.config/swarm/config.toml",
        "The user's config file, below **.swarm.toml** (**$XDG_CONFIG_HOME/swarm/config.toml** when that is set; **--config** _file_ is read in its place). A repository's profile replaces a user profile of the same name.",
    ),
];

// ---- The pages ----

const SWARM: Sections = Sections {
    page: "swarm",
    description: &[
        "With **--goal**, the model named by **--model** plans the goal into a DAG of tasks (one function call; the plan is validated and repaired, each repair recorded), then the tasks run: at most **-j** at once, readers in a shared read-only snapshot, each writer in a checkout of its own on branch **swarm/**_run_**-**_task_ outside your working tree. Finished writers are merged one at a time, in memory, into the run's integration branch **swarm/**_run_; a conflicting writer is parked (its branch kept) and escalated once, and the rest go on. At the end the reducer's result and a run summary make the report, and your branch is fast-forwarded when that is safe (**--land**).",
        "A plan can also be written by hand or saved with **--plan-out** and run with **swarm run**; its format is **swarm-tasks**(5). Several **--goal**s (or **--goals-file**) run as one run: the model infers which goal needs which, and a goal that needs others is planned once they are merged.",
        "Progress goes to stderr (bars on a terminal, plain lines otherwise, nothing with **-q**); the final summary goes to stdout (JSON with **--json**).",
    ],
    more: &[],
    exit_status: RUN_EXIT,
    environment: &[SETTINGS_ENV, MODEL_ENV, PROCESS_ENV, TASK_ENV],
    files: &[CONFIG_FILES, BOARD_FILES, RUN_FILES],
    examples: &[
        item(
            "swarm --goal \"Add request tracing to every handler and document it\" --final-out report.md",
            "Plan a goal with the model, run it, land the merged work on your branch and write the report to report.md.",
        ),
        item(
            "SWARM_API_BASE=http://localhost:11434/v1 SWARM_MODEL=qwen2.5-coder swarm --goal \"Write a summary of each module\"",
            "Plan and run with a local model server (Ollama) instead of OpenAI.",
        ),
        item(
            "swarm --goal \"Split the parser into modules\" --plan-only --plan-out plan.jsonl\nswarm run plan.jsonl",
            "Plan only, read or edit the plan, then run it unchanged.",
        ),
        item(
            "swarm --goal \"Upgrade the HTTP client\" --goal \"Add retries to every caller of the HTTP client\" --final-out report.md --final-out-dir reports/",
            "Two goals in one run: the model finds that the second needs the first, so the second is planned once the first is merged; one report in all, and one per goal in reports/.",
        ),
        item(
            "swarm --goal \"Fix the failing tests\" --agent claude -j 6 --max-writers 3 --check \"cargo test --quiet\" --land branch",
            "Let Claude Code do the tasks, at most 3 writers at once, each checked before it is merged, and leave the result on swarm/RUN instead of landing it.",
        ),
        item(
            "swarm resume",
            "After Ctrl-C, a full disk or a spent budget (exit 75): go on with the newest unfinished run.",
        ),
        item(
            "swarm status && swarm logs --errors",
            "See where the newest run stands, then its failures with the paths of their transcripts.",
        ),
        item(
            "source <(swarm completions bash)",
            "Turn on completions in this bash session (put the line in ~/.bashrc to keep them; see swarm-completions(1) for zsh and fish).",
        ),
    ],
    see_also: &[
        "swarm-run(1)",
        "swarm-resume(1)",
        "swarm-status(1)",
        "swarm-logs(1)",
        "swarm-graph(1)",
        "swarm-config(1)",
        "swarm-queue(1)",
        "swarm-gc(1)",
        "swarm-completions(1)",
        "swarm-tasks(5)",
        "git(1)",
    ],
};

const RUN: Sections = Sections {
    page: "swarm-run",
    description: &[
        "The task file holds one JSON object a line; **swarm-tasks**(5) describes every field. It is validated whole before anything runs: every problem is reported at once with its line number, and swarm exits 2.",
    ],
    more: &[],
    exit_status: RUN_EXIT,
    environment: &[SETTINGS_ENV, MODEL_ENV, PROCESS_ENV, TASK_ENV],
    files: &[CONFIG_FILES, BOARD_FILES, RUN_FILES],
    examples: &[
        item(
            "swarm run examples/repo-report.jsonl --final-out report.md",
            "Run the example plan of swarm's repository (shell commands only, no model needed) and write report.md.",
        ),
        item(
            "swarm run tasks.jsonl -j 8 --max-writers 2 --check \"cargo test --quiet\"",
            "Eight tasks at once, two of them writers, each writer's branch tested before it is merged.",
        ),
        item(
            "swarm run tasks.jsonl --agent \"exec:my-agent --fast\" --task-timeout 20m --retries 2",
            "Send prompt tasks to a program of your own (prompt on stdin, result on stdout), 20 minutes an attempt, up to 3 attempts.",
        ),
        item(
            "swarm run tasks.jsonl --budget-tokens 2000000 --land branch",
            "Stop starting tasks after 2 million tokens (exit 75, resumable), and leave the result on swarm/RUN.",
        ),
        item(
            "swarm -C ../other run \"$PWD/tasks.jsonl\" --final-out \"$PWD/other-report.md\"",
            "Run in another repository; with -C, relative paths are taken from there, as with git -C.",
        ),
        item(
            "swarm run tasks.jsonl --json > summary.json",
            "The final summary as JSON on stdout, progress on stderr.",
        ),
    ],
    see_also: &["swarm-tasks(5)", "swarm-resume(1)", "swarm-status(1)"],
};

const RESUME: Sections = Sections {
    page: "swarm-resume",
    description: &[
        "A run keeps the settings it started with; options given to **resume** replace them. Tasks that finished are not run again and merges already recorded are not repeated; attempts cut short are run again (a Claude or Codex attempt continues its session unless **--fresh-retries**); a landing cut short is finished.",
    ],
    more: &[],
    exit_status: &[
        item(
            "0, 1, 3, 4, 75",
            "As for the run itself: see **swarm**(1). A resumed run that stops again (exit 75) can be resumed again.",
        ),
        item(
            "2",
            "Usage error: there is no unfinished run (or no run of that id), the run finished already, it was stopped before its plan was stored, or the options given are bad; nothing ran.",
        ),
    ],
    environment: &[SETTINGS_ENV, MODEL_ENV, PROCESS_ENV],
    files: &[BOARD_FILES, RUN_FILES],
    examples: &[
        item("swarm resume", "Continue the newest unfinished run."),
        item(
            "swarm resume 20261129-071300-ab12 -j 2",
            "Continue a given run, two tasks at a time from now on.",
        ),
        item(
            "swarm resume --budget-tokens 4000000",
            "Continue a run that stopped at its token budget, with a larger one.",
        ),
    ],
    see_also: &["swarm-status(1)", "swarm-logs(1)"],
};

const RUNS: Sections = Sections {
    page: "swarm-runs",
    description: &[],
    more: &[],
    exit_status: READ_EXIT,
    environment: &[],
    files: &[BOARD_FILES],
    examples: &[
        item("swarm runs", "Every run of this repository, newest first."),
        item(
            "swarm runs --json | jq -r '.[] | select(.status == \"interrupted\") | .id'",
            "The runs a **swarm resume** would go on with.",
        ),
    ],
    see_also: &["swarm-status(1)", "swarm-show(1)", "swarm-resume(1)"],
};

const SHOW: Sections = Sections {
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

const STATUS: Sections = Sections {
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

const LOGS: Sections = Sections {
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

const GRAPH: Sections = Sections {
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

const CONFIG: Sections = Sections {
    page: "swarm-config",
    description: &[
        "Settings come from, highest first: flags, **SWARM_*** variables, **.swarm.toml** at the top of the repository, the user's config file, the defaults. A resumed run keeps the settings it started with.",
    ],
    more: &[],
    exit_status: &[
        item("0", "The settings were printed."),
        item(
            "2",
            "A config file or **SWARM_*** variable does not parse (an unknown key, a value of the wrong type): the message names the file and line, or the variable.",
        ),
    ],
    environment: &[SETTINGS_ENV, MODEL_ENV],
    files: &[CONFIG_FILES],
    examples: &[
        item(
            "swarm config",
            "Every setting, its value and where it came from, and the agent profiles.",
        ),
        item(
            "SWARM_JOBS=8 swarm config --json",
            "The same as JSON, with a variable's effect.",
        ),
        item(
            "swarm config --config ci.toml",
            "What a run would use with ci.toml in place of the user's file.",
        ),
    ],
    see_also: &[],
};

const QUEUE: Sections = Sections {
    page: "swarm-queue",
    description: &[
        "The queue lives in the board (**.git/swarm/board.db**), so it survives restarts and is shared by everyone using the clone. **add**, **list** and **rm** take no lock and work while a run is going.",
    ],
    more: &[],
    exit_status: &[],
    environment: &[],
    files: &[BOARD_FILES],
    examples: &[
        item(
            "swarm queue add \"Upgrade the HTTP client\"",
            "Queue a goal; its number is printed.",
        ),
        item(
            "swarm queue run --final-out report.md",
            "Run every queued goal as one run.",
        ),
    ],
    see_also: &[
        "swarm-queue-add(1)",
        "swarm-queue-list(1)",
        "swarm-queue-rm(1)",
        "swarm-queue-run(1)",
    ],
};

const QUEUE_ADD: Sections = Sections {
    page: "swarm-queue-add",
    exit_status: &[
        item("0", "The goal was queued."),
        item("2", "The goal is empty, or not a git repository."),
    ],
    files: &[BOARD_FILES],
    examples: &[
        item(
            "swarm queue add Add retries to every caller of the HTTP client",
            "The words are joined with spaces: quoting is optional.",
        ),
        item(
            "git diff --name-only | xargs -I{} swarm queue add \"Review {}\"",
            "One goal per changed file.",
        ),
    ],
    see_also: &["swarm-queue(1)", "swarm-queue-run(1)"],
    ..Sections::NONE
};

const QUEUE_LIST: Sections = Sections {
    page: "swarm-queue-list",
    exit_status: &[
        item(
            "0",
            "The list was printed (nothing when the queue is empty).",
        ),
        item("2", "Usage error, or not a git repository."),
    ],
    files: &[BOARD_FILES],
    examples: &[
        item(
            "swarm queue list",
            "The queued goals, and the run and status of those taken.",
        ),
        item("swarm queue list --json", "The same as JSON."),
    ],
    see_also: &["swarm-queue(1)"],
    ..Sections::NONE
};

const QUEUE_RM: Sections = Sections {
    page: "swarm-queue-rm",
    exit_status: &[
        item("0", "The goal was removed."),
        item(
            "2",
            "No goal of that number, or a run has taken it already (the message names the run).",
        ),
    ],
    files: &[BOARD_FILES],
    examples: &[item(
        "swarm queue rm 2",
        "Remove goal 2 while no run has taken it.",
    )],
    see_also: &["swarm-queue(1)", "swarm-queue-list(1)"],
    ..Sections::NONE
};

const QUEUE_RUN: Sections = Sections {
    page: "swarm-queue-run",
    description: &[
        "Goals added while it runs are taken within a second, and once more before the run ends. A goal leaves the queue when the run that took it finishes, whatever its outcome; a run stopped by Ctrl-C or kill -9 keeps its goals for **swarm resume**.",
    ],
    more: &[],
    exit_status: RUN_EXIT,
    environment: &[SETTINGS_ENV, MODEL_ENV, PROCESS_ENV, TASK_ENV],
    files: &[CONFIG_FILES, BOARD_FILES, RUN_FILES],
    examples: &[
        item(
            "swarm queue run --final-out report.md --final-out-dir reports/",
            "Run the queue as one multi-goal run: one report in all, one per goal.",
        ),
        item(
            "swarm queue run -j 8 --land branch",
            "The same, eight tasks at a time, leaving the result on swarm/RUN.",
        ),
    ],
    see_also: &["swarm-queue(1)", "swarm-resume(1)"],
};

const GC: Sections = Sections {
    page: "swarm-gc",
    description: &[
        "It takes the repository's lock, so it never runs during a run. A branch is deleted only when swarm made it (a name a run in the board gives: **swarm/**_run_, **swarm/**_run_**-**_task_, …) and another branch holds all of its commits; a branch of yours under **swarm/** is listed as not swarm's and kept.",
    ],
    exit_status: &[
        item(
            "0",
            "Everything listed was removed (or, with **--dry-run**, would be).",
        ),
        item(
            "1",
            "Something could not be removed; the message says what.",
        ),
        item("2", "Usage error, or not a git repository."),
        item("4", "A run holds the repository; nothing was removed."),
    ],
    files: &[BOARD_FILES, RUN_FILES],
    examples: &[
        item("swarm gc --dry-run", "What would be removed."),
        item("swarm gc", "Remove it."),
    ],
    see_also: &[],
    ..Sections::NONE
};

const COMPLETIONS: Sections = Sections {
    page: "swarm-completions",
    description: &[
        "The script asks swarm itself on each TAB (it runs **COMPLETE=**_shell_ **swarm --** _words_), so completions know what only the repository knows: **resume**, **status**, **logs** and **graph** offer the ids of the runs of the repository in the current directory (or the one **-C** names), newest first, and **--agent** offers **auto**, **openai**, **claude**, **codex**, the profiles and pools (**pool:**_name_) of **.swarm.toml** and the user's config file, and **exec:** and **acp:**; **queue rm** offers the goals no run has taken. The script calls the **swarm** found on **PATH**; re-source it after upgrading swarm. The same scripts are in swarm's repository under **completions/**.",
    ],
    more: &[],
    exit_status: &[
        item("0", "The script was printed."),
        item(
            "2",
            "Not a shell swarm knows (bash, elvish, fish, powershell, zsh).",
        ),
    ],
    environment: &[&[item(
        "COMPLETE",
        "What the script sets to ask for completions: **COMPLETE=bash swarm --** _words_ prints the completions of _words_, and **COMPLETE=bash swarm** alone prints a registration script that calls this very binary by its path.",
    )]],
    files: &[],
    examples: &[
        item(
            "echo 'source <(swarm completions bash)' >> ~/.bashrc",
            "bash: completions in every new shell.",
        ),
        item(
            "echo 'source <(swarm completions zsh)' >> ~/.zshrc",
            "zsh: the same (or put the output in a file named _swarm in a directory of $fpath).",
        ),
        item(
            "swarm completions fish > ~/.config/fish/completions/swarm.fish",
            "fish: loaded when swarm is first completed.",
        ),
    ],
    see_also: &[],
};

const CI: Sections = Sections {
    page: "swarm-ci",
    description: &[
        "The coordinator job runs **swarm --goal** \"$SWARM_CI_GOAL\" **--remote** _NAME_ **--land branch --final-out swarm-report.md** (with **--plan**, **swarm run** \"$SWARM_CI_PLAN\" instead): it plans, publishes the run under **refs/swarm/** on the remote, merges what the workers push back, then pushes its branches (**swarm/**_run_ and any parked **swarm/**_run_**-**_task_) for review and keeps the report. Each of the **--workers** jobs runs **swarm worker --remote** _NAME_. The goal and the plan reach the shell as variables, never pasted into a script; every value is quoted for the YAML and the shell it lands in.",
        "**github**: a workflow started by hand (**workflow_dispatch**, input **goal** or **plan**), **permissions: contents: write**, one run at a time per repository (**concurrency**, a second start waits), a **coordinator** job and a **workers** job over **strategy.matrix.worker** 1 to _N_ (**fail-fast: false**), each with **actions/checkout@v4** and **fetch-depth: 0**; the agents' keys are repository secrets given to swarm's steps only; the report is the artifact **swarm-report**.",
        "**gitlab**: a **swarm-coordinator** job and a **swarm-workers** job with **parallel:** _N_ (at most 200) and **GIT_DEPTH** 0, run only in pipelines started by hand, the API, a trigger or a schedule with **SWARM_CI_GOAL** (or **SWARM_CI_PLAN**) set. The job token cannot push, so the jobs push with a project access token in **SWARM_CI_PUSH_TOKEN**, handed to git by a credential helper.",
        "**k8s**: a Job **swarm-coordinator** and an Indexed Job **swarm-workers** (**completions** and **parallelism** _N_); each pod clones **SWARM_CI_REPO** and pushes with **SWARM_CI_PUSH_TOKEN**, all from the Secret **swarm**. The goal is **SWARM_CI_GOAL** in the coordinator Job.",
        "By default each job builds swarm from its source, **cargo install --locked --git** \"$SWARM_CI_SOURCE\" **swarm**, the source's git URL in the CI variable **SWARM_CI_SOURCE**: swarm is not published on crates.io under its name, and a default must not install a stranger's crate next to a push token. **--install** replaces that command (a prebuilt binary is faster; agents' CLIs go there too).",
    ],
    exit_status: &[
        item("0", "The file was printed or written."),
        item("1", "The file could not be written."),
        item(
            "2",
            "A bad value (**--workers** out of range, a **--remote** that is no remote or whose URL holds a password, an absolute **--plan**, an empty **--install**), an unknown target, **--json**, or an **--out** that exists (without **--force**) or is a directory; nothing was written.",
        ),
    ],
    examples: &[
        item(
            "swarm ci github --out .github/workflows/swarm.yml",
            "A workflow with 3 workers; start it from the Actions tab with a goal.",
        ),
        item(
            "swarm ci gitlab --workers 8 --plan plans/nightly.jsonl",
            "Print a GitLab CI file whose pipelines run a task file with 8 workers.",
        ),
        item(
            "swarm ci k8s --install 'curl -fsSL https://example.com/swarm -o /usr/local/bin/swarm && chmod +x /usr/local/bin/swarm' > swarm.yaml",
            "Kubernetes Jobs whose pods fetch a prebuilt swarm instead of building it.",
        ),
    ],
    see_also: &["swarm-run(1)"],
    ..Sections::NONE
};

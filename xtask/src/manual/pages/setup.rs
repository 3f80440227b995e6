//! The pages of the commands that set swarm up or clean up after it: `config`, `gc`, `drop`,
//! `completions`, `ci`.

use super::{BOARD_FILES, CONFIG_FILES, MODEL_ENV, NO_JSON, RUN_FILES, SETTINGS_ENV};
use crate::manual::{Env, Sections, item};

pub(super) const CONFIG: Sections = Sections {
    page: "swarm-config",
    description: &[],
    more: &[(
        "JSON output",
        &[
            "With **--json**, one object: `options` (for each setting, an object with `value`, `default` and `source`, whose `kind` is flag, env, file or default, with the `flag`, `variable` or `path` it came from), `profiles` (each profile's fields and the `file` it is in), `pools` (each with `members` and `file`) and `environment` (each **SWARM_*** variable and the setting it sets).",
        ],
    )],
    environment: &[Env::Settings(SETTINGS_ENV), Env::Items(MODEL_ENV)],
    files: &[CONFIG_FILES],
    see_also: &[],
};

pub(super) const GC: Sections = Sections {
    page: "swarm-gc",
    more: &[(
        "JSON output",
        &[
            "With **--json**, one object: `dry_run`, and `actions`, each with `action` (remove-worktree, remove, delete-branch, keep-branch, delete-remote-refs or keep-remote-run), `path`, `branch` or `run` (and `refs`, how many), `reason` (why it is deleted or kept) and `done` (false with **--dry-run**).",
        ],
    )],
    files: &[BOARD_FILES, RUN_FILES],
    see_also: &[],
    ..Sections::NONE
};

pub(super) const DROP: Sections = Sections {
    page: "swarm-drop",
    description: &[
        "A branch of the run goes only when its commits are all held elsewhere: by a branch that is not the run's, by your HEAD, or by the run's integration branch **swarm/**_run_ when that one is kept; the run's other branches never vouch for each other. A branch with work nowhere else is kept and named (after the drop no run in the board names it, so **swarm gc** leaves it alone too; delete it with **git branch -D** once it is no longer wanted). What a run's tasks left running is stopped first, then the checkouts go, then the branches, the run's directory and last its record, so a drop cut short is finished by the next one.",
        "The goals the run took from the queue go back to the queue with their numbers, for the next **swarm queue run**.",
        "At a terminal (stdin and stderr) it lists what it will do and asks **Drop run** _R_ **(…)? [y/N]**; **y** drops, anything else keeps the run (Ctrl-C exits 130). Off a terminal it needs **--yes**.",
    ],
    more: &[(
        "JSON output",
        &[
            "With **--json**, one object: `run`, `dropped` (false when the question was answered no) and `actions`, each with `action` (stop-process, remove-worktree, remove, delete-branch, keep-branch, forget-run or requeue), `process`, `path`, `branch`, `run` (with `tasks`) or `goal` (the queue's number), `reason` for a branch, and `done`.",
        ],
    )],
    files: &[BOARD_FILES, RUN_FILES],
    see_also: &["swarm-runs(1)", "swarm-resume(1)", "swarm-gc(1)"],
    ..Sections::NONE
};

pub(super) const COMPLETIONS: Sections = Sections {
    page: "swarm-completions",
    description: &[
        "The script asks swarm itself on each TAB (it runs **COMPLETE=**_shell_ **swarm --** _words_), so completions know what only the repository knows: **status**, **logs** and **graph** offer the ids of the runs of the repository in the current directory (or the one **-C** names), newest first, **resume** and **drop** those of its runs that have not finished, **retry** the parked and failed writers of the newest run (or of **--run**), and **--agent** offers **auto**, **openai**, **claude**, **codex**, the profiles and pools (**pool:**_name_) of **.swarm.toml** and the user's config file, and **exec:** and **acp:**; **queue rm** offers the goals no run has taken. The script calls the **swarm** found on **PATH**; re-source it after upgrading swarm. The same scripts are in swarm's repository under **completions/**.",
    ],
    more: &[NO_JSON],
    environment: &[Env::Items(&[item(
        "COMPLETE",
        "What the script sets to ask for completions: **COMPLETE=bash swarm --** _words_ prints the completions of _words_, and **COMPLETE=bash swarm** alone prints a registration script that calls this very binary by its path.",
    )])],
    files: &[],
    see_also: &[],
};

pub(super) const CI: Sections = Sections {
    page: "swarm-ci",
    description: &[
        "The coordinator job runs **swarm --goal** \"$SWARM_CI_GOAL\" **--remote** _NAME_ **--land branch --final-out swarm-report.md** (with **--plan**, **swarm run** \"$SWARM_CI_PLAN\" instead): it plans, publishes the run under **refs/swarm/** on the remote, merges what the workers push back, then pushes its branches (**swarm/**_run_ and any parked **swarm/**_run_**-**_task_) for review and keeps the report. Each of the **--workers** jobs runs **swarm worker --remote** _NAME_. The goal and the plan reach the shell as variables, never pasted into a script; every value is quoted for the YAML and the shell it lands in.",
        "**github**: a workflow started by hand (**workflow_dispatch**, input **goal** or **plan**), **permissions: contents: write**, one run at a time per repository (**concurrency**, a second start waits), a **coordinator** job and a **workers** job over **strategy.matrix.worker** 1 to _N_ (**fail-fast: false**), each with **actions/checkout@v4** and **fetch-depth: 0**; the agents' keys are repository secrets given to swarm's steps only; the report is the artifact **swarm-report**.",
        "**gitlab**: a **swarm-coordinator** job and a **swarm-workers** job with **parallel:** _N_ (at most 200) and **GIT_DEPTH** 0, run only in pipelines started by hand, the API, a trigger or a schedule with **SWARM_CI_GOAL** (or **SWARM_CI_PLAN**) set. The job token cannot push, so the jobs push with a project access token in **SWARM_CI_PUSH_TOKEN**, handed to git by a credential helper.",
        "**k8s**: a Job **swarm-coordinator** and an Indexed Job **swarm-workers** (**completions** and **parallelism** _N_); each pod clones **SWARM_CI_REPO** and pushes with **SWARM_CI_PUSH_TOKEN**, all from the Secret **swarm**. The goal is **SWARM_CI_GOAL** in the coordinator Job.",
        "By default each job builds swarm from its source, **cargo install --locked --git** \"$SWARM_CI_SOURCE\" **swarm**, the source's git URL in the CI variable **SWARM_CI_SOURCE**: swarm is not published on crates.io under its name, and a default must not install a stranger's crate next to a push token. **--install** replaces that command (a prebuilt binary is faster; agents' CLIs go there too).",
    ],
    more: &[NO_JSON],
    see_also: &["swarm-run(1)"],
    ..Sections::NONE
};

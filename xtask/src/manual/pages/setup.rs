//! The pages of the commands that set swarm up or clean up after it: `config`, `gc`, `drop`,
//! `completions`, `ci`.

use super::{BOARD_FILES, CONFIG_FILES, MODEL_ENV, RUN_FILES, SETTINGS_ENV};
use crate::manual::{Env, Sections, item};

pub(super) const CONFIG: Sections = Sections {
    page: "swarm-config",
    description: &[
        "Settings come from, highest first: flags, **SWARM_*** variables, **.swarm.toml** at the top of the repository, the user's config file, the defaults. A resumed run keeps the settings it started with.",
    ],
    more: &[],
    exit_status: &[
        item("0", "The settings were printed."),
        item(
            "2",
            "A config file or **SWARM_*** variable does not parse (an unknown key, a value of the wrong type): every problem of every file and variable is listed at once, each with its file and line or its variable, and no settings are printed.",
        ),
    ],
    environment: &[Env::Settings(SETTINGS_ENV), Env::Items(MODEL_ENV)],
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

pub(super) const GC: Sections = Sections {
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

pub(super) const DROP: Sections = Sections {
    page: "swarm-drop",
    description: &[
        "A branch of the run goes only when its commits are all held elsewhere: by a branch that is not the run's, by your HEAD, or by the run's integration branch **swarm/**_run_ when that one is kept; the run's other branches never vouch for each other. A branch with work nowhere else is kept and named (after the drop no run in the board names it, so **swarm gc** leaves it alone too; delete it with **git branch -D** once it is no longer wanted). What a run's tasks left running is stopped first, then the checkouts go, then the branches, the run's directory and last its record, so a drop cut short is finished by the next one.",
        "The goals the run took from the queue go back to the queue with their numbers, for the next **swarm queue run**.",
    ],
    exit_status: &[
        item(
            "0",
            "The run was dropped; or, at the terminal, the question was answered no and nothing was dropped.",
        ),
        item(
            "1",
            "Something could not be removed; the message says what. What was removed is listed; **swarm drop** again finishes it.",
        ),
        item(
            "2",
            "Usage error, nothing dropped: no unfinished run (or no run of that id), a finished run (**swarm gc** tidies those), a run that stopped while landing on your branch (**swarm resume** finishes the landing), or off a terminal without **--yes**.",
        ),
        item(
            "4",
            "Another swarm holds the repository; nothing was dropped.",
        ),
        item("130", "Ctrl-C at the question; nothing was dropped."),
    ],
    files: &[BOARD_FILES, RUN_FILES],
    examples: &[
        item(
            "swarm drop",
            "At a terminal: show what dropping the newest unfinished run removes and keeps, and ask.",
        ),
        item(
            "swarm drop 20261129-071300-ab12 --yes --json",
            "Drop a given run without asking, and say what was done as JSON.",
        ),
    ],
    see_also: &["swarm-runs(1)", "swarm-resume(1)", "swarm-gc(1)"],
    ..Sections::NONE
};

pub(super) const COMPLETIONS: Sections = Sections {
    page: "swarm-completions",
    description: &[
        "The script asks swarm itself on each TAB (it runs **COMPLETE=**_shell_ **swarm --** _words_), so completions know what only the repository knows: **status**, **logs** and **graph** offer the ids of the runs of the repository in the current directory (or the one **-C** names), newest first, **resume** and **drop** those of its runs that have not finished, **retry** the parked and failed writers of the newest run (or of **--run**), and **--agent** offers **auto**, **openai**, **claude**, **codex**, the profiles and pools (**pool:**_name_) of **.swarm.toml** and the user's config file, and **exec:** and **acp:**; **queue rm** offers the goals no run has taken. The script calls the **swarm** found on **PATH**; re-source it after upgrading swarm. The same scripts are in swarm's repository under **completions/**.",
    ],
    more: &[],
    exit_status: &[
        item("0", "The script was printed."),
        item(
            "2",
            "Not a shell swarm knows (bash, elvish, fish, powershell, zsh).",
        ),
    ],
    environment: &[Env::Items(&[item(
        "COMPLETE",
        "What the script sets to ask for completions: **COMPLETE=bash swarm --** _words_ prints the completions of _words_, and **COMPLETE=bash swarm** alone prints a registration script that calls this very binary by its path.",
    )])],
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

pub(super) const CI: Sections = Sections {
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

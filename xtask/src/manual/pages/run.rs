//! The pages of the commands that run work: `swarm --goal`, `run`, `resume`, `retry`, and the
//! queue's.

use super::{
    BOARD_FILES, CONFIG_FILES, MODEL_ENV, PROCESS_ENV, RUN_EXIT, RUN_FILES, SETTINGS_ENV, TASK_ENV,
};
use crate::manual::{Env, Sections, item};

pub(super) const SWARM: Sections = Sections {
    page: "swarm",
    description: &[
        "With **--goal**, the model named by **--model** plans the goal into a DAG of tasks (one function call; the plan is validated and repaired, each repair recorded), then the tasks run: at most **-j** at once, readers in a shared read-only snapshot, each writer in a checkout of its own on branch **swarm/**_run_**-**_task_ outside your working tree. Finished writers are merged one at a time, in memory, into the run's integration branch **swarm/**_run_; a conflicting writer is parked (its branch kept) and escalated once, and the rest go on. At the end the reducer's result and a run summary make the report, and your branch is fast-forwarded when that is safe (**--land**).",
        "A plan can also be written by hand or saved with **--plan-out** and run with **swarm run**; its format is **swarm-tasks**(5). Several **--goal**s (or **--goals-file**) run as one run: the model infers which goal needs which, and a goal that needs others is planned once they are merged.",
        "Progress goes to stderr (bars on a terminal, plain lines otherwise, nothing with **-q**); the final summary goes to stdout (JSON with **--json**).",
    ],
    more: &[],
    exit_status: RUN_EXIT,
    environment: &[
        Env::Settings(SETTINGS_ENV),
        Env::Items(MODEL_ENV),
        Env::Items(PROCESS_ENV),
        Env::Items(TASK_ENV),
    ],
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
        "swarm-retry(1)",
        "swarm-drop(1)",
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

pub(super) const RUN: Sections = Sections {
    page: "swarm-run",
    description: &[
        "The task file holds one JSON object a line; **swarm-tasks**(5) describes every field. It is validated whole before anything runs: every problem is reported at once with its line number, and swarm exits 2.",
    ],
    more: &[],
    exit_status: RUN_EXIT,
    environment: &[
        Env::Settings(SETTINGS_ENV),
        Env::Items(MODEL_ENV),
        Env::Items(PROCESS_ENV),
        Env::Items(TASK_ENV),
    ],
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

pub(super) const RESUME: Sections = Sections {
    page: "swarm-resume",
    description: &[
        "A run keeps the settings it started with; options given to **resume** replace them. Tasks that finished are not run again and merges already recorded are not repeated; attempts cut short are run again (a Claude or Codex attempt continues its session unless **--fresh-retries**); a landing cut short is finished.",
        "Without a run id it takes the newest run that has not finished (**swarm runs** says why each stopped). A **--plan-only** run and a plan declined at the terminal are finished, so resume never takes them; a **--plan-only** run stopped while it was planned is planned again, and only planned. A run not worth going on with is dropped with **swarm drop**; a parked or failed writer runs again with **swarm retry**.",
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
    environment: &[
        Env::Settings(SETTINGS_ENV),
        Env::Items(MODEL_ENV),
        Env::Items(PROCESS_ENV),
    ],
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
    see_also: &[
        "swarm-status(1)",
        "swarm-logs(1)",
        "swarm-retry(1)",
        "swarm-drop(1)",
    ],
};

pub(super) const RETRY: Sections = Sections {
    page: "swarm-retry",
    description: &[
        "The task must be a writer whose run parked it (its merge conflicted, or it was held for review) or failed it. In a run that has not finished, its branch **swarm/**_run_**-**_task_ is moved aside to **swarm/**_run_**-**_task_**@**_n_ (_n_ the number of its last attempt, or the first free number after it; its conflict resolver's branch likewise), the task goes back to pending afresh (no failure counted, no agent session continued), the tasks skipped because of it (and the goals skipped for want of its goal) wait again, and the run goes on as with **swarm resume**: the task starts on the run's integration tip and is merged into it.",
        "In a run that ended, a new run of that one task starts from your HEAD (which holds what the old run landed): its spec as the old run stored it, without its dependencies (their results are not given to it again), with the old run's options but its **--base**, **--final-out**, **--final-out-dir** and **--remote**, under the options given here. It merges and lands as any run (**--land**). The old run and its branch stay as they were; the tasks that were skipped because of it are not run.",
    ],
    more: &[],
    exit_status: &[
        item(
            "0, 1, 3, 4, 75",
            "As for the run itself: see **swarm**(1). A run another swarm holds exits 4 with nothing changed.",
        ),
        item(
            "2",
            "Usage error, nothing changed: no such task (the hint names the run that has it, or the names close to it), a reader, a task that is done, was skipped or has not ended, or bad options.",
        ),
    ],
    environment: &[
        Env::Settings(SETTINGS_ENV),
        Env::Items(MODEL_ENV),
        Env::Items(PROCESS_ENV),
        Env::Items(TASK_ENV),
    ],
    files: &[BOARD_FILES, RUN_FILES],
    examples: &[
        item(
            "swarm retry t4",
            "Run the parked or failed writer t4 of the newest run again, on the current tip (TAB completes the tasks that can be retried).",
        ),
        item(
            "swarm retry t4 --run 20261129-071300-ab12 --agent claude",
            "The same for a task of an older run, with another agent.",
        ),
    ],
    see_also: &["swarm-resume(1)", "swarm-show(1)", "swarm-drop(1)"],
};

pub(super) const QUEUE: Sections = Sections {
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

pub(super) const QUEUE_ADD: Sections = Sections {
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

pub(super) const QUEUE_LIST: Sections = Sections {
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

pub(super) const QUEUE_RM: Sections = Sections {
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

pub(super) const QUEUE_RUN: Sections = Sections {
    page: "swarm-queue-run",
    description: &[
        "Goals added while it runs are taken within a second, and once more before the run ends. A goal leaves the queue when the run that took it finishes, whatever its outcome; a run stopped by Ctrl-C or kill -9 keeps its goals for **swarm resume**.",
    ],
    more: &[],
    exit_status: RUN_EXIT,
    environment: &[
        Env::Settings(SETTINGS_ENV),
        Env::Items(MODEL_ENV),
        Env::Items(PROCESS_ENV),
        Env::Items(TASK_ENV),
    ],
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

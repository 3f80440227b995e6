//! The pages of the commands that run work: `swarm --goal`, `run`, `resume`, `retry`, and the
//! queue's.

use super::{
    BOARD_FILES, CONFIG_FILES, LANDING_JSON, MODEL_ENV, NO_JSON, PROCESS_ENV, RUN_FILES, RUN_JSON,
    SETTINGS_ENV, SUMMARY_JSON, TASK_ENV,
};
use crate::manual::{Env, Sections};

pub(super) const SWARM: Sections = Sections {
    page: "swarm",
    description: &[
        "With **--goal**, the model named by **--model** plans the goal into a DAG of tasks (one function call; the plan is validated and repaired, each repair recorded), then the tasks run: at most **-j** at once, readers in a shared read-only snapshot, each writer in a checkout of its own on branch **swarm/**_run_**-**_task_ outside your working tree. Finished writers are merged one at a time, in memory, into the run's integration branch **swarm/**_run_; a conflicting writer is parked (its branch kept) and escalated once, and the rest go on. At the end the reducer's result and a run summary make the report, and your branch is fast-forwarded when that is safe (**--land**).",
        "A plan can also be written by hand or saved with **--plan-out** and run with **swarm run**; its format is **swarm-tasks**(5). Several **--goal**s (or **--goals-file**) run as one run: the model infers which goal needs which, and a goal that needs others is planned once they are merged.",
        "Progress goes to stderr (bars on a terminal, plain lines otherwise, nothing with **-q**); the final summary goes to stdout (JSON with **--json**).",
    ],
    more: &[(
        "JSON output",
        &[
            SUMMARY_JSON,
            LANDING_JSON,
            "Every command takes **--json**; each one's page says what it prints then. **swarm completions**, **swarm ci**, **swarm web** and **swarm worker** have no JSON output and say so.",
        ],
    )],
    environment: &[
        Env::Settings(SETTINGS_ENV),
        Env::Items(MODEL_ENV),
        Env::Items(PROCESS_ENV),
        Env::Items(TASK_ENV),
    ],
    files: &[CONFIG_FILES, BOARD_FILES, RUN_FILES],
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
    description: &[],
    more: &[RUN_JSON],
    environment: &[
        Env::Settings(SETTINGS_ENV),
        Env::Items(MODEL_ENV),
        Env::Items(PROCESS_ENV),
        Env::Items(TASK_ENV),
    ],
    files: &[CONFIG_FILES, BOARD_FILES, RUN_FILES],
    see_also: &["swarm-tasks(5)", "swarm-resume(1)", "swarm-status(1)"],
};

pub(super) const RESUME: Sections = Sections {
    page: "swarm-resume",
    description: &[
        "Without a run id it takes the newest run that has not finished (**swarm runs** says why each stopped). A **--plan-only** run and a plan declined at the terminal are finished, so resume never takes them; a **--plan-only** run stopped while it was planned is planned again, and only planned. A run not worth going on with is dropped with **swarm drop**; a parked or failed writer runs again with **swarm retry**.",
    ],
    more: &[RUN_JSON],
    environment: &[
        Env::Settings(SETTINGS_ENV),
        Env::Items(MODEL_ENV),
        Env::Items(PROCESS_ENV),
    ],
    files: &[BOARD_FILES, RUN_FILES],
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
    more: &[RUN_JSON],
    environment: &[
        Env::Settings(SETTINGS_ENV),
        Env::Items(MODEL_ENV),
        Env::Items(PROCESS_ENV),
        Env::Items(TASK_ENV),
    ],
    files: &[BOARD_FILES, RUN_FILES],
    see_also: &["swarm-resume(1)", "swarm-show(1)", "swarm-drop(1)"],
};

pub(super) const QUEUE: Sections = Sections {
    page: "swarm-queue",
    description: &[],
    more: &[],
    environment: &[],
    files: &[BOARD_FILES],
    see_also: &[
        "swarm-queue-add(1)",
        "swarm-queue-list(1)",
        "swarm-queue-rm(1)",
        "swarm-queue-run(1)",
    ],
};

pub(super) const QUEUE_ADD: Sections = Sections {
    page: "swarm-queue-add",
    more: &[(
        "JSON output",
        &[
            "With **--json**, one object: `id` (the goal's number) and `text`. Without it, the number alone on stdout.",
        ],
    )],
    files: &[BOARD_FILES],
    see_also: &["swarm-queue(1)", "swarm-queue-run(1)"],
    ..Sections::NONE
};

pub(super) const QUEUE_LIST: Sections = Sections {
    page: "swarm-queue-list",
    more: &[(
        "JSON output",
        &[
            "With **--json**, an array in queue order, each with `id`, `text`, `added_at` (milliseconds since the Unix epoch), and `run_id`, `goal_id` and `goal_status` (null until a run takes it).",
        ],
    )],
    files: &[BOARD_FILES],
    see_also: &["swarm-queue(1)"],
    ..Sections::NONE
};

pub(super) const QUEUE_RM: Sections = Sections {
    page: "swarm-queue-rm",
    more: &[(
        "JSON output",
        &["With **--json**, one object: `removed` (the goal's number)."],
    )],
    files: &[BOARD_FILES],
    see_also: &["swarm-queue(1)", "swarm-queue-list(1)"],
    ..Sections::NONE
};

pub(super) const QUEUE_RUN: Sections = Sections {
    page: "swarm-queue-run",
    description: &[
        "Goals added while it runs are taken within a second, and once more before the run ends. A goal leaves the queue when the run that took it finishes, whatever its outcome; a run stopped by Ctrl-C or kill -9 keeps its goals for **swarm resume**.",
    ],
    more: &[(
        "JSON output",
        &[
            SUMMARY_JSON,
            LANDING_JSON,
            "With nothing queued: **{\"run\": null, \"goals\": 0}**.",
        ],
    )],
    environment: &[
        Env::Settings(SETTINGS_ENV),
        Env::Items(MODEL_ENV),
        Env::Items(PROCESS_ENV),
        Env::Items(TASK_ENV),
    ],
    files: &[CONFIG_FILES, BOARD_FILES, RUN_FILES],
    see_also: &["swarm-queue(1)", "swarm-resume(1)"],
};

pub(super) const WORKER: Sections = Sections {
    page: "swarm-worker",
    description: &[
        "A lease the worker stops renewing (a worker that died) is taken back by the coordinator and the attempt given to another worker; the coordinator alone merges what the workers push, exactly once. See \"Runs over many machines\" in the manual (docs/src/remote.md).",
    ],
    more: &[NO_JSON],
    environment: &[
        Env::Items(MODEL_ENV),
        Env::Items(PROCESS_ENV),
        Env::Items(TASK_ENV),
    ],
    files: &[],
    see_also: &["swarm-run(1)", "swarm-ci(1)"],
};

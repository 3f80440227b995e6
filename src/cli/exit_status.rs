//! What each command's exit codes mean, as data: `swarm --help` lists the summaries of a run's
//! codes, and the man pages' EXIT STATUS and the reference pages (made by xtask) give each
//! command's codes with their summaries and details, so none of them can say otherwise. Looked
//! up by the command's words (`swarm run`, `swarm queue add`); the codes themselves are
//! `error::exit`'s.
//!
//! A summary is one line of plain text and `code` in backticks; a detail may also use
//! `**bold**` and `_italic_`, as the manual's other sections do.

/// An exit code, or codes that mean the same, and what it means.
#[derive(Debug, Clone, Copy)]
pub struct Exit {
    /// `0`, or several: `130, 143`.
    pub code: &'static str,
    /// What it means, in a line: what `swarm --help` lists.
    pub summary: &'static str,
    /// More, for the manual: causes, what to do next. Empty when the summary says it all.
    pub detail: &'static str,
}

const fn exit(code: &'static str, summary: &'static str, detail: &'static str) -> Exit {
    Exit {
        code,
        summary,
        detail,
    }
}

/// The exit codes of the command `words` (`swarm`, `swarm queue add`): its own, else those of
/// a run.
pub fn of(words: &str) -> &'static [Exit] {
    STATUS
        .iter()
        .find(|(command, _)| *command == words)
        .map_or(RUN, |(_, codes)| *codes)
}

/// What a run exits with: `swarm --goal`, `swarm run`, `swarm queue run`, and the runs `swarm
/// resume` and `swarm retry` go on with.
pub const RUN: &[Exit] = &[
    exit(
        "0",
        "every task done and merged",
        "Every writer was merged into the integration branch **swarm/**_run_ (landed on your branch, or left there, as **--land** says). Also: **--plan-only** once the plan is written; a **queue run** with an empty queue; and a swarm started inside a swarm task or hook (**SWARM_ACTIVE** set), which does nothing and says why.",
    ),
    exit(
        "1",
        "some tasks or goals failed or were skipped (a deadlock too), or swarm itself failed",
        "A task failed once its attempts and retries were used up, or was skipped because a dependency failed; a goal failed or its planning did; or nothing could become ready any more (a deadlock, named in the report). The other tasks ran and their work was merged. Also: swarm itself failed (an error that is none of the others here, printed as **error:** with its causes). An internal error (a bug, printed as **error: internal error:**) exits 1 too; what ran is on record and **swarm resume** goes on from there.",
    ),
    exit(
        "2",
        "usage or input error, nothing ran; or the model endpoint refused swarm's key",
        "A bad flag or value, a task file with problems (each listed with its line), a bad config file or **SWARM_*** variable, no agent or model configured for prompt tasks, a bad output file (**--final-out**, **--final-out-dir**, **--plan-out**), a **--base** that names no commit, a **--worktree-dir** inside the checkout, not a git repository, an empty repository, or a merge, rebase, cherry-pick, revert or bisect open in a checkout the run would land on. During a run: a model endpoint that refuses swarm's key (HTTP 401 or 403) stops the run at once, resumable once **SWARM_API_KEY** is fixed; and a **--gate** that fails on the base itself (\"the gate fails before any change\") stops it at once with nothing landed, resumable once the gate or the base is fixed. With **--deliver pr**, **pr-per-task** or **stack**: no token, a forge swarm cannot tell, no such remote or a detached HEAD refuses the run before it starts; once it ran, a token the forge refuses, a pull request it would not take, or a branch on the remote with commits swarm did not push stops the delivery, resumable once fixed (the work is on **swarm/**_run_).",
    ),
    exit(
        "3",
        "needs a human: parked conflicts, work parked for review, a moved integration branch",
        "A writer was parked: its merge conflicted, or it changed a file swarm reads commands from (**.swarm.toml**, the run's task file or **--config** file when tracked) or wrote a secret's value, so it waits for review; or the gate took it out. Or something other than swarm moved the integration branch: the run stopped starting tasks and did not land (resumable once looked at). Parked branches **swarm/**_run_**-**_task_ are kept; the report's \"Needs attention\" section gives the commands to inspect and merge them, and **--on-escalate** ran once for each. Parking comes before failures: a run with both exits 3.",
    ),
    exit(
        "4",
        "another run holds the repository; nothing ran",
        "Its lock is **.git/swarm/lock**; the message names its process and run. Wait for it, or stop it with Ctrl-C and **swarm resume** it later.",
    ),
    exit(
        "75",
        "stopped early, resumable (interrupt, budget, a fault); continue with `swarm resume`",
        "**swarm resume** continues where it stopped, running no finished task again and repeating no merge (**swarm runs** says which run it takes; **swarm drop** gives a run up). Causes: the first Ctrl-C or SIGTERM (a second one kills the running attempts at once, and also exits 75); the token budget (**--budget-tokens**) spent; an agent's usage limit that resets more than an hour away, or never by itself (for a pool, once every member's does); a fault of the machine (a full disk, named with the path and the disk, wherever swarm or a task met it, the board included; too few file descriptors); a **setup** command that failed; a model endpoint that stopped answering for longer than **--endpoint-wait**; your checkout changing while a task ran; with **--deliver pr**, **pr-per-task** or **stack**, a remote or forge that could not be reached or did not answer while the result was delivered (**swarm resume** delivers it, opening no pull request twice). A goal stopped while it was planned is planned again by the resume.",
    ),
    exit(
        "130, 143",
        "a signal ended swarm before a run started, or Ctrl-C at the question; nothing ran",
        "128 plus the signal's number (130 for SIGINT, 143 for SIGTERM), when there was nothing to stop and nothing to resume. Ctrl-C at the question before a goal's plan runs exits 130 too: nothing ran, and the plan is kept.",
    ),
];

/// What the commands that only read the board exit with.
const READ: &[Exit] = &[
    exit("0", "the answer was printed", ""),
    exit(
        "1",
        "swarm itself failed: the board could not be read, or a run's files are missing",
        "A damaged board is named, with what to do.",
    ),
    exit(
        "2",
        "usage error: a bad flag, not a git repository, no runs yet, or no run of that id",
        "",
    ),
    exit(
        "130, 143",
        "interrupted by a signal (128 plus its number)",
        "",
    ),
];

/// The commands whose codes are not a run's.
const STATUS: &[(&str, &[Exit])] = &[
    ("swarm", RUN),
    ("swarm run", RUN),
    ("swarm queue run", RUN),
    (
        "swarm resume",
        &[
            exit(
                "0, 1, 3, 4, 75",
                "as for the run itself (see `swarm --help`)",
                "A resumed run that stops again (exit 75) can be resumed again.",
            ),
            exit(
                "2",
                "usage error; nothing ran",
                "There is no unfinished run (or no run of that id), the run finished already, it was stopped before its plan was stored, or the options given are bad.",
            ),
        ],
    ),
    (
        "swarm retry",
        &[
            exit(
                "0, 1, 3, 4, 75",
                "as for the run itself (see `swarm --help`)",
                "A run another swarm holds exits 4 with nothing changed.",
            ),
            exit(
                "2",
                "usage error; nothing changed",
                "No such task (the hint names the run that has it, or the names close to it), a reader, a task that is done, was skipped or has not ended, or bad options.",
            ),
        ],
    ),
    (
        "swarm steer",
        &[
            exit("0", "the message waits for the task's agent", ""),
            exit(
                "2",
                "usage error; nothing was sent",
                "No such task (the hint names the run that has it, or the names close to it), a task that has ended, a task that runs a command, or an empty message.",
            ),
        ],
    ),
    (
        "swarm drop",
        &[
            exit(
                "0",
                "the run was dropped, or the question was answered no",
                "",
            ),
            exit(
                "1",
                "something could not be removed; the message says what",
                "What was removed is listed; **swarm drop** again finishes it.",
            ),
            exit(
                "2",
                "usage error; nothing dropped",
                "No unfinished run (or no run of that id), a finished run (**swarm gc** tidies those), a run that stopped while landing on your branch (**swarm resume** finishes the landing), or off a terminal without **--yes**.",
            ),
            exit(
                "4",
                "another swarm holds the repository; nothing was dropped",
                "",
            ),
            exit("130", "Ctrl-C at the question; nothing was dropped", ""),
        ],
    ),
    ("swarm runs", READ),
    ("swarm show", READ),
    ("swarm status", READ),
    ("swarm logs", READ),
    (
        "swarm graph",
        &[
            exit("0", "the graph was printed", ""),
            exit("1", "swarm itself failed (the board could not be read)", ""),
            exit(
                "2",
                "usage or input error",
                "A task file with problems (each listed with its line), no run of that id, no runs yet, or not a git repository.",
            ),
        ],
    ),
    (
        "swarm config",
        &[
            exit("0", "the settings were printed", ""),
            exit(
                "2",
                "a config file or `SWARM_*` variable does not parse; nothing was printed",
                "An unknown key, or a value of the wrong type: every problem of every file and variable is listed at once, each with its file and line or its variable.",
            ),
        ],
    ),
    (
        "swarm queue",
        &[exit(
            "2",
            "no action given: usage error",
            "Each action (**add**, **list**, **rm**, **run**) has its page and its codes.",
        )],
    ),
    (
        "swarm queue add",
        &[
            exit("0", "the goal was queued", ""),
            exit("2", "the goal is empty, or not a git repository", ""),
        ],
    ),
    (
        "swarm queue list",
        &[
            exit(
                "0",
                "the list was printed (nothing when the queue is empty)",
                "",
            ),
            exit("2", "usage error, or not a git repository", ""),
        ],
    ),
    (
        "swarm queue rm",
        &[
            exit("0", "the goal was removed", ""),
            exit(
                "2",
                "no goal of that number, or a run has taken it already",
                "The message names the run that took it.",
            ),
        ],
    ),
    (
        "swarm memory",
        &[exit(
            "2",
            "no action given: usage error",
            "Each action (**list**, **show**, **curate**, **forget**) has its page and its codes.",
        )],
    ),
    (
        "swarm memory list",
        &[
            exit(
                "0",
                "the list was printed (a line saying so when memory is empty)",
                "",
            ),
            exit("2", "usage error, or not a git repository", ""),
        ],
    ),
    (
        "swarm memory show",
        &[
            exit("0", "the past goal was printed", ""),
            exit(
                "2",
                "no past goal of that number, or not a git repository",
                "",
            ),
        ],
    ),
    (
        "swarm tui",
        &[
            exit(
                "0",
                "the interface was left (/quit, q, Ctrl-C or Ctrl-D)",
                "",
            ),
            exit(
                "2",
                "not at a terminal (stdin and stdout), or not a git repository",
                "",
            ),
        ],
    ),
    (
        "swarm memory curate",
        &[
            exit("0", "the lessons were curated (or there were none)", ""),
            exit("2", "usage error, or not a git repository", ""),
        ],
    ),
    (
        "swarm memory forget",
        &[
            exit("0", "the past goal, or all of them, forgotten", ""),
            exit(
                "2",
                "no past goal of that number, or not a git repository",
                "",
            ),
        ],
    ),
    (
        "swarm gc",
        &[
            exit(
                "0",
                "everything listed was removed (or, with `--dry-run`, would be)",
                "",
            ),
            exit(
                "1",
                "something could not be removed; the message says what",
                "",
            ),
            exit("2", "usage error, or not a git repository", ""),
            exit("4", "a run holds the repository; nothing was removed", ""),
        ],
    ),
    (
        "swarm web",
        &[
            exit("1", "swarm itself failed (the board could not be read)", ""),
            exit(
                "2",
                "usage error: no such run, no runs yet, an address it cannot listen on, or `--json`",
                "",
            ),
            exit(
                "130, 143",
                "Ctrl-C or SIGTERM stopped it: the way it ends",
                "",
            ),
        ],
    ),
    (
        "swarm worker",
        &[
            exit(
                "0",
                "the run has no work left for it",
                "The run ended, or none appeared on the remote within **--wait**.",
            ),
            exit("1", "swarm itself failed", ""),
            exit("2", "usage or input error", ""),
            exit(
                "75",
                "a signal stopped it, or the remote did not answer within `--wait`",
                "Its attempts are given back to the run, for another worker.",
            ),
        ],
    ),
    (
        "swarm completions",
        &[
            exit("0", "the script was printed", ""),
            exit(
                "2",
                "not a shell swarm knows (bash, elvish, fish, powershell, zsh), or `--json`",
                "",
            ),
        ],
    ),
    (
        "swarm ci",
        &[
            exit("0", "the file was printed or written", ""),
            exit("1", "the file could not be written", ""),
            exit(
                "2",
                "a bad value, an unknown target, `--json`, or an `--out` in the way; nothing written",
                "A **--workers** out of range, a **--remote** that is no remote or whose URL holds a password, an absolute **--plan**, an empty **--install**, or an **--out** that exists (without **--force**) or is a directory.",
            ),
        ],
    ),
];

#[cfg(test)]
mod tests {
    use super::STATUS;

    #[test]
    /// 86 columns: a line of `swarm --help`'s list, after the widest code, in 100.
    fn summaries_are_one_line_of_plain_text() {
        for (command, codes) in STATUS {
            for exit in *codes {
                assert!(
                    exit.summary.len() <= 86
                        && !exit.summary.contains("**")
                        && !exit.summary.ends_with('.'),
                    "{command} {}: {:?}",
                    exit.code,
                    exit.summary
                );
            }
        }
    }
}

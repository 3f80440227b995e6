//! Each command's examples, as data: `--help` shows those marked for it, and the man pages'
//! EXAMPLES and the reference pages (made by xtask) show them all, so the three cannot disagree.
//! Looked up by the command's words (`swarm run`, `swarm queue add`).
//!
//! An example's text is one short sentence, the comment above its line in `--help`: plain text
//! and `code` in backticks. Every example shown in `--help` fits an 80-column terminal, and every
//! command line is one swarm accepts (tests/cli/manual.rs).

/// A command line and what it does.
#[derive(Debug, Clone, Copy)]
pub struct Example {
    /// The line as typed, without the prompt; several lines for a sequence.
    pub line: &'static str,
    /// What it does, in a sentence short enough to be a comment.
    pub text: &'static str,
    /// Where it is shown.
    pub shown: Shown,
}

/// Where an example is shown: the manual shows every example, `--help` a few.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shown {
    /// In `--help` (and `-h`) too.
    InHelp,
    /// In the man page and the reference only: a longer line, or one more of the kind.
    InManual,
}

/// An example shown in `--help` and in the manual.
const fn help(line: &'static str, text: &'static str) -> Example {
    Example {
        line,
        text,
        shown: Shown::InHelp,
    }
}

/// An example shown in the manual only.
const fn manual(line: &'static str, text: &'static str) -> Example {
    Example {
        line,
        text,
        shown: Shown::InManual,
    }
}

/// The examples of the command `words` (`swarm`, `swarm queue add`); none for a command swarm
/// does not have.
pub fn of(words: &str) -> &'static [Example] {
    EXAMPLES
        .iter()
        .find(|(command, _)| *command == words)
        .map_or(&[], |(_, examples)| *examples)
}

/// Every command's examples, by its words.
pub fn all() -> impl Iterator<Item = (&'static str, &'static [Example])> {
    EXAMPLES.iter().copied()
}

const EXAMPLES: &[(&str, &[Example])] = &[
    ("swarm", SWARM),
    ("swarm run", RUN),
    ("swarm resume", RESUME),
    ("swarm retry", RETRY),
    ("swarm steer", STEER),
    ("swarm drop", DROP),
    ("swarm runs", RUNS),
    ("swarm show", SHOW),
    ("swarm status", STATUS),
    ("swarm logs", LOGS),
    ("swarm graph", GRAPH),
    ("swarm config", CONFIG),
    ("swarm queue", QUEUE),
    ("swarm queue add", QUEUE_ADD),
    ("swarm queue list", QUEUE_LIST),
    ("swarm queue rm", QUEUE_RM),
    ("swarm queue run", QUEUE_RUN),
    ("swarm memory", MEMORY),
    ("swarm memory list", MEMORY_LIST),
    ("swarm memory show", MEMORY_SHOW),
    ("swarm memory curate", MEMORY_CURATE),
    ("swarm tui", TUI),
    ("swarm memory forget", MEMORY_FORGET),
    ("swarm gc", GC),
    ("swarm web", WEB),
    ("swarm worker", WORKER),
    ("swarm completions", COMPLETIONS),
    ("swarm ci", CI),
];

const SWARM: &[Example] = &[
    help(
        "swarm --goal \"Add request tracing to every handler\" --final-out report.md",
        "Plan a goal, run it, land the merged work and write the report to report.md",
    ),
    help(
        "swarm --goal \"Split the parser into modules\" --plan-only --plan-out plan.jsonl\n\
         swarm run plan.jsonl",
        "Plan only; read or edit the plan, then run it unchanged",
    ),
    help(
        "swarm resume",
        "After Ctrl-C, a full disk or a spent budget (exit 75): continue the run",
    ),
    help(
        "swarm status && swarm logs --errors",
        "Where the newest run stands, then its failures with their transcripts' paths",
    ),
    manual(
        "SWARM_API_BASE=http://localhost:11434/v1 SWARM_MODEL=qwen2.5-coder swarm --goal \"Write a summary of each module\"",
        "Plan and run with a local model server (Ollama) instead of OpenAI",
    ),
    manual(
        "swarm --goal \"Upgrade the HTTP client\" --goal \"Add retries to every caller of the HTTP client\" --final-out report.md --final-out-dir reports/",
        "Two goals in one run: the model finds that the second needs the first, so the second is planned once the first is merged; one report in all, and one per goal in reports/",
    ),
    manual(
        "swarm --goal \"Fix the failing tests\" --agent claude -j 6 --max-writers 3 --check \"cargo test --quiet\" --land branch",
        "Let Claude Code do the tasks, at most 3 writers at once, each checked before it is merged, and leave the result on swarm/RUN instead of landing it",
    ),
    manual(
        "source <(swarm completions bash)",
        "Turn on completions in this bash session (put the line in ~/.bashrc to keep them; `swarm completions --help` says how for zsh and fish)",
    ),
];

const RUN: &[Example] = &[
    help(
        "swarm run examples/repo-report.jsonl --final-out report.md",
        "Run swarm's example plan (shell commands only, no model) and write report.md",
    ),
    help(
        "swarm run tasks.jsonl -j 8 --max-writers 2 --check \"cargo test --quiet\"",
        "Eight tasks at once, two of them writers, each tested before its merge",
    ),
    help(
        "swarm run tasks.jsonl --budget-tokens 500000 --land branch",
        "Start no task after 500k tokens (exit 75); leave the result on swarm/RUN",
    ),
    manual(
        "swarm run tasks.jsonl --agent \"exec:my-agent --fast\" --task-timeout 20m --retries 2",
        "Send prompt tasks to a program of your own (prompt on stdin, result on stdout), 20 minutes an attempt, up to 3 attempts",
    ),
    manual(
        "swarm -C ../other run \"$PWD/tasks.jsonl\" --final-out \"$PWD/other-report.md\"",
        "Run in another repository; with -C, relative paths are taken from there, as with git -C",
    ),
    manual(
        "swarm run tasks.jsonl --json > summary.json",
        "The final summary as JSON on stdout, progress on stderr",
    ),
];

const RESUME: &[Example] = &[
    help("swarm resume", "Continue the newest unfinished run"),
    help(
        "swarm resume 20261129-071300-ab12 -j 2",
        "Continue a given run, two tasks at a time from now on",
    ),
    help(
        "swarm resume --budget-tokens 900000",
        "Continue a run that stopped at its token budget, with a larger one",
    ),
];

const RETRY: &[Example] = &[
    help(
        "swarm retry t4",
        "Run the parked or failed writer t4 of the newest run again, on the tip",
    ),
    help(
        "swarm retry t4 --run 20261129-071300-ab12 --agent claude",
        "The same for a task of an older run, with another agent",
    ),
];

const STEER: &[Example] = &[
    help(
        "swarm steer api \"Keep the old endpoint; add the new one beside it\"",
        "Tell the running task api of the newest run what to do differently",
    ),
    help(
        "swarm steer docs \"Write it for operators\" --run 20261129-071300-ab12",
        "The same for a task of another run that is going",
    ),
];

const DROP: &[Example] = &[
    help(
        "swarm drop",
        "Show what dropping the newest unfinished run removes and keeps, and ask",
    ),
    help(
        "swarm drop 20261129-071300-ab12 --yes --json",
        "Drop a given run without asking, and say what was done as JSON",
    ),
];

const RUNS: &[Example] = &[
    help("swarm runs", "Every run of this repository, newest first"),
    help(
        "swarm runs --json | jq -r '.[] | select(.status != \"finished\") | .id'",
        "The runs that `swarm resume` (or `swarm drop`) would take",
    ),
];

const SHOW: &[Example] = &[
    help(
        "swarm show t4",
        "Task t4 of the newest run: its spec, attempts, result, changes, transcript",
    ),
    help(
        "swarm show t4 --run 20261129-071300-ab12",
        "The same task of an older run (TAB completes run ids)",
    ),
    help(
        "swarm show t4 --json | jq -r '.attempts[] | .reason'",
        "Why each of its attempts ended",
    ),
];

const STATUS: &[Example] = &[
    help("swarm status", "The newest run"),
    help(
        "swarm status 20261129-071300-ab12",
        "A given run (TAB completes run ids)",
    ),
    help(
        "swarm status --json | jq -r '.tasks[] | select(.status == \"failed\") | .id'",
        "The ids of the newest run's failed tasks",
    ),
];

const LOGS: &[Example] = &[
    help(
        "swarm logs --errors",
        "The newest run's failures, then the transcripts of its failed attempts",
    ),
    help(
        "swarm logs --follow --tail 20",
        "The last 20 events, then new ones as they come, until the run ends",
    ),
    help(
        "less \"$(swarm logs --errors --path | sed -n 2p)\"",
        "Read the transcript of the first failed attempt",
    ),
    manual(
        "swarm logs --json | jq -c 'select(.kind == \"merged\")'",
        "The merges of the newest run, as JSON",
    ),
];

const GRAPH: &[Example] = &[
    help("swarm graph", "The newest run's DAG as a Mermaid flowchart"),
    help(
        "swarm graph tasks.jsonl --format dot | dot -Tsvg > plan.svg",
        "A task file's DAG drawn by Graphviz",
    ),
    help(
        "swarm graph --format html > run.html",
        "The newest run as a picture in a page of its own, drawn by swarm",
    ),
];

const CONFIG: &[Example] = &[
    help(
        "swarm config",
        "Every setting, its value and where it came from, and the agent profiles",
    ),
    help(
        "SWARM_JOBS=8 swarm config --json",
        "The same as JSON, with a variable's effect",
    ),
    help(
        "swarm config --config ci.toml",
        "What a run would use with ci.toml in place of the user's file",
    ),
];

const MEMORY: &[Example] = &[
    help(
        "swarm memory list",
        "What memory keeps of past goals, newest first",
    ),
    help(
        "swarm --goal \"Add request tracing\" --no-memory",
        "Plan a goal without the repository's memory, and keep nothing of it",
    ),
];

const MEMORY_LIST: &[Example] = &[
    help("swarm memory list", "Each past goal's number, run and text"),
    help("swarm memory list --json", "The same, whole, as JSON"),
];

const MEMORY_SHOW: &[Example] = &[
    help(
        "swarm memory show 3",
        "Past goal 3 as a planner is given it: its plan, what came of it, its cost",
    ),
    help("swarm memory show 3 --json", "The same as JSON"),
];

const TUI: &[Example] = &[
    help(
        "swarm tui",
        "The runs, their tasks and a composer for goals (`swarm` alone does it too)",
    ),
    help(
        "swarm tui -C ~/src/app",
        "The interface of another repository",
    ),
];

const MEMORY_CURATE: &[Example] = &[
    help(
        "swarm memory curate",
        "Merge duplicate lessons and retire those never used, now",
    ),
    help(
        "swarm memory curate --json",
        "The same, saying how many were merged, retired and kept as JSON",
    ),
];

const MEMORY_FORGET: &[Example] = &[
    help("swarm memory forget L2", "Forget lesson L2"),
    help(
        "swarm memory forget --all",
        "Forget every past goal and every lesson",
    ),
];

const QUEUE: &[Example] = &[
    help(
        "swarm queue add \"Upgrade the HTTP client\"",
        "Queue a goal; its number is printed",
    ),
    help(
        "swarm queue run --final-out report.md",
        "Run every queued goal as one run",
    ),
];

const QUEUE_ADD: &[Example] = &[
    help(
        "swarm queue add Add retries to every caller of the HTTP client",
        "The words are joined with spaces: quoting is optional",
    ),
    help(
        "git diff --name-only | xargs -I{} swarm queue add \"Review {}\"",
        "One goal per changed file",
    ),
];

const QUEUE_LIST: &[Example] = &[
    help(
        "swarm queue list",
        "The queued goals, and the run and status of those taken",
    ),
    help("swarm queue list --json", "The same as JSON"),
];

const QUEUE_RM: &[Example] = &[
    help(
        "swarm queue rm 2",
        "Remove goal 2 while no run has taken it",
    ),
    help(
        "swarm queue rm 2 --json",
        "The same, saying which goal was removed as JSON",
    ),
];

const QUEUE_RUN: &[Example] = &[
    help(
        "swarm queue run --final-out report.md --final-out-dir reports/",
        "Run the queue as one run: one report in all, and one per goal",
    ),
    help(
        "swarm queue run -j 8 --land branch",
        "The same, eight tasks at a time, leaving the result on swarm/RUN",
    ),
];

const GC: &[Example] = &[
    help("swarm gc --dry-run", "What would be removed"),
    help("swarm gc", "Remove it"),
];

const WEB: &[Example] = &[
    help(
        "swarm web",
        "Serve the newest run's page on 127.0.0.1; open the URL it prints",
    ),
    help(
        "swarm web 20261129-071300-ab12 --port 8080",
        "A given run's page, on port 8080",
    ),
];

const WORKER: &[Example] = &[
    help(
        "swarm worker --remote origin",
        "Run tasks of the newest run published on origin until it has none left",
    ),
    help(
        "swarm worker --remote origin --run 20261129-071300-ab12 -j 2 --wait 30m",
        "A given run, two tasks at a time, waiting up to 30 minutes for it",
    ),
];

const COMPLETIONS: &[Example] = &[
    help(
        "echo 'source <(swarm completions bash)' >> ~/.bashrc",
        "bash: completions in every new shell",
    ),
    help(
        "echo 'source <(swarm completions zsh)' >> ~/.zshrc",
        "zsh: the same (or save the script as _swarm in a directory of $fpath)",
    ),
    help(
        "swarm completions fish > ~/.config/fish/completions/swarm.fish",
        "fish: loaded when swarm is first completed",
    ),
];

const CI: &[Example] = &[
    help(
        "swarm ci github --out .github/workflows/swarm.yml",
        "A workflow with 3 workers; start it from the Actions tab with a goal",
    ),
    help(
        "swarm ci gitlab --workers 8 --plan plans/nightly.jsonl",
        "A GitLab CI file whose pipelines run a task file with 8 workers",
    ),
    manual(
        "swarm ci k8s --install 'curl -fsSL https://example.com/swarm -o /usr/local/bin/swarm && chmod +x /usr/local/bin/swarm' > swarm.yaml",
        "Kubernetes Jobs whose pods fetch a prebuilt swarm instead of building it",
    ),
];

#[cfg(test)]
mod tests {
    use super::{Shown, all};

    #[test]
    fn every_command_shows_two_to_four_examples_that_fit_a_terminal() {
        for (command, examples) in all() {
            let shown: Vec<_> = examples
                .iter()
                .filter(|e| e.shown == Shown::InHelp)
                .collect();
            assert!(
                (2..=4).contains(&shown.len()),
                "{command}: {} examples in --help",
                shown.len()
            );
            for example in shown {
                for line in example.line.lines() {
                    assert!(line.trim().len() <= 78, "{command}: {line:?} is too wide");
                }
                assert!(
                    example.text.len() <= 76,
                    "{command}: {:?} is no short comment",
                    example.text
                );
            }
        }
    }

    #[test]
    fn example_texts_mark_only_code_and_end_without_a_full_stop() {
        for (command, examples) in all() {
            for example in examples {
                assert!(
                    !example.text.contains("**") && !example.text.ends_with('.'),
                    "{command}: {:?}",
                    example.text
                );
            }
        }
    }
}

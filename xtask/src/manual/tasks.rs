//! `swarm-tasks(5)`: the task-file format, as `plan::parse` reads it and `Plan::to_jsonl`
//! writes it. Keep it true to those two.

use clap_mangen::roff::{Roff, roman};

use super::{Block, Item, Section, Term, inline, item};

/// What the page is about, after its name.
pub(super) const NAME: &str = "the task files of swarm: one JSON task a line";

/// One task, a line of the file, spread over lines here.
const SYNOPSIS: &[&str] = &[
    "{**\"id\"**:\"_id_\", **\"prompt\"**:\"_text_\" | **\"run\"**:\"_command_\",",
    " **\"deps\"**:[\"_id_\", …], **\"lane\"**:\"_lane_\", **\"mode\"**:\"read\" | \"write\",",
    " **\"title\"**:\"_text_\", **\"agent\"**:\"_name_\", **\"timeout\"**:_seconds_ | \"_duration_\",",
    " **\"check\"**:\"_command_\", **\"files\"**:[\"_path_\", …], **\"then\"**:{_task_}}",
];

const DESCRIPTION: &str = "\
A task file is what **swarm run** runs and what **--plan-out** writes: a plan of tasks, one JSON \
object a line (JSONL), in UTF-8. Blank lines are allowed; nothing else is (no comments, no \
object spread over several lines). Each task either asks an agent (**prompt**) or runs a shell \
command (**run**), and may name the tasks it needs (**deps**); together they make a DAG.

Tasks that only read share one read-only snapshot of the repository; every task that writes gets \
a checkout of its own on branch **swarm/**_run_**-**_task_, and what it leaves there, committed or \
not, is merged into the run's integration branch once it is done.";

const FIELDS: &[Item] = &[
    item(
        "id",
        "Required. 1 to 64 characters of A-Z a-z 0-9 . _ -, holding no **..** and ending in neither **.** nor **.lock** (git refuses such branch names, and the id names the task's branch and files). Unique in the file.",
    ),
    item(
        "prompt",
        "Text for an agent: the task's agent, else **--agent**, else **auto**. At most 1 MiB. The agent gets it on stdin, followed by the results of the task's deps.",
    ),
    item(
        "run",
        "A shell command, run with **sh -c** in the task's directory; its stdout is the result, its stderr goes to the attempt's transcript, exit 0 is success. At most 64 KiB (Linux refuses a longer argument). Exactly one of **prompt** and **run** is given, and it is not empty.",
    ),
    item(
        "deps",
        "A list of ids of tasks that must be done first (default: none). A task starts once all its deps are done; if one fails, is skipped or is parked, the task is skipped. A dep listed twice counts once.",
    ),
    item(
        "lane",
        "The task's role: **researcher**, **analyst**, **reviewer**, **writer** (prose, not code), **coder**, **reducer** or **worker** (default). Any other name is kept as written, and its default mode is **write**.",
    ),
    item(
        "mode",
        "**read** or **write**. Default: **write** for every **run** task whatever its lane; for a **prompt** task, **write** in the **coder** and **worker** lanes and in a lane swarm does not know, **read** in the **researcher**, **analyst**, **reviewer**, **writer** and **reducer** lanes. A reader that changes its snapshot fails.",
    ),
    item("title", "A short name; a writer's commit message uses it."),
    item(
        "agent",
        "The agent of this prompt task: **openai**, **claude**, **codex**, a profile's name, **exec:**_command_, **acp:**_command_ or **pool:**_name_ (default: **--agent**).",
    ),
    item(
        "timeout",
        "How long one attempt may take: seconds (a number, **90**, **1.5**) or a duration (**\"90s\"**, **\"20m\"**, **\"1h30m\"**, **\"1h 30m\"**, units **ms**, **s**, **m**, **h**, **d**); positive, at most 365 days (default: **--task-timeout**, 30 minutes).",
    ),
    item(
        "check",
        "A command (**sh -c**, in the writer's checkout) that must succeed before the writer is merged; a failure fails the attempt, which is retried like any other (default: **--check**). At most 64 KiB.",
    ),
    item(
        "files",
        "A list of paths a writer expects to touch. Recorded in the plan; a planned goal's writers that declare the same file are ordered one after the other. A hand-written file's **files** do not change the order.",
    ),
    item(
        "then",
        "A continuation: a task object, checked as a line is (its **id** defaults to **then**), that joins the run when this task succeeds, as _task_**.**_id_, depending on this task, on its own **deps** and on every task this task spawned, whose results it gets.",
    ),
    item(
        "parent",
        "The task that spawned this one, written by swarm in the plans it keeps; it must name a task of the file. A spawn may not set it.",
    ),
    item(
        "spawn",
        "The most tasks this task, and the tasks it adds, may add to the run while it runs: a whole number, 0 to 1000000. Without it the task adds none (unless **--spawning all**).",
    ),
];

const VALIDATION: &str = "\
The whole file is read before anything runs, and every problem found is reported at once, each \
with its line number and, when it has one, the task's id; then swarm exits with status 2 and runs \
nothing:

A line is a problem when it is not valid JSON, not a JSON object, has a field not listed above \
(the problem names the listed field nearest in spelling, when one is near), lacks **id**, has both or neither of **prompt** and **run** (or an empty one), has a field of the \
wrong type (every field is a string but **deps** and **files**, lists of strings, **timeout**, \
a number or a string, and **spawn**, a whole number), a text with a NUL byte, a text over its limit (1 MiB for **prompt**, \
64 KiB for **run** and **check**, 4 KiB for the others), a **mode** other than **read** and \
**write**, a bad id (in **id** or in **deps**) or a bad **timeout**.

Among the tasks whose lines are good, the links are checked: an id defined twice (naming the \
line of the first), a dep naming no task, and every cycle, shown as its path. A file with no \
task at all is a problem too, and so is a file that is one JSON array of tasks, or tasks spread \
over several lines each: it is reported as one problem, with the **jq** command that writes it \
as JSONL (**jq -c \'.[]\'** _file_ for an array, **jq -c .** _file_ for spread objects).";

const PROBLEMS: &str = "\
error: tasks.jsonl has 3 problems; nothing ran
  tasks.jsonl:2: task \"b\": unknown field \"dpes\"; did you mean \"deps\"?
  tasks.jsonl:3: task \"c\": dependency cycle: c → d → c
  tasks.jsonl:6: not valid JSON: expected ident at line 1 column 2";

const RESULTS: &str = "\
A task's result is what it prints on stdout (an agent's final answer). A **run** task finds its \
deps' results as files, **$SWARM_DEPS_DIR/**_dep_**.txt**, one per dep, each holding the whole \
result, and **$SWARM_DEPS** lists the dep ids, separated by spaces, in the order of **deps**. A \
**prompt** task gets its deps' results after its prompt, each cut to 16 KiB and framed as data \
from other tasks, not instructions; a writer's prompt also lists the files its deps changed, \
which are already in its checkout. Every task also finds **SWARM_RUN_ID**, **SWARM_TASK_ID**, \
**SWARM_MODE**, **SWARM_ATTEMPT** and **SWARM_ACTIVE=1** in its environment.

A running task whose **spawn** allows it may add tasks to the run: it writes them, in this \
format, to the file **$SWARM_SPAWN** names (the built-in agent calls its **add_tasks** tool), \
and **$SWARM_CAPACITY** says, as JSON, how many it may add; an attempt that may add none gets \
neither. They are read once its attempt succeeds, namespaced as _task_**.**_id_, each depending \
on the task; a dep naming another of them means that one. What a task's **spawn** allows holds \
for every task below it, and the limits **max-children**, **max-depth**, **max-spawned** and \
**spawns-per-minute** of **swarm**(1) refuse a spawn past them, whole; the task succeeds all the \
same.

The run's deliverable, the first part of the report, is the result of the last task in the \
**reducer** lane or, without one, of the single task nothing depends on.

Among tasks that are ready, the one with the longest chain of tasks after it starts first.";

const PLAN_OUT: &str = "\
**swarm --goal** _text_ **--plan-out** _file_ writes the plan after its repairs in this format, \
one task a line, so **swarm run** _file_ runs it unchanged; **--plan-only** writes it and runs \
nothing (to stdout without **--plan-out**). Every run keeps the plan it ran in \
**.git/swarm/runs/**_run_**/plan.jsonl**. Each line has **id**, **prompt** or **run**, **deps** \
(an empty list when there are none), **lane** and **mode** spelled out, and **title**, **agent**, \
**timeout** (in seconds), **check** and **files** when the task has them. Tasks of a run of \
several goals have their goal's id before theirs (**g2.scan**).";

const EXAMPLES: &[Item] = &[
    item(
        "{\"id\":\"survey\",\"title\":\"Survey the error handling\",\"prompt\":\"List every place that swallows an error, with file and line.\",\"lane\":\"researcher\"}",
        "A reader: a prompt task in the researcher lane runs read-only, in the shared snapshot.",
    ),
    item(
        "{\"id\":\"fix-docs\",\"prompt\":\"Fix the spelling mistakes in docs/.\",\"lane\":\"coder\",\"files\":[\"docs/\"],\"check\":\"make docs\",\"timeout\":\"20m\"}",
        "A writer: a coder gets its own checkout and branch; its changes are merged once make docs succeeds there.",
    ),
    item(
        "{\"id\":\"count\",\"run\":\"git ls-files | wc -l\",\"mode\":\"read\"}",
        "A command task: without \"mode\":\"read\" it would be a writer and get a checkout of its own.",
    ),
    item(
        "{\"id\":\"report\",\"run\":\"cat \\\"$SWARM_DEPS_DIR\\\"/*.txt\",\"deps\":[\"survey\",\"fix-docs\",\"count\"],\"lane\":\"reducer\",\"mode\":\"read\"}",
        "A reducer: it runs last and its result, here the others' results one after the other, is the deliverable.",
    ),
    item(
        "{\"id\":\"summary\",\"prompt\":\"Write the release notes from these results.\",\"deps\":[\"survey\",\"fix-docs\"],\"lane\":\"reducer\",\"agent\":\"claude\"}",
        "Instead of the reducer above: one that asks an agent (Claude Code here) to combine the results.",
    ),
];

/// The page's sections after its synopsis, as both forms show them.
pub(super) fn sections() -> Vec<Section> {
    let paragraphs = |text: &str| -> Vec<Block> {
        super::paragraphs(text)
            .into_iter()
            .map(Block::Paragraph)
            .collect()
    };
    let mut validation = paragraphs(VALIDATION);
    validation.push(Block::Paragraph("For example:".to_owned()));
    validation.push(Block::Verbatim(PROBLEMS.to_owned()));
    let mut fields = vec![Block::Paragraph(
        "Only **id** and one of **prompt** and **run** are required.".to_owned(),
    )];
    fields.push(Block::Terms(FIELDS.iter().map(Term::of).collect()));
    vec![
        Section {
            title: "Description",
            blocks: paragraphs(DESCRIPTION),
        },
        Section {
            title: "Fields",
            blocks: fields,
        },
        Section {
            title: "Validation",
            blocks: validation,
        },
        Section {
            title: "Results and dependencies",
            blocks: paragraphs(RESULTS),
        },
        Section {
            title: "Plans written by swarm",
            blocks: paragraphs(PLAN_OUT),
        },
        Section {
            title: "Examples",
            blocks: vec![
                Block::Paragraph(
                    "The first four lines below make one task file, tasks.jsonl, which **swarm run tasks.jsonl** runs."
                        .to_owned(),
                ),
                Block::Examples(
                    "json",
                    EXAMPLES
                        .iter()
                        .map(|e| (e.text.to_owned(), e.term.to_owned()))
                        .collect(),
                ),
                Block::Paragraph(
                    "To check a task file without running it (its problems, or its DAG):".to_owned(),
                ),
                Block::Examples(
                    "sh",
                    vec![(String::new(), "swarm graph tasks.jsonl".to_owned())],
                ),
            ],
        },
        Section {
            title: "See also",
            blocks: vec![Block::Pages(
                ["swarm(1)", "swarm-run(1)", "swarm-graph(1)"]
                    .map(str::to_owned)
                    .to_vec(),
            )],
        },
    ]
}

/// The synopsis: one task, spread over lines, marked up.
pub(super) fn synopsis() -> &'static [&'static str] {
    SYNOPSIS
}

/// The man page; `cmd` gives the version.
#[expect(clippy::expect_used, reason = "writing into a Vec cannot fail")]
pub(super) fn man_page(cmd: &clap::Command) -> Vec<u8> {
    let source = format!("swarm {}", cmd.get_version().unwrap_or_default());
    let mut roff = Roff::new();
    // No date, as on the other pages; roff writes an empty argument as nothing, so quote it.
    roff.control(
        "TH",
        ["swarm-tasks", "5", "\"\"", source.as_str(), "File Formats"],
    );
    roff.control("SH", ["NAME"])
        .text([roman(format!("swarm-tasks - {NAME}"))]);
    roff.control("SH", ["SYNOPSIS"]);
    roff.control("nf", []);
    for line in SYNOPSIS {
        roff.text(inline(line));
    }
    roff.control("fi", []);
    super::man::render(&mut roff, &sections());
    let mut out = Vec::new();
    roff.to_writer(&mut out).expect("writing into a Vec");
    out
}

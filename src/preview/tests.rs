use std::collections::VecDeque;
use std::path::Path;

use super::{Answer, Consent, Terminal, consent, counts, question, tree};
use crate::config::SpawnLimits;
use crate::plan::Plan;
use crate::schedule::Ceiling;

/// No task may add tasks.
const NONE: Ceiling = Ceiling {
    tasks: Vec::new(),
    total: 0,
    every: false,
};

fn plan(lines: &[&str]) -> Plan {
    Plan::parse(&(lines.join("\n") + "\n"), "test").unwrap()
}

/// Two readers, a writer and a reducer after all three.
fn fan_in() -> Plan {
    plan(&[
        r#"{"id":"survey","title":"List the files","prompt":"p","lane":"researcher"}"#,
        r#"{"id":"readme","title":"Summarise the README","prompt":"p","lane":"analyst"}"#,
        r#"{"id":"notes","title":"Write NOTES.md","prompt":"p","lane":"coder","files":["NOTES.md"]}"#,
        r#"{"id":"final","title":"Combine the results","prompt":"p","lane":"reducer","deps":["survey","readme","notes"]}"#,
    ])
}

#[test]
fn a_fan_in_hangs_under_its_last_dep_and_names_the_others() {
    assert_eq!(
        tree(&fan_in(), None, &NONE),
        "\
survey — List the files         researcher  reader
readme — Summarise the README   analyst     reader
notes — Write NOTES.md          coder       WRITER  files: NOTES.md
└─ final — Combine the results  reducer     reader  also after survey, readme
"
    );
    assert_eq!(counts(&fan_in(), &NONE), "4 tasks: 3 readers, 1 writer");
    assert_eq!(
        question(&fan_in(), &NONE),
        "Run 4 tasks (1 writer)? [Y/n/e] "
    );
}

#[test]
fn a_task_that_may_add_tasks_says_how_many_and_the_question_asks_for_them_too() {
    let fan_out = plan(&[
        r#"{"id":"scan","title":"Find the handlers","prompt":"p","lane":"researcher","spawn":20}"#,
        r#"{"id":"docs","title":"Write the docs","prompt":"p","lane":"coder","spawn":5}"#,
        r#"{"id":"final","title":"Combine","prompt":"p","lane":"reducer","deps":["scan","docs"]}"#,
    ]);
    let ceiling = Ceiling::of(&fan_out, &SpawnLimits::default());
    assert_eq!(
        tree(&fan_out, None, &ceiling),
        "\
scan — Find the handlers  researcher  reader  may add up to 20
docs — Write the docs     coder       WRITER  may add up to 5
└─ final — Combine        reducer     reader  also after scan
"
    );
    assert_eq!(
        counts(&fan_out, &ceiling),
        "3 tasks: 2 readers, 1 writer; scan and docs may add up to 25 more"
    );
    assert_eq!(
        question(&fan_out, &ceiling),
        "Run 3 tasks (1 writer), and up to 25 more they may add? [Y/n/e] "
    );
    // The run's limits bound what a task's `spawn` asks for; off, nothing is asked for.
    let tight = SpawnLimits {
        tasks: 12,
        ..SpawnLimits::default()
    };
    let ceiling = Ceiling::of(&fan_out, &tight);
    assert_eq!(
        ceiling.tasks,
        [("scan".to_owned(), 12), ("docs".to_owned(), 5)]
    );
    assert_eq!(ceiling.total, 12);
    let off = SpawnLimits {
        which: crate::config::Spawning::Off,
        ..SpawnLimits::default()
    };
    let ceiling = Ceiling::of(&fan_out, &off);
    assert_eq!(ceiling, NONE);
    assert_eq!(
        question(&fan_out, &ceiling),
        "Run 3 tasks (1 writer)? [Y/n/e] "
    );
    // Every task may add tasks: the run's limits alone bound them.
    let all = SpawnLimits {
        which: crate::config::Spawning::All,
        ..SpawnLimits::default()
    };
    assert_eq!(
        Ceiling::of(&fan_out, &all).describe().as_deref(),
        Some("every task may add tasks, up to 500 more")
    );
}

#[test]
fn a_diamond_draws_each_task_once_after_all_it_needs() {
    let diamond = plan(&[
        r#"{"id":"d","title":"join","run":"true","deps":["b","c"],"mode":"read"}"#,
        r#"{"id":"a","title":"start","run":"true","mode":"read"}"#,
        r#"{"id":"b","title":"left","run":"true","deps":["a"]}"#,
        r#"{"id":"c","title":"right","run":"true","deps":["a"],"mode":"read"}"#,
        r#"{"id":"e","title":"aside","run":"true","mode":"read","deps":["a"]}"#,
    ]);
    assert_eq!(
        tree(&diamond, None, &NONE),
        "\
a — start       worker  reader
├─ b — left     worker  WRITER
├─ c — right    worker  reader
│  └─ d — join  worker  reader  also after b
└─ e — aside    worker  reader
"
    );
    assert_eq!(
        question(&diamond, &NONE),
        "Run 5 tasks (1 writer)? [Y/n/e] "
    );
}

#[test]
fn a_deep_chain_keeps_the_branches_of_the_levels_above() {
    let chain = plan(&[
        r#"{"id":"a","run":"true","mode":"read"}"#,
        r#"{"id":"b","run":"true","deps":["a"],"mode":"read"}"#,
        r#"{"id":"c","run":"true","deps":["b"],"mode":"read"}"#,
        r#"{"id":"x","run":"true","deps":["a"],"mode":"read"}"#,
    ]);
    assert_eq!(
        tree(&chain, None, &NONE),
        "\
a — $ true        worker  reader
├─ b — $ true     worker  reader
│  └─ c — $ true  worker  reader
└─ x — $ true     worker  reader
"
    );
    assert_eq!(
        question(&chain, &NONE),
        "Run 4 tasks (no writers)? [Y/n/e] "
    );
}

#[test]
fn long_titles_are_cut_to_the_width_and_untitled_tasks_show_their_prompt() {
    let long = plan(&[
        r#"{"id":"scan","prompt":"Read every file under src and list each public function with a one-line summary of what it does","lane":"researcher"}"#,
        r#"{"id":"fix","title":"Fix it","prompt":"p","lane":"coder","deps":["scan"],"files":["src/a.rs","src/b.rs","src/c.rs","src/d.rs"]}"#,
    ]);
    let wide = tree(&long, None, &NONE);
    // Without a width, a prompt is cut at 72 characters all the same.
    assert!(
        wide.starts_with(
            "scan — Read every file under src and list each public function with a one-line…  "
        ),
        "{wide}"
    );
    let narrow = tree(&long, Some(60), &NONE);
    assert_eq!(
        narrow,
        "\
scan — Read every f…  researcher  reader
└─ fix — Fix it       coder       WRITER  files: src/a.rs, …
"
    );
    for line in narrow.lines() {
        assert!(line.chars().count() <= 60, "{line:?}");
    }
    // However narrow the terminal, the id and the start of the title stay.
    let tiny = tree(&long, Some(20), &NONE);
    assert_eq!(tiny, "scan — Read eve…  r…\n└─ fix — Fix it   c…\n");
}

/// A terminal that gives scripted answers and edits, and keeps what was shown.
struct Script {
    answers: VecDeque<Answer>,
    /// Each edit: the new text of the file, or `None` for an editor that fails.
    edits: VecDeque<Option<String>>,
    shown: String,
    /// The file's text as each edit found it.
    seen: Vec<String>,
}

impl Script {
    fn new(answers: &[&str], edits: Vec<Option<String>>) -> Self {
        Self {
            answers: answers
                .iter()
                .map(|a| match *a {
                    "^D" => Answer::End,
                    "^C" => Answer::Interrupted,
                    line => Answer::Line(line.to_owned()),
                })
                .collect(),
            edits: edits.into(),
            shown: String::new(),
            seen: Vec::new(),
        }
    }
}

impl Terminal for Script {
    fn show(&mut self, text: &str) -> std::io::Result<()> {
        self.shown.push_str(text);
        Ok(())
    }

    fn answer(&mut self) -> Answer {
        self.answers.pop_front().expect("asked once too often")
    }

    fn edit(&mut self, file: &Path) -> std::io::Result<bool> {
        self.seen.push(std::fs::read_to_string(file)?);
        match self.edits.pop_front().expect("edited once too often") {
            Some(text) => {
                std::fs::write(file, text)?;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn width(&self) -> Option<usize> {
        None
    }
}

fn ask(answers: &[&str], edits: Vec<Option<String>>) -> (Consent, String) {
    let mut script = Script::new(answers, edits);
    let consent = consent(&fan_in(), &SpawnLimits::default(), &mut script).unwrap();
    assert!(
        script.answers.is_empty(),
        "answers left: {:?}",
        script.answers
    );
    assert!(script.edits.is_empty());
    (consent, script.shown)
}

fn ran(consent: &Consent) -> Option<(usize, bool)> {
    match consent {
        Consent::Run => Some((4, false)),
        Consent::RunEdited(plan) => Some((plan.len(), true)),
        Consent::Declined { .. } => None,
    }
}

#[test]
fn enter_or_y_runs_the_plan_and_the_tree_comes_before_the_question() {
    for answer in ["", "y", "Y", "yes"] {
        let (consent, shown) = ask(&[answer], vec![]);
        assert_eq!(ran(&consent), Some((4, false)));
        let tree_at = shown.find("survey — List the files").unwrap();
        let counts_at = shown.find("4 tasks: 3 readers, 1 writer").unwrap();
        let question_at = shown.find("Run 4 tasks (1 writer)? [Y/n/e] ").unwrap();
        assert!(tree_at < counts_at && counts_at < question_at, "{shown}");
    }
}

#[test]
fn n_the_end_of_input_and_ctrl_c_run_nothing() {
    for (answer, interrupted) in [("n", false), ("No", false), ("^D", false), ("^C", true)] {
        let (consent, _) = ask(&[answer], vec![]);
        assert!(
            matches!(consent, Consent::Declined { edited: None, interrupted: i } if i == interrupted),
            "{answer}: {consent:?}"
        );
    }
}

#[test]
fn any_other_answer_asks_again() {
    let (consent, shown) = ask(&["maybe", "q", "y"], vec![]);
    assert_eq!(ran(&consent), Some((4, false)));
    assert_eq!(shown.matches("Run 4 tasks (1 writer)? [Y/n/e] ").count(), 3);
    assert_eq!(shown.matches("Answer y (or Enter)").count(), 2);
}

#[test]
fn e_runs_the_edited_plan() {
    let edited = fan_in()
        .to_jsonl()
        .lines()
        .filter(|l| !l.contains("\"id\":\"readme\""))
        .map(|l| l.replace("\"readme\",", ""))
        .collect::<Vec<_>>()
        .join("\n");
    let (consent, shown) = ask(&["e"], vec![Some(edited)]);
    assert_eq!(ran(&consent), Some((3, true)));
    assert!(
        shown.contains("Running the edited plan (3 tasks: 2 readers, 1 writer)"),
        "{shown}"
    );
}

#[test]
fn an_edit_with_problems_is_shown_and_edited_again_or_aborted() {
    let broken = "{\"id\":\"a\",\"run\":\"true\",\"deps\":[\"nope\"]}\n".to_owned();
    let fixed = "{\"id\":\"a\",\"run\":\"true\"}\n".to_owned();
    // Edited again (Enter), then valid: the edit runs.
    let mut script = Script::new(&["e", ""], vec![Some(broken.clone()), Some(fixed)]);
    let consent = consent(&fan_in(), &SpawnLimits::default(), &mut script).unwrap();
    assert_eq!(ran(&consent), Some((1, true)));
    assert!(
        script.shown.contains(
            "the edited plan has 1 problem; nothing ran\n  the edited plan:1: task \"a\": unknown dependency \"nope\"\nEdit the plan again, or abort? [E/a] "
        ),
        "{}",
        script.shown
    );
    // The first edit saw the plan; the second, the first edit's text.
    assert_eq!(script.seen, [fan_in().to_jsonl(), broken.clone()]);

    // Aborted: nothing runs, and the edit comes back so it is not lost.
    let (consent, _) = ask(&["e", "x", "a"], vec![Some(broken.clone())]);
    assert!(
        matches!(&consent, Consent::Declined { edited: Some(text), interrupted: false } if *text == broken),
        "{consent:?}"
    );
}

#[test]
fn a_failed_editor_leaves_the_plan_as_it_was_and_asks_again() {
    let (consent, shown) = ask(&["e", "n"], vec![None]);
    assert!(matches!(consent, Consent::Declined { edited: None, .. }));
    assert!(
        shown.contains("The editor failed; the plan is as it was."),
        "{shown}"
    );
    assert_eq!(shown.matches("[Y/n/e]").count(), 2);
}

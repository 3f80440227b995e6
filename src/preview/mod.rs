//! A planned goal as its user sees it before it runs: the plan as a tree (`tree`), and at a
//! terminal the question whether to run it, run nothing, or edit it first in the user's editor.
//! Decides nothing about the run: it returns the plan to run, or that none is to run.
//!
//! The one place besides `ui` that talks to the terminal, because it also reads from it, and the
//! one place besides the agent runner that starts a program: the user's editor, which is theirs
//! and gets the terminal.

use std::io::{IsTerminal as _, Write as _};
use std::path::Path;
use std::sync::mpsc::{Receiver, Sender};

use crate::config::SpawnLimits;
use crate::plan::Plan;
use crate::schedule::Ceiling;

mod tree;

pub use tree::{branches, counts, question, tree};

/// What the user answered to one question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// A line (without its newline).
    Line(String),
    /// The input ended (Ctrl-D).
    End,
    /// Ctrl-C.
    Interrupted,
}

/// What the user chose.
#[derive(Debug)]
pub enum Consent {
    /// Run the plan as it was planned.
    Run,
    /// Run the user's edit of the plan.
    RunEdited(Plan),
    /// Run nothing. `edited` is the text of the user's last edit, when there was one, so that it
    /// is not lost; `interrupted` says the answer was Ctrl-C.
    Declined {
        edited: Option<String>,
        interrupted: bool,
    },
}

/// The terminal the question is asked on.
pub trait Terminal {
    /// Shows `text` as it is (no newline added).
    fn show(&mut self, text: &str) -> std::io::Result<()>;
    /// Waits for the user's answer.
    fn answer(&mut self) -> Answer;
    /// Opens `file` in the user's editor; whether the editor exited 0.
    fn edit(&mut self, file: &Path) -> std::io::Result<bool>;
    /// The terminal's width in characters, when known.
    fn width(&self) -> Option<usize>;
}

/// Shows `plan` and asks whether to run it: Enter or `y` runs it, `n` (or the end of the input,
/// or Ctrl-C) runs nothing, `e` opens it in the editor as a task file and runs the edit once it
/// is valid (a plan with problems is shown with them, to edit again or abort). Any other
/// answer asks again.
pub fn consent(
    plan: &Plan,
    limits: &SpawnLimits,
    terminal: &mut impl Terminal,
) -> anyhow::Result<Consent> {
    let ceiling = &Ceiling::of(plan, limits);
    let width = terminal.width();
    terminal.show(&format!(
        "\n{}{}\n\n",
        tree(plan, width, ceiling),
        counts(plan, ceiling)
    ))?;
    loop {
        terminal.show(&question(plan, ceiling))?;
        let answer = terminal.answer();
        if !matches!(answer, Answer::Line(_)) {
            // Whatever was on the line stays there: end it before what comes next.
            terminal.show("\n")?;
        }
        match answer {
            Answer::Line(line) => match line.trim().to_ascii_lowercase().as_str() {
                "" | "y" | "yes" => return Ok(Consent::Run),
                "n" | "no" => {
                    return Ok(Consent::Declined {
                        edited: None,
                        interrupted: false,
                    });
                }
                "e" | "edit" => {
                    if let Some(consent) = edit(plan, limits, terminal)? {
                        return Ok(consent);
                    }
                }
                _ => terminal.show(
                    "Answer y (or Enter) to run the plan, n to run nothing, e to edit it first.\n",
                )?,
            },
            Answer::End => {
                return Ok(Consent::Declined {
                    edited: None,
                    interrupted: false,
                });
            }
            Answer::Interrupted => {
                return Ok(Consent::Declined {
                    edited: None,
                    interrupted: true,
                });
            }
        }
    }
}

/// The plan in a temporary task file, edited until it is valid or the user gives up. `None`:
/// the editor failed, and the question is asked again about the plan as it was.
fn edit(
    plan: &Plan,
    limits: &SpawnLimits,
    terminal: &mut impl Terminal,
) -> anyhow::Result<Option<Consent>> {
    let mut file = tempfile::Builder::new()
        .prefix("swarm-plan-")
        .suffix(".jsonl")
        .tempfile()?;
    file.write_all(plan.to_jsonl().as_bytes())?;
    file.flush()?;
    let path = file.path().to_owned();
    loop {
        terminal.show(&format!(
            "Editing the plan in {} (one task a line, as in a task file); it runs when the editor exits.\n",
            path.display()
        ))?;
        if !terminal.edit(&path)? {
            terminal.show("The editor failed; the plan is as it was.\n")?;
            return Ok(None);
        }
        let text = std::fs::read_to_string(&path)?;
        let problems = match Plan::parse(&text, "the edited plan") {
            Ok(edited) => {
                let ceiling = Ceiling::of(&edited, limits);
                terminal.show(&format!(
                    "Running the edited plan ({})\n",
                    counts(&edited, &ceiling)
                ))?;
                return Ok(Some(Consent::RunEdited(edited)));
            }
            Err(invalid) => invalid,
        };
        terminal.show(&format!("{problems}\n"))?;
        loop {
            terminal.show("Edit the plan again, or abort? [E/a] ")?;
            let answer = terminal.answer();
            if !matches!(answer, Answer::Line(_)) {
                terminal.show("\n")?;
            }
            let declined = |interrupted| {
                Ok(Some(Consent::Declined {
                    edited: Some(text.clone()),
                    interrupted,
                }))
            };
            match answer {
                Answer::Line(line) => match line.trim().to_ascii_lowercase().as_str() {
                    "" | "e" | "edit" => break,
                    "a" | "abort" | "n" | "no" => return declined(false),
                    _ => terminal.show("Answer e (or Enter) to edit again, a to abort.\n")?,
                },
                Answer::End => return declined(false),
                Answer::Interrupted => return declined(true),
            }
        }
    }
}

/// Whether a question can be asked: stdin and stderr are both terminals.
pub fn interactive() -> bool {
    std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

/// The width of the terminal on stdout, when it is one (for `--plan-only`).
pub fn stdout_width() -> Option<usize> {
    terminal_size::terminal_size_of(std::io::stdout()).map(|(w, _)| usize::from(w.0))
}

/// The process's own terminal: the tree and questions on stderr, answers from stdin. While it
/// lives, Ctrl-C answers the question (it stops the dialog, not swarm: the caller records what
/// the user chose).
pub struct Tty {
    answers: Receiver<Answer>,
    send: Sender<Answer>,
    _signals: crate::signal::Handling,
}

impl Tty {
    /// Takes Ctrl-C from now on, so that one pressed while the plan is shown is not lost.
    pub fn new() -> Self {
        let (send, answers) = std::sync::mpsc::channel();
        let interrupt = send.clone();
        let signals = crate::signal::handle(
            move || {
                let _ = interrupt.send(Answer::Interrupted);
            },
            || {},
        );
        Self {
            answers,
            send,
            _signals: signals,
        }
    }
}

impl Terminal for Tty {
    fn show(&mut self, text: &str) -> std::io::Result<()> {
        let mut err = std::io::stderr().lock();
        err.write_all(text.as_bytes())?;
        err.flush()
    }

    fn answer(&mut self) -> Answer {
        let send = self.send.clone();
        // A thread of its own, so that Ctrl-C is heard while it waits. It reads one line and
        // ends, so none is left reading when the editor takes the terminal.
        let reader = std::thread::Builder::new()
            .name("swarm-answer".into())
            .spawn(move || {
                let mut line = String::new();
                let answer = match std::io::stdin().read_line(&mut line) {
                    Ok(0) | Err(_) => Answer::End,
                    Ok(_) => Answer::Line(line.trim_end_matches(['\n', '\r']).to_owned()),
                };
                let _ = send.send(answer);
            });
        if reader.is_err() {
            return Answer::End;
        }
        self.answers.recv().unwrap_or(Answer::End)
    }

    fn edit(&mut self, file: &Path) -> std::io::Result<bool> {
        in_editor(file)
    }

    fn width(&self) -> Option<usize> {
        terminal_size::terminal_size_of(std::io::stderr()).map(|(w, _)| usize::from(w.0))
    }
}

/// Opens `file` in the user's editor (`$VISUAL`, `$EDITOR`, else vi) on the terminal and waits
/// for it: whether it exited 0.
pub fn in_editor(file: &Path) -> std::io::Result<bool> {
    let editor = ["VISUAL", "EDITOR"]
        .iter()
        .filter_map(std::env::var_os)
        .find(|v| !v.is_empty())
        .unwrap_or_else(|| "vi".into());
    // Ctrl-C in the editor is the editor's (vi's, for one); swarm waits for it to exit.
    let _signals = crate::signal::ignore_interrupts();
    // As git runs it: through the shell, so `EDITOR="code --wait"` works.
    let mut script = editor;
    script.push(" \"$@\"");
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg("editor")
        .arg(file)
        .status()?;
    Ok(status.success())
}

#[cfg(test)]
mod tests;

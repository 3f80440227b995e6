//! What people see: progress on stderr (bars on a terminal, plain lines otherwise, nothing with
//! `-q`), the summary or JSON on stdout, and errors. Decides nothing.
#![expect(clippy::print_stderr, reason = "the one module that prints")]

use std::collections::HashMap;
use std::io::IsTerminal as _;
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

/// What a line of progress says happened, right-aligned before its text (cargo's style).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    Running,
    Started,
    Finished,
    Failed,
    Retrying,
    Interrupted,
    Limited,
    Paused,
    Stopping,
    Stopped,
    Halted,
    Merged,
    Parked,
    Resolving,
    Resolved,
    Skipped,
    Skipping,
    Kept,
    Deadlock,
    Planning,
    Planned,
    Inferring,
    Needs,
    Dropped,
    Independent,
    Queued,
    Removed,
    Empty,
    Done,
    Note,
}

impl Verb {
    fn as_str(self) -> &'static str {
        match self {
            Self::Running => "Running",
            Self::Started => "Started",
            Self::Finished => "Finished",
            Self::Failed => "Failed",
            Self::Retrying => "Retrying",
            Self::Interrupted => "Interrupted",
            Self::Limited => "Limited",
            Self::Paused => "Paused",
            Self::Stopping => "Stopping",
            Self::Stopped => "Stopped",
            Self::Halted => "Halted",
            Self::Merged => "Merged",
            Self::Parked => "Parked",
            Self::Resolving => "Resolving",
            Self::Resolved => "Resolved",
            Self::Skipped => "Skipped",
            Self::Skipping => "Skipping",
            Self::Kept => "Kept",
            Self::Deadlock => "Deadlock",
            Self::Planning => "Planning",
            Self::Planned => "Planned",
            Self::Inferring => "Inferring",
            Self::Needs => "Needs",
            Self::Dropped => "Dropped",
            Self::Independent => "Independent",
            Self::Queued => "Queued",
            Self::Removed => "Removed",
            Self::Empty => "Empty",
            Self::Done => "Done",
            Self::Note => "Note",
        }
    }
}

/// Progress output of a run.
pub struct Ui {
    mode: Mode,
}

enum Mode {
    Quiet,
    Plain,
    Bars {
        multi: MultiProgress,
        overall: ProgressBar,
        tasks: HashMap<String, ProgressBar>,
    },
}

impl Ui {
    /// Bars when stderr is a terminal, plain lines when it is not, nothing when quiet.
    pub fn new(quiet: bool) -> Self {
        let mode = if quiet {
            Mode::Quiet
        } else if std::io::stderr().is_terminal()
            && std::env::var_os("TERM").is_none_or(|t| t != "dumb")
        {
            let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr_with_hz(8));
            let overall = multi.add(ProgressBar::new(0));
            overall.set_style(
                ProgressStyle::with_template("{prefix:>12} [{bar:30}] {pos}/{len} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> "),
            );
            overall.set_prefix("Running");
            Mode::Bars {
                multi,
                overall,
                tasks: HashMap::new(),
            }
        } else {
            Mode::Plain
        };
        Self { mode }
    }

    pub fn run_started(&mut self, run: &str, total: usize, finished: usize) {
        match &mut self.mode {
            Mode::Quiet => {}
            Mode::Plain => line(
                Verb::Running,
                &format!(
                    "run {run}: {} ({finished} finished already)",
                    count(total, "task", "tasks")
                ),
            ),
            Mode::Bars { multi, overall, .. } => {
                overall.set_length(total as u64);
                overall.set_position(finished as u64);
                overall.set_message(format!("run {run}"));
                overall.enable_steady_tick(Duration::from_millis(250));
                let _ = multi.println(format_line(
                    Verb::Running,
                    &format!("run {run}: {}", count(total, "task", "tasks")),
                ));
            }
        }
    }

    /// How many of the run's tasks have ended; the run says, the bar shows it.
    pub fn progress(&mut self, finished: usize, total: usize) {
        if let Mode::Bars { overall, .. } = &mut self.mode {
            overall.set_length(total as u64);
            overall.set_position(finished as u64);
        }
    }

    pub fn task_started(&mut self, id: &str, attempt: u32) {
        let what = if attempt > 1 {
            format!("{id} (attempt {attempt})")
        } else {
            id.to_owned()
        };
        match &mut self.mode {
            Mode::Quiet => {}
            Mode::Plain => line(Verb::Started, &what),
            Mode::Bars { multi, tasks, .. } => {
                let bar = multi.add(ProgressBar::new_spinner());
                bar.set_style(
                    ProgressStyle::with_template("{prefix:>12} {msg} {elapsed}")
                        .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                );
                bar.set_prefix("Running");
                bar.set_message(what);
                bar.enable_steady_tick(Duration::from_millis(250));
                tasks.insert(id.to_owned(), bar);
            }
        }
    }

    /// A task's attempt ended: `verb` is `Finished`, `Failed`, `Retrying`, ….
    pub fn task_finished(&mut self, id: &str, verb: Verb, elapsed: Duration, detail: Option<&str>) {
        let text = match detail {
            Some(d) => format!("{id} in {} ({d})", duration(elapsed)),
            None => format!("{id} in {}", duration(elapsed)),
        };
        match &mut self.mode {
            Mode::Quiet => {}
            Mode::Plain => line(verb, &text),
            Mode::Bars { multi, tasks, .. } => {
                if let Some(bar) = tasks.remove(id) {
                    bar.finish_and_clear();
                    multi.remove(&bar);
                }
                let _ = multi.println(format_line(verb, &text));
            }
        }
    }

    /// A permanent line, in the style `      Merged a3`.
    pub fn note(&mut self, verb: Verb, text: &str) {
        match &mut self.mode {
            Mode::Quiet => {}
            Mode::Plain => line(verb, text),
            Mode::Bars { multi, .. } => {
                let _ = multi.println(format_line(verb, text));
            }
        }
    }

    /// Clears the bars.
    pub fn finish(&mut self) {
        if let Mode::Bars {
            multi,
            overall,
            tasks,
        } = &mut self.mode
        {
            for (_, bar) in tasks.drain() {
                bar.finish_and_clear();
            }
            overall.finish_and_clear();
            let _ = multi.clear();
        }
    }
}

fn format_line(verb: Verb, text: &str) -> String {
    format!("{:>12} {text}", verb.as_str())
}

fn line(verb: Verb, text: &str) {
    eprintln!("{}", format_line(verb, text));
}

/// `1.2s`, `3m04s`, `1h02m`.
/// `text` on one line (runs of whitespace become one space), cut to `max` characters with an
/// ellipsis.
pub fn one_line(text: &str, max: usize) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() > max {
        let kept: String = line.chars().take(max.saturating_sub(1)).collect();
        format!("{kept}…")
    } else {
        line
    }
}

pub fn duration(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s < 60.0 {
        format!("{s:.1}s")
    } else if s < 3600.0 {
        format!("{}m{:02}s", (s / 60.0) as u64, (s % 60.0) as u64)
    } else {
        format!(
            "{}h{:02}m",
            (s / 3600.0) as u64,
            ((s % 3600.0) / 60.0) as u64
        )
    }
}

/// Prints text on stdout.
/// Prints `text` on stdout, ending it with a newline. A reader that went away (`swarm logs |
/// head -1`) is an error of kind `BrokenPipe`, which `main` ends quietly.
pub fn out(text: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
    if !text.ends_with('\n') {
        stdout.write_all(b"\n")?;
    }
    stdout.flush()
}

/// Prints a permanent line on stderr, outside a run (e.g. landing notes).
pub fn say(quiet: bool, verb: Verb, text: &str) {
    if !quiet {
        line(verb, text);
    }
}

/// Prints an error: `error: <what>`, one `caused by:` line per cause, then an optional hint.
pub fn error(err: &anyhow::Error, hint: Option<&str>) {
    let shown = |e: &dyn std::fmt::Display| {
        crate::secret::redact(&without_libgit2_codes(&e.to_string())).into_owned()
    };
    let mut chain = err.chain();
    if let Some(first) = chain.next() {
        eprintln!("error: {}", shown(&first));
    }
    for cause in chain {
        eprintln!("caused by: {}", shown(&cause));
    }
    if let Some(h) = hint {
        eprintln!("hint: {h}");
    }
}

/// `n` and the noun in the number it takes: `1 task`, `2 tasks`.
pub fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `text` without the class and code libgit2 appends to its messages (`; class=Reference (4);
/// code=NotFound (-3)`), which say nothing to a user.
pub fn without_libgit2_codes(text: &str) -> String {
    static CODES: std::sync::LazyLock<Option<regex::Regex>> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"; class=[A-Za-z]+ \(-?\d+\)(?:; code=[A-Za-z]+ \(-?\d+\))?").ok()
    });
    match CODES.as_ref() {
        Some(codes) => codes.replace_all(text, "").into_owned(),
        None => text.to_owned(),
    }
}

impl Ui {
    /// Lines an attempt left (the end of a failed attempt's stderr), under the line about it,
    /// indented past the verbs' column.
    pub fn output_tail(&mut self, lines: &[String]) {
        for l in lines {
            let text = format!("{:14}{l}", "");
            match &mut self.mode {
                Mode::Quiet => {}
                Mode::Plain => eprintln!("{text}"),
                Mode::Bars { multi, .. } => {
                    let _ = multi.println(text);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn libgit2s_class_and_code_are_left_out_of_messages() {
        assert_eq!(
            super::without_libgit2_codes(
                "unknown revision \"nope\": revspec 'nope' not found; class=Reference (4); code=NotFound (-3)"
            ),
            "unknown revision \"nope\": revspec 'nope' not found"
        );
        assert_eq!(
            super::without_libgit2_codes(
                "failed to resolve path '/x': No such file or directory; class=Os (2); code=NotFound (-3): more"
            ),
            "failed to resolve path '/x': No such file or directory: more"
        );
        assert_eq!(super::without_libgit2_codes("plain; class"), "plain; class");
    }
}

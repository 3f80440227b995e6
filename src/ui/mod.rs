//! What people see: progress on stderr (a live display on a terminal, plain lines otherwise, the
//! run's events as JSON lines when asked, nothing with `-q`), the summary or JSON on stdout, and
//! errors. Decides nothing. It writes to stderr itself rather than with `eprintln!`, which
//! panics when a terminal that went away (SIGHUP) fails the write.

use std::fmt::Write as _;
use std::io::IsTerminal as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

mod echo;
mod told;
pub mod tui;

pub use told::{Ended, GoalEnd, Limit, Parked, Stop, Told};

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
    Foreseen,
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
    Wrote,
    Refused,
    Sent,
}

/// How a verb is coloured: done and merged green, parked and retrying yellow, failed red.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tone {
    Good,
    Warn,
    Bad,
    Plain,
}

impl Verb {
    fn tone(self) -> Tone {
        match self {
            Self::Finished
            | Self::Merged
            | Self::Resolved
            | Self::Done
            | Self::Planned
            | Self::Wrote => Tone::Good,
            Self::Parked
            | Self::Retrying
            | Self::Interrupted
            | Self::Limited
            | Self::Paused
            | Self::Stopping
            | Self::Stopped
            | Self::Skipped
            | Self::Skipping
            | Self::Kept
            | Self::Foreseen
            | Self::Dropped => Tone::Warn,
            Self::Failed | Self::Halted | Self::Deadlock | Self::Refused => Tone::Bad,
            _ => Tone::Plain,
        }
    }

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
            Self::Foreseen => "Foreseen",
            Self::Sent => "Sent",
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
            Self::Wrote => "Wrote",
            Self::Refused => "Refused",
        }
    }
}

/// When stderr gets colours.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Colors {
    /// On a terminal, unless `NO_COLOR` says otherwise; `CLICOLOR_FORCE` forces them.
    Auto,
    Always,
    Never,
}

/// How a run shows its progress on stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// The live display on a terminal, plain lines otherwise.
    Auto,
    Plain,
    /// One event a line, as the run's `events.jsonl` has it; nothing else.
    Json,
}

/// Decides, once and before anything is printed, whether what swarm prints on stderr is
/// coloured.
pub fn set_colors(when: Colors) {
    let on = match when {
        Colors::Always => true,
        Colors::Never => false,
        Colors::Auto => colors_by_env(
            std::env::var_os("NO_COLOR"),
            std::env::var_os("CLICOLOR_FORCE"),
            std::env::var_os("CLICOLOR"),
            stderr_is_terminal(),
        ),
    };
    console::set_colors_enabled_stderr(on);
    // The bars' own styles are applied as for stdout; swarm colours nothing on stdout.
    console::set_colors_enabled(on);
}

/// Whether the interface (`swarm tui`, on stdout) is coloured: as stderr's colours are, for a
/// terminal.
pub fn colors_on_terminal() -> bool {
    colors_by_env(
        std::env::var_os("NO_COLOR"),
        std::env::var_os("CLICOLOR_FORCE"),
        std::env::var_os("CLICOLOR"),
        true,
    )
}

/// `NO_COLOR` (non-empty) turns colours off, `CLICOLOR_FORCE` (not `0`) on, `CLICOLOR=0` off;
/// else a terminal has them (<https://no-color.org>, <https://bixense.com/clicolors>).
fn colors_by_env(
    no_color: Option<std::ffi::OsString>,
    force: Option<std::ffi::OsString>,
    clicolor: Option<std::ffi::OsString>,
    terminal: bool,
) -> bool {
    if no_color.is_some_and(|v| !v.is_empty()) {
        return false;
    }
    if force.is_some_and(|v| !v.is_empty() && v != "0") {
        return true;
    }
    if clicolor.is_some_and(|v| v == "0") {
        return false;
    }
    terminal
}

/// A terminal the live display can draw on: `TERM` names one, and it is not `dumb`.
fn stderr_is_terminal() -> bool {
    std::io::stderr().is_terminal() && !console::is_dumb()
}

/// The bars on screen now, if any: every line swarm prints on stderr goes above them, so
/// nothing else writes over them and no stale copy of them is left.
static SCREEN: Mutex<Option<MultiProgress>> = Mutex::new(None);

/// Progress is printed as events (`--progress json`): errors are too.
static EVENTS: AtomicBool = AtomicBool::new(false);

/// What the live display shows: the header's counts and one row per running attempt.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Frame {
    pub finished: usize,
    pub total: usize,
    pub running: usize,
    pub merged: usize,
    pub parked: usize,
    pub failed: usize,
    /// How long the rest of the run should take, once something has finished to go by.
    pub eta: Option<Duration>,
    pub rows: Vec<Row>,
    pub standing: Standing,
}

/// Where the run stands, as the header says it before its counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Standing {
    /// Going on, or over with every task ended: the header counts the running attempts.
    #[default]
    Running,
    /// A signal or a fault asked it to stop; the running attempts are being stopped.
    Stopping,
    /// A signal stopped it; `swarm resume` goes on.
    Interrupted,
    /// Something else stopped it early (a fault, the token budget, a moved integration branch).
    Stopped,
}

/// One running attempt.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Which task (its index): a row stays one row while its attempt runs.
    pub key: usize,
    pub id: String,
    pub title: Option<String>,
    pub lane: String,
    pub attempt: u32,
    /// A conflicting writer's resolver attempt.
    pub resolving: bool,
    pub elapsed: Duration,
}

impl Row {
    /// `t3 — Add tracing to the handlers  reader`, with `(attempt 2)` or `(resolving)` after
    /// the id.
    fn text(&self) -> String {
        let mut text = self.id.clone();
        if self.resolving {
            text.push_str(" (resolving)");
        } else if self.attempt > 1 {
            let _ = write!(text, " (attempt {})", self.attempt);
        }
        if let Some(title) = &self.title {
            let _ = write!(text, " — {}", one_line(title, 200));
        }
        let _ = write!(text, "  {}", console::style(&self.lane).dim().for_stderr());
        text
    }
}

/// Progress output of a run.
pub struct Ui {
    mode: Mode,
}

enum Mode {
    Quiet,
    Plain,
    /// `--progress json`: the board prints the events; the display prints nothing.
    Events,
    Bars(Bars),
}

struct Bars {
    multi: MultiProgress,
    header: ProgressBar,
    /// The rows on screen, in the order their attempts started.
    rows: Vec<(usize, ProgressBar)>,
}

impl Ui {
    /// `progress` as asked (`Auto`: bars when stderr is a terminal, plain lines when it is
    /// not); nothing when quiet.
    pub fn new(quiet: bool, progress: Progress) -> Self {
        let bars = progress == Progress::Auto && stderr_is_terminal();
        if quiet {
            Self { mode: Mode::Quiet }
        } else if progress == Progress::Json {
            EVENTS.store(true, Ordering::Relaxed);
            Self { mode: Mode::Events }
        } else if bars {
            echo::off();
            Self::drawing_to(ProgressDrawTarget::stderr_with_hz(8))
        } else {
            Self { mode: Mode::Plain }
        }
    }

    /// The live display, drawn to `target` (a terminal of the tests' own, for one).
    fn drawing_to(target: ProgressDrawTarget) -> Self {
        let multi = MultiProgress::with_draw_target(target);
        let header = multi.add(ProgressBar::hidden());
        header.set_style(
            ProgressStyle::with_template(
                "[{elapsed_precise}] [{bar:30.green}] {pos}/{len} {wide_msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        *SCREEN.lock().unwrap_or_else(PoisonError::into_inner) = Some(multi.clone());
        Self {
            mode: Mode::Bars(Bars {
                multi,
                header,
                rows: Vec::new(),
            }),
        }
    }

    /// Whether the display wants a `Frame` after each change (the live display does, and
    /// once a second for its clocks).
    pub fn shows_frames(&self) -> bool {
        matches!(self.mode, Mode::Bars(_))
    }

    pub fn run_started(&mut self, run: &str, total: usize, finished: usize) {
        let text = match finished {
            0 => format!("run {run}: {}", count(total, "task", "tasks")),
            n => format!(
                "run {run}: {} ({n} finished already)",
                count(total, "task", "tasks")
            ),
        };
        match &mut self.mode {
            Mode::Quiet | Mode::Events => {}
            Mode::Plain => line(Verb::Running, &text),
            Mode::Bars(bars) => {
                bars.header.set_length(total as u64);
                bars.header.set_position(finished as u64);
                bars.header.enable_steady_tick(Duration::from_millis(250));
                let _ = bars.multi.println(format_line(Verb::Running, &text));
            }
        }
    }

    /// The run as it is now: the header's counts, and one row per running attempt (rows of
    /// attempts that ended leave, whatever the reason).
    pub fn show(&mut self, frame: &Frame) {
        let Mode::Bars(bars) = &mut self.mode else {
            return;
        };
        bars.header.set_length(frame.total as u64);
        bars.header.set_position(frame.finished as u64);
        bars.header.set_message(header_text(frame));
        bars.rows.retain(|(key, bar)| {
            let keep = frame.rows.iter().any(|r| r.key == *key);
            if !keep {
                bar.finish_and_clear();
                bars.multi.remove(bar);
            }
            keep
        });
        for row in &frame.rows {
            if let Some((_, bar)) = bars.rows.iter().find(|(key, _)| *key == row.key) {
                bar.set_message(row.text());
                continue;
            }
            // Drawn nowhere until it joins the others: a bar of its own would be drawn on
            // stderr at once, outside them, and stay there.
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden())
                .with_elapsed(row.elapsed);
            bar.set_style(
                ProgressStyle::with_template("{prefix:>12.cyan.bold} {wide_msg} {elapsed:>4}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar.set_prefix("Running");
            bar.set_message(row.text());
            let bar = bars.multi.add(bar);
            bar.enable_steady_tick(Duration::from_millis(250));
            bars.rows.push((row.key, bar));
        }
    }

    /// An attempt started (a line of its own off a terminal; the live display shows it as a
    /// row from the next frame).
    pub fn task_started(&mut self, id: &str, attempt: u32) {
        if let Mode::Plain = self.mode {
            let what = if attempt > 1 {
                format!("{id} (attempt {attempt})")
            } else {
                id.to_owned()
            };
            line(Verb::Started, &what);
        }
    }

    /// A task's attempt ended: `verb` is `Finished`, `Failed`, `Retrying`, ….
    pub fn task_finished(&mut self, id: &str, verb: Verb, elapsed: Duration, detail: Option<&str>) {
        let text = match detail {
            Some(d) => format!("{id} in {} ({d})", duration(elapsed)),
            None => format!("{id} in {}", duration(elapsed)),
        };
        self.note(verb, &text);
    }

    /// A permanent line, in the style `      Merged a3`.
    pub fn note(&mut self, verb: Verb, text: &str) {
        match &mut self.mode {
            Mode::Quiet | Mode::Events => {}
            Mode::Plain => line(verb, text),
            Mode::Bars(bars) => {
                let _ = bars.multi.println(format_line(verb, text));
            }
        }
    }

    /// Lines an attempt left (the end of a failed attempt's stderr), under the line about it,
    /// indented past the verbs' column.
    pub fn output_tail(&mut self, lines: &[String]) {
        for l in lines {
            let text = format!("{:14}{l}", "");
            match &mut self.mode {
                Mode::Quiet | Mode::Events => {}
                Mode::Plain => print_line(&text),
                Mode::Bars(bars) => {
                    let _ = bars.multi.println(text);
                }
            }
        }
    }

    /// The run is over: the rows go, the header stays as the run's last word.
    pub fn finish(&mut self) {
        if let Mode::Bars(bars) = &mut self.mode {
            for (_, bar) in bars.rows.drain(..) {
                bar.finish_and_clear();
                bars.multi.remove(&bar);
            }
            bars.header.disable_steady_tick();
            bars.header.abandon();
            *SCREEN.lock().unwrap_or_else(PoisonError::into_inner) = None;
            echo::restore();
            self.mode = Mode::Plain;
        }
    }
}

impl Drop for Ui {
    /// However the run ends, by an error too, the display does not stay behind.
    fn drop(&mut self) {
        self.finish();
    }
}

/// Lets go of the bars on screen, leaving them as they are, before swarm exits at once (a
/// second Ctrl-C): the terminal is not left with the cursor in the middle of them.
pub fn leave_screen() {
    if let Ok(mut screen) = SCREEN.try_lock()
        && let Some(multi) = screen.take()
    {
        let _ = multi.clear();
    }
    echo::restore();
}

/// `· 3 running · 2 merged · 0 parked · 1 failed · ETA 1m20s`, coloured; `· stopping · 3
/// running · …` while the run stops, `· interrupted · 2 merged · …` once a signal stopped it.
fn header_text(f: &Frame) -> String {
    let paint = |n: usize, what: &str, style: console::Style| {
        let text = format!("{n} {what}");
        if n == 0 {
            text
        } else {
            style.for_stderr().apply_to(text).to_string()
        }
    };
    let warn = |word: &str| {
        console::Style::new()
            .yellow()
            .for_stderr()
            .apply_to(word)
            .to_string()
    };
    let standing = match f.standing {
        Standing::Running => format!("{} running", f.running),
        Standing::Stopping => format!("{} · {} running", warn("stopping"), f.running),
        Standing::Interrupted => warn("interrupted"),
        Standing::Stopped => warn("stopped"),
    };
    let mut text = format!(
        "· {standing} · {} · {} · {}",
        paint(f.merged, "merged", console::Style::new().green()),
        paint(f.parked, "parked", console::Style::new().yellow()),
        paint(f.failed, "failed", console::Style::new().red()),
    );
    if let Some(eta) = f
        .eta
        .filter(|_| f.finished < f.total && f.standing == Standing::Running)
    {
        let _ = write!(text, " · ETA {}", duration_short(eta));
    }
    text
}

/// `45s`, `3m04s`, `1h02m`: whole seconds, for clocks that tick.
fn duration_short(d: Duration) -> String {
    let s = d.as_secs();
    if s < 60 {
        format!("{s}s")
    } else if s < 3600 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{}h{:02}m", s / 3600, (s % 3600) / 60)
    }
}

fn format_line(verb: Verb, text: &str) -> String {
    let style = console::Style::new().bold().for_stderr();
    let style = match verb.tone() {
        Tone::Good => style.green(),
        Tone::Warn => style.yellow(),
        Tone::Bad => style.red(),
        Tone::Plain => style.cyan(),
    };
    format!(
        "{} {text}",
        style.apply_to(format!("{:>12}", verb.as_str()))
    )
}

fn line(verb: Verb, text: &str) {
    if EVENTS.load(Ordering::Relaxed) {
        let note = serde_json::json!({
            "kind": "note",
            "detail": { "verb": verb.as_str().to_lowercase(), "text": text },
        });
        print_line(&note.to_string());
    } else {
        print_line(&format_line(verb, text));
    }
}

/// A line of the run's event log, printed as it is written (`--progress json`).
pub fn event_line(line: &str) {
    print_line(line);
}

/// One line on stderr, above the bars when they are on screen.
fn print_line(text: &str) {
    use std::io::Write as _;
    let screen = SCREEN.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(multi) = screen.as_ref() {
        let _ = multi.println(text);
    } else {
        // A terminal that went away fails the write: nothing is left to tell.
        let _ = writeln!(std::io::stderr(), "{text}");
    }
}

/// `1.2s`, `3m04s`, `1h02m`.
/// `text` on one line (runs of whitespace become one space), cut to `max` characters with an
/// ellipsis.
pub fn one_line(text: &str, max: usize) -> String {
    cut(&text.split_whitespace().collect::<Vec<_>>().join(" "), max)
}

/// `s` cut to at most `max` bytes on a character boundary, and how many bytes were cut.
pub fn cap_bytes(s: &str, max: usize) -> (&str, usize) {
    if s.len() <= max {
        return (s, 0);
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    (&s[..end], s.len() - end)
}

/// `text` cut to `max` characters, its last one an ellipsis when cut.
pub fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let kept: String = text.chars().take(max.saturating_sub(1)).collect();
    format!("{kept}…")
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

/// A size in bytes as people read it: `900 bytes`, `512 KiB`, `64 MiB`, `1.5 GiB` (exact
/// multiples without a fraction).
pub fn bytes(n: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    for (size, unit) in UNITS {
        if n >= size {
            return if n.is_multiple_of(size) {
                format!("{} {unit}", n / size)
            } else {
                format!("{:.1} {unit}", n as f64 / size as f64)
            };
        }
    }
    format!("{n} bytes")
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
    let causes: Vec<String> = err.chain().map(|e| shown(&e)).collect();
    if EVENTS.load(Ordering::Relaxed) {
        let event = serde_json::json!({
            "kind": "error",
            "detail": { "message": causes.first(), "causes": &causes[1.min(causes.len())..], "hint": hint },
        });
        print_line(&event.to_string());
        return;
    }
    let red = console::Style::new().red().bold().for_stderr();
    let mut causes = causes.iter();
    if let Some(first) = causes.next() {
        print_line(&format!("{} {first}", red.apply_to("error:")));
    }
    for cause in causes {
        print_line(&format!("caused by: {cause}"));
    }
    if let Some(h) = hint {
        let bold = console::Style::new().bold().for_stderr();
        print_line(&format!("{} {h}", bold.apply_to("hint:")));
    }
}

/// `n` and the noun in the number it takes: `1 task`, `2 tasks`.
pub fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The share of `prompt` tokens the provider had cached, in whole percent rounded down
/// (`90 %`; `100 %` only when every one was); `None` when no prompt token is known.
pub fn cached_share(cached: u64, prompt: u64) -> Option<String> {
    (prompt > 0).then(|| {
        let percent = u128::from(cached.min(prompt)) * 100 / u128::from(prompt);
        format!("{percent} %")
    })
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

#[cfg(test)]
mod tests {
    use std::ffi::OsString;
    use std::time::Duration;

    #[test]
    fn no_color_wins_then_clicolor_force_then_the_terminal() {
        let on = |v: &str| Some(OsString::from(v));
        assert!(super::colors_by_env(None, None, None, true));
        assert!(!super::colors_by_env(None, None, None, false));
        assert!(!super::colors_by_env(on("1"), on("1"), None, true));
        // An empty NO_COLOR is as if unset.
        assert!(super::colors_by_env(on(""), None, None, true));
        assert!(super::colors_by_env(None, on("1"), None, false));
        assert!(!super::colors_by_env(None, on("0"), None, false));
        assert!(!super::colors_by_env(None, None, on("0"), true));
    }

    #[test]
    fn the_cached_share_is_rounded_down_and_unknown_without_prompt_tokens() {
        assert_eq!(super::cached_share(900, 1000).as_deref(), Some("90 %"));
        assert_eq!(super::cached_share(999, 1000).as_deref(), Some("99 %"));
        assert_eq!(super::cached_share(1000, 1000).as_deref(), Some("100 %"));
        assert_eq!(super::cached_share(0, 1000).as_deref(), Some("0 %"));
        assert_eq!(super::cached_share(0, 0), None);
        // A provider that says more were cached than sent does not make it more than all.
        assert_eq!(super::cached_share(12, 10).as_deref(), Some("100 %"));
    }

    #[test]
    fn the_header_counts_and_gives_the_eta_only_while_work_is_left() {
        let mut frame = super::Frame {
            finished: 7,
            total: 20,
            running: 3,
            merged: 2,
            parked: 1,
            failed: 0,
            eta: Some(Duration::from_secs(125)),
            rows: Vec::new(),
            standing: super::Standing::Running,
        };
        assert_eq!(
            super::header_text(&frame),
            "· 3 running · 2 merged · 1 parked · 0 failed · ETA 2m05s"
        );
        frame.finished = 20;
        assert_eq!(
            super::header_text(&frame),
            "· 3 running · 2 merged · 1 parked · 0 failed"
        );
    }

    #[test]
    fn the_header_says_when_the_run_stops_and_how_it_stopped() {
        let mut frame = super::Frame {
            finished: 7,
            total: 20,
            running: 3,
            merged: 2,
            eta: Some(Duration::from_secs(125)),
            standing: super::Standing::Stopping,
            ..super::Frame::default()
        };
        assert_eq!(
            super::header_text(&frame),
            "· stopping · 3 running · 2 merged · 0 parked · 0 failed"
        );
        frame.running = 0;
        frame.standing = super::Standing::Interrupted;
        assert_eq!(
            super::header_text(&frame),
            "· interrupted · 2 merged · 0 parked · 0 failed"
        );
        frame.standing = super::Standing::Stopped;
        assert_eq!(
            super::header_text(&frame),
            "· stopped · 2 merged · 0 parked · 0 failed"
        );
    }

    #[test]
    fn a_row_names_the_task_its_title_and_lane() {
        let mut row = super::Row {
            key: 0,
            id: "t3".into(),
            title: Some("Add   tracing\nto handlers".into()),
            lane: "worker".into(),
            attempt: 1,
            resolving: false,
            elapsed: Duration::ZERO,
        };
        assert_eq!(row.text(), "t3 — Add tracing to handlers  worker");
        row.attempt = 2;
        row.title = None;
        assert_eq!(row.text(), "t3 (attempt 2)  worker");
        row.resolving = true;
        assert_eq!(row.text(), "t3 (resolving)  worker");
    }

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

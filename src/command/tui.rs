//! `swarm tui`, and `swarm` with no arguments at a terminal: the interactive interface. The
//! repository's runs, the selected run's goals and tasks as a tree by their dependencies, the
//! selected task's facts and transcript (following as it grows), and a composer: a plain
//! message is a goal, planned, shown and asked about as `--goal` asks (`[Y/n/e]`), then run;
//! `/goal`, `/run`, `/stop`, `/resume`, `/retry`, `/steer`, `/help`, `/quit` are commands.
//!
//! The interface runs nothing itself: each run it starts is a `swarm` of its own, in the
//! background (its output in `.git/swarm/tui/`), so that it goes on when the interface is left,
//! and a run started elsewhere is shown the same way. It reads the board, as `swarm status`
//! does; `/stop` signals the process that holds the run, as Ctrl-C in its terminal would.

use std::io::{Read as _, Seek as _, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::context::{Globals, open_board, open_repo};
use super::inspect::{RunState, counts_line, lock_holder, run_duration, task_elapsed_ms};
use crate::error::{Usage, exit};
use crate::git::Repo;
use crate::plan::Plan;
use crate::store::{
    Board, GoalRecord, Logged, RunEvent, RunListing, TaskRecord, TaskStatus, now_ms,
};
use crate::ui;
use crate::ui::tui::{Focus, Key, Row, Screen, Tone, View};

/// How often the screen is made again from the board while no key comes.
const TICK: Duration = Duration::from_millis(250);
/// Of a transcript, the end read for the detail pane.
const TRANSCRIPT_TAIL: u64 = 32 * 1024;
/// Messages the composer remembers.
const HISTORY: usize = 100;

/// A `swarm` the interface started, in the background.
struct Started {
    what: String,
    child: Child,
    log: PathBuf,
}

/// A goal being planned (`--plan-only --json`) before it is asked about, its plan printed
/// into `file`.
struct Planning {
    goal: String,
    file: PathBuf,
    started: Started,
}

/// A goal's plan, shown and waiting for the user's answer.
struct Asking {
    goal: String,
    file: PathBuf,
    plan: Plan,
}

/// What a key or a message does to the interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    Stay,
    Quit,
}

/// A row of the tree: a goal of the run, or a task (by index in the run's tasks) with the
/// branches it hangs from.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Node {
    Goal(usize),
    Task(usize, String),
}

struct App {
    dir: PathBuf,
    /// `--config FILE`, passed on to every swarm started here.
    config: Option<PathBuf>,
    /// What the configuration lets tasks add, for the plans' questions as `--goal` asks them.
    limits: crate::config::SpawnLimits,
    repo: Repo,
    board: Board,
    /// Where the output of the runs started here goes.
    logs: PathBuf,
    runs: Vec<RunListing>,
    holder: Option<String>,
    /// The selected run, by id: it stays selected when newer runs come.
    run: Option<String>,
    goals: Vec<GoalRecord>,
    tasks: Vec<TaskRecord>,
    /// The selected run's plan, as its tasks on the board hold it (their order).
    plan: Option<Plan>,
    tree: Vec<Node>,
    row: usize,
    focus: Focus,
    composer: Vec<String>,
    cursor: (usize, usize),
    history: Vec<String>,
    /// The message of the history shown in the composer (Up, Down).
    recalling: Option<usize>,
    said: String,
    help: bool,
    scroll: usize,
    started: Vec<Started>,
    planning: Option<Planning>,
    asking: Option<Asking>,
    /// When a run was last started here: the first run begun since is selected once it shows.
    select_after: Option<i64>,
    colors: bool,
    width: usize,
    /// The selected run's gate runs, from its event log read so far (`log_run`, `log_read`).
    gate: Vec<Logged>,
    log_run: Option<String>,
    log_read: u64,
}

/// `swarm tui`: the interface, until `/quit`; `config` is `--config FILE`.
pub(super) fn tui(g: &Globals, config: Option<&Path>) -> anyhow::Result<u8> {
    use std::io::IsTerminal as _;
    if !(std::io::stdin().is_terminal() && std::io::stdout().is_terminal()) {
        return Err(
            Usage::new("the interface needs a terminal (its stdin and stdout)")
                .hint("`swarm runs`, `swarm status` and `swarm web` show runs off a terminal")
                .into(),
        );
    }
    let repo = open_repo(g)?;
    let board = open_board(&repo)?;
    let configured = super::settings::configure(g, &crate::config::Options::default(), config)?;
    let logs = repo.common_dir().join("swarm").join("tui");
    std::fs::create_dir_all(&logs)?;
    let mut app = App {
        dir: g.dir.clone(),
        config: config.map(Path::to_path_buf),
        limits: crate::config::SpawnLimits::of(&configured.options),
        board,
        logs,
        runs: Vec::new(),
        holder: None,
        run: None,
        goals: Vec::new(),
        tasks: Vec::new(),
        plan: None,
        tree: Vec::new(),
        row: 0,
        focus: Focus::Composer,
        composer: vec![String::new()],
        cursor: (0, 0),
        history: Vec::new(),
        recalling: None,
        said: "Type a goal and press Enter, or /help.".to_owned(),
        help: false,
        scroll: 0,
        started: Vec::new(),
        planning: None,
        asking: None,
        select_after: None,
        colors: ui::colors_on_terminal(),
        width: 80,
        gate: Vec::new(),
        log_run: None,
        log_read: 0,
        repo,
    };
    let mut screen = Screen::open()?;
    loop {
        app.width = screen.width();
        app.reap()?;
        app.refresh()?;
        screen.draw(&app.view())?;
        if let Some(key) = ui::tui::next_key(TICK)?
            && app.key(key, &mut screen)? == Flow::Quit
        {
            break;
        }
    }
    drop(screen);
    let mut going: Vec<String> = Vec::new();
    for s in &mut app.started {
        if s.child.try_wait().ok().flatten().is_none() {
            going.push(s.what.clone());
        }
    }
    if !going.is_empty() {
        ui::say(
            g.quiet,
            ui::Verb::Note,
            &format!(
                "left running in the background: {} (`swarm status` shows where it stands)",
                going.join(", ")
            ),
        );
    }
    Ok(exit::OK)
}

impl App {
    fn selected_run(&self) -> Option<&RunListing> {
        let id = self.run.as_deref()?;
        self.runs.iter().find(|r| r.id == id)
    }

    /// Reads the board again: the runs, and the selected run's goals and tasks.
    fn refresh(&mut self) -> anyhow::Result<()> {
        self.runs = self.board.history().runs()?;
        self.holder = lock_holder(&self.repo);
        if let Some(after) = self.select_after
            && let Some(new) = self.runs.iter().rev().find(|r| r.created_at >= after)
        {
            self.run = Some(new.id.clone());
            self.select_after = None;
            self.row = 0;
        }
        if self.selected_run().is_none() {
            self.run = self.runs.first().map(|r| r.id.clone());
        }
        let Some(run) = self.run.clone() else {
            return Ok(());
        };
        self.goals = self.board.goals().load(&run)?;
        self.tasks = self.board.load_tasks(&run)?;
        self.plan = super::stored::stored_plan(&self.tasks).ok();
        self.tree = tree(&self.goals, &self.tasks, self.plan.as_ref());
        self.row = self.row.min(self.tree.len().saturating_sub(1));
        self.read_gate(&run);
        Ok(())
    }

    /// Reads what run `run`'s event log gained since the last look (all of it for a run newly
    /// selected), keeping its gate's events. A log that cannot be read shows no gate.
    fn read_gate(&mut self, run: &str) {
        if self.log_run.as_deref() != Some(run) {
            self.log_run = Some(run.to_owned());
            self.log_read = 0;
            self.gate.clear();
        }
        let Ok(mut file) = std::fs::File::open(self.board.events_path(run)) else {
            return;
        };
        let mut bytes = Vec::new();
        if file.seek(SeekFrom::Start(self.log_read)).is_err()
            || file.read_to_end(&mut bytes).is_err()
        {
            return;
        }
        // Whole lines only: a line being written is read at the next look.
        let Some(end) = bytes.iter().rposition(|b| *b == b'\n') else {
            return;
        };
        self.log_read += end as u64 + 1;
        for line in bytes[..end].split(|b| *b == b'\n') {
            if let Ok(e) = serde_json::from_slice::<Logged>(line)
                && matches!(
                    e.event,
                    RunEvent::GateStarted { .. } | RunEvent::GateFinished { .. }
                )
            {
                self.gate.push(e);
            }
        }
    }

    /// The merge queue (writers committed, waiting to be merged) and the gate's last run.
    fn merges(&self) -> Vec<Row> {
        let mut rows = Vec::new();
        let queued: Vec<&str> = self
            .tasks
            .iter()
            .filter(|t| t.status == TaskStatus::Committed)
            .map(|t| t.id.as_str())
            .collect();
        if !queued.is_empty() {
            rows.push(Row {
                text: format!("merge queue: {}", queued.join(", ")),
                tone: Tone::Busy,
            });
        }
        let (runs, _) = super::facts::gate_runs(&self.gate);
        if let Some(g) = runs.last() {
            let tone = match g.verdict.as_str() {
                "green" => Tone::Good,
                "red" => Tone::Bad,
                "running" => Tone::Busy,
                _ => Tone::Warn,
            };
            rows.push(Row {
                text: format!(
                    "gate run {} {} on {} ({}: {})",
                    g.run,
                    g.verdict,
                    &g.tip[..g.tip.len().min(10)],
                    g.probe,
                    g.batch.join(", ")
                ),
                tone,
            });
        }
        rows
    }

    /// What became of the runs started here that ended since the last look.
    fn reap(&mut self) -> anyhow::Result<()> {
        let mut said = Vec::new();
        self.started.retain_mut(|s| match s.child.try_wait() {
            Ok(Some(status)) => {
                said.push(match status.code() {
                    Some(0) => format!("The {} finished (exit 0)", s.what),
                    code => format!(
                        "The {} ended ({}): {}",
                        s.what,
                        code.map_or("by a signal".to_owned(), |c| format!("exit {c}")),
                        last_line(&s.log)
                    ),
                });
                false
            }
            _ => true,
        });
        if let Some(last) = said.pop() {
            self.said = last;
        }
        let ended = match &mut self.planning {
            Some(p) => p.started.child.try_wait()?,
            None => None,
        };
        if let Some(status) = ended
            && let Some(p) = self.planning.take()
        {
            if !status.success() {
                self.said = format!("planning failed: {}", last_line(&p.started.log));
                return Ok(());
            }
            match Plan::load(&p.file) {
                Ok(plan) => self.ask(p.goal, p.file, plan),
                Err(e) => self.said = format!("the plan could not be read: {e:#}"),
            }
        }
        Ok(())
    }

    fn say(&mut self, text: &str) {
        text.clone_into(&mut self.said);
    }

    fn ask(&mut self, goal: String, file: PathBuf, plan: Plan) {
        let ceiling = crate::schedule::Ceiling::of(&plan, &self.limits);
        self.said = crate::preview::question(&plan, &ceiling);
        self.focus = Focus::Composer;
        self.asking = Some(Asking { goal, file, plan });
    }

    fn view(&self) -> View {
        let now = now_ms();
        let runs = self
            .runs
            .iter()
            .map(|r| {
                let state = RunState::of(&r.id, r.status, self.holder.as_deref());
                run_row(r, state)
            })
            .collect();
        let run = self
            .run
            .as_deref()
            .and_then(|id| self.runs.iter().position(|r| r.id == id))
            .unwrap_or(0);
        let (header, alive) = match self.selected_run() {
            Some(r) => {
                let state = RunState::of(&r.id, r.status, self.holder.as_deref());
                let took = run_duration(
                    &self.board,
                    &r.id,
                    state,
                    (r.created_at, r.last_event_at),
                    now,
                )
                .unwrap_or_default();
                let alive = state == RunState::Running;
                let eta = if alive { self.eta(&r.id, now) } else { None };
                (
                    format!(
                        "run {} {} {}{}",
                        r.id,
                        state.as_str(),
                        ui::duration(took),
                        eta.map(|e| format!(", ETA {}", ui::duration(e)))
                            .unwrap_or_default()
                    ),
                    alive,
                )
            }
            None => ("no runs yet".to_owned(), false),
        };
        let tasks = self
            .tree
            .iter()
            .map(|n| match n {
                Node::Goal(i) => {
                    let g = &self.goals[*i];
                    Row {
                        text: format!(
                            "goal {} {}: {}",
                            g.id,
                            g.status.as_str(),
                            ui::one_line(&g.text, 60)
                        ),
                        tone: Tone::Plain,
                    }
                }
                Node::Task(i, branch) => task_row(&self.tasks[*i], branch, alive, now),
            })
            .collect();
        let (detail_title, detail) = match &self.asking {
            Some(a) => {
                let ceiling = crate::schedule::Ceiling::of(&a.plan, &self.limits);
                let text = format!(
                    "{}\n{}",
                    crate::preview::tree(&a.plan, Some(self.width.saturating_sub(4)), &ceiling),
                    crate::preview::counts(&a.plan, &ceiling)
                );
                (
                    format!("plan of: {}", ui::one_line(&a.goal, 60)),
                    text.lines().map(str::to_owned).collect(),
                )
            }
            None => self.detail(alive, now),
        };
        View {
            title: self.repo.workdir().file_name().map_or_else(
                || "repository".to_owned(),
                |n| n.to_string_lossy().into_owned(),
            ),
            runs,
            run,
            header,
            tasks,
            task: self.row,
            counts: counts_line(&self.tasks),
            merges: self.merges(),
            detail_title,
            detail,
            scroll: self.scroll,
            focus: self.focus,
            composer: self.composer.clone(),
            cursor: self.cursor,
            said: self.said.clone(),
            help: self.help,
            colors: self.colors,
        }
    }

    /// How long the running run `run` has left, as the live display and the live page
    /// estimate it: from the times of its tasks done and the slots it runs with.
    fn eta(&self, run: &str, now: i64) -> Option<Duration> {
        let record = self.board.load_run(run).ok()??;
        let jobs = record.options["jobs"].as_u64().unwrap_or(4);
        crate::schedule::eta::from_records(
            self.plan.as_ref()?,
            &self.tasks,
            usize::try_from(jobs).unwrap_or(1),
            now,
        )
    }

    /// The selected task's facts and its transcript's end; or the goal's.
    fn detail(&self, alive: bool, now: i64) -> (String, Vec<String>) {
        match self.tree.get(self.row) {
            Some(Node::Goal(i)) => {
                let g = &self.goals[*i];
                let mut lines = vec![format!("goal {}: {}", g.id, g.status.as_str())];
                lines.extend(g.text.lines().map(str::to_owned));
                if let Some(r) = &g.reason {
                    lines.push(format!("why: {r}"));
                }
                (format!("goal {}", g.id), lines)
            }
            Some(Node::Task(i, _)) => {
                let t = &self.tasks[*i];
                let mut lines = vec![format!(
                    "{}  attempt {}  {}",
                    t.status.as_str(),
                    t.attempts,
                    ui::duration(Duration::from_millis(
                        u64::try_from(task_elapsed_ms(t, alive, now)).unwrap_or(0)
                    ))
                )];
                if let Some(task) = self.plan.as_ref().and_then(|p| p.tasks.get(*i)) {
                    lines.push(format!(
                        "lane {}, {}",
                        task.lane.as_str(),
                        task.mode.as_str()
                    ));
                }
                if let Some(b) = &t.branch {
                    lines.push(format!("branch {b}"));
                }
                if let Some(e) = &t.error {
                    lines.push(format!("why: {e}"));
                }
                if let Some(r) = &t.result {
                    lines.push("result:".to_owned());
                    lines.extend(r.lines().take(20).map(|l| format!("  {l}")));
                }
                if let Some(path) = &t.transcript {
                    let name = Path::new(path)
                        .file_name()
                        .map_or_else(|| path.clone(), |n| n.to_string_lossy().into_owned());
                    lines.push(format!("── transcript {name} (`swarm show {}`)", t.id));
                    lines.extend(tail(Path::new(path)));
                }
                (format!("task {}", t.id), lines)
            }
            None => ("nothing selected".to_owned(), Vec::new()),
        }
    }

    fn key(&mut self, key: Key, screen: &mut Screen) -> anyhow::Result<Flow> {
        if self.help {
            if matches!(key, Key::Esc | Key::Char('?' | 'q') | Key::Enter) {
                self.help = false;
            }
            return Ok(Flow::Stay);
        }
        if self.asking.is_some() && self.composer_empty() {
            match key {
                Key::Enter | Key::Char('y' | 'Y') => return self.consent(Answer::Run, screen),
                Key::Char('n' | 'N') | Key::Esc => return self.consent(Answer::Decline, screen),
                Key::Char('e' | 'E') => return self.consent(Answer::Edit, screen),
                _ => {}
            }
        }
        match key {
            Key::Tab => self.focus = next_focus(self.focus, true),
            Key::BackTab => self.focus = next_focus(self.focus, false),
            Key::Interrupt if !self.composer_empty() => self.clear_composer(),
            Key::Interrupt | Key::EndOfInput => return Ok(Flow::Quit),
            Key::Resized => {}
            _ if self.focus == Focus::Composer => return self.compose(key),
            Key::Char('q') => return Ok(Flow::Quit),
            Key::Char('?') => self.help = true,
            Key::Esc => self.focus = Focus::Composer,
            Key::Char(c) if self.focus != Focus::Composer && !c.is_control() => {
                // Typing starts a message, wherever the keys were.
                self.focus = Focus::Composer;
                return self.compose(key);
            }
            _ => self.navigate(key),
        }
        Ok(Flow::Stay)
    }

    /// Up and down in the runs, the tree or the detail.
    fn navigate(&mut self, key: Key) {
        let step: isize = match key {
            Key::Up | Key::Char('k') => -1,
            Key::Down | Key::Char('j') => 1,
            Key::PageUp => -10,
            Key::PageDown => 10,
            Key::Home => isize::MIN / 2,
            Key::End => isize::MAX / 2,
            Key::Enter => {
                self.focus = next_focus(self.focus, true);
                return;
            }
            _ => return,
        };
        match self.focus {
            Focus::Runs => {
                let at = self
                    .run
                    .as_deref()
                    .and_then(|id| self.runs.iter().position(|r| r.id == id))
                    .unwrap_or(0);
                let to = moved(at, step, self.runs.len());
                if to != at {
                    self.run = self.runs.get(to).map(|r| r.id.clone());
                    self.row = 0;
                    self.scroll = 0;
                }
            }
            Focus::Tasks => {
                self.row = moved(self.row, step, self.tree.len());
                self.scroll = 0;
            }
            Focus::Detail => {
                // Up scrolls back; End (or scrolling down past the end) follows again.
                self.scroll = if key == Key::End {
                    0
                } else {
                    usize::try_from(self.scroll as isize - step).unwrap_or(0)
                };
            }
            Focus::Composer => {}
        }
    }

    fn composer_empty(&self) -> bool {
        self.composer.iter().all(String::is_empty)
    }

    fn clear_composer(&mut self) {
        self.composer = vec![String::new()];
        self.cursor = (0, 0);
        self.recalling = None;
    }

    /// A key in the composer.
    fn compose(&mut self, key: Key) -> anyhow::Result<Flow> {
        let (row, col) = self.cursor;
        let line = &mut self.composer[row];
        let at = byte_at(line, col);
        match key {
            Key::Char(c) => {
                line.insert(at, c);
                self.cursor.1 += 1;
            }
            Key::NewLine => {
                let rest = line.split_off(at);
                self.composer.insert(row + 1, rest);
                self.cursor = (row + 1, 0);
            }
            Key::Backspace if col > 0 => {
                let before = byte_at(line, col - 1);
                line.replace_range(before..at, "");
                self.cursor.1 -= 1;
            }
            Key::Backspace if row > 0 => {
                let line = self.composer.remove(row);
                let above = &mut self.composer[row - 1];
                let col = above.chars().count();
                above.push_str(&line);
                self.cursor = (row - 1, col);
            }
            Key::Delete if at < line.len() => {
                let after = byte_at(line, col + 1);
                line.replace_range(at..after, "");
            }
            Key::Left if col > 0 => self.cursor.1 -= 1,
            Key::Right if col < line.chars().count() => self.cursor.1 += 1,
            Key::Home => self.cursor.1 = 0,
            Key::End => self.cursor.1 = line.chars().count(),
            Key::Up if row > 0 => {
                self.cursor = (row - 1, col.min(self.composer[row - 1].chars().count()));
            }
            Key::Down if row + 1 < self.composer.len() => {
                self.cursor = (row + 1, col.min(self.composer[row + 1].chars().count()));
            }
            Key::Up | Key::Down => self.recall_history(key == Key::Up),
            Key::Esc => self.focus = Focus::Tasks,
            Key::Enter => {
                let text = self.composer.join("\n").trim().to_owned();
                if text.is_empty() {
                    return Ok(Flow::Stay);
                }
                self.clear_composer();
                self.history.retain(|h| *h != text);
                self.history.push(text.clone());
                if self.history.len() > HISTORY {
                    self.history.remove(0);
                }
                return self.submit(&text);
            }
            _ => {}
        }
        Ok(Flow::Stay)
    }

    /// The message sent before (`back`) or after the one in the composer.
    fn recall_history(&mut self, back: bool) {
        let n = self.history.len();
        let to = match (self.recalling, back) {
            (None, true) if n > 0 => Some(n - 1),
            (Some(i), true) => Some(i.saturating_sub(1)),
            (Some(i), false) if i + 1 < n => Some(i + 1),
            (Some(_), false) => None,
            _ => return,
        };
        self.recalling = to;
        let text = to.map(|i| self.history[i].clone()).unwrap_or_default();
        self.composer = text.split('\n').map(str::to_owned).collect();
        let last = self.composer.len() - 1;
        self.cursor = (last, self.composer[last].chars().count());
    }

    /// A message sent: a command, or a goal.
    fn submit(&mut self, text: &str) -> anyhow::Result<Flow> {
        let Some(command) = text.strip_prefix('/') else {
            self.plan_goal(text)?;
            return Ok(Flow::Stay);
        };
        let (name, rest) = command
            .split_once(char::is_whitespace)
            .map_or((command, ""), |(n, r)| (n, r.trim()));
        let run = self.run.clone();
        match (name, rest) {
            ("help", _) => self.help = true,
            ("quit" | "q", "") => return Ok(Flow::Quit),
            ("quit" | "q", "stop") => {
                self.stop_started();
                return Ok(Flow::Quit);
            }
            ("goal", "") => self.say("/goal TEXT queues the goal TEXT"),
            ("goal", goal) => {
                let out = self.swarm(&["queue", "add", goal]).output()?;
                self.said = first_line(&out.stdout, &out.stderr);
            }
            ("run", "") => self.start("the queue's run", &["queue", "run"])?,
            ("stop", "") => self.stop(run.as_deref()),
            ("resume", "") => match run {
                Some(run) => self.start(&format!("resume of {run}"), &["resume", &run])?,
                None => self.say("there is no run to resume"),
            },
            ("retry", task) if !task.is_empty() => match run {
                Some(run) => {
                    self.start(&format!("retry of {task}"), &["retry", task, "--run", &run])?;
                }
                None => self.say("there is no run to retry a task of"),
            },
            ("retry", _) => self.say("/retry TASK retries a writer of the selected run"),
            ("steer", rest) => match (run, rest.split_once(char::is_whitespace)) {
                (Some(run), Some((task, message))) => {
                    let out = self
                        .swarm(&["steer", task, message.trim(), "--run", &run])
                        .output()?;
                    self.said = first_line(&out.stdout, &out.stderr);
                }
                (None, _) => self.say("there is no run to steer a task of"),
                (Some(_), None) => {
                    self.say("/steer TASK TEXT sends TEXT to a running task of the selected run");
                }
            },
            _ => self.said = format!("/{name} is no command here: /help lists them"),
        }
        Ok(Flow::Stay)
    }

    /// Plans `goal` (`--plan-only`), to ask about its plan once it is made.
    fn plan_goal(&mut self, goal: &str) -> anyhow::Result<()> {
        if self.planning.is_some() || self.asking.is_some() {
            self.say("a goal is being planned already: answer its question first");
            return Ok(());
        }
        // The plan as JSONL on stdout, a task file for `--plan`.
        let file = self.logs.join(format!("plan-{}.jsonl", now_ms()));
        let started = self.spawn(
            &format!("planning of {}", ui::one_line(goal, 40)),
            &["--json", "--goal", goal, "--plan-only"],
            Some(&file),
        )?;
        self.said = format!("Planning: {}", ui::one_line(goal, 80));
        self.planning = Some(Planning {
            goal: goal.to_owned(),
            file,
            started,
        });
        Ok(())
    }

    fn consent(&mut self, answer: Answer, screen: &mut Screen) -> anyhow::Result<Flow> {
        let Some(asking) = self.asking.take() else {
            return Ok(Flow::Stay);
        };
        match answer {
            Answer::Run => {
                let file = asking.file.display().to_string();
                self.start(
                    &format!("run of {}", ui::one_line(&asking.goal, 40)),
                    &["--goal", &asking.goal, "--plan", &file],
                )?;
                self.focus = Focus::Tasks;
            }
            Answer::Decline => {
                self.said = format!(
                    "Nothing run; the plan is kept in {} (`swarm --goal … --plan FILE` runs it)",
                    asking.file.display()
                );
            }
            Answer::Edit => {
                let edited = screen.suspend(|| crate::preview::in_editor(&asking.file))??;
                match Plan::load(&asking.file) {
                    Ok(plan) if edited => self.ask(asking.goal, asking.file, plan),
                    Ok(_) => {
                        self.say("the editor failed; the plan is as it was");
                        self.asking = Some(asking);
                    }
                    Err(e) => {
                        self.said = format!(
                            "{}: e edits it again, n runs nothing",
                            ui::one_line(&format!("{e:#}"), 200)
                        );
                        self.asking = Some(asking);
                    }
                }
            }
        }
        Ok(Flow::Stay)
    }

    /// Stops run `run` as Ctrl-C in its terminal would: SIGINT to the process holding it.
    fn stop(&mut self, run: Option<&str>) {
        let Some(run) = run else {
            self.say("there is no run to stop");
            return;
        };
        let pid = self
            .holder
            .as_deref()
            .filter(|h| h.ends_with(&format!("run {run}")))
            .and_then(holder_pid);
        self.said = match pid {
            Some(pid) => {
                match nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGINT,
                ) {
                    Ok(()) => format!("Stopping run {run} (as Ctrl-C does); /resume continues it"),
                    Err(e) => format!("run {run} could not be stopped: {e}"),
                }
            }
            None => format!("run {run} is not running"),
        };
    }

    /// `/quit stop`: the runs started here that still go are stopped, and waited for.
    fn stop_started(&mut self) {
        for s in &mut self.started {
            if s.child.try_wait().ok().flatten().is_none() {
                let pid = nix::unistd::Pid::from_raw(i32::try_from(s.child.id()).unwrap_or(0));
                let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT);
                let _ = s.child.wait();
            }
        }
        self.started.clear();
    }

    /// swarm itself, in the directory the interface started in, with its configuration file,
    /// its output plain.
    fn swarm(&self, args: &[&str]) -> Command {
        let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("swarm"));
        let mut cmd = Command::new(exe);
        cmd.current_dir(&self.dir)
            .args(["--progress", "plain", "--color", "never"]);
        if let Some(config) = &self.config {
            cmd.arg("--config").arg(config);
        }
        cmd.args(args).stdin(Stdio::null());
        cmd
    }

    /// Starts swarm with `args` in the background, in a process group of its own (so that it
    /// goes on when the interface and its terminal go), what it prints in a log (its stdout in
    /// `stdout` when given).
    fn spawn(
        &mut self,
        what: &str,
        args: &[&str],
        stdout: Option<&Path>,
    ) -> anyhow::Result<Started> {
        use std::os::unix::process::CommandExt as _;
        let log = self.logs.join(format!("{}.log", now_ms()));
        let err = std::fs::File::create(&log)?;
        let out = match stdout {
            Some(file) => std::fs::File::create(file)?,
            None => err.try_clone()?,
        };
        let child = self
            .swarm(args)
            .stdout(out)
            .stderr(err)
            .process_group(0)
            .spawn()?;
        Ok(Started {
            what: what.to_owned(),
            child,
            log,
        })
    }

    /// Starts a run in the background and selects it once it shows up.
    fn start(&mut self, what: &str, args: &[&str]) -> anyhow::Result<()> {
        let after = now_ms();
        let started = self.spawn(what, args, None)?;
        self.said = format!("Started the {what}");
        self.select_after = Some(after);
        self.started.push(started);
        Ok(())
    }
}

/// The user's answer to a plan's question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answer {
    Run,
    Decline,
    Edit,
}

fn next_focus(focus: Focus, forward: bool) -> Focus {
    let order = [Focus::Runs, Focus::Tasks, Focus::Detail, Focus::Composer];
    let at = order.iter().position(|f| *f == focus).unwrap_or(0);
    let n = order.len();
    order[if forward {
        (at + 1) % n
    } else {
        (at + n - 1) % n
    }]
}

/// `at` moved by `step` within `len` rows.
fn moved(at: usize, step: isize, len: usize) -> usize {
    if len == 0 {
        return 0;
    }
    usize::try_from(
        (at as isize)
            .saturating_add(step)
            .clamp(0, len as isize - 1),
    )
    .unwrap_or(0)
}

/// The byte at character `col` of `line` (its end past it).
fn byte_at(line: &str, col: usize) -> usize {
    line.char_indices().nth(col).map_or(line.len(), |(i, _)| i)
}

/// The pid in a lock's holder line (`pid 12, run …`).
fn holder_pid(holder: &str) -> Option<i32> {
    holder
        .strip_prefix("pid ")?
        .split(',')
        .next()?
        .trim()
        .parse()
        .ok()
}

/// The last line of a log that says something.
fn last_line(log: &Path) -> String {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map_or_else(|| "it said nothing".to_owned(), |l| ui::one_line(l, 200))
}

/// What a command said: its first line on stderr (swarm's own words, an error's or a note's),
/// else on stdout.
fn first_line(stdout: &[u8], stderr: &[u8]) -> String {
    let said = |bytes: &[u8]| {
        String::from_utf8_lossy(bytes)
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .map(|l| ui::one_line(l, 200))
    };
    said(stderr)
        .or_else(|| said(stdout))
        .unwrap_or_else(|| "done".to_owned())
}

/// The end of a transcript, a line a row, control characters left out.
fn tail(path: &Path) -> Vec<String> {
    let Ok(mut file) = std::fs::File::open(path) else {
        return vec!["(nothing in it yet)".to_owned()];
    };
    let len = file.metadata().map_or(0, |m| m.len());
    let from = len.saturating_sub(TRANSCRIPT_TAIL);
    let mut bytes = Vec::new();
    if file.seek(SeekFrom::Start(from)).is_err() || file.read_to_end(&mut bytes).is_err() {
        return Vec::new();
    }
    let text = String::from_utf8_lossy(&bytes);
    let mut lines: Vec<String> = text
        .lines()
        .map(|l| {
            l.chars()
                .filter(|c| !c.is_control() || *c == '\t')
                .collect::<String>()
                .replace('\t', "    ")
        })
        .collect();
    if from > 0 && !lines.is_empty() {
        // The first line read may be the end of one cut in two.
        lines.remove(0);
    }
    lines
}

/// A run as the runs pane lists it: a mark for where it stands, when it started, what it runs.
fn run_row(r: &RunListing, state: RunState) -> Row {
    let (mark, tone) = match state {
        RunState::Running => ("▶", Tone::Busy),
        RunState::Finished if r.exit_code == Some(0) => ("✓", Tone::Good),
        RunState::Finished => ("✗", Tone::Bad),
        RunState::Interrupted | RunState::Stopped => ("■", Tone::Warn),
    };
    let when = jiff::Timestamp::from_millisecond(r.created_at)
        .map(|t| t.strftime("%m-%d %H:%M").to_string())
        .unwrap_or_default();
    Row {
        text: format!("{mark} {when} {}", ui::one_line(&r.source, 80)),
        tone,
    }
}

/// A task as the tree shows it: its status (the live display's word), its id under the
/// branches it hangs from, its attempts and its time.
fn task_row(t: &TaskRecord, branch: &str, alive: bool, now: i64) -> Row {
    let tone = match t.status {
        TaskStatus::Done => Tone::Good,
        TaskStatus::Failed => Tone::Bad,
        TaskStatus::Parked | TaskStatus::Skipped => Tone::Warn,
        TaskStatus::Running => Tone::Busy,
        _ => Tone::Plain,
    };
    let attempts = if t.attempts > 1 {
        format!(" ({} attempts)", t.attempts)
    } else {
        String::new()
    };
    let took = if t.attempts > 0 {
        format!(
            " {}",
            ui::duration(Duration::from_millis(
                u64::try_from(task_elapsed_ms(t, alive, now)).unwrap_or(0)
            ))
        )
    } else {
        String::new()
    };
    Row {
        text: format!("{:<8} {branch}{}{attempts}{took}", t.status.as_str(), t.id),
        tone,
    }
}

/// The rows of the tree: each goal followed by its tasks (a task of goal `g1` is `g1.…`), the
/// tasks of no goal after; tasks drawn as `--goal` draws a plan, each under the dependency
/// drawn last before it (in the board's order when the plan cannot be read).
fn tree(goals: &[GoalRecord], tasks: &[TaskRecord], plan: Option<&Plan>) -> Vec<Node> {
    let drawn: Vec<(usize, String)> = match plan {
        Some(plan) => crate::preview::branches(plan),
        None => (0..tasks.len()).map(|i| (i, String::new())).collect(),
    };
    let mut rows = Vec::new();
    let mut placed = vec![false; tasks.len()];
    for (gi, g) in goals.iter().enumerate() {
        rows.push(Node::Goal(gi));
        let prefix = format!("{}.", g.id);
        for (i, branch) in &drawn {
            if tasks.get(*i).is_some_and(|t| t.id.starts_with(&prefix)) {
                placed[*i] = true;
                rows.push(Node::Task(*i, format!("  {branch}")));
            }
        }
    }
    for (i, branch) in drawn {
        if placed.get(i) == Some(&false) {
            rows.push(Node::Task(i, branch));
        }
    }
    rows
}

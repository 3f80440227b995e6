//! The interactive interface's screen (`swarm` with no arguments at a terminal, `swarm tui`):
//! what a `View` holds drawn with ratatui on the terminal's alternate screen, and the keys
//! read from it. Decides nothing: the view is made, and the keys are acted on, by the command.

use std::io::Stdout;
use std::time::Duration;

use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::crossterm::execute;
use ratatui::crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, List, ListItem, ListState, Paragraph, Wrap};

/// How a row is coloured: done and merged green, parked and stopped yellow, failed red.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    Good,
    Warn,
    Bad,
    Busy,
    Plain,
}

/// A row of a list, with its tone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub text: String,
    pub tone: Tone,
}

/// Which part of the screen the keys move in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Focus {
    Runs,
    Tasks,
    Detail,
    Composer,
}

/// What the screen shows, made afresh by the command at each turn.
#[derive(Debug, Clone)]
pub struct View {
    /// The repository's name, in the frame's title.
    pub title: String,
    pub runs: Vec<Row>,
    pub run: usize,
    /// The selected run in a line: its id, state, time and what it runs.
    pub header: String,
    /// The selected run's goals and tasks, a tree by their dependencies.
    pub tasks: Vec<Row>,
    pub task: usize,
    /// The selected run's counts, the live display's words.
    pub counts: String,
    /// The selected run's merge queue and its gate's last run, when it has them.
    pub merges: Vec<Row>,
    /// The title of the detail pane: the selected task, or the plan asked about.
    pub detail_title: String,
    /// The selected task's facts and the tail of its transcript, or the plan asked about.
    pub detail: Vec<String>,
    /// Lines scrolled up from the detail's end (0: it follows the transcript as it grows).
    pub scroll: usize,
    pub focus: Focus,
    /// The composer's text, a line a row, and the cursor's row and column (in characters).
    pub composer: Vec<String>,
    pub cursor: (usize, usize),
    /// What swarm last said to the user (the answer to a command, a question).
    pub said: String,
    pub help: bool,
    pub colors: bool,
}

/// A key the command acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    Char(char),
    Enter,
    /// Alt+Enter, Shift+Enter (where the terminal tells it apart) or Ctrl+J: a new line in
    /// the composer.
    NewLine,
    Backspace,
    Delete,
    Left,
    Right,
    Up,
    Down,
    Home,
    End,
    PageUp,
    PageDown,
    Tab,
    BackTab,
    Esc,
    /// Ctrl+C.
    Interrupt,
    /// Ctrl+D.
    EndOfInput,
    /// The terminal changed size.
    Resized,
}

/// The terminal, in raw mode on its alternate screen until dropped (or `suspend`ed).
pub struct Screen {
    terminal: Terminal<CrosstermBackend<Stdout>>,
}

impl Screen {
    /// Takes the terminal: raw mode, the alternate screen.
    pub fn open() -> std::io::Result<Self> {
        enable_raw_mode()?;
        if let Err(e) = execute!(std::io::stdout(), EnterAlternateScreen) {
            let _ = disable_raw_mode();
            return Err(e);
        }
        let terminal = Terminal::new(CrosstermBackend::new(std::io::stdout()))?;
        Ok(Self { terminal })
    }

    /// Gives the terminal back for `f` (an editor), then takes it again.
    pub fn suspend<T>(&mut self, f: impl FnOnce() -> T) -> std::io::Result<T> {
        leave();
        let out = f();
        enable_raw_mode()?;
        execute!(std::io::stdout(), EnterAlternateScreen)?;
        self.terminal.clear()?;
        Ok(out)
    }

    /// The terminal's width, in characters.
    pub fn width(&self) -> usize {
        self.terminal.size().map_or(80, |s| usize::from(s.width))
    }

    pub fn draw(&mut self, view: &View) -> std::io::Result<()> {
        self.terminal.draw(|frame| render(frame, view))?;
        Ok(())
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        leave();
    }
}

fn leave() {
    let _ = disable_raw_mode();
    let _ = execute!(
        std::io::stdout(),
        LeaveAlternateScreen,
        ratatui::crossterm::cursor::Show
    );
}

/// The next key, waiting at most `wait`; `None` when none came.
pub fn next_key(wait: Duration) -> std::io::Result<Option<Key>> {
    if !event::poll(wait)? {
        return Ok(None);
    }
    Ok(match event::read()? {
        Event::Key(key) if key.kind != KeyEventKind::Release => key_of(key),
        Event::Resize(..) => Some(Key::Resized),
        _ => None,
    })
}

fn key_of(key: KeyEvent) -> Option<Key> {
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    let alt = key.modifiers.contains(KeyModifiers::ALT);
    let shift = key.modifiers.contains(KeyModifiers::SHIFT);
    Some(match key.code {
        KeyCode::Char('c') if ctrl => Key::Interrupt,
        KeyCode::Char('d') if ctrl => Key::EndOfInput,
        KeyCode::Char('j') if ctrl => Key::NewLine,
        KeyCode::Char(_) if ctrl => return None,
        KeyCode::Char(c) => Key::Char(c),
        KeyCode::Enter if alt || shift => Key::NewLine,
        KeyCode::Enter => Key::Enter,
        KeyCode::Backspace => Key::Backspace,
        KeyCode::Delete => Key::Delete,
        KeyCode::Left => Key::Left,
        KeyCode::Right => Key::Right,
        KeyCode::Up => Key::Up,
        KeyCode::Down => Key::Down,
        KeyCode::Home => Key::Home,
        KeyCode::End => Key::End,
        KeyCode::PageUp => Key::PageUp,
        KeyCode::PageDown => Key::PageDown,
        KeyCode::Tab => Key::Tab,
        KeyCode::BackTab => Key::BackTab,
        KeyCode::Esc => Key::Esc,
        _ => return None,
    })
}

/// The keys, as the help line and the help pane say them.
pub const HELP: &[(&str, &str)] = &[
    (
        "Tab / Shift+Tab",
        "move between the runs, the tasks, the detail and the composer",
    ),
    ("↑ ↓ (j k)", "select a run or a task; scroll the detail"),
    (
        "PgUp PgDn",
        "scroll the detail; End follows the transcript again",
    ),
    ("Enter", "send the composer's text: a goal, or a command"),
    ("Alt+Enter, Ctrl+J", "a new line in the composer"),
    ("↑ ↓ in the composer", "the messages sent before"),
    ("?", "this help (Esc closes it)"),
    ("/goal TEXT", "queue a goal"),
    ("/run", "run the queue"),
    ("/stop", "stop the selected run, as Ctrl-C does"),
    ("/resume", "resume the selected run"),
    (
        "/retry TASK",
        "retry a parked or failed writer of the selected run",
    ),
    ("/steer TASK TEXT", "send TEXT to a running task's agent"),
    ("/quit (q)", "leave; runs started here go on"),
];

fn tone_style(tone: Tone, colors: bool) -> Style {
    if !colors {
        return Style::default();
    }
    match tone {
        Tone::Good => Style::default().fg(Color::Green),
        Tone::Warn => Style::default().fg(Color::Yellow),
        Tone::Bad => Style::default().fg(Color::Red),
        Tone::Busy => Style::default().fg(Color::Cyan),
        Tone::Plain => Style::default(),
    }
}

fn pane(title: &str, focused: bool, colors: bool) -> Block<'_> {
    let block = Block::default().borders(Borders::ALL).title(title);
    match (focused, colors) {
        (true, true) => block.border_style(Style::default().fg(Color::Cyan)),
        (true, false) => block.border_style(Style::default().add_modifier(Modifier::BOLD)),
        _ => block,
    }
}

fn list<'a>(rows: &'a [Row], title: &'a str, focused: bool, colors: bool) -> List<'a> {
    let items: Vec<ListItem<'a>> = rows
        .iter()
        .map(|r| {
            ListItem::new(Line::from(Span::styled(
                r.text.as_str(),
                tone_style(r.tone, colors),
            )))
        })
        .collect();
    List::new(items)
        .block(pane(title, focused, colors))
        .highlight_symbol("› ")
        .highlight_style(Style::default().add_modifier(Modifier::REVERSED))
}

/// Draws `view`: wide (120 columns or more) the runs, the tasks and the detail side by side;
/// narrower the runs beside the tasks over the detail. The composer and a line of keys below.
fn render(frame: &mut ratatui::Frame<'_>, view: &View) {
    let area = frame.area();
    let composer_rows = u16::try_from(view.composer.len().clamp(1, 6)).unwrap_or(1) + 2;
    let [main, composer, said, keys] = Layout::default()
        .direction(Direction::Vertical)
        .constraints([
            Constraint::Min(6),
            Constraint::Length(composer_rows),
            Constraint::Length(1),
            Constraint::Length(1),
        ])
        .areas(area);
    let (runs, tasks, detail) = if area.width >= 120 {
        let [runs, tasks, detail] = Layout::default()
            .direction(Direction::Horizontal)
            .constraints([
                Constraint::Length(34),
                Constraint::Percentage(40),
                Constraint::Min(30),
            ])
            .areas(main);
        (runs, tasks, detail)
    } else {
        let [runs, right] = Layout::default()
            .direction(Direction::Horizontal)
            .constraints([Constraint::Length(26), Constraint::Min(20)])
            .areas(main);
        let [tasks, detail] = Layout::default()
            .direction(Direction::Vertical)
            .constraints([Constraint::Percentage(50), Constraint::Percentage(50)])
            .areas(right);
        (runs, tasks, detail)
    };
    let colors = view.colors;
    let title = format!(" swarm · {} ", view.title);
    let runs_title = format!("{title}· runs ");
    let mut state = ListState::default().with_selected((!view.runs.is_empty()).then_some(view.run));
    frame.render_stateful_widget(
        list(&view.runs, &runs_title, view.focus == Focus::Runs, colors),
        runs,
        &mut state,
    );
    let tasks_title = format!(" {} · {} ", view.counts, view.header);
    let tasks = if view.merges.is_empty() {
        tasks
    } else {
        let rows = u16::try_from(view.merges.len()).unwrap_or(2) + 2;
        let [tasks, merges] = Layout::default()
            .direction(Direction::Vertical)
            .constraints([Constraint::Min(3), Constraint::Length(rows)])
            .areas(tasks);
        frame.render_widget(
            list(&view.merges, " merges and gate ", false, colors),
            merges,
        );
        tasks
    };
    let mut state =
        ListState::default().with_selected((!view.tasks.is_empty()).then_some(view.task));
    frame.render_stateful_widget(
        list(
            &view.tasks,
            &tasks_title,
            view.focus == Focus::Tasks,
            colors,
        ),
        tasks,
        &mut state,
    );
    render_detail(frame, view, detail);
    let prompt: Vec<Line<'_>> = view
        .composer
        .iter()
        .enumerate()
        .map(|(i, l)| Line::from(format!("{} {l}", if i == 0 { "❯" } else { " " })))
        .collect();
    let first = view.cursor.0.saturating_sub(usize::from(composer_rows - 3));
    frame.render_widget(
        Paragraph::new(prompt)
            .scroll((u16::try_from(first).unwrap_or(0), 0))
            .block(pane(
                " goal, or /help ",
                view.focus == Focus::Composer,
                colors,
            )),
        composer,
    );
    if view.focus == Focus::Composer {
        let x = composer.x + 3 + u16::try_from(view.cursor.1).unwrap_or(0);
        let y = composer.y + 1 + u16::try_from(view.cursor.0 - first).unwrap_or(0);
        frame.set_cursor_position((x.min(composer.right().saturating_sub(2)), y));
    }
    frame.render_widget(Paragraph::new(view.said.as_str()), said);
    frame.render_widget(
        Paragraph::new("Tab: pane  ↑↓: select  Enter: send  Alt+Enter: new line  ?: keys  /quit")
            .style(if colors {
                Style::default().fg(Color::DarkGray)
            } else {
                Style::default()
            }),
        keys,
    );
    if view.help {
        render_help(frame, area);
    }
}

fn render_detail(frame: &mut ratatui::Frame<'_>, view: &View, area: Rect) {
    let inner = usize::from(area.height.saturating_sub(2));
    let lines = view.detail.len();
    let end = lines.saturating_sub(view.scroll.min(lines));
    let start = end.saturating_sub(inner);
    let shown: Vec<Line<'_>> = view.detail[start..end]
        .iter()
        .map(|l| Line::from(l.as_str()))
        .collect();
    let title = format!(" {} ", view.detail_title);
    // Not wrapped: a line is a line of the transcript, its end cut at the pane's edge.
    frame.render_widget(
        Paragraph::new(shown).block(pane(&title, view.focus == Focus::Detail, view.colors)),
        area,
    );
}

fn render_help(frame: &mut ratatui::Frame<'_>, area: Rect) {
    let width = area.width.min(78);
    let height = (u16::try_from(HELP.len()).unwrap_or(0) + 4).min(area.height);
    let at = Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + (area.height - height) / 2,
        width,
        height,
    };
    let lines: Vec<Line<'_>> = HELP
        .iter()
        .map(|(keys, what)| Line::from(format!("{keys:<20} {what}")))
        .collect();
    frame.render_widget(Clear, at);
    frame.render_widget(
        Paragraph::new(lines).wrap(Wrap { trim: false }).block(
            Block::default()
                .borders(Borders::ALL)
                .title(" keys (Esc closes) "),
        ),
        at,
    );
}

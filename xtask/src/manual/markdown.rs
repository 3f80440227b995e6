//! The reference: `docs/src/reference/<page>.md` for every man page and a `README.md` that
//! lists them, made from the same clap definition and sections as the man pages, as Markdown
//! that mdBook renders and a link checker accepts: every link is relative and names a page made
//! here.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use super::{Block, Section, Sections, Span, description, spans, tasks, written};

/// What every page says first, for whoever opens the file to edit it.
const GENERATED: &str = "<!-- Made by `cargo xtask generate` from swarm's definitions (xtask/src/manual): edit those. -->\n\n";

/// The reference's pages: `(file name, contents)`, the index `README.md` first, then `swarm.md`,
/// each command's page in the order of the definition, and `swarm-tasks.md`. `cmd` is
/// `swarm::cli::command()`.
pub fn pages(cmd: clap::Command) -> Vec<(String, Vec<u8>)> {
    let mut cmd = cmd.disable_help_subcommand(true);
    cmd.build();
    let mut commands = Vec::new();
    walk(&cmd, 0, &mut commands);
    let mut names: BTreeSet<String> = commands.iter().map(|(_, c)| page_name(c)).collect();
    names.insert("swarm-tasks".to_owned());
    let links = Links { pages: &names };
    let mut out = vec![("README.md".to_owned(), index(&commands).into_bytes())];
    for (_, command) in &commands {
        let page = page_name(command);
        out.push((
            format!("{page}.md"),
            command_page(command, &page, &links).into_bytes(),
        ));
    }
    out.push(("swarm-tasks.md".to_owned(), tasks_page(&links).into_bytes()));
    out
}

/// `cmd` and its subcommands, depth first, each with its depth.
fn walk<'a>(cmd: &'a clap::Command, depth: usize, out: &mut Vec<(usize, &'a clap::Command)>) {
    out.push((depth, cmd));
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        walk(sub, depth + 1, out);
    }
}

/// `swarm-queue-add`, as the man page is named.
fn page_name(cmd: &clap::Command) -> String {
    cmd.get_display_name().unwrap_or(cmd.get_name()).to_owned()
}

/// The page's title: the command's words.
fn title(page: &str) -> String {
    super::command_words(page)
}

/// The index: every page, subcommands under their command.
fn index(commands: &[(usize, &clap::Command)]) -> String {
    let mut out = String::from(GENERATED);
    out.push_str("# Reference\n\n");
    out.push_str(
        "One page per command of swarm, and one for its task files: each command's usage, \
         options, exit status, environment, files and examples, made from the same definitions \
         as `swarm --help` and the man pages (`man swarm`).\n\n",
    );
    for (depth, cmd) in commands {
        let page = page_name(cmd);
        let _ = writeln!(
            out,
            "{}- [{}]({page}.md): {}",
            "  ".repeat(*depth),
            title(&page),
            sentence(&about(cmd))
        );
    }
    let _ = writeln!(
        out,
        "- [swarm-tasks](swarm-tasks.md): {}",
        sentence(tasks::NAME)
    );
    out
}

/// The command's one-line summary.
fn about(cmd: &clap::Command) -> String {
    cmd.get_about().map(ToString::to_string).unwrap_or_default()
}

/// `text` with a capital and a full stop.
fn sentence(text: &str) -> String {
    let mut text = text.trim().to_owned();
    if let Some(first) = text.get(..1) {
        text.replace_range(..1, &first.to_uppercase());
    }
    if !text.ends_with(['.', '!', '?', ':']) {
        text.push('.');
    }
    text
}

/// A command's page: its summary, usage, description, arguments, options and subcommands, then
/// the written sections.
fn command_page(cmd: &clap::Command, page: &str, links: &Links) -> String {
    let mut out = String::from(GENERATED);
    let _ = writeln!(out, "# {}\n", title(page));
    // The long description's first paragraph is the summary; the others describe it.
    let long = cmd
        .get_long_about()
        .or(cmd.get_about())
        .map(ToString::to_string)
        .unwrap_or_default();
    let mut paragraphs = long.split("\n\n").map(ToOwned::to_owned);
    let summary = paragraphs.next().unwrap_or_default();
    let _ = writeln!(out, "{}\n", links.inline(&sentence(&summary)));
    // The usage as `--help` shows it: its first lines.
    let help = cmd.clone().render_long_help().to_string();
    let usage: Vec<&str> = help
        .trim_start_matches("Usage:")
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .map(str::trim)
        .collect();
    let _ = writeln!(out, "## Usage\n\n```text\n{}\n```\n", usage.join("\n"));
    let mut described: Vec<String> = paragraphs.map(|p| join_lines(&p)).collect();
    described.extend(description(Sections::of(page)));
    if !described.is_empty() {
        out.push_str("## Description\n\n");
        for paragraph in &described {
            let _ = writeln!(out, "{}\n", links.paragraph(paragraph));
        }
    }
    let (positionals, options): (Vec<&clap::Arg>, Vec<&clap::Arg>) = cmd
        .get_arguments()
        .filter(|a| !a.is_hide_set())
        .partition(|a| a.is_positional());
    if !positionals.is_empty() {
        out.push_str("## Arguments\n\n");
        for arg in positionals {
            argument(&mut out, arg, links);
        }
    }
    if !options.is_empty() {
        out.push_str("## Options\n\n");
        for arg in options {
            argument(&mut out, arg, links);
        }
    }
    let subcommands: Vec<&clap::Command> =
        cmd.get_subcommands().filter(|s| !s.is_hide_set()).collect();
    if !subcommands.is_empty() {
        out.push_str("## Commands\n\n");
        for sub in subcommands {
            let page = page_name(sub);
            let _ = writeln!(
                out,
                "- [{}]({page}.md): {}",
                title(&page),
                links.inline(&sentence(&about(sub)))
            );
        }
        out.push('\n');
    }
    render(&mut out, &written(page, Sections::of(page)), links);
    finish(&out)
}

/// The task-file format's page.
fn tasks_page(links: &Links) -> String {
    let mut out = String::from(GENERATED);
    out.push_str("# swarm-tasks\n\n");
    let _ = writeln!(out, "{}\n", links.inline(&sentence(tasks::NAME)));
    let synopsis: Vec<String> = tasks::synopsis().iter().map(|l| plain(l)).collect();
    let _ = writeln!(
        out,
        "## Synopsis\n\n```text\n{}\n```\n",
        synopsis.join("\n")
    );
    render(&mut out, &tasks::sections(), links);
    finish(&out)
}

/// One newline at the end.
fn finish(out: &str) -> String {
    format!("{}\n", out.trim_end())
}

/// An argument as a heading (its flags and value, as `--help` shows them) and its help, default
/// and values.
fn argument(out: &mut String, arg: &clap::Arg, links: &Links) {
    let _ = writeln!(out, "### `{}`\n", flags(arg));
    let help = arg
        .get_long_help()
        .or(arg.get_help())
        .map(ToString::to_string)
        .unwrap_or_default();
    for paragraph in help.split("\n\n").filter(|p| !p.trim().is_empty()) {
        let _ = writeln!(
            out,
            "{}\n",
            links.paragraph(&sentence(&join_lines(paragraph)))
        );
    }
    let takes_values = arg.get_action().takes_values();
    let defaults: Vec<String> = arg
        .get_default_values()
        .iter()
        .map(|v| v.to_string_lossy().into_owned())
        .collect();
    if takes_values && !defaults.is_empty() && !arg.is_hide_default_value_set() {
        let _ = writeln!(out, "Default: `{}`.\n", defaults.join(" "));
    }
    if let Some(var) = arg.get_env() {
        let _ = writeln!(out, "Environment: `{}`.\n", var.to_string_lossy());
    }
    let values: Vec<_> = arg
        .get_possible_values()
        .into_iter()
        .filter(|v| !v.is_hide_set())
        .collect();
    if takes_values && !values.is_empty() && !arg.is_hide_possible_values_set() {
        if values.iter().any(|v| v.get_help().is_some()) {
            out.push_str("Values:\n\n");
            for value in values {
                let help = value
                    .get_help()
                    .map(ToString::to_string)
                    .unwrap_or_default();
                let _ = writeln!(
                    out,
                    "- `{}`: {}",
                    value.get_name(),
                    links.inline(&sentence(&join_lines(&help)))
                );
            }
            out.push('\n');
        } else {
            let names: Vec<String> = values
                .iter()
                .map(|v| format!("`{}`", v.get_name()))
                .collect();
            let _ = writeln!(out, "Values: {}.\n", names.join(", "));
        }
    }
}

/// `-C, --directory <DIR>`, `[RUN]`, `<TEXT>...`.
fn flags(arg: &clap::Arg) -> String {
    let names: Vec<String> = arg.get_value_names().map_or_else(
        || vec![arg.get_id().as_str().to_uppercase()],
        |names| names.iter().map(ToString::to_string).collect(),
    );
    let many = arg.get_num_args().is_some_and(|n| n.max_values() > 1);
    let dots = if many { "..." } else { "" };
    if arg.is_positional() {
        let value = names.join(" ");
        return if arg.is_required_set() {
            format!("<{value}>{dots}")
        } else {
            format!("[{value}]{dots}")
        };
    }
    let mut text = Vec::new();
    if let Some(short) = arg.get_short() {
        text.push(format!("-{short}"));
    }
    if let Some(long) = arg.get_long() {
        text.push(format!("--{long}"));
    }
    let mut text = text.join(", ");
    if arg.get_action().takes_values() {
        for name in names {
            let _ = write!(text, " <{name}>");
        }
        text.push_str(dots);
    }
    text
}

/// Sections in Markdown, each under a heading of the second level.
fn render(out: &mut String, sections: &[Section], links: &Links) {
    for section in sections {
        let _ = writeln!(out, "## {}\n", section.title);
        for block in &section.blocks {
            match block {
                Block::Paragraph(text) => {
                    let _ = writeln!(out, "{}\n", links.paragraph(text));
                }
                Block::Verbatim(text) => {
                    let _ = writeln!(out, "```text\n{text}\n```\n");
                }
                Block::Terms(terms) => {
                    for term in terms {
                        let mut text = term.text.iter();
                        let first = text.next().map(|t| links.inline(t)).unwrap_or_default();
                        let _ = writeln!(
                            out,
                            "- {}: {first}",
                            links.inline(&format!("**{}**", term.term))
                        );
                        for paragraph in text {
                            let _ = writeln!(out, "\n  {}", links.inline(paragraph));
                        }
                        out.push('\n');
                    }
                }
                Block::Examples(language, examples) => {
                    for (text, lines) in examples {
                        if !text.is_empty() {
                            let _ = writeln!(out, "{}\n", links.paragraph(&caption(text)));
                        }
                        let _ = writeln!(out, "```{language}\n{lines}\n```\n");
                    }
                }
                Block::Pages(names) => {
                    let shown: Vec<String> = names.iter().map(|n| links.page(n)).collect();
                    let _ = writeln!(out, "{}\n", shown.join(", "));
                }
            }
        }
    }
}

/// What an example does, ending as a sentence that leads to it does.
fn caption(text: &str) -> String {
    if text.ends_with(['.', ':']) {
        text.to_owned()
    } else {
        format!("{text}:")
    }
}

/// The lines of a paragraph as one.
fn join_lines(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Marked-up text without its marks.
fn plain(text: &str) -> String {
    spans(text)
        .into_iter()
        .map(|span| match span {
            Span::Text(t) | Span::Bold(t) | Span::Italic(t) | Span::Code(t) => t,
        })
        .collect()
}

/// Marked-up text as Markdown, a page named as a man page names it (`**swarm-run**(1)`,
/// `swarm-tasks(5)`) linked to its file when the reference has it.
struct Links<'a> {
    pages: &'a BTreeSet<String>,
}

impl Links<'_> {
    /// `name(N)` as a link to its page, or as text when the reference has none (`git(1)`).
    fn page(&self, name: &str) -> String {
        let page = name.split_once('(').map_or(name, |(page, _)| page);
        if self.pages.contains(page) {
            format!("[{}]({page}.md)", escape(name))
        } else {
            escape(name)
        }
    }

    /// A paragraph: marked-up text that does not start a list, a heading or a quote.
    fn paragraph(&self, text: &str) -> String {
        let text = self.inline(text);
        match text.chars().next() {
            Some(c @ ('#' | '>' | '-' | '+' | '=')) => format!("\\{c}{}", &text[1..]),
            _ => text,
        }
    }

    /// Marked-up text as Markdown.
    fn inline(&self, text: &str) -> String {
        let spans = spans(text);
        let mut out = String::new();
        let mut rest: Option<&str> = None;
        for (n, span) in spans.iter().enumerate() {
            match span {
                Span::Text(text) => {
                    let text = rest.take().unwrap_or(text);
                    out.push_str(&escape(text));
                }
                Span::Bold(name) => {
                    // `**swarm-run**(1)`: a page of the manual.
                    let section = match spans.get(n + 1) {
                        Some(Span::Text(next)) if self.pages.contains(*name) => {
                            ["(1)", "(5)"].into_iter().find(|s| next.starts_with(s))
                        }
                        _ => None,
                    };
                    if let (Some(section), Some(Span::Text(next))) = (section, spans.get(n + 1)) {
                        let _ = write!(out, "[{}{section}]({name}.md)", escape(name));
                        rest = Some(&next[section.len()..]);
                    } else {
                        out.push_str(&emphasis("**", name));
                    }
                }
                Span::Italic(text) => out.push_str(&emphasis("_", text)),
                Span::Code(text) => {
                    let _ = write!(out, "`{text}`");
                }
            }
        }
        out
    }
}

/// `text` between `mark`s, the spaces at its ends outside them: Markdown ends no emphasis after
/// a space.
fn emphasis(mark: &str, text: &str) -> String {
    let inner = text.trim();
    let before = &text[..text.len() - text.trim_start().len()];
    let after = &text[text.trim_end().len()..];
    format!("{before}{mark}{}{mark}{after}", escape(inner))
}

/// Text with the characters Markdown would read as markup escaped; `_` inside a word is left
/// alone, as Markdown does (`SWARM_API_KEY`).
fn escape(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    for (n, &c) in chars.iter().enumerate() {
        let inside_word = n > 0
            && chars[n - 1].is_alphanumeric()
            && chars.get(n + 1).is_some_and(|c| c.is_alphanumeric());
        match c {
            '_' if inside_word => out.push(c),
            '\\' | '`' | '*' | '_' | '<' | '[' | ']' | '~' => {
                out.push('\\');
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::{Links, escape};

    #[test]
    fn text_is_escaped_but_words_with_underscores_are_not() {
        assert_eq!(
            escape("SWARM_* and <run> [x] ~/a"),
            "SWARM\\_\\* and \\<run> \\[x\\] \\~/a"
        );
        assert_eq!(escape("SWARM_API_KEY"), "SWARM_API_KEY");
    }

    #[test]
    fn marks_become_markdown_and_a_page_of_the_reference_a_link() {
        let pages = BTreeSet::from(["swarm-run".to_owned()]);
        let links = Links { pages: &pages };
        assert_eq!(
            links.inline("see **swarm-run**(1), **git**(1), `a_b` and _N_"),
            "see [swarm-run(1)](swarm-run.md), **git**(1), `a_b` and _N_"
        );
        assert_eq!(links.page("swarm-run(1)"), "[swarm-run(1)](swarm-run.md)");
        assert_eq!(links.page("dot(1)"), "dot(1)");
        assert_eq!(links.paragraph("-j caps"), "\\-j caps");
        assert_eq!(links.inline("(**swarm -- **_w_)"), "(**swarm --** _w_)");
    }
}

//! The manual, in two forms made from the same definitions: one man page per command (`roff`:
//! NAME, SYNOPSIS, DESCRIPTION, OPTIONS and SUBCOMMANDS by `clap_mangen`) and one Markdown page
//! per command for the reference in docs/src/reference (`markdown`), each followed by the
//! sections written here as data (`pages`: more description, JSON OUTPUT, ENVIRONMENT, FILES,
//! SEE ALSO) and by the examples and exit codes that `--help` shows too (`swarm::cli::examples`,
//! `swarm::cli::exit_status`); plus the task-file format, `swarm-tasks(5)` (`tasks`). Holds text
//! and its layout only; `cargo xtask generate` writes the pages, and the test in
//! `tests/cli/generated.rs` fails when they drift.
//!
//! A command without an entry in `pages::PAGES` gets the generated sections, its examples and
//! exit codes, and a SEE ALSO naming swarm(1). To give it more, add a `Sections` there
//! (`Sections { page: "swarm-show", files: &[…], ..Sections::NONE }`) and list it in `PAGES`.
//!
//! Text is marked up as `**bold**`, `_italic_` and `` `code` ``; everything else is text, escaped
//! for each form.

use swarm::cli::examples::Example;
use swarm::cli::exit_status::Exit;

mod man;
pub mod markdown;
mod pages;
mod tasks;

pub use man::{command_page, inline, pages};
pub use pages::PAGES;
// What the pages are made with, for their tests.
pub use clap_mangen::{Man, roff};

/// A term and what it means: a variable, a file, a field.
pub struct Item {
    pub term: &'static str,
    pub text: &'static str,
}

/// `Item { term, text }`, short enough for tables of them.
pub const fn item(term: &'static str, text: &'static str) -> Item {
    Item { term, text }
}

/// A list of variables in a page's ENVIRONMENT.
pub enum Env {
    /// Written here.
    Items(&'static [Item]),
    /// Every setting's variable, made from the options' declaration (`swarm::cli::declared`),
    /// after these words on them all.
    Settings(&'static [Item]),
}

/// The hand-written sections of one page.
pub struct Sections {
    /// The page's name: `swarm`, `swarm-run`, `swarm-queue-add`.
    pub page: &'static str,
    /// Paragraphs after the description that `--help` shows too.
    pub description: &'static [&'static str],
    /// Sections of the page's own after the options (`JSON output`, say): a title, as the
    /// reference writes it, and its paragraphs; a paragraph whose lines start with two spaces is
    /// shown as written.
    pub more: &'static [(&'static str, &'static [&'static str])],
    /// Lists of variables, shared between pages where commands share them.
    pub environment: &'static [Env],
    /// Lists of files, likewise.
    pub files: &'static [&'static [Item]],
    /// Other pages, as `swarm-run(1)`.
    pub see_also: &'static [&'static str],
}

impl Sections {
    /// A page with nothing written for it.
    pub const NONE: Self = Self {
        page: "",
        description: &[],
        more: &[],
        environment: &[],
        files: &[],
        see_also: &[],
    };

    /// The sections written for the page `page` (`swarm-run`), or none.
    pub fn of(page: &str) -> &'static Self {
        PAGES.iter().find(|s| s.page == page).unwrap_or(&Self::NONE)
    }
}

/// A section of a page after the generated ones, as both forms show it.
pub struct Section {
    /// Its title as the reference writes it (`Exit status`); the man page's is in capitals.
    pub title: &'static str,
    pub blocks: Vec<Block>,
}

/// What a section holds.
pub enum Block {
    /// A paragraph of marked-up text.
    Paragraph(String),
    /// Lines shown as written.
    Verbatim(String),
    /// Terms, each with its paragraphs: exit codes, variables, files, fields.
    Terms(Vec<Term>),
    /// Lines of a language (`sh`, `json`), each after what it does.
    Examples(&'static str, Vec<(String, String)>),
    /// Other pages, as `swarm-run(1)`.
    Pages(Vec<String>),
}

/// A term and its paragraphs, marked up.
pub struct Term {
    pub term: String,
    pub text: Vec<String>,
}

impl Term {
    fn of(item: &Item) -> Self {
        Self {
            term: item.term.to_owned(),
            text: vec![item.text.to_owned()],
        }
    }
}

/// The page of a command (`swarm-queue-add`) as `swarm::cli` knows it (`swarm queue add`).
pub fn command_words(page: &str) -> String {
    page.replace('-', " ")
}

/// The description a page adds to the one `--help` shows, as paragraphs.
pub fn description(sections: &Sections) -> Vec<String> {
    sections
        .description
        .iter()
        .map(|p| (*p).to_owned())
        .collect()
}

/// The sections of the page `page` after its options and commands: those of `sections`, then
/// EXIT STATUS, ENVIRONMENT, FILES, EXAMPLES and SEE ALSO.
pub fn written(page: &str, sections: &Sections) -> Vec<Section> {
    let words = command_words(page);
    let mut out = Vec::new();
    for (title, paragraphs) in sections.more {
        let blocks = paragraphs
            .iter()
            .map(|p| {
                if p.starts_with("  ") {
                    let lines: Vec<&str> = p
                        .lines()
                        .map(|l| l.strip_prefix("  ").unwrap_or(l))
                        .collect();
                    Block::Verbatim(lines.join("\n"))
                } else {
                    Block::Paragraph((*p).to_owned())
                }
            })
            .collect();
        out.push(Section { title, blocks });
    }
    out.push(Section {
        title: "Exit status",
        blocks: vec![Block::Terms(
            swarm::cli::exit_status::of(&words)
                .iter()
                .map(exit_term)
                .collect(),
        )],
    });
    if !sections.environment.is_empty() {
        let mut terms = Vec::new();
        for block in sections.environment {
            match block {
                Env::Items(items) => terms.extend(items.iter().map(Term::of)),
                Env::Settings(items) => {
                    terms.extend(items.iter().map(Term::of));
                    terms.extend(settings());
                }
            }
        }
        out.push(Section {
            title: "Environment",
            blocks: vec![Block::Terms(terms)],
        });
    }
    if !sections.files.is_empty() {
        let terms = sections.files.iter().flat_map(|b| b.iter().map(Term::of));
        out.push(Section {
            title: "Files",
            blocks: vec![Block::Terms(terms.collect())],
        });
    }
    let examples = swarm::cli::examples::of(&words);
    if !examples.is_empty() {
        out.push(Section {
            title: "Examples",
            blocks: vec![Block::Examples(
                "sh",
                examples.iter().map(example).collect(),
            )],
        });
    }
    let mut names: Vec<String> = Vec::new();
    if page != "swarm" {
        names.push("swarm(1)".to_owned());
    }
    for name in sections.see_also {
        if !names.iter().any(|n| n == name) && (*name != "swarm(1)" || page != "swarm") {
            names.push((*name).to_owned());
        }
    }
    out.push(Section {
        title: "See also",
        blocks: vec![Block::Pages(names)],
    });
    out
}

/// An exit code: its summary as a sentence, then its detail.
fn exit_term(exit: &Exit) -> Term {
    let mut summary = exit.summary.to_owned();
    // swarm's name stays as it is written.
    if let Some(first) = summary.get(..1).filter(|_| !summary.starts_with("swarm ")) {
        summary.replace_range(..1, &first.to_uppercase());
    }
    summary.push('.');
    let mut text = vec![summary];
    if !exit.detail.is_empty() {
        text.push(exit.detail.to_owned());
    }
    Term {
        term: exit.code.to_owned(),
        text,
    }
}

/// An example as `(what it does, its lines)`.
fn example(example: &Example) -> (String, String) {
    (example.text.to_owned(), example.line.to_owned())
}

/// Each setting's variable and what it sets: the flag, whose help is in OPTIONS, or, for a key
/// without one, what it does; how a list or a switch is written.
fn settings() -> Vec<Term> {
    let mut terms = Vec::new();
    for option in swarm::cli::declared() {
        let Some(var) = option.var else { continue };
        let mut text = if option.flag.is_some() {
            format!("**--{}**.", option.key)
        } else {
            let mut help = option.help.split_whitespace().collect::<Vec<_>>().join(" ");
            if let Some(first) = help.get(..1) {
                help.replace_range(..1, &first.to_lowercase());
            }
            format!("The key **{}** (no flag): {help}", option.key)
        };
        if let Some(form) = option.var_form {
            text = format!("{text} As a variable: {form}.");
        }
        terms.push(Term {
            term: var.to_owned(),
            text: vec![text],
        });
    }
    terms
}

/// A span of marked-up text.
#[derive(Debug, PartialEq, Eq)]
pub enum Span<'a> {
    Text(&'a str),
    Bold(&'a str),
    Italic(&'a str),
    Code(&'a str),
}

/// Text with `**bold**`, `_italic_` and `` `code` `` spans, as spans. Spans do not nest; a lone
/// marker is text.
pub fn spans(text: &str) -> Vec<Span<'_>> {
    let mut out = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let next = [("**", 0), ("_", 1), ("`", 2)]
            .into_iter()
            .filter_map(|(mark, kind)| {
                let start = rest.find(mark)?;
                // `_` inside a word (SWARM_API_KEY) is no marker.
                if kind == 1 && !opens_italic(rest, start) {
                    return None;
                }
                let end = rest[start + mark.len()..].find(mark)? + start + mark.len();
                Some((start, end, mark.len(), kind))
            })
            .min_by_key(|&(start, ..)| start);
        let Some((start, end, len, kind)) = next else {
            out.push(Span::Text(rest));
            break;
        };
        if start > 0 {
            out.push(Span::Text(&rest[..start]));
        }
        let span = &rest[start + len..end];
        out.push(match kind {
            0 => Span::Bold(span),
            1 => Span::Italic(span),
            _ => Span::Code(span),
        });
        rest = &rest[end + len..];
    }
    out
}

/// Whether the `_` at `at` starts an italic span: at the start of the text, or after a space, an
/// opening bracket or brace, a quote or a colon (`"_id_"`, `exec:_command_`).
fn opens_italic(text: &str, at: usize) -> bool {
    text[..at]
        .chars()
        .next_back()
        .is_none_or(|c| c.is_whitespace() || "([{\":".contains(c))
}

/// `text` as paragraphs, one per block of lines between blank lines, each on one line.
pub(crate) fn paragraphs(text: &str) -> Vec<String> {
    text.split("\n\n")
        .map(|block| block.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

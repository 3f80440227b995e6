//! The manual: one man page per command, made from the clap definition (NAME, SYNOPSIS,
//! DESCRIPTION, OPTIONS and SUBCOMMANDS, by `clap_mangen`) and followed by the sections written
//! here as data (`pages`: EXIT STATUS, ENVIRONMENT, FILES, EXAMPLES, SEE ALSO), plus
//! `swarm-tasks(5)`, the task-file format (`tasks`). Holds text and its layout only;
//! `cargo xtask generate` writes the pages to `man/`, and the test in `tests/cli/generated.rs`
//! fails when they drift.
//!
//! A command without an entry in `pages::PAGES` gets the generated sections, the exit codes of
//! `swarm --help` and a SEE ALSO naming swarm(1). To give it more, add a `Sections` there
//! (`Sections { page: "swarm-show", examples: &[…], ..Sections::NONE }`) and list it in `PAGES`.

use clap_mangen::roff::{Inline, Roff, bold, italic, roman};
// What the pages are made with, for their tests.
pub use clap_mangen::{Man, roff};

mod pages;
mod tasks;

pub use pages::PAGES;

/// A term and what it means: an exit code, a variable, a file, a command line.
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
    /// Paragraphs after the generated description.
    pub description: &'static [&'static str],
    /// Sections of the page's own after the options (`JSON OUTPUT`, say): a title and its
    /// paragraphs; a paragraph whose lines start with two spaces is shown as written.
    pub more: &'static [(&'static str, &'static [&'static str])],
    /// What each exit code means for this command; empty: the codes `swarm --help` lists.
    pub exit_status: &'static [Item],
    /// Lists of variables, shared between pages where commands share them.
    pub environment: &'static [Env],
    /// Lists of files, likewise.
    pub files: &'static [&'static [Item]],
    /// A command line (without the prompt) and what it does.
    pub examples: &'static [Item],
    /// Other pages, as `swarm-run(1)`.
    pub see_also: &'static [&'static str],
}

impl Sections {
    /// A page with nothing written for it.
    pub const NONE: Self = Self {
        page: "",
        description: &[],
        more: &[],
        exit_status: &[],
        environment: &[],
        files: &[],
        examples: &[],
        see_also: &[],
    };
}

/// Every page of the manual: `(file name, contents)`, `swarm.1` first, then each command's page
/// in the order of the definition, then `swarm-tasks.5`. `cmd` is `swarm::cli::command()`.
pub fn pages(cmd: clap::Command) -> Vec<(String, Vec<u8>)> {
    // The `help` subcommand is clap's, not swarm's: no page for it (as `clap_mangen::generate_to`).
    let mut cmd = cmd.disable_help_subcommand(true);
    cmd.build();
    let common = exit_codes(&cmd);
    let mut out = Vec::new();
    command_pages(&cmd, &common, &mut out);
    out.push(("swarm-tasks.5".to_owned(), tasks::page(&cmd)));
    out
}

/// The page of `cmd` and of each of its subcommands (subcommands get their display names,
/// `swarm-run`, from `build`).
fn command_pages(
    cmd: &clap::Command,
    common: &[(String, String)],
    out: &mut Vec<(String, Vec<u8>)>,
) {
    let man = clap_mangen::Man::new(cmd.clone());
    let name = man.get_filename();
    let page = name.trim_end_matches(".1");
    let sections = pages::PAGES
        .iter()
        .find(|s| s.page == page)
        .unwrap_or(&Sections::NONE);
    out.push((name, command_page(&man, cmd, sections, common)));
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        command_pages(sub, common, out);
    }
}

/// A page as `Man::render` makes it, except that the exit codes of `after_help` (which
/// `Man::render` would fold into one paragraph under "EXTRA") become an "EXIT STATUS" section,
/// and the hand-written sections follow the generated ones.
#[expect(clippy::expect_used, reason = "writing into a Vec cannot fail")]
pub fn command_page(
    man: &clap_mangen::Man,
    cmd: &clap::Command,
    sections: &Sections,
    common: &[(String, String)],
) -> Vec<u8> {
    let mut out = Vec::new();
    let fail = "rendering a man page into memory";
    man.render_title(&mut out).expect(fail);
    man.render_name_section(&mut out).expect(fail);
    man.render_synopsis_section(&mut out).expect(fail);
    man.render_description_section(&mut out).expect(fail);
    let mut roff = Roff::new();
    for paragraph in sections.description {
        roff.control("PP", []).text(inline(paragraph));
    }
    if !sections.description.is_empty() {
        roff.to_writer(&mut out).expect(fail);
    }
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(&mut out).expect(fail);
    }
    if cmd.get_subcommands().any(|s| !s.is_hide_set()) {
        man.render_subcommands_section(&mut out).expect(fail);
    }
    let mut roff = Roff::new();
    for (title, paragraphs) in sections.more {
        roff.control("SH", [*title]);
        for paragraph in *paragraphs {
            if paragraph.starts_with("  ") {
                roff.control("RS", ["4"]).control("nf", []);
                for line in paragraph.lines() {
                    roff.text([roman(line.strip_prefix("  ").unwrap_or(line))]);
                }
                roff.control("fi", []).control("RE", []);
            } else {
                roff.control("PP", []).text(inline(paragraph));
            }
        }
    }
    roff.control("SH", ["EXIT STATUS"]);
    if sections.exit_status.is_empty() {
        for (code, meaning) in common {
            roff.control("TP", []).text([bold(code.as_str())]);
            roff.text(inline(meaning));
        }
    } else {
        list(&mut roff, sections.exit_status);
    }
    if !sections.environment.is_empty() {
        roff.control("SH", ["ENVIRONMENT"]);
        for block in sections.environment {
            match block {
                Env::Items(items) => list(&mut roff, items),
                Env::Settings(items) => {
                    list(&mut roff, items);
                    settings(&mut roff);
                }
            }
        }
    }
    if !sections.files.is_empty() {
        roff.control("SH", ["FILES"]);
        for block in sections.files {
            list(&mut roff, block);
        }
    }
    if !sections.examples.is_empty() {
        roff.control("SH", ["EXAMPLES"]);
        examples(&mut roff, sections.examples);
    }
    see_also(&mut roff, sections.see_also, cmd.get_name() == "swarm");
    roff.to_writer(&mut out).expect(fail);
    if cmd.get_version().is_some() {
        man.render_version_section(&mut out).expect(fail);
    }
    out
}

/// Items as a tagged list, the term in bold.
fn list(roff: &mut Roff, items: &[Item]) {
    for i in items {
        roff.control("TP", [])
            .text(inline(&format!("**{}**", i.term)));
        roff.text(inline(i.text));
    }
}

/// Each setting's variable and what it sets: the flag, whose help is in OPTIONS, or, for a key
/// without one, what it does; how a list or a switch is written.
fn settings(roff: &mut Roff) {
    for option in swarm::cli::declared() {
        let Some(var) = option.var else { continue };
        let mut text = if option.flag.is_some() {
            format!("**--{}**.", option.key)
        } else {
            // The help's `code` in bold, as the pages write it.
            let help = option.help.split_whitespace().collect::<Vec<_>>().join(" ");
            let mut help = help.replace('`', "**");
            if let Some(first) = help.get(..1) {
                help.replace_range(..1, &first.to_lowercase());
            }
            format!("The key **{}** (no flag): {help}", option.key)
        };
        if let Some(form) = option.var_form {
            text = format!("{text} As a variable: {form}.");
        }
        roff.control("TP", []).text([bold(var)]);
        roff.text(inline(&text));
    }
}

/// Each example: what it does, then the command line, indented and in bold.
fn examples(roff: &mut Roff, items: &[Item]) {
    for i in items {
        roff.control("PP", []).text(inline(i.text));
        roff.control("RS", ["4"]).control("nf", []);
        for line in i.term.lines() {
            roff.text([bold(line)]);
        }
        roff.control("fi", []).control("RE", []);
    }
}

/// The SEE ALSO section: `pages`, and swarm(1) on every other page.
fn see_also(roff: &mut Roff, pages: &[&str], top: bool) {
    let mut names: Vec<&str> = Vec::new();
    if !top {
        names.push("swarm(1)");
    }
    names.extend(pages.iter().filter(|p| **p != "swarm(1)" || !top));
    names.dedup();
    roff.control("SH", ["SEE ALSO"]);
    let mut line = Vec::new();
    for (n, name) in names.iter().enumerate() {
        let (page, section) = name.split_once('(').unwrap_or((name, ""));
        if n > 0 {
            line.push(roman(", "));
        }
        line.push(bold(page));
        line.push(roman(format!("({section}")));
    }
    roff.text(line);
}

/// Text with `**bold**` and `_italic_` spans, for a line of roff. Spans do not nest; a lone
/// marker is text.
pub fn inline(text: &str) -> Vec<Inline> {
    let mut out = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let next = [("**", 0), ("_", 1)]
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
            out.push(roman(rest));
            break;
        };
        if start > 0 {
            out.push(roman(&rest[..start]));
        }
        let span = &rest[start + len..end];
        out.push(if kind == 0 { bold(span) } else { italic(span) });
        rest = &rest[end + len..];
    }
    out
}

/// Whether the `_` at `at` starts an italic span: at the start of the text, or after a space, an
/// opening bracket, a quote or a colon (`"_id_"`, `exec:_command_`).
fn opens_italic(text: &str, at: usize) -> bool {
    text[..at]
        .chars()
        .next_back()
        .is_none_or(|c| c.is_whitespace() || "([\":".contains(c))
}

/// The exit codes listed in the top command's `after_help` ("Exit codes:" then `  N   meaning`),
/// the same list `swarm --help` shows.
fn exit_codes(cmd: &clap::Command) -> Vec<(String, String)> {
    let text = cmd
        .get_after_help()
        .map(ToString::to_string)
        .unwrap_or_default();
    let mut codes = Vec::new();
    for line in text
        .lines()
        .skip_while(|l| !l.starts_with("Exit codes:"))
        .skip(1)
    {
        let line = line.trim();
        let Some((code, meaning)) = line.split_once(char::is_whitespace) else {
            break;
        };
        if code.parse::<u8>().is_err() {
            break;
        }
        codes.push((code.to_owned(), meaning.trim().to_owned()));
    }
    codes
}

/// `text` as roff paragraphs, one per block of lines between blank lines.
pub(crate) fn paragraphs(roff: &mut Roff, text: &str) {
    for block in text.split("\n\n") {
        let joined = block.split_whitespace().collect::<Vec<_>>().join(" ");
        roff.control("PP", []).text(inline(&joined));
    }
}

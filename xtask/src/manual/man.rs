//! The man pages: `man/swarm.1`, one page per command, and `man/swarm-tasks.5`.

use clap_mangen::roff::{Inline, Roff, bold, italic, roman};

use super::{Block, Section, Sections, Span, description, spans, tasks, written};

/// Every page of the manual: `(file name, contents)`, `swarm.1` first, then each command's page
/// in the order of the definition, then `swarm-tasks.5`. `cmd` is `swarm::cli::command()`.
pub fn pages(cmd: clap::Command) -> Vec<(String, Vec<u8>)> {
    // The `help` subcommand is clap's, not swarm's: no page for it (as `clap_mangen::generate_to`).
    let mut cmd = cmd.disable_help_subcommand(true);
    cmd.build();
    let mut out = Vec::new();
    command_pages(&cmd, &mut out);
    out.push(("swarm-tasks.5".to_owned(), tasks::man_page(&cmd)));
    out
}

/// The page of `cmd` and of each of its subcommands (subcommands get their display names,
/// `swarm-run`, from `build`).
fn command_pages(cmd: &clap::Command, out: &mut Vec<(String, Vec<u8>)>) {
    let man = clap_mangen::Man::new(cmd.clone());
    let name = man.get_filename();
    let sections = Sections::of(name.trim_end_matches(".1"));
    out.push((name, command_page(&man, cmd, sections)));
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        command_pages(sub, out);
    }
}

/// A page as `Man::render` makes it up to the subcommands (NAME, SYNOPSIS, DESCRIPTION with the
/// paragraphs of `sections` added, OPTIONS, SUBCOMMANDS), then the sections `written` makes.
#[expect(clippy::expect_used, reason = "writing into a Vec cannot fail")]
pub fn command_page(man: &clap_mangen::Man, cmd: &clap::Command, sections: &Sections) -> Vec<u8> {
    let page = man.get_filename();
    let page = page.trim_end_matches(".1");
    let mut out = Vec::new();
    let fail = "rendering a man page into memory";
    man.render_title(&mut out).expect(fail);
    man.render_name_section(&mut out).expect(fail);
    man.render_synopsis_section(&mut out).expect(fail);
    man.render_description_section(&mut out).expect(fail);
    let more = description(sections);
    if !more.is_empty() {
        let mut roff = Roff::new();
        for paragraph in &more {
            roff.control("PP", []).text(inline(paragraph));
        }
        roff.to_writer(&mut out).expect(fail);
    }
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(&mut out).expect(fail);
    }
    if cmd.get_subcommands().any(|s| !s.is_hide_set()) {
        man.render_subcommands_section(&mut out).expect(fail);
    }
    let mut roff = Roff::new();
    render(&mut roff, &written(page, sections));
    roff.to_writer(&mut out).expect(fail);
    if cmd.get_version().is_some() {
        man.render_version_section(&mut out).expect(fail);
    }
    out
}

/// Sections in roff: each title in capitals.
pub(super) fn render(roff: &mut Roff, sections: &[Section]) {
    for section in sections {
        roff.control("SH", [section.title.to_uppercase().as_str()]);
        for block in &section.blocks {
            match block {
                Block::Paragraph(text) => {
                    roff.control("PP", []).text(inline(text));
                }
                Block::Verbatim(text) => {
                    roff.control("RS", ["4"]).control("nf", []);
                    for line in text.lines() {
                        roff.text([roman(line)]);
                    }
                    roff.control("fi", []).control("RE", []);
                }
                Block::Terms(terms) => {
                    for term in terms {
                        roff.control("TP", [])
                            .text(inline(&format!("**{}**", term.term)));
                        for (n, paragraph) in term.text.iter().enumerate() {
                            if n > 0 {
                                roff.control("IP", []);
                            }
                            roff.text(inline(paragraph));
                        }
                    }
                }
                Block::Examples(_, examples) => {
                    for (text, lines) in examples {
                        // Without a text, the lines follow the paragraph before them.
                        if !text.is_empty() {
                            roff.control("PP", []).text(inline(&sentence(text)));
                        }
                        roff.control("RS", ["4"]).control("nf", []);
                        for line in lines.lines() {
                            roff.text([bold(line)]);
                        }
                        roff.control("fi", []).control("RE", []);
                    }
                }
                Block::Pages(names) => {
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
            }
        }
    }
}

/// Marked-up text (`**bold**`, `_italic_`, `` `code` ``, the last in bold), for a line of roff.
pub fn inline(text: &str) -> Vec<Inline> {
    spans(text)
        .into_iter()
        .map(|span| match span {
            Span::Text(text) => roman(text),
            Span::Bold(text) | Span::Code(text) => bold(text),
            Span::Italic(text) => italic(text),
        })
        .collect()
}

/// What an example does, with a full stop.
fn sentence(text: &str) -> String {
    if text.ends_with(['.', ':', '!', '?']) {
        text.to_owned()
    } else {
        format!("{text}.")
    }
}

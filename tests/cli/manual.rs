//! The manual's own rules (xtask/src/manual): every example is a command line swarm accepts,
//! every command has examples, every page with sections of its own is a command's, the markup
//! of its text, and the reference in docs/src/reference: every flag of a command's `--help` is on
//! its page, every page is in the book's summary, and every link names a file.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use xtask::manual::roff::{bold, italic, roman};
use xtask::manual::{Man, PAGES, Sections, command_page, inline};

/// The words of each command of a shell line (split at pipes, `&&`, `;`, redirections and
/// substitutions), quotes removed.
fn commands_of(line: &str) -> Vec<Vec<String>> {
    // A substitution in double quotes is a command of its own, words and all.
    let line = line.replace("\"$(", "$(").replace(")\"", ")");
    let mut commands = vec![Vec::new()];
    let mut word: Option<String> = None;
    let chars = line.chars();
    let mut quote = None;
    for c in chars {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (None, '"' | '\'') => {
                quote = Some(c);
                word.get_or_insert_default();
            }
            (None, ' ') => commands.last_mut().unwrap().extend(word.take()),
            (None, '|' | '&' | ';' | '>' | '<' | '(' | ')') => {
                commands.last_mut().unwrap().extend(word.take());
                commands.push(Vec::new());
            }
            (_, c) => word.get_or_insert_default().push(c),
        }
    }
    commands.last_mut().unwrap().extend(word);
    // A line quoted for later (`echo 'source <(swarm …)' >> ~/.bashrc`) holds commands too.
    let quoted: Vec<Vec<String>> = commands
        .iter()
        .flatten()
        .filter(|w| w.contains(' '))
        .flat_map(|w| commands_of(w))
        .collect();
    commands.extend(quoted);
    commands
}

#[test]
fn every_example_runs_a_command_line_swarm_accepts() {
    let mut checked = 0;
    for (command, examples) in swarm::cli::examples::all() {
        for example in examples {
            for line in example.line.lines() {
                let mut found = false;
                for words in commands_of(line) {
                    let Some(at) = words.iter().position(|w| w == "swarm") else {
                        continue;
                    };
                    found = true;
                    let words = &words[at..];
                    if let Err(e) = swarm::cli::command().try_get_matches_from(words) {
                        panic!("{command}: example {line:?}: {e}");
                    }
                    checked += 1;
                }
                assert!(found, "{command}: example {line:?} runs no swarm");
            }
        }
    }
    assert!(checked > 30, "{checked}");
}

#[test]
fn a_page_of_its_own_sections_shows_them_verbatim_where_indented() {
    let cmd = swarm::cli::command();
    let sections = Sections {
        page: "swarm",
        more: &[(
            "JSON OUTPUT",
            &[
                "One object:",
                "  {\"run\": {\"id\": \"…\"},\n   \"tasks\": []}",
            ],
        )],
        ..Sections::NONE
    };
    let page = command_page(&Man::new(cmd.clone()), &cmd, &sections);
    let page = String::from_utf8(page).unwrap();
    assert!(
        page.contains(
            ".SH \"JSON OUTPUT\"\n.PP\nOne object:\n.RS 4\n.nf\n{\"run\": {\"id\": \"…\"},\n \"tasks\": []}\n.fi\n.RE\n.SH \"EXIT STATUS\"\n"
        ),
        "{page}"
    );
}

#[test]
fn every_page_with_sections_is_a_command() {
    let names: Vec<String> = xtask::manual::pages(swarm::cli::command())
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    for page in PAGES {
        assert!(
            names.contains(&format!("{}.1", page.page)),
            "{} is no command's page: {names:?}",
            page.page
        );
    }
}

#[test]
fn inline_marks_bold_and_italic_but_not_underscores_in_words() {
    assert_eq!(
        inline("set **SWARM_JOBS** or _N_ (not a_b)"),
        vec![
            roman("set "),
            bold("SWARM_JOBS"),
            roman(" or "),
            italic("N"),
            roman(" (not a_b)")
        ]
    );
    assert_eq!(inline("no marks"), vec![roman("no marks")]);
    assert_eq!(
        inline("run `swarm resume`"),
        vec![roman("run "), bold("swarm resume")]
    );
}

/// Every command's words (`swarm`, `swarm queue add`) and its clap command, depth first.
fn commands() -> Vec<(String, clap::Command)> {
    fn walk(cmd: &clap::Command, words: &str, out: &mut Vec<(String, clap::Command)>) {
        out.push((words.to_owned(), cmd.clone()));
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            walk(sub, &format!("{words} {}", sub.get_name()), out);
        }
    }
    let mut cmd = swarm::cli::command().disable_help_subcommand(true);
    cmd.build();
    let mut out = Vec::new();
    walk(&cmd, "swarm", &mut out);
    out
}

#[test]
fn every_command_has_examples_and_exit_codes_and_each_is_a_command() {
    let words: Vec<String> = commands().into_iter().map(|(w, _)| w).collect();
    for command in &words {
        assert!(
            !swarm::cli::examples::of(command).is_empty(),
            "{command} has no examples"
        );
        assert!(!swarm::cli::exit_status::of(command).is_empty());
    }
    for (command, _) in swarm::cli::examples::all() {
        assert!(
            words.iter().any(|w| w == command),
            "{command} is no command"
        );
    }
}

/// The examples `--help` shows come first after the description, before the options.
#[test]
fn help_starts_with_the_usage_then_the_description_then_examples() {
    for (command, mut cmd) in commands() {
        for help in [cmd.render_help(), cmd.render_long_help()] {
            let help = help.to_string();
            assert!(help.starts_with("Usage: "), "{command}:\n{help}");
            let examples = help
                .find("Examples:\n")
                .unwrap_or_else(|| panic!("{command}: no examples:\n{help}"));
            let options = help.find("Options:\n").unwrap();
            assert!(examples < options, "{command}:\n{help}");
            let page = command.replace(' ', "-");
            assert!(
                help.contains(&format!("docs/src/reference/{page}.md")),
                "{command}: no pointer to its page:\n{help}"
            );
        }
    }
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn reference() -> PathBuf {
    root().join("docs/src/reference")
}

/// The flags of the lines of `help` that name options (`  -C, --directory <DIR>`, `      --json`):
/// `-C`, `--directory`, `--json`.
fn flags_in(help: &str) -> BTreeSet<String> {
    let mut flags = BTreeSet::new();
    for line in help.lines() {
        let indent = line.len() - line.trim_start().len();
        if ![2, 6].contains(&indent) || !line.trim_start().starts_with('-') {
            continue;
        }
        for word in line
            .trim_start()
            .split([' ', ','])
            .filter(|w| !w.is_empty())
        {
            let name = word.trim_start_matches('-');
            let dashes = word.len() - name.len();
            if !(1..=2).contains(&dashes)
                || name.is_empty()
                || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
            {
                break;
            }
            flags.insert(word.to_owned());
        }
    }
    flags
}

#[test]
fn every_flag_a_commands_help_prints_is_on_its_reference_page() {
    let mut checked = 0;
    for (command, mut cmd) in commands() {
        let page = command.replace(' ', "-");
        let path = reference().join(format!("{page}.md"));
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        // Each option of a page is a heading: ### `-C, --directory <DIR>`.
        let headings: Vec<String> = text
            .lines()
            .filter_map(|l| l.strip_prefix("### `"))
            .map(|l| format!("  {}", l.trim_end_matches('`')))
            .collect();
        let on_page = flags_in(&headings.join("\n"));
        let help = format!("{}\n{}", cmd.render_help(), cmd.render_long_help());
        let printed = flags_in(&help);
        assert!(printed.contains("--help"), "{command}: {printed:?}");
        for flag in printed {
            assert!(
                on_page.contains(&flag),
                "{command} --help prints {flag}, which {} does not give",
                path.display()
            );
            checked += 1;
        }
    }
    assert!(checked > 200, "{checked}");
}

/// Every Markdown file of `dir`.
fn markdown_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    files.sort();
    files
}

/// The destinations of the links of a Markdown text, as a Markdown reader finds them.
fn links(text: &str) -> Vec<String> {
    use pulldown_cmark::{Event, Parser, Tag};
    Parser::new(text)
        .filter_map(|event| match event {
            Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. }) => {
                Some(dest_url.to_string())
            }
            _ => None,
        })
        .collect()
}

#[test]
fn every_page_of_the_reference_is_in_the_books_summary() {
    let summary = root().join("docs/src/SUMMARY.md");
    let linked: BTreeSet<PathBuf> = links(&std::fs::read_to_string(&summary).unwrap())
        .into_iter()
        .map(|l| root().join("docs/src").join(l))
        .collect();
    let pages = markdown_files(&reference());
    assert!(pages.len() > 20, "{pages:?}");
    for page in pages {
        assert!(
            linked.contains(&page),
            "{} is not linked from docs/src/SUMMARY.md",
            page.display()
        );
    }
}

#[test]
fn every_link_of_the_reference_is_relative_and_names_a_file() {
    let mut checked = 0;
    for page in markdown_files(&reference()) {
        let text = std::fs::read_to_string(&page).unwrap();
        for link in links(&text) {
            assert!(
                !link.contains("://") && !link.starts_with('/'),
                "{}: {link} is not a relative link",
                page.display()
            );
            let file = link.split('#').next().unwrap();
            if file.is_empty() {
                continue;
            }
            assert!(
                page.parent().unwrap().join(file).is_file(),
                "{}: {link} names no file",
                page.display()
            );
            checked += 1;
        }
    }
    assert!(checked > 50, "{checked}");
}

/// Every mark of the reference renders (no `**` is left as text), and nothing in it is read as
/// HTML but the note that it is generated (a `<run>` of the text is text).
#[test]
fn every_page_of_the_reference_renders_its_marks_and_holds_no_html() {
    use pulldown_cmark::{Event, Parser};
    for page in markdown_files(&reference()) {
        let text = std::fs::read_to_string(&page).unwrap();
        for event in Parser::new(&text) {
            match event {
                Event::Text(text) => assert!(
                    !text.contains("**"),
                    "{}: {text:?} shows its marks",
                    page.display()
                ),
                Event::Html(html) | Event::InlineHtml(html) => assert!(
                    html.starts_with("<!-- Made by `cargo xtask generate`"),
                    "{}: {html:?} is read as HTML",
                    page.display()
                ),
                _ => {}
            }
        }
    }
}

/// The ids mdBook gives the headings of a Markdown text: the heading's text, lower case, spaces
/// as `-`, and only letters, digits, `-` and `_` kept.
fn anchors(text: &str) -> BTreeSet<String> {
    use pulldown_cmark::{Event, Parser, Tag, TagEnd};
    let mut ids = BTreeSet::new();
    let mut heading: Option<String> = None;
    for event in Parser::new(text) {
        match event {
            Event::Start(Tag::Heading { .. }) => heading = Some(String::new()),
            Event::End(TagEnd::Heading(_)) => {
                let text = heading.take().unwrap_or_default();
                let id: String = text
                    .trim()
                    .chars()
                    .filter_map(|c| match c {
                        c if c.is_whitespace() => Some('-'),
                        c if c.is_alphanumeric() || c == '-' || c == '_' => {
                            Some(c.to_ascii_lowercase())
                        }
                        _ => None,
                    })
                    .collect();
                ids.insert(id);
            }
            Event::Text(t) | Event::Code(t) => {
                if let Some(h) = heading.as_mut() {
                    h.push_str(&t);
                }
            }
            _ => {}
        }
    }
    ids
}

/// Every page of the manual's guide and design, the reference, and the top-level documents
/// that link into it.
fn documents() -> Vec<PathBuf> {
    let mut pages = markdown_files(&root().join("docs/src"));
    pages.extend(markdown_files(&reference()));
    pages.extend(
        ["README.md", "ARCHITECTURE.md", "benches/README.md"]
            .iter()
            .map(|p| root().join(p)),
    );
    pages
}

#[test]
fn every_relative_link_of_the_manual_and_the_readme_names_a_file_and_a_heading_there() {
    let mut checked = 0;
    for page in documents() {
        let text = std::fs::read_to_string(&page).unwrap();
        for link in links(&text) {
            if link.contains("://") {
                continue;
            }
            let (file, anchor) = link.split_once('#').unwrap_or((&link, ""));
            let target = if file.is_empty() {
                page.clone()
            } else {
                page.parent().unwrap().join(file)
            };
            assert!(target.exists(), "{}: {link} names no file", page.display());
            if !anchor.is_empty() {
                let there = std::fs::read_to_string(&target).unwrap();
                assert!(
                    anchors(&there).contains(anchor),
                    "{}: {link}: {} has no heading #{anchor}",
                    page.display(),
                    target.display()
                );
            }
            checked += 1;
        }
    }
    assert!(checked > 100, "{checked}");
    // The check does look.
    assert!(anchors("# The gate\n\n## Checkouts that build\n").contains("checkouts-that-build"));
    assert!(!anchors("## Checkouts that build\n").contains("the-gate"));
}

#[test]
fn every_page_of_the_manual_is_in_its_summary() {
    let summary = std::fs::read_to_string(root().join("docs/src/SUMMARY.md")).unwrap();
    let linked: BTreeSet<PathBuf> = links(&summary)
        .into_iter()
        .map(|l| root().join("docs/src").join(l))
        .collect();
    for page in markdown_files(&root().join("docs/src")) {
        if page.ends_with("SUMMARY.md") {
            continue;
        }
        assert!(
            linked.contains(&page),
            "{} is not in docs/src/SUMMARY.md: no reader of the manual finds it",
            page.display()
        );
    }
}

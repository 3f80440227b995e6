//! The manual's own rules (xtask/src/manual): every example on a page is a command line swarm
//! accepts, every page with sections of its own is a command's, and the markup of its text.

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
    for page in PAGES {
        for example in page.examples {
            for line in example.term.lines() {
                let mut found = false;
                for words in commands_of(line) {
                    let Some(at) = words.iter().position(|w| w == "swarm") else {
                        continue;
                    };
                    found = true;
                    let words = &words[at..];
                    if let Err(e) = swarm::cli::command().try_get_matches_from(words) {
                        panic!("{}: example {line:?}: {e}", page.page);
                    }
                    checked += 1;
                }
                assert!(found, "{}: example {line:?} runs no swarm", page.page);
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
    let page = command_page(&Man::new(cmd.clone()), &cmd, &sections, &[]);
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
}

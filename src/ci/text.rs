//! Values written into YAML and shell: quoted so that each reads back as exactly what it was.
//! YAML 1.1 readers (GitLab's, Kubernetes') take `on`, `yes` or `no` for booleans, so those
//! are quoted too.

use std::fmt::Write as _;

/// How wide the comments are.
const WIDTH: usize = 98;

pub(super) use crate::shell::word as shell_word;

/// Whether `text` is a plain YAML scalar that every reader takes for this very string.
fn plain(text: &str) -> bool {
    const WORDS: &[&str] = &["y", "n", "yes", "no", "on", "off", "true", "false", "null"];
    let Some(first) = text.chars().next() else {
        return false;
    };
    (first.is_ascii_alphabetic() || first == '/' || first == '_')
        && !text.ends_with(' ')
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || " _./-=+@%':".contains(c))
        && !text.contains(": ")
        && !text.ends_with(':')
        && !WORDS.iter().any(|w| w.eq_ignore_ascii_case(text))
}

/// `text` as a YAML scalar on one line: plain when that reads back as the same string, else
/// double-quoted.
pub(super) fn scalar(text: &str) -> String {
    if plain(text) {
        return text.to_owned();
    }
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `script` as the value after a key or a `- ` at column `indent`: plain on the same line when
/// it is one plain line, else a literal block (`|`) indented two columns further. The result
/// starts with the space after the colon and has no final newline.
pub(super) fn block(script: &str, indent: usize) -> String {
    let script = script.trim_end();
    if !script.contains('\n') && plain(script) {
        return format!(" {script}");
    }
    let pad = " ".repeat(indent + 2);
    let mut out = String::from(" |");
    for line in script.lines() {
        out.push('\n');
        if !line.is_empty() {
            out.push_str(&pad);
            out.push_str(line);
        }
    }
    out
}

/// `paragraph` as YAML comment lines, wrapped; one that starts with two spaces is kept as it
/// is, line for line.
pub(super) fn comment(paragraph: &str) -> String {
    let mut out = String::new();
    if paragraph.starts_with("  ") {
        for line in paragraph.lines() {
            let _ = writeln!(out, "# {line}");
        }
        return out;
    }
    let mut line = String::from("#");
    for word in paragraph.split_whitespace() {
        if line.len() + 1 + word.len() > WIDTH && line != "#" {
            out.push_str(&line);
            out.push('\n');
            line = String::from("#");
        }
        line.push(' ');
        line.push_str(word);
    }
    out.push_str(&line);
    out.push('\n');
    out
}

/// Sequence items `[1, 2, …, n]` as a YAML flow sequence, wrapped at the comment width, its
/// continuation lines indented to `indent`.
pub(super) fn numbers(n: u16, indent: usize) -> String {
    let mut out = String::from("[");
    let mut line_len = indent + 1;
    for i in 1..=n {
        let item = if i == n {
            format!("{i}]")
        } else {
            format!("{i},")
        };
        if line_len + item.len() + 1 > WIDTH {
            out.push('\n');
            out.push_str(&" ".repeat(indent + 1));
            line_len = indent + 1;
        } else if i > 1 {
            out.push(' ');
            line_len += 1;
        }
        out.push_str(&item);
        line_len += item.len();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{block, comment, numbers, scalar};

    #[test]
    fn scalars_that_a_reader_would_take_for_something_else_are_quoted() {
        assert_eq!(scalar("ubuntu-latest"), "ubuntu-latest");
        assert_eq!(scalar("plans/nightly.jsonl"), "plans/nightly.jsonl");
        assert_eq!(scalar("rust:1"), "rust:1");
        assert_eq!(scalar("Push the run's branches"), "Push the run's branches");
        for (value, quoted) in [
            ("on", "\"on\""),
            ("No", "\"No\""),
            ("3", "\"3\""),
            ("", "\"\""),
            ("a: b", "\"a: b\""),
            ("a:", "\"a:\""),
            ("say \"hi\"\\", "\"say \\\"hi\\\"\\\\\""),
            ("two\nlines", "\"two\\nlines\""),
            ("# not a comment", "\"# not a comment\""),
            ("'quoted'", "\"'quoted'\""),
            ("${{ secrets.X }}", "\"${{ secrets.X }}\""),
        ] {
            assert_eq!(scalar(value), quoted, "{value:?}");
        }
    }

    #[test]
    fn a_script_is_plain_when_it_can_be_else_a_literal_block() {
        assert_eq!(
            block("swarm worker --remote origin", 4),
            " swarm worker --remote origin"
        );
        assert_eq!(
            block("a \"$X\" | b\n\n  c\n", 4),
            " |\n      a \"$X\" | b\n\n        c"
        );
    }

    #[test]
    fn comments_wrap_and_keep_indented_paragraphs() {
        let long = "word ".repeat(40);
        let text = comment(&long);
        assert!(
            text.lines().all(|l| l.len() <= 98 && l.starts_with("# ")),
            "{text}"
        );
        assert_eq!(
            comment("  kubectl a \\\n    b"),
            "#   kubectl a \\\n#     b\n"
        );
    }

    #[test]
    fn numbers_wrap_inside_the_brackets() {
        assert_eq!(numbers(3, 8), "[1, 2, 3]");
        let many = numbers(256, 16);
        assert!(
            many.starts_with("[1, 2,") && many.ends_with("255, 256]"),
            "{many}"
        );
        for (i, line) in many.lines().enumerate() {
            let column = if i == 0 { 16 } else { 0 };
            assert!(column + line.len() <= 98, "{many}");
            assert!(i == 0 || line.starts_with(&" ".repeat(17)), "{many}");
        }
    }
}

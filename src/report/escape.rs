//! Text from goals, titles, errors and agents, made safe for where it lands in a report or a
//! graph: Markdown prose, a Markdown table cell, a code span or block, a Mermaid label, a DOT
//! label. Pure functions; each says what it leaves alone.

/// `text` as Markdown prose, on one line: shown literally, never read as markup or HTML.
/// `<`, `>` and `&` become entities (a Markdown renderer would take `<main>` for a tag and show
/// nothing); the characters that start emphasis, code, links or headings get a backslash.
pub fn markdown(text: &str) -> String {
    let line = crate::ui::one_line(text, usize::MAX);
    let chars: Vec<char> = line.chars().collect();
    let mut out = String::with_capacity(line.len());
    for (i, &c) in chars.iter().enumerate() {
        let word = |at: Option<&char>| at.is_some_and(|c| c.is_alphanumeric());
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            // Between two letters or digits `_` never emphasises, so `GITHUB_TOKEN` stays
            // as it is (and can be searched for in the file).
            '_' if i > 0 && word(chars.get(i - 1)) && word(chars.get(i + 1)) => out.push(c),
            '\\' | '`' | '*' | '_' | '[' | ']' | '#' | '|' | '~' | '!' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// `text` as an inline code span: shown exactly, whatever backticks it holds (the fence is one
/// backtick longer than its longest run of them, with a space where the text starts or ends
/// with one).
pub fn code(text: &str) -> String {
    let line = crate::ui::one_line(text, usize::MAX);
    let fence = "`".repeat(longest_run(&line, '`') + 1);
    let pad = if line.starts_with('`') || line.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{line}{pad}{fence}")
}

/// `lines` as a fenced code block (ending in a newline), indented by `indent`: its fence is
/// longer than any run of backticks in them, so nothing in them ends it.
pub fn code_block(lines: &[String], indent: &str) -> String {
    let longest = lines.iter().map(|l| longest_run(l, '`')).max().unwrap_or(0);
    let fence = "`".repeat((longest + 1).max(3));
    let mut out = format!("{indent}{fence}text\n");
    for l in lines {
        out.push_str(indent);
        out.push_str(l);
        out.push('\n');
    }
    out.push_str(indent);
    out.push_str(&fence);
    out.push('\n');
    out
}

/// `text` for a quoted Mermaid label (`id["…"]`), on one line: Mermaid's entity codes for what
/// would end the label or be read as HTML (`"`, `<`, `>`, `&`) and for `#`, which starts an
/// entity code; a backtick, which would make it a Markdown string; `|`; brackets and the
/// rest are safe inside the quotes.
pub fn mermaid(text: &str) -> String {
    let line = crate::ui::one_line(text, usize::MAX);
    let mut out = String::with_capacity(line.len());
    for c in line.chars() {
        match c {
            '"' => out.push_str("#quot;"),
            '<' => out.push_str("#lt;"),
            '>' => out.push_str("#gt;"),
            '&' => out.push_str("#amp;"),
            '#' => out.push_str("#35;"),
            '`' => out.push_str("#96;"),
            // Safe inside the quotes, but what Mermaid reads as an edge's label outside them.
            '|' => out.push_str("#124;"),
            c => out.push(c),
        }
    }
    out
}

/// `text` for the inside of a quoted DOT string, on one line: `"` and `\` get a backslash
/// (a backslash would otherwise start an escape of Graphviz's own, like `\n`).
pub fn dot(text: &str) -> String {
    let line = crate::ui::one_line(text, usize::MAX);
    let mut out = String::with_capacity(line.len());
    for c in line.chars() {
        if matches!(c, '"' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// `text` for XML and HTML, in text or in a quoted attribute: `&`, `<`, `>`, `"` and `'`
/// become entities, and characters XML 1.0 does not allow (most control characters) go.
pub fn xml(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if u32::from(c) < 0x20 || matches!(c, '\u{FFFE}' | '\u{FFFF}') => {}
            c => out.push(c),
        }
    }
    out
}

fn longest_run(text: &str, of: char) -> usize {
    let (mut longest, mut run) = (0, 0);
    for c in text.chars() {
        run = if c == of { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    longest
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOSTILE: &str = "Keep <main> & Vec<String> | `x` *b* _i_ [l](u) #h \\ \"q\"\nnext";

    #[test]
    fn markdown_shows_tags_markup_and_pipes_literally_on_one_line() {
        assert_eq!(
            markdown(HOSTILE),
            "Keep &lt;main&gt; &amp; Vec&lt;String&gt; \\| \\`x\\` \\*b\\* \\_i\\_ \\[l\\](u) \\#h \\\\ \"q\" next"
        );
        assert_eq!(markdown("plain words"), "plain words");
        assert_eq!(markdown("GITHUB_TOKEN _x_ a_"), "GITHUB_TOKEN \\_x\\_ a\\_");
        assert_eq!(markdown("a|b\nc"), "a\\|b c");
        assert_eq!(
            markdown("<script>alert(1)</script>"),
            "&lt;script&gt;alert(1)&lt;/script&gt;"
        );
    }

    #[test]
    fn xml_makes_entities_of_markup_and_quotes_and_drops_control_characters() {
        assert_eq!(
            xml("<a href='x'>\"Tom\" & co</a>\u{1b}[31m\u{7}"),
            "&lt;a href=&#39;x&#39;&gt;&quot;Tom&quot; &amp; co&lt;/a&gt;[31m"
        );
        assert_eq!(xml("two\nlines\tand é"), "two\nlines\tand é");
    }

    #[test]
    fn a_code_span_outfences_the_backticks_it_holds() {
        assert_eq!(code("src/lib.rs"), "`src/lib.rs`");
        assert_eq!(code("a`b"), "``a`b``");
        assert_eq!(code("`x``"), "``` `x`` ```");
    }

    #[test]
    fn a_code_block_outfences_the_backticks_it_holds() {
        let lines = vec!["ok".to_owned(), "````".to_owned()];
        assert_eq!(
            code_block(&lines, "  "),
            "  `````text\n  ok\n  ````\n  `````\n"
        );
        assert_eq!(code_block(&["x".to_owned()], ""), "```text\nx\n```\n");
    }

    #[test]
    fn mermaid_labels_use_entity_codes_for_what_would_end_or_break_them() {
        assert_eq!(
            mermaid("Keep <main> & \"Vec<String>\" #1 `md` [a] (b) {c} |x|"),
            "Keep #lt;main#gt; #amp; #quot;Vec#lt;String#gt;#quot; #35;1 #96;md#96; [a] (b) {c} #124;x#124;"
        );
        assert_eq!(mermaid("two\nlines"), "two lines");
        // No `"`, `<`, `>` or backtick survives, so nothing ends the label or becomes HTML.
        let out = mermaid(HOSTILE);
        assert!(!out.contains(['"', '<', '>', '`']), "{out}");
    }

    #[test]
    fn dot_labels_escape_quotes_and_backslashes() {
        assert_eq!(dot(r#"say "hi" \n <b>"#), r#"say \"hi\" \\n <b>"#);
        assert_eq!(dot("two\nlines"), "two lines");
        let out = dot(HOSTILE);
        // Every quote is escaped: removing the escaped ones leaves none.
        assert!(
            !out.replace("\\\\", "").replace("\\\"", "").contains('"'),
            "{out}"
        );
    }
}

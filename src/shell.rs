//! Text as one word of a POSIX shell command: for the commands swarm prints for its users to
//! run and writes into CI files, each read back by a shell as exactly what it was.

use std::fmt::Write as _;

/// `word` as one shell word on one line: as it is when that is safe, else in single quotes, or
/// for a word with a newline or another control character, in bash's `$'…'`.
pub(crate) fn word(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-./:=@%+,".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        return word.to_owned();
    }
    if !word.chars().any(char::is_control) {
        return format!("'{}'", word.replace('\'', r"'\''"));
    }
    let mut out = String::from("$'");
    for c in word.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(out, "\\x{:02x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

#[cfg(test)]
mod tests {
    use super::word;

    #[test]
    fn shell_words_are_quoted_unless_plain() {
        assert_eq!(word("origin"), "origin");
        assert_eq!(word("git@host:o/r.git"), "git@host:o/r.git");
        assert_eq!(word("it's"), r"'it'\''s'");
        assert_eq!(word(""), "''");
        assert_eq!(word("a\nb's \\"), r"$'a\nb\'s \\'");
    }
}

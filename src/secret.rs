//! Secrets: the values that must never be written anywhere (the API key, and the value of every
//! environment variable whose name contains KEY, TOKEN or SECRET), and the one function that
//! hides them in text before it reaches a transcript, the board, a report or the terminal.

use std::borrow::Cow;
use std::sync::OnceLock;

/// Shorter values are left alone: hiding `1` or `yes` would garble everything.
const MIN_SECRET_LEN: usize = 6;

pub const MASK: &str = "[redacted]";

/// What names a secret given by a flag or a config file rather than a variable.
const THE_API_KEY: &str = "the API key";

/// Each secret with the name of the variable it came from.
static SECRETS: OnceLock<Vec<(String, String)>> = OnceLock::new();

pub(crate) fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    ["KEY", "TOKEN", "SECRET"].iter().any(|w| upper.contains(w))
}

fn collect(extra: &[&str]) -> Vec<(String, String)> {
    let mut values: Vec<(String, String)> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .filter(|(k, _)| is_secret_name(k))
        .chain(
            extra
                .iter()
                .map(|s| (THE_API_KEY.to_owned(), (*s).to_owned())),
        )
        .filter(|(_, v)| v.len() >= MIN_SECRET_LEN)
        .collect();
    // Longest first, so a secret containing another is hidden whole.
    values.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then_with(|| a.0.cmp(&b.0)));
    values.dedup_by(|a, b| a.1 == b.1);
    values
}

/// Learns the secrets: the environment's, plus `extra` (e.g. an API key given as a flag). The
/// first call wins; later calls change nothing.
pub fn init(extra: &[&str]) {
    let _ = SECRETS.set(collect(extra));
}

/// Every secret, with the name of the variable that holds it.
pub fn named() -> &'static [(String, String)] {
    SECRETS.get_or_init(|| collect(&[]))
}

/// `text` with every secret replaced by `[redacted]`.
pub fn redact(text: &str) -> Cow<'_, str> {
    let found: Vec<&String> = named()
        .iter()
        .map(|(_, v)| v)
        .filter(|s| text.contains(s.as_str()))
        .collect();
    if found.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = text.to_owned();
    for s in found {
        out = out.replace(s.as_str(), MASK);
    }
    Cow::Owned(out)
}

/// Hides secrets in a file in place (a transcript written by a child process).
pub fn redact_file(path: &std::path::Path) -> std::io::Result<()> {
    if named().is_empty() {
        return Ok(());
    }
    let bytes = std::fs::read(path)?;
    let text = String::from_utf8_lossy(&bytes);
    if let Cow::Owned(clean) = redact(&text) {
        std::fs::write(path, clean)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_with_key_token_or_secret_are_secret() {
        assert!(is_secret_name("OPENAI_API_KEY"));
        assert!(is_secret_name("foo_token"));
        assert!(is_secret_name("MY_SECRET_THING"));
        assert!(!is_secret_name("PATH"));
    }
}

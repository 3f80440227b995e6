//! Secrets: the values that must never be written anywhere (the API key, and the value of every
//! environment variable whose name contains KEY, TOKEN or SECRET), and what hides them before
//! they reach a transcript, the board, a report or the terminal: in text (`redact`), and in a
//! JSON value's strings (`redact_json`), which stays valid JSON.

use std::borrow::Cow;
use std::sync::OnceLock;

/// Shorter values are left alone: hiding `1` or `yes` would garble everything.
const MIN_SECRET_LEN: usize = 6;

pub const MASK: &str = "[redacted]";

/// What names a secret given by a flag or a config file rather than a variable.
const THE_API_KEY: &str = "the API key";

/// A secret held in memory (a forge's token): its `Debug` and `Display` show `[redacted]`, so
/// no error, log line or debug print of what holds it can show its value.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The value, for the one place it is sent.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(MASK)
    }
}

impl std::fmt::Display for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(MASK)
    }
}

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

/// Every form a secret is hidden in, longest first: its value and, where that differs, its
/// value as it reads inside a JSON string (a secret holding `"` or `\` shows so in a JSON line
/// of a transcript).
fn forms() -> &'static [String] {
    static FORMS: OnceLock<Vec<String>> = OnceLock::new();
    FORMS.get_or_init(|| forms_of(named().iter().map(|(_, v)| v.as_str())))
}

fn forms_of<'a>(secrets: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut forms: Vec<String> = secrets
        .flat_map(|v| [v.to_owned(), in_json_string(v)])
        .collect();
    forms.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    forms.dedup();
    forms
}

/// `value` as it reads between the quotes of a JSON string.
fn in_json_string(value: &str) -> String {
    let quoted = serde_json::Value::from(value).to_string();
    quoted[1..quoted.len() - 1].to_owned()
}

/// `text` with every secret replaced by `[redacted]`.
pub fn redact(text: &str) -> Cow<'_, str> {
    hide(text, forms())
}

fn hide<'t>(text: &'t str, forms: &[String]) -> Cow<'t, str> {
    let found: Vec<&String> = forms.iter().filter(|s| text.contains(s.as_str())).collect();
    if found.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = text.to_owned();
    for s in found {
        out = out.replace(s.as_str(), MASK);
    }
    Cow::Owned(out)
}

/// Hides every secret in `value`'s strings and object keys. The structure is kept, so the
/// result is valid JSON whatever characters a secret holds (hiding secrets in the JSON text
/// instead would miss one holding `"` or `\`, or break the text). Numbers, booleans and nulls
/// are left as they are: they are counts, times and flags, not values of variables.
pub fn redact_json(value: &mut serde_json::Value) {
    hide_in_json(value, forms());
}

fn hide_in_json(value: &mut serde_json::Value, forms: &[String]) {
    use serde_json::Value;
    match value {
        Value::String(text) => {
            let clean = match hide(text, forms) {
                Cow::Owned(clean) => Some(clean),
                Cow::Borrowed(_) => None,
            };
            if let Some(clean) = clean {
                *text = clean;
            }
        }
        Value::Array(items) => {
            for item in items {
                hide_in_json(item, forms);
            }
        }
        Value::Object(map) => {
            if map.keys().any(|k| matches!(hide(k, forms), Cow::Owned(_))) {
                *map = std::mem::take(map)
                    .into_iter()
                    .map(|(k, v)| (hide(&k, forms).into_owned(), v))
                    .collect();
            }
            for item in map.values_mut() {
                hide_in_json(item, forms);
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// Hides secrets in place in a file open to read and write (a transcript written by a child
/// process).
pub fn redact_in(file: &mut std::fs::File) -> std::io::Result<()> {
    use std::io::{Read as _, Seek as _, Write as _};
    if named().is_empty() {
        return Ok(());
    }
    file.rewind()?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    let text = String::from_utf8_lossy(&bytes);
    if let Cow::Owned(clean) = redact(&text) {
        file.rewind()?;
        file.write_all(clean.as_bytes())?;
        file.set_len(clean.len() as u64)?;
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

    const AWKWARD: &str = r#"ab"cd\ef-123456"#;

    #[test]
    fn a_secret_holding_quotes_and_backslashes_is_hidden_in_json_and_the_json_still_parses() {
        let forms = forms_of([AWKWARD, "plain-secret"].into_iter());
        let mut value = serde_json::json!({
            "kind": "failed",
            "error": format!("curl -H 'Authorization: {AWKWARD}' failed"),
            "command": ["sh", "-c", format!("echo {AWKWARD}")],
            AWKWARD: {"nested": [format!("x{AWKWARD}y"), 42, null, true]},
            "plain": "uses plain-secret here",
            "tokens": 123_456,
        });

        hide_in_json(&mut value, &forms);

        let text = value.to_string();
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back, value);
        for leak in [AWKWARD, r#"ab\"cd\\ef"#, r"cd\ef", "plain-secret"] {
            assert!(!text.contains(leak), "{leak} in {text}");
        }
        assert_eq!(value["error"], "curl -H 'Authorization: [redacted]' failed");
        assert_eq!(value["command"][2], "echo [redacted]");
        assert_eq!(value["[redacted]"]["nested"][0], "x[redacted]y");
        assert_eq!(value["[redacted]"]["nested"][1], 42);
        assert_eq!(value["plain"], "uses [redacted] here");
        assert_eq!(value["tokens"], 123_456);
    }

    #[test]
    fn a_secret_is_hidden_in_json_text_too() {
        let forms = forms_of([AWKWARD].into_iter());
        let line = serde_json::json!({"params": {"header": AWKWARD}}).to_string();
        assert!(line.contains(r#"ab\"cd\\ef"#), "{line}");

        let shown = hide(&line, &forms);

        assert_eq!(shown, r#"{"params":{"header":"[redacted]"}}"#);
        assert_eq!(hide(AWKWARD, &forms), MASK);
    }
}

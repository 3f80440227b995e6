//! Checking a config file's table before its values are read: every unknown key (with the known
//! key it is nearest to, when one is near) and every value of the wrong shape (said in plain
//! words), each with the span it is at. What is reported is taken out of the table, so the rest
//! can still be read and its values checked: one file's problems are all found at once.

use std::ops::Range;

use toml::de::{DeTable, DeValue};

use super::key::Key;
use crate::near;

/// A problem of a file: the span it is at and what is wrong.
pub(super) type SpannedProblem = (Range<usize>, String);

/// What a value in a config file must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Shape {
    /// A whole number that fits in 32 bits.
    Count,
    /// A whole number that fits in 64 bits (token counts).
    Tokens,
    Text,
    /// A string that names an agent (or a pool); agent profiles are tables of their own.
    Agent,
    /// A string that is a duration; whether it reads as one is checked with the other values.
    Duration,
    /// A string that is a size (`"64MiB"`), checked the same way.
    Size,
    Path,
    /// A list of strings.
    Strings,
    /// `true` or `false`.
    Switch,
    /// One of these strings.
    OneOf(&'static [&'static str]),
    /// A table of strings: `set-env = { NAME = "value" }`.
    Variables,
}

impl Shape {
    /// What a value of this shape is, in a user's words: "a whole number (0 or more)".
    pub(super) fn words(self) -> String {
        match self {
            Shape::Count | Shape::Tokens => "a whole number (0 or more)".to_owned(),
            Shape::Text | Shape::Agent => "a string".to_owned(),
            Shape::Duration => "a duration like \"90s\"".to_owned(),
            Shape::Size => "a size like \"64MiB\"".to_owned(),
            Shape::Path => "a path (a string)".to_owned(),
            Shape::Strings => "a list of strings".to_owned(),
            Shape::Switch => "true or false".to_owned(),
            Shape::OneOf(values) => either(values),
            Shape::Variables => "a table of strings (NAME = \"value\")".to_owned(),
        }
    }

    /// Why `value` is not of this shape, when it is not: "must be …, not …".
    fn mismatch(self, value: &DeValue<'_>) -> Option<String> {
        let words = self.words();
        let not = found(value);
        match (self, value) {
            (Shape::Count, DeValue::Integer(n)) => count(n, u64::from(u32::MAX)),
            (Shape::Tokens, DeValue::Integer(n)) => count(n, u64::MAX),
            (
                Shape::Text | Shape::Agent | Shape::Duration | Shape::Size | Shape::Path,
                DeValue::String(_),
            )
            | (Shape::Switch, DeValue::Boolean(_)) => None,
            (Shape::Agent, DeValue::Table(_)) => Some(format!(
                "must be {words}, not {not}; agent profiles are [agents.NAME] tables"
            )),
            (Shape::Strings, DeValue::Array(items))
                if items.iter().all(|i| i.get_ref().is_str()) =>
            {
                None
            }
            // A single string where a list is wanted: show the list it likely meant.
            (Shape::Strings, DeValue::String(s)) => Some(format!(
                "must be {words}, not {not} (write [{}])",
                quoted(s)
            )),
            (Shape::Variables, DeValue::Table(vars)) => {
                let (name, v) = vars.iter().find(|(_, v)| !v.get_ref().is_str())?;
                let name = name.get_ref();
                Some(format!(
                    "must be {words}; `{name}` is {}",
                    found(v.get_ref())
                ))
            }
            (Shape::OneOf(values), DeValue::String(s)) if values.contains(&s.as_ref()) => None,
            (Shape::OneOf(values), DeValue::String(s)) => {
                let mean = values
                    .iter()
                    .find(|v| near::is_near(s, v))
                    .map_or_else(String::new, |v| format!("; did you mean \"{v}\"?"));
                Some(format!("must be {words}, not {not}{mean}"))
            }
            _ => Some(format!("must be {words}, not {not}")),
        }
    }
}

/// A whole number from 0 to `max`, or why `n` is not one.
fn count(n: &toml::de::DeInteger<'_>, max: u64) -> Option<String> {
    let words = Shape::Count.words();
    match i128::from_str_radix(n.as_str(), n.radix()) {
        Ok(v) if v < 0 => Some(format!("must be {words}, not {n}")),
        Ok(v) if v <= i128::from(max) => None,
        _ => Some(format!("must be {words} up to {max}, not {n}")),
    }
}

/// `"a", "b" or "c"`.
fn either(values: &[&str]) -> String {
    let quoted: Vec<String> = values.iter().map(|v| format!("\"{v}\"")).collect();
    match quoted.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => quoted.concat(),
    }
}

/// A value as a user wrote it, or what kind of value it is: `"four"`, `3`, `a list`.
fn found(value: &DeValue<'_>) -> String {
    match value {
        DeValue::String(s) => quoted(s),
        DeValue::Integer(n) => n.to_string(),
        DeValue::Float(f) => f.to_string(),
        DeValue::Boolean(b) => b.to_string(),
        DeValue::Datetime(d) => format!("the date {d}"),
        DeValue::Array(items) => match items.iter().find(|i| !i.get_ref().is_str()) {
            Some(item) => format!("a list holding {}", found(item.get_ref())),
            None => "a list".to_owned(),
        },
        DeValue::Table(_) => "a table".to_owned(),
    }
}

/// A string in quotes, cut short when long (a value shown back need not be whole).
fn quoted(s: &str) -> String {
    const SHOWN: usize = 40;
    if s.chars().count() <= SHOWN {
        return format!("{s:?}");
    }
    let start: String = s.chars().take(SHOWN).collect();
    format!("{:?}", format!("{start}…"))
}

/// Checks a file's table, taking out each key it reports. `profile_keys` and `pool_keys` are the
/// keys of `[agents.NAME]` and `[pools.NAME]` tables with their shapes.
pub(super) fn check(
    table: &mut DeTable<'_>,
    profile_keys: &[(&str, Shape)],
    pool_keys: &[(&str, Shape)],
    problems: &mut Vec<SpannedProblem>,
) {
    let known: Vec<&str> = Key::ALL
        .into_iter()
        .filter(|k| k.in_files())
        .map(Key::name)
        .chain(["agents", "pools"])
        .collect();
    let mut refused = Vec::new();
    for (key, value) in table.iter_mut() {
        let name = key.get_ref().as_ref();
        let why = match name {
            "agents" => named_tables(value, "agent", "agents", profile_keys, problems),
            "pools" => named_tables(value, "pool", "pools", pool_keys, problems),
            _ => match Key::named(name) {
                Some(k) if k.in_files() => k
                    .shape()
                    .mismatch(value.get_ref())
                    .map(|why| (value.span(), format!("`{name}` {why}"))),
                _ => Some((key.span(), refused_key(name, &known))),
            },
        };
        if let Some(problem) = why {
            problems.push(problem);
            refused.push(name.to_owned());
        }
    }
    take_out(table, &refused);
}

/// Why a key that is not a file's key is refused: the API key and the per-run options are
/// refused with the reason, any other key as unknown.
fn refused_key(name: &str, known: &[&str]) -> String {
    let kebab = name.replace('_', "-");
    if kebab == "api-key" {
        return "`api-key` is not read from config files, so keys stay out of repositories; \
            set SWARM_API_KEY in the environment instead"
            .to_owned();
    }
    if Key::ALL
        .into_iter()
        .any(|k| !k.in_files() && k.name() == kebab)
    {
        return format!(
            "unknown key `{name}`: it belongs to one run, so pass --{kebab} on the command line"
        );
    }
    unknown(name, known)
}

/// Checks the tables under `[agents]` or `[pools]` (`what` names one in messages: "agent
/// `claude`: …"), taking out what it reports; the problem of `value` itself when it is not a
/// table of tables.
fn named_tables(
    value: &mut toml::Spanned<DeValue<'_>>,
    what: &str,
    key: &str,
    keys: &[(&str, Shape)],
    problems: &mut Vec<SpannedProblem>,
) -> Option<SpannedProblem> {
    let span = value.span();
    let DeValue::Table(tables) = value.get_mut() else {
        let why = format!(
            "`{key}` must be a table of {what}s ([{key}.NAME]), not {}",
            found(value.get_ref())
        );
        return Some((span, why));
    };
    let names: Vec<&str> = keys.iter().map(|(k, _)| *k).collect();
    let mut refused = Vec::new();
    for (name, table) in tables.iter_mut() {
        let name = name.get_ref().as_ref();
        let span = table.span();
        let DeValue::Table(table) = table.get_mut() else {
            let why = format!(
                "{what} `{name}` must be a table ([{key}.{name}]), not {}",
                found(table.get_ref())
            );
            problems.push((span, why));
            refused.push(name.to_owned());
            continue;
        };
        let mut wrong = Vec::new();
        for (k, v) in table.iter() {
            let k_name = k.get_ref().as_ref();
            let why = match keys.iter().find(|(known, _)| *known == k_name) {
                Some((_, shape)) => shape
                    .mismatch(v.get_ref())
                    .map(|why| (v.span(), format!("{what} `{name}`: `{k_name}` {why}"))),
                None => Some((
                    k.span(),
                    format!("{what} `{name}`: {}", unknown(k_name, &names)),
                )),
            };
            if let Some(problem) = why {
                problems.push(problem);
                wrong.push(k_name.to_owned());
            }
        }
        take_out(table, &wrong);
    }
    take_out(tables, &refused);
    None
}

/// Takes the keys named in `names` out of `table`.
fn take_out(table: &mut DeTable<'_>, names: &[String]) {
    if names.is_empty() {
        return;
    }
    *table = std::mem::take(table)
        .into_iter()
        .filter(|(key, _)| !names.iter().any(|n| n == key.get_ref().as_ref()))
        .collect();
}

/// "unknown key `incldue`; did you mean `include`?", or with the known keys when none is near.
pub(super) fn unknown(name: &str, known: &[&str]) -> String {
    match near::nearest(name, known) {
        Some(near) => format!("unknown key `{name}`; did you mean `{near}`?"),
        None => format!("unknown key `{name}` (known: {})", known.join(", ")),
    }
}

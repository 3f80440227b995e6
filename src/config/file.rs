//! Reading a config file: its syntax, its keys and the shapes of its values (`check`), then the
//! values of what is left, each problem with its line; what it sets becomes a [`Layer`].

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Deserialize as _;
use toml::de::{DeTable, DeValue};

use super::key::Key;
use super::layer::Layer;
use super::options::FileOptions;
use super::pool::{self, PoolDef};
use super::{BUILT_IN_PROFILES, PROFILE_KEYS, Place, Problem, ProfileSpec, Source, check};

/// A config file that was read.
pub(super) struct FileLayer {
    pub(super) path: PathBuf,
    pub(super) layer: Layer,
    pub(super) profiles: BTreeMap<String, ProfileSpec>,
    pub(super) pools: BTreeMap<String, PoolDef>,
}

/// Reads one config file, adding its problems to `problems`; `None` when there is no file or
/// it has problems. A missing file is a problem only when `named` says why it must exist.
pub(super) fn read_file(
    path: &Path,
    home: Option<&Path>,
    named: Option<&str>,
    problems: &mut Vec<Problem>,
) -> Option<FileLayer> {
    let problem = |message: String| Problem {
        place: Place::File(path.to_owned()),
        line: None,
        message,
    };
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if let Some(named) = named {
                problems.push(problem(format!("no such file ({named})")));
            }
            return None;
        }
        Err(e) => {
            problems.push(problem(format!("could not read the config file: {e}")));
            return None;
        }
    };
    let mut found = match parse_file(path, &text, home) {
        Ok(file) => return Some(file),
        Err(found) => found,
    };
    // A file's problems by line; those of the whole file first.
    found.sort_by_key(|(line, _)| *line);
    problems.extend(found.into_iter().map(|(line, message)| Problem {
        place: Place::File(path.to_owned()),
        line,
        message,
    }));
    None
}

/// Parses a config file's text, or finds every problem of it, each with its line: the syntax
/// (nothing more is checked when it is wrong), then every key and the type of every value,
/// then the values of what is left.
fn parse_file(
    path: &Path,
    text: &str,
    home: Option<&Path>,
) -> Result<FileLayer, Vec<(Option<usize>, String)>> {
    let line = |span: Option<Range<usize>>| span.map(|s| line_of(text, s.start));
    let (mut table, syntax) = DeTable::parse_recoverable(text);
    if !syntax.is_empty() {
        return Err(syntax
            .into_iter()
            .map(|e| (line(e.span()), e.message().to_owned()))
            .collect());
    }
    // As written, for what the checks take out.
    let written = table.get_ref().clone();
    let mut found = Vec::new();
    check::check(table.get_mut(), &PROFILE_KEYS, &pool::POOL_KEYS, &mut found);
    let mut problems: Vec<(Option<usize>, String)> = found
        .into_iter()
        .map(|(span, why)| (line(Some(span)), why))
        .collect();
    // What is left has the types the fields take, so this fails only on a bug in the checks.
    let parsed = match FileOptions::deserialize(toml::de::Deserializer::from(table.clone())) {
        Ok(parsed) => parsed,
        Err(e) => {
            problems.push((line(e.span()), e.message().to_owned()));
            return Err(problems);
        }
    };
    let table = table.get_ref();
    let line_at = |keys: &[&str]| line(value_span(table, keys));
    let mut at = |keys: &[&str], message: String| problems.push((line_at(keys), message));
    let (mut options, profiles, mut pools) = parsed.into_parts();
    let mut set = Vec::new();
    for key in Key::ALL.into_iter().filter(|k| k.in_files()) {
        if value_span(table, &[key.name()]).is_none() {
            continue;
        }
        match key.check(&options) {
            Ok(()) => set.push((key, Source::File(path.to_owned()))),
            Err(e) => at(&[key.name()], format!("`{}`: {e}", key.name())),
        }
    }
    for (name, spec) in &profiles {
        if spec.max_concurrent == Some(0) {
            at(
                &["agents", name, "max-concurrent"],
                format!("agent `{name}`: `max-concurrent` must be at least 1"),
            );
        }
        if !meant(&written, &["agents", name], "command")
            && !BUILT_IN_PROFILES.contains(&name.as_str())
        {
            at(
                &["agents", name],
                format!(
                    "agent `{name}` has no `command`: name the program to run (only the built-in {} need none)",
                    BUILT_IN_PROFILES.join(" and ")
                ),
            );
        }
    }
    for key in Key::ALL {
        key.resolve_paths(&mut options, &|given| resolve_path(given, path, home));
    }
    pools.retain(|name, _| {
        value_span(table, &["pools", name, "members"]).is_some()
            || !meant(&written, &["pools", name], "members")
    });
    let pools = pool::check(pools, path, line_at, &mut problems);
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(FileLayer {
        path: path.to_owned(),
        layer: Layer { options, set },
        profiles,
        pools,
    })
}

/// A path written in a file: `~/` is the home directory, a relative path is taken from the
/// file's directory (not from wherever swarm was started).
fn resolve_path(dir: &Path, file: &Path, home: Option<&Path>) -> PathBuf {
    if let (Ok(rest), Some(home)) = (dir.strip_prefix("~"), home) {
        return home.join(rest);
    }
    file.parent().unwrap_or(Path::new("")).join(dir)
}

/// Whether the table at `path` was written with `key` or with a key near it: when the checks
/// took that out (a value of the wrong type, a misspelt key), what they reported says why it is
/// missing, and its absence is not reported too.
fn meant(written: &DeTable<'_>, path: &[&str], key: &str) -> bool {
    table_at(written, path).is_some_and(|table| {
        table
            .iter()
            .any(|(k, _)| crate::near::nearest(k.get_ref(), &[key]).is_some())
    })
}

/// The table at `path` (table keys from the top), if there is one.
fn table_at<'t, 'i>(table: &'t DeTable<'i>, path: &[&str]) -> Option<&'t DeTable<'i>> {
    let Some((first, rest)) = path.split_first() else {
        return Some(table);
    };
    let (_, value) = table.iter().find(|(k, _)| k.get_ref().as_ref() == *first)?;
    match value.get_ref() {
        DeValue::Table(inner) => table_at(inner, rest),
        _ => None,
    }
}

/// The span of the value at `path` (table keys from the top).
fn value_span(table: &DeTable<'_>, path: &[&str]) -> Option<Range<usize>> {
    let (first, rest) = path.split_first()?;
    let value = table
        .iter()
        .find(|(k, _)| k.get_ref().as_ref() == *first)
        .map(|(_, v)| v)?;
    match (rest.is_empty(), value.get_ref()) {
        (true, _) => Some(value.span()),
        (false, DeValue::Table(inner)) => value_span(inner, rest),
        (false, _) => None,
    }
}

/// The 1-based line of a byte offset.
fn line_of(text: &str, offset: usize) -> usize {
    text.char_indices()
        .take_while(|&(i, _)| i < offset)
        .filter(|&(_, c)| c == '\n')
        .count()
        + 1
}

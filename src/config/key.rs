//! Run options by their key, as the layers use them: names, variables, defaults, and the
//! per-key copying, parsing and checking, all read from the options' declaration (`options`).
//! Also the checks an option's declaration may name.

use std::fmt;
use std::path::{Component, Path};

use serde_json::Value;

use super::Options;
use super::check::Shape;
use super::options::SPECS;
use super::setting::Resolve;

/// The most tasks (and writers) at once, wherever the number comes from: the flags are bounded
/// by it too.
pub(crate) const MAX_SLOTS: u32 = 1024;

/// One option's declaration, as `options`'s table makes it.
pub(super) struct Spec {
    pub(super) name: &'static str,
    pub(super) var: Option<&'static str>,
    pub(super) in_files: bool,
    pub(super) shape: Shape,
    pub(super) listed: usize,
    /// The key whose value applies when nothing sets this one.
    pub(super) follows: Option<&'static str>,
    pub(super) default: Option<fn() -> Value>,
    pub(super) is_set: fn(&Options) -> bool,
    pub(super) copy: fn(&Options, &mut Options),
    pub(super) parse: fn(&str, &mut Options) -> Result<(), String>,
    pub(super) check: fn(&Options) -> Result<(), String>,
    pub(super) resolve_paths: fn(&mut Options, &Resolve<'_>),
    pub(super) value: fn(&Options) -> Value,
}

/// A run option, by its key.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) struct Key(usize);

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Key {
    /// Every option, in the order `swarm config` lists them.
    pub(super) const ALL: [Key; SPECS.len()] = listed();

    fn spec(self) -> &'static Spec {
        &SPECS[self.0]
    }

    /// The option with this key.
    pub(super) fn named(name: &str) -> Option<Key> {
        Key::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The key in files, and the flag's long name.
    pub(super) fn name(self) -> &'static str {
        self.spec().name
    }

    /// The environment variable, for options that are not per run.
    pub(super) fn var(self) -> Option<&'static str> {
        self.spec().var
    }

    /// Per-run options are flags only.
    pub(super) fn in_files(self) -> bool {
        self.spec().in_files
    }

    /// What the option's value must be in a file.
    pub(super) fn shape(self) -> Shape {
        self.spec().shape
    }

    /// What applies when nothing sets the option; null when it stays unset, and for an option
    /// whose default is another's value (see [`Key::follows`]).
    pub(super) fn default_value(self) -> Value {
        self.spec().default.map_or(Value::Null, |default| default())
    }

    /// The option whose value applies when nothing sets this one: max-writers follows jobs.
    pub(super) fn follows(self) -> Option<Key> {
        self.spec().follows.and_then(Key::named)
    }

    /// Whether the command line gave this option (a flag left out is `None`, empty or false).
    pub(super) fn is_set(self, o: &Options) -> bool {
        (self.spec().is_set)(o)
    }

    /// Copies this option's value from one set of options to another.
    pub(super) fn copy(self, from: &Options, to: &mut Options) {
        (self.spec().copy)(from, to);
    }

    /// Sets this option from an environment variable's text.
    pub(super) fn parse_into(self, text: &str, o: &mut Options) -> Result<(), String> {
        (self.spec().parse)(text, o)
    }

    /// Checks what the types alone do not: the same bounds the flags have.
    pub(super) fn check(self, o: &Options) -> Result<(), String> {
        (self.spec().check)(o)
    }

    /// Makes a path in this option's value in `o`, as a file gave it, lead where `resolve`
    /// says: a path written in a file is taken from the file's directory.
    pub(super) fn resolve_paths(self, o: &mut Options, resolve: &Resolve<'_>) {
        (self.spec().resolve_paths)(o, resolve);
    }

    /// The option's value in `o` as JSON (null when unset); JSON scalars and arrays of strings
    /// are also TOML, so `describe` shows them as they would be written in a file.
    pub(super) fn value(self, o: &Options) -> Value {
        (self.spec().value)(o)
    }
}

/// The keys in the order of their `listed` places; a place given twice or past the end stops
/// the build.
const fn listed() -> [Key; SPECS.len()] {
    let mut all = [Key(usize::MAX); SPECS.len()];
    let mut i = 0;
    while i < SPECS.len() {
        let at = SPECS[i].listed;
        assert!(
            at < SPECS.len() && all[at].0 == usize::MAX,
            "each run option's `listed` is a place of its own in 0..the number of options"
        );
        all[at] = Key(i);
        i += 1;
    }
    all
}

/// A number of tasks at once: 1 to [`MAX_SLOTS`].
#[expect(
    clippy::trivially_copy_pass_by_ref,
    reason = "every check takes its value by reference"
)]
pub(super) fn slots(n: &u32) -> Result<(), String> {
    if (1..=MAX_SLOTS).contains(n) {
        Ok(())
    } else {
        Err(format!("{n} is out of range: use 1 to {MAX_SLOTS}"))
    }
}

/// A count of candidates: 1 (none) to `plan::candidates::MAX_CANDIDATES`.
#[expect(
    clippy::trivially_copy_pass_by_ref,
    reason = "every check takes its value by reference"
)]
pub(super) fn candidates(n: &u32) -> Result<(), String> {
    let most = crate::plan::candidates::MAX_CANDIDATES;
    if (1..=most).contains(n) {
        Ok(())
    } else {
        Err(format!("{n} is out of range: use 1 to {most}"))
    }
}

/// A duration longer than zero.
pub(super) fn duration(text: &str) -> Result<(), String> {
    crate::plan::parse_duration(text).map(drop)
}

/// A wait: a duration, or zero for none.
pub(super) fn wait(text: &str) -> Result<(), String> {
    crate::plan::parse_wait(text).map(drop)
}

/// Dollars per million tokens: prompt, cached and answer, or prompt and answer.
pub(super) fn price(text: &str) -> Result<(), String> {
    crate::llm::Price::parse(text).map(drop)
}

/// A size no smaller than a transcript needs.
pub(super) fn transcript_cap(text: &str) -> Result<(), String> {
    super::parse_transcript_cap(text).map(drop)
}

/// Paths in the repository, relative to its top: none absolute, none climbing out with `..`,
/// none into `.git` (swarm copies and keeps them in checkouts, outside of which nothing is
/// touched).
/// Paths of the machine: absolute, or `~/…` in the user's home.
pub(super) fn machine_paths(paths: &[String]) -> Result<(), String> {
    for p in paths {
        if !(Path::new(p).is_absolute() || p.starts_with("~/")) {
            return Err(format!(
                "`{p}` is relative: name it from `/`, or from your home as `~/…`"
            ));
        }
        if p == "/" {
            return Err("`/` is the whole machine: name directories or files in it".to_owned());
        }
    }
    Ok(())
}

/// The rungs of the conflict ladder, each named once; git's merge (`merge`) is always the
/// first and may be named first.
pub(super) fn rungs(names: &[String]) -> Result<(), String> {
    let rest = names.strip_prefix(&["merge".to_owned()]).unwrap_or(names);
    for (k, name) in rest.iter().enumerate() {
        match name.as_str() {
            "structural" | "redo" | "resolve" => {}
            "merge" => {
                return Err(
                    "`merge` (git's merge) is always the first rung: name it first, or not at all"
                        .to_owned(),
                );
            }
            other => {
                return Err(format!(
                    "`{other}` is not a rung: the rungs are `merge`, `structural`, `redo` and `resolve`"
                ));
            }
        }
        if rest[..k].contains(name) {
            return Err(format!("`{name}` is named twice"));
        }
    }
    Ok(())
}

pub(super) fn repo_paths(paths: &[String]) -> Result<(), String> {
    for p in paths {
        let path = Path::new(p);
        if p.trim().is_empty() {
            return Err(
                "an empty path: name a file or directory relative to the repository's top"
                    .to_owned(),
            );
        }
        if path.is_absolute() {
            return Err(format!(
                "`{p}` is absolute: name it relative to the repository's top"
            ));
        }
        if !path
            .components()
            .any(|c| matches!(c, Component::Normal(_) | Component::ParentDir))
        {
            return Err(format!(
                "`{p}` is the whole repository: name files or directories in it"
            ));
        }
        for c in path.components() {
            match c {
                Component::ParentDir => {
                    return Err(format!(
                        "`{p}` climbs out with `..`: name a path inside the repository"
                    ));
                }
                Component::Normal(n) if n == ".git" => {
                    return Err(format!("`{p}` is in .git: name a path of the working tree"));
                }
                _ => {}
            }
        }
    }
    Ok(())
}

//! What the layers need of an option's type, whatever the option: whether a layer sets it, how a
//! `SWARM_*` variable's text reads as it, and what its checks look at. An option's type is
//! `Option<T>` (unset: `None`), a list of strings (unset: empty) or a switch (unset: off).

use std::path::{Path, PathBuf};

use super::check::Shape;
use super::choice::{Choice, listed};

/// Where a path written in a config file leads.
pub(super) type Resolve<'a> = dyn Fn(&Path) -> PathBuf + 'a;

/// The type of an option's value in [`Options`](super::Options).
pub(super) trait Setting: Sized {
    /// What a check of the option looks at.
    type Checked: ?Sized;

    /// Whether a layer gives this value: the command line leaves an option out as `None`, an
    /// empty list or off.
    fn is_set(&self) -> bool;

    /// The value a variable's text says, or why it says none.
    fn from_var(text: &str) -> Result<Self, String>;

    /// What a check looks at, when there is something to check.
    fn checked(&self) -> Option<&Self::Checked>;

    /// The problem `check` finds in the value, if any.
    fn check(&self, check: impl Fn(&Self::Checked) -> Result<(), String>) -> Result<(), String> {
        self.checked().map_or(Ok(()), check)
    }

    /// The value as a file means it, when it is a path written there: `resolve` says where such
    /// a path leads.
    fn resolve_paths(&mut self, _resolve: &Resolve<'_>) {}
}

impl<T: FromVar> Setting for Option<T> {
    type Checked = T;

    fn is_set(&self) -> bool {
        self.is_some()
    }

    fn from_var(text: &str) -> Result<Self, String> {
        T::from_var(text.trim()).map(Some)
    }

    fn checked(&self) -> Option<&T> {
        self.as_ref()
    }

    fn resolve_paths(&mut self, resolve: &Resolve<'_>) {
        if let Some(value) = self.take() {
            *self = Some(value.resolved(resolve));
        }
    }
}

/// A list: a variable holds it comma-separated.
impl Setting for Vec<String> {
    type Checked = [String];

    fn is_set(&self) -> bool {
        !self.is_empty()
    }

    fn from_var(text: &str) -> Result<Self, String> {
        Ok(text
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(str::to_owned)
            .collect())
    }

    fn checked(&self) -> Option<&[String]> {
        Some(self)
    }
}

/// A switch: a variable says `1`/`true`/`yes`/`on` or `0`/`false`/`no`/`off`.
impl Setting for bool {
    type Checked = bool;

    fn is_set(&self) -> bool {
        *self
    }

    fn from_var(text: &str) -> Result<Self, String> {
        let text = text.trim();
        match text.to_ascii_lowercase().as_str() {
            "1" | "true" | "yes" | "on" => Ok(true),
            "0" | "false" | "no" | "off" => Ok(false),
            _ => Err(format!("`{text}` is not 1/true/yes or 0/false/no")),
        }
    }

    fn checked(&self) -> Option<&bool> {
        Some(self)
    }
}

/// A single value as a variable's (trimmed) text says it.
pub(super) trait FromVar: Sized {
    fn from_var(text: &str) -> Result<Self, String>;

    /// The value as a file means it: a path leads where `resolve` says; anything else is itself.
    fn resolved(self, _resolve: &Resolve<'_>) -> Self {
        self
    }
}

impl FromVar for u32 {
    fn from_var(text: &str) -> Result<Self, String> {
        number(text)
    }
}

impl FromVar for u64 {
    fn from_var(text: &str) -> Result<Self, String> {
        number(text)
    }
}

impl FromVar for String {
    fn from_var(text: &str) -> Result<Self, String> {
        Ok(text.to_owned())
    }
}

impl FromVar for PathBuf {
    fn from_var(text: &str) -> Result<Self, String> {
        Ok(PathBuf::from(text))
    }

    fn resolved(self, resolve: &Resolve<'_>) -> Self {
        resolve(&self)
    }
}

impl<C: Choice> FromVar for C {
    fn from_var(text: &str) -> Result<Self, String> {
        C::from_word(text).ok_or_else(|| format!("`{text}` is not {}", listed(C::WORDS)))
    }
}

fn number<T: std::str::FromStr>(text: &str) -> Result<T, String> {
    text.parse()
        .map_err(|_| format!("`{text}` is not {}", Shape::Count.words()))
}

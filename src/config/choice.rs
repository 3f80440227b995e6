//! Options whose value is one of a few words (`land`, `report-format`, `spawning`, `confine`). Each type
//! lists its words once, with what each means; files, variables, flags, the board's record and
//! the help all read them from there.

use serde::de::Error as _;

/// A value that is one of a few words.
pub(crate) trait Choice: Copy + PartialEq + 'static {
    /// Every value with its word and what it means, as the flag's help says it (empty when the
    /// words say enough), in the order the help lists them.
    const CHOICES: &'static [(Self, &'static str, &'static str)];
    /// The words alone, in the same order.
    const WORDS: &'static [&'static str];

    /// The word for this value: in files, variables, flags and the board's record.
    fn word(self) -> &'static str;

    /// The value a word names, in any case.
    fn from_word(word: &str) -> Option<Self> {
        Self::CHOICES
            .iter()
            .find(|(_, w, _)| w.eq_ignore_ascii_case(word))
            .map(|(value, _, _)| *value)
    }
}

/// Declares an enum of words: the enum, its [`Choice`] table, and its serde form (the word).
macro_rules! choice {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $( $(#[$variant_meta:meta])* $variant:ident = $word:literal: $help:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        $vis enum $name {
            $( $(#[$variant_meta])* $variant, )+
        }

        impl Choice for $name {
            const CHOICES: &'static [(Self, &'static str, &'static str)] =
                &[$( (Self::$variant, $word, $help) ),+];
            const WORDS: &'static [&'static str] = &[$($word),+];

            fn word(self) -> &'static str {
                match self {
                    $(Self::$variant => $word,)+
                }
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, to: S) -> Result<S::Ok, S::Error> {
                to.serialize_str(Choice::word(*self))
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(from: D) -> Result<Self, D::Error> {
                deserialize(from)
            }
        }
    };
}

/// A word of `C` as serde reads it; any other word is an error naming the words.
fn deserialize<'de, C: Choice, D: serde::Deserializer<'de>>(from: D) -> Result<C, D::Error> {
    let word = <String as serde::Deserialize>::deserialize(from)?;
    C::WORDS
        .iter()
        .position(|w| *w == word)
        .map(|at| C::CHOICES[at].0)
        .ok_or_else(|| D::Error::unknown_variant(&word, C::WORDS))
}

/// `a, b or c`: the words, as a message lists them.
pub(super) fn listed(words: &[&str]) -> String {
    match words.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => words.concat(),
    }
}

choice! {
    /// What to do with a run's finished integration branch.
    pub enum Land {
        Auto = "auto": "Fast-forward the user's branch when it is clean and still at the base; \
            else keep the branch",
        Branch = "branch": "Always keep the integration branch and say how to take it",
        None = "none": "Keep the integration branch and say nothing about it",
    }
}

choice! {
    /// How a run's result reaches the user (see the manual's "Delivery", docs/src/delivery.md).
    pub enum Deliver {
        Land = "land": "As --land says: landed on your branch (auto), or kept on the integration \
            branch",
        Branch = "branch": "Kept on the integration branch, which the summary names",
        Pr = "pr": "Pushed and opened as one pull request against your branch, its description \
            the run's report",
        PrPerTask = "pr-per-task": "Each merged writer pushed and opened as its own pull request \
            against your branch; writers that build on other writers go in one pull request of \
            the whole result",
        Stack = "stack": "Writers along a chain of dependencies opened as stacked pull requests, \
            each against the one it builds on; a writer that builds on several goes in one pull \
            request of the whole result",
    }
}

choice! {
    /// Which forge a remote is on, where its URL does not say.
    pub enum ForgeKind {
        GitHub = "github": "GitHub or GitHub Enterprise (its API at /api/v3 of the remote's host)",
        GitLab = "gitlab": "GitLab (its API at /api/v4 of the remote's host)",
    }
}

choice! {
    /// How a task with candidates picks the one it merges (see the manual's "Candidates"
    /// (docs/src/task-files.md)).
    #[derive(Default)]
    pub enum Pick {
        FirstGreen = "first-green": "The candidate whose check passed first",
        #[default]
        SmallestGreen = "smallest-green": "The green candidate with the fewest lines added and \
            removed",
        Judge = "judge": "The model is shown the green candidates' changes and says which, one \
            call per task",
    }
}

choice! {
    /// How a finished goal's run teaches lessons (see the manual's "Memory" (docs/src/memory.md)).
    #[derive(Default)]
    pub enum Lessons {
        #[default]
        Checks = "checks": "From the checks that failed and the merges that conflicted, with no \
            model call",
        Model = "model": "As checks, and one short call to the planner's model per finished \
            run distils up to 3 more",
    }
}

choice! {
    /// The form of the report `--final-out` writes.
    pub enum ReportFormat {
        Markdown = "markdown": "",
        Html = "html": "",
    }
}

choice! {
    /// Which tasks may add tasks while they run (see the manual's "Tasks that add tasks" (docs/src/task-files.md)).
    #[derive(Default)]
    pub enum Spawning {
        Off = "off": "No task adds tasks, whatever the plan says",
        #[default]
        Plan = "plan": "The tasks whose `spawn` allows it, up to what it allows",
        All = "all": "Every task, within max-children, max-depth, max-spawned and \
            spawns-per-minute",
    }
}

choice! {
    /// Whether the processes of tasks run confined by the kernel (see the manual's "What an
    /// agent can and cannot do to your machine", docs/src/checkouts.md).
    #[derive(Default)]
    pub enum Confine {
        #[default]
        Auto = "auto": "Confined where the kernel can (Landlock); said once and run unconfined where \
            it cannot",
        Require = "require": "Confined, or the run does not start (exit 2)",
        Off = "off": "Not confined: tasks run with all of your access",
    }
}

choice! {
    /// Which TCP connections confined tasks may make.
    #[derive(Default)]
    pub enum ConfineNet {
        #[default]
        Open = "open": "Any",
        Endpoint = "endpoint": "Only to the model endpoint's port and the task's own ports \
            (SWARM_PORTS), where the kernel can (Landlock ABI 4)",
    }
}

choice! {
    /// What swarm does when it foresees two running writers' changes conflicting.
    #[derive(Default)]
    pub enum Forecast {
        Off = "off": "Does not look",
        #[default]
        Watch = "watch": "Says so: an event, a line, the report",
        Tell = "tell": "Says so, and tells the later writer's agent in its notes file \
            (SWARM_NOTES)",
        Hold = "hold": "Says so, and merges the later writer only once the other is merged \
            (its conflict then climbs the ladder on a tip that holds the other's change)",
    }
}

#[cfg(test)]
mod tests {
    use super::{Choice, Confine, ConfineNet, Forecast, Land, ReportFormat, Spawning, listed};

    #[test]
    fn each_value_is_its_word_in_serde_and_back_in_any_case() {
        fn round_trip<
            C: Choice + std::fmt::Debug + serde::Serialize + serde::de::DeserializeOwned,
        >() {
            for (value, word, _) in C::CHOICES {
                assert_eq!(serde_json::to_value(value).unwrap(), *word);
                assert_eq!(serde_json::from_value::<C>((*word).into()).unwrap(), *value);
                assert_eq!(C::from_word(&word.to_uppercase()), Some(*value));
                assert_eq!(value.word(), *word);
            }
            assert_eq!(C::WORDS.len(), C::CHOICES.len());
            assert!(serde_json::from_value::<C>("sometimes".into()).is_err());
            assert_eq!(C::from_word("sometimes"), None);
        }
        round_trip::<Land>();
        round_trip::<ReportFormat>();
        round_trip::<Spawning>();
        round_trip::<Confine>();
        round_trip::<ConfineNet>();
        round_trip::<Forecast>();
    }

    #[test]
    fn words_are_listed_with_or_before_the_last() {
        assert_eq!(listed(Land::WORDS), "auto, branch or none");
        assert_eq!(listed(ReportFormat::WORDS), "markdown or html");
        assert_eq!(listed(&["one"]), "one");
    }
}

//! The layers of configuration and their merge. A layer is the options it sets with where each
//! came from: the flags, the `SWARM_*` variables, the repository's file, the user's file (read
//! in `file`). The merge is the same for every option: the highest layer that sets it gives its
//! value, else the default applies.

use std::collections::BTreeMap;

use super::key::Key;
use super::{Options, Place, Problem, Source};

/// One layer of settings: the options it sets and where each came from.
#[derive(Default)]
pub(super) struct Layer {
    pub(super) options: Options,
    pub(super) set: Vec<(Key, Source)>,
}

impl Layer {
    /// The options given on the command line: those it sets are from flags.
    pub(super) fn flags(options: &Options) -> Layer {
        Layer {
            options: options.clone(),
            set: Key::ALL
                .into_iter()
                .filter(|k| k.is_set(options))
                .map(|k| (k, Source::Flag))
                .collect(),
        }
    }

    /// The options the `SWARM_*` variables set; each variable that does not read is a problem.
    /// An empty variable counts as unset.
    pub(super) fn env(env: &dyn Fn(&str) -> Option<String>, problems: &mut Vec<Problem>) -> Layer {
        let mut layer = Layer::default();
        for key in Key::ALL {
            let Some(var) = key.var() else { continue };
            let Some(text) = env(var).filter(|t| !t.trim().is_empty()) else {
                continue;
            };
            match key
                .parse_into(&text, &mut layer.options)
                .and_then(|()| key.check(&layer.options))
            {
                Ok(()) => layer.set.push((key, Source::Env(var.to_owned()))),
                Err(e) => problems.push(Problem {
                    place: Place::Var(var),
                    line: None,
                    message: format!("invalid value for `{}`: {e}", key.name()),
                }),
            }
        }
        layer
    }

    fn source(&self, key: Key) -> Option<&Source> {
        self.set.iter().find(|(k, _)| *k == key).map(|(_, s)| s)
    }
}

/// The options of `layers` (the highest precedence first) as one: each option from the first
/// layer that sets it, else unset for its default; and for every key, where its value came from.
pub(super) fn merge(layers: &[Layer]) -> (Options, BTreeMap<&'static str, Source>) {
    let mut options = Options::default();
    let mut sources = BTreeMap::new();
    for key in Key::ALL {
        let source = match layers
            .iter()
            .find_map(|layer| Some((layer, layer.source(key)?)))
        {
            Some((layer, source)) => {
                key.copy(&layer.options, &mut options);
                source.clone()
            }
            None => Source::Default,
        };
        sources.insert(key.name(), source);
    }
    (options, sources)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::path::{Path, PathBuf};

    use serde_json::Value;

    use super::{Layer, merge};
    use crate::config::check::Shape;
    use crate::config::key::Key;
    use crate::config::{Config, ConfigError, Options, Place, Source, load};

    /// A value of `key` that reads and passes its checks, different for each `n` where the
    /// option can tell them apart (a switch cannot: it is on).
    fn good(key: Key, n: usize) -> String {
        match key.shape() {
            Shape::Count | Shape::Tokens => (n + 1).to_string(),
            Shape::Duration => format!("{}s", n + 1),
            Shape::Size => format!("{}MiB", n + 1),
            Shape::Path => format!("/p{n}"),
            Shape::Switch => "1".to_owned(),
            Shape::OneOf(words) => words[n % words.len()].to_owned(),
            Shape::Text | Shape::Agent | Shape::Strings | Shape::Variables => format!("v{n}"),
        }
    }

    /// A value of `key` that a variable cannot give (and so neither can a file), when there is
    /// one: every string is a text, a path or a list.
    fn bad(key: Key) -> Option<&'static str> {
        match key.shape() {
            Shape::Count | Shape::Tokens => Some("many"),
            Shape::Duration => Some("soon"),
            Shape::Size => Some("lots"),
            Shape::Switch => Some("maybe"),
            Shape::OneOf(_) => Some("sometimes"),
            Shape::Strings if key.check(&with(key, "/etc")).is_err() => Some("/etc"),
            _ => None,
        }
    }

    /// Options with `key` alone set from `text`, as a variable would set it.
    fn with(key: Key, text: &str) -> Options {
        let mut options = Options::default();
        key.parse_into(text, &mut options).unwrap();
        options
    }

    /// The four layers, highest first, where `key` is set in those whose bit of `mask` is on:
    /// in each to a value of its own.
    fn layers(key: Key, mask: u8) -> Vec<Layer> {
        let sources = [
            Source::Flag,
            Source::Env("SWARM_TEST".to_owned()),
            Source::File(PathBuf::from("/repo/.swarm.toml")),
            Source::File(PathBuf::from("/home/config.toml")),
        ];
        sources
            .into_iter()
            .enumerate()
            .map(|(n, source)| {
                if mask & (1 << n) == 0 {
                    return Layer::default();
                }
                Layer {
                    options: with(key, &good(key, n)),
                    set: vec![(key, source)],
                }
            })
            .collect()
    }

    #[test]
    fn the_highest_layer_that_sets_an_option_wins_for_every_option() {
        for key in Key::ALL {
            for mask in 0..16u8 {
                let layers = layers(key, mask);
                let (options, sources) = merge(&layers);
                let (value, source) = match (0..4).find(|n| mask & (1 << n) != 0) {
                    Some(n) => (key.value(&layers[n].options), layers[n].set[0].1.clone()),
                    None => (key.value(&Options::default()), Source::Default),
                };
                assert_eq!(key.value(&options), value, "{key:?}, layers {mask:04b}");
                assert_eq!(sources[key.name()], source, "{key:?}, layers {mask:04b}");
                for other in Key::ALL.into_iter().filter(|k| *k != key) {
                    assert_eq!(sources[other.name()], Source::Default, "{other:?}");
                    assert_eq!(other.value(&options), other.value(&Options::default()));
                }
            }
        }
    }

    #[test]
    fn a_layer_that_sets_an_option_to_off_or_empty_still_wins() {
        // A switch set off by a variable, over a file that sets it on.
        let resolve = Key::named("resolve-conflicts").unwrap();
        let off = Layer {
            options: Options::default(),
            set: vec![(resolve, Source::Env("SWARM_RESOLVE_CONFLICTS".to_owned()))],
        };
        let on = Layer {
            options: with(resolve, "1"),
            set: vec![(resolve, Source::File(PathBuf::from("/repo/.swarm.toml")))],
        };
        let (options, sources) = merge(&[Layer::default(), off, on]);
        assert!(!options.resolve_conflicts);
        assert_eq!(
            sources["resolve-conflicts"],
            Source::Env("SWARM_RESOLVE_CONFLICTS".to_owned())
        );
    }

    #[test]
    fn the_flags_layer_sets_what_the_command_line_gave() {
        let flags = Options {
            jobs: Some(3),
            web: true,
            ..Options::default()
        };
        let layer = Layer::flags(&flags);
        let set: Vec<(&str, Source)> = layer
            .set
            .iter()
            .map(|(k, s)| (k.name(), s.clone()))
            .collect();
        assert_eq!(set, [("jobs", Source::Flag), ("web", Source::Flag)]);
    }

    /// A checkout and a config home; each load is given the variables it sees.
    struct Places {
        _tmp: tempfile::TempDir,
        repo: PathBuf,
        user: PathBuf,
    }

    impl Places {
        fn new() -> Self {
            let tmp = tempfile::tempdir().unwrap();
            let repo = tmp.path().join("repo");
            let xdg = tmp.path().join("xdg");
            std::fs::create_dir_all(&repo).unwrap();
            std::fs::create_dir_all(xdg.join("swarm")).unwrap();
            Places {
                user: xdg.join("swarm").join("config.toml"),
                repo,
                _tmp: tmp,
            }
        }

        fn load(&self, vars: &BTreeMap<&str, String>) -> Result<Config, ConfigError> {
            let xdg = self.user.parent().unwrap().parent().unwrap().to_owned();
            let env = |name: &str| match name {
                "XDG_CONFIG_HOME" => Some(xdg.display().to_string()),
                "HOME" => Some("/nonexistent".to_owned()),
                _ => vars.get(name).cloned(),
            };
            load(Some(&self.repo), &Options::default(), &env, None)
        }
    }

    /// `key = text` as a file writes it: a list for a list, else a string (a wrong type for
    /// numbers and switches, which is what is meant).
    fn file_line(key: Key, text: &str) -> String {
        match key.shape() {
            Shape::Strings => format!("{} = [\"{text}\"]\n", key.name()),
            _ => format!("{} = \"{text}\"\n", key.name()),
        }
    }

    /// Where a problem must be, its line, the file that holds the bad value, and the variables.
    type Case<'a> = (Place, Option<usize>, &'a Path, BTreeMap<&'a str, String>);

    #[test]
    fn a_bad_value_in_each_layer_is_a_problem_of_that_file_or_variable() {
        let mut checked = 0;
        for key in Key::ALL {
            let Some(bad) = bad(key) else { continue };
            let places = Places::new();
            let repo_file = places.repo.join(".swarm.toml");
            let mut cases: Vec<Case> = Vec::new();
            if key.in_files() {
                cases.push((
                    Place::File(places.user.clone()),
                    Some(1),
                    &places.user,
                    BTreeMap::new(),
                ));
                cases.push((
                    Place::File(repo_file.clone()),
                    Some(1),
                    &repo_file,
                    BTreeMap::new(),
                ));
            }
            if let Some(var) = key.var() {
                let vars = BTreeMap::from([(var, bad.to_owned())]);
                cases.push((Place::Var(var), None, Path::new(""), vars));
            }
            for (place, line, file, vars) in cases {
                for f in [&places.user, &repo_file] {
                    let text = if f == file {
                        file_line(key, bad)
                    } else {
                        String::new()
                    };
                    std::fs::write(f, text).unwrap();
                }
                let err = places.load(&vars).unwrap_err();
                let [problem] = err.problems.as_slice() else {
                    panic!("{key:?} in {place}: {err}");
                };
                assert_eq!(
                    (&problem.place, problem.line),
                    (&place, line),
                    "{key:?}: {err}"
                );
                assert!(
                    problem.message.contains(&format!("`{}`", key.name())),
                    "{key:?} in {place}: {err}"
                );
                checked += 1;
            }
        }
        assert!(checked > 40, "{checked}");
    }

    #[test]
    fn a_good_value_in_a_lower_layer_loses_to_the_same_option_higher_up() {
        let places = Places::new();
        std::fs::write(&places.user, "jobs = 1\nretries = 1\nland = \"none\"\n").unwrap();
        std::fs::write(places.repo.join(".swarm.toml"), "jobs = 2\nretries = 2\n").unwrap();
        let vars = BTreeMap::from([("SWARM_JOBS", "3".to_owned())]);
        let config = places.load(&vars).unwrap();
        assert_eq!(config.options.jobs, Some(3));
        assert_eq!(config.options.retries, Some(2));
        assert_eq!(config.sources["land"], Source::File(places.user.clone()));
        assert_eq!(
            Key::named("max-turns").unwrap().default_value(),
            Value::from(40)
        );
        assert_eq!(config.sources["max-turns"], Source::Default);
    }
}

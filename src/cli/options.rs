//! A run's options as flags, made from the options' declaration (`config::run_options!`): each
//! option with a flag is a field of [`RunOptions`], with its help, and the conversion into
//! `config::Options` is field for field. clap stays here; the declaration names no clap type.

use std::ffi::OsStr;
use std::marker::PhantomData;
use std::path::PathBuf;

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::error::ErrorKind;
use clap::{Arg, Args};
use clap_complete::engine::ArgValueCandidates;

use crate::config::{
    Choice, Confine, ConfineNet, Defaults, Deliver, Forecast, Land, Lessons, MAX_SLOTS, Options,
    Pick, ReportFormat, Spawning,
};

/// Makes [`RunOptions`] and its conversion from the options' table, one entry at a time: the
/// entries without a flag are left out, and an entry's flag is shaped by its declaration (a
/// number of slots is bounded as its check is, an agent's name completes to the agents, a
/// choice offers its words).
macro_rules! run_flags {
    // Every entry read.
    (@flags [$($fields:tt)*] [$($flagged:ident)*]) => {
        /// Options of a run. Unset options come from the run being resumed, then from the defaults.
        #[derive(Debug, Clone, Default, Args)]
        pub struct RunOptions {
            $($fields)*
        }

        /// The flags as swarm's own options: the one place flags become configuration, so a
        /// flag's name is free to change without touching config files or what the board stores.
        impl From<RunOptions> for Options {
            fn from(flags: RunOptions) -> Self {
                Self {
                    $($flagged: flags.$flagged,)*
                    ..Self::default()
                }
            }
        }
    };
    // No flag: a key of files and a variable alone.
    (@flags [$($fields:tt)*] [$($flagged:ident)*]
        $(#[doc = $doc:literal])*
        $field:ident: $ty:ty { key: $key:literal, flag: none, $($declared:tt)* }
        $($rest:tt)*
    ) => {
        run_flags!(@flags [$($fields)*] [$($flagged)*] $($rest)*);
    };
    // A flag without a value.
    (@flags [$($fields:tt)*] [$($flagged:ident)*]
        $(#[doc = $doc:literal])*
        $field:ident: $ty:ty { key: $key:literal, flag: switch, $($declared:tt)* }
        $($rest:tt)*
    ) => {
        run_flags!(@flags [$($fields)*
            $(#[doc = $doc])*
            #[arg(long = $key)]
            pub $field: $ty,
        ] [$($flagged)* $field] $($rest)*);
    };
    // A number of tasks at once.
    (@flags [$($fields:tt)*] [$($flagged:ident)*]
        $(#[doc = $doc:literal])*
        $field:ident: $ty:ty {
            key: $key:literal, flag: $value:literal, $(short: $short:literal,)? var: $var:tt,
            file: $file:ident, shape: $shape:ident, check: slots, $($declared:tt)*
        }
        $($rest:tt)*
    ) => {
        run_flags!(@flags [$($fields)*
            $(#[doc = $doc])*
            #[arg(
                long = $key, $(short = $short,)? value_name = $value,
                value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_SLOTS))
            )]
            pub $field: $ty,
        ] [$($flagged)* $field] $($rest)*);
    };
    // An agent's name.
    (@flags [$($fields:tt)*] [$($flagged:ident)*]
        $(#[doc = $doc:literal])*
        $field:ident: $ty:ty {
            key: $key:literal, flag: $value:literal, $(short: $short:literal,)? var: $var:tt,
            file: $file:ident, shape: Agent, $($declared:tt)*
        }
        $($rest:tt)*
    ) => {
        run_flags!(@flags [$($fields)*
            $(#[doc = $doc])*
            #[arg(
                long = $key, $(short = $short,)? value_name = $value,
                add = ArgValueCandidates::new(crate::complete::agents)
            )]
            pub $field: $ty,
        ] [$($flagged)* $field] $($rest)*);
    };
    // One of a few words.
    (@flags [$($fields:tt)*] [$($flagged:ident)*]
        $(#[doc = $doc:literal])*
        $field:ident: $ty:ty {
            key: $key:literal, flag: $value:literal, $(short: $short:literal,)? var: $var:tt,
            file: $file:ident, shape: OneOf($choice:ty), $($declared:tt)*
        }
        $($rest:tt)*
    ) => {
        run_flags!(@flags [$($fields)*
            $(#[doc = $doc])*
            #[arg(
                long = $key, $(short = $short,)? value_name = $value,
                value_parser = ChoiceParser::<$choice>::new()
            )]
            pub $field: $ty,
        ] [$($flagged)* $field] $($rest)*);
    };
    // Any other value.
    (@flags [$($fields:tt)*] [$($flagged:ident)*]
        $(#[doc = $doc:literal])*
        $field:ident: $ty:ty {
            key: $key:literal, flag: $value:literal, $(short: $short:literal,)? $($declared:tt)*
        }
        $($rest:tt)*
    ) => {
        run_flags!(@flags [$($fields)*
            $(#[doc = $doc])*
            #[arg(long = $key, $(short = $short,)? value_name = $value)]
            pub $field: $ty,
        ] [$($flagged)* $field] $($rest)*);
    };
    ($($table:tt)*) => {
        run_flags!(@flags [] [] $($table)*);
    };
}

crate::config::run_options!(run_flags);

/// The words of a [`Choice`] as a flag's values, each with its help: parsed and refused as
/// clap's own enums are, so the help, the completions and the errors read as theirs do.
#[derive(Clone)]
struct ChoiceParser<C>(PhantomData<C>);

impl<C: Choice> ChoiceParser<C> {
    fn new() -> Self {
        Self(PhantomData)
    }

    fn values() -> impl Iterator<Item = PossibleValue> {
        C::CHOICES.iter().map(|&(_, word, help)| {
            let value = PossibleValue::new(word);
            if help.is_empty() {
                value
            } else {
                value.help(help)
            }
        })
    }
}

impl<C: Choice + Send + Sync> TypedValueParser for ChoiceParser<C> {
    type Value = C;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&Arg>,
        value: &OsStr,
    ) -> Result<C, clap::Error> {
        // A value that is not UTF-8 is refused as any other word that is not one of them, as
        // clap refuses it for its own enums (not as text that is not UTF-8).
        let text = value.to_string_lossy();
        let word = PossibleValuesParser::new(Self::values()).parse_ref(
            cmd,
            arg,
            OsStr::new(text.as_ref()),
        )?;
        // The parser takes only the words, so this error is never made.
        C::from_word(&word).ok_or_else(|| clap::Error::new(ErrorKind::InvalidValue).with_cmd(cmd))
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(Self::values()))
    }
}

#[cfg(test)]
mod tests {
    use clap::{Args as _, FromArgMatches as _, Parser as _};

    use crate::cli::{Cli, Command, RunOptions};
    use crate::config::{Land, Options};

    #[test]
    fn flags_become_the_options_they_name() {
        let cli = Cli::try_parse_from([
            "swarm",
            "run",
            "t.jsonl",
            "-j",
            "3",
            "--land",
            "none",
            "--allow-program",
            "cargo",
            "--resolve-conflicts",
            "--final-out",
            "out.md",
            "--base",
            "main",
        ])
        .unwrap();
        let Some(Command::Run { options, .. }) = cli.command else {
            panic!("not a run: {:?}", cli.command);
        };
        let expected = Options {
            jobs: Some(3),
            land: Some(Land::None),
            allow_program: vec!["cargo".into()],
            resolve_conflicts: true,
            final_out: Some("out.md".into()),
            base: Some("main".into()),
            ..Options::default()
        };
        assert_eq!(Options::from(options), expected);
        assert_eq!(Options::from(RunOptions::default()), Options::default());
    }

    #[test]
    fn every_run_flag_reaches_the_options() {
        let command = RunOptions::augment_args(clap::Command::new("swarm"));
        for arg in command.get_arguments() {
            let flag = format!("--{}", arg.get_long().unwrap());
            let mut line = vec!["swarm".to_owned(), flag.clone()];
            if arg.get_action().takes_values() {
                let value = arg
                    .get_possible_values()
                    .first()
                    .map(|v| v.get_name().to_owned());
                line.push(value.unwrap_or_else(|| "1".to_owned()));
            }
            let matches = command.clone().try_get_matches_from(&line).unwrap();
            let flags = RunOptions::from_arg_matches(&matches).unwrap();
            assert_ne!(Options::from(flags), Options::default(), "{flag}");
        }
    }
}

/// One run option as the table declares it, for what is made from it outside the binary (the
/// man pages' list of variables) and for the tests that hold the flags to it.
#[derive(Debug, Clone)]
pub struct Declared {
    /// The key in files and in `swarm config`, and the flag's long name.
    pub key: &'static str,
    /// The flag's value name; empty for a switch; `None` without a flag.
    pub flag: Option<&'static str>,
    /// The `SWARM_*` variable, if it has one.
    pub var: Option<&'static str>,
    /// Whether a config file may set it.
    pub file: bool,
    /// The doc lines, one a line: the flag's help, or what an option without one does.
    pub help: &'static str,
    /// How a variable writes a value that is not a single word or number: a list, a switch.
    pub var_form: Option<&'static str>,
    /// The default as the help says it, when the table gives one.
    pub default: Option<String>,
}

macro_rules! declared {
    ($(
        $(#[doc = $doc:literal])*
        $field:ident: $ty:ty {
            key: $key:literal, flag: $flag:tt, $(short: $short:literal,)? var: $var:tt,
            file: $file:ident, shape: $shape:ident $(($choice:ty))?, $(check: $check:path,)?
            $(default: $default_ty:ty = $default:expr,)? $(follows: $follows:literal,)?
            listed: $listed:literal,
        }
    )*) => {
        vec![$(
            Declared {
                key: $key,
                flag: declared!(@flag $flag),
                var: declared!(@var $var),
                file: declared!(@file $file),
                help: concat!($($doc, "\n"),*),
                var_form: declared!(@form $shape),
                default: declared!(@default $(said::<$default_ty>(Defaults::$field()))?),
            },
        )*]
    };
    (@flag none) => { None };
    (@flag switch) => { Some("") };
    (@flag $value:literal) => { Some($value) };
    (@var none) => { None };
    (@var $var:literal) => { Some($var) };
    (@file yes) => { true };
    (@file no) => { false };
    (@form Strings) => { Some("several, separated by commas") };
    (@form Switch) => { Some("1, true or yes; 0, false or no") };
    (@form $shape:ident) => { None };
    (@default) => { None };
    (@default $($said:tt)+) => { Some($($said)+) };
}

/// A default as the help says it: `5m`, `4`, `auto`.
fn said<T: serde::Serialize>(value: T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(text)) => text,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}

/// Every run option, in the table's order, as declared.
pub fn declared() -> Vec<Declared> {
    crate::config::run_options!(declared)
}

/// The options' declaration against what the command line makes of it.
#[cfg(test)]
mod declared {
    use std::collections::BTreeSet;

    use clap::Args as _;

    use crate::cli::RunOptions;

    use super::{Declared, declared};

    fn table() -> Vec<Declared> {
        declared()
    }

    /// Words, whatever the lines: the help as clap shows it is the doc lines joined.
    fn words(text: &str) -> String {
        text.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    #[test]
    fn every_option_with_a_flag_is_that_flag_with_its_help_and_no_other_flag_is() {
        let command = RunOptions::augment_args(clap::Command::new("swarm"));
        let mut flags = BTreeSet::new();
        for option in table() {
            let Some(value) = option.flag else {
                assert!(
                    command
                        .get_arguments()
                        .all(|a| a.get_long() != Some(option.key)),
                    "{}",
                    option.key
                );
                continue;
            };
            let arg = command
                .get_arguments()
                .find(|a| a.get_long() == Some(option.key))
                .unwrap_or_else(|| panic!("no flag --{}", option.key));
            if value.is_empty() {
                assert!(!arg.get_action().takes_values(), "--{}", option.key);
            } else {
                let names: Vec<&str> = arg
                    .get_value_names()
                    .unwrap()
                    .iter()
                    .map(clap::builder::Str::as_str)
                    .collect();
                assert_eq!(names, [value], "--{}", option.key);
            }
            // clap shows the first paragraph without its full stop, and all of it in the long help.
            let help = arg.get_long_help().or(arg.get_help()).unwrap().to_string();
            let help = words(&help);
            assert!(
                words(option.help).starts_with(help.trim_end_matches('.')),
                "--{}: {help:?} is not {:?}",
                option.key,
                option.help
            );
            flags.insert(option.key);
        }
        let all: BTreeSet<&str> = command
            .get_arguments()
            .filter_map(|a| a.get_long())
            .collect();
        assert_eq!(all, flags);
    }

    #[test]
    fn every_option_is_reachable_and_one_that_belongs_to_a_run_is_a_flag_alone() {
        let mut vars = BTreeSet::new();
        let mut keys = BTreeSet::new();
        for option in table() {
            assert!(keys.insert(option.key), "{} twice", option.key);
            assert!(
                !option.help.trim().is_empty(),
                "{} says nothing",
                option.key
            );
            if option.file {
                let var = option
                    .var
                    .unwrap_or_else(|| panic!("{} has no variable", option.key));
                assert!(var.starts_with("SWARM_"), "{var}");
                assert!(vars.insert(var), "{var} twice");
            } else {
                assert!(option.flag.is_some(), "{} is set nowhere", option.key);
                assert_eq!(option.var, None, "{} belongs to one run", option.key);
            }
        }
    }

    #[test]
    fn the_help_of_a_flag_states_the_declared_default() {
        let mut stated = 0;
        for option in table() {
            let (Some(_), Some(default)) = (option.flag, &option.default) else {
                continue;
            };
            assert!(
                words(option.help).contains(&format!("[default: {default}]")),
                "--{}: {:?} does not say [default: {default}]",
                option.key,
                option.help
            );
            stated += 1;
        }
        assert!(stated >= 10, "{stated}");
    }

    #[test]
    fn every_flag_is_in_the_help_of_swarm_and_of_swarm_run() {
        let mut swarm = crate::cli::command();
        let top = swarm.render_long_help().to_string();
        let run = swarm
            .find_subcommand_mut("run")
            .unwrap()
            .render_long_help()
            .to_string();
        for option in table().into_iter().filter(|o| o.flag.is_some()) {
            let flag = format!("--{}", option.key);
            assert!(top.contains(&flag), "swarm --help: no {flag}");
            assert!(run.contains(&flag), "swarm run --help: no {flag}");
        }
    }

    #[test]
    fn the_manual_names_every_key_flag_and_variable() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/src");
        let mut manual = String::new();
        for page in std::fs::read_dir(&dir).unwrap() {
            let page = page.unwrap().path();
            if page.extension().is_some_and(|e| e == "md") {
                manual += &std::fs::read_to_string(&page).unwrap();
            }
        }
        for option in table() {
            let key = format!("`{}`", option.key);
            assert!(
                !option.file || manual.contains(&key),
                "the manual: no {key}"
            );
            let flag = format!("--{}", option.key);
            assert!(
                option.flag.is_none() || manual.contains(&flag),
                "the manual: no {flag}"
            );
            let var = option.var.unwrap_or_default();
            assert!(manual.contains(var), "the manual: no {var}");
        }
    }
}

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::check::Shape;
use super::{
    Config, ConfigError, Key, Land, Options, Place, Problem, ProfileSpec, Source, describe, load,
    overlay, to_json,
};

/// A repository checkout and a config home, both empty until a test writes into them.
struct Fixture {
    _tmp: tempfile::TempDir,
    repo: PathBuf,
    xdg: PathBuf,
    vars: BTreeMap<String, String>,
}

impl Fixture {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("repo");
        let xdg = tmp.path().join("xdg");
        std::fs::create_dir_all(&repo).unwrap();
        std::fs::create_dir_all(xdg.join("swarm")).unwrap();
        let mut vars = BTreeMap::new();
        vars.insert("XDG_CONFIG_HOME".to_owned(), xdg.display().to_string());
        vars.insert("HOME".to_owned(), tmp.path().display().to_string());
        Self {
            _tmp: tmp,
            repo,
            xdg,
            vars,
        }
    }

    fn repo_file(&self) -> PathBuf {
        self.repo.join(".swarm.toml")
    }

    fn user_file(&self) -> PathBuf {
        self.xdg.join("swarm").join("config.toml")
    }

    fn write_repo(&self, text: &str) -> PathBuf {
        std::fs::write(self.repo_file(), text).unwrap();
        self.repo_file()
    }

    fn write_user(&self, text: &str) -> PathBuf {
        std::fs::write(self.user_file(), text).unwrap();
        self.user_file()
    }

    fn set(&mut self, var: &str, value: &str) {
        self.vars.insert(var.to_owned(), value.to_owned());
    }

    fn load_with(&self, flags: &Options) -> Result<Config, ConfigError> {
        let env = |name: &str| self.vars.get(name).cloned();
        load(Some(&self.repo), flags, &env, None)
    }

    fn load(&self) -> Result<Config, ConfigError> {
        self.load_with(&Options::default())
    }

    /// The one problem loading finds.
    fn problem(&self) -> Problem {
        only(self.load())
    }

    /// Every problem loading finds, as `file:line: message` lines.
    fn problems(&self) -> Vec<String> {
        let err = self.load().unwrap_err();
        err.problems.iter().map(ToString::to_string).collect()
    }
}

/// The one problem of a configuration that does not load.
fn only(result: Result<Config, ConfigError>) -> Problem {
    let err = result.unwrap_err();
    assert_eq!(err.problems.len(), 1, "{err}");
    err.problems.into_iter().next().unwrap()
}

fn file(path: &Path) -> Place {
    Place::File(path.to_owned())
}

fn source(config: &Config, key: &str) -> Source {
    config.sources[key].clone()
}

#[test]
fn each_layer_beats_the_ones_below_and_sources_say_which() {
    let mut fx = Fixture::new();
    let user = fx.write_user(
        "jobs = 1\nmax-writers = 1\nagent = \"user\"\ncheck = \"user check\"\nretries = 7\n",
    );
    let repo = fx.write_repo("jobs = 2\nmax-writers = 2\nagent = \"repo\"\nretries = 8\n");
    fx.set("SWARM_JOBS", "3");
    fx.set("SWARM_MAX_WRITERS", "3");
    fx.set("SWARM_RETRIES", "9");
    let flags = Options {
        jobs: Some(5),
        ..Options::default()
    };
    let config = fx.load_with(&flags).unwrap();
    let o = &config.options;
    assert_eq!(o.jobs, Some(5));
    assert_eq!(source(&config, "jobs"), Source::Flag);
    assert_eq!(o.max_writers, Some(3));
    assert_eq!(
        source(&config, "max-writers"),
        Source::Env("SWARM_MAX_WRITERS".into())
    );
    assert_eq!(o.retries, Some(9));
    assert_eq!(o.agent.as_deref(), Some("repo"));
    assert_eq!(source(&config, "agent"), Source::File(repo));
    assert_eq!(o.check.as_deref(), Some("user check"));
    assert_eq!(source(&config, "check"), Source::File(user));
    assert_eq!(o.model, None);
    assert_eq!(source(&config, "model"), Source::Default);
    assert_eq!(source(&config, "final-out"), Source::Default);
}

#[test]
fn nothing_configured_is_all_defaults() {
    let fx = Fixture::new();
    let config = fx.load().unwrap();
    assert!(config.sources.values().all(|s| *s == Source::Default));
    assert!(config.profiles.is_empty());
    assert_eq!(config.options.jobs, None);
}

#[test]
fn env_false_overrides_a_file_true() {
    let mut fx = Fixture::new();
    fx.write_repo("resolve-conflicts = true\nland = \"branch\"\n");
    fx.set("SWARM_RESOLVE_CONFLICTS", "no");
    let config = fx.load().unwrap();
    assert!(!config.options.resolve_conflicts);
    assert_eq!(
        source(&config, "resolve-conflicts"),
        Source::Env("SWARM_RESOLVE_CONFLICTS".into())
    );
    assert_eq!(config.options.land, Some(Land::Branch));
}

#[test]
fn env_lists_and_enums_are_parsed() {
    let mut fx = Fixture::new();
    fx.write_user("allow-program = [\"make\"]\n");
    fx.set("SWARM_ALLOW_PROGRAMS", "cargo, git,");
    fx.set("SWARM_LAND", "none");
    fx.set("SWARM_MAX_TASK_TOKENS", "");
    let config = fx.load().unwrap();
    assert_eq!(config.options.allow_program, ["cargo", "git"]);
    assert_eq!(config.options.land, Some(Land::None));
    // An empty variable counts as unset.
    assert_eq!(source(&config, "max-task-tokens"), Source::Default);
}

#[test]
fn explicit_config_is_read_instead_of_the_user_config() {
    let fx = Fixture::new();
    fx.write_user("jobs = 1\ncheck = \"user\"\n");
    let explicit = fx.repo.join("other.toml");
    std::fs::write(&explicit, "jobs = 2\n").unwrap();
    let env = |name: &str| fx.vars.get(name).cloned();
    let config = load(Some(&fx.repo), &Options::default(), &env, Some(&explicit)).unwrap();
    assert_eq!(config.options.jobs, Some(2));
    assert_eq!(source(&config, "jobs"), Source::File(explicit));
    assert_eq!(config.options.check, None);
    let missing = fx.repo.join("missing.toml");
    let err = only(load(None, &Options::default(), &env, Some(&missing)));
    assert_eq!((err.place, err.line), (file(&missing), None));
    assert_eq!(err.message, "no such file (named by --config)");
}

#[test]
fn profiles_are_read_with_their_file_and_the_repo_wins() {
    let fx = Fixture::new();
    let user = fx.write_user(
        "[agents.mine]\ncommand = \"my-agent\"\nargs = [\"-q\"]\n\n\
         [agents.shared]\ncommand = \"user-version\"\n",
    );
    let repo =
        fx.write_repo("[agents.shared]\ncommand = \"repo-version\"\nparser = \"claude-json\"\n");
    let config = fx.load().unwrap();
    let (mine, file) = &config.profiles["mine"];
    assert_eq!(
        mine,
        &ProfileSpec {
            command: Some("my-agent".into()),
            args: Some(vec!["-q".into()]),
            ..ProfileSpec::default()
        }
    );
    assert_eq!(file, &user);
    let (shared, file) = &config.profiles["shared"];
    assert_eq!(shared.command.as_deref(), Some("repo-version"));
    assert_eq!(shared.parser.as_deref(), Some("claude-json"));
    assert_eq!(file, &repo);
}

#[test]
fn pools_are_read_with_their_file_and_line_and_the_repo_wins() {
    let fx = Fixture::new();
    fx.write_user("[pools.subs]\nmembers = [\"a\"]\n\n[pools.mine]\nmembers = [\"b\", \"c\"]\n");
    let repo = fx.write_repo("jobs = 2\n\n[pools.subs]\nmembers = [\"x\", \"y\"]\n");
    let config = fx.load().unwrap();
    let subs = &config.pools["subs"];
    assert_eq!(subs.members, ["x", "y"]);
    assert_eq!((&subs.file, subs.line), (&repo, Some(4)));
    assert_eq!(config.pools["mine"].members, ["b", "c"]);
}

#[test]
fn a_pool_without_members_or_within_a_pool_is_refused_with_its_line() {
    for (text, line, says) in [
        ("[pools.p]\nmembers = []\n", 2, "has no members"),
        ("[pools.p]\n", 1, "has no members"),
        (
            "\n[pools.p]\nmembers = [\"a\", \"pool:q\"]\n",
            3,
            "is a pool",
        ),
        ("[pools.p]\nmembers = [\"a\", \"a\"]\n", 2, "named twice"),
        (
            "[agents.a]\ncommand = \"x\"\nmax-concurrent = 0\n",
            3,
            "at least 1",
        ),
    ] {
        let fx = Fixture::new();
        fx.write_repo(text);
        let err = fx.problem();
        assert_eq!(err.line, Some(line), "{text}: {err}");
        assert!(err.message.contains(says), "{text}: {err}");
    }
}

#[test]
fn unknown_top_level_key_is_refused_with_its_line() {
    let fx = Fixture::new();
    let repo = fx.write_repo("# settings\njobs = 2\n\njbos = 4\n");
    let err = fx.problem();
    assert_eq!((&err.place, err.line), (&file(&repo), Some(4)));
    assert_eq!(err.message, "unknown key `jbos`; did you mean `jobs`?");
    assert_eq!(
        err.to_string(),
        format!("{}:4: {}", repo.display(), err.message)
    );
    // With no key near, the known keys are listed.
    fx.write_repo("colour = \"red\"\n");
    let err = fx.problem();
    assert!(
        err.message
            .starts_with("unknown key `colour` (known: jobs, max-writers, agent,"),
        "{err}"
    );
}

#[test]
fn snake_case_key_gets_a_suggestion() {
    let fx = Fixture::new();
    fx.write_repo("max_writers = 2\n");
    let err = fx.problem();
    assert!(err.message.contains("did you mean `max-writers`?"), "{err}");
}

#[test]
fn profile_kind_is_cli_or_acp() {
    let fx = Fixture::new();
    fx.write_user("[agents.a]\nkind = \"acp\"\ncommand = \"x\"\n");
    let config = fx.load().unwrap();
    assert_eq!(config.profiles["a"].0.kind.as_deref(), Some("acp"));
    let user = fx.write_user("[agents.a]\ncommand = \"x\"\nkind = \"rpc\"\n");
    let err = fx.problem();
    assert_eq!((err.place, err.line), (file(&user), Some(3)));
    assert_eq!(
        err.message,
        "agent `a`: `kind` must be \"cli\" or \"acp\", not \"rpc\""
    );
}

#[test]
fn unknown_profile_key_is_refused_with_its_line() {
    let fx = Fixture::new();
    let user = fx.write_user("[agents.mine]\ncommand = \"x\"\ncomand = \"y\"\n");
    let err = fx.problem();
    assert_eq!((err.place, err.line), (file(&user), Some(3)));
    assert_eq!(
        err.message,
        "agent `mine`: unknown key `comand`; did you mean `command`?"
    );
    fx.write_user("[agents.mine]\ncommand = \"x\"\nflavour = \"mild\"\n");
    assert!(
        fx.problem()
            .message
            .starts_with("agent `mine`: unknown key `flavour` (known: command, args,"),
    );
}

#[test]
fn unknown_parser_is_refused_with_its_line() {
    let fx = Fixture::new();
    fx.write_repo("[agents.mine]\ncommand = \"x\"\nparser = \"xml\"\n");
    let err = fx.problem();
    assert_eq!(err.line, Some(3));
    assert_eq!(
        err.message,
        "agent `mine`: `parser` must be \"text\", \"claude-json\" or \"codex-jsonl\", not \"xml\""
    );
}

#[test]
fn wrong_type_is_refused_with_its_line() {
    let fx = Fixture::new();
    let repo = fx.write_repo("agent = \"claude\"\njobs = \"four\"\n");
    let err = fx.problem();
    assert_eq!((err.place, err.line), (file(&repo), Some(2)));
    assert_eq!(
        err.message,
        "`jobs` must be a whole number (0 or more), not \"four\""
    );
}

#[test]
fn out_of_range_and_bad_durations_are_refused_with_their_lines() {
    let fx = Fixture::new();
    fx.write_repo("jobs = 0\n");
    let err = fx.problem();
    assert_eq!(err.line, Some(1));
    assert!(err.message.contains("`jobs`: 0 is out of range"), "{err}");
    fx.write_repo("jobs = 2\n\ntask-timeout = \"soon\"\n");
    let err = fx.problem();
    assert_eq!(err.line, Some(3));
    assert!(err.message.contains("bad duration"), "{err}");
    fx.write_repo("land = \"sometimes\"\n");
    assert_eq!(fx.problem().line, Some(1));
}

#[test]
fn sizes_count_in_units_of_1024_and_a_bad_or_tiny_transcript_cap_is_refused_with_its_line() {
    for (text, bytes) in [
        ("67108864", 64 << 20),
        ("64MiB", 64 << 20),
        ("64m", 64 << 20),
        ("64 MB", 64 << 20),
        ("512k", 512 << 10),
        ("1GiB", 1 << 30),
    ] {
        assert_eq!(super::parse_size(text), Ok(bytes), "{text}");
    }
    for text in ["", "MiB", "1.5GiB", "-1", "64 MiBs", "99999999999999GiB"] {
        assert!(super::parse_size(text).is_err(), "{text}");
    }
    let fx = Fixture::new();
    fx.write_repo("jobs = 2\ntranscript-cap = \"lots\"\n");
    let err = fx.problem();
    assert_eq!(err.line, Some(2));
    assert_eq!(
        err.message,
        "`transcript-cap`: bad size \"lots\": use a whole number of bytes, or of KiB, MiB or GiB (as in 64MiB)"
    );
    fx.write_repo("transcript-cap = \"1k\"\n");
    assert!(
        fx.problem().message.contains("too small"),
        "{}",
        fx.problem()
    );
    fx.write_repo("transcript-cap = 1048576\n");
    assert_eq!(
        fx.problem().message,
        "`transcript-cap` must be a size like \"64MiB\", not 1048576"
    );
}

#[test]
fn included_and_cached_paths_must_stay_inside_the_repository() {
    let fx = Fixture::new();
    for (text, words) in [
        (
            "include = [\"/etc/passwd\"]\n",
            "`include`: `/etc/passwd` is absolute",
        ),
        (
            "include = [\"a/../../b\"]\n",
            "`include`: `a/../../b` climbs out with `..`",
        ),
        (
            "cache = [\".git/objects\"]\n",
            "`cache`: `.git/objects` is in .git",
        ),
        ("cache-key = [\"\"]\n", "`cache-key`: an empty path"),
    ] {
        fx.write_repo(&format!("jobs = 2\n{text}"));
        let err = fx.problem();
        assert_eq!(err.line, Some(2), "{text}");
        assert!(err.message.contains(words), "{text}: {err}");
    }
    fx.write_repo("include = [\".env\", \"config/local.toml\"]\ncache = [\"target\"]\n");
    let config = fx.load().unwrap();
    assert_eq!(config.options.include, [".env", "config/local.toml"]);
    assert_eq!(config.options.cache, ["target"]);
}

#[test]
fn syntax_error_has_its_line() {
    let fx = Fixture::new();
    fx.write_user("jobs = 2\nagent = \n");
    let err = fx.problem();
    assert_eq!((err.place, err.line), (file(&fx.user_file()), Some(2)));
}

#[test]
fn api_key_in_a_file_is_refused_with_a_hint() {
    let fx = Fixture::new();
    fx.write_repo("model = \"m\"\napi-key = \"sk-secret\"\n");
    let err = fx.problem();
    assert_eq!(err.line, Some(2));
    assert!(err.message.contains("SWARM_API_KEY"), "{err}");
    assert!(!err.to_string().contains("sk-secret"), "{err}");
}

#[test]
fn per_run_keys_are_refused_in_files() {
    let fx = Fixture::new();
    fx.write_user("final-out = \"out.md\"\n");
    let err = fx.problem();
    assert_eq!(err.line, Some(1));
    assert!(err.message.contains("unknown key `final-out`"), "{err}");
    assert!(err.message.contains("--final-out"), "{err}");
    fx.write_user("base = \"main\"\n");
    assert!(fx.problem().message.contains("--base"));
    fx.write_user("final_out_dir = \"out\"\n");
    assert!(fx.problem().message.contains("--final-out-dir"));
}

#[test]
fn a_bad_price_is_refused_with_its_line_and_what_a_price_is() {
    let fx = Fixture::new();
    fx.write_repo("jobs = 2\nprice = \"cheap\"\n");
    let err = fx.problem();
    assert_eq!(err.line, Some(2));
    assert!(
        err.message
            .contains("`cheap` is not a price (0 or more dollars)"),
        "{err}"
    );
    fx.write_repo("price = \"1,2,3,4\"\n");
    assert!(
        fx.problem()
            .message
            .contains("PROMPT,CACHED,ANSWER or PROMPT,ANSWER"),
        "{}",
        fx.problem()
    );
}

#[test]
fn bad_env_value_names_the_variable() {
    let mut fx = Fixture::new();
    fx.set("SWARM_JOBS", "lots");
    let err = fx.problem();
    assert_eq!((&err.place, err.line), (&Place::Var("SWARM_JOBS"), None));
    assert_eq!(
        err.to_string(),
        "SWARM_JOBS: invalid value for `jobs`: `lots` is not a whole number (0 or more)"
    );
    let mut fx = Fixture::new();
    fx.set("SWARM_RESOLVE_CONFLICTS", "maybe");
    assert_eq!(fx.problem().place, Place::Var("SWARM_RESOLVE_CONFLICTS"));
}

#[test]
fn relative_worktree_dir_is_taken_from_the_files_directory() {
    let fx = Fixture::new();
    fx.write_repo("worktree-dir = \"../wt\"\n");
    let config = fx.load().unwrap();
    assert_eq!(config.options.worktree_dir, Some(fx.repo.join("../wt")));
    fx.write_user("worktree-dir = \"~/wt\"\n");
    std::fs::remove_file(fx.repo_file()).unwrap();
    let config = fx.load().unwrap();
    assert_eq!(
        config.options.worktree_dir,
        Some(PathBuf::from(&fx.vars["HOME"]).join("wt"))
    );
}

#[test]
fn every_file_key_is_accepted() {
    let fx = Fixture::new();
    fx.write_repo(
        r#"jobs = 4
max-writers = 2
agent = "claude"
model = "m"
api-base = "http://localhost:11434/v1"
check = "cargo test"
task-timeout = "20m"
retries = 2
land = "auto"
worktree-dir = "/tmp/wt"
on-escalate = "notify"
request-timeout = "2m"
endpoint-wait = "1m"
max-turns = 30
max-task-tokens = 100000
plan-answer-tokens = 2048
turn-answer-tokens = 1024
budget-tokens = 5000000
price = "2.5,1.25,10"
stall-timeout = "10m"
kill-grace = "5s"
allow-program = ["cargo"]
resolve-conflicts = true
fresh-retries = true
include = [".env"]
setup = "npm ci"
gate = "make test"
cache = ["node_modules"]
cache-key = ["package-lock.json"]
max-children = 10
max-depth = 2
max-spawned = 100
spawns-per-minute = 30
spawning = "all"
transcript-cap = "16MiB"
confine = "require"
read-deny = ["~/notes"]
read-allow = ["~/.aws/config"]
write-allow = ["/var/cache/shared"]
confine-net = "endpoint"
conflicts = ["merge", "structural", "resolve"]
mergiraf = "/opt/mergiraf/bin/mergiraf"
forecast = "tell"
forecast-interval = "10s"
allow-no-change = true
deliver = "stack"
deliver-remote = "upstream"
forge = "gitlab"
pr-branch = "swarm/nightly"
pr-title = "deps: {title}"
pr-draft = true
pr-labels = ["automated"]
pr-reviewers = ["alice"]
no-memory = true
lessons = "model"
candidates = 3
select = "judge"
otel = true

[agents.all]
command = "a"
args = ["b"]
reader-args = ["c"]
writer-args = ["d"]
parser = "codex-jsonl"
pass-env = ["E"]
drop-env = ["F"]
set-env = { G = "h" }
writes = ["~/.all/"]
"#,
    );
    let config = fx.load().unwrap();
    for key in Key::ALL.into_iter().filter(|k| k.in_files()) {
        assert!(
            matches!(source(&config, key.name()), Source::File(_)),
            "{}",
            key.name()
        );
    }
}

#[test]
fn every_run_option_has_a_key() {
    let fields = serde_json::to_value(Options::default()).unwrap();
    let mut fields: Vec<String> = fields.as_object().unwrap().keys().cloned().collect();
    fields.sort();
    let mut keys: Vec<String> = Key::ALL
        .iter()
        .map(|k| k.name().replace('-', "_"))
        .collect();
    keys.sort();
    assert_eq!(fields, keys);
}

#[test]
fn describe_shows_values_and_where_they_came_from() {
    let mut fx = Fixture::new();
    let repo = fx.write_repo("check = \"cargo test\"\n[agents.mine]\ncommand = \"my-agent\"\n");
    fx.set("SWARM_JOBS", "6");
    let flags = Options {
        allow_program: vec!["cargo".into()],
        ..Options::default()
    };
    let config = fx.load_with(&flags).unwrap();
    let text = describe(&config);
    let line = |prefix: &str| {
        text.lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no {prefix:?} in\n{text}"))
            .to_owned()
    };
    assert!(line("jobs = 6 ").ends_with("# from SWARM_JOBS"), "{text}");
    assert!(
        line("max-writers = 6 ").contains("# from default"),
        "{text}"
    );
    assert!(
        line("check = \"cargo test\" ").ends_with(&format!("# from {}", repo.display())),
        "{text}"
    );
    assert!(line("allow-program = [\"cargo\"] ").ends_with("# from --allow-program"));
    assert!(line("task-timeout = \"30m\" ").ends_with("# from default"));
    assert!(line("model = unset ").ends_with("# from default"));
    assert!(line("[agents.mine]").ends_with(&format!("# from {}", repo.display())));
    assert!(text.contains("command = \"my-agent\"\n"), "{text}");
    assert!(line("#   SWARM_ALLOW_PROGRAMS").ends_with("allow-program"));

    let json = to_json(&config);
    assert_eq!(json["options"]["jobs"]["value"], 6);
    assert_eq!(json["options"]["jobs"]["source"]["variable"], "SWARM_JOBS");
    assert_eq!(json["options"]["model"]["source"]["kind"], "default");
    assert_eq!(json["profiles"]["mine"]["command"], "my-agent");
    assert_eq!(json["environment"]["SWARM_LAND"], "land");
}

#[test]
fn a_resumes_options_replace_only_those_it_sets() {
    let stored = Options {
        jobs: Some(2),
        agent: Some("claude".into()),
        allow_program: vec!["make".into()],
        resolve_conflicts: true,
        land: Some(Land::Branch),
        ..Options::default()
    };
    let newer = Options {
        jobs: Some(8),
        budget_tokens: Some(10),
        ..Options::default()
    };
    let expected = Options {
        jobs: Some(8),
        budget_tokens: Some(10),
        ..stored.clone()
    };
    assert_eq!(overlay(stored.clone(), &newer), expected);
    let newer = Options {
        allow_program: vec!["cargo".into()],
        ..Options::default()
    };
    assert_eq!(overlay(stored, &newer).allow_program, ["cargo"]);
}

#[test]
fn every_problem_of_a_file_is_reported_at_once_with_its_line() {
    let fx = Fixture::new();
    let repo = fx.write_repo(
        "incldue = [\".env\"]\njobs = \"four\"\nagent = \"claude\"\ntask-timeout = \"soon\"\n",
    );
    let err = fx.load().unwrap_err();
    let at = |line: usize, message: &str| Problem {
        place: file(&repo),
        line: Some(line),
        message: message.to_owned(),
    };
    assert_eq!(
        err.problems,
        [
            at(1, "unknown key `incldue`; did you mean `include`?"),
            at(2, "`jobs` must be a whole number (0 or more), not \"four\""),
            at(
                4,
                "`task-timeout`: bad duration \"soon\": use a positive number of seconds or of \
                 ms, s, m, h or d (as in 90s, 1h30m), at most 365d"
            ),
        ]
    );
    let text = err.to_string();
    assert!(
        text.starts_with(&format!(
            "{} has 3 problems; nothing ran\n  {}:1: unknown key",
            repo.display(),
            repo.display()
        )),
        "{text}"
    );
}

#[test]
fn problems_of_the_user_file_the_repository_file_and_the_environment_are_reported_together() {
    let mut fx = Fixture::new();
    let user = fx.write_user("jobs = 2\nmax-writer = 1\n");
    let repo = fx.write_repo("land = \"maybe\"\n");
    fx.set("SWARM_RETRIES", "twice");
    let err = fx.load().unwrap_err();
    let places: Vec<(&Place, Option<usize>)> =
        err.problems.iter().map(|p| (&p.place, p.line)).collect();
    assert_eq!(
        places,
        [
            (&file(&user), Some(2)),
            (&file(&repo), Some(1)),
            (&Place::Var("SWARM_RETRIES"), None)
        ]
    );
    let text = err.to_string();
    assert!(
        text.starts_with("the configuration has 3 problems; nothing ran\n"),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "\n  {}:2: unknown key `max-writer`; did you mean `max-writers`?\n",
            user.display()
        )),
        "{text}"
    );
    assert!(
        text.ends_with("\n  SWARM_RETRIES: invalid value for `retries`: `twice` is not a whole number (0 or more)"),
        "{text}"
    );
}

#[test]
fn one_problem_is_counted_as_one() {
    let fx = Fixture::new();
    let repo = fx.write_repo("jobs = true\n");
    assert_eq!(
        fx.load().unwrap_err().to_string(),
        format!(
            "{0} has 1 problem; nothing ran\n  {0}:1: `jobs` must be a whole number (0 or more), not true",
            repo.display()
        )
    );
}

#[test]
fn a_value_of_the_wrong_type_is_said_in_plain_words_for_every_key() {
    // No key takes a date, so each is refused with the words of its own type.
    let fx = Fixture::new();
    let keys: Vec<Key> = Key::ALL.into_iter().filter(|k| k.in_files()).collect();
    let lines: Vec<String> = keys
        .iter()
        .map(|k| format!("{} = 1979-05-27\n", k.name()))
        .collect();
    let text = lines.concat();
    fx.write_repo(&text);
    let err = fx.load().unwrap_err();
    assert_eq!(err.problems.len(), keys.len(), "{err}");
    for (n, (key, problem)) in keys.iter().zip(&err.problems).enumerate() {
        assert_eq!(problem.line, Some(n + 1));
        assert_eq!(
            problem.message,
            format!(
                "`{}` must be {}, not the date 1979-05-27",
                key.name(),
                key.shape().words()
            )
        );
    }
    for (key, shape) in super::PROFILE_KEYS {
        let command = if key == "command" {
            ""
        } else {
            "command = \"x\"\n"
        };
        fx.write_repo(&format!("[agents.a]\n{command}{key} = 1979-05-27\n"));
        assert_eq!(
            fx.problem().message,
            format!(
                "agent `a`: `{key}` must be {}, not the date 1979-05-27",
                shape.words()
            )
        );
    }
    fx.write_repo("[pools.p]\nmembers = 1979-05-27\n");
    assert_eq!(
        fx.problem().message,
        "pool `p`: `members` must be a list of strings, not the date 1979-05-27"
    );
}

#[test]
fn types_are_said_in_plain_words() {
    let fx = Fixture::new();
    for (text, says) in [
        (
            "resolve-conflicts = \"yes\"",
            "`resolve-conflicts` must be true or false, not \"yes\"",
        ),
        (
            "include = \".env\"",
            "`include` must be a list of strings, not \".env\" (write [\".env\"])",
        ),
        (
            "cache = [\"target\", 3]",
            "`cache` must be a list of strings, not a list holding 3",
        ),
        (
            "task-timeout = 90",
            "`task-timeout` must be a duration like \"90s\", not 90",
        ),
        (
            "worktree-dir = false",
            "`worktree-dir` must be a path (a string), not false",
        ),
        ("model = 4.5", "`model` must be a string, not 4.5"),
        (
            "retries = -1",
            "`retries` must be a whole number (0 or more), not -1",
        ),
        (
            "jobs = 5000000000",
            "`jobs` must be a whole number (0 or more) up to 4294967295, not 5000000000",
        ),
        (
            "land = \"maybe\"",
            "`land` must be \"auto\", \"branch\" or \"none\", not \"maybe\"",
        ),
        (
            "land = \"brnach\"",
            "`land` must be \"auto\", \"branch\" or \"none\", not \"brnach\"; did you mean \"branch\"?",
        ),
        (
            "agents = 3",
            "`agents` must be a table of agents ([agents.NAME]), not 3",
        ),
        (
            "pools = [\"a\"]",
            "`pools` must be a table of pools ([pools.NAME]), not a list",
        ),
        (
            "agents.mine = \"my-agent\"",
            "agent `mine` must be a table ([agents.mine]), not \"my-agent\"",
        ),
        (
            "[agents.mine]\ncommand = \"x\"\nset-env = { A = \"1\", B = 2 }",
            "agent `mine`: `set-env` must be a table of strings (NAME = \"value\"); `B` is 2",
        ),
        (
            "[agent.mine]\ncommand = \"x\"",
            "`agent` must be a string, not a table; agent profiles are [agents.NAME] tables",
        ),
        (
            "setup = \"a very long command that goes on and on and on and on\"\ngate = 1",
            "`gate` must be a string, not 1",
        ),
        (
            "check = [\"a very long command that goes on and on and on and on\"]",
            "`check` must be a string, not a list",
        ),
        (
            "on-escalate = { a = 1 }",
            "`on-escalate` must be a string, not a table",
        ),
    ] {
        fx.write_repo(&format!("{text}\n"));
        let err = fx.problem();
        assert_eq!(err.message, says, "{text}");
        for word in ["u32", "u64", "invalid type", "sequence", "map", "variant"] {
            assert!(!err.message.contains(word), "{text}: {err}");
        }
    }
    // A long value is shown cut short.
    fx.write_repo("jobs = \"a value far longer than anyone would read back in full\"\n");
    assert_eq!(
        fx.problem().message,
        "`jobs` must be a whole number (0 or more), not \"a value far longer than anyone would rea…\""
    );
}

#[test]
fn unknown_keys_get_the_nearest_known_key() {
    let fx = Fixture::new();
    for (text, says) in [
        (
            "incldue = []",
            "unknown key `incldue`; did you mean `include`?",
        ),
        ("Jobs = 2", "unknown key `Jobs`; did you mean `jobs`?"),
        (
            "spawns_per_minite = 2",
            "unknown key `spawns_per_minite`; did you mean `spawns-per-minute`?",
        ),
        (
            "alow-programs = []",
            "unknown key `alow-programs`; did you mean `allow-program`?",
        ),
        (
            "cache-keys = []",
            "unknown key `cache-keys`; did you mean `cache-key`?",
        ),
        (
            "[pool.p]\nmembers = [\"a\"]",
            "unknown key `pool`; did you mean `pools`?",
        ),
        (
            "[agents.a]\ncommand = \"x\"\nwriter_args = []",
            "agent `a`: unknown key `writer_args`; did you mean `writer-args`?",
        ),
        (
            "[agents.a]\ncommand = \"x\"\nmax-concurent = 2",
            "agent `a`: unknown key `max-concurent`; did you mean `max-concurrent`?",
        ),
        (
            "[pools.p]\nmembers = [\"a\"]\nmember = [\"b\"]",
            "pool `p`: unknown key `member`; did you mean `members`?",
        ),
    ] {
        fx.write_repo(&format!("{text}\n"));
        assert_eq!(fx.problem().message, says, "{text}");
    }
    fx.write_repo("[pools.p]\nmembers = [\"a\"]\nweight = 2\n");
    assert_eq!(
        fx.problem().message,
        "pool `p`: unknown key `weight` (known: members)"
    );
}

#[test]
fn a_profile_without_a_command_or_a_pool_without_members_is_refused_once() {
    let fx = Fixture::new();
    fx.write_repo(
        "jobs = 2\n\n[agents.mine]\nargs = [\"-v\"]\n\n[agents.claude]\nargs = [\"-p\"]\n",
    );
    let err = fx.problem();
    assert_eq!(err.line, Some(3));
    assert_eq!(
        err.message,
        "agent `mine` has no `command`: name the program to run (only the built-in claude and codex need none)"
    );
    // A command of the wrong type is reported as that alone.
    fx.write_repo("[agents.mine]\ncommand = [\"my-agent\"]\n");
    assert_eq!(
        fx.problem().message,
        "agent `mine`: `command` must be a string, not a list"
    );
    // So is a misspelt one.
    fx.write_repo("[agents.mine]\ncomand = \"my-agent\"\n");
    assert_eq!(
        fx.problem().message,
        "agent `mine`: unknown key `comand`; did you mean `command`?"
    );
    fx.write_repo("[pools.p]\nmembrs = [\"a\"]\n");
    assert_eq!(
        fx.problem().message,
        "pool `p`: unknown key `membrs`; did you mean `members`?"
    );
    fx.write_repo("[agents.codex]\nmax-concurrent = 1\n");
    assert!(fx.load().is_ok());
}

#[test]
fn a_problem_does_not_hide_the_others_of_its_profile_or_pool() {
    let fx = Fixture::new();
    fx.write_repo(
        "[agents.a]\ncommand = \"x\"\nkind = \"rpc\"\nmax-concurrent = 0\nflavour = 1\n\n\
         [pools.p]\nmembers = [\"a\", \"pool:q\", \"a\"]\n",
    );
    let lines: Vec<String> = fx
        .problems()
        .iter()
        .map(|p| p.rsplit(".swarm.toml:").next().unwrap().to_owned())
        .collect();
    assert_eq!(
        lines,
        [
            "3: agent `a`: `kind` must be \"cli\" or \"acp\", not \"rpc\"",
            "4: agent `a`: `max-concurrent` must be at least 1",
            "5: agent `a`: unknown key `flavour` (known: command, args, reader-args, writer-args, parser, pass-env, drop-env, set-env, kind, max-concurrent, writes)",
            "8: pool `p`: member `pool:q` is a pool; a pool's members are agents",
            "8: pool `p`: member `a` is named twice",
        ]
    );
}

#[test]
fn every_syntax_error_of_a_file_is_reported() {
    let fx = Fixture::new();
    fx.write_repo("jobs = 2\nagent = \nmodel = \"m\ncheck = 3 4\n");
    let lines: Vec<Option<usize>> = fx
        .load()
        .unwrap_err()
        .problems
        .iter()
        .map(|p| p.line)
        .collect();
    assert_eq!(lines, [Some(2), Some(3), Some(4)]);
}

#[test]
fn every_bad_variable_is_reported() {
    let mut fx = Fixture::new();
    fx.set("SWARM_JOBS", "0");
    fx.set("SWARM_LAND", "sometimes");
    fx.set("SWARM_TASK_TIMEOUT", "soon");
    fx.set("SWARM_INCLUDE", "/etc/passwd");
    let places: Vec<Place> = fx
        .load()
        .unwrap_err()
        .problems
        .into_iter()
        .map(|p| p.place)
        .collect();
    assert_eq!(
        places,
        [
            Place::Var("SWARM_JOBS"),
            Place::Var("SWARM_TASK_TIMEOUT"),
            Place::Var("SWARM_LAND"),
            Place::Var("SWARM_INCLUDE"),
        ]
    );
}

#[test]
fn a_file_that_cannot_be_read_is_a_problem_of_its_own() {
    let fx = Fixture::new();
    std::fs::create_dir(fx.repo_file()).unwrap();
    fx.write_user("jobs = \"two\"\n");
    let err = fx.load().unwrap_err();
    assert_eq!(err.problems.len(), 2, "{err}");
    assert_eq!(err.problems[1].place, file(&fx.repo_file()));
    assert_eq!(err.problems[1].line, None);
    assert!(
        err.problems[1]
            .message
            .starts_with("could not read the config file: "),
        "{err}"
    );
}

#[test]
fn type_words_name_what_a_user_writes() {
    assert_eq!(Shape::Count.words(), "a whole number (0 or more)");
    assert_eq!(Shape::Strings.words(), "a list of strings");
    assert_eq!(Shape::Switch.words(), "true or false");
    assert_eq!(Shape::Duration.words(), "a duration like \"90s\"");
    assert_eq!(Shape::OneOf(&["cli"]).words(), "\"cli\"");
    assert_eq!(
        Shape::OneOf(&["a", "b", "c"]).words(),
        "\"a\", \"b\" or \"c\""
    );
}

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::{
    Config, ConfigError, Key, Land, Options, ProfileSpec, Source, describe, load, overlay, to_json,
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
    let err = load(None, &Options::default(), &env, Some(&missing)).unwrap_err();
    assert_eq!(err.file, missing);
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
        let err = fx.load().unwrap_err();
        assert_eq!(err.line, Some(line), "{text}: {err}");
        assert!(err.message.contains(says), "{text}: {err}");
    }
}

#[test]
fn unknown_top_level_key_is_refused_with_its_line() {
    let fx = Fixture::new();
    let repo = fx.write_repo("# settings\njobs = 2\n\njbos = 4\n");
    let err = fx.load().unwrap_err();
    assert_eq!((err.file.clone(), err.line), (repo.clone(), Some(4)));
    assert!(
        err.message
            .contains("unknown key `jbos` (known: jobs, max-writers")
    );
    assert!(
        err.to_string()
            .starts_with(&format!("{}:4: unknown key", repo.display())),
        "{err}"
    );
}

#[test]
fn snake_case_key_gets_a_suggestion() {
    let fx = Fixture::new();
    fx.write_repo("max_writers = 2\n");
    let err = fx.load().unwrap_err();
    assert!(err.message.contains("did you mean `max-writers`?"), "{err}");
}

#[test]
fn profile_kind_is_cli_or_acp() {
    let fx = Fixture::new();
    fx.write_user("[agents.a]\nkind = \"acp\"\ncommand = \"x\"\n");
    let config = fx.load().unwrap();
    assert_eq!(config.profiles["a"].0.kind.as_deref(), Some("acp"));
    let user = fx.write_user("[agents.a]\ncommand = \"x\"\nkind = \"rpc\"\n");
    let err = fx.load().unwrap_err();
    assert_eq!((err.file.clone(), err.line), (user, Some(3)));
    assert!(
        err.message
            .starts_with("agent `a`: unknown kind `rpc` (known: cli, acp)"),
        "{err}"
    );
}

#[test]
fn unknown_profile_key_is_refused_with_its_line() {
    let fx = Fixture::new();
    let user = fx.write_user("[agents.mine]\ncommand = \"x\"\ncomand = \"y\"\n");
    let err = fx.load().unwrap_err();
    assert_eq!((err.file.clone(), err.line), (user, Some(3)));
    assert!(
        err.message
            .starts_with("agent `mine`: unknown key `comand` (known: command, args"),
        "{err}"
    );
}

#[test]
fn unknown_parser_is_refused_with_its_line() {
    let fx = Fixture::new();
    fx.write_repo("[agents.mine]\ncommand = \"x\"\nparser = \"xml\"\n");
    let err = fx.load().unwrap_err();
    assert_eq!(err.line, Some(3));
    assert!(err.message.contains("unknown parser `xml`"), "{err}");
}

#[test]
fn wrong_type_is_refused_with_its_line() {
    let fx = Fixture::new();
    let repo = fx.write_repo("agent = \"claude\"\njobs = \"four\"\n");
    let err = fx.load().unwrap_err();
    assert_eq!((err.file.clone(), err.line), (repo, Some(2)));
    assert!(err.message.contains("invalid type"), "{err}");
}

#[test]
fn out_of_range_and_bad_durations_are_refused_with_their_lines() {
    let fx = Fixture::new();
    fx.write_repo("jobs = 0\n");
    let err = fx.load().unwrap_err();
    assert_eq!(err.line, Some(1));
    assert!(err.message.contains("`jobs`: 0 is out of range"), "{err}");
    fx.write_repo("jobs = 2\n\ntask-timeout = \"soon\"\n");
    let err = fx.load().unwrap_err();
    assert_eq!(err.line, Some(3));
    assert!(err.message.contains("bad duration"), "{err}");
    fx.write_repo("land = \"sometimes\"\n");
    assert_eq!(fx.load().unwrap_err().line, Some(1));
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
        let err = fx.load().unwrap_err();
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
    let err = fx.load().unwrap_err();
    assert_eq!((err.file.clone(), err.line), (fx.user_file(), Some(2)));
}

#[test]
fn api_key_in_a_file_is_refused_with_a_hint() {
    let fx = Fixture::new();
    fx.write_repo("model = \"m\"\napi-key = \"sk-secret\"\n");
    let err = fx.load().unwrap_err();
    assert_eq!(err.line, Some(2));
    assert!(err.message.contains("SWARM_API_KEY"), "{err}");
    assert!(!err.to_string().contains("sk-secret"), "{err}");
}

#[test]
fn per_run_keys_are_refused_in_files() {
    let fx = Fixture::new();
    fx.write_user("final-out = \"out.md\"\n");
    let err = fx.load().unwrap_err();
    assert_eq!(err.line, Some(1));
    assert!(err.message.contains("unknown key `final-out`"), "{err}");
    assert!(err.message.contains("--final-out"), "{err}");
    fx.write_user("base = \"main\"\n");
    assert!(fx.load().unwrap_err().message.contains("--base"));
}

#[test]
fn bad_env_value_names_the_variable() {
    let mut fx = Fixture::new();
    fx.set("SWARM_JOBS", "lots");
    let err = fx.load().unwrap_err();
    assert_eq!(
        (err.file.clone(), err.line),
        (PathBuf::from("SWARM_JOBS"), None)
    );
    assert!(err.to_string().starts_with("SWARM_JOBS: "), "{err}");
    assert!(
        err.message.contains("`lots` is not a whole number"),
        "{err}"
    );
    let mut fx = Fixture::new();
    fx.set("SWARM_RESOLVE_CONFLICTS", "maybe");
    assert_eq!(
        fx.load().unwrap_err().file,
        Path::new("SWARM_RESOLVE_CONFLICTS")
    );
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
budget-tokens = 5000000
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

[agents.all]
command = "a"
args = ["b"]
reader-args = ["c"]
writer-args = ["d"]
parser = "codex-jsonl"
pass-env = ["E"]
drop-env = ["F"]
set-env = { G = "h" }
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

//! The real Claude Code and Codex CLIs (and Codex's ACP adapter, `acp`), at the versions
//! `.ci/agents/package-lock.json` pins, run by the real swarm binary against a `ModelServer`
//! on loopback, with every other host refused by a `RefusingProxy`. Hermetic: each test has a
//! temporary HOME (Claude Code keeps its sessions in `~/.claude`, Codex in `CODEX_HOME`, here
//! `~/.codex`), and nothing leaves loopback.
//!
//! The CLIs are looked for in `.ci/agents/node_modules/.bin` of this repository (`npm ci
//! --prefix .ci/agents`), or in the directory `SWARM_TEST_AGENTS_BIN` names. When one is
//! missing its tests are reported as ignored, saying so (build.rs); with `CI` set they run,
//! and fail.

mod acp;
mod captures;
mod confined;
mod hangs;
mod hosts;
mod limits;
mod plans;
mod refusals;
mod sessions;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::TestRepo;
use crate::model_server::proxy::RefusingProxy;
use crate::model_server::{ModelServer, Reply, Request};

/// A coding-agent CLI under test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cli {
    Claude,
    Codex,
}

impl Cli {
    /// Its program name, and swarm's name for it (`--agent`).
    pub fn name(self) -> &'static str {
        match self {
            Cli::Claude => "claude",
            Cli::Codex => "codex",
        }
    }
}

/// How Claude Code signs in to the model server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClaudeAuth {
    /// `ANTHROPIC_API_KEY`: billed per token; a 429 is a plain rate limit.
    ApiKey,
    /// `CLAUDE_CODE_OAUTH_TOKEN`: a subscription, the only sign-in under which Claude Code
    /// reads the `anthropic-ratelimit-unified-*` headers as a usage limit (and whose default
    /// model is another).
    Subscription,
}

/// How often the CLI itself retries a failed model request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Retries {
    /// Never (`CLAUDE_CODE_MAX_RETRIES=0`, though under swarm the claude profile's own
    /// `CLAUDE_CODE_MAX_RETRIES=1` wins; the Codex provider's `request_max_retries` and
    /// `stream_max_retries` at 0): a failure shows at once.
    Never,
    /// As the CLI does by default (Claude Code: 10 retries, about three minutes for a lasting
    /// 500; Codex: `request_max_retries` 4 within each of 1 + `stream_max_retries` 5 attempts,
    /// 30 requests in about 25 s).
    Default,
}

/// The directory holding the real `cli`. A test that comes here needs it (where it is missing
/// the test is ignored, but under CI), so its absence fails `test`.
pub fn installed(cli: Cli, test: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = std::env::var_os("SWARM_TEST_AGENTS_BIN").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/agents/node_modules/.bin"),
        PathBuf::from,
    );
    let program = dir.join(cli.name());
    assert!(
        std::fs::metadata(&program)
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0),
        "{test} needs the real {} CLI, and {} is not there: run `npm ci --prefix .ci/agents --no-audit --no-fund` first (or name the CLIs' directory in SWARM_TEST_AGENTS_BIN)",
        cli.name(),
        program.display()
    );
    dir
}

/// A test repository, a model server and a refusing proxy, and the environment that points
/// one real CLI at them.
pub struct Rig {
    pub repo: TestRepo,
    pub server: ModelServer,
    pub proxy: RefusingProxy,
    pub cli: Cli,
    pub bin: PathBuf,
    auth: ClaudeAuth,
    retries: Retries,
}

/// Claude Code's switches for traffic it need not send. The first alone silences every other
/// host (without it Claude Code opens tunnels to api.anthropic.com:443 through the proxy, 5
/// of them, 3 with `DISABLE_TELEMETRY`); the others say what they silence.
pub const CLAUDE_SWITCHES: [&str; 4] = [
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
    "DISABLE_AUTOUPDATER",
    "DISABLE_TELEMETRY",
    "DISABLE_ERROR_REPORTING",
];

/// The environment variable Codex reads its provider's key from (`env_key`).
const CODEX_KEY_VAR: &str = "LOOPBACK_MODEL_KEY";

impl Rig {
    /// The rig for `cli` with an API key and no retries.
    pub fn start(
        cli: Cli,
        test: &str,
        script: impl Fn(&Request, usize) -> Reply + Send + Sync + 'static,
    ) -> Self {
        Self::start_with(cli, test, ClaudeAuth::ApiKey, Retries::Never, script)
    }

    pub fn start_with(
        cli: Cli,
        test: &str,
        auth: ClaudeAuth,
        retries: Retries,
        script: impl Fn(&Request, usize) -> Reply + Send + Sync + 'static,
    ) -> Self {
        let bin = installed(cli, test);
        let rig = Self {
            repo: TestRepo::new(),
            server: ModelServer::start(script),
            proxy: RefusingProxy::start(),
            cli,
            bin,
            auth,
            retries,
        };
        std::fs::create_dir_all(rig.tmp()).unwrap();
        if cli == Cli::Codex {
            std::fs::create_dir_all(rig.codex_home()).unwrap();
            std::fs::write(rig.codex_home().join("config.toml"), rig.codex_config()).unwrap();
        }
        rig
    }

    /// The test's HOME (the repository's parent, outside it).
    pub fn home(&self) -> PathBuf {
        self.repo.cache.parent().unwrap().to_owned()
    }

    /// `TMPDIR` for the CLIs, inside HOME. Codex refuses to put its helper binaries (the
    /// `codex-linux-sandbox` and `apply_patch` aliases) in a `CODEX_HOME` under the temporary
    /// directory and warns on stderr at every start ("Refusing to create helper binaries under
    /// temporary dir"; 0.169.0 sandboxes commands and applies patches all the same): with
    /// TMPDIR here, `CODEX_HOME` is not under it, and stderr holds only what matters.
    fn tmp(&self) -> PathBuf {
        self.home().join("tmp")
    }

    pub fn codex_home(&self) -> PathBuf {
        self.home().join(".codex")
    }

    /// Codex's configuration: a provider for the model server, a model Codex knows (another
    /// name makes it warn "Model metadata for `…` not found" as an `error` item in its JSON),
    /// and its traffic switches off.
    fn codex_config(&self) -> String {
        let retries = match self.retries {
            Retries::Never => "request_max_retries = 0\nstream_max_retries = 0\n",
            Retries::Default => "",
        };
        format!(
            r#"model = "gpt-5.5"
model_provider = "loopback"
# exec made no update check here even without this; kept off all the same.
check_for_update_on_startup = false

# Plugins sync their catalogue from github.com, api.github.com and chatgpt.com at every start.
[features]
plugins = false

# Analytics send metrics to ab.chatgpt.com.
[analytics]
enabled = false

[model_providers.loopback]
name = "loopback model server"
base_url = "{base}"
wire_api = "responses"
env_key = "{CODEX_KEY_VAR}"
{retries}"#,
            base = self.server.v1_url(),
        )
    }

    /// What the CLI needs in swarm's (cleared) environment: its directory first on PATH, the
    /// model server, the proxy for every other host, and the CLI's own switches for traffic it
    /// need not send.
    pub fn env(&self) -> Vec<(&'static str, OsString)> {
        let mut path = OsString::from(&self.bin);
        path.push(":");
        path.push(crate::search_path());
        let proxy = OsString::from(self.proxy.url());
        let loopback = OsString::from("127.0.0.1,localhost");
        let mut env = vec![
            ("PATH", path),
            ("TMPDIR", self.tmp().into()),
            ("HTTPS_PROXY", proxy.clone()),
            ("https_proxy", proxy.clone()),
            ("HTTP_PROXY", proxy.clone()),
            ("http_proxy", proxy.clone()),
            ("ALL_PROXY", proxy.clone()),
            ("all_proxy", proxy),
            ("NO_PROXY", loopback.clone()),
            ("no_proxy", loopback),
        ];
        match self.cli {
            Cli::Claude => {
                env.push(("ANTHROPIC_BASE_URL", self.server.url().into()));
                env.push(match self.auth {
                    ClaudeAuth::ApiKey => ("ANTHROPIC_API_KEY", "sk-ant-loopback-test".into()),
                    ClaudeAuth::Subscription => (
                        "CLAUDE_CODE_OAUTH_TOKEN",
                        "sk-ant-oat01-loopback-test".into(),
                    ),
                });
                for switch in CLAUDE_SWITCHES {
                    env.push((switch, "1".into()));
                }
                if self.retries == Retries::Never {
                    env.push(("CLAUDE_CODE_MAX_RETRIES", "0".into()));
                }
            }
            Cli::Codex => {
                env.push(("CODEX_HOME", self.codex_home().into()));
                env.push((CODEX_KEY_VAR, "loopback-test-key".into()));
            }
        }
        env
    }

    /// swarm in the repository, with the CLI's environment.
    pub fn swarm_cmd(&self) -> Command {
        let mut cmd = self.repo.swarm_cmd();
        cmd.envs(self.env());
        cmd
    }

    /// The CLI itself in `dir`, with the same environment swarm would give it.
    pub fn cli_cmd(&self, dir: &Path) -> Command {
        let mut cmd = self
            .repo
            .command(self.bin.join(self.cli.name()).to_str().unwrap());
        cmd.envs(self.env()).current_dir(dir);
        cmd
    }

    /// The arguments swarm's built-in profile gives the CLI for a task of `mode`, for runs of
    /// the CLI alone.
    pub fn profile_args(&self, mode: Mode) -> Vec<String> {
        let profile = match self.cli {
            Cli::Claude => swarm::agent::cli::claude_profile(),
            Cli::Codex => swarm::agent::cli::codex_profile(),
        };
        match mode {
            Mode::Read => profile.reader_args,
            Mode::Write => profile.writer_args,
        }
    }

    /// Runs `swarm run TASKS --agent <cli> ARGS…` to its end.
    pub fn run(&self, tasks: &[serde_json::Value], args: &[&str]) -> std::process::Output {
        let lines: Vec<String> = tasks.iter().map(serde_json::Value::to_string).collect();
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        let file = self.repo.tasks(&refs);
        self.swarm_cmd()
            .args(["run", file.to_str().unwrap(), "--agent", self.cli.name()])
            .args(args)
            .output()
            .expect("running swarm")
    }

    /// Runs the CLI alone in the repository with `args`, `prompt` on its stdin (then closed),
    /// in the environment of `env` (not with the variables a swarm profile sets: the test
    /// decides, `CLAUDE_CODE_MAX_RETRIES` above all).
    pub fn run_cli(
        &self,
        args: impl IntoIterator<Item = impl AsRef<std::ffi::OsStr>>,
        prompt: &str,
    ) -> std::process::Output {
        let mut cmd = self.cli_cmd(&self.repo.root);
        cmd.args(args);
        Self::run_with_prompt(cmd, prompt)
    }

    /// Runs `cmd` with `prompt` on its stdin, then closed.
    pub fn run_with_prompt(mut cmd: Command, prompt: &str) -> std::process::Output {
        use std::io::Write as _;
        let mut child = cmd
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("starting the CLI");
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(prompt.as_bytes()).unwrap();
        drop(stdin);
        child.wait_with_output().expect("running the CLI")
    }

    /// Asserts that the CLI reached no host but the model server.
    #[track_caller]
    pub fn assert_no_other_host(&self) {
        let hosts = self.proxy.hosts();
        assert!(
            hosts.is_empty(),
            "{} tried other hosts: {hosts:?}",
            self.cli.name()
        );
    }
}

/// A task's mode, for the CLI's arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Read,
    Write,
}

/// The task a model request belongs to: the `NAME` of the first `(task: NAME)` in what the
/// user said (each test's prompts carry one).
pub fn task_of(request: &Request) -> String {
    let text = request.user_text();
    let Some((_, rest)) = text.split_once("(task: ") else {
        return String::new();
    };
    rest.split(')').next().unwrap_or_default().to_owned()
}

/// The processes still alive (not zombies) whose environment holds `SWARM_RUN_ID=<run>`, each
/// as its pid and command line.
pub fn processes_of_run(run: &str) -> Vec<String> {
    let wanted = format!("SWARM_RUN_ID={run}");
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|&b| b == 0).any(|v| v == wanted.as_bytes()))
        })
        .filter(|pid| {
            // A zombie has been killed, only not reaped yet (its parent may be gone).
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                stat.rsplit_once(") ")
                    .is_some_and(|(_, rest)| !rest.starts_with('Z') && !rest.starts_with('X'))
            })
        })
        .map(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            format!(
                "{pid} {}",
                String::from_utf8_lossy(&cmdline).replace('\0', " ")
            )
        })
        .collect()
}

/// Two hours from now: a usage limit's reset far enough away for swarm to stop the run rather
/// than wait.
pub fn in_two_hours() -> std::time::SystemTime {
    std::time::SystemTime::now() + std::time::Duration::from_secs(2 * 3600)
}

/// The JSON of one task in `swarm status --json`.
pub fn task_status(status: &serde_json::Value, id: &str) -> serde_json::Value {
    status["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == id)
        .unwrap_or_else(|| panic!("no task {id} in {status:#}"))
        .clone()
}

#[test]
fn processes_of_run_finds_a_process_by_its_run_id_until_it_is_gone() {
    use std::io::BufRead as _;
    use std::process::Stdio;
    let run = format!("test-run-{}", std::process::id());
    // The shell says when it runs (just after an exec, its environment may not be readable
    // yet), then waits for its stdin to close.
    let mut child = Command::new("sh")
        .args(["-c", "echo ready; read line"])
        .env("SWARM_RUN_ID", &run)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut ready = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut ready)
        .unwrap();

    let found = processes_of_run(&run);
    drop(child.stdin.take());
    child.wait().unwrap();

    assert_eq!(
        found,
        [format!("{} sh -c echo ready; read line ", child.id())]
    );
    assert!(processes_of_run(&run).is_empty());
}

//! The CI configuration `swarm ci` writes: a GitHub Actions workflow, a GitLab CI file or
//! Kubernetes Jobs that spread one run over CI runners, coordinated through the git remote (a
//! coordinator `swarm run … --remote`, N `swarm worker --remote`). Text only: it reads and writes
//! nothing, checks the values it is given, and quotes each one for the YAML and the shell it
//! lands in.

use crate::error::Usage;

mod github;
mod gitlab;
mod k8s;
mod text;

/// Where the runners are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Github,
    Gitlab,
    K8s,
}

impl Target {
    /// The name `swarm ci` takes.
    pub fn name(self) -> &'static str {
        match self {
            Self::Github => "github",
            Self::Gitlab => "gitlab",
            Self::K8s => "k8s",
        }
    }
}

/// The workers a configuration starts when `--workers` is not given.
pub const DEFAULT_WORKERS: u16 = 3;
/// At most this many workers: GitHub's cap on the jobs of one matrix.
pub const MAX_WORKERS: u16 = 256;
/// GitLab's cap on `parallel`.
const MAX_GITLAB_WORKERS: u16 = 200;
/// The remote the run is coordinated through when `--remote` is not given.
pub const DEFAULT_REMOTE: &str = "origin";
/// How a runner gets swarm when `--install` is not given: built from its source, whose git URL
/// the CI variable `SWARM_CI_SOURCE` holds. swarm is not on crates.io under its own name, and a
/// crate of that name there is someone else's: installing it would run a stranger's code next
/// to the repository's push token and the agents' keys.
pub const DEFAULT_INSTALL: &str =
    "cargo install --locked --git \"${SWARM_CI_SOURCE:?set it to the git URL of swarm}\" swarm";
/// The variable of the default install command.
const SOURCE_VAR: &str = "SWARM_CI_SOURCE";
/// The variables the coordinator takes its goal or plan from.
const GOAL_VAR: &str = "SWARM_CI_GOAL";
const PLAN_VAR: &str = "SWARM_CI_PLAN";
/// The agents' credentials each job gets from the CI's secrets.
const SECRETS: &[&str] = &["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "SWARM_API_KEY"];
/// The key the run's records are signed with, which every job gets from the CI's secrets and
/// requires: with it, push access to the remote (which the agents in the jobs have) forges no
/// result.
const KEY_VAR: &str = crate::remote::KEY_VAR;
/// The coordinator's report, in its checkout.
const REPORT: &str = "swarm-report.md";
/// The container image of the GitLab jobs and the Kubernetes pods: Rust, a C compiler and git,
/// which building swarm needs.
const IMAGE: &str = "rust:1";

/// What `swarm ci` was asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    pub target: Target,
    /// How many workers run tasks (the coordinator runs none).
    pub workers: u16,
    /// A task file in the repository the coordinator runs; without one, a goal is asked for
    /// when the run is started.
    pub plan: Option<String>,
    /// How a runner gets swarm (a shell command); `None`: `DEFAULT_INSTALL`.
    pub install: Option<String>,
    /// The remote the run is coordinated through: a name or a URL.
    pub remote: String,
}

impl Template {
    /// The configuration for `target` with every option at its default.
    pub fn new(target: Target) -> Self {
        Self {
            target,
            workers: DEFAULT_WORKERS,
            plan: None,
            install: None,
            remote: DEFAULT_REMOTE.to_owned(),
        }
    }

    /// The configuration file, or why these values make none.
    pub fn render(&self) -> Result<String, Usage> {
        self.check()?;
        Ok(match self.target {
            Target::Github => github::render(self),
            Target::Gitlab => gitlab::render(self),
            Target::K8s => k8s::render(self),
        })
    }

    fn check(&self) -> Result<(), Usage> {
        if !(1..=MAX_WORKERS).contains(&self.workers) {
            return Err(Usage::new(format!(
                "--workers {}: a run needs 1 to {MAX_WORKERS} workers",
                self.workers
            )));
        }
        if self.target == Target::Gitlab && self.workers > MAX_GITLAB_WORKERS {
            return Err(Usage::new(format!(
                "--workers {}: GitLab runs at most {MAX_GITLAB_WORKERS} copies of one job (parallel)",
                self.workers
            ))
            .hint(format!("give --workers {MAX_GITLAB_WORKERS} or fewer")));
        }
        let remote = &self.remote;
        if remote.is_empty()
            || remote.starts_with('-')
            || remote.chars().any(|c| c.is_whitespace() || c.is_control())
        {
            return Err(Usage::new(format!(
                "--remote {remote:?}: not a git remote's name or URL"
            )));
        }
        if holds_password(remote) {
            return Err(Usage::new(
                "--remote: the URL holds a password, which would be written into a file that is committed",
            )
            .hint("give the URL without it; the jobs push with the token the file's first lines name"));
        }
        if self.target != Target::K8s && remote != DEFAULT_REMOTE && !is_url(remote) {
            let ci = match self.target {
                Target::Github => "a GitHub Actions checkout",
                _ => "a GitLab CI checkout",
            };
            return Err(Usage::new(format!(
                "--remote {remote}: {ci} has one remote, {DEFAULT_REMOTE}"
            ))
            .hint("give the URL of another remote, or leave --remote out"));
        }
        if let Some(plan) = &self.plan {
            let why = if plan.is_empty() {
                Some("names no file")
            } else if plan.starts_with('/') {
                Some("is absolute; give the task file's path in the repository")
            } else if plan.starts_with('-') {
                Some("starts with -, which swarm would read as a flag")
            } else if plan.chars().any(char::is_control) {
                Some("holds a control character")
            } else {
                None
            };
            if let Some(why) = why {
                return Err(Usage::new(format!("--plan {plan}: the path {why}")));
            }
        }
        if let Some(install) = &self.install
            && install.trim().is_empty()
        {
            return Err(Usage::new("--install: the command is empty"));
        }
        Ok(())
    }

    /// The `swarm ci` command line that makes this configuration: the options that differ
    /// from their defaults, in a fixed order.
    pub fn command_line(&self) -> String {
        let mut words = vec![
            "swarm".to_owned(),
            "ci".to_owned(),
            self.target.name().into(),
        ];
        if self.workers != DEFAULT_WORKERS {
            words.extend(["--workers".to_owned(), self.workers.to_string()]);
        }
        if let Some(plan) = &self.plan {
            words.extend(["--plan".to_owned(), text::shell_word(plan)]);
        }
        if self.remote != DEFAULT_REMOTE {
            words.extend(["--remote".to_owned(), text::shell_word(&self.remote)]);
        }
        if let Some(install) = &self.install {
            words.extend(["--install".to_owned(), text::shell_word(install.trim())]);
        }
        words.join(" ")
    }

    /// The shell command that installs swarm.
    fn install(&self) -> &str {
        self.install.as_deref().map_or(DEFAULT_INSTALL, str::trim)
    }

    /// Whether the install command reads `SWARM_CI_SOURCE`.
    fn needs_source(&self) -> bool {
        self.install().contains(SOURCE_VAR)
    }

    /// The coordinator's swarm command.
    fn coordinator(&self) -> String {
        let remote = text::shell_word(&self.remote);
        match self.plan {
            Some(_) => format!(
                "swarm run \"${PLAN_VAR}\" --remote {remote} --land branch --final-out {REPORT}"
            ),
            None => format!(
                "swarm --goal \"${GOAL_VAR}\" --remote {remote} --land branch --final-out {REPORT}"
            ),
        }
    }

    /// A worker's swarm command.
    fn worker(&self) -> String {
        format!("swarm worker --remote {}", text::shell_word(&self.remote))
    }

    /// Pushes the coordinator's branches (the run's, and any parked ones) to the remote: the
    /// result of a run on a runner that is thrown away afterwards. Every job starts from a
    /// fresh clone (actions/checkout deletes the local branches of a reused one), so the
    /// branches under `swarm/` are this run's.
    fn push_branches(&self) -> String {
        format!(
            "git for-each-ref --format='%(refname)' refs/heads/swarm/ | xargs -r git push {}",
            text::shell_word(&self.remote)
        )
    }

    /// The comment every file starts with: the command that made it (on one line, however
    /// long, so that it can be copied), then `paragraphs`, each wrapped; a paragraph starting
    /// with two spaces is kept as written.
    fn header(&self, paragraphs: &[String]) -> String {
        let mut out = format!("# Generated by `{}`.\n", self.command_line());
        out.push_str(&text::comment(
            "Generate it again with other options (`swarm ci --help`), or edit it: it is yours.",
        ));
        for paragraph in paragraphs {
            out.push_str("#\n");
            out.push_str(&text::comment(paragraph));
        }
        out
    }

    /// What the header says about the agents' credentials, in `place`.
    fn secrets_sentence(place: &str) -> String {
        format!(
            "The agents' keys come from {place}: {} (those your agents use; an unset one is empty, which swarm takes as unset). Agents that are the Claude Code or Codex CLIs need installing too: add them to the install command (--install '… && npm install -g @anthropic-ai/claude-code').",
            SECRETS.join(", ")
        )
    }

    /// What the header says about the key the run's records are signed with, kept in `place`
    /// and made by `how`.
    fn key_sentence(place: &str, how: &str) -> String {
        format!(
            "The run's records on the remote are signed with the key in {KEY_VAR} ({place}), which the coordinator and every worker get: anyone else who can push to the remote (an agent in a job can) then forges no result, since swarm refuses every result without the key's signature. Make it once: {how}. A job without it stops at once, naming it."
        )
    }

    /// What the header says about how runners get swarm.
    fn install_sentence(&self, place: &str) -> String {
        if self.needs_source() {
            format!(
                "Each runner builds swarm from its source: set {SOURCE_VAR} ({place}) to its git URL, or generate this file with --install CMD (a prebuilt binary saves minutes a job)."
            )
        } else {
            "swarm is installed on each runner with the command given to --install.".to_owned()
        }
    }

    /// What a run of this configuration does, for the header: the coordinator and the
    /// workers, as `jobs` calls them, and where its report ends up.
    fn summary(&self, runners: &str, jobs: &str, report: &str) -> String {
        let does = match &self.plan {
            Some(plan) => format!("runs the task file {plan}"),
            None => "plans the goal".to_owned(),
        };
        format!(
            "One swarm run over {runners}, coordinated through the git remote {remote}: the coordinator {jobs} {does}, publishes the run under refs/swarm/ and merges what {n} worker {jobs}{s} push back. The result stays on the branch swarm/<run>, pushed with any parked branches (swarm/<run>-<task>) for review; {report}. A worker waits for the run to appear (swarm worker --wait) and stops when it has no work left for it.",
            remote = self.remote,
            n = self.workers,
            s = if self.workers == 1 { "" } else { "s" },
        )
    }

    /// The header's last paragraph: what else to edit.
    fn edit_sentence(knobs: &str) -> String {
        format!(
            "Also worth editing: {knobs}; swarm worker -j N, the tasks a worker runs at once (default 4); and --land branch, which keeps the work on its branch: with --land auto (and a push of that branch) the run lands on the branch it started from."
        )
    }
}

/// A shell line that stops a job at once, naming `KEY_VAR` and `place`, when the key is not
/// set.
fn key_guard(place: &str) -> String {
    format!(
        ": \"${{{KEY_VAR}:?set {place} {KEY_VAR}: the key the run's records are signed with}}\""
    )
}

/// Whether a URL has a password in it: `https://user:secret@host/…`.
fn holds_password(remote: &str) -> bool {
    let Some((_, rest)) = remote.split_once("://") else {
        return false;
    };
    let authority = rest.split('/').next().unwrap_or(rest);
    authority
        .rsplit_once('@')
        .is_some_and(|(userinfo, _)| userinfo.contains(':'))
}

/// Whether a `--remote` is a URL (or scp-like `host:path`) rather than a remote's name.
fn is_url(remote: &str) -> bool {
    remote.contains(':') || remote.contains('/')
}

#[cfg(test)]
mod tests;

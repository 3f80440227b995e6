//! The Kubernetes manifest: a Job for the coordinator and an Indexed Job of N workers, each pod
//! cloning the repository itself, with every credential from one Secret.

use std::fmt::Write as _;

use super::text::{block, scalar, shell_word};
use super::{
    DEFAULT_REMOTE, GOAL_VAR, IMAGE, KEY_VAR, PLAN_VAR, REPORT, SECRETS, SOURCE_VAR, Template,
    is_url,
};

/// The Secret every pod takes its environment from.
const SECRET: &str = "swarm";
/// The variables of the Secret that clone and push.
const REPO_VAR: &str = "SWARM_CI_REPO";
const TOKEN_VAR: &str = "SWARM_CI_PUSH_TOKEN";
/// How long a Job may run, and how long a finished one is kept.
const DEADLINE_SECONDS: u32 = 6 * 60 * 60;
const KEEP_SECONDS: u32 = 24 * 60 * 60;

pub(super) fn render(t: &Template) -> String {
    let (var, value, start) = match &t.plan {
        Some(plan) => (
            PLAN_VAR,
            plan.as_str(),
            "Start it with `kubectl create -f FILE`; the coordinator runs the task file SWARM_CI_PLAN names.",
        ),
        None => (
            GOAL_VAR,
            "",
            "Set the goal (SWARM_CI_GOAL in the coordinator Job below), then start it with `kubectl create -f FILE`.",
        ),
    };
    let mut literals: Vec<String> = vec![
        format!("--from-literal={REPO_VAR}=https://HOST/OWNER/REPO.git"),
        format!("--from-literal={TOKEN_VAR}=TOKEN"),
        format!("--from-literal={KEY_VAR}=\"$(openssl rand -hex 32)\""),
    ];
    if t.needs_source() {
        literals.push(format!("--from-literal={SOURCE_VAR}=GIT-URL-OF-SWARM"));
    }
    literals.extend(SECRETS.iter().map(|s| format!("--from-literal={s}=…")));
    let mut secret = format!("  kubectl create secret generic {SECRET} \\");
    for (i, literal) in literals.iter().enumerate() {
        let end = if i + 1 == literals.len() { "" } else { " \\" };
        let _ = write!(secret, "\n      {literal}{end}");
    }
    let y = t.header(&[
        t.summary(
            "Kubernetes pods",
            "Job",
            "the coordinator prints the report at the end of its log",
        ),
        start.to_owned(),
        format!(
            "Every pod takes its environment from the Secret {SECRET}: {REPO_VAR} (the https URL of the repository, which each pod clones whole), {TOKEN_VAR} (a token that can push to it, given to git as the password of the user SWARM_CI_PUSH_USER, default swarm), {KEY_VAR} (the key the run's records on the remote are signed with: anyone else who can push to the remote, as an agent in a pod can, then forges no result) and the agents' keys ({}: those your agents use). Make it first:",
            SECRETS.join(", "),
        ),
        secret,
        format!(
            "{} Agents that are the Claude Code or Codex CLIs need installing too: add them to the install command (--install '… && npm install -g @anthropic-ai/claude-code').",
            t.install_sentence("in the Secret"),
        ),
        format!(
            "The Jobs have fixed names: delete them (kubectl delete job swarm-coordinator swarm-workers) before the next run, or wait until they are removed {} hours after they finish.",
            KEEP_SECONDS / 3600
        ),
        Template::edit_sentence("image, resources, activeDeadlineSeconds (the longest a Job may run)"),
    ]);
    let mut out = y;
    out.push('\n');
    let coordinator = format!(
        "status=0\n{} || status=$?\n{}\ncat {REPORT} || true\nexit \"$status\"",
        t.coordinator(),
        t.push_branches()
    );
    job(
        &mut out,
        t,
        "coordinator",
        "",
        &[(var, value)],
        &coordinator,
        0,
    );
    out.push_str("---\n");
    let workers = format!(
        "  completionMode: Indexed\n  completions: {n}\n  parallelism: {n}\n",
        n = t.workers
    );
    job(
        &mut out,
        t,
        "workers",
        &workers,
        &[],
        &t.worker(),
        t.workers,
    );
    out
}

/// One Job: `spec` lines before the template, the container's `env`, what it runs once the
/// repository is cloned, and how many failed pods it retries.
fn job(
    out: &mut String,
    t: &Template,
    component: &str,
    spec: &str,
    env: &[(&str, &str)],
    script: &str,
    retries: u16,
) {
    let labels =
        format!("app.kubernetes.io/name: swarm\n  app.kubernetes.io/component: {component}");
    let _ = write!(
        out,
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: swarm-{component}\n  labels:\n    {}\nspec:\n{spec}  backoffLimit: {retries}\n  activeDeadlineSeconds: {DEADLINE_SECONDS}\n  ttlSecondsAfterFinished: {KEEP_SECONDS}\n  template:\n    metadata:\n      labels:\n        {}\n    spec:\n      restartPolicy: Never\n      containers:\n        - name: swarm\n          image: {}\n          workingDir: /work\n          envFrom:\n            - secretRef:\n                name: {SECRET}\n",
        labels.replace("\n  ", "\n    "),
        labels.replace("\n  ", "\n        "),
        scalar(IMAGE),
    );
    let mut env_lines = String::new();
    for (name, value) in env {
        let _ = write!(
            env_lines,
            "\n            - name: {name}\n              value: {}",
            scalar(value)
        );
    }
    if !env_lines.is_empty() {
        let _ = writeln!(out, "          env:{env_lines}");
    }
    let whole = format!(
        "set -eu\n{}{}\n{}\ncd repo\n{script}",
        guard(t, env),
        prepare(t),
        t.install()
    );
    let _ = write!(
        out,
        "          command:\n            - sh\n            - -c\n            -{}\n          resources:\n            requests:\n              cpu: \"1\"\n              memory: 2Gi\n          volumeMounts:\n            - name: work\n              mountPath: /work\n      volumes:\n        - name: work\n          emptyDir: {{}}\n",
        block(&escape_references(&whole), 12)
    );
}

/// A check that the Job's own input was filled in, for the coordinator of a goal.
fn guard(t: &Template, env: &[(&str, &str)]) -> String {
    if t.plan.is_none() && env.iter().any(|(name, _)| *name == GOAL_VAR) {
        format!(": \"${{{GOAL_VAR}:?set {GOAL_VAR} in the coordinator Job to the goal}}\"\n")
    } else {
        String::new()
    }
}

/// The identity of swarm's commits, the push token as a credential helper (so it stays out of
/// the remote's URL), and the clone, under the remote's name when `--remote` names one.
fn prepare(t: &Template) -> String {
    let origin = if is_url(&t.remote) || t.remote == DEFAULT_REMOTE {
        String::new()
    } else {
        format!(" --origin {}", shell_word(&t.remote))
    };
    format!(
        ": \"${{{REPO_VAR}:?the Secret {SECRET} has no {REPO_VAR}}}\"\n\
: \"${{{TOKEN_VAR}:?the Secret {SECRET} has no {TOKEN_VAR}}}\"\n\
: \"${{{KEY_VAR}:?the Secret {SECRET} has no {KEY_VAR}: the key the run's records are signed with}}\"\n\
git config --global user.name swarm\n\
git config --global user.email swarm@localhost\n\
git config --global credential.helper '!f() {{ echo \"username=${{SWARM_CI_PUSH_USER:-swarm}}\"; echo \"password=${TOKEN_VAR}\"; }}; f'\n\
git clone{origin} \"${REPO_VAR}\" repo"
    )
}

/// Kubernetes reads `$(NAME)` in a container's command as the value of the variable NAME, and
/// `$$` as `$`: doubled, each `$` reaches the shell as written.
fn escape_references(script: &str) -> String {
    let mut out = String::with_capacity(script.len());
    let mut chars = script.chars().peekable();
    while let Some(c) = chars.next() {
        out.push(c);
        if c == '$' && matches!(chars.peek(), Some('$' | '(')) {
            out.push('$');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn dollars_before_a_parenthesis_or_a_dollar_are_doubled() {
        assert_eq!(
            super::escape_references("a=$(b) $$ ${c} $d"),
            "a=$$(b) $$$ ${c} $d"
        );
    }
}

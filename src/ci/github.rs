//! The GitHub Actions workflow: started by hand (`workflow_dispatch`), a coordinator job and a
//! matrix of worker jobs, each in a full checkout whose token can push.

use std::fmt::Write as _;

use super::text::{block, comment, numbers, scalar};
use super::{GOAL_VAR, KEY_VAR, PLAN_VAR, REPORT, SECRETS, SOURCE_VAR, Template, key_guard};

/// The actions the jobs use, at their current major versions: both run on Node 24 (their v4s
/// ran on Node 20, which GitHub removes from its runners).
const CHECKOUT: &str = "actions/checkout@v7";
const UPLOAD_ARTIFACT: &str = "actions/upload-artifact@v7";

pub(super) fn render(t: &Template) -> String {
    let start = match &t.plan {
        Some(_) => {
            "Start it from the Actions tab (Run workflow); it runs the task file given there. Started otherwise (add `schedule:` under `on:` for a nightly run), it runs the one given to --plan."
        }
        None => "Start it from the Actions tab (Run workflow), with a goal.",
    };
    let mut y = t.header(&[
        t.summary(
            "GitHub Actions runners",
            "job",
            "the report is the workflow run's artifact swarm-report",
        ),
        start.to_owned(),
        format!(
            "{} {}",
            Template::secrets_sentence(
                "the repository's secrets (Settings > Secrets and variables > Actions)"
            ),
            t.install_sentence("a repository secret too: it may hold a token, for a private copy"),
        ),
        Template::key_sentence(
            "a repository secret",
            &format!("`openssl rand -hex 32 | gh secret set {KEY_VAR}`"),
        ),
        Template::edit_sentence("runs-on, timeout-minutes (6 hours at most on GitHub's runners)"),
    ]);
    y.push_str("\nname: swarm\n\non:\n  workflow_dispatch:\n    inputs:\n");
    match &t.plan {
        Some(plan) => {
            let _ = write!(
                y,
                "      plan:\n        description: The task file to run, in the repository (swarm run)\n        required: true\n        type: string\n        default: {}\n",
                scalar(plan)
            );
        }
        None => y.push_str(
            "      goal:\n        description: What to do, in prose (swarm --goal)\n        required: true\n        type: string\n",
        ),
    }
    y.push('\n');
    y.push_str(&comment(
        "The jobs push: the workers their results under refs/swarm/, the coordinator the run's state and its branches. The token of actions/checkout does it, with these permissions.",
    ));
    y.push_str("permissions:\n  contents: write\n\n");
    y.push_str(&comment(
        "One swarm run at a time in this repository: a worker joins the run it finds on the remote, so two runs at once would share their workers. A second start waits for the first run to end rather than cancelling it, which would leave that run half done.",
    ));
    y.push_str(
        "concurrency:\n  group: swarm-${{ github.repository }}\n  cancel-in-progress: false\n\njobs:\n",
    );

    // The coordinator.
    // A run without inputs (on a schedule, say) runs the task file given to --plan.
    let input = match &t.plan {
        Some(plan) => (
            PLAN_VAR,
            scalar(&format!(
                "${{{{ inputs.plan || '{}' }}}}",
                plan.replace('\'', "''")
            )),
        ),
        None => (GOAL_VAR, "${{ inputs.goal }}".to_owned()),
    };
    y.push_str(
        "  coordinator:\n    runs-on: ubuntu-latest\n    timeout-minutes: 360\n    steps:\n",
    );
    prepare(&mut y, t);
    let mut env = vec![input];
    env.extend(swarms_secrets());
    step(&mut y, "Run", &env, &guarded(&t.coordinator()), None);
    step(
        &mut y,
        "Push the run's branches",
        &[],
        &t.push_branches(),
        Some("always()"),
    );
    let _ = write!(
        y,
        "      - name: Keep the report\n        if: always()\n        uses: {UPLOAD_ARTIFACT}\n        with:\n          name: swarm-report\n          path: {REPORT}\n          if-no-files-found: warn\n"
    );

    // The workers.
    let _ = write!(
        y,
        "\n  workers:\n    name: worker ${{{{ matrix.worker }}}}\n    runs-on: ubuntu-latest\n    timeout-minutes: 360\n    strategy:\n      fail-fast: false\n      matrix:\n        worker: {}\n    steps:\n",
        numbers(t.workers, 16)
    );
    prepare(&mut y, t);
    step(
        &mut y,
        "Work",
        &swarms_secrets(),
        &guarded(&t.worker()),
        None,
    );
    y
}

/// The steps both jobs start with: a full checkout, the identity of swarm's commits, swarm.
fn prepare(y: &mut String, t: &Template) {
    let _ = write!(
        y,
        "      - uses: {CHECKOUT}\n        with:\n          fetch-depth: 0\n"
    );
    let _ = writeln!(
        y,
        "      - name: Set the identity of swarm's commits\n        run:{}",
        block(
            "git config --global user.name \"github-actions[bot]\"\ngit config --global user.email \"41898282+github-actions[bot]@users.noreply.github.com\"",
            8
        )
    );
    let mut env = Vec::new();
    if t.needs_source() {
        env.push((SOURCE_VAR, "${{ secrets.SWARM_CI_SOURCE }}".to_owned()));
    }
    step(y, "Install swarm", &env, t.install(), None);
}

/// The agents' keys (`SECRETS`) and the key the run's records are signed with, from the
/// repository's secrets: given to swarm's own steps only, not to the actions the jobs use.
fn swarms_secrets() -> Vec<(&'static str, String)> {
    SECRETS
        .iter()
        .chain(&[KEY_VAR])
        .map(|key| (*key, format!("${{{{ secrets.{key} }}}}")))
        .collect()
}

/// `command`, after a line that stops the step when the key is not set.
fn guarded(command: &str) -> String {
    format!("{}\n{command}", key_guard("the repository secret"))
}

/// A step that runs `script` with the variables of `env`, if `when` says so.
fn step(y: &mut String, name: &str, env: &[(&str, String)], script: &str, when: Option<&str>) {
    let _ = write!(y, "      - name: {}", scalar(name));
    if let Some(when) = when {
        let _ = write!(y, "\n        if: {when}");
    }
    if !env.is_empty() {
        y.push_str("\n        env:");
        for (name, value) in env {
            let _ = write!(y, "\n          {name}: {value}");
        }
    }
    let _ = writeln!(y, "\n        run:{}", block(script, 8));
}

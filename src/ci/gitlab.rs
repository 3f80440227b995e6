//! The GitLab CI file: a coordinator job and a worker job with `parallel: N`, run only in
//! pipelines started by hand (or the API, a trigger, a schedule), pushing with a project access
//! token since the job token cannot push.

use std::fmt::Write as _;

use super::text::{block, comment, scalar};
use super::{GOAL_VAR, IMAGE, KEY_VAR, PLAN_VAR, REPORT, Template, key_guard};

/// The variable holding the token the jobs push with.
const TOKEN_VAR: &str = "SWARM_CI_PUSH_TOKEN";

pub(super) fn render(t: &Template) -> String {
    let (var, start) = match &t.plan {
        Some(_) => (
            PLAN_VAR,
            format!(
                "Start it from Build > Pipelines > Run pipeline. Every pipeline started by hand, by the API, a trigger or a schedule runs it, unless {PLAN_VAR} is set empty."
            ),
        ),
        None => (
            GOAL_VAR,
            format!(
                "Start it from Build > Pipelines > Run pipeline, with {GOAL_VAR} set to the goal: its jobs run only in pipelines started by hand, by the API, a trigger or a schedule, with a goal."
            ),
        ),
    };
    let mut y = t.header(&[
        t.summary(
            "GitLab CI jobs",
            "job",
            "the report is the coordinator job's artifact",
        ),
        start,
        format!(
            "The job token cannot push, so the jobs push with a project access token (role Developer or higher, scope write_repository) in the masked CI/CD variable {TOKEN_VAR}. {} {}",
            Template::secrets_sentence("masked CI/CD variables (Settings > CI/CD > Variables)"),
            t.install_sentence("a CI/CD variable"),
        ),
        Template::key_sentence(
            "a masked and hidden CI/CD variable",
            &format!("add the output of `openssl rand -hex 32` (which GitLab can mask) as the variable {KEY_VAR}"),
        ),
        Template::edit_sentence("image, timeout (a runner's own timeout caps it)"),
    ]);
    y.push_str("\nvariables:\n");
    match &t.plan {
        Some(plan) => {
            let _ = write!(
                y,
                "  {PLAN_VAR}:\n    value: {}\n    description: The task file to run, in the repository (swarm run); empty runs nothing.\n",
                scalar(plan)
            );
        }
        None => {
            let _ = write!(
                y,
                "  {GOAL_VAR}:\n    value: \"\"\n    description: What to do, in prose (swarm --goal); the swarm jobs run only when it is set.\n"
            );
        }
    }
    y.push('\n');
    y.push_str(&comment(
        "What both jobs share: a fresh, full clone (GIT_STRATEGY clone, so no branch of an earlier run is left to push; GIT_DEPTH 0), the identity of swarm's commits, the push token, swarm.",
    ));
    let _ = write!(
        y,
        ".swarm:\n  image: {}\n  timeout: 6h\n  variables:\n    GIT_DEPTH: \"0\"\n    GIT_STRATEGY: clone\n  rules:\n    - if: ${var} && $CI_PIPELINE_SOURCE =~ /^(web|api|trigger|schedule)$/\n  before_script:\n    -{}\n    -{}\n",
        scalar(IMAGE),
        block(&prepare(), 4),
        block(t.install(), 4),
    );
    let _ = write!(
        y,
        "\nswarm-coordinator:\n  extends: .swarm\n  script:\n    -{}\n  artifacts:\n    when: always\n    paths:\n      - {REPORT}\n    expire_in: 30 days\n",
        block(
            &format!(
                "status=0\n{} || status=$?\n{}\nexit \"$status\"",
                t.coordinator(),
                t.push_branches()
            ),
            4
        ),
    );
    let _ = write!(
        y,
        "\nswarm-workers:\n  extends: .swarm\n  parallel: {}\n  script:\n    -{}\n",
        t.workers,
        block(&t.worker(), 4)
    );
    y
}

/// The identity of swarm's commits (the user who started the pipeline), and the token that
/// pushes, given to git by a credential helper so that it stays out of the remote's URL.
fn prepare() -> String {
    format!(
        ": \"${{{TOKEN_VAR}:?set the CI/CD variable {TOKEN_VAR} to a project access token that can push}}\"\n\
{}\n\
git config --global user.name \"$GITLAB_USER_NAME\"\n\
git config --global user.email \"$GITLAB_USER_EMAIL\"\n\
git config --global credential.helper '!f() {{ echo username=swarm; echo \"password=${TOKEN_VAR}\"; }}; f'\n\
git remote set-url origin \"$CI_SERVER_PROTOCOL://$CI_SERVER_HOST:$CI_SERVER_PORT/$CI_PROJECT_PATH.git\"",
        key_guard("the CI/CD variable")
    )
}

//! A goal at a terminal: swarm on a pseudo-terminal shows the plan as a tree and asks before it
//! runs it; `n` runs nothing, `y` runs it, `e` runs the user's edit of it; `--yes` and a
//! missing terminal ask nothing. The tests wait for what swarm prints, never for a time.

use std::process::Stdio;

use serde_json::Value;

use crate::fake_llm::FakeLlm;
use crate::goal::good_server;
use crate::pty::Terminal;
use crate::{TestRepo, assert_exit, outside, status_json, stderr};

const QUESTION: &str = "Run 4 tasks (1 writer)? [Y/n/e] ";

fn goal_on_terminal(
    repo: &TestRepo,
    llm: &FakeLlm,
    env: &[(&str, &str)],
    args: &[&str],
) -> Terminal {
    let mut words = vec!["--goal", "Survey the repository and leave notes"];
    words.extend(args);
    on_terminal(repo, llm, env, &words)
}

fn on_terminal(repo: &TestRepo, llm: &FakeLlm, env: &[(&str, &str)], args: &[&str]) -> Terminal {
    let mut cmd = repo.swarm_cmd();
    cmd.env("SWARM_API_BASE", llm.base_url())
        .env("SWARM_API_KEY", "sk-canary-key-0123456789")
        // Plain progress lines, so what is read is what was printed.
        .env("TERM", "dumb")
        .envs(env.iter().copied())
        .args(args);
    Terminal::start(cmd, 120, 40)
}

/// The agents' requests the server got: every request but the planner's.
fn agent_requests(llm: &FakeLlm) -> usize {
    llm.requests()
        .iter()
        .filter(|r| !crate::fake_llm::has_tool(r, "submit_plan"))
        .count()
}

fn swarm_branches(repo: &TestRepo) -> String {
    repo.git(&["branch", "--list", "swarm/*"])
}

#[test]
fn at_a_terminal_the_plan_is_shown_as_a_tree_and_n_runs_nothing() {
    let repo = TestRepo::new();
    let llm = good_server();
    let before = repo.state();
    let mut swarm = goal_on_terminal(&repo, &llm, &[], &[]);

    let shown = swarm.read_until(QUESTION);
    let tree = "
survey — TASK survey: list the files and report them        researcher  reader
readme — TASK readme: read README.md and summarise it       analyst     reader
notes — TASK notes: write NOTES.md with a line of notes     coder       WRITER  files: NOTES.md
└─ final — TASK final: combine the results into the report  reducer     reader  also after survey, readme
4 tasks: 3 readers, 1 writer

Run 4 tasks (1 writer)? [Y/n/e] ";
    assert!(shown.ends_with(tree), "not the tree and question:\n{shown}");
    swarm.type_line("n");
    let screen = swarm.finish();
    let (code, printed) = (screen.code(), screen.printed);

    assert_eq!(code, 0, "{printed}");
    assert!(printed.contains("nothing ran"), "{printed}");
    assert_eq!(agent_requests(&llm), 0);
    assert_eq!(swarm_branches(&repo), "");
    assert_eq!(repo.state(), before);
    let status = status_json(&repo);
    assert_eq!(status["tasks"], Value::Array(vec![]), "{status}");
    assert_eq!(status["run"]["status"], "finished", "{status}");
    assert_nothing_to_resume(&repo, "plan declined");
    // The plan is kept, and the command printed runs it.
    let kept = printed
        .lines()
        .find_map(|l| l.split("To run it: swarm run ").nth(1))
        .unwrap_or_else(|| panic!("no command in:\n{printed}"))
        .to_owned();
    let ran = repo
        .swarm_cmd()
        .env("SWARM_API_BASE", llm.base_url())
        .env("SWARM_API_KEY", "sk-canary-key-0123456789")
        .args(["run", &kept])
        .output()
        .unwrap();
    assert_exit(&ran, 0);
    assert_eq!(repo.read("NOTES.md"), "notes from the agent\n");
}

#[test]
fn at_a_terminal_y_runs_the_plan() {
    let repo = TestRepo::new();
    let llm = good_server();
    let mut swarm = goal_on_terminal(&repo, &llm, &[], &[]);

    swarm.read_until(QUESTION);
    swarm.type_line("y");
    let screen = swarm.finish();
    let (code, printed) = (screen.code(), screen.printed);

    assert_eq!(code, 0, "{printed}");
    assert_eq!(repo.read("NOTES.md"), "notes from the agent\n");
    assert_eq!(printed.matches("[Y/n/e]").count(), 1, "{printed}");
}

#[test]
fn at_a_terminal_e_runs_the_plan_as_the_editor_left_it() {
    let repo = TestRepo::new();
    let llm = good_server();
    // An editor that takes the writer out of the plan, and the reducer's dep on it.
    let editor = outside(&repo, "editor.sh");
    std::fs::write(
        &editor,
        "#!/bin/sh\nsed -i -e '/\"id\":\"notes\"/d' -e 's/,\"notes\"//' \"$1\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&editor, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let plan_out = outside(&repo, "plan.jsonl");
    let mut swarm = goal_on_terminal(
        &repo,
        &llm,
        &[("EDITOR", editor.to_str().unwrap())],
        &["--plan-out", plan_out.to_str().unwrap()],
    );

    swarm.read_until(QUESTION);
    swarm.type_line("e");
    let screen = swarm.finish();
    let (code, printed) = (screen.code(), screen.printed);

    assert_eq!(code, 0, "{printed}");
    assert!(
        printed.contains("Running the edited plan (3 tasks: 3 readers, 0 writers)"),
        "{printed}"
    );
    assert!(!repo.root.join("NOTES.md").exists(), "the writer ran");
    let status = status_json(&repo);
    let ids: Vec<&str> = status["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["survey", "readme", "final"], "{status}");
    // --plan-out holds the plan that ran.
    let saved = std::fs::read_to_string(&plan_out).unwrap();
    assert_eq!(saved.lines().count(), 3, "{saved}");
}

#[test]
fn with_yes_a_terminal_is_not_asked() {
    let repo = TestRepo::new();
    let llm = good_server();
    let swarm = goal_on_terminal(&repo, &llm, &[], &["--yes"]);

    let screen = swarm.finish();
    let (code, printed) = (screen.code(), screen.printed);

    assert_eq!(code, 0, "{printed}");
    assert!(!printed.contains("[Y/n/e]"), "{printed}");
    assert_eq!(repo.read("NOTES.md"), "notes from the agent\n");
}

#[test]
fn without_a_terminal_nothing_is_asked() {
    let repo = TestRepo::new();
    let llm = good_server();
    // The harness's stdin is /dev/null and its outputs are pipes.
    let out = repo
        .swarm_cmd()
        .env("SWARM_API_BASE", llm.base_url())
        .env("SWARM_API_KEY", "sk-canary-key-0123456789")
        .args(["--goal", "Survey the repository and leave notes"])
        .output()
        .unwrap();

    assert_exit(&out, 0);
    assert!(!stderr(&out).contains("[Y/n/e]"), "{}", stderr(&out));
    assert_eq!(repo.read("NOTES.md"), "notes from the agent\n");
}

#[test]
fn ctrl_c_at_the_question_runs_nothing_and_exits_130() {
    let repo = TestRepo::new();
    let llm = good_server();
    let mut swarm = goal_on_terminal(&repo, &llm, &[], &[]);

    swarm.read_until(QUESTION);
    // The terminal is not swarm's controlling one, so Ctrl-C is sent as the signal it makes.
    let pid = nix::unistd::Pid::from_raw(swarm.pid() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let screen = swarm.finish();
    let (code, printed) = (screen.code(), screen.printed);

    assert_eq!(code, 130, "{printed}");
    assert!(printed.contains("nothing ran"), "{printed}");
    assert_eq!(agent_requests(&llm), 0);
    assert_eq!(swarm_branches(&repo), "");
    let status = status_json(&repo);
    assert_eq!(status["run"]["status"], "finished", "{status}");
    assert_eq!(status["run"]["exit_code"], 130, "{status}");
    assert_nothing_to_resume(&repo, "plan declined with Ctrl-C");
}

/// `swarm resume` finds nothing to resume, and `swarm runs` says the newest run ended so.
fn assert_nothing_to_resume(repo: &TestRepo, reason: &str) {
    let out = repo.swarm(&["resume"]);
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("there is no unfinished run to resume"),
        "{}",
        stderr(&out)
    );
    let runs = repo.swarm(&["runs", "--json"]);
    let runs: Value = serde_json::from_slice(&runs.stdout).unwrap();
    assert_eq!(runs[0]["reason"], reason, "{runs:#}");
}

#[test]
fn a_goal_planned_again_by_resume_is_asked_about_too() {
    let repo = TestRepo::new();
    // The first request is throttled for minutes: planning waits, and the Ctrl-C comes then.
    let llm = FakeLlm::start(|req, n| {
        if n == 0 {
            crate::fake_llm::Reply::rate_limited(300)
        } else if crate::fake_llm::has_tool(req, "submit_plan") {
            crate::goal::plan_call(&crate::goal::good_plan())
        } else {
            crate::goal::agent_reply(req)
        }
    });
    let mut planning = repo
        .swarm_cmd()
        .env("SWARM_API_BASE", llm.base_url())
        .env("SWARM_API_KEY", "sk-canary-key-0123456789")
        .args(["--goal", "Survey the repository"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    llm.await_requests_from(&mut planning, |requests| !requests.is_empty());
    let pid = nix::unistd::Pid::from_raw(planning.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    assert_exit(&planning.wait_with_output().unwrap(), 75);

    let mut resumed = on_terminal(&repo, &llm, &[], &["resume"]);
    resumed.read_until(QUESTION);
    resumed.type_line("n");
    let screen = resumed.finish();
    let (code, printed) = (screen.code(), screen.printed);

    assert_eq!(code, 0, "{printed}");
    assert_eq!(agent_requests(&llm), 0);
    assert_eq!(status_json(&repo)["run"]["status"], "finished");

    // A declined run is finished: there is nothing left to resume.
    let again = on_terminal(&repo, &llm, &[], &["resume", "--yes"]);
    let screen = again.finish();
    let (code, printed) = (screen.code(), screen.printed);
    assert_eq!(code, 2, "{printed}");
    assert!(printed.contains("no unfinished run"), "{printed}");
}

#[test]
fn at_a_terminal_the_question_says_which_tasks_may_add_tasks_and_how_many_in_all() {
    use crate::fake_llm::has_tool;
    use crate::goal::{agent_reply, good_plan, plan_call};
    let repo = TestRepo::new();
    // The planner lets `survey` add up to 30 tasks; the run lets 20 be added in all.
    let llm = FakeLlm::start(|req, _| {
        if has_tool(req, "submit_plan") {
            let mut plan = good_plan();
            plan[0]["spawn"] = 30.into();
            return plan_call(&plan);
        }
        agent_reply(req)
    });
    let mut swarm = goal_on_terminal(&repo, &llm, &[("SWARM_MAX_SPAWNED", "20")], &[]);
    let question = "Run 4 tasks (1 writer), and up to 20 more they may add? [Y/n/e] ";
    let shown = swarm.read_until(question);
    let tree = "
survey — TASK survey: list the files and report them        researcher  reader  may add up to 20
readme — TASK readme: read README.md and summarise it       analyst     reader
notes — TASK notes: write NOTES.md with a line of notes     coder       WRITER  files: NOTES.md
└─ final — TASK final: combine the results into the report  reducer     reader  also after survey, readme
4 tasks: 3 readers, 1 writer; survey may add up to 20 more

";
    assert!(
        shown.ends_with(&format!("{tree}{question}")),
        "not the tree and question:\n{shown}"
    );
    swarm.type_line("y");
    let screen = swarm.finish();
    assert_eq!(screen.code(), 0, "{}", screen.printed);
    // What the user agreed to is what ran: `survey` was offered the tools to add tasks, and
    // no other task was.
    for r in llm.requests() {
        let survey = crate::fake_llm::last_user_text(&r).starts_with("TASK survey");
        if !has_tool(&r, "submit_plan") {
            assert_eq!(has_tool(&r, "add_tasks"), survey, "{:?}", r.body);
        }
    }
}

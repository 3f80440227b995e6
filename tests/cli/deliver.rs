//! `--deliver pr`, `pr-per-task` and `stack` end to end: a run's result pushed to a bare
//! remote on disk and opened on the fake forge (GitHub's and GitLab's routes), what each mode
//! opens and where each branch points, a second run and a resume after `kill -9` between the
//! push and the forge's answer opening nothing twice, and the forge's and the remote's faults
//! stopping the run resumably with nothing lost.

use std::path::PathBuf;

use serde_json::json;

use crate::fake_forge::{Failure, FakeForge, Flavour, Route, Stored};
use crate::{TestRepo, assert_exit, stderr, stdout};

/// A repository whose `origin` is, as written, a project on the fake forge (`octo/hello` on
/// GitHub, `group/sub/project` on GitLab), which git reaches as a bare repository on disk.
struct Project {
    repo: TestRepo,
    fake: FakeForge,
    flavour: Flavour,
    remote: PathBuf,
    _dir: tempfile::TempDir,
}

/// Makes `origin` of `repo`, as written, the project of `flavour` on `fake` (`octo/hello` on
/// GitHub, `group/sub/project` on GitLab), which git reaches as a bare repository in `dir`
/// holding `main`; returns that repository's path.
pub(crate) fn project_remote(
    repo: &TestRepo,
    fake: &FakeForge,
    flavour: Flavour,
    dir: &std::path::Path,
) -> PathBuf {
    let remote = dir.join("remote.git");
    repo.git(&[
        "init",
        "-q",
        "--bare",
        "-b",
        "main",
        remote.to_str().unwrap(),
    ]);
    let project = match flavour {
        Flavour::GitHub => "octo/hello",
        Flavour::GitLab => "group/sub/project",
    };
    let url = format!("{}/{project}.git", fake.base());
    repo.git(&["remote", "add", "origin", &url]);
    repo.git(&[
        "config",
        &format!("url.{}.insteadOf", remote.display()),
        &url,
    ]);
    repo.git(&["push", "-q", "origin", "main"]);
    remote
}

impl Project {
    fn new(flavour: Flavour) -> Self {
        let repo = TestRepo::new();
        let fake = FakeForge::start();
        let dir = tempfile::tempdir().unwrap();
        let remote = project_remote(&repo, &fake, flavour, dir.path());
        Project {
            repo,
            fake,
            flavour,
            remote,
            _dir: dir,
        }
    }

    /// swarm with the forge's token and API in its environment.
    fn swarm(&self, args: &[&str]) -> std::process::Output {
        let env = match self.flavour {
            Flavour::GitHub => self.fake.github_env(),
            Flavour::GitLab => self.fake.gitlab_env(),
        };
        self.repo.swarm_cmd().args(args).envs(env).output().unwrap()
    }

    /// Where the remote's branch `name` points, if it has it.
    fn remote_branch(&self, name: &str) -> Option<String> {
        let out = self.repo.git(&[
            "--git-dir",
            self.remote.to_str().unwrap(),
            "for-each-ref",
            "--format=%(objectname)",
            &format!("refs/heads/{name}"),
        ]);
        let oid = out.trim();
        (!oid.is_empty()).then(|| oid.to_owned())
    }

    /// The files at the remote's branch `name`.
    fn files_on(&self, name: &str) -> Vec<String> {
        let out = self.repo.git(&[
            "--git-dir",
            self.remote.to_str().unwrap(),
            "ls-tree",
            "-r",
            "--name-only",
            name,
        ]);
        out.lines().map(str::to_owned).collect()
    }

    fn changes(&self) -> Vec<Stored> {
        self.fake.changes()
    }
}

const BOTH: [Flavour; 2] = [Flavour::GitHub, Flavour::GitLab];

/// Four writers: `a`; `b` on `a`; `c` alone; `d` on `b` and `c` (through a reader `r`).
fn four_writers(repo: &TestRepo) -> PathBuf {
    repo.tasks(&[
        &json!({"id": "a", "run": "echo a > a.txt", "title": "Write a"}).to_string(),
        &json!({"id": "b", "run": "echo b > b.txt", "deps": ["a"]}).to_string(),
        &json!({"id": "c", "run": "echo c > c.txt"}).to_string(),
        &json!({"id": "r", "run": "true", "mode": "read", "deps": ["b", "c"]}).to_string(),
        &json!({"id": "d", "run": "echo d > d.txt", "deps": ["r"]}).to_string(),
    ])
}

fn two_writers(repo: &TestRepo) -> PathBuf {
    repo.tasks(&[
        &json!({"id": "a", "run": "echo a > a.txt"}).to_string(),
        &json!({"id": "b", "run": "echo b > b.txt", "deps": ["a"]}).to_string(),
    ])
}

/// Each change's head, base and state, in the order opened.
fn heads_and_bases(changes: &[Stored]) -> Vec<(String, String, &'static str)> {
    changes
        .iter()
        .map(|c| (c.head.clone(), c.base.clone(), c.state))
        .collect()
}

/// The same, sorted: writers merge in any order.
fn sorted_heads(changes: &[Stored]) -> Vec<(String, String, &'static str)> {
    let mut heads = heads_and_bases(changes);
    heads.sort();
    heads
}

fn owned(pairs: &[(&str, &str)]) -> Vec<(String, String, &'static str)> {
    pairs
        .iter()
        .map(|(h, b)| ((*h).to_owned(), (*b).to_owned(), "open"))
        .collect()
}

#[test]
fn deliver_pr_opens_one_request_holding_the_run_result_and_a_second_run_updates_it() {
    for flavour in BOTH {
        let p = Project::new(flavour);
        let tasks = two_writers(&p.repo);
        let main_before = p.repo.git(&["rev-parse", "main"]);
        let out = p.swarm(&["run", tasks.to_str().unwrap(), "--deliver", "pr"]);
        assert_exit(&out, 0);
        let run = crate::run_id(&p.repo);
        let changes = p.changes();
        assert_eq!(
            heads_and_bases(&changes),
            owned(&[("swarm/tasks", "main")]),
            "{flavour:?}"
        );
        let pr = &changes[0];
        assert_eq!(pr.title, "swarm: tasks");
        assert!(
            pr.body
                .contains(&format!("<!-- swarm run={run} task=- -->"))
        );
        assert!(pr.body.contains(&format!("Run `{run}`")), "{}", pr.body);
        // Its branch holds the run's result; the user's branch and the remote's main are as
        // they were.
        let tip = p.repo.git(&["rev-parse", &format!("swarm/{run}")]);
        assert_eq!(p.remote_branch("swarm/tasks"), Some(tip.trim().to_owned()));
        assert_eq!(p.repo.git(&["rev-parse", "main"]), main_before);
        assert_eq!(p.remote_branch("main").unwrap(), main_before.trim());
        let said = stdout(&out);
        assert!(said.contains("pull request #1"), "{said}");
        let report = crate::run_report(&p.repo);
        assert!(report.contains("Pull requests:"), "{report}");
        assert!(
            report.contains(&format!("#{} the run's result", pr.number)),
            "{report}"
        );

        // The same plan again: a new run, the same request updated, none opened.
        let again = p.swarm(&["run", tasks.to_str().unwrap(), "--deliver", "pr"]);
        assert_exit(&again, 0);
        let second = crate::run_id(&p.repo);
        assert_ne!(second, run);
        let changes = p.changes();
        assert_eq!(changes.len(), 1, "{changes:?}");
        assert!(changes[0].body.contains(&format!("run={second} ")));
        let tip = p.repo.git(&["rev-parse", &format!("swarm/{second}")]);
        assert_eq!(p.remote_branch("swarm/tasks"), Some(tip.trim().to_owned()));
        assert_eq!(p.fake.count(Route::Create), 1);
        // Every answer swarm read had the forge's published shape.
        let checked = crate::forge::answers_as_published(&p.fake);
        for route in [Route::List, Route::Create, Route::Update] {
            assert!(checked.contains(&(flavour, route)), "{flavour:?} {route:?}");
        }
    }
}

#[test]
fn deliver_pr_per_task_opens_independent_writers_alone_and_the_rest_in_the_whole() {
    let p = Project::new(Flavour::GitHub);
    let tasks = four_writers(&p.repo);
    let out = p.swarm(&[
        "run",
        tasks.to_str().unwrap(),
        "--deliver",
        "pr-per-task",
        "--check",
        "echo checked: $(ls *.txt)",
    ]);
    assert_exit(&out, 0);
    let changes = p.changes();
    assert_eq!(
        sorted_heads(&changes),
        owned(&[
            ("swarm/tasks", "main"),
            ("swarm/tasks-a", "main"),
            ("swarm/tasks-c", "main"),
        ])
    );
    // Each task's branch holds its change alone, on the base.
    let base = ["README.md", "src/lib.rs"];
    let with = |extra: &[&str]| {
        let mut files: Vec<String> = base.iter().chain(extra).map(|s| (*s).to_owned()).collect();
        files.sort();
        files
    };
    assert_eq!(p.files_on("swarm/tasks-a"), with(&["a.txt"]));
    assert_eq!(p.files_on("swarm/tasks-c"), with(&["c.txt"]));
    assert_eq!(
        p.files_on("swarm/tasks"),
        with(&["a.txt", "b.txt", "c.txt", "d.txt"])
    );
    let a = changes.iter().find(|c| c.head == "swarm/tasks-a").unwrap();
    assert_eq!(a.title, "a: Write a");
    assert!(a.body.contains("echo a > a.txt"), "{}", a.body);
    // Its check's output too.
    assert!(a.body.contains("## Check"), "{}", a.body);
    assert!(a.body.contains("checked: a.txt"), "{}", a.body);
    // The whole run's request is opened last, once the tasks' are.
    assert_eq!(changes.last().unwrap().head, "swarm/tasks");
    let said = stdout(&out);
    assert!(
        said.contains("In the pull request of the run's result, not one of their own: b (it builds on a), d (it builds on b and c)."),
        "{said}"
    );
}

#[test]
fn deliver_stack_follows_the_chain_and_sends_the_fan_in_to_the_whole() {
    for flavour in BOTH {
        let p = Project::new(flavour);
        let tasks = four_writers(&p.repo);
        let out = p.swarm(&["run", tasks.to_str().unwrap(), "--deliver", "stack"]);
        assert_exit(&out, 0);
        let changes = p.changes();
        assert_eq!(
            sorted_heads(&changes),
            owned(&[
                ("swarm/tasks", "main"),
                ("swarm/tasks-a", "main"),
                ("swarm/tasks-b", "swarm/tasks-a"),
                ("swarm/tasks-c", "main"),
            ]),
            "{flavour:?}"
        );
        // b's branch is a's and b's change: the stack's second floor.
        let files = p.files_on("swarm/tasks-b");
        assert!(files.contains(&"a.txt".to_owned()) && files.contains(&"b.txt".to_owned()));
        assert!(!files.contains(&"c.txt".to_owned()), "{files:?}");
        let said = stdout(&out);
        assert!(said.contains("d (it builds on b and c)"), "{said}");
    }
}

#[test]
fn deliver_resumed_after_kill_9_between_push_and_forge_opens_one_request() {
    for flavour in BOTH {
        let p = Project::new(flavour);
        let tasks = two_writers(&p.repo);
        // The first look for the request is never answered: swarm has pushed by then.
        p.fake.fail(Route::List, 1, Failure::Stall);
        let env = match flavour {
            Flavour::GitHub => p.fake.github_env(),
            Flavour::GitLab => p.fake.gitlab_env(),
        };
        let mut child = p
            .repo
            .swarm_cmd()
            .args(["run", tasks.to_str().unwrap(), "--deliver", "pr"])
            .envs(env)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        assert_eq!(p.fake.wait_stalled(), Route::List);
        let run = crate::run_id(&p.repo);
        let tip = p.repo.git(&["rev-parse", &format!("swarm/{run}")]);
        assert_eq!(p.remote_branch("swarm/tasks"), Some(tip.trim().to_owned()));
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(p.changes().is_empty());

        let out = p.swarm(&["resume"]);
        assert_exit(&out, 0);
        let changes = p.changes();
        assert_eq!(changes.len(), 1, "{flavour:?}: {changes:?}");
        assert_eq!(changes[0].head, "swarm/tasks");
        assert!(changes[0].body.contains(&format!("run={run} task=-")));
        // Once more: nothing to open, nothing moved.
        let status = crate::status_json(&p.repo);
        assert_eq!(status["run"]["id"], run.as_str());
        assert_eq!(
            status["pull_requests"][0]["head"], "swarm/tasks",
            "{status}"
        );
        assert_eq!(status["pull_requests"][0]["outcome"], "opened", "{status}");
        assert_eq!(p.fake.count(Route::Create), 1);
    }
}

#[test]
fn deliver_forge_faults_stop_resumably_and_resume_finishes() {
    // (failure, route, times, exit code): a forge down for longer than swarm waits, a refused
    // token, a rate limit swarm waits out.
    let cases = [
        (Failure::Status(500), Route::Create, 5, 75),
        (Failure::Status(401), Route::List, 1, 2),
        (Failure::Throttled, Route::Create, 1, 0),
        (Failure::RateLimited, Route::List, 1, 0),
        (Failure::EchoToken, Route::Create, 1, 2),
    ];
    for (failure, route, times, code) in cases {
        let p = Project::new(Flavour::GitHub);
        let tasks = two_writers(&p.repo);
        p.fake.fail(route, times, failure);
        let out = p.swarm(&["run", tasks.to_str().unwrap(), "--deliver", "pr"]);
        assert_exit(&out, code);
        let run = crate::run_id(&p.repo);
        // Whatever the forge did, the run's result is on its branch, here and on the remote.
        let tip = p.repo.git(&["rev-parse", &format!("swarm/{run}")]);
        assert_eq!(p.remote_branch("swarm/tasks"), Some(tip.trim().to_owned()));
        let said = format!("{}{}", stdout(&out), stderr(&out));
        assert!(!said.contains(crate::fake_forge::TOKEN), "{said}");
        // Nor is it in the board, the log, a transcript or the report.
        let mut files = Vec::new();
        crate::goal::collect(&p.repo.swarm_dir(), &mut files);
        for (path, bytes) in files {
            let text = String::from_utf8_lossy(&bytes);
            assert!(!text.contains(crate::fake_forge::TOKEN), "{path}");
        }
        if code == 0 {
            assert_eq!(p.changes().len(), 1, "{failure:?}");
            continue;
        }
        assert!(p.changes().is_empty(), "{failure:?}");
        assert!(
            said.contains("Not delivered: ") && said.contains("swarm resume"),
            "{failure:?}: {said}"
        );
        let out = p.swarm(&["resume"]);
        assert_exit(&out, 0);
        assert_eq!(p.changes().len(), 1, "{failure:?}");
    }
}

#[test]
fn deliver_never_replaces_commits_someone_else_pushed_and_resume_delivers_once_they_are_gone() {
    let p = Project::new(Flavour::GitHub);
    // Someone's own branch of the same name.
    p.repo.git(&["checkout", "-q", "-b", "swarm/tasks"]);
    p.repo.write("theirs.txt", "mine\n");
    p.repo.commit_all("their work");
    p.repo.git(&["push", "-q", "origin", "swarm/tasks"]);
    p.repo.git(&["checkout", "-q", "main"]);
    let theirs = p.remote_branch("swarm/tasks").unwrap();
    let tasks = two_writers(&p.repo);
    let out = p.swarm(&["run", tasks.to_str().unwrap(), "--deliver", "pr"]);
    assert_exit(&out, 2);
    let said = stdout(&out);
    assert!(
        said.contains("`swarm/tasks` on origin has commits swarm did not push there"),
        "{said}"
    );
    assert_eq!(p.remote_branch("swarm/tasks"), Some(theirs));
    assert!(p.changes().is_empty());
    // Their branch deleted on the remote, resume delivers.
    p.repo.git(&["push", "-q", "origin", ":swarm/tasks"]);
    let out = p.swarm(&["resume"]);
    assert_exit(&out, 0);
    assert_eq!(p.changes().len(), 1);
}

#[test]
fn deliver_to_an_unreachable_remote_stops_with_75_and_keeps_the_work() {
    let p = Project::new(Flavour::GitHub);
    let tasks = two_writers(&p.repo);
    let moved = p.remote.with_extension("away");
    let out = {
        // The remote goes away once the run has started: its checks passed.
        let script = format!("mv {} {}", p.remote.display(), moved.display());
        let tasks_text = std::fs::read_to_string(&tasks).unwrap();
        let last = json!({"id": "z", "run": script, "mode": "read", "deps": ["b"]});
        std::fs::write(&tasks, format!("{tasks_text}{last}\n")).unwrap();
        p.swarm(&[
            "run",
            tasks.to_str().unwrap(),
            "--deliver",
            "pr",
            "--confine",
            "off",
        ])
    };
    assert_exit(&out, 75);
    let run = crate::run_id(&p.repo);
    assert!(p.repo.git(&["rev-parse", &format!("swarm/{run}")]).len() > 6);
    std::fs::rename(&moved, &p.remote).unwrap();
    let out = p.swarm(&["resume"]);
    assert_exit(&out, 0);
    assert_eq!(p.changes().len(), 1);
}

#[test]
fn deliver_refuses_before_running_without_a_token_a_forge_or_a_branch() {
    let p = Project::new(Flavour::GitHub);
    let tasks = two_writers(&p.repo);
    let api: Vec<(String, String)> = p
        .fake
        .github_env()
        .into_iter()
        .filter(|(k, _)| k == "GITHUB_API_URL")
        .collect();
    let no_token = p
        .repo
        .swarm_cmd()
        .args(["run", tasks.to_str().unwrap(), "--deliver", "pr"])
        .envs(api)
        .output()
        .unwrap();
    assert_exit(&no_token, 2);
    assert!(
        stderr(&no_token).contains("no token for GitHub: set GH_TOKEN or GITHUB_TOKEN"),
        "{}",
        stderr(&no_token)
    );
    let unknown = p
        .repo
        .swarm_cmd()
        .args(["run", tasks.to_str().unwrap(), "--deliver", "pr"])
        .env("GH_TOKEN", crate::fake_forge::TOKEN)
        .output()
        .unwrap();
    assert_exit(&unknown, 2);
    assert!(
        stderr(&unknown).contains("cannot tell which forge 127.0.0.1 is"),
        "{}",
        stderr(&unknown)
    );
    let no_remote = p.swarm(&[
        "run",
        tasks.to_str().unwrap(),
        "--deliver",
        "stack",
        "--deliver-remote",
        "upstream",
    ]);
    assert_exit(&no_remote, 2);
    assert!(
        stderr(&no_remote).contains("the remote `upstream`, which this repository does not have")
    );
    let bad_name = p.swarm(&[
        "run",
        tasks.to_str().unwrap(),
        "--deliver",
        "pr",
        "--pr-branch",
        "swarm/bad..name",
    ]);
    assert_exit(&bad_name, 2);
    assert!(
        stderr(&bad_name).contains("`swarm/bad..name` is not a name git takes for a branch"),
        "{}",
        stderr(&bad_name)
    );
    p.repo.git(&["checkout", "-q", "--detach"]);
    let detached = p.swarm(&["run", tasks.to_str().unwrap(), "--deliver", "pr"]);
    assert_exit(&detached, 2);
    assert!(stderr(&detached).contains("HEAD is detached"));
    // Nothing ran: no run, no branch, no request.
    assert_eq!(p.repo.git(&["branch", "--list", "swarm/*"]), "");
    assert!(p.changes().is_empty());
}

#[test]
fn deliver_pr_from_a_goal_run_and_from_the_queue_names_the_branch_after_the_goal() {
    let p = Project::new(Flavour::GitHub);
    let llm = crate::goal::good_server();
    let out = crate::goal::llm_cmd(&p.repo, &llm)
        .args([
            "--goal",
            "Survey the repository and leave notes",
            "--deliver",
            "pr",
        ])
        .envs(p.fake.github_env())
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let changes = p.changes();
    assert_eq!(
        heads_and_bases(&changes),
        owned(&[("swarm/survey-the-repository-and-leave-notes", "main")])
    );
    assert_eq!(changes[0].title, "Survey the repository and leave notes");
    // The notes are in the pull request's branch, not on the user's.
    assert!(
        p.files_on("swarm/survey-the-repository-and-leave-notes")
            .contains(&"NOTES.md".to_owned())
    );
    assert!(!p.repo.root.join("NOTES.md").exists());

    // The queue: its goal's words name the branch too.
    let queued = crate::goal::llm_cmd(&p.repo, &llm)
        .args(["queue", "add", "Write the notes again"])
        .output()
        .unwrap();
    assert_exit(&queued, 0);
    let out = crate::goal::llm_cmd(&p.repo, &llm)
        .args(["queue", "run", "--deliver", "pr"])
        .envs(p.fake.github_env())
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let heads: Vec<String> = p.changes().into_iter().map(|c| c.head).collect();
    assert_eq!(
        heads,
        [
            "swarm/survey-the-repository-and-leave-notes",
            "swarm/write-the-notes-again"
        ]
    );
}

#[test]
fn deliver_tells_the_escalation_hook_where_the_work_goes_and_opens_the_request_with_the_park() {
    let p = Project::new(Flavour::GitHub);
    let tasks = p.repo.tasks(&[
        &json!({"id": "a", "run": "echo a > same.txt"}).to_string(),
        &json!({"id": "b", "run": "echo b > same.txt"}).to_string(),
    ]);
    let told = p.repo.shared.join("escalation.json");
    let hook = format!("cat > {}", told.display());
    let out = p.swarm(&[
        "run",
        tasks.to_str().unwrap(),
        "--deliver",
        "pr",
        "--on-escalate",
        &hook,
    ]);
    // One writer is parked: a human is needed, and the merged one is delivered meanwhile.
    assert_exit(&out, 3);
    let told: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&told).unwrap()).unwrap();
    assert_eq!(
        told["deliver"],
        json!({
            "mode": "pr",
            "remote": "origin",
            "base": "main",
            "branch": "swarm/tasks",
            "pull_requests": [],
        }),
        "{told}"
    );
    let changes = p.changes();
    assert_eq!(changes.len(), 1);
    let parked = told["task"].as_str().unwrap();
    assert!(changes[0].body.contains("parked"), "{}", changes[0].body);
    assert!(changes[0].body.contains(parked), "{}", changes[0].body);
}

#[test]
fn deliver_leaves_a_request_closed_by_a_human_closed_when_resume_finishes_the_rest() {
    let p = Project::new(Flavour::GitHub);
    let tasks = p.repo.tasks(&[
        &json!({"id": "a", "run": "echo a > a.txt"}).to_string(),
        &json!({"id": "c", "run": "echo c > c.txt", "deps": ["a"], "mode": "write"}).to_string(),
        &json!({"id": "e", "run": "echo e > e.txt"}).to_string(),
    ]);
    // The first request opens; the forge is down for every try of the second.
    p.fake.fail_after(Route::Create, 1, 3, Failure::Status(502));
    let out = p.swarm(&["run", tasks.to_str().unwrap(), "--deliver", "stack"]);
    assert_exit(&out, 75);
    let first = p.changes();
    assert_eq!(first.len(), 1, "{first:?}");
    // Someone closes it before the resume.
    p.fake.set_state(first[0].number, "closed");
    let out = p.swarm(&["resume"]);
    assert_exit(&out, 0);
    let changes = p.changes();
    assert_eq!(changes.len(), 3, "{changes:?}");
    assert_eq!(changes[0].state, "closed");
    assert!(changes[1..].iter().all(|c| c.state == "open"));
    assert!(stdout(&out).contains("(closed)"), "{}", stdout(&out));
}

#[test]
fn deliver_dresses_each_request_as_the_keys_say() {
    for flavour in BOTH {
        let p = Project::new(flavour);
        p.repo.write(
            ".swarm.toml",
            "pr-title = \"deps: {title} ({task})\"\npr-draft = true\npr-labels = [\"automated\", \"nightly\"]\npr-reviewers = [\"alice\"]\npr-branch = \"bots/nightly\"\n",
        );
        p.repo.commit_all("settings");
        p.repo.git(&["push", "-q", "origin", "main"]);
        let tasks = p
            .repo
            .tasks(&[&json!({"id": "a", "run": "echo a > a.txt", "title": "Write a"}).to_string()]);
        let out = p.swarm(&["run", tasks.to_str().unwrap(), "--deliver", "pr-per-task"]);
        assert_exit(&out, 0);
        let changes = p.changes();
        assert_eq!(changes.len(), 1, "{changes:?}");
        let c = &changes[0];
        assert_eq!(c.head, "bots/nightly-a");
        // GitLab says a draft in its title.
        let draft = if flavour == Flavour::GitLab {
            "Draft: "
        } else {
            ""
        };
        assert_eq!(c.title, format!("{draft}deps: a: Write a (a)"));
        assert!(c.draft, "{flavour:?}");
        assert_eq!(c.labels, ["automated", "nightly"], "{flavour:?}");
        assert_eq!(c.reviewers, ["alice"], "{flavour:?}");
    }
}

#[test]
fn deliver_a_new_title_keeps_a_gitlab_draft_a_draft() {
    let p = Project::new(Flavour::GitLab);
    let tasks = two_writers(&p.repo);
    let out = p.swarm(&[
        "run",
        tasks.to_str().unwrap(),
        "--deliver",
        "pr",
        "--pr-draft",
    ]);
    assert_exit(&out, 0);
    // The next run's title template differs: the request is retitled, still a draft.
    let out = p
        .repo
        .swarm_cmd()
        .args(["run", tasks.to_str().unwrap(), "--deliver", "pr"])
        .envs(p.fake.gitlab_env())
        .env("SWARM_PR_TITLE", "nightly: {title}")
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let changes = p.changes();
    assert_eq!(changes.len(), 1);
    assert_eq!(changes[0].title, "Draft: nightly: swarm: tasks");
    assert!(changes[0].draft);
}

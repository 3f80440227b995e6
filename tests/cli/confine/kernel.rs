//! Where the kernel cannot confine (simulated with `SWARM_LANDLOCK_ABI=0`): the default says so
//! once and runs; `confine = "require"` stops before anything starts.

use serde_json::json;

use crate::{TestRepo, assert_exit, outside};

#[test]
fn require_without_landlock_stops_before_anything_starts_with_exit_2() {
    let repo = TestRepo::new();
    let ran = outside(&repo, "ran");
    let tasks =
        repo.tasks(&[&json!({"id": "t", "run": format!("touch '{}'", ran.display())}).to_string()]);

    let out = repo
        .swarm_cmd()
        .env("SWARM_LANDLOCK_ABI", "0")
        .args(["run", tasks.to_str().unwrap(), "--confine", "require"])
        .output()
        .unwrap();

    assert_exit(&out, 2);
    insta::assert_snapshot!(crate::stderr(&out), @r#"
    error: confine = "require", and the kernel cannot confine tasks here: SWARM_LANDLOCK_ABI=0 says to behave as a kernel without Landlock; nothing ran
    hint: run on Linux 5.13 or later with Landlock enabled, or set confine = "auto" (tasks then run unconfined where the kernel cannot confine them)
    "#);
    assert!(!ran.exists());
    assert!(
        !repo.swarm_dir().join("runs").exists(),
        "a run was recorded"
    );
    // Nor does a goal ask the model for a plan.
    let out = repo
        .swarm_cmd()
        .env("SWARM_LANDLOCK_ABI", "0")
        .env("SWARM_CONFINE", "require")
        .env("SWARM_API_BASE", "http://127.0.0.1:9/v1")
        .args(["--goal", "anything"])
        .output()
        .unwrap();
    assert_exit(&out, 2);
    assert!(crate::stderr(&out).contains("confine = \"require\""));
}

#[test]
fn without_landlock_the_default_says_so_once_and_runs_unconfined() {
    let repo = TestRepo::new();
    let ran = outside(&repo, "ran");
    let home = repo.cache.parent().unwrap().to_owned();
    let tasks = repo.tasks(&[
        &json!({"id": "a", "run": format!("touch '{}'", ran.display())}).to_string(),
        &json!({"id": "b", "run": format!("echo x > '{}/unconfined.txt'", home.display())})
            .to_string(),
    ]);
    let report = outside(&repo, "report.md");

    let out = repo
        .swarm_cmd()
        .env("SWARM_LANDLOCK_ABI", "0")
        .args(["run", tasks.to_str().unwrap(), "--final-out"])
        .arg(&report)
        .output()
        .unwrap();

    assert_exit(&out, 0);
    let err = crate::stderr(&out);
    let said = "Note tasks run unconfined: SWARM_LANDLOCK_ABI=0 says to behave as a kernel without Landlock";
    assert_eq!(err.matches(said).count(), 1, "{err}");
    assert!(ran.exists());
    assert!(home.join("unconfined.txt").exists());
    let report = std::fs::read_to_string(&report).unwrap();
    assert!(
        report.contains("Tasks ran unconfined: SWARM_LANDLOCK_ABI=0"),
        "{report}"
    );
    let config = repo
        .swarm_cmd()
        .env("SWARM_LANDLOCK_ABI", "0")
        .arg("config")
        .output()
        .unwrap();
    assert!(
        crate::stdout(&config)
            .contains("# confinement in force here: unavailable (SWARM_LANDLOCK_ABI=0"),
        "{}",
        crate::stdout(&config)
    );
}

#[test]
fn a_mistyped_abi_cap_is_refused_before_anything_runs_rather_than_leaving_tasks_unconfined() {
    let repo = TestRepo::new();
    let ran = outside(&repo, "ran");
    let tasks =
        repo.tasks(&[&json!({"id": "t", "run": format!("touch '{}'", ran.display())}).to_string()]);

    let out = repo
        .swarm_cmd()
        .env("SWARM_LANDLOCK_ABI", "seven")
        .args(["run", tasks.to_str().unwrap()])
        .output()
        .unwrap();

    assert_exit(&out, 2);
    assert!(
        crate::stderr(&out).contains("SWARM_LANDLOCK_ABI=\"seven\" is not a Landlock ABI"),
        "{}",
        crate::stderr(&out)
    );
    assert!(!ran.exists());
    assert!(
        !repo.swarm_dir().join("runs").exists(),
        "a run was recorded"
    );
}

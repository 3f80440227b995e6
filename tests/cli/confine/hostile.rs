//! Hostile `run` tasks and `exec:` agents beside a well-behaved writer, in one run.

use serde_json::json;

use super::{assert_confining, hostile_script, nothing_escaped, plant_canaries};
use crate::{TestRepo, assert_exit, outside, status_json};

#[test]
#[cfg_attr(
    not(has_landlock),
    ignore = "needs Landlock: this kernel does not confine (Linux 5.13 or later, with landlock in its lsm= list)"
)]
fn hostile_tasks_are_refused_everything_outside_their_checkouts_and_the_good_writer_lands() {
    assert_confining();
    let repo = TestRepo::new();
    let home = plant_canaries(&repo);
    let agent = outside(&repo, "hostile-agent.sh");
    std::fs::write(&agent, hostile_script(&repo.root, &home, "agent")).unwrap();
    let tasks = repo.tasks(&[
        &json!({"id": "good", "run": "echo good > good.txt"}).to_string(),
        &json!({"id": "run", "run": hostile_script(&repo.root, &home, "run")}).to_string(),
        &json!({"id": "agent", "prompt": "Do your worst.",
                "agent": format!("exec:sh '{}'", agent.display())})
        .to_string(),
        &json!({"id": "reader", "run": hostile_script(&repo.root, &home, "reader"),
                "mode": "read"})
        .to_string(),
    ]);
    let report = outside(&repo, "report.md");

    let out = repo.swarm(&[
        "run",
        tasks.to_str().unwrap(),
        "-j",
        "4",
        "--final-out",
        report.to_str().unwrap(),
    ]);

    // Every try is refused as it is made; each task goes on as its script says, and the work
    // each did in its own checkout lands, the good writer's with it.
    assert_exit(&out, 0);
    assert_eq!(repo.read("good.txt"), "good\n");
    assert_eq!(repo.read("mine-run.txt"), "run\n");
    assert_eq!(repo.read("mine-agent.txt"), "agent\n");
    // What the tasks stole is nothing: the files they made of it are empty.
    assert_eq!(repo.read("stolen-run.txt"), "");
    assert_eq!(repo.read("stolen-agent.txt"), "");
    // A reader may not write even its own snapshot.
    assert!(!repo.root.join("mine-reader.txt").exists());
    nothing_escaped(&repo, &home, &["run", "agent", "reader"], &[&report]);
    let report = std::fs::read_to_string(&report).unwrap();
    assert!(
        report.contains("Tasks ran confined by the kernel (Landlock)"),
        "{report}"
    );

    // Each refusal is named in the attempt's transcript and by `swarm show`.
    let status = status_json(&repo);
    for id in ["run", "agent"] {
        let task = status["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["id"] == id)
            .unwrap();
        let transcript = std::fs::read_to_string(task["transcript"].as_str().unwrap()).unwrap();
        for refused in [
            format!("{}/.ssh/id_ed25519: no task may read it", home.display()),
            format!("{}/.aws/credentials: no task may read it", home.display()),
            format!(
                "{}/escaped-{id}.txt: outside what this task may write",
                repo.root.display()
            ),
            format!(
                "{}/escaped-{id}.txt: outside what this task may write",
                home.display()
            ),
            format!(
                "{}/.bashrc: outside what this task may write",
                home.display()
            ),
        ] {
            assert!(
                transcript.contains(&format!("swarm: the kernel refused {refused}")),
                "{id}: no {refused:?} in\n{transcript}"
            );
        }
        let shown = repo.swarm(&["show", id]);
        let shown = crate::stdout(&shown);
        assert!(shown.contains("Refused by the confinement:"), "{shown}");
        assert!(
            shown.contains(&format!("{}/.ssh/id_ed25519", home.display())),
            "{shown}"
        );
    }
}

#[test]
#[cfg_attr(
    not(has_landlock),
    ignore = "needs Landlock: this kernel does not confine (Linux 5.13 or later, with landlock in its lsm= list)"
)]
fn unconfined_the_same_tries_reach_the_home_which_is_what_the_rules_stop() {
    assert_confining();
    let repo = TestRepo::new();
    let home = plant_canaries(&repo);
    let tasks = repo.tasks(&[&json!({
        "id": "run",
        "run": format!("echo x > '{}/escaped-run.txt'; cat '{}/.ssh/id_ed25519' > stolen.txt",
            home.display(), home.display()),
    })
    .to_string()]);

    let out = repo.swarm(&["run", tasks.to_str().unwrap(), "--confine", "off"]);

    assert_exit(&out, 0);
    assert!(home.join("escaped-run.txt").exists());
    assert_eq!(repo.read("stolen.txt"), super::SSH_CANARY);
}

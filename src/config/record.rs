//! A run's options as the board keeps them, so `swarm resume` starts from them: the serde form
//! of [`Options`] with a `version`. A resume reads what an older swarm wrote and refuses, with a
//! clear error, what a newer one did.
//!
//! Versions:
//! - 0: the options with no `version` field, as swarm wrote them before the record had one.
//! - 1: the same fields, with `"version": 1`.
//!
//! A change to the fields (a rename, a new meaning) is a new version, read here from the older
//! ones; a new field that is unset when absent is not.

use anyhow::{Context as _, bail};
use serde::Serialize;
use serde_json::Value;

use super::Options;

/// The version this swarm writes, and the newest it reads.
const VERSION: u64 = 1;

#[derive(Serialize)]
struct Record<'a> {
    version: u64,
    #[serde(flatten)]
    options: &'a Options,
}

/// The record of `options` to store.
pub(crate) fn to_record(options: &Options) -> anyhow::Result<Value> {
    Ok(serde_json::to_value(Record {
        version: VERSION,
        options,
    })?)
}

/// The options in a stored record, of any version up to this swarm's.
pub(crate) fn from_record(record: &Value) -> anyhow::Result<Options> {
    let version = match record.get("version") {
        None => 0,
        Some(v) => v.as_u64().with_context(|| {
            format!("the stored options have a version that is not a whole number: {v}")
        })?,
    };
    if version > VERSION {
        bail!(
            "the stored options have version {version}, newer than this swarm knows ({VERSION}); use a newer swarm"
        );
    }
    // Versions 0 and 1 hold the same fields; `version` itself is not one of them, and unknown
    // fields are ignored.
    serde_json::from_value(record.clone()).context("the stored options do not read as options")
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use serde_json::json;

    use super::{from_record, to_record};
    use crate::config::{Land, Options};

    fn sample() -> Options {
        Options {
            jobs: Some(3),
            max_writers: Some(2),
            agent: Some("exec:cat".to_owned()),
            budget_tokens: Some(1000),
            allow_program: vec!["cargo".to_owned()],
            task_timeout: Some("10m".to_owned()),
            check: Some("true".to_owned()),
            final_out: Some(PathBuf::from("/tmp/opt-report.md")),
            land: Some(Land::Branch),
            worktree_dir: Some(PathBuf::from("/tmp/optwt")),
            resolve_conflicts: true,
            ..Options::default()
        }
    }

    #[test]
    fn a_record_without_a_version_reads_as_the_options_it_was_written_from() {
        // What `runs.options` held for `swarm run tasks.jsonl -j 3 --max-writers 2
        // --agent exec:cat --land branch --check true --allow-program cargo
        // --resolve-conflicts --task-timeout 10m --budget-tokens 1000 --worktree-dir /tmp/optwt
        // --final-out /tmp/opt-report.md` before the record had a version.
        let stored = r#"{"agent":"exec:cat","allow_program":["cargo"],"api_base":null,"base":null,"budget_tokens":1000,"check":"true","final_out":"/tmp/opt-report.md","final_out_dir":null,"jobs":3,"land":"branch","max_task_tokens":null,"max_turns":null,"max_writers":2,"model":null,"on_escalate":null,"request_timeout":null,"resolve_conflicts":true,"retries":null,"stall_timeout":null,"task_timeout":"10m","worktree_dir":"/tmp/optwt"}"#;
        let stored: serde_json::Value = serde_json::from_str(stored).unwrap();
        assert_eq!(from_record(&stored).unwrap(), sample());
    }

    #[test]
    fn a_record_without_a_version_from_an_older_swarm_misses_fields_that_stay_unset() {
        let stored = json!({"jobs": 2, "land": "none", "resolve_conflicts": false});
        let expected = Options {
            jobs: Some(2),
            land: Some(Land::None),
            ..Options::default()
        };
        assert_eq!(from_record(&stored).unwrap(), expected);
    }

    #[test]
    fn a_record_has_version_1_and_fixed_names_and_reads_back() {
        let record = to_record(&sample()).unwrap();
        let expected = json!({
            "version": 1,
            "jobs": 3, "max_writers": 2, "agent": "exec:cat", "model": null, "api_base": null,
            "request_timeout": null, "endpoint_wait": null, "max_turns": null, "max_task_tokens": null,
            "budget_tokens": 1000, "allow_program": ["cargo"], "task_timeout": "10m",
            "stall_timeout": null, "kill_grace": null, "retries": null, "check": "true",
            "final_out": "/tmp/opt-report.md", "final_out_dir": null, "base": null,
            "land": "branch", "worktree_dir": "/tmp/optwt", "resolve_conflicts": true, "fresh_retries": false, "allow_no_change": false,
            "on_escalate": null, "include": [], "setup": null, "gate": null, "cache": [], "cache_key": [], "remote": null, "report_format": null, "web": false,
            "max_children": null, "max_depth": null, "max_spawned": null, "spawns_per_minute": null,
            "spawning": null, "transcript_cap": null,
        });
        let confinement = json!({
            "confine": null, "read_deny": [], "read_allow": [], "write_allow": [],
            "confine_net": null,
        });
        let ladder = json!({
            "conflicts": [], "mergiraf": null, "forecast": null, "forecast_interval": null,
            "plan_answer_tokens": null, "turn_answer_tokens": null, "price": null,
            "deliver": null, "deliver_remote": null, "forge": null, "pr_branch": null,
            "pr_title": null, "pr_draft": false, "pr_labels": [], "pr_reviewers": [],
            "no_memory": false, "lessons": null, "candidates": null, "select": null,
            "otel": false,
        });
        let confinement = {
            let mut c = confinement;
            c.as_object_mut()
                .unwrap()
                .extend(ladder.as_object().unwrap().clone());
            c
        };
        let mut expected = expected;
        expected
            .as_object_mut()
            .unwrap()
            .extend(confinement.as_object().unwrap().clone());
        assert_eq!(record, expected);
        assert_eq!(from_record(&record).unwrap(), sample());
    }

    #[test]
    fn a_record_from_a_newer_swarm_is_refused_with_a_hint() {
        let err = from_record(&json!({"version": 2, "jobs": 3})).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the stored options have version 2, newer than this swarm knows (1); use a newer swarm"
        );
        let err = from_record(&json!({"version": "one"})).unwrap_err();
        assert!(
            err.to_string().contains("not a whole number: \"one\""),
            "{err}"
        );
    }

    #[test]
    fn a_record_that_is_not_options_is_an_error() {
        let err = from_record(&json!({"version": 1, "jobs": "four"})).unwrap_err();
        assert_eq!(err.to_string(), "the stored options do not read as options");
    }
}

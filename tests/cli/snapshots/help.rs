//! `--help` of swarm and of every subcommand, found in the clap definition, so a new
//! subcommand has no snapshot until one is reviewed; and what `swarm` alone, `-h`, `help` and
//! `--version` print.

use super::{assert_output, swarm};
use crate::TestRepo;

/// The path of every subcommand under `cmd`, depth first: `["run"]`, `["queue", "add"]`, ….
fn subcommands(cmd: &clap::Command, above: &[String], out: &mut Vec<Vec<String>>) {
    for sub in cmd.get_subcommands() {
        let mut path = above.to_vec();
        path.push(sub.get_name().to_owned());
        out.push(path.clone());
        subcommands(sub, &path, out);
    }
}

#[test]
fn every_subcommand_has_its_help_shown_in_full() {
    let repo = TestRepo::new();
    let mut paths = Vec::new();
    subcommands(&swarm::cli::command(), &[], &mut paths);
    assert!(paths.len() > 5, "too few subcommands: {paths:?}");
    for path in paths {
        let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
        args.push("--help");
        let out = swarm(&repo, &args);
        assert_eq!(out.code(), Some(0), "{out}");
        assert_output!(format!("swarm_{}", path.join("_")), out);
    }
}

#[test]
fn the_top_level_help_in_each_of_its_forms_and_the_version() {
    let repo = TestRepo::new();
    let cases: [(&str, &[&str]); 6] = [
        ("swarm_help_flag", &["--help"]),
        ("swarm_h", &["-h"]),
        ("swarm_help_subcommand", &["help"]),
        ("swarm_help_of_a_subcommand", &["help", "run"]),
        ("swarm_without_arguments", &[]),
        ("swarm_version", &["--version"]),
    ];
    for (name, args) in cases {
        assert_output!(name, swarm(&repo, args));
    }
}

//! Scheduling: `--jobs` bounds how many tasks run at once.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{lines_of, path_arg, sh, task_file};
use crate::{TestRepo, assert_exit, outside};

/// The largest number of intervals open at one moment; an interval that ends when another
/// starts does not overlap it.
fn max_overlap(intervals: &[(f64, f64)]) -> usize {
    let mut points: Vec<(f64, i32)> = Vec::new();
    for &(start, end) in intervals {
        points.push((start, 1));
        points.push((end, -1));
    }
    points.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let (mut open, mut most) = (0i32, 0i32);
    for (_, delta) in points {
        open += delta;
        most = most.max(open);
    }
    most as usize
}

/// Runs 8 independent one-second readers with `-j jobs`; returns (max overlap, wall time).
/// No task goes on before `jobs` tasks have started, so as many run at once as swarm lets.
fn eight_sleepers(jobs: &str) -> (usize, Duration) {
    let repo = TestRepo::new();
    let log = outside(&repo, "intervals.log");
    let starts = outside(&repo, "starts.log");
    let cmd = format!(
        "s=$(date +%s.%N); echo >> {starts}; until [ \"$(wc -l < {starts})\" -ge {jobs} ]; do sleep 0.01; done; sleep 1; e=$(date +%s.%N); echo \"$s $e\" >> {}",
        sh(&log),
        starts = sh(&starts),
    );
    let tasks: Vec<Value> = (0..8)
        .map(|i| json!({"id": format!("t{i}"), "run": cmd, "mode": "read"}))
        .collect();
    let file = task_file(&repo, &tasks);
    let started = Instant::now();
    let out = repo.swarm(&["run", path_arg(&file), "-j", jobs]);
    let wall = started.elapsed();
    assert_exit(&out, 0);
    let intervals: Vec<(f64, f64)> = lines_of(&log)
        .iter()
        .map(|l| {
            let (s, e) = l.split_once(' ').unwrap();
            (s.parse().unwrap(), e.parse().unwrap())
        })
        .collect();
    assert_eq!(intervals.len(), 8, "every task runs once");
    (max_overlap(&intervals), wall)
}

#[test]
fn jobs_4_runs_eight_readers_four_at_a_time() {
    let (overlap, wall) = eight_sleepers("4");
    assert_eq!(overlap, 4, "tasks running at once with -j 4");
    assert!(
        wall >= Duration::from_secs(2),
        "8 one-second tasks 4 at a time took only {wall:?}"
    );
}

#[test]
fn jobs_1_runs_eight_readers_one_at_a_time() {
    let (overlap, wall) = eight_sleepers("1");
    assert_eq!(overlap, 1, "tasks running at once with -j 1");
    assert!(
        wall >= Duration::from_secs(8),
        "8 one-second tasks one at a time took only {wall:?}"
    );
}

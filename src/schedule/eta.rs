//! How long the rest of a run should take, from how long each task left is expected to take.

use std::time::Duration;

use crate::plan::Plan;

/// The longer of the plan's critical path through what is left (`left[i]` for task `i`, zero
/// for a task that has ended) and all that is left spread over `jobs` slots.
pub(super) fn remaining(plan: &Plan, left: &[Duration], jobs: usize) -> Duration {
    let mut ends = vec![Duration::ZERO; plan.len()];
    for i in plan.topological_order() {
        let after = plan.deps(i).map(|d| ends[d]).max().unwrap_or_default();
        ends[i] = after + left[i];
    }
    let path = ends.into_iter().max().unwrap_or_default();
    let work = left.iter().sum::<Duration>() / u32::try_from(jobs.max(1)).unwrap_or(u32::MAX);
    path.max(work)
}

/// What a running task that is expected to take `expected` and has run `ran` still needs: the
/// rest of what it is expected to take, but once past two thirds of that, half as long again
/// as it has run. A task past its expected time is running longer than the others did, not
/// about to end: an estimate of zero would show "ETA 0s" for as long as it runs on.
pub(crate) fn left_of_running(expected: Duration, ran: Duration) -> Duration {
    expected.saturating_sub(ran).max(ran / 2)
}

/// How long the rest of a run should take, from its board (for its page): each task not
/// ended is expected to take as long as the finished tasks of its mode took on average (or of
/// any mode, when none of its own has finished), a running one less what it has run, over
/// `jobs` slots. `None` until a task has finished.
pub fn from_records(
    plan: &Plan,
    tasks: &[crate::store::TaskRecord],
    jobs: usize,
    now_ms: i64,
) -> Option<Duration> {
    use crate::plan::Mode;
    use crate::store::TaskStatus;
    let ms = |ms: i64| Duration::from_millis(u64::try_from(ms).unwrap_or(0));
    let took = |mode: Option<Mode>| {
        let times: Vec<Duration> = plan
            .tasks
            .iter()
            .zip(tasks)
            .filter(|(t, r)| mode.is_none_or(|m| t.mode == m) && r.status == TaskStatus::Done)
            .map(|(_, r)| ms(r.elapsed_ms))
            .collect();
        let n = u32::try_from(times.len()).ok().filter(|&n| n > 0)?;
        Some(times.iter().sum::<Duration>() / n)
    };
    let overall = took(None)?;
    let by_mode = [Mode::Read, Mode::Write].map(|m| took(Some(m)).unwrap_or(overall));
    let left: Vec<Duration> = plan
        .tasks
        .iter()
        .zip(tasks)
        .map(|(t, r)| {
            let expected = by_mode[usize::from(t.mode == Mode::Write)];
            match r.status {
                TaskStatus::Pending | TaskStatus::Interrupted => expected,
                TaskStatus::Running => {
                    left_of_running(expected, ms(now_ms - r.started_at.unwrap_or(now_ms)))
                }
                _ => Duration::ZERO,
            }
        })
        .collect();
    Some(remaining(plan, &left, jobs))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::plan::Plan;

    fn plan(lines: &[&str]) -> Plan {
        Plan::parse(&lines.join("\n"), "test").unwrap()
    }

    fn secs(s: &[u64]) -> Vec<Duration> {
        s.iter().map(|&s| Duration::from_secs(s)).collect()
    }

    #[test]
    fn a_chain_takes_its_sum_and_a_fan_its_longest_or_its_work_over_the_slots() {
        let chain = plan(&[
            r#"{"id":"a","run":"true"}"#,
            r#"{"id":"b","run":"true","deps":["a"]}"#,
            r#"{"id":"c","run":"true","deps":["b"]}"#,
        ]);
        assert_eq!(
            super::remaining(&chain, &secs(&[10, 20, 30]), 4),
            Duration::from_secs(60)
        );
        assert_eq!(
            super::remaining(&chain, &secs(&[0, 0, 30]), 4),
            Duration::from_secs(30)
        );
        let fan = plan(&[
            r#"{"id":"a","run":"true"}"#,
            r#"{"id":"b","run":"true"}"#,
            r#"{"id":"c","run":"true"}"#,
            r#"{"id":"d","run":"true"}"#,
        ]);
        assert_eq!(
            super::remaining(&fan, &secs(&[10, 10, 10, 40]), 4),
            Duration::from_secs(40)
        );
        // Eight tasks of 10s on two slots: the work, not the path, decides.
        assert_eq!(
            super::remaining(&fan, &secs(&[10, 10, 10, 10]), 1),
            Duration::from_secs(40)
        );
        assert_eq!(
            super::remaining(&fan, &secs(&[0, 0, 0, 0]), 2),
            Duration::ZERO
        );
    }

    #[test]
    fn a_running_task_past_its_expected_time_still_needs_time() {
        let s = Duration::from_secs;
        assert_eq!(super::left_of_running(s(30), s(6)), s(24));
        assert_eq!(super::left_of_running(s(30), s(20)), s(10));
        // Past its expected 30 s: never zero, and more the longer it runs.
        assert_eq!(super::left_of_running(s(30), s(30)), s(15));
        assert_eq!(
            super::left_of_running(s(30), s(45)),
            Duration::from_millis(22_500)
        );
    }

    #[test]
    fn a_diamond_counts_its_longer_arm_once() {
        let diamond = plan(&[
            r#"{"id":"a","run":"true"}"#,
            r#"{"id":"b","run":"true","deps":["a"]}"#,
            r#"{"id":"c","run":"true","deps":["a"]}"#,
            r#"{"id":"d","run":"true","deps":["b","c"]}"#,
        ]);
        assert_eq!(
            super::remaining(&diamond, &secs(&[5, 30, 10, 5]), 8),
            Duration::from_secs(40)
        );
    }
}

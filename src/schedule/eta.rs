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

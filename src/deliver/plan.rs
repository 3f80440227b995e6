//! Which change requests a run's result becomes, decided without touching git or a forge: the
//! mode, the merged writers with the writers each builds on, and a replay that says whether a
//! writer's change applies on top of a commit (and what it makes there).

use crate::config::Deliver;
use crate::plan::{Mode, Plan};

/// A merged writer, as delivery sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Writer {
    pub(crate) id: String,
    /// The merged writers it builds on: its nearest writers up its deps (through readers).
    pub(crate) needs: Vec<String>,
}

/// The writers of `plan` named in `merged` (the writers merged and standing, in the order they
/// merged), each with the merged writers it builds on: the nearest writers up its deps,
/// looking through readers.
pub(crate) fn writers(plan: &Plan, merged: &[&str]) -> Vec<Writer> {
    merged
        .iter()
        .filter_map(|id| {
            let i = plan.tasks.iter().position(|t| t.id.as_str() == *id)?;
            Some(Writer {
                id: (*id).to_owned(),
                needs: builds_on(plan, i, merged),
            })
        })
        .collect()
}

/// The merged writers task `i` builds on.
fn builds_on(plan: &Plan, i: usize, merged: &[&str]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut seen = vec![false; plan.tasks.len()];
    let mut stack: Vec<usize> = plan.deps(i).collect();
    stack.reverse();
    while let Some(d) = stack.pop() {
        if std::mem::replace(&mut seen[d], true) {
            continue;
        }
        let task = &plan.tasks[d];
        let id = task.id.as_str();
        match task.mode {
            Mode::Write if merged.contains(&id) => {
                if !out.iter().any(|o| o == id) {
                    out.push(id.to_owned());
                }
            }
            Mode::Write => {}
            Mode::Read => {
                let mut up: Vec<usize> = plan.deps(d).collect();
                up.reverse();
                stack.extend(up);
            }
        }
    }
    out
}

/// What a change request is to be merged into.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum On {
    /// The user's branch.
    Base,
    /// The branch of the request of this task (a stack).
    Task(String),
}

/// One change request: a task's (its change alone) or the whole run's (`task: None`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Request<C> {
    pub(crate) task: Option<String>,
    pub(crate) on: On,
    /// The commit its branch is to hold.
    pub(crate) commit: C,
}

/// Why a writer is in the whole run's request rather than one of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Why {
    /// It builds on other writers (`pr-per-task`), or on several (`stack`: a stack is linear).
    BuildsOn(Vec<String>),
    /// It builds on a writer that is itself in the whole run's request.
    AfterWhole(String),
    /// Its change does not apply alone where its request would start.
    DoesNotApply,
}

/// The requests, in the order they are opened (a stack's lower ones first, the whole run's
/// last), and the writers that went into the whole run's request, with why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Requests<C> {
    pub(crate) requests: Vec<Request<C>>,
    pub(crate) in_whole: Vec<(String, Why)>,
}

/// The requests of `mode` for `writers` (in the order they merged; a writer's needs come
/// before it). `whole` is the run's result; `replay(task, onto)` is the commit of `task`'s change
/// made on `onto` (the base when `None`), or `None` when it does not apply there. `land` and
/// `branch` open nothing.
pub(crate) fn plan<C: Clone>(
    mode: Deliver,
    writers: &[Writer],
    whole: C,
    replay: &mut dyn FnMut(&str, Option<&C>) -> Option<C>,
) -> Requests<C> {
    let mut requests: Vec<Request<C>> = Vec::new();
    let mut in_whole: Vec<(String, Why)> = Vec::new();
    let whole_request = |commit: C| Request {
        task: None,
        on: On::Base,
        commit,
    };
    match mode {
        Deliver::Land | Deliver::Branch => {}
        Deliver::Pr => requests.push(whole_request(whole)),
        Deliver::PrPerTask | Deliver::Stack => {
            for w in writers {
                let on = match w.needs.as_slice() {
                    [] => Ok(On::Base),
                    [one] if mode == Deliver::Stack => {
                        if requests.iter().any(|r| r.task.as_deref() == Some(one)) {
                            Ok(On::Task(one.clone()))
                        } else {
                            Err(Why::AfterWhole(one.clone()))
                        }
                    }
                    many => Err(Why::BuildsOn(many.to_vec())),
                };
                let replayed = on.and_then(|on| {
                    let onto = match &on {
                        On::Base => None,
                        On::Task(t) => requests
                            .iter()
                            .find(|r| r.task.as_deref() == Some(t))
                            .map(|r| &r.commit),
                    };
                    replay(&w.id, onto)
                        .map(|commit| (on, commit))
                        .ok_or(Why::DoesNotApply)
                });
                match replayed {
                    Ok((on, commit)) => requests.push(Request {
                        task: Some(w.id.clone()),
                        on,
                        commit,
                    }),
                    Err(why) => in_whole.push((w.id.clone(), why)),
                }
            }
            if !in_whole.is_empty() {
                requests.push(whole_request(whole));
            }
        }
    }
    Requests { requests, in_whole }
}

#[cfg(test)]
mod tests {
    use super::{Deliver, On, Request, Requests, Why, Writer, plan};

    fn writer(id: &str, needs: &[&str]) -> Writer {
        Writer {
            id: id.to_owned(),
            needs: needs.iter().map(|n| (*n).to_owned()).collect(),
        }
    }

    /// A replay whose commit is `task@onto` (`base` for the base); tasks in `refuse` do not
    /// apply.
    fn planned(mode: Deliver, writers: &[Writer], refuse: &[&str]) -> Requests<String> {
        plan(mode, writers, "tip".to_owned(), &mut |task, onto| {
            (!refuse.contains(&task))
                .then(|| format!("{task}@{}", onto.map_or("base", String::as_str)))
        })
    }

    fn request(task: Option<&str>, on: On, commit: &str) -> Request<String> {
        Request {
            task: task.map(str::to_owned),
            on,
            commit: commit.to_owned(),
        }
    }

    fn on(task: &str) -> On {
        On::Task(task.to_owned())
    }

    #[test]
    fn land_and_branch_open_nothing() {
        for mode in [Deliver::Land, Deliver::Branch] {
            let p = planned(mode, &[writer("a", &[])], &[]);
            assert!(p.requests.is_empty() && p.in_whole.is_empty(), "{mode:?}");
        }
    }

    #[test]
    fn pr_is_one_request_of_the_whole_result() {
        let p = planned(Deliver::Pr, &[writer("a", &[]), writer("b", &["a"])], &[]);
        assert_eq!(p.requests, vec![request(None, On::Base, "tip")]);
        assert!(p.in_whole.is_empty());
    }

    #[test]
    fn pr_per_task_opens_independent_writers_alone_and_the_rest_in_the_whole() {
        let writers = [
            writer("a", &[]),
            writer("b", &[]),
            writer("c", &["a"]),
            writer("d", &[]),
        ];
        let p = planned(Deliver::PrPerTask, &writers, &["d"]);
        assert_eq!(
            p.requests,
            vec![
                request(Some("a"), On::Base, "a@base"),
                request(Some("b"), On::Base, "b@base"),
                request(None, On::Base, "tip"),
            ]
        );
        assert_eq!(
            p.in_whole,
            vec![
                ("c".to_owned(), Why::BuildsOn(vec!["a".to_owned()])),
                ("d".to_owned(), Why::DoesNotApply),
            ]
        );
    }

    #[test]
    fn pr_per_task_of_independent_writers_has_no_whole_request() {
        let p = planned(
            Deliver::PrPerTask,
            &[writer("a", &[]), writer("b", &[])],
            &[],
        );
        assert_eq!(p.requests.len(), 2);
        assert!(p.requests.iter().all(|r| r.task.is_some()));
    }

    #[test]
    fn stack_follows_chains_and_sends_fan_ins_and_what_follows_them_to_the_whole() {
        // a ← b ← c is a chain; d stands alone; e builds on b and d (a fan-in); f on e.
        let writers = [
            writer("a", &[]),
            writer("b", &["a"]),
            writer("d", &[]),
            writer("c", &["b"]),
            writer("e", &["b", "d"]),
            writer("f", &["e"]),
        ];
        let p = planned(Deliver::Stack, &writers, &[]);
        assert_eq!(
            p.requests,
            vec![
                request(Some("a"), On::Base, "a@base"),
                request(Some("b"), on("a"), "b@a@base"),
                request(Some("d"), On::Base, "d@base"),
                request(Some("c"), on("b"), "c@b@a@base"),
                request(None, On::Base, "tip"),
            ]
        );
        assert_eq!(
            p.in_whole,
            vec![
                (
                    "e".to_owned(),
                    Why::BuildsOn(vec!["b".to_owned(), "d".to_owned()])
                ),
                ("f".to_owned(), Why::AfterWhole("e".to_owned())),
            ]
        );
    }

    #[test]
    fn stack_sends_a_writer_that_does_not_apply_and_its_followers_to_the_whole() {
        let writers = [writer("a", &[]), writer("b", &["a"]), writer("c", &["b"])];
        let p = planned(Deliver::Stack, &writers, &["b"]);
        assert_eq!(
            p.requests,
            vec![
                request(Some("a"), On::Base, "a@base"),
                request(None, On::Base, "tip"),
            ]
        );
        assert_eq!(
            p.in_whole,
            vec![
                ("b".to_owned(), Why::DoesNotApply),
                ("c".to_owned(), Why::AfterWhole("b".to_owned())),
            ]
        );
    }

    #[test]
    fn no_merged_writer_opens_nothing_but_pr_still_opens_the_whole() {
        assert!(planned(Deliver::Stack, &[], &[]).requests.is_empty());
        assert!(planned(Deliver::PrPerTask, &[], &[]).requests.is_empty());
        assert_eq!(planned(Deliver::Pr, &[], &[]).requests.len(), 1);
    }
}

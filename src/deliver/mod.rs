//! A finished run's result delivered the way teams take changes: pushed to a remote and opened
//! as change requests on its forge (`--deliver pr`, `pr-per-task`, `stack`). Which requests a
//! run makes is decided in `plan`, without git or a forge; here they are carried out: each
//! writer's change replayed where its request starts, every branch pushed in one atomic push
//! with the git command line (with what swarm pushed there recorded beside it on the remote,
//! so that a later run may replace it and nothing else), then each request found by its branch
//! and updated, or opened once. Runs after the run's loop, as landing does; a resumed run does
//! it again and finds what it did.

pub(crate) mod plan;

use std::collections::BTreeMap;

use anyhow::bail;

use crate::config::{Choice, Defaults, Deliver, ForgeKind, Options};
use crate::error::Usage;
use crate::forge::{self, Change, Edit, Forge, Proposal, State};
use crate::git::{CommitId, Repo};
use crate::remote::transport::{Expect, Pushed, Transport, Update};

pub(crate) use plan::{On, Why, Writer};

/// Where and how a run delivers, checked before the run starts.
#[derive(Debug)]
pub(crate) struct Target {
    pub(crate) transport: Transport,
    pub(crate) forge: Forge,
    /// The branch the requests go into, on the remote: the user's.
    pub(crate) base_branch: String,
}

/// Whether `mode` opens change requests.
pub(crate) fn opens_requests(mode: Option<Deliver>) -> bool {
    matches!(
        mode,
        Some(Deliver::Pr | Deliver::PrPerTask | Deliver::Stack)
    )
}

/// Where a run with `options` delivers: the remote (`deliver-remote`) as git reaches it, its
/// forge told from its URL as written (or `forge`), the token from `env`, and the user's branch
/// (`--base` when it names a branch, else the one checked out). Bad input, said as such.
pub(crate) fn target(
    repo: &Repo,
    options: &Options,
    env: &dyn Fn(&str) -> Option<String>,
) -> anyhow::Result<Target> {
    let mode = options.deliver.map_or("land", Choice::word);
    let remote = options
        .deliver_remote
        .clone()
        .unwrap_or_else(|| Defaults::deliver_remote().to_owned());
    let url = match repo.remote_url(&remote) {
        Some(url) => url,
        None if remote.contains(':') || remote.contains('/') => remote.clone(),
        None => bail!(
            Usage::new(format!(
                "--deliver {mode} pushes to the remote `{remote}`, which this repository does not have"
            ))
            .hint("add it (`git remote add origin URL`), or name another with --deliver-remote")
        ),
    };
    let kind = options.forge.map(|k| match k {
        ForgeKind::GitHub => forge::Kind::GitHub,
        ForgeKind::GitLab => forge::Kind::GitLab,
    });
    let forge = Forge::for_remote(&url, kind, env).map_err(|e| {
        let hint = match e {
            forge::Setup::UnknownForge { .. } => {
                "set `forge = \"github\"` or `\"gitlab\"` (SWARM_FORGE)"
            }
            forge::Setup::NoToken { .. } => "a token that may open pull requests on the project",
            forge::Setup::BadRemote { .. } => {
                "--deliver-remote names the remote of the project on GitHub or GitLab"
            }
        };
        Usage::new(format!("--deliver {mode}: {e}")).hint(hint)
    })?;
    if let Some(name) = options
        .pr_branch
        .as_deref()
        .filter(|n| !crate::git::is_branch_name(n))
    {
        bail!(
            Usage::new(format!(
                "--pr-branch: `{name}` is not a name git takes for a branch"
            ))
            .hint("name it as `git check-ref-format --branch` allows: swarm/nightly, say")
        );
    }
    let base_branch = match options.base.as_deref() {
        Some(rev) if repo.ref_target(&format!("refs/heads/{rev}"))?.is_some() => rev.to_owned(),
        Some(rev) => bail!(
            Usage::new(format!(
                "--deliver {mode} opens pull requests into a branch, and --base {rev} is not one"
            ))
            .hint("start the run from a branch: --base main")
        ),
        None => repo.head_branch().ok_or_else(|| {
            Usage::new(format!(
                "--deliver {mode} opens pull requests into your branch, and HEAD is detached"
            ))
            .hint("check out the branch the work is for, or name it with --base")
        })?,
    };
    Ok(Target {
        transport: Transport::new(repo.workdir(), &remote),
        forge,
        base_branch,
    })
}

/// The default name of a run's branch on the remote: `swarm/` and the words of `title` (the
/// task file's name, or the goal), lower-case and joined by `-`, at most 40 characters.
pub(crate) fn default_name(title: &str) -> String {
    let mut slug = String::new();
    for word in title
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        if slug.len() + word.len() + 1 > 40 {
            break;
        }
        if !slug.is_empty() {
            slug.push('-');
        }
        slug.push_str(&word.to_ascii_lowercase());
    }
    if slug.is_empty() {
        slug.push_str("run");
    }
    format!("swarm/{slug}")
}

/// What every request carries besides its change.
#[derive(Debug, Clone, Default)]
pub(crate) struct Dress {
    /// `{title}`, `{run}` and `{task}` are filled in.
    pub(crate) title: String,
    pub(crate) draft: bool,
    pub(crate) labels: Vec<String>,
    pub(crate) reviewers: Vec<String>,
}

/// A merged writer's change: the integration branch before and after its merge.
#[derive(Debug, Clone)]
pub(crate) struct Merged {
    pub(crate) writer: Writer,
    pub(crate) before: CommitId,
    pub(crate) after: CommitId,
    /// Its id and title, or the first line of its prompt.
    pub(crate) title: String,
}

/// A run to deliver.
pub(crate) struct Job<'a> {
    pub(crate) repo: &'a Repo,
    pub(crate) target: &'a Target,
    pub(crate) run: &'a str,
    pub(crate) mode: Deliver,
    pub(crate) base: CommitId,
    pub(crate) tip: CommitId,
    /// The whole run's branch on the remote; a task's is this, `-` and its id.
    pub(crate) name: String,
    /// In the order they merged.
    pub(crate) merged: Vec<Merged>,
    /// The run's title: its goal, or its task file's name.
    pub(crate) title: String,
    pub(crate) dress: Dress,
}

/// What became of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    Opened,
    Updated,
    /// Open, and already as it should be.
    Unchanged,
    /// Closed without merging by someone on the forge: left closed.
    Closed,
    /// Merged on the forge already.
    Merged,
    /// Open on the branch but not opened by swarm: its title and description left alone.
    NotSwarms,
}

impl Outcome {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Outcome::Opened => "opened",
            Outcome::Updated => "updated",
            Outcome::Unchanged => "unchanged",
            Outcome::Closed => "closed",
            Outcome::Merged => "merged",
            Outcome::NotSwarms => "not swarm's",
        }
    }
}

/// A request delivered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Delivered {
    pub(crate) task: Option<String>,
    pub(crate) number: u64,
    pub(crate) url: String,
    pub(crate) head: String,
    pub(crate) base: String,
    pub(crate) outcome: Outcome,
    pub(crate) commit: CommitId,
}

/// Why delivery stopped before it was done; what was delivered is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Stop {
    /// The remote or the forge could not be reached or did not answer: resume tries again.
    Environment(String),
    /// Something only the user can change: a refused token, a request the forge would not
    /// take, a branch on the remote with commits swarm did not push.
    User(String),
}

impl Stop {
    pub(crate) fn why(&self) -> &str {
        match self {
            Stop::Environment(why) | Stop::User(why) => why,
        }
    }
}

impl From<forge::Error> for Stop {
    fn from(e: forge::Error) -> Self {
        match e {
            forge::Error::Unavailable { .. } => Stop::Environment(e.to_string()),
            forge::Error::Refused { .. } | forge::Error::Rejected { .. } => {
                Stop::User(e.to_string())
            }
        }
    }
}

/// The record beside a delivered branch on the remote: what swarm last pushed there.
fn record_ref(head: &str) -> String {
    format!("refs/swarm-delivered/{head}")
}

/// A task's id as a part of a branch's name.
fn branch_part(task: &str) -> String {
    task.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// The branch of a request: the run's name, or it with `-` and the task's id.
pub(crate) fn head_of(name: &str, task: Option<&str>) -> String {
    match task {
        None => name.to_owned(),
        Some(task) => format!("{name}-{}", branch_part(task)),
    }
}

/// A title from its template.
fn titled(template: &str, title: &str, run: &str, task: Option<&str>) -> String {
    template
        .replace("{title}", title)
        .replace("{run}", run)
        .replace("{task}", task.unwrap_or_default())
}

/// The most of a description a forge takes (GitHub: 65,536 characters), with room for the
/// marker.
const BODY_CAP: usize = 60_000;

/// `text` with the marker at its end, cut to what a forge takes.
fn with_marker(text: &str, run: &str, task: Option<&str>) -> String {
    let mut text = match text.char_indices().nth(BODY_CAP) {
        Some((end, _)) => format!(
            "{}\n\n… (cut here: the whole text is in the run's report)",
            &text[..end]
        ),
        None => text.trim_end().to_owned(),
    };
    text.push_str("\n\n");
    text.push_str(&forge::marker(run, task));
    text
}

/// What `deliver` did: the requests, and the writers in the whole run's one, with why.
#[derive(Debug, Clone, Default)]
pub(crate) struct Done {
    pub(crate) delivered: Vec<Delivered>,
    pub(crate) in_whole: Vec<(String, Why)>,
}

/// Delivers `job`: `body(task)` is a request's description (`None`: the whole run's), `each`
/// is told of each request as it is delivered (to record it). `Err` says why it stopped, with
/// what was delivered by then.
pub(crate) fn deliver(
    job: &Job<'_>,
    body: &dyn Fn(Option<&str>) -> String,
    each: &mut dyn FnMut(&Delivered) -> anyhow::Result<()>,
) -> Result<Done, (Done, Stop)> {
    let mut done = Done::default();
    let stop = |done: &Done, stop: Stop| Err((done.clone(), stop));
    let changes: BTreeMap<&str, &Merged> = job
        .merged
        .iter()
        .map(|m| (m.writer.id.as_str(), m))
        .collect();
    let writers: Vec<Writer> = job.merged.iter().map(|m| m.writer.clone()).collect();
    let mut failed: Option<anyhow::Error> = None;
    let planned = plan::plan(job.mode, &writers, job.tip.clone(), &mut |task, onto| {
        let m = changes.get(task)?;
        let onto = onto.unwrap_or(&job.base);
        let message = format!(
            "{}\n\nThe change of swarm task {task} of run {}.",
            m.title, job.run
        );
        job.repo
            .replay(&m.before, &m.after, onto, &message)
            .unwrap_or_else(|e| {
                failed.get_or_insert(e);
                None
            })
    });
    if let Some(e) = failed {
        return stop(
            &done,
            Stop::Environment(format!("could not replay a writer's change: {e:#}")),
        );
    }
    done.in_whole.clone_from(&planned.in_whole);
    let target = job.target;
    let head = |task: Option<&str>| head_of(&job.name, task);
    if let Err(why) = push(job, &planned.requests, &head) {
        return stop(&done, why);
    }
    for request in &planned.requests {
        let task = request.task.as_deref();
        let base = match &request.on {
            On::Base => target.base_branch.clone(),
            On::Task(t) => head(Some(t)),
        };
        let title = match task {
            None => job.title.clone(),
            Some(t) => changes
                .get(t)
                .map_or_else(|| t.to_owned(), |m| m.title.clone()),
        };
        let wanted = Proposal {
            title: titled(&job.dress.title, &title, job.run, task),
            body: with_marker(&body(task), job.run, task),
            head: head(task),
            base,
            draft: job.dress.draft,
            labels: job.dress.labels.clone(),
            reviewers: job.dress.reviewers.clone(),
        };
        let delivered = match open(&target.forge, &wanted, job.run, task) {
            Ok((change, outcome)) => Delivered {
                task: task.map(str::to_owned),
                number: change.number,
                url: change.url,
                head: wanted.head,
                base: wanted.base,
                outcome,
                commit: request.commit.clone(),
            },
            Err(e) => return stop(&done, e.into()),
        };
        if let Err(e) = each(&delivered) {
            return stop(&done, Stop::Environment(format!("{e:#}")));
        }
        done.delivered.push(delivered);
    }
    Ok(done)
}

/// Pushes every request's branch, and the record of it, in one atomic push. A branch on the
/// remote is moved only from what swarm recorded pushing there or from one of its own commit's
/// ancestors: commits someone else pushed are never replaced.
fn push(
    job: &Job<'_>,
    requests: &[plan::Request<CommitId>],
    head: &dyn Fn(Option<&str>) -> String,
) -> Result<(), Stop> {
    let transport = &job.target.transport;
    let unreachable = |e: crate::remote::transport::Unreachable| {
        Stop::Environment(format!("could not push to {}: {}", transport.remote(), e.0))
    };
    let mut names = Vec::new();
    for r in requests {
        let h = head(r.task.as_deref());
        names.push(format!("refs/heads/{h}"));
        names.push(record_ref(&h));
    }
    let there = transport.list(&names).map_err(unreachable)?;
    let mut updates = Vec::new();
    for r in requests {
        let h = head(r.task.as_deref());
        let branch = format!("refs/heads/{h}");
        let found = there.get(&branch);
        let recorded = there.get(&record_ref(&h));
        let expect = match found {
            None => Some(Expect::Absent),
            Some(old) if *old == r.commit => None,
            Some(old)
                if recorded == Some(old) || job.repo.contains(&r.commit, old).unwrap_or(false) =>
            {
                Some(Expect::Is(old.clone()))
            }
            Some(old) => {
                return Err(Stop::User(format!(
                    "`{h}` on {} has commits swarm did not push there (it is at {}): swarm does not replace them; merge them into the run's work or delete that branch, or name another with --pr-branch",
                    transport.remote(),
                    old.short()
                )));
            }
        };
        if let Some(expect) = expect {
            updates.push(Update {
                name: branch,
                to: Some(r.commit.clone()),
                expect,
            });
        }
        if recorded != Some(&r.commit) {
            updates.push(Update {
                name: record_ref(&h),
                to: Some(r.commit.clone()),
                expect: recorded.map_or(Expect::Absent, |r| Expect::Is(r.clone())),
            });
        }
    }
    match transport.push(&updates).map_err(unreachable)? {
        Pushed::Done => Ok(()),
        Pushed::Refused(why) => Err(Stop::Environment(format!(
            "the push to {} was refused, a branch having moved meanwhile: {why}",
            transport.remote()
        ))),
    }
}

/// Finds the request of `wanted.head` and makes it what `wanted` says, or opens it: an open
/// one swarm opened is updated (by any run: a second run of a plan updates the first's), one
/// this run opened that was closed or merged since is left so, any other is left alone.
fn open(
    forge: &Forge,
    wanted: &Proposal,
    run: &str,
    task: Option<&str>,
) -> Result<(Change, Outcome), forge::Error> {
    let found = forge.find(&wanted.head)?;
    let swarms = |c: &Change| c.body.contains("<!-- swarm run=");
    let this_runs = |c: &Change| c.body.contains(&forge::marker(run, task));
    match found {
        Some(c) if c.state == State::Open && !swarms(&c) => Ok((c, Outcome::NotSwarms)),
        Some(c) if c.state == State::Open => {
            let edit = Edit {
                title: (c.title != wanted.title).then(|| wanted.title.clone()),
                body: (c.body != wanted.body).then(|| wanted.body.clone()),
                base: (c.base != wanted.base).then(|| wanted.base.clone()),
                draft: c.draft,
            };
            if edit.title.is_none() && edit.body.is_none() && edit.base.is_none() {
                return Ok((c, Outcome::Unchanged));
            }
            Ok((forge.update(c.number, &edit)?, Outcome::Updated))
        }
        Some(c) if this_runs(&c) => {
            let outcome = if c.state == State::Merged {
                Outcome::Merged
            } else {
                Outcome::Closed
            };
            Ok((c, outcome))
        }
        _ => Ok((forge.create(wanted)?, Outcome::Opened)),
    }
}

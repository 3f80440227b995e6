//! Change requests on a forge (GitHub's pull requests, GitLab's merge requests) in one shape:
//! which forge a remote is on and where its API is, the token to use, and finding, opening and
//! updating the request of a branch, a request opened exactly once even when an answer is lost.
//! Like `llm`, it talks HTTP with ureq and tells faults of the environment (`Unavailable`) from
//! a refused token (`Refused`) and from what the forge would not do (`Rejected`). It knows
//! nothing of runs beyond the marker it writes in a body, reads no environment of its own (the
//! caller passes a lookup), and never shows the token: not in errors, not in `Debug`.

mod github;
mod gitlab;
mod url;

use std::fmt;
use std::time::{Duration, SystemTime};

use serde_json::Value;

use crate::secret::Secret;

pub use url::shown;

/// Which forge's API a remote is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    GitHub,
    GitLab,
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Kind::GitHub => "GitHub",
            Kind::GitLab => "GitLab",
        })
    }
}

/// Where a remote's project is: the forge, its API's base URL (no trailing slash) and the
/// project's path (`owner/repo`, or GitLab's `group/subgroup/project`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub kind: Kind,
    pub api: String,
    pub project: String,
}

impl Location {
    /// The forge of the remote at `url`: github.com, or the host of `GITHUB_API_URL`, is
    /// GitHub; gitlab.com, or the host of `CI_API_V4_URL` or `CI_SERVER_URL`, is GitLab; any
    /// other host is `kind`, with the API where that forge puts it on a server of its own
    /// (`/api/v3`, `/api/v4`).
    pub fn of(
        url: &str,
        kind: Option<Kind>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Location, Setup> {
        let bad = |why: String| Setup::BadRemote {
            url: shown(url),
            why,
        };
        let remote = url::parse(url).map_err(bad)?;
        let var = |name: &str| {
            env(name)
                .map(|v| v.trim().trim_end_matches('/').to_owned())
                .filter(|v| !v.is_empty())
        };
        let here = |base: &Option<String>| {
            base.as_deref()
                .and_then(url::host_of)
                .is_some_and(|host| host == remote.host)
        };
        let own_server = |kind: Kind| {
            let (scheme, port) = remote.web.clone().unwrap_or(("https".to_owned(), None));
            let port = port.map(|p| format!(":{p}")).unwrap_or_default();
            let api = match kind {
                Kind::GitHub => "api/v3",
                Kind::GitLab => "api/v4",
            };
            format!("{scheme}://{}{port}/{api}", remote.host)
        };
        let (github_api, gitlab_api, gitlab_server) = (
            var("GITHUB_API_URL"),
            var("CI_API_V4_URL"),
            var("CI_SERVER_URL"),
        );
        let (kind, api) = if remote.host == "github.com" {
            (Kind::GitHub, "https://api.github.com".to_owned())
        } else if here(&github_api) {
            (Kind::GitHub, github_api.unwrap_or_default())
        } else if remote.host == "gitlab.com" {
            (Kind::GitLab, "https://gitlab.com/api/v4".to_owned())
        } else if here(&gitlab_api) {
            (Kind::GitLab, gitlab_api.unwrap_or_default())
        } else if here(&gitlab_server) {
            (
                Kind::GitLab,
                format!("{}/api/v4", gitlab_server.unwrap_or_default()),
            )
        } else if let Some(kind) = kind {
            (kind, own_server(kind))
        } else {
            return Err(Setup::UnknownForge {
                url: shown(url),
                host: remote.host,
            });
        };
        if kind == Kind::GitHub && remote.path.len() != 2 {
            return Err(bad(
                "a GitHub repository is OWNER/REPO, with nothing more".to_owned()
            ));
        }
        Ok(Location {
            kind,
            api,
            project: remote.path.join("/"),
        })
    }
}

/// Why a forge could not be set up: bad input, to be fixed by the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Setup {
    /// The remote's URL (shown without credentials) is not one of a project on a forge.
    BadRemote { url: String, why: String },
    /// The host is neither GitHub's nor GitLab's, and no kind was given.
    UnknownForge { url: String, host: String },
    /// None of the variables that hold a token for this forge is set.
    NoToken { kind: Kind, names: &'static str },
}

impl fmt::Display for Setup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Setup::BadRemote { url, why } => write!(f, "cannot use the remote {url}: {why}"),
            Setup::UnknownForge { url, host } => write!(
                f,
                "cannot tell which forge {host} is (remote {url}): say whether it is GitHub or GitLab"
            ),
            Setup::NoToken { kind, names } => write!(f, "no token for {kind}: set {names}"),
        }
    }
}

impl std::error::Error for Setup {}

/// What a request to the forge came to, when not what was asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The token was refused (401, or 403 that is not a rate limit): the user must fix it.
    Refused { message: String },
    /// The forge could not answer now (5xx, 429, a rate limit, no connection): try again
    /// later, after `retry_after` where the forge said.
    Unavailable {
        retry_after: Option<Duration>,
        message: String,
    },
    /// The forge would not do it (422 and other 4xx): what it said.
    Rejected { status: u16, message: String },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Refused { message } => write!(f, "the token was refused: {message}"),
            Error::Unavailable {
                retry_after: Some(wait),
                message,
            } => write!(
                f,
                "{message} (the forge asks to wait {} s)",
                wait.as_secs_f64().ceil()
            ),
            Error::Unavailable {
                retry_after: None,
                message,
            } => f.write_str(message),
            Error::Rejected { status, message } => {
                write!(f, "refused with HTTP {status}: {message}")
            }
        }
    }
}

impl std::error::Error for Error {}

/// Open, closed without merging, or merged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Open,
    Closed,
    Merged,
}

/// A pull request or a merge request, as swarm needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// GitHub's number, GitLab's `iid`.
    pub number: u64,
    /// Its page, for people.
    pub url: String,
    pub state: State,
    pub head: String,
    pub base: String,
    pub title: String,
    pub body: String,
    pub draft: bool,
}

/// A change request to open.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Proposal {
    pub title: String,
    pub body: String,
    /// The branch with the work.
    pub head: String,
    /// The branch it is to be merged into.
    pub base: String,
    pub draft: bool,
    pub labels: Vec<String>,
    /// Users' logins (GitHub) or usernames (GitLab).
    pub reviewers: Vec<String>,
}

/// What an update changes; `None` leaves it as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Edit {
    pub title: Option<String>,
    pub body: Option<String>,
    pub base: Option<String>,
    /// Whether a new title keeps the request a draft: GitLab says so in the title. (GitHub's
    /// draft state is not an update's to change.)
    pub draft: bool,
}

/// How long the client keeps trying while the forge is unavailable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Patience {
    /// Tries per operation, the first included.
    pub tries: u32,
    /// The most waited between tries, in all; a longer `Retry-After` is returned, not waited.
    pub most_waited: Duration,
    /// The wait after the first failed try without `Retry-After`; doubled after each.
    pub backoff: Duration,
    /// Connecting, and each read of an answer.
    pub timeout: Duration,
}

impl Default for Patience {
    fn default() -> Self {
        Patience {
            tries: 3,
            most_waited: Duration::from_secs(60),
            backoff: Duration::from_secs(1),
            timeout: Duration::from_secs(30),
        }
    }
}

/// How a request carries the token.
#[derive(Debug, Clone)]
struct Auth {
    header: &'static str,
    /// What goes before the token in the header (`Bearer `), if anything.
    scheme: &'static str,
    token: Secret,
}

/// A project on a forge, with the token to act on it.
#[derive(Clone)]
pub struct Forge {
    location: Location,
    auth: Auth,
    patience: Patience,
    agent: ureq::Agent,
}

impl fmt::Debug for Forge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Forge")
            .field("location", &self.location)
            .field("auth", &self.auth)
            .field("patience", &self.patience)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Clone, Copy)]
enum Method {
    Get,
    Post,
    Put,
    Patch,
}

impl Forge {
    /// The forge of the remote at `url` (see `Location::of`), with its token: GitHub's from
    /// `GH_TOKEN`, else `GITHUB_TOKEN`; GitLab's from `GITLAB_TOKEN`, else `CI_JOB_TOKEN`.
    pub fn for_remote(
        url: &str,
        kind: Option<Kind>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Forge, Setup> {
        Forge::new(Location::of(url, kind, env)?, env)
    }

    pub fn new(location: Location, env: &dyn Fn(&str) -> Option<String>) -> Result<Forge, Setup> {
        let var = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        let auth = match location.kind {
            Kind::GitHub => var("GH_TOKEN")
                .or_else(|| var("GITHUB_TOKEN"))
                .map(|t| Auth {
                    header: "authorization",
                    scheme: "Bearer ",
                    token: Secret::new(t.trim()),
                }),
            Kind::GitLab => var("GITLAB_TOKEN")
                .map(|t| ("private-token", t))
                .or_else(|| var("CI_JOB_TOKEN").map(|t| ("job-token", t)))
                .map(|(header, t)| Auth {
                    header,
                    scheme: "",
                    token: Secret::new(t.trim()),
                }),
        };
        let Some(auth) = auth else {
            return Err(Setup::NoToken {
                kind: location.kind,
                names: match location.kind {
                    Kind::GitHub => "GH_TOKEN or GITHUB_TOKEN",
                    Kind::GitLab => "GITLAB_TOKEN (or, in a GitLab CI job, CI_JOB_TOKEN)",
                },
            });
        };
        Ok(Forge::with(location, auth, Patience::default()))
    }

    fn with(location: Location, auth: Auth, patience: Patience) -> Forge {
        let config = ureq::Agent::config_builder()
            .timeout_connect(Some(patience.timeout))
            .timeout_per_read(Some(patience.timeout))
            // A connection per request: a pooled one the forge has closed meanwhile would fail
            // the request that reuses it, and a forge is asked little.
            .max_idle_connections(0)
            .http_status_as_error(false)
            .user_agent(concat!("swarm/", env!("CARGO_PKG_VERSION")))
            .build();
        Forge {
            location,
            auth,
            patience,
            agent: ureq::Agent::new_with_config(config),
        }
    }

    /// The same forge, trying as long as `patience` says.
    #[must_use]
    pub fn patient(self, patience: Patience) -> Forge {
        Forge::with(self.location, self.auth, patience)
    }

    pub fn location(&self) -> &Location {
        &self.location
    }

    /// The newest change request whose head is `branch`, open or not.
    pub fn find(&self, branch: &str) -> Result<Option<Change>, Error> {
        self.retried(|| self.find_once(branch))
    }

    fn find_once(&self, branch: &str) -> Result<Option<Change>, Error> {
        let changes = match self.location.kind {
            Kind::GitHub => github::find(self, branch)?,
            Kind::GitLab => gitlab::find(self, branch)?,
        };
        Ok(changes.into_iter().max_by_key(|c| c.number))
    }

    /// Opens a change request for `proposal`, with its labels and reviewers. A try whose
    /// answer did not come (it may have opened one) is followed by a look for an open request
    /// of its head before any other try, so no second request is opened.
    pub fn create(&self, proposal: &Proposal) -> Result<Change, Error> {
        let mut first = true;
        let change = self.retried(|| {
            if !std::mem::take(&mut first)
                && let Some(change) = self.find_once(&proposal.head)?
                && change.state == State::Open
            {
                return Ok(change);
            }
            match self.location.kind {
                Kind::GitHub => github::open(self, proposal),
                Kind::GitLab => gitlab::open(self, proposal),
            }
        })?;
        if self.location.kind == Kind::GitHub {
            github::dress(self, change.number, proposal)?;
        }
        Ok(change)
    }

    /// Changes the title, body or base of change request `number`.
    pub fn update(&self, number: u64, edit: &Edit) -> Result<Change, Error> {
        self.retried(|| match self.location.kind {
            Kind::GitHub => github::update(self, number, edit),
            Kind::GitLab => gitlab::update(self, number, edit),
        })
    }

    /// `once` again while the forge is unavailable, within `patience`.
    fn retried<T>(&self, mut once: impl FnMut() -> Result<T, Error>) -> Result<T, Error> {
        let mut waited = Duration::ZERO;
        let mut tries = 1;
        loop {
            match once() {
                Err(Error::Unavailable {
                    retry_after,
                    message,
                }) if tries < self.patience.tries => {
                    let wait = retry_after.unwrap_or(self.patience.backoff * (1 << (tries - 1)));
                    if waited + wait > self.patience.most_waited {
                        return Err(Error::Unavailable {
                            retry_after,
                            message,
                        });
                    }
                    std::thread::sleep(wait);
                    waited += wait;
                    tries += 1;
                }
                other => return other,
            }
        }
    }

    /// One request to `path` under the API's base, its answer's JSON (`null` when empty).
    fn call(&self, method: Method, path: &str, body: Option<&Value>) -> Result<Value, Error> {
        let url = format!("{}{path}", self.location.api);
        let Auth {
            header,
            scheme,
            token,
        } = &self.auth;
        let auth = format!("{scheme}{}", token.expose());
        let with = |r: ureq::RequestBuilder<ureq::typestate::WithBody>| {
            r.header(*header, &auth)
                .header("accept", "application/json")
                .header("content-type", "application/json")
        };
        let payload = body.map(Value::to_string).unwrap_or_default();
        let sent = match method {
            Method::Get => self
                .agent
                .get(&url)
                .header(*header, &auth)
                .header("accept", "application/json")
                .call(),
            Method::Post => with(self.agent.post(&url)).send(&payload),
            Method::Put => with(self.agent.put(&url)).send(&payload),
            Method::Patch => with(self.agent.patch(&url)).send(&payload),
        };
        let what = format!("{} {}", self.location.kind, self.location.api);
        let response = sent.map_err(|e| Error::Unavailable {
            retry_after: None,
            message: self.scrub(&format!("cannot reach {what}: {e}")),
        })?;
        let status = response.status().as_u16();
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(|v| v.trim().to_owned())
        };
        let now = SystemTime::now();
        let retry_after = header("retry-after")
            .and_then(|v| crate::llm::parse_retry_after(&v, now))
            .or_else(|| {
                let exhausted = header("x-ratelimit-remaining").is_some_and(|v| v == "0");
                let reset = header("x-ratelimit-reset")?.parse::<u64>().ok()?;
                let reset = SystemTime::UNIX_EPOCH + Duration::from_secs(reset);
                exhausted.then(|| reset.duration_since(now).unwrap_or_default())
            });
        let text = response
            .into_body()
            .read_to_string()
            .map_err(|e| Error::Unavailable {
                retry_after: None,
                message: self.scrub(&format!("the answer of {what} broke off: {e}")),
            })?;
        let said = || self.scrub(&said(&text));
        match status {
            200..=299 if text.trim().is_empty() => Ok(Value::Null),
            200..=299 => serde_json::from_str(&text).map_err(|_| Error::Unavailable {
                retry_after: None,
                message: format!(
                    "{what} answered HTTP {status} with what is not JSON: {}",
                    said()
                ),
            }),
            401 => Err(Error::Refused {
                message: format!("{what} answered HTTP 401: {}", said()),
            }),
            403 if retry_after.is_none() => Err(Error::Refused {
                message: format!("{what} answered HTTP 403: {}", said()),
            }),
            403 | 429 | 500..=599 => Err(Error::Unavailable {
                retry_after,
                message: format!("{what} answered HTTP {status}: {}", said()),
            }),
            _ => Err(Error::Rejected {
                status,
                message: said(),
            }),
        }
    }

    /// `text` without the token, should the forge echo it.
    fn scrub(&self, text: &str) -> String {
        let token = self.auth.token.expose();
        if token.is_empty() {
            text.to_owned()
        } else {
            text.replace(token, crate::secret::MASK)
        }
    }
}

/// The forge's own words in an error's body, at most 500 characters: GitHub's `message` with
/// its `errors`, GitLab's `message` or `error`, else the body.
fn said(body: &str) -> String {
    const CAP: usize = 500;
    let parsed: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    let mut words: Vec<String> = Vec::new();
    for key in ["message", "error"] {
        match &parsed[key] {
            Value::Null => {}
            Value::String(s) => words.push(s.clone()),
            other => words.push(other.to_string()),
        }
    }
    if let Some(errors) = parsed["errors"].as_array() {
        words.extend(errors.iter().map(|e| match e["message"].as_str() {
            Some(m) => m.to_owned(),
            None => e.to_string(),
        }));
    }
    let text = if words.is_empty() {
        body.trim().to_owned()
    } else {
        words.join(": ")
    };
    match text.char_indices().nth(CAP) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None if text.is_empty() => "(empty body)".to_owned(),
        None => text,
    }
}

/// An answer that is not what the forge's API documents.
fn unexpected(kind: Kind, what: &str) -> Error {
    Error::Unavailable {
        retry_after: None,
        message: format!("{kind} answered with {what} that does not read as one"),
    }
}

/// What swarm writes in the body of a change request it opens, to know it again later (even
/// with its branch renamed): `<!-- swarm run=RUN task=TASK -->`, `task=-` for a whole run's.
pub fn marker(run: &str, task: Option<&str>) -> String {
    format!("<!-- swarm run={run} task={} -->", task.unwrap_or("-"))
}

/// The newest of `changes` whose body carries the marker of `run` and `task`.
pub fn find_marked<'c>(changes: &'c [Change], run: &str, task: Option<&str>) -> Option<&'c Change> {
    let marker = marker(run, task);
    changes
        .iter()
        .filter(|c| c.body.contains(&marker))
        .max_by_key(|c| c.number)
}

#[cfg(test)]
mod tests;

//! A fake forge on loopback: GitHub's pull-request routes (under `/api/v3`, as on GitHub
//! Enterprise) and GitLab's merge-request routes (under `/api/v4`), one world of change
//! requests kept in memory that a test reads back. It checks the token, answers in the shapes
//! the forges document (`schemas/`), and can be told to fail the next requests of a route, or
//! to hang up after opening a change (an answer lost on the way).

use std::io::{BufReader, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};

use crate::model_server::http::{Loopback, lock, read_body, read_head, write_response};

/// The token the fake takes; any other is refused with a 401.
pub const TOKEN: &str = "forge-token-5f3a9c";
const OWNER: &str = "octo";
const NOW: &str = "2026-11-29T07:13:00Z";
const SHA: &str = "6dcb09b5b57875f334f61aebed695e2e4193db5e";

/// A route of either forge, to fail or to read the answers of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// GitHub `GET …/pulls`, GitLab `GET …/merge_requests`.
    List,
    /// GitHub `POST …/pulls`, GitLab `POST …/merge_requests`.
    Create,
    /// GitHub `PATCH …/pulls/N`, GitLab `PUT …/merge_requests/N`.
    Update,
    /// GitHub `POST …/issues/N/labels`.
    Labels,
    /// GitHub `POST …/pulls/N/requested_reviewers`.
    Reviewers,
    /// GitLab `GET /users?username=…`.
    Users,
}

/// How a request of a route fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// This status, with a body saying so (500, 401, 422…).
    Status(u16),
    /// 429 with `Retry-After: 1`.
    Throttled,
    /// 403 with `x-ratelimit-remaining: 0` and a reset a second away.
    RateLimited,
    /// The change is opened, then the connection closed with no answer.
    HangUpAfterCreating,
    /// 400 whose message quotes the token sent (as a proxy that repeats the request might).
    EchoToken,
    /// No answer at all: the connection is held until the client goes away (a client killed
    /// while it waits). `FakeForge::wait_stalled` tells when it came.
    Stall,
}

/// Which forge's routes a change was made through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavour {
    GitHub,
    GitLab,
}

/// A change request as the fake keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    pub flavour: Flavour,
    pub project: String,
    pub number: u64,
    pub title: String,
    pub head: String,
    pub base: String,
    pub body: String,
    /// `open`, `closed` or `merged`.
    pub state: &'static str,
    pub draft: bool,
    pub labels: Vec<String>,
    pub reviewers: Vec<String>,
}

#[derive(Default)]
struct World {
    changes: Vec<Stored>,
    /// (route, requests to let through first, requests to fail, how).
    failures: Vec<(Route, usize, usize, Failure)>,
    /// Every request: its route (if one of ours) and method and path.
    requests: Vec<(Option<Route>, String, String)>,
    /// Every 2xx answer's body, by route.
    answers: Vec<(Flavour, Route, Value)>,
    /// Told of each request stalled.
    stalls: Option<mpsc::Sender<Route>>,
}

pub struct FakeForge {
    server: Loopback,
    world: Arc<Mutex<World>>,
    stalled: Mutex<mpsc::Receiver<Route>>,
}

impl FakeForge {
    pub fn start() -> Self {
        let (tell, stalled) = mpsc::channel();
        let world = Arc::new(Mutex::new(World {
            stalls: Some(tell),
            ..World::default()
        }));
        let shared = Arc::clone(&world);
        let server = Loopback::start("fake-forge", move |stream| serve(stream, &shared));
        FakeForge {
            server,
            world,
            stalled: Mutex::new(stalled),
        }
    }

    /// The address as a base: `http://127.0.0.1:PORT`.
    pub fn base(&self) -> String {
        format!("http://{}", self.server.addr())
    }

    /// An environment for `swarm::forge`: a remote on this server is GitHub Enterprise's.
    pub fn github_env(&self) -> Vec<(String, String)> {
        vec![
            ("GITHUB_API_URL".into(), format!("{}/api/v3", self.base())),
            ("GH_TOKEN".into(), TOKEN.into()),
        ]
    }

    /// An environment for `swarm::forge`: a remote on this server is a GitLab's.
    pub fn gitlab_env(&self) -> Vec<(String, String)> {
        vec![
            ("CI_API_V4_URL".into(), format!("{}/api/v4", self.base())),
            ("GITLAB_TOKEN".into(), TOKEN.into()),
        ]
    }

    /// The next `times` requests of `route` fail so.
    pub fn fail(&self, route: Route, times: usize, failure: Failure) {
        self.fail_after(route, 0, times, failure);
    }

    /// The next `times` requests of `route` after the next `skip` fail so.
    pub fn fail_after(&self, route: Route, skip: usize, times: usize, failure: Failure) {
        lock(&self.world)
            .failures
            .push((route, skip, times, failure));
    }

    /// Every change, in the order opened.
    pub fn changes(&self) -> Vec<Stored> {
        lock(&self.world).changes.clone()
    }

    /// Sets the state of change `number` (`closed`, `merged`).
    pub fn set_state(&self, number: u64, state: &'static str) {
        let mut world = lock(&self.world);
        let change = world.changes.iter_mut().find(|c| c.number == number);
        change.expect("no such change").state = state;
    }

    /// How many requests of `route` came.
    pub fn count(&self, route: Route) -> usize {
        let world = lock(&self.world);
        world.requests.iter().filter(|r| r.0 == Some(route)).count()
    }

    /// Waits for a request that `Failure::Stall` holds, and returns its route.
    pub fn wait_stalled(&self) -> Route {
        lock(&self.stalled)
            .recv_timeout(Duration::from_secs(600))
            .expect("no request was stalled")
    }

    /// Every successful answer's body, with its forge and route.
    pub fn answers(&self) -> Vec<(Flavour, Route, Value)> {
        lock(&self.world).answers.clone()
    }
}

fn serve(stream: TcpStream, world: &Mutex<World>) {
    let Ok(read_half) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(read_half);
    let mut writer = stream;
    while let Ok(Some(head)) = read_head(&mut reader) {
        let Ok(body) = read_body(&mut reader, &head) else {
            return;
        };
        let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let token = head
            .header("authorization")
            .and_then(|v| {
                v.strip_prefix("Bearer ")
                    .or_else(|| v.strip_prefix("token "))
            })
            .or_else(|| head.header("private-token"))
            .or_else(|| head.header("job-token"));
        let answer = lock(world).answer(&head.method, &head.target, token, &body);
        match answer {
            Answer::HangUp => {
                drop(writer.shutdown(Shutdown::Both));
                return;
            }
            Answer::Stall => {
                let mut sink = [0u8; 256];
                while matches!(reader.read(&mut sink), Ok(n) if n > 0) {}
                return;
            }
            Answer::Reply {
                status,
                headers,
                body,
            } => {
                let text = body.to_string();
                if write_response(&mut writer, status, &headers, text.as_bytes(), false).is_err()
                    || writer.flush().is_err()
                {
                    return;
                }
            }
        }
    }
}

enum Answer {
    Reply {
        status: u16,
        headers: Vec<(String, String)>,
        body: Value,
    },
    HangUp,
    Stall,
}

fn reply(status: u16, body: Value) -> Answer {
    Answer::Reply {
        status,
        headers: Vec::new(),
        body,
    }
}

/// A request's path and its query's pairs, percent-decoded.
fn split_target(target: &str) -> (Vec<String>, Vec<(String, String)>) {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let decode = |s: &str| {
        percent_encoding::percent_decode_str(&s.replace('+', " "))
            .decode_utf8_lossy()
            .into_owned()
    };
    let segments = path
        .split('/')
        .filter(|s| !s.is_empty())
        .map(decode)
        .collect();
    let pairs = query
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .map(|(k, v)| (decode(k), decode(v)))
        .collect();
    (segments, pairs)
}

impl World {
    fn answer(&mut self, method: &str, target: &str, token: Option<&str>, body: &Value) -> Answer {
        let (segments, query) = split_target(target);
        let segments: Vec<&str> = segments.iter().map(String::as_str).collect();
        let query = |name: &str| {
            query
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        };
        let routed = route(method, &segments);
        self.requests.push((
            routed.as_ref().map(|r| r.1),
            method.to_owned(),
            target.to_owned(),
        ));
        let Some((flavour, route, project, number)) = routed else {
            return reply(404, json!({"message": "Not Found"}));
        };
        if token != Some(TOKEN) {
            return reply(401, unauthorized(flavour));
        }
        let mut hang_up = false;
        let mut slot = self.failures.iter_mut().find(|f| f.0 == route && f.2 > 0);
        if let Some(through) = slot.as_mut().filter(|s| s.1 > 0) {
            through.1 -= 1;
            slot = None;
        }
        if let Some(slot) = slot {
            slot.2 -= 1;
            match slot.3 {
                Failure::HangUpAfterCreating => hang_up = true,
                Failure::Stall => {
                    if let Some(tell) = &self.stalls {
                        tell.send(route).ok();
                    }
                    return Answer::Stall;
                }
                Failure::EchoToken => {
                    let message = format!("bad header: the token {TOKEN} is malformed");
                    return reply(400, json!({ "message": message }));
                }
                failure => return failed(flavour, failure),
            }
        }
        let answer = match (flavour, route) {
            (_, Route::List) => {
                let head = match flavour {
                    Flavour::GitHub => {
                        query("head").and_then(|h| h.split_once(':').map(|(_, b)| b.to_owned()))
                    }
                    Flavour::GitLab => query("source_branch"),
                };
                let mut found: Vec<&Stored> = self
                    .changes
                    .iter()
                    .filter(|c| c.flavour == flavour && c.project == project)
                    .filter(|c| head.as_ref().is_none_or(|h| *h == c.head))
                    .collect();
                found.sort_by_key(|c| std::cmp::Reverse(c.number));
                let items = found.iter().map(|c| shape(c, Shape::Listed)).collect();
                reply(200, Value::Array(items))
            }
            (_, Route::Create) => self.create(flavour, &project, body),
            (_, Route::Update) => self.update(flavour, &project, number, body),
            (Flavour::GitHub, Route::Labels) => {
                let Some(change) = self.change(flavour, &project, number) else {
                    return reply(404, json!({"message": "Not Found"}));
                };
                for label in body["labels"].as_array().into_iter().flatten() {
                    let label = label.as_str().unwrap_or_default().to_owned();
                    if !change.labels.contains(&label) {
                        change.labels.push(label);
                    }
                }
                let labels = change.labels.iter().map(|l| label(l)).collect();
                reply(200, Value::Array(labels))
            }
            (Flavour::GitHub, Route::Reviewers) => {
                let Some(change) = self.change(flavour, &project, number) else {
                    return reply(404, json!({"message": "Not Found"}));
                };
                for name in body["reviewers"].as_array().into_iter().flatten() {
                    let name = name.as_str().unwrap_or_default().to_owned();
                    if !change.reviewers.contains(&name) {
                        change.reviewers.push(name);
                    }
                }
                reply(201, shape(change, Shape::Listed))
            }
            (_, Route::Users) => {
                let name = query("username").unwrap_or_default();
                reply(200, json!([gitlab_user(&name)]))
            }
            _ => reply(404, json!({"message": "Not Found"})),
        };
        if let Answer::Reply { status, body, .. } = &answer
            && (200..300).contains(status)
        {
            self.answers.push((flavour, route, body.clone()));
        }
        if hang_up { Answer::HangUp } else { answer }
    }

    fn change(&mut self, flavour: Flavour, project: &str, number: u64) -> Option<&mut Stored> {
        self.changes
            .iter_mut()
            .find(|c| c.flavour == flavour && c.project == project && c.number == number)
    }

    fn create(&mut self, flavour: Flavour, project: &str, body: &Value) -> Answer {
        let text = |key: &str| body[key].as_str().unwrap_or_default().to_owned();
        let (head, base, title, description) = match flavour {
            Flavour::GitHub => (text("head"), text("base"), text("title"), text("body")),
            Flavour::GitLab => (
                text("source_branch"),
                text("target_branch"),
                text("title"),
                text("description"),
            ),
        };
        if head.is_empty() || base.is_empty() || title.is_empty() {
            return reply(422, json!({"message": "Validation Failed"}));
        }
        let open_already = self.changes.iter().any(|c| {
            c.flavour == flavour && c.project == project && c.head == head && c.state == "open"
        });
        if open_already {
            return reply(
                if flavour == Flavour::GitHub { 422 } else { 409 },
                match flavour {
                    Flavour::GitHub => json!({
                        "message": "Validation Failed",
                        "errors": [{"resource": "PullRequest", "code": "custom",
                            "message": format!("A pull request already exists for {OWNER}:{head}.")}],
                    }),
                    Flavour::GitLab => json!({"message": [
                        format!("Another open merge request already exists for this source branch: !{head}")
                    ]}),
                },
            );
        }
        let (draft, labels, reviewers) = match flavour {
            Flavour::GitHub => (body["draft"].as_bool().unwrap_or(false), vec![], vec![]),
            Flavour::GitLab => (
                title.starts_with("Draft:"),
                body["labels"]
                    .as_str()
                    .unwrap_or_default()
                    .split(',')
                    .filter(|l| !l.is_empty())
                    .map(str::to_owned)
                    .collect(),
                body["reviewer_ids"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_u64)
                    .map(username)
                    .collect(),
            ),
        };
        let change = Stored {
            flavour,
            project: project.to_owned(),
            number: self.changes.len() as u64 + 1,
            title,
            head,
            base,
            body: description,
            state: "open",
            draft,
            labels,
            reviewers,
        };
        let answer = reply(201, shape(&change, Shape::Whole));
        self.changes.push(change);
        answer
    }

    fn update(&mut self, flavour: Flavour, project: &str, number: u64, body: &Value) -> Answer {
        let Some(change) = self.change(flavour, project, number) else {
            return reply(404, json!({"message": "Not Found"}));
        };
        let keys = match flavour {
            Flavour::GitHub => ["title", "body", "base"],
            Flavour::GitLab => ["title", "description", "target_branch"],
        };
        let [title, text, base] = keys.map(|k| body[k].as_str().map(str::to_owned));
        if let Some(title) = title {
            if flavour == Flavour::GitLab {
                change.draft = title.starts_with("Draft:");
            }
            change.title = title;
        }
        if let Some(text) = text {
            change.body = text;
        }
        if let Some(base) = base {
            change.base = base;
        }
        reply(200, shape(change, Shape::Whole))
    }
}

/// The forge, route, project (`owner/repo`, or GitLab's decoded path) and number of a request.
fn route(method: &str, segments: &[&str]) -> Option<(Flavour, Route, String, u64)> {
    let number = |s: &str| s.parse::<u64>().ok();
    match segments {
        ["api", "v3", "repos", owner, repo, rest @ ..] => {
            let project = format!("{owner}/{repo}");
            let (route, n) = match (method, rest) {
                ("GET", ["pulls"]) => (Route::List, 0),
                ("POST", ["pulls"]) => (Route::Create, 0),
                ("PATCH", ["pulls", n]) => (Route::Update, number(n)?),
                ("POST", ["issues", n, "labels"]) => (Route::Labels, number(n)?),
                ("POST", ["pulls", n, "requested_reviewers"]) => (Route::Reviewers, number(n)?),
                _ => return None,
            };
            Some((Flavour::GitHub, route, project, n))
        }
        ["api", "v4", "projects", project, rest @ ..] => {
            let (route, n) = match (method, rest) {
                ("GET", ["merge_requests"]) => (Route::List, 0),
                ("POST", ["merge_requests"]) => (Route::Create, 0),
                ("PUT", ["merge_requests", n]) => (Route::Update, number(n)?),
                _ => return None,
            };
            Some((Flavour::GitLab, route, (*project).to_owned(), n))
        }
        ["api", "v4", "users"] if method == "GET" => {
            Some((Flavour::GitLab, Route::Users, String::new(), 0))
        }
        _ => None,
    }
}

fn unauthorized(flavour: Flavour) -> Value {
    match flavour {
        Flavour::GitHub => json!({
            "message": "Bad credentials",
            "documentation_url": "https://docs.github.com/rest",
            "status": "401",
        }),
        Flavour::GitLab => json!({"message": "401 Unauthorized"}),
    }
}

fn failed(flavour: Flavour, failure: Failure) -> Answer {
    match failure {
        Failure::Status(401) => reply(401, unauthorized(flavour)),
        Failure::Status(status) => {
            reply(status, json!({"message": format!("fake failure {status}")}))
        }
        Failure::Throttled => Answer::Reply {
            status: 429,
            headers: vec![("Retry-After".into(), "1".into())],
            body: json!({"message": "Too Many Requests"}),
        },
        Failure::RateLimited => {
            let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH);
            let reset = now.unwrap_or_default() + Duration::from_secs(1);
            Answer::Reply {
                status: 403,
                headers: vec![
                    ("x-ratelimit-limit".into(), "5000".into()),
                    ("x-ratelimit-remaining".into(), "0".into()),
                    ("x-ratelimit-reset".into(), reset.as_secs().to_string()),
                ],
                body: json!({"message": "API rate limit exceeded"}),
            }
        }
        Failure::HangUpAfterCreating | Failure::EchoToken | Failure::Stall => {
            unreachable!("handled by the caller")
        }
    }
}

/// A pull request as listed (`pull-request-simple`) or whole (`pull-request`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Shape {
    Listed,
    Whole,
}

fn shape(change: &Stored, shape: Shape) -> Value {
    match change.flavour {
        Flavour::GitHub => pull_request(change, shape),
        Flavour::GitLab => merge_request(change),
    }
}

fn github_user(login: &str) -> Value {
    let api = format!("https://api.github.com/users/{login}");
    json!({
        "login": login, "id": id_of(login), "node_id": format!("MDQ6VXNlcj{login}"),
        "avatar_url": format!("https://avatars.githubusercontent.com/{login}"),
        "gravatar_id": "", "url": api, "html_url": format!("https://github.com/{login}"),
        "followers_url": format!("{api}/followers"),
        "following_url": format!("{api}/following{{/other_user}}"),
        "gists_url": format!("{api}/gists{{/gist_id}}"),
        "starred_url": format!("{api}/starred{{/owner}}{{/repo}}"),
        "subscriptions_url": format!("{api}/subscriptions"),
        "organizations_url": format!("{api}/orgs"), "repos_url": format!("{api}/repos"),
        "events_url": format!("{api}/events{{/privacy}}"),
        "received_events_url": format!("{api}/received_events"),
        "type": "User", "site_admin": false, "user_view_type": "public",
    })
}

fn label(name: &str) -> Value {
    json!({
        "id": id_of(name), "node_id": format!("LA_{name}"),
        "url": format!("https://api.github.com/repos/{OWNER}/labels/{name}"),
        "name": name, "description": "", "color": "ededed", "default": false,
    })
}

/// A stable number for a name.
fn id_of(name: &str) -> u64 {
    name.bytes()
        .fold(7, |h, b| (h * 31 + u64::from(b)) % 1_000_000_007)
}

fn pull_request(change: &Stored, shape: Shape) -> Value {
    let project = &change.project;
    let owner = project.split('/').next().unwrap_or_default();
    let n = change.number;
    let api = format!("https://api.github.com/repos/{project}");
    let html = format!("https://github.com/{project}/pull/{n}");
    let repo = json!({
        "id": id_of(project), "node_id": format!("R_{project}"),
        "name": project.split('/').nth(1).unwrap_or_default(), "full_name": project,
        "owner": github_user(owner), "private": false,
        "html_url": format!("https://github.com/{project}"), "url": api, "default_branch": "main",
    });
    let branch = |name: &str| {
        json!({"label": format!("{owner}:{name}"), "ref": name, "repo": repo, "sha": SHA,
               "user": github_user(owner)})
    };
    let link = |href: String| json!({ "href": href });
    let merged = change.state == "merged";
    let mut pr = json!({
        "url": format!("{api}/pulls/{n}"), "id": 1_000 + n, "node_id": format!("PR_{n}"),
        "html_url": html, "diff_url": format!("{html}.diff"), "patch_url": format!("{html}.patch"),
        "issue_url": format!("{api}/issues/{n}"), "commits_url": format!("{api}/pulls/{n}/commits"),
        "review_comments_url": format!("{api}/pulls/{n}/comments"),
        "review_comment_url": format!("{api}/pulls/comments{{/number}}"),
        "comments_url": format!("{api}/issues/{n}/comments"),
        "statuses_url": format!("{api}/statuses/{SHA}"),
        "number": n, "state": if change.state == "open" { "open" } else { "closed" },
        "locked": false, "title": change.title, "user": github_user(owner),
        "body": change.body,
    });
    merge(
        &mut pr,
        json!({
            "labels": change.labels.iter().map(|l| label(l)).collect::<Vec<_>>(),
            "milestone": null, "active_lock_reason": null, "created_at": NOW, "updated_at": NOW,
            "closed_at": if change.state == "open" { Value::Null } else { NOW.into() },
            "merged_at": if merged { NOW.into() } else { Value::Null },
            "merge_commit_sha": null, "assignee": null, "assignees": [],
            "requested_reviewers": change.reviewers.iter().map(|r| github_user(r)).collect::<Vec<_>>(),
            "requested_teams": [], "head": branch(&change.head), "base": branch(&change.base),
        }),
    );
    merge(
        &mut pr,
        json!({
            "_links": {
                "self": link(format!("{api}/pulls/{n}")), "html": link(html.clone()),
                "issue": link(format!("{api}/issues/{n}")),
                "comments": link(format!("{api}/issues/{n}/comments")),
                "review_comments": link(format!("{api}/pulls/{n}/comments")),
                "review_comment": link(format!("{api}/pulls/comments{{/number}}")),
                "commits": link(format!("{api}/pulls/{n}/commits")),
                "statuses": link(format!("{api}/statuses/{SHA}")),
            },
            "author_association": "OWNER", "auto_merge": null, "draft": change.draft,
        }),
    );
    if shape == Shape::Whole {
        merge(
            &mut pr,
            json!({
                "merged": merged, "mergeable": null, "rebaseable": null, "mergeable_state": "unknown",
                "merged_by": null, "comments": 0, "review_comments": 0, "maintainer_can_modify": false,
                "commits": 1, "additions": 1, "deletions": 0, "changed_files": 1,
            }),
        );
    }
    pr
}

/// `more`'s fields put into `into` (one `json!` of a whole pull request is past the macro's
/// recursion limit).
fn merge(into: &mut Value, more: Value) {
    if let Value::Object(more) = more {
        for (key, value) in more {
            into[key] = value;
        }
    }
}

/// The fake's GitLab users: every name is one, its id made from it.
fn gitlab_user(name: &str) -> Value {
    json!({
        "id": id_of(name), "username": name, "name": name, "state": "active",
        "avatar_url": null, "web_url": format!("https://gitlab.com/{name}"),
    })
}

/// The name of the GitLab user with `id`, of those tests use.
fn username(id: u64) -> String {
    ["alice", "bob", "carol"]
        .into_iter()
        .find(|name| id_of(name) == id)
        .map_or_else(|| format!("user{id}"), str::to_owned)
}

fn merge_request(change: &Stored) -> Value {
    let project = &change.project;
    let n = change.number;
    let owner = project.split('/').next().unwrap_or_default();
    let state = match change.state {
        "open" => "opened",
        other => other,
    };
    json!({
        "id": 2_000 + n, "iid": n, "project_id": id_of(project), "title": change.title,
        "description": change.body, "state": state, "created_at": NOW, "updated_at": NOW,
        "merged_at": if state == "merged" { NOW.into() } else { Value::Null },
        "closed_at": if state == "closed" { NOW.into() } else { Value::Null },
        "merged_by": null, "closed_by": null,
        "target_branch": change.base, "source_branch": change.head,
        "source_project_id": id_of(project), "target_project_id": id_of(project),
        "author": gitlab_user(owner), "assignees": [],
        "reviewers": change.reviewers.iter().map(|r| gitlab_user(r)).collect::<Vec<_>>(),
        "labels": change.labels, "draft": change.draft, "work_in_progress": change.draft,
        "merge_when_pipeline_succeeds": false, "detailed_merge_status": "mergeable",
        "sha": SHA, "merge_commit_sha": null, "squash_commit_sha": null,
        "user_notes_count": 0, "upvotes": 0, "downvotes": 0,
        "web_url": format!("https://gitlab.com/{project}/-/merge_requests/{n}"),
        "references": {"short": format!("!{n}"), "relative": format!("!{n}"),
                       "full": format!("{project}!{n}")},
        "squash": false,
    })
}

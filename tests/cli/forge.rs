//! `swarm::forge` against the fake forge: change requests found, opened and updated on GitHub
//! and GitLab, retries, refusals, an answer lost after opening, and no token in any error.

use std::time::Duration;

use swarm::forge::{Change, Edit, Error, Forge, Kind, Patience, Proposal, Setup, State};

use crate::fake_forge::{Failure, FakeForge, Flavour, Route, TOKEN};

/// A forge on the fake, as `flavour` has it: GitHub at `octo/hello`, GitLab at
/// `group/sub/project`. Waits without `Retry-After` are short, so the tests are quick.
fn forge(fake: &FakeForge, flavour: Flavour) -> Forge {
    let (env, remote) = match flavour {
        Flavour::GitHub => (fake.github_env(), format!("{}/octo/hello.git", fake.base())),
        Flavour::GitLab => (
            fake.gitlab_env(),
            format!("{}/group/sub/project.git", fake.base()),
        ),
    };
    let lookup = move |name: &str| env.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    Forge::for_remote(&remote, None, &lookup)
        .unwrap()
        .patient(Patience {
            backoff: Duration::from_millis(10),
            ..Patience::default()
        })
}

fn proposal(head: &str) -> Proposal {
    Proposal {
        title: "Add the thing".into(),
        body: format!("What it does.\n\n{}", swarm::forge::marker("r1", Some("a"))),
        head: head.into(),
        base: "main".into(),
        draft: true,
        labels: vec!["swarm".into(), "automated".into()],
        reviewers: vec!["alice".into()],
    }
}

const BOTH: [Flavour; 2] = [Flavour::GitHub, Flavour::GitLab];

#[test]
fn forge_create_then_find_then_update_on_both_forges() {
    for flavour in BOTH {
        let fake = FakeForge::start();
        let forge = forge(&fake, flavour);
        assert_eq!(forge.find("swarm/r1-a").unwrap(), None, "{flavour:?}");

        let made = forge.create(&proposal("swarm/r1-a")).unwrap();
        assert_eq!(
            (
                made.number,
                made.state,
                made.head.as_str(),
                made.base.as_str()
            ),
            (1, State::Open, "swarm/r1-a", "main"),
            "{flavour:?}"
        );
        assert_eq!(made.title, "Add the thing", "{flavour:?}");
        assert!(made.draft, "{flavour:?}");
        assert!(made.url.starts_with("https://"), "{made:?}");

        let found = forge.find("swarm/r1-a").unwrap();
        assert_eq!(found.as_ref(), Some(&made), "{flavour:?}");
        assert_eq!(
            swarm::forge::find_marked(std::slice::from_ref(&made), "r1", Some("a")),
            Some(&made)
        );

        let edit = Edit {
            body: Some("Now with more.".into()),
            base: Some("develop".into()),
            ..Edit::default()
        };
        let updated = forge.update(made.number, &edit).unwrap();
        assert_eq!(
            (updated.body.as_str(), updated.base.as_str()),
            ("Now with more.", "develop")
        );

        let stored = fake.changes();
        assert_eq!(stored.len(), 1, "{stored:?}");
        let one = &stored[0];
        assert_eq!(
            (one.head.as_str(), one.base.as_str(), one.body.as_str()),
            ("swarm/r1-a", "develop", "Now with more.")
        );
        assert!(one.draft, "{one:?}");
        assert_eq!(one.labels, ["swarm", "automated"], "{flavour:?}");
        assert_eq!(one.reviewers, ["alice"], "{flavour:?}");
        if flavour == Flavour::GitLab {
            assert_eq!(one.project, "group/sub/project");
            assert_eq!(one.title, "Draft: Add the thing");
        }
    }
}

#[test]
fn forge_find_returns_the_newest_change_of_a_branch_and_its_state() {
    for flavour in BOTH {
        let fake = FakeForge::start();
        let forge = forge(&fake, flavour);
        let first = forge.create(&proposal("feature")).unwrap();
        fake.set_state(first.number, "closed");
        assert_eq!(forge.find("feature").unwrap().unwrap().state, State::Closed);
        let second = forge.create(&proposal("feature")).unwrap();
        fake.set_state(second.number, "merged");
        let found = forge.find("feature").unwrap().unwrap();
        assert_eq!(
            (found.number, found.state),
            (2, State::Merged),
            "{flavour:?}"
        );
        assert_eq!(forge.find("other").unwrap(), None);
    }
}

#[test]
fn forge_a_500_is_retried_and_opens_one_change() {
    for flavour in BOTH {
        let fake = FakeForge::start();
        fake.fail(Route::Create, 1, Failure::Status(500));
        let made = forge(&fake, flavour).create(&proposal("b")).unwrap();
        assert_eq!(made.number, 1);
        assert_eq!(fake.changes().len(), 1, "{flavour:?}");
        assert_eq!(fake.count(Route::Create), 2, "{flavour:?}");
        // Before the second try, a look for what the first may have opened.
        assert_eq!(fake.count(Route::List), 1, "{flavour:?}");
    }
}

#[test]
fn forge_throttled_and_rate_limited_requests_wait_and_succeed() {
    for failure in [Failure::Throttled, Failure::RateLimited] {
        let fake = FakeForge::start();
        fake.fail(Route::List, 1, failure);
        let forge = forge(&fake, Flavour::GitHub);
        let started = std::time::Instant::now();
        assert_eq!(forge.find("b").unwrap(), None, "{failure:?}");
        assert_eq!(fake.count(Route::List), 2);
        if failure == Failure::Throttled {
            // Retry-After: 1 was honoured, not the 10 ms backoff.
            assert!(started.elapsed() >= Duration::from_secs(1), "{failure:?}");
        }
    }
}

#[test]
fn forge_repeated_500s_end_in_unavailable() {
    for flavour in BOTH {
        let fake = FakeForge::start();
        fake.fail(Route::List, 10, Failure::Status(500));
        let err = forge(&fake, flavour).find("b").unwrap_err();
        assert!(
            matches!(err, Error::Unavailable { .. }),
            "{flavour:?}: {err:?}"
        );
        assert_eq!(fake.count(Route::List), 3, "{flavour:?}");
    }
}

#[test]
fn forge_a_rate_limit_longer_than_the_patience_is_returned_with_its_wait() {
    let fake = FakeForge::start();
    fake.fail(Route::List, 1, Failure::Throttled);
    let forge = forge(&fake, Flavour::GitHub).patient(Patience {
        most_waited: Duration::from_millis(100),
        ..Patience::default()
    });
    let err = forge.find("b").unwrap_err();
    assert_eq!(
        err,
        Error::Unavailable {
            retry_after: Some(Duration::from_secs(1)),
            message: err
                .to_string()
                .split(" (the forge")
                .next()
                .unwrap()
                .to_owned(),
        }
    );
    assert_eq!(fake.count(Route::List), 1);
}

#[test]
fn forge_a_refused_token_is_refused_at_once() {
    for flavour in BOTH {
        let fake = FakeForge::start();
        fake.fail(Route::Create, 1, Failure::Status(401));
        let err = forge(&fake, flavour).create(&proposal("b")).unwrap_err();
        assert!(matches!(err, Error::Refused { .. }), "{err:?}");
        assert_eq!(fake.count(Route::Create), 1);
        assert!(fake.changes().is_empty());
    }
    // A wrong token, not a scripted failure.
    let fake = FakeForge::start();
    let lookup = |name: &str| match name {
        "GITHUB_API_URL" => Some(format!("{}/api/v3", fake.base())),
        "GITHUB_TOKEN" => Some("not-the-token".into()),
        _ => None,
    };
    let forge = Forge::for_remote(&format!("{}/octo/hello", fake.base()), None, &lookup).unwrap();
    assert!(matches!(forge.find("b"), Err(Error::Refused { .. })));
}

#[test]
fn forge_an_existing_request_is_rejected_with_the_forges_words() {
    let fake = FakeForge::start();
    let forge = forge(&fake, Flavour::GitHub);
    forge.create(&proposal("b")).unwrap();
    let err = forge.create(&proposal("b")).unwrap_err();
    let Error::Rejected { status, message } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(*status, 422);
    assert!(
        message.contains("A pull request already exists"),
        "{message}"
    );
}

#[test]
fn forge_a_create_whose_answer_was_lost_is_found_not_made_twice() {
    for flavour in BOTH {
        let fake = FakeForge::start();
        fake.fail(Route::Create, 1, Failure::HangUpAfterCreating);
        let made = forge(&fake, flavour).create(&proposal("lost")).unwrap();
        let stored = fake.changes();
        assert_eq!(stored.len(), 1, "{flavour:?}: {stored:?}");
        assert_eq!(fake.count(Route::Create), 1, "{flavour:?}");
        assert_eq!((made.number, made.head.as_str()), (1, "lost"));
        // The labels and reviewers still reach it.
        assert_eq!(stored[0].labels, ["swarm", "automated"], "{flavour:?}");
        assert_eq!(stored[0].reviewers, ["alice"], "{flavour:?}");
    }
}

#[test]
fn forge_the_token_is_in_no_error() {
    let fake = FakeForge::start();
    let mut errors: Vec<String> = Vec::new();
    for flavour in BOTH {
        for failure in [
            Failure::Status(401),
            Failure::Status(500),
            Failure::Status(422),
            Failure::Status(403),
            Failure::EchoToken,
        ] {
            let times = if failure == Failure::Status(500) {
                3
            } else {
                1
            };
            fake.fail(Route::List, times, failure);
            let err = forge(&fake, flavour).find("b").unwrap_err();
            let err = anyhow::Error::new(err).context("looking for the request");
            errors.push(format!("{err:#}"));
            errors.push(format!("{err:?}"));
        }
        let forge = forge(&fake, flavour);
        errors.push(format!("{forge:?}"));
    }
    // Nobody listening: the connection is refused.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let lookup = |name: &str| match name {
        "GITHUB_API_URL" => Some(format!("{base}/api/v3")),
        "GH_TOKEN" => Some(TOKEN.into()),
        _ => None,
    };
    let forge = Forge::for_remote(
        &format!("https://x:{TOKEN}@{}/o/r", &base[7..]),
        None,
        &lookup,
    )
    .unwrap()
    .patient(Patience {
        backoff: Duration::from_millis(1),
        ..Patience::default()
    });
    let err = forge.find("b").unwrap_err();
    assert!(matches!(err, Error::Unavailable { .. }), "{err:?}");
    errors.push(format!("{:#}", anyhow::Error::new(err.clone())));
    errors.push(format!("{err:?}"));
    for text in &errors {
        assert!(!text.contains(TOKEN), "{text}");
    }
    assert!(errors.iter().any(|e| e.contains("401")), "{errors:?}");
    assert!(
        errors
            .iter()
            .any(|e| e.contains("the token [redacted] is malformed")),
        "{errors:?}"
    );
}

/// What the environment holds, to a remote's reading.
type Env<'e> = &'e dyn Fn(&str) -> Option<String>;

#[test]
fn forge_remotes_are_read_and_bad_ones_named_without_credentials() {
    let none = |_: &str| None;
    let enterprise = |name: &str| {
        (name == "GITHUB_API_URL").then(|| "https://ghe.example.com/api/v3".to_owned())
    };
    let cases: [(&str, Env, Kind, &str, &str); 6] = [
        (
            "https://github.com/octo/hello.git",
            &none,
            Kind::GitHub,
            "https://api.github.com",
            "octo/hello",
        ),
        (
            "git@github.com:octo/hello.git",
            &none,
            Kind::GitHub,
            "https://api.github.com",
            "octo/hello",
        ),
        (
            "ssh://git@github.com/octo/hello",
            &none,
            Kind::GitHub,
            "https://api.github.com",
            "octo/hello",
        ),
        (
            "git@ghe.example.com:octo/hello.git",
            &enterprise,
            Kind::GitHub,
            "https://ghe.example.com/api/v3",
            "octo/hello",
        ),
        (
            "https://gitlab.com/group/sub/project.git",
            &none,
            Kind::GitLab,
            "https://gitlab.com/api/v4",
            "group/sub/project",
        ),
        (
            "git@gitlab.com:group/sub/deeper/project.git",
            &none,
            Kind::GitLab,
            "https://gitlab.com/api/v4",
            "group/sub/deeper/project",
        ),
    ];
    for (url, env, kind, api, project) in cases {
        let at = swarm::forge::Location::of(url, None, env).unwrap();
        assert_eq!(
            (at.kind, at.api.as_str(), at.project.as_str()),
            (kind, api, project),
            "{url}"
        );
    }
    for bad in [
        "https://x-access-token:ghp_secret123@github.com/octo",
        "https://ghp_secret123@code.example.org/a/b",
        "/srv/git/repo.git",
    ] {
        let err = swarm::forge::Location::of(bad, None, &none).unwrap_err();
        let text = format!("{err} {err:?}");
        assert!(!text.contains("ghp_secret123"), "{text}");
        assert!(!text.contains("x-access-token"), "{text}");
        let shown = swarm::forge::shown(bad);
        assert!(text.contains(&shown), "{text} does not name {shown}");
    }
    let no_token = Forge::for_remote("https://github.com/o/r", None, &none).unwrap_err();
    assert!(
        matches!(
            no_token,
            Setup::NoToken {
                kind: Kind::GitHub,
                ..
            }
        ),
        "{no_token}"
    );
    assert!(no_token.to_string().contains("GH_TOKEN"));
}

/// A schema of `fake_forge/schemas/`, compiled, and the index of its definition `name`.
fn schema(file: &str, name: &str) -> (boon::Schemas, boon::SchemaIndex) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/cli/fake_forge/schemas")
        .join(file);
    crate::compiled_schema(&path, &format!("#/$defs/{name}"))
}

/// Checks every answer `fake` gave against its forge's published shape; panics at the first
/// it refuses. The forge and route of each answer checked.
pub(crate) fn answers_as_published(fake: &FakeForge) -> Vec<(Flavour, Route)> {
    let simple = schema("github-pull-request.json", "pull-request-simple");
    let whole = schema("github-pull-request.json", "pull-request");
    let gitlab = schema("gitlab-merge-request.json", "merge-request");
    let mut checked = Vec::new();
    for (flavour, route, body) in fake.answers() {
        let (schemas, index) = match (flavour, route) {
            (Flavour::GitHub, Route::List | Route::Reviewers) => &simple,
            (Flavour::GitHub, Route::Create | Route::Update) => &whole,
            (Flavour::GitLab, Route::List | Route::Create | Route::Update) => &gitlab,
            _ => continue,
        };
        let items = match route {
            Route::List => body.as_array().unwrap().clone(),
            _ => vec![body],
        };
        for item in items {
            if let Err(e) = schemas.validate(&item, *index) {
                panic!("{flavour:?} {route:?} answered what its schema refuses: {e:#}\n{item:#}");
            }
            checked.push((flavour, route));
        }
    }
    checked
}

#[test]
fn forge_every_answer_of_the_fake_has_the_forges_published_shape() {
    let fake = FakeForge::start();
    for flavour in BOTH {
        let forge = forge(&fake, flavour);
        forge.find("b").unwrap();
        let made = forge.create(&proposal("b")).unwrap();
        forge.find("b").unwrap();
        forge
            .update(
                made.number,
                &Edit {
                    title: Some("Done".into()),
                    ..Edit::default()
                },
            )
            .unwrap();
        fake.set_state(made.number, "merged");
        forge.find("b").unwrap();
    }
    let checked = answers_as_published(&fake);
    for flavour in BOTH {
        for route in [Route::List, Route::Create, Route::Update] {
            assert!(
                checked.contains(&(flavour, route)),
                "no {flavour:?} {route:?} checked"
            );
        }
    }
    assert!(checked.contains(&(Flavour::GitHub, Route::Reviewers)));
    // The schemas do look: a pull request in a state GitHub never gives, or without its
    // number, and a merge request with a number for its state, are refused.
    let whole = schema("github-pull-request.json", "pull-request");
    let gitlab = schema("gitlab-merge-request.json", "merge-request");
    let mut pr = fake
        .answers()
        .into_iter()
        .find(|a| a.0 == Flavour::GitHub && a.1 == Route::Create)
        .unwrap()
        .2;
    let mut merged = pr.clone();
    merged["state"] = "merged".into();
    assert!(whole.0.validate(&merged, whole.1).is_err());
    pr.as_object_mut().unwrap().remove("number");
    assert!(whole.0.validate(&pr, whole.1).is_err());
    let mut mr = fake
        .answers()
        .into_iter()
        .find(|a| a.0 == Flavour::GitLab && a.1 == Route::Create)
        .unwrap()
        .2;
    mr["state"] = 3.into();
    assert!(gitlab.0.validate(&mr, gitlab.1).is_err());
}

/// The `Change` the forge gives back is what `find` gives for it later (no field lost).
#[test]
fn forge_a_change_reads_the_same_from_every_route() {
    for flavour in BOTH {
        let fake = FakeForge::start();
        let forge = forge(&fake, flavour);
        let made: Change = forge.create(&proposal("same")).unwrap();
        let updated = forge.update(made.number, &Edit::default()).unwrap();
        assert_eq!(updated, made, "{flavour:?}");
        assert_eq!(forge.find("same").unwrap(), Some(made), "{flavour:?}");
    }
}

use super::{Change, Kind, Location, Setup, State, find_marked, marker};

fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let vars: Vec<(String, String)> = vars
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    move |name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
}

fn at(url: &str, kind: Option<Kind>, vars: &[(&str, &str)]) -> Result<Location, Setup> {
    Location::of(url, kind, &env(vars))
}

#[test]
fn github_and_gitlab_hosts_are_known_with_their_apis() {
    let github = at("git@github.com:octo/hello.git", None, &[]).unwrap();
    assert_eq!(
        (github.kind, github.api.as_str(), github.project.as_str()),
        (Kind::GitHub, "https://api.github.com", "octo/hello")
    );
    let gitlab = at("https://gitlab.com/group/sub/project.git", None, &[]).unwrap();
    assert_eq!(
        (gitlab.kind, gitlab.api.as_str(), gitlab.project.as_str()),
        (
            Kind::GitLab,
            "https://gitlab.com/api/v4",
            "group/sub/project"
        )
    );
}

#[test]
fn a_server_of_its_own_is_known_from_the_ci_variables_or_the_kind_given() {
    let enterprise = at(
        "ssh://git@ghe.example.com:2222/octo/hello.git",
        None,
        &[("GITHUB_API_URL", "https://ghe.example.com/api/v3/")],
    )
    .unwrap();
    assert_eq!(
        (enterprise.kind, enterprise.api.as_str()),
        (Kind::GitHub, "https://ghe.example.com/api/v3")
    );
    let gitlab = at(
        "git@code.example.org:a/b/c.git",
        None,
        &[("CI_SERVER_URL", "https://code.example.org")],
    )
    .unwrap();
    assert_eq!(
        (gitlab.kind, gitlab.api.as_str()),
        (Kind::GitLab, "https://code.example.org/api/v4")
    );
    let given = at("https://code.example.org:8443/a/b", Some(Kind::GitLab), &[]).unwrap();
    assert_eq!(given.api, "https://code.example.org:8443/api/v4");
    assert!(matches!(
        at("https://code.example.org/a/b", None, &[]),
        Err(Setup::UnknownForge { .. })
    ));
}

#[test]
fn a_github_path_deeper_than_owner_and_repo_is_refused() {
    assert!(matches!(
        at("https://github.com/a/b/c", None, &[]),
        Err(Setup::BadRemote { .. })
    ));
}

fn change(number: u64, body: &str) -> Change {
    Change {
        number,
        url: format!("https://example.com/{number}"),
        state: State::Open,
        head: "h".into(),
        base: "main".into(),
        title: "t".into(),
        body: body.into(),
        draft: false,
    }
}

#[test]
fn the_marker_finds_the_newest_change_of_its_run_and_task_only() {
    let run = "20261129-071300-ab12";
    let changes = [
        change(1, &format!("one\n{}", marker(run, Some("a")))),
        change(2, &format!("two\n{}", marker(run, Some("ab")))),
        change(3, &format!("three\n{}", marker(run, None))),
        change(4, &format!("four\n{}", marker(run, Some("a")))),
    ];
    assert_eq!(
        marker(run, None),
        format!("<!-- swarm run={run} task=- -->")
    );
    assert_eq!(
        find_marked(&changes, run, Some("a")).map(|c| c.number),
        Some(4)
    );
    assert_eq!(
        find_marked(&changes, run, Some("ab")).map(|c| c.number),
        Some(2)
    );
    assert_eq!(find_marked(&changes, run, None).map(|c| c.number), Some(3));
    assert_eq!(find_marked(&changes, run, Some("b")), None);
    assert_eq!(find_marked(&changes, "other", Some("a")), None);
}

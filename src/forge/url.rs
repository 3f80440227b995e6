//! A remote's URL read for a forge: its host, the path of its project, and how errors show it
//! (without any `user:token@`).

/// The parts of a remote's URL a forge needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Remote {
    /// `https` or `http` when the remote is reached over HTTP (its API is too, on the same
    /// port); `None` for ssh, whose port says nothing of the API's.
    pub(super) web: Option<(String, Option<u16>)>,
    pub(super) host: String,
    /// Its segments, `.git` taken off the last: `owner/repo`, `group/subgroup/project`.
    pub(super) path: Vec<String>,
}

/// `url` with any `user:password@` taken out, for errors.
pub fn shown(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let end = rest.find('/').unwrap_or(rest.len());
            let (authority, path) = rest.split_at(end);
            let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
            format!("{scheme}://{host}{path}")
        }
        None => match url.split_once(':') {
            Some((before, after)) if !before.contains('/') => {
                let host = before.rsplit_once('@').map_or(before, |(_, h)| h);
                format!("{host}:{after}")
            }
            _ => url.to_owned(),
        },
    }
}

/// Reads `https://HOST[:PORT]/PATH`, `ssh://[USER@]HOST[:PORT]/PATH` and the scp-like
/// `[USER@]HOST:PATH`; the error says why not.
pub(super) fn parse(url: &str) -> Result<Remote, String> {
    const SHAPES: &str =
        "expected https://HOST/OWNER/REPO, git@HOST:OWNER/REPO or ssh://git@HOST/OWNER/REPO";
    let url = url.trim();
    let (scheme, authority, path) = if let Some((scheme, rest)) = url.split_once("://") {
        let end = rest.find('/').unwrap_or(rest.len());
        let (authority, path) = rest.split_at(end);
        (Some(scheme.to_ascii_lowercase()), authority, path)
    } else {
        match url.split_once(':') {
            Some((authority, path)) if !authority.contains('/') && !authority.is_empty() => {
                (None, authority, path)
            }
            _ => return Err(format!("not the URL of a remote on a forge ({SHAPES})")),
        }
    };
    let web = match scheme.as_deref() {
        Some(s @ ("https" | "http")) => Some(s.to_owned()),
        Some("ssh" | "git+ssh" | "ssh+git") | None => None,
        Some(other) => return Err(format!("a {other}:// remote is not on a forge ({SHAPES})")),
    };
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let (host, port) = match host_port.rsplit_once(':') {
        // A scp-like remote has no port: what follows its colon is the path.
        Some((host, port)) if scheme.is_some() => {
            let port = port
                .parse::<u16>()
                .map_err(|_| format!("`{port}` is not a port"))?;
            (host, Some(port))
        }
        _ => (host_port, None),
    };
    if host.is_empty() {
        return Err(format!("it names no host ({SHAPES})"));
    }
    let path = path.trim_matches('/');
    let path = path
        .strip_suffix(".git")
        .unwrap_or(path)
        .trim_end_matches('/');
    let path: Vec<String> = path.split('/').map(str::to_owned).collect();
    if path.len() < 2 || path.iter().any(|s| s.is_empty() || s == "." || s == "..") {
        return Err(format!("it names no project ({SHAPES})"));
    }
    Ok(Remote {
        web: web.map(|scheme| (scheme, port)),
        host: host.to_ascii_lowercase(),
        path,
    })
}

/// The host of an API's base URL (`https://HOST/api/v3`).
pub(super) fn host_of(base: &str) -> Option<String> {
    let rest = base.split_once("://")?.1;
    let authority = &rest[..rest.find('/').unwrap_or(rest.len())];
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = host.rsplit_once(':').map_or(host, |(h, _)| h);
    (!host.is_empty()).then(|| host.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::{host_of, parse, shown};

    #[test]
    fn https_ssh_and_scp_like_remotes_are_read() {
        let r = parse("https://github.com/octo/hello.git").unwrap();
        assert_eq!(
            (r.host.as_str(), r.path.join("/")),
            ("github.com", "octo/hello".into())
        );
        assert_eq!(r.web, Some(("https".into(), None)));
        let r = parse("git@gitlab.com:group/sub/project.git").unwrap();
        assert_eq!(
            (r.host.as_str(), r.path.join("/")),
            ("gitlab.com", "group/sub/project".into())
        );
        assert_eq!(r.web, None);
        let r = parse("ssh://git@ghe.example.com:2222/octo/hello").unwrap();
        assert_eq!(
            (r.host.as_str(), r.path.join("/")),
            ("ghe.example.com", "octo/hello".into())
        );
        assert_eq!(r.web, None);
        let r = parse("http://127.0.0.1:8080/a/b/").unwrap();
        assert_eq!(r.web, Some(("http".into(), Some(8080))));
    }

    #[test]
    fn local_paths_and_half_urls_are_refused() {
        for bad in [
            "/srv/repo.git",
            "file:///srv/repo.git",
            "https://github.com/octo",
            "github.com",
            "https:///o/r",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn credentials_are_not_shown() {
        assert_eq!(
            shown("https://x:tok123@github.com/o/r.git"),
            "https://github.com/o/r.git"
        );
        assert_eq!(shown("tok123@github.com:o/r.git"), "github.com:o/r.git");
        assert_eq!(
            host_of("https://ghe.example.com:8443/api/v3").as_deref(),
            Some("ghe.example.com")
        );
    }
}

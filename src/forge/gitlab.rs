//! GitLab's merge requests: the REST API's `merge_requests` routes of a project, which is named
//! by its URL-encoded path. A draft is a title that starts with `Draft: `; reviewers are
//! given by id, looked up from their usernames.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde_json::{Value, json};

use super::{Change, Edit, Error, Forge, Kind, Method, Proposal, State, unexpected};

/// What GitLab wants encoded in a path segment or a query value: all but unreserved
/// characters (RFC 3986 §2.3), so `group/project` reads `group%2Fproject`.
const ENCODED: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

const DRAFT: &str = "Draft: ";

fn encode(text: &str) -> String {
    utf8_percent_encode(text, ENCODED).to_string()
}

fn merge_requests(forge: &Forge) -> String {
    format!(
        "/projects/{}/merge_requests",
        encode(&forge.location.project)
    )
}

pub(super) fn find(forge: &Forge, branch: &str) -> Result<Vec<Change>, Error> {
    let path = format!(
        "{}?source_branch={}&state=all&order_by=created_at&sort=desc&per_page=100",
        merge_requests(forge),
        encode(branch)
    );
    let answer = forge.call(Method::Get, &path, None)?;
    let Some(items) = answer.as_array() else {
        return Err(unexpected(Kind::GitLab, "a list of merge requests"));
    };
    items.iter().map(change).collect()
}

pub(super) fn open(forge: &Forge, proposal: &Proposal) -> Result<Change, Error> {
    let title = if proposal.draft {
        format!("{DRAFT}{}", proposal.title)
    } else {
        proposal.title.clone()
    };
    let mut body = json!({
        "source_branch": proposal.head,
        "target_branch": proposal.base,
        "title": title,
        "description": proposal.body,
    });
    if !proposal.labels.is_empty() {
        body["labels"] = proposal.labels.join(",").into();
    }
    if !proposal.reviewers.is_empty() {
        let ids = proposal
            .reviewers
            .iter()
            .map(|name| user_id(forge, name))
            .collect::<Result<Vec<u64>, Error>>()?;
        body["reviewer_ids"] = ids.into();
    }
    change(&forge.call(Method::Post, &merge_requests(forge), Some(&body))?)
}

/// The id of the user named `username`.
fn user_id(forge: &Forge, username: &str) -> Result<u64, Error> {
    let path = format!("/users?username={}", encode(username));
    let users = forge.retried(|| forge.call(Method::Get, &path, None))?;
    users[0]["id"].as_u64().ok_or_else(|| Error::Rejected {
        status: 404,
        message: format!("no GitLab user is named {username}, to review"),
    })
}

pub(super) fn update(forge: &Forge, number: u64, edit: &Edit) -> Result<Change, Error> {
    let mut body = json!({});
    let title = edit.title.as_ref().map(|t| {
        if edit.draft {
            format!("{DRAFT}{t}")
        } else {
            t.clone()
        }
    });
    for (key, value) in [
        ("title", &title),
        ("description", &edit.body),
        ("target_branch", &edit.base),
    ] {
        if let Some(value) = value {
            body[key] = value.as_str().into();
        }
    }
    let path = format!("{}/{number}", merge_requests(forge));
    change(&forge.call(Method::Put, &path, Some(&body))?)
}

/// A merge request as swarm's `Change`; its title without the draft's prefix.
fn change(mr: &Value) -> Result<Change, Error> {
    let text = |v: &Value| v.as_str().map(str::to_owned);
    let read = || {
        let state = match mr["state"].as_str()? {
            "opened" | "locked" => State::Open,
            "merged" => State::Merged,
            _ => State::Closed,
        };
        let title = mr["title"].as_str()?;
        let draft = mr["draft"].as_bool().unwrap_or(false);
        Some(Change {
            number: mr["iid"].as_u64()?,
            url: text(&mr["web_url"])?,
            state,
            head: text(&mr["source_branch"])?,
            base: text(&mr["target_branch"])?,
            title: title.strip_prefix(DRAFT).unwrap_or(title).to_owned(),
            body: text(&mr["description"]).unwrap_or_default(),
            draft,
        })
    };
    read().ok_or_else(|| unexpected(Kind::GitLab, "a merge request"))
}

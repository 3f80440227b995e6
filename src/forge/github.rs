//! GitHub's pull requests: the REST API's `pulls` routes, and labels and reviewers added after.

use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
use serde_json::{Value, json};

use super::{Change, Edit, Error, Forge, Kind, Method, Proposal, State, unexpected};

fn pulls(forge: &Forge) -> String {
    format!("/repos/{}/pulls", forge.location.project)
}

/// The repository's pull requests from `branch` (of the repository itself), open or not.
pub(super) fn find(forge: &Forge, branch: &str) -> Result<Vec<Change>, Error> {
    let owner = forge.location.project.split('/').next().unwrap_or_default();
    let head = utf8_percent_encode(&format!("{owner}:{branch}"), NON_ALPHANUMERIC).to_string();
    let path = format!(
        "{}?head={head}&state=all&sort=created&direction=desc&per_page=100",
        pulls(forge)
    );
    let answer = forge.call(Method::Get, &path, None)?;
    let Some(items) = answer.as_array() else {
        return Err(unexpected(Kind::GitHub, "a list of pull requests"));
    };
    items.iter().map(change).collect()
}

pub(super) fn open(forge: &Forge, proposal: &Proposal) -> Result<Change, Error> {
    let body = json!({
        "title": proposal.title,
        "body": proposal.body,
        "head": proposal.head,
        "base": proposal.base,
        "draft": proposal.draft,
    });
    change(&forge.call(Method::Post, &pulls(forge), Some(&body))?)
}

/// Puts the proposal's labels and reviewers on pull request `number`; adding them again is
/// harmless, so these are retried like reads.
pub(super) fn dress(forge: &Forge, number: u64, proposal: &Proposal) -> Result<(), Error> {
    let project = &forge.location.project;
    if !proposal.labels.is_empty() {
        let path = format!("/repos/{project}/issues/{number}/labels");
        let body = json!({ "labels": proposal.labels });
        forge.retried(|| forge.call(Method::Post, &path, Some(&body)))?;
    }
    if !proposal.reviewers.is_empty() {
        let path = format!("/repos/{project}/pulls/{number}/requested_reviewers");
        let body = json!({ "reviewers": proposal.reviewers });
        forge.retried(|| forge.call(Method::Post, &path, Some(&body)))?;
    }
    Ok(())
}

pub(super) fn update(forge: &Forge, number: u64, edit: &Edit) -> Result<Change, Error> {
    let mut body = json!({});
    for (key, value) in [
        ("title", &edit.title),
        ("body", &edit.body),
        ("base", &edit.base),
    ] {
        if let Some(value) = value {
            body[key] = value.as_str().into();
        }
    }
    let path = format!("{}/{number}", pulls(forge));
    change(&forge.call(Method::Patch, &path, Some(&body))?)
}

/// A `pull-request` or `pull-request-simple` as swarm's `Change`.
fn change(pr: &Value) -> Result<Change, Error> {
    let text = |v: &Value| v.as_str().map(str::to_owned);
    let read = || {
        let state = match (pr["state"].as_str()?, pr["merged_at"].is_string()) {
            (_, true) => State::Merged,
            ("open", false) => State::Open,
            (_, false) => State::Closed,
        };
        Some(Change {
            number: pr["number"].as_u64()?,
            url: text(&pr["html_url"])?,
            state,
            head: text(&pr["head"]["ref"])?,
            base: text(&pr["base"]["ref"])?,
            title: text(&pr["title"])?,
            body: text(&pr["body"]).unwrap_or_default(),
            draft: pr["draft"].as_bool().unwrap_or(false),
        })
    };
    read().ok_or_else(|| unexpected(Kind::GitHub, "a pull request"))
}

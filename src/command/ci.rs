//! `swarm ci`: the CI configuration for a run spread over CI runners, printed or written to a
//! file that is never replaced unasked.

use std::path::PathBuf;

use anyhow::Context as _;

use super::context::Globals;
use super::output::write_atomic;
use crate::ci::{DEFAULT_REMOTE, DEFAULT_WORKERS, Target, Template};
use crate::cli::CiTarget;
use crate::error::{Usage, exit};
use crate::ui;
use crate::ui::Verb;

/// What the command line asked for.
pub(super) struct Asked {
    pub target: CiTarget,
    pub workers: Option<u16>,
    pub out: Option<PathBuf>,
    pub force: bool,
    pub plan: Option<String>,
    pub install: Option<String>,
    pub remote: Option<String>,
}

pub(super) fn ci(g: &Globals, asked: Asked) -> anyhow::Result<u8> {
    let target = match asked.target {
        CiTarget::Github => Target::Github,
        CiTarget::Gitlab => Target::Gitlab,
        CiTarget::K8s => Target::K8s,
    };
    if g.json {
        return Err(Usage::new("swarm ci has no JSON output")
            .hint(format!(
                "`swarm ci {}` prints the file; --out PATH writes it",
                target.name()
            ))
            .into());
    }
    let template = Template {
        target,
        workers: asked.workers.unwrap_or(DEFAULT_WORKERS),
        plan: asked.plan,
        install: asked.install,
        remote: asked.remote.unwrap_or_else(|| DEFAULT_REMOTE.to_owned()),
    };
    let text = template.render()?;
    let Some(out) = asked.out else {
        ui::out(&text)?;
        return Ok(exit::OK);
    };
    let path = g.dir.join(&out);
    let refuse = |why: &str, hint: &str| -> anyhow::Error {
        Usage::new(format!("--out {}: {why}", out.display()))
            .hint(hint.to_owned())
            .into()
    };
    match std::fs::symlink_metadata(&path) {
        Ok(meta) if meta.is_dir() => {
            return Err(refuse("it is a directory", "name the file to write"));
        }
        Ok(_) if !asked.force => {
            return Err(refuse(
                "the file exists; swarm left it as it was",
                "give --force to replace it, or another --out",
            ));
        }
        _ => {}
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("could not make the directory {}", parent.display()))?;
    }
    write_atomic(&path, text.as_bytes())?;
    let what = match target {
        Target::Github => "a GitHub Actions workflow",
        Target::Gitlab => "a GitLab CI file",
        Target::K8s => "Kubernetes Jobs",
    };
    ui::say(
        g.quiet,
        Verb::Wrote,
        &format!(
            "{} ({what} for {} {}); its first lines say what to set up",
            out.display(),
            template.workers,
            if template.workers == 1 {
                "worker"
            } else {
                "workers"
            }
        ),
    );
    Ok(exit::OK)
}

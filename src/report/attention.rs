//! The report's sections for people: what needs a human ("Needs attention": a halted merge
//! queue, parked writers with the commands to take them, failed tasks with why and the end of
//! their stderr) and what the gate did.

use std::fmt::Write as _;
use std::time::Duration;

use super::{Facts, escape, named};
use crate::store::{TaskRecord, TaskStatus};

/// "Needs attention": what a human has to act on, with how: a run that stopped merging,
/// parked writers with the commands to take them, failed tasks with why and their last lines
/// of stderr. Empty when nothing needs anyone.
pub(super) fn needs_attention(f: &Facts<'_>) -> String {
    let failed: Vec<&TaskRecord> = f
        .tasks
        .iter()
        .filter(|t| t.status == TaskStatus::Failed && !t.is_candidate())
        .collect();
    if f.parked.is_empty() && f.halted.is_none() && failed.is_empty() {
        return String::new();
    }
    let mut out = String::from("## Needs attention\n\n");
    if let Some(why) = f.halted {
        let _ = writeln!(
            out,
            "- The run stopped merging: {}.\n",
            escape::markdown(why)
        );
    }
    let integration = f.run.integration_ref.trim_start_matches("refs/heads/");
    for p in f.parked {
        let b = &p.branch;
        let task = named(f.plan, &p.task);
        if let Some(why) = p.reason.as_ref().filter(|_| !p.gate_output.is_empty()) {
            let _ = writeln!(
                out,
                "- {task} was taken out by the gate, not merged: {}. Its last lines:\n",
                escape::markdown(why),
            );
            out.push_str(&escape::code_block(&p.gate_output, "  "));
            let _ = writeln!(
                out,
                "\n  Look at its branch `{b}` and fix it against `{integration}`:\n\n  ```sh\n  git log --oneline {integration}..{b}\n  git diff {integration}...{b}\n  ```\n",
            );
            continue;
        }
        if let Some(why) = &p.reason {
            let _ = writeln!(
                out,
                "- {task} is parked for review, not merged: {}. Look at its branch `{b}`, and merge it yourself only if it is right:\n\n  ```sh\n  git log --oneline {integration}..{b}\n  git diff {integration}...{b}\n  git switch {integration} && git merge {b}\n  ```\n",
                escape::markdown(why),
            );
            continue;
        }
        let _ = writeln!(
            out,
            "- {task} is parked: its branch `{b}` conflicts with `{integration}` in {}.\n  Inspect and resolve:\n\n  ```sh\n  git log --oneline {integration}..{b}\n  git diff {integration}...{b}\n  git switch {integration} && git merge {b}\n  # fix the conflicts, then: git add -A && git commit\n  ```\n",
            p.paths
                .iter()
                .map(|x| escape::code(x))
                .collect::<Vec<_>>()
                .join(", "),
        );
        if p.rungs.is_empty()
            && let Some(why) = &p.resolver
        {
            let _ = writeln!(
                out,
                "  One attempt to resolve it automatically failed: {}.\n",
                escape::markdown(why)
            );
        }
        for (rung, why) in &p.rungs {
            let rung = match rung.as_str() {
                "structural" => "The syntax-aware merge (structural)",
                "redo" => "Doing its task again on the integration tip (redo)",
                "resolve" => "The agent's attempt to resolve it (resolve)",
                other => other,
            };
            let _ = writeln!(
                out,
                "  {rung} did not merge it: {}.\n",
                escape::markdown(why)
            );
        }
    }
    for t in failed {
        let _ = writeln!(
            out,
            "- {} failed after {}: {}",
            named(f.plan, &t.id),
            crate::ui::count(t.attempts as usize, "attempt", "attempts"),
            escape::markdown(t.error.as_deref().unwrap_or("unknown error"))
        );
        for (task, n, outcome, path) in f.failed_attempts {
            if task == &t.id {
                let _ = writeln!(
                    out,
                    "  - attempt {n} ({outcome}): transcript {}",
                    escape::code(path)
                );
            }
        }
        for (_, branch) in f.kept.iter().filter(|(task, _)| *task == t.id) {
            let _ = writeln!(
                out,
                "  - what an attempt left is kept on branch {}: `git log --oneline {}`",
                escape::code(branch),
                branch
            );
        }
        if let Some((_, attempt, lines)) = f.output_tails.iter().find(|(task, ..)| task == &t.id)
            && !lines.is_empty()
        {
            let _ = writeln!(out, "\n  The end of attempt {attempt}'s stderr:\n");
            out.push_str(&escape::code_block(lines, "  "));
        }
        out.push('\n');
    }
    out
}

/// "Gate": each gate run (its tip, the batch it tested, its verdict and time), then the
/// writers it took out.
pub(super) fn gate_section(f: &Facts<'_>) -> String {
    if f.gate_runs.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "\n### Gate\n\n| run | probe | tip | batch | verdict | time |\n|---|---|---|---|---|---|\n",
    );
    for r in f.gate_runs {
        let batch: Vec<String> = r.batch.iter().map(|t| format!("`{t}`")).collect();
        let _ = writeln!(
            out,
            "| {} | {} | `{}` | {} | {} | {} |",
            r.run,
            r.probe,
            &r.tip[..r.tip.len().min(12)],
            if batch.is_empty() {
                "(the base)".to_owned()
            } else {
                batch.join(", ")
            },
            r.verdict,
            crate::ui::duration(Duration::from_millis(u64::try_from(r.ms).unwrap_or(0)))
        );
    }
    for (task, tip) in f.culprits {
        let _ = writeln!(
            out,
            "\nTaken out: {}, the first merge whose tip (`{}`) fails the gate.",
            named(f.plan, task),
            &tip[..tip.len().min(12)]
        );
    }
    out
}

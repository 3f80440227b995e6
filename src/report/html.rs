//! The report as one self-contained HTML page: every section of the Markdown report, rendered,
//! with the task graph drawn inline as SVG and a timeline of the attempts. Nothing is fetched
//! from anywhere and nothing runs: raw HTML in what agents wrote is shown as text.

use std::fmt::Write as _;

use pulldown_cmark::{CodeBlockKind, Event, Options, Parser, Tag, TagEnd};

use super::{Facts, Span, escape};

/// The page's look, inline.
const STYLE: &str = "body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;line-height:1.45;color:#212121}\
table{border-collapse:collapse;margin:1em 0}th,td{border:1px solid #ccc;padding:.25em .6em;text-align:left}\
code,pre{background:#f5f5f5;font-size:90%}pre{padding:.6em;overflow-x:auto}\
figure{margin:1em 0}figure svg{display:block;max-width:100%;height:auto}h2{border-bottom:1px solid #ddd;padding-bottom:.2em}";

/// The report of `f` as an HTML document.
pub fn html(f: &Facts<'_>) -> String {
    let markdown = super::markdown(f);
    let task_graph = super::mermaid(f.plan, Some(f.tasks));
    let mut body = String::new();
    let mut in_block: Option<String> = None;
    let mut block = String::new();
    let mut events = Vec::new();
    for event in Parser::new_ext(&markdown, Options::ENABLE_TABLES) {
        match event {
            Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(lang))) => {
                in_block = Some(lang.to_string());
                block.clear();
            }
            Event::Text(text) if in_block.is_some() => block.push_str(&text),
            Event::End(TagEnd::CodeBlock) if in_block.is_some() => {
                let lang = in_block.take().unwrap_or_default();
                let html = if lang == "mermaid" && block == task_graph {
                    // The task graph, drawn: with the timeline after it, under a heading of
                    // its own (the live page puts the timeline under its own).
                    let mut fig = format!(
                        "<figure class=\"graph\">{}</figure>\n",
                        super::svg(f.plan, Some(f.tasks))
                    );
                    let attempts = timeline(f.spans);
                    if !attempts.is_empty() {
                        fig.push_str("<h3>Timeline</h3>\n");
                        fig.push_str(&attempts);
                    }
                    fig
                } else {
                    format!("<pre><code>{}</code></pre>\n", escape::xml(&block))
                };
                events.push(Event::Html(html.into()));
            }
            // What agents and tasks wrote may hold markup: shown, never run.
            Event::Html(raw) | Event::InlineHtml(raw) => events.push(Event::Text(raw)),
            other => events.push(other),
        }
    }
    pulldown_cmark::html::push_html(&mut body, events.into_iter());
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width\">\n<title>swarm run {}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n{body}</body>\n</html>\n",
        escape::xml(&f.run.id)
    )
}

/// Rows of the timeline and their sizes, in pixels.
const ROW: i64 = 22;
const LABEL: i64 = 120;
const WIDTH: i64 = 900;

/// The attempts as a Gantt chart: one row per slot (an attempt takes the first row free when
/// it starts, as a slot of the pool would), time running left to right, each bar coloured by
/// how its attempt ended. A figure without a heading (each page puts its own above it), drawn
/// smaller where its page is narrower (its `viewBox`).
pub fn timeline(spans: &[Span]) -> String {
    let (Some(t0), Some(t1)) = (
        spans.iter().map(|s| s.start).min(),
        spans.iter().map(|s| s.end).max(),
    ) else {
        return String::new();
    };
    let total = (t1 - t0).max(1);
    let mut order: Vec<&Span> = spans.iter().collect();
    order.sort_by_key(|s| (s.start, s.end));
    let mut rows_end: Vec<i64> = Vec::new();
    let mut bars = String::new();
    for s in order {
        let row = if let Some(r) = rows_end.iter().position(|&end| end <= s.start) {
            rows_end[r] = s.end;
            r
        } else {
            rows_end.push(s.end);
            rows_end.len() - 1
        };
        let x = LABEL + (s.start - t0) * (WIDTH - LABEL) / total;
        let w = ((s.end - s.start) * (WIDTH - LABEL) / total).max(2);
        let y = i64::try_from(row).unwrap_or(0) * ROW + 20;
        let fill = match s.outcome {
            "succeeded" => "#66bb6a",
            "failed" => "#e57373",
            "running" => "#64b5f6",
            _ => "#bdbdbd",
        };
        let _ = writeln!(
            bars,
            r#"<g><title>{} attempt {}: {} ({:.1}s)</title><rect class="attempt" data-outcome="{}" data-task="{}" x="{x}" y="{y}" width="{w}" height="{}" fill="{fill}"/><text x="{}" y="{}" font-size="11">{}</text></g>"#,
            escape::xml(&s.task),
            s.attempt,
            s.outcome,
            (s.end - s.start) as f64 / 1000.0,
            s.outcome,
            escape::xml(&s.task),
            ROW - 6,
            x + 3,
            y + ROW - 10,
            escape::xml(&crate::ui::one_line(&s.task, 24)),
        );
    }
    let slots = rows_end.len();
    let height = i64::try_from(slots).unwrap_or(0) * ROW + 30;
    let mut out = format!(
        "<figure class=\"timeline\"><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{height}\" viewBox=\"0 0 {WIDTH} {height}\" font-family=\"sans-serif\" font-size=\"12\">\n"
    );
    for r in 0..slots {
        let _ = writeln!(
            out,
            r#"<text x="4" y="{}">slot {}</text>"#,
            i64::try_from(r).unwrap_or(0) * ROW + 34,
            r + 1
        );
    }
    let _ = writeln!(
        out,
        r#"<text x="{LABEL}" y="12">0s</text><text x="{}" y="12" text-anchor="end">{:.1}s</text>"#,
        WIDTH - 4,
        total as f64 / 1000.0
    );
    out.push_str(&bars);
    out.push_str("</svg></figure>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::timeline;
    use crate::report::Span;

    fn span(task: &str, start: i64, end: i64) -> Span {
        Span {
            task: task.into(),
            attempt: 1,
            start,
            end,
            outcome: "succeeded",
        }
    }

    #[test]
    fn attempts_at_once_take_rows_of_their_own_and_a_free_row_is_taken_again() {
        let t = timeline(&[span("a", 0, 10), span("b", 5, 20), span("c", 10, 30)]);
        // a and b overlap: two rows; c starts as a ends and takes a's row.
        assert_eq!(t.matches("<text x=\"4\"").count(), 2, "{t}");
        assert_eq!(t.matches("data-outcome=\"succeeded\"").count(), 3);
        assert!(timeline(&[]).is_empty());
        assert!(
            !t.contains("<h3"),
            "the page that shows it gives it its heading: {t}"
        );
    }
}

//! `swarm graph --format svg|html`: the DAG as a picture swarm draws itself, checked as a
//! parsed document (every task a box, every dependency an edge, no two boxes overlapping,
//! every edge going left to right).

use std::collections::BTreeMap;

use crate::{TestRepo, assert_exit, stdout};

/// A box as drawn: its corner and size.
#[derive(Debug, Clone, Copy)]
struct Rect {
    x: f64,
    y: f64,
    w: f64,
    h: f64,
}

impl Rect {
    fn overlaps(&self, o: &Rect) -> bool {
        self.x < o.x + o.w && o.x < self.x + self.w && self.y < o.y + o.h && o.y < self.y + self.h
    }
}

/// The boxes of a picture by task id, with their classes.
type Boxes = BTreeMap<String, (Rect, String)>;

/// The boxes and the edges (from, to) of an SVG document.
fn read_svg(text: &str) -> (Boxes, Vec<(String, String)>) {
    let doc = roxmltree::Document::parse(text).unwrap_or_else(|e| panic!("not XML: {e}\n{text}"));
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    let attr =
        |n: &roxmltree::Node<'_, '_>, a: &str| -> f64 { n.attribute(a).unwrap().parse().unwrap() };
    let mut nodes = BTreeMap::new();
    let mut edges = Vec::new();
    for n in doc.descendants() {
        let class = n.attribute("class").unwrap_or_default();
        if n.has_tag_name("rect") && class.split(' ').any(|c| c == "node") {
            let rect = Rect {
                x: attr(&n, "x"),
                y: attr(&n, "y"),
                w: attr(&n, "width"),
                h: attr(&n, "height"),
            };
            let id = n.attribute("data-id").unwrap().to_owned();
            assert!(
                nodes.insert(id.clone(), (rect, class.to_owned())).is_none(),
                "{id} twice"
            );
        }
        if n.has_tag_name("path") && class.split(' ').any(|c| c == "edge") {
            edges.push((
                n.attribute("data-from").unwrap().to_owned(),
                n.attribute("data-to").unwrap().to_owned(),
            ));
        }
    }
    (nodes, edges)
}

/// Forty tasks in four levels: eight sources, sixteen after two of them each, fifteen after two
/// of those each, and a reducer after the fifteen; titles with markup in them.
fn forty_tasks() -> (Vec<String>, Vec<(String, String)>) {
    let mut lines = Vec::new();
    let mut edges = Vec::new();
    let mut task = |id: String, deps: Vec<String>| {
        let deps_json: Vec<String> = deps.iter().map(|d| format!("\"{d}\"")).collect();
        lines.push(format!(
            r#"{{"id":"{id}","title":"<b>{id}</b> & \"more\"","run":"true","deps":[{}]}}"#,
            deps_json.join(",")
        ));
        edges.extend(deps.into_iter().map(|d| (d, id.clone())));
    };
    for i in 0..8 {
        task(format!("s{i}"), vec![]);
    }
    for i in 0..16 {
        let mut deps = vec![format!("s{}", i % 8), format!("s{}", (i * 3 + 1) % 8)];
        deps.dedup();
        task(format!("m{i}"), deps);
    }
    for i in 0..15 {
        task(
            format!("n{i}"),
            vec![format!("m{i}"), format!("m{}", (i + 5) % 16)],
        );
    }
    task(
        "final".to_owned(),
        (0..15).map(|i| format!("n{i}")).collect(),
    );
    (lines, edges)
}

#[test]
fn forty_tasks_draw_as_forty_boxes_that_do_not_overlap_with_every_edge_left_to_right() {
    let repo = TestRepo::new();
    let (lines, expected) = forty_tasks();
    let tasks = repo.tasks(&lines.iter().map(String::as_str).collect::<Vec<_>>());
    let out = repo.swarm(&["graph", tasks.to_str().unwrap(), "--format", "svg"]);
    assert_exit(&out, 0);
    let (nodes, mut edges) = read_svg(&stdout(&out));
    assert_eq!(nodes.len(), 40);
    let mut expected = expected;
    expected.sort();
    edges.sort();
    assert_eq!(edges, expected);
    let boxes: Vec<(&String, &Rect)> = nodes.iter().map(|(id, (r, _))| (id, r)).collect();
    for (a, (ida, ra)) in boxes.iter().enumerate() {
        for (idb, rb) in &boxes[a + 1..] {
            assert!(!ra.overlaps(rb), "{ida} {ra:?} overlaps {idb} {rb:?}");
        }
    }
    for (from, to) in &edges {
        assert!(
            nodes[from].0.x + nodes[from].0.w <= nodes[to].0.x,
            "{from} -> {to}"
        );
    }
    // The longest chain is marked: one task of each level, ending at the reducer.
    let critical: Vec<&String> = nodes
        .iter()
        .filter(|(_, (_, class))| class.contains("critical"))
        .map(|(id, _)| id)
        .collect();
    assert_eq!(critical.len(), 4, "{critical:?}");
    assert!(critical.contains(&&"final".to_owned()));
}

#[test]
fn a_runs_picture_is_coloured_by_status_and_the_html_page_holds_it() {
    let repo = TestRepo::new();
    let tasks = repo.tasks(&[
        r#"{"id":"ok","title":"fine","run":"true"}"#,
        r#"{"id":"bad","title":"breaks","run":"exit 1"}"#,
        r#"{"id":"after","title":"never","run":"true","deps":["bad"]}"#,
    ]);
    let run = repo.swarm(&["run", tasks.to_str().unwrap(), "--retries", "0"]);
    assert_exit(&run, 1);
    let out = repo.swarm(&["graph", "--format", "svg"]);
    assert_exit(&out, 0);
    let (nodes, edges) = read_svg(&stdout(&out));
    let class = |id: &str| nodes[id].1.clone();
    assert!(class("ok").contains("done"), "{}", class("ok"));
    assert!(class("bad").contains("failed"), "{}", class("bad"));
    assert!(class("after").contains("skipped"), "{}", class("after"));
    assert_eq!(edges, [("bad".to_owned(), "after".to_owned())]);
    let page = repo.swarm(&["graph", "--format", "html"]);
    assert_exit(&page, 0);
    let page = stdout(&page);
    assert!(page.starts_with("<!DOCTYPE html>"), "{page}");
    let svg = &page[page.find("<svg").unwrap()..page.find("</svg>").unwrap() + 6];
    assert_eq!(read_svg(svg).0.len(), 3);
}

#[test]
fn the_html_report_of_a_run_with_a_parked_writer_holds_the_graph_and_needs_attention() {
    let repo = TestRepo::new();
    let tasks = parked_plan(&repo, true);
    // --report-format says the form, whatever the extension.
    let page = repo.cache.parent().unwrap().join("report.md");
    let out = repo.swarm(&[
        "run",
        tasks.to_str().unwrap(),
        "--final-out",
        page.to_str().unwrap(),
        "--report-format",
        "html",
    ]);
    assert_exit(&out, 3);
    let page = std::fs::read_to_string(&page).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>"), "{page}");
    // Self-contained: nothing fetched, nothing run.
    for tag in ["<script", "<img", "<link", "src=\"http", "href=\"http"] {
        assert!(!page.contains(tag), "{tag} in the page:\n{page}");
    }
    assert!(
        page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
        "{page}"
    );
    assert!(page.contains("<h1>Done</h1>"), "{page}");
    assert!(page.contains("Needs attention"), "{page}");
    assert!(page.contains("<h3>Timeline</h3>"), "{page}");
    let svg = &page[page.find("<svg").unwrap()..page.find("</svg>").unwrap() + 6];
    let (nodes, edges) = read_svg(svg);
    assert_eq!(nodes.len(), 3);
    assert!(nodes["b"].1.contains("parked"), "{}", nodes["b"].1);
    assert_eq!(edges, [("a".to_owned(), "final".to_owned())]);
    // The run's own report stays Markdown.
    let run_dir = repo.swarm_dir().join("runs").join(crate::run_id(&repo));
    assert!(
        std::fs::read_to_string(run_dir.join("report.md"))
            .unwrap()
            .contains("## Run summary")
    );
}

#[test]
fn a_final_out_named_html_gets_the_page_unless_the_format_says_markdown() {
    let repo = TestRepo::new();
    let tasks = repo.tasks(&[r#"{"id":"t","title":"t","mode":"read","run":"echo hi"}"#]);
    let dir = repo.cache.parent().unwrap();
    for (name, format, html) in [
        ("a.html", None, true),
        ("b.HTM", None, true),
        ("c.html", Some("markdown"), false),
        ("d.md", None, false),
    ] {
        let path = dir.join(name);
        let mut args = vec![
            "run",
            tasks.to_str().unwrap(),
            "--final-out",
            path.to_str().unwrap(),
        ];
        if let Some(f) = format {
            args.extend(["--report-format", f]);
        }
        assert_exit(&repo.swarm(&args), 0);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.starts_with("<!DOCTYPE html>"), html, "{name}: {text}");
    }
    let bad = repo.swarm(&["run", tasks.to_str().unwrap(), "--report-format", "pdf"]);
    assert_exit(&bad, 2);
}

/// Two writers of the same line, the second waiting until the first is merged, so that it
/// conflicts and is parked; with `reducer`, a reducer after the first that prints markup.
pub fn parked_plan(repo: &TestRepo, reducer: bool) -> std::path::PathBuf {
    let merged_a = crate::after_event(repo, "merged", "a");
    let mut lines = vec![
        r#"{"id":"a","title":"one becomes two","run":"printf 'pub fn one() -> u32 {\n    2\n}\n' > src/lib.rs"}"#.to_owned(),
        format!(
            r#"{{"id":"b","title":"one becomes three","run":"{}; printf 'pub fn one() -> u32 {{\n    3\n}}\n' > src/lib.rs"}}"#,
            merged_a.replace('"', "\\\"")
        ),
    ];
    if reducer {
        lines.push(r#"{"id":"final","title":"report","lane":"reducer","mode":"read","deps":["a"],"run":"echo '# Done'; echo '<script>alert(1)</script> <img src=x onerror=alert(2)>'"}"#.to_owned());
    }
    repo.tasks(&lines.iter().map(String::as_str).collect::<Vec<_>>())
}

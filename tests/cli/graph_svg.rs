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

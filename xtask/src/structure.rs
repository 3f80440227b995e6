//! `cargo xtask structure [--src DIR]`: which of swarm's rooms (the top-level modules of `src/`)
//! refers to which, the references that point back up the floors of the architecture (ARCHITECTURE.md),
//! and the circles, between rooms and between the parts of each room. Reads the sources as text (a small
//! lexer, no compiler), so it sees what a reader sees: `crate::` paths, `super::` paths and the
//! bare paths a module uses for its own children. Test modules are left out. Changes nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;

/// The floors, top first: a room may refer to rooms on its own floor and below. ARCHITECTURE.md's
/// flow (plan → schedule → agent → git → store/report → ui) with the command line on top and
/// the small rooms every other may use (errors, time, disks, secrets, signals) on the ground;
/// `plan` is on the ground too, as the vocabulary (`Task`, `TaskId`, `Mode`) the whole flow
/// carries and that itself reads no other room; and so is `config`, the options as declared
/// (their types, layers and defaults, the limits on spawning), which the command line fills
/// in and the run loop reads, and which reads only `plan`.
pub const FLOORS: &[(&str, &[&str])] = &[
    ("doorway", &["lib"]),
    (
        "front",
        &["cli", "command", "complete", "manual", "ci", "preview"],
    ),
    ("loop", &["planner", "schedule", "deliver"]),
    (
        "attempt",
        &["agent", "llm", "remote", "forge", "mirror", "trace"],
    ),
    ("git", &["git"]),
    ("records", &["store", "report"]),
    ("ui", &["ui"]),
    (
        "ground",
        &[
            "plan", "config", "error", "time", "disk", "near", "panic", "planted", "secret",
            "signal", "shell",
        ],
    ),
];

/// What one file holds: its module path and its code with comments, strings and test modules
/// removed, as tokens.
struct Module {
    path: Vec<String>,
    tokens: Vec<Token>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Ident(String),
    /// `::`
    Path,
    Punct(char),
}

/// A reference from one module to another: from and to as module paths (`to` as far as it
/// names modules, then the item it names, if any).
struct Reference {
    from: Vec<String>,
    to: Vec<String>,
}

/// The module tree under `src`, from `lib.rs` along its `mod` declarations.
fn modules(src: &Path) -> anyhow::Result<Vec<Module>> {
    let mut out = Vec::new();
    let mut queue = vec![(src.join("lib.rs"), Vec::<String>::new(), src.to_owned())];
    while let Some((file, path, children_dir)) = queue.pop() {
        let text = std::fs::read_to_string(&file)
            .with_context(|| format!("could not read {}", file.display()))?;
        let tokens = tokens(&text);
        let (kept, declared) = without_tests(&tokens, &children_dir);
        for (name, child_file) in declared {
            let mut child = path.clone();
            child.push(name.clone());
            let dir = if child_file.ends_with("mod.rs") {
                child_file
                    .parent()
                    .map(Path::to_path_buf)
                    .unwrap_or_default()
            } else {
                child_file.with_extension("")
            };
            queue.push((child_file, child, dir));
        }
        out.push(Module { path, tokens: kept });
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

/// The file of `mod name;` declared in a file whose children live in `dir`.
fn child_file(dir: &Path, name: &str) -> PathBuf {
    let flat = dir.join(format!("{name}.rs"));
    if flat.exists() {
        flat
    } else {
        dir.join(name).join("mod.rs")
    }
}

/// The tokens of Rust source, without comments, string and character literals or lifetimes.
fn tokens(text: &str) -> Vec<Token> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c == '/' && chars.get(i + 1) == Some(&'/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && chars.get(i + 1) == Some(&'*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if c == '"' {
            i = past_string(&chars, i + 1);
            out.push(Token::Punct('"'));
        } else if c == '\'' {
            // A character literal ('a', '\n', '\u{1F600}') or a lifetime ('a).
            if chars.get(i + 1) == Some(&'\\') {
                i += 2;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if chars.get(i + 2) == Some(&'\'') {
                i += 3;
            } else {
                i += 1;
                while i < chars.len() && is_ident(chars[i]) {
                    i += 1;
                }
            }
        } else if is_ident_start(c) {
            let start = i;
            while i < chars.len() && is_ident(chars[i]) {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            // Raw and byte strings: r"…", r#"…"#, b"…", br#"…"#, and byte characters b'…'.
            let next = chars.get(i).copied();
            if matches!(word.as_str(), "r" | "br" | "b" | "cr" | "c")
                && matches!(next, Some('"' | '#'))
            {
                let mut hashes = 0;
                while chars.get(i) == Some(&'#') {
                    hashes += 1;
                    i += 1;
                }
                if chars.get(i) == Some(&'"') {
                    i = if word.contains('r') {
                        past_raw_string(&chars, i + 1, hashes)
                    } else {
                        past_string(&chars, i + 1)
                    };
                    out.push(Token::Punct('"'));
                    continue;
                }
            }
            if word == "b" && next == Some('\'') {
                i += 1;
                if chars.get(i) == Some(&'\\') {
                    i += 1;
                }
                i += 1;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
                continue;
            }
            out.push(Token::Ident(word));
        } else if c.is_ascii_digit() {
            while i < chars.len() && (is_ident(chars[i]) || chars[i] == '.') {
                // `0..n`: a range, not a number.
                if chars[i] == '.' && chars.get(i + 1) == Some(&'.') {
                    break;
                }
                i += 1;
            }
        } else if c == ':' && chars.get(i + 1) == Some(&':') {
            out.push(Token::Path);
            i += 2;
        } else {
            out.push(Token::Punct(c));
            i += 1;
        }
    }
    out
}

fn is_ident_start(c: char) -> bool {
    c.is_alphabetic() || c == '_'
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The index past a string's closing quote; `i` is just past the opening one.
fn past_string(chars: &[char], mut i: usize) -> usize {
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 2,
            '"' => return i + 1,
            _ => i += 1,
        }
    }
    i
}

/// The index past a raw string's closing quote and hashes.
fn past_raw_string(chars: &[char], mut i: usize, hashes: usize) -> usize {
    while i < chars.len() {
        if chars[i] == '"' && (1..=hashes).all(|h| chars.get(i + h) == Some(&'#')) {
            return i + 1 + hashes;
        }
        i += 1;
    }
    i
}

/// The tokens without the items under `#[cfg(test)]`, and the files of the `mod name;`
/// declarations that are kept.
fn without_tests(tokens: &[Token], dir: &Path) -> (Vec<Token>, Vec<(String, PathBuf)>) {
    let mut kept = Vec::new();
    let mut declared = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        if tokens[i] == Token::Punct('#') && tokens.get(i + 1) == Some(&Token::Punct('[')) {
            let end = past_group(tokens, i + 1);
            let attr = &tokens[i + 2..end.saturating_sub(1)];
            if is_cfg_test(attr) {
                i = past_item(tokens, end);
                continue;
            }
            // `#[path = "…"] mod name;`: the lexer dropped the string, so read it again.
            kept.extend_from_slice(&tokens[i..end]);
            i = end;
            continue;
        }
        if tokens[i] == Token::Ident("mod".into())
            && let Some(Token::Ident(name)) = tokens.get(i + 1)
            && tokens.get(i + 2) == Some(&Token::Punct(';'))
        {
            // A `#[path]` before it would be lost with the string: swarm puts it only on test
            // modules, which are skipped above.
            declared.push((name.clone(), child_file(dir, name)));
        }
        kept.push(tokens[i].clone());
        i += 1;
    }
    (kept, declared)
}

fn is_cfg_test(attr: &[Token]) -> bool {
    matches!(attr, [Token::Ident(cfg), Token::Punct('('), Token::Ident(test), Token::Punct(')')]
        if cfg == "cfg" && test == "test")
}

/// The index past the bracketed group that opens at `i`.
fn past_group(tokens: &[Token], i: usize) -> usize {
    let mut depth = 0i32;
    let mut j = i;
    while j < tokens.len() {
        match tokens[j] {
            Token::Punct('[' | '(' | '{') => depth += 1,
            Token::Punct(']' | ')' | '}') => {
                depth -= 1;
                if depth == 0 {
                    return j + 1;
                }
            }
            _ => {}
        }
        j += 1;
    }
    j
}

/// The index past the item that starts at `i` (after its attributes): at its `;`, or past its
/// braces.
fn past_item(tokens: &[Token], mut i: usize) -> usize {
    while i < tokens.len() {
        match tokens[i] {
            Token::Punct(';') => return i + 1,
            Token::Punct('{') => return past_group(tokens, i),
            Token::Punct('[' | '(') => i = past_group(tokens, i),
            _ => i += 1,
        }
    }
    i
}

/// Every reference in `module` to another module of the crate: `crate::a::b`, `super::x`, and
/// bare paths that start with one of the module's own children (`gc::gc`).
fn references(module: &Module, children: &BTreeSet<Vec<String>>) -> Vec<Reference> {
    let t = &module.tokens;
    let mut out = Vec::new();
    // Inline modules (`mod name { … }`) that `super::` climbs out of.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let here = |inline: &[(String, usize)]| {
        let mut p = module.path.clone();
        p.extend(inline.iter().map(|(n, _)| n.clone()));
        p
    };
    let mut i = 0;
    while i < t.len() {
        match &t[i] {
            Token::Punct('{') => depth += 1,
            Token::Punct('}') => {
                depth = depth.saturating_sub(1);
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
            }
            Token::Ident(kw) if kw == "mod" => {
                if let (Some(Token::Ident(name)), Some(Token::Punct('{'))) =
                    (t.get(i + 1), t.get(i + 2))
                {
                    inline.push((name.clone(), depth));
                }
            }
            Token::Ident(first) if i == 0 || t[i - 1] != Token::Path => {
                let from = here(&inline);
                if let Some((base, at)) = path_start(t, i, first, &from, children) {
                    for tail in path_tails(t, at) {
                        let mut to = base.clone();
                        to.extend(tail);
                        out.push(Reference {
                            from: from.clone(),
                            to,
                        });
                    }
                }
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// Where the path whose first segment `first` is at `i` starts: the module it is relative to,
/// and the index of its next segment. `None` for a path that is not into the crate's modules.
fn path_start(
    t: &[Token],
    i: usize,
    first: &str,
    from: &[String],
    children: &BTreeSet<Vec<String>>,
) -> Option<(Vec<String>, usize)> {
    if t.get(i + 1) != Some(&Token::Path) {
        return None;
    }
    match first {
        "crate" => Some((Vec::new(), i + 2)),
        "self" => Some((from.to_vec(), i + 2)),
        "super" => {
            let mut base = from.to_vec();
            let mut j = i;
            while matches!(t.get(j), Some(Token::Ident(s)) if s == "super")
                && t.get(j + 1) == Some(&Token::Path)
            {
                base.pop();
                j += 2;
            }
            Some((base, j))
        }
        child => {
            let mut p = from.to_vec();
            p.push(child.to_owned());
            children.contains(&p).then(|| (from.to_vec(), i))
        }
    }
}

/// The segments of the path (or of each path in a `{…}` group) starting at `i`.
fn path_tails(t: &[Token], i: usize) -> Vec<Vec<String>> {
    match t.get(i) {
        Some(Token::Ident(name)) => {
            let mut head = vec![name.clone()];
            let mut j = i + 1;
            while t.get(j) == Some(&Token::Path) {
                match t.get(j + 1) {
                    Some(Token::Ident(n)) => {
                        head.push(n.clone());
                        j += 2;
                    }
                    Some(Token::Punct('{')) => {
                        return path_tails(t, j + 1)
                            .into_iter()
                            .map(|tail| head.iter().cloned().chain(tail).collect())
                            .collect();
                    }
                    _ => break,
                }
            }
            vec![head]
        }
        Some(Token::Punct('{')) => {
            let mut out = Vec::new();
            let mut j = i + 1;
            let end = past_group(t, i) - 1;
            while j < end {
                let entry_end = {
                    let mut k = j;
                    while k < end && t[k] != Token::Punct(',') {
                        if t[k] == Token::Punct('{') {
                            k = past_group(t, k);
                        } else {
                            k += 1;
                        }
                    }
                    k
                };
                out.extend(path_tails(t, j));
                j = entry_end + 1;
            }
            out
        }
        _ => vec![Vec::new()],
    }
}

/// Edges with their counts: from → to → references.
type Edges = BTreeMap<String, BTreeMap<String, usize>>;

/// What `cargo xtask structure` prints for the sources under `src`.
pub fn report(src: &Path) -> anyhow::Result<String> {
    let modules = modules(src)?;
    let known: BTreeSet<Vec<String>> = modules.iter().map(|m| m.path.clone()).collect();
    let mut rooms = Edges::new();
    let mut parts: BTreeMap<String, Edges> = BTreeMap::new();
    let mut examples: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for m in &modules {
        for r in references(m, &known) {
            let from = room(&r.from);
            let to = target_room(&r.to, &known);
            if from != to {
                *rooms
                    .entry(from.clone())
                    .or_default()
                    .entry(to.clone())
                    .or_default() += 1;
                examples
                    .entry((from.clone(), to.clone()))
                    .or_default()
                    .insert(r.to.join("::"));
                continue;
            }
            if r.from.is_empty() {
                continue;
            }
            let a = part(&r.from, &known);
            let b = target_part(&r.to, &known);
            if a != b {
                *parts
                    .entry(from)
                    .or_default()
                    .entry(a)
                    .or_default()
                    .entry(b)
                    .or_default() += 1;
            }
        }
    }
    let mut nodes: BTreeSet<String> = known.iter().map(|p| room(p)).collect();
    nodes.extend(rooms.values().flat_map(|e| e.keys().cloned()));

    let mut out = String::new();
    let _ = writeln!(out, "rooms of {} (test modules left out)\n", src.display());
    for node in &nodes {
        let floor = floor(node).unwrap_or("?");
        let to = rooms
            .get(node)
            .map(|e| {
                e.iter()
                    .map(|(t, n)| format!("{t} {n}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default();
        let _ = writeln!(out, "  {node:<9} {floor:<8} → {to}");
    }
    let unplaced: Vec<&String> = nodes.iter().filter(|n| floor(n).is_none()).collect();
    if !unplaced.is_empty() {
        let _ = writeln!(
            out,
            "\nrooms on no floor (add them to FLOORS): {unplaced:?}"
        );
    }

    let mut up = Vec::new();
    for (from, edges) in &rooms {
        for (to, n) in edges {
            if let (Some(a), Some(b)) = (rank(from), rank(to))
                && b < a
            {
                up.push((from, to, *n));
            }
        }
    }
    let _ = writeln!(
        out,
        "\narrows back up: {} ({} references)",
        up.len(),
        up.iter().map(|(.., n)| n).sum::<usize>()
    );
    for (from, to, n) in &up {
        let what: Vec<&String> = examples[&((*from).clone(), (*to).clone())]
            .iter()
            .take(4)
            .collect();
        let _ = writeln!(
            out,
            "  {from} ({}) → {to} ({}): {n}, e.g. {}",
            floor(from).unwrap_or("?"),
            floor(to).unwrap_or("?"),
            what.iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }

    let circles = circles(&rooms);
    let _ = writeln!(out, "\ncircles between rooms: {}", circles.len());
    for c in &circles {
        let _ = writeln!(out, "  {}", c.join(" ⇄ "));
    }

    // Within a room, its `mod.rs` declares and re-exports its parts, which read the room's
    // shared types from it: a circle through `mod` is ordinary. Circles between parts are not,
    // nor is a `mod.rs` that both dispatches to its parts and serves them.
    let mut between = String::new();
    let mut count = 0;
    let mut hubs = String::new();
    for (room, edges) in &parts {
        let without_mod: Edges = edges
            .iter()
            .filter(|(from, _)| *from != "mod")
            .map(|(from, to)| {
                let to = to
                    .iter()
                    .filter(|(t, _)| *t != "mod")
                    .map(|(t, n)| (t.clone(), *n));
                (from.clone(), to.collect())
            })
            .collect();
        for c in circles_of(&without_mod) {
            count += 1;
            let _ = writeln!(between, "  {room}: {}", c.join(" ⇄ "));
        }
        let both: Vec<&String> = edges
            .get("mod")
            .into_iter()
            .flat_map(|to| to.keys())
            .filter(|part| edges.get(*part).is_some_and(|to| to.contains_key("mod")))
            .collect();
        if !both.is_empty() {
            let names: Vec<&str> = both.iter().map(|s| s.as_str()).collect();
            let _ = writeln!(hubs, "  {room}: mod ⇄ {}", names.join(", "));
        }
    }
    let _ = write!(
        out,
        "\ncircles within rooms, between parts (mod.rs aside): {count}\n{between}"
    );
    let _ = write!(out, "\nparts in a circle with their room's mod.rs:\n{hubs}");
    Ok(out)
}

/// The room of a module path: its first segment, or `lib` for the crate's root.
fn room(path: &[String]) -> String {
    path.first().cloned().unwrap_or_else(|| "lib".to_owned())
}

/// The room a reference reaches: a module's room, or `lib` for an item of the root
/// (`crate::Usage`).
fn target_room(to: &[String], known: &BTreeSet<Vec<String>>) -> String {
    match to.first() {
        Some(first) if known.contains(&vec![first.clone()]) => first.clone(),
        _ => "lib".to_owned(),
    }
}

/// The part of a room a module belongs to: the room's child it is in, or `mod` for the room's
/// own file.
fn part(path: &[String], known: &BTreeSet<Vec<String>>) -> String {
    match path.get(1) {
        Some(child) if known.contains(&path[..2].to_vec()) => child.clone(),
        _ => "mod".to_owned(),
    }
}

fn target_part(to: &[String], known: &BTreeSet<Vec<String>>) -> String {
    if to.len() >= 2 && known.contains(&to[..2].to_vec()) {
        to[1].clone()
    } else {
        "mod".to_owned()
    }
}

fn floor(room: &str) -> Option<&'static str> {
    FLOORS
        .iter()
        .find(|(_, rooms)| rooms.contains(&room))
        .map(|(name, _)| *name)
}

fn rank(room: &str) -> Option<usize> {
    FLOORS.iter().position(|(_, rooms)| rooms.contains(&room))
}

/// The circles of a graph: its strongly connected components of more than one node (Tarjan).
fn circles(edges: &Edges) -> Vec<Vec<String>> {
    circles_of(edges)
}

fn circles_of(edges: &Edges) -> Vec<Vec<String>> {
    struct Walk<'a> {
        edges: &'a Edges,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(walk: &mut Walk<'a>, node: &'a str) {
        let order = walk.index.len();
        walk.index.insert(node, order);
        walk.low.insert(node, order);
        walk.stack.push(node);
        walk.on_stack.insert(node);
        if let Some(targets) = walk.edges.get(node) {
            for next in targets.keys() {
                let next = next.as_str();
                if !walk.index.contains_key(next) {
                    visit(walk, next);
                    let low = walk.low[next].min(walk.low[node]);
                    walk.low.insert(node, low);
                } else if walk.on_stack.contains(next) {
                    let low = walk.index[next].min(walk.low[node]);
                    walk.low.insert(node, low);
                }
            }
        }
        if walk.low[node] == walk.index[node] {
            let mut component = Vec::new();
            while let Some(member) = walk.stack.pop() {
                walk.on_stack.remove(member);
                component.push(member.to_owned());
                if member == node {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                walk.out.push(component);
            }
        }
    }
    let mut walk = Walk {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    let nodes: BTreeSet<&str> = edges
        .iter()
        .flat_map(|(f, t)| std::iter::once(f.as_str()).chain(t.keys().map(String::as_str)))
        .collect();
    for node in nodes {
        if !walk.index.contains_key(node) {
            visit(&mut walk, node);
        }
    }
    walk.out.sort();
    walk.out
}

#[cfg(test)]
mod tests {
    use super::{Token, modules, references, report, tokens};

    fn idents(text: &str) -> Vec<String> {
        tokens(text)
            .into_iter()
            .filter_map(|t| match t {
                Token::Ident(i) => Some(i),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn comments_strings_characters_and_lifetimes_are_no_tokens() {
        let text = r##"a // crate::x
            /* crate::y /* nested */ */ b "crate::z" r#"crate::w"# 'c' '\n' b'q' c<'l> 0..n"##;
        assert_eq!(idents(text), ["a", "b", "c", "n"]);
    }

    /// A tree of modules in a temporary directory: `(path under src, text)`.
    fn tree(files: &[(&str, &str)]) -> scratch::Dir {
        let dir = scratch::Dir::new();
        for (path, text) in files {
            let full = dir.0.join(path);
            std::fs::create_dir_all(full.parent().unwrap()).unwrap();
            std::fs::write(full, text).unwrap();
        }
        dir
    }

    /// A directory under the system's temporary one, removed when dropped (xtask has no
    /// tempfile).
    mod scratch {
        pub struct Dir(pub std::path::PathBuf);

        impl Dir {
            pub fn new() -> Self {
                use std::sync::atomic::{AtomicUsize, Ordering};
                static N: AtomicUsize = AtomicUsize::new(0);
                let path = std::env::temp_dir().join(format!(
                    "xtask-structure-{}-{}",
                    std::process::id(),
                    N.fetch_add(1, Ordering::Relaxed)
                ));
                std::fs::create_dir_all(&path).unwrap();
                Self(path)
            }
        }

        impl Drop for Dir {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
    }

    #[test]
    fn crate_super_and_child_paths_are_references_and_test_modules_are_not() {
        let dir = tree(&[
            (
                "lib.rs",
                "mod plan; mod ui; mod store; pub use error::Usage; fn main() { ui::say(); }",
            ),
            (
                "plan.rs",
                "use crate::{ui::bytes, store::Board};\n#[cfg(test)]\nmod tests { use crate::store::X; }",
            ),
            ("ui.rs", "fn f() { super::plan::Task::new(); }"),
            (
                "store/mod.rs",
                "mod record; #[cfg(test)] mod tests; use record::R;",
            ),
            ("store/record.rs", "use super::super::ui; use super::Board;"),
            ("store/tests.rs", "use crate::plan::Task;"),
        ]);
        let modules = modules(&dir.0).unwrap();
        let known = modules.iter().map(|m| m.path.clone()).collect();
        let mut found: Vec<String> = modules
            .iter()
            .flat_map(|m| references(m, &known))
            .map(|r| format!("{} -> {}", r.from.join("::"), r.to.join("::")))
            .collect();
        found.sort();
        assert_eq!(
            found,
            [
                " -> ui::say",
                "plan -> store::Board",
                "plan -> ui::bytes",
                "store -> store::record::R",
                "store::record -> store::Board",
                "store::record -> ui",
                "ui -> plan::Task::new",
            ]
        );
    }

    #[test]
    fn a_reference_back_up_and_a_circle_are_reported() {
        let dir = tree(&[
            ("lib.rs", "mod plan; mod ui; pub struct Usage;"),
            ("plan.rs", "use crate::ui::x; use crate::Usage;"),
            ("ui.rs", "use crate::plan::Task;"),
        ]);
        let text = report(&dir.0).unwrap();
        assert!(
            text.contains("arrows back up: 2 (2 references)\n  plan (ground) → lib (doorway): 1, e.g. Usage\n  plan (ground) → ui (ui): 1, e.g. ui::x\n"),
            "{text}"
        );
        assert!(
            text.contains("circles between rooms: 1\n  plan ⇄ ui\n"),
            "{text}"
        );
    }
}

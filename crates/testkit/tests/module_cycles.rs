//! No module cycle in any crate of the workspace: within a crate, module A that names module B
//! (`crate::b::...`, `super::b`, or `use crate::{b, ...}`) while B names A, directly or through
//! others, is refused. A module naming its own ancestors or descendants does not count (a
//! parent declares its children; a child may use its parent's items). Test code is left out:
//! files named `tests.rs` or `*_tests.rs`, and what follows a `#[cfg(test)]` in a file.
//!
//! Run it alone with `cargo test -p rtlab-testkit --test module_cycles`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type ModPath = Vec<String>;

#[test]
fn no_crate_has_a_module_cycle() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut found = Vec::new();
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&crates)
        .unwrap()
        .map(|e| e.unwrap().path().join("src"))
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    assert!(dirs.len() >= 10, "the workspace's crates were not found");
    for src in dirs {
        let modules = modules(&src);
        let graph = graph(&modules);
        for cycle in cycles(&graph) {
            let names: Vec<String> = cycle.iter().map(|m| show(&src, m)).collect();
            found.push(names.join(" -> "));
        }
    }
    assert!(found.is_empty(), "module cycles:\n{}", found.join("\n"));
}

/// A cycle through `a` and `b` is found, and a child naming its parent is none.
#[test]
fn the_detector_sees_a_cycle_and_lets_parents_be() {
    let m = |p: &[&str]| p.iter().map(|s| s.to_string()).collect::<ModPath>();
    let mut modules = BTreeMap::new();
    modules.insert(m(&["a"]), "use crate::b::x; use super::c;".to_string());
    modules.insert(m(&["b"]), "fn f() { crate::{c, a::y}; }".to_string());
    modules.insert(m(&["c"]), String::new());
    modules.insert(
        m(&["c", "d"]),
        "use super::Thing; crate::c::e();".to_string(),
    );
    modules.insert(m(&["c", "e"]), "use super::Thing;".to_string());
    let graph = graph(&modules);
    assert_eq!(cycles(&graph), vec![vec![m(&["a"]), m(&["b"])]]);
}

/// Every module of the crate whose sources are under `src`, with its code (test code cut).
fn modules(src: &Path) -> BTreeMap<ModPath, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let Some(stem) = name.strip_suffix(".rs") else {
                continue;
            };
            if stem == "tests" || stem.ends_with("_tests") {
                continue;
            }
            let mut module: ModPath = path
                .parent()
                .unwrap()
                .strip_prefix(src)
                .unwrap()
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if !matches!(stem, "mod" | "lib" | "main") {
                module.push(stem.to_string());
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap_or("");
            out.insert(module, strip_comments(code));
        }
    }
    out
}

fn strip_comments(code: &str) -> String {
    code.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Edges between modules that are neither ancestor nor descendant of each other.
fn graph(modules: &BTreeMap<ModPath, String>) -> BTreeMap<ModPath, BTreeSet<ModPath>> {
    let mut graph = BTreeMap::new();
    for (me, code) in modules {
        let mut to = BTreeSet::new();
        for path in references(code, me) {
            let target = (1..=path.len())
                .rev()
                .map(|n| path[..n].to_vec())
                .find(|p| modules.contains_key(p));
            if let Some(t) = target
                && !t.starts_with(me)
                && !me.starts_with(&t)
            {
                to.insert(t);
            }
        }
        graph.insert(me.clone(), to);
    }
    graph
}

/// The module paths `code` (in module `me`) names: `crate::a::b`, `super::a`, and each item
/// of a `{...}` group after either.
fn references(code: &str, me: &[String]) -> Vec<ModPath> {
    let mut out = Vec::new();
    for (prefix, base) in [("crate::", Vec::new()), ("super::", parent(me))] {
        let mut rest = code;
        while let Some(at) = rest.find(prefix) {
            let before = rest[..at].chars().next_back();
            rest = &rest[at + prefix.len()..];
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue;
            }
            paths(rest, &base, &mut out);
        }
    }
    out
}

/// The paths at the start of `text` (after a `crate::`), below `base`, into `out`.
fn paths(text: &str, base: &[String], out: &mut Vec<ModPath>) {
    let mut path = base.to_vec();
    let mut rest = text;
    loop {
        let ident: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if ident.is_empty() {
            if let Some(group) = rest.strip_prefix('{') {
                let end = group.find('}').unwrap_or(group.len());
                for item in group[..end].split(',') {
                    paths(item.trim(), &path, out);
                }
            }
            break;
        }
        rest = &rest[ident.len()..];
        if ident != "self" {
            path.push(ident);
        }
        match rest.strip_prefix("::") {
            Some(r) => rest = r,
            None => break,
        }
    }
    if path.len() > base.len() {
        out.push(path);
    }
}

fn parent(me: &[String]) -> ModPath {
    me[..me.len().saturating_sub(1)].to_vec()
}

/// The strongly connected components of more than one module (Tarjan's algorithm).
fn cycles(graph: &BTreeMap<ModPath, BTreeSet<ModPath>>) -> Vec<Vec<ModPath>> {
    struct State<'a> {
        graph: &'a BTreeMap<ModPath, BTreeSet<ModPath>>,
        index: BTreeMap<&'a ModPath, (usize, usize)>,
        stack: Vec<&'a ModPath>,
        on_stack: BTreeSet<&'a ModPath>,
        next: usize,
        out: Vec<Vec<ModPath>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a ModPath) {
        s.index.insert(v, (s.next, s.next));
        s.next += 1;
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in &s.graph[v] {
            let Some((w, _)) = s.graph.get_key_value(w) else {
                continue;
            };
            if !s.index.contains_key(w) {
                visit(s, w);
                let low = s.index[v].1.min(s.index[w].1);
                s.index.get_mut(v).unwrap().1 = low;
            } else if s.on_stack.contains(w) {
                let low = s.index[v].1.min(s.index[w].0);
                s.index.get_mut(v).unwrap().1 = low;
            }
        }
        if s.index[v].0 == s.index[v].1 {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.push(w.clone());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.out.push(component);
            }
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.out.sort();
    s.out
}

fn show(src: &Path, module: &[String]) -> String {
    let krate = src.parent().unwrap().file_name().unwrap().to_string_lossy();
    format!("{krate}::{}", module.join("::"))
}

//! Checks the layer table of `lib.rs` against the sources: which layer each file's `crate::`
//! paths reach, where `jni` and `libc` appear, and that the module graph has no circle.
//! Test code (`tests.rs`, `*_tests.rs` and what follows a file's `#[cfg(test)]` module) is left
//! out: a test may reach anything.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Layer → the layers it may import (itself always allowed).
const MAY_IMPORT: [(&str, &[&str]); 8] = [
    ("entry", &["runtime", "jvm", "log"]),
    (
        "runtime",
        &["options", "jvm", "sink", "core", "log", "time"],
    ),
    ("jvm", &["core", "log"]),
    ("options", &["sink", "core", "log"]),
    ("sink", &["core", "log", "time"]),
    ("core", &["log"]),
    ("log", &[]),
    ("time", &[]),
];

/// The layers where foreign-function crates may appear.
const FFI_LAYERS: [&str; 4] = ["entry", "jvm", "runtime", "time"];

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read agent/") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `core/join.rs` → `["core", "join"]`; `sink/push/mod.rs` → `["sink", "push"]`.
fn module_of(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// The production part of a source file: up to its first `#[cfg(test)]` module.
fn production(text: &str) -> String {
    let mut out = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let next_is_mod = lines
            .peek()
            .is_some_and(|n| n.trim_start().starts_with("mod ") || n.contains(" mod "));
        if line.trim() == "#[cfg(test)]" && next_is_mod {
            break;
        }
        // Doc and line comments name modules without importing them.
        if !line.trim_start().starts_with("//") {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// The `crate::a::b` paths of `text`, as `[a, b]` (b only when it is a module name: lower case).
fn crate_paths(text: &str) -> BTreeSet<Vec<String>> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    while let Some(i) = rest.find("crate::") {
        let preceded = rest[..i].chars().next_back();
        rest = &rest[i + "crate::".len()..];
        if preceded.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
            continue;
        }
        let path: Vec<String> = rest
            .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
            .next()
            .unwrap_or("")
            .split("::")
            .take(2)
            .filter(|s| !s.is_empty() && s.chars().next().is_some_and(|c| c.is_lowercase()))
            .map(str::to_string)
            .collect();
        if !path.is_empty() {
            out.insert(path);
        }
    }
    out
}

struct Graph {
    /// Module (`core::join`, `sink::push`, `entry`) → the modules it imports.
    edges: BTreeMap<String, BTreeSet<String>>,
    problems: Vec<String>,
}

fn graph() -> Graph {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("agent");
    let mut files = Vec::new();
    sources(&root, &mut files);
    let mut g = Graph {
        edges: BTreeMap::new(),
        problems: Vec::new(),
    };
    for file in files {
        let rel = file
            .strip_prefix(&root)
            .expect("under agent/")
            .to_path_buf();
        let name = rel.file_name().unwrap_or_default().to_string_lossy();
        if name == "tests.rs" || name.ends_with("_tests.rs") || rel.starts_with("bin") {
            continue;
        }
        let module = module_of(&rel);
        if module == ["lib"] || module == ["layers"] {
            continue;
        }
        let layer = module[0].clone();
        let node = module
            .iter()
            .take(2)
            .cloned()
            .collect::<Vec<_>>()
            .join("::");
        let text = production(&std::fs::read_to_string(&file).expect("read source"));
        g.edges.entry(node.clone()).or_default();
        let allowed = MAY_IMPORT
            .iter()
            .find(|(l, _)| *l == layer)
            .map(|(_, a)| *a)
            .unwrap_or_else(|| panic!("{}: layer '{layer}' is not in the table", rel.display()));
        for mut path in crate_paths(&text) {
            // `crate::warn!` and its kin are the log macros, exported at the crate root.
            if matches!(path[0].as_str(), "error" | "warn" | "info" | "debug") {
                path = vec!["log".to_string()];
            }
            let target_layer = &path[0];
            if *target_layer != layer && !allowed.contains(&target_layer.as_str()) {
                g.problems.push(format!(
                    "{}: {layer} may not import crate::{}",
                    rel.display(),
                    path.join("::")
                ));
            }
            let target = if MAY_IMPORT.iter().any(|(l, _)| *l == target_layer.as_str())
                && path.len() == 2
                && !matches!(target_layer.as_str(), "log" | "time")
            {
                path.join("::")
            } else {
                target_layer.clone()
            };
            if target != node {
                g.edges.entry(node.clone()).or_default().insert(target);
            }
        }
        for ffi in ["jni::", "libc::"] {
            if text.contains(ffi) && !FFI_LAYERS.contains(&layer.as_str()) {
                g.problems
                    .push(format!("{}: {ffi} outside the FFI layers", rel.display()));
            }
        }
    }
    g
}

/// A circle of `edges`, when there is one.
fn circle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        match state.get(n) {
            Some(2) => return None,
            Some(1) => {
                let start = stack.iter().position(|s| s == n).unwrap_or(0);
                let mut c = stack[start..].to_vec();
                c.push(n.to_string());
                return Some(c);
            }
            _ => {}
        }
        state.insert(n.to_string(), 1);
        stack.push(n.to_string());
        for m in edges.get(n).into_iter().flatten() {
            if let Some(c) = visit(m, edges, state, stack) {
                return Some(c);
            }
        }
        stack.pop();
        state.insert(n.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in edges.keys() {
        if let Some(c) = visit(n, edges, &mut state, &mut Vec::new()) {
            return Some(c);
        }
    }
    None
}

#[test]
fn every_file_imports_only_what_its_layer_may() {
    let g = graph();
    assert!(g.problems.is_empty(), "{}", g.problems.join("\n"));
}

#[test]
fn the_module_graph_has_no_circle() {
    let g = graph();
    assert!(
        g.edges.len() > 20,
        "too few modules seen: {:?}",
        g.edges.keys()
    );
    if let Some(c) = circle(&g.edges) {
        panic!("import circle: {}", c.join(" → "));
    }
}

#[test]
fn the_checker_sees_circles_and_paths() {
    let mut e = BTreeMap::new();
    e.insert("a".to_string(), BTreeSet::from(["b".to_string()]));
    e.insert("b".to_string(), BTreeSet::from(["a".to_string()]));
    assert!(circle(&e).is_some());
    e.get_mut("b").unwrap().clear();
    assert!(circle(&e).is_none());
    let p = crate_paths("use crate::core::model::Frame; $crate::log::write; crate::time::x()");
    assert!(p.contains(&vec!["core".to_string(), "model".to_string()]));
    assert!(p.contains(&vec!["time".to_string(), "x".to_string()]));
    assert_eq!(p.len(), 2, "{p:?}");
}

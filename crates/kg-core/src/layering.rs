//! The modules of this crate import each other without a circle: each can be read,
//! and changed, knowing only the modules below it. ARCHITECTURE.md draws the layers.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Module → the modules its non-test code names through `crate::`.
fn imports() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut files = vec![src.clone()];
    while let Some(path) = files.pop() {
        if path.is_dir() {
            let entries = std::fs::read_dir(&path).expect("source folder");
            files.extend(entries.map(|e| e.expect("entry").path()));
            continue;
        }
        let relative = path.strip_prefix(&src).expect("under src");
        let top = relative.components().next().expect("a component");
        let module = top
            .as_os_str()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_string();
        if module == "lib" || module == "layering" || path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("source file");
        let code = text.split("#[cfg(test)]\nmod tests").next().unwrap_or("");
        let named = graph.entry(module.clone()).or_default();
        let without_comments: Vec<&str> = code
            .lines()
            .map(|line| line.split("//").next().unwrap_or(""))
            .collect();
        names_after_crate(&without_comments.join("\n"), named);
        named.remove(&module);
    }
    let modules: BTreeSet<String> = graph.keys().cloned().collect();
    for named in graph.values_mut() {
        named.retain(|m| modules.contains(m));
    }
    graph
}

/// Adds the module names that follow `crate::` in `code`, also inside
/// `crate::{a::X, b}` groups.
fn names_after_crate(code: &str, into: &mut BTreeSet<String>) {
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // Top-level names of the group: what follows `{` or a `,` at depth 0.
            let mut depth = 0;
            let mut start = true;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => start = true,
                    c if start && !c.is_whitespace() => {
                        into.insert(ident(&group[i..]));
                        start = false;
                    }
                    _ => {}
                }
            }
        } else {
            into.insert(ident(rest));
        }
    }
}

/// A circle through `module`, if the imports have one.
fn circle_from(
    module: &str,
    graph: &BTreeMap<String, BTreeSet<String>>,
    path: &mut Vec<String>,
    done: &mut BTreeSet<String>,
) -> Option<Vec<String>> {
    if let Some(at) = path.iter().position(|m| m == module) {
        let mut circle = path[at..].to_vec();
        circle.push(module.to_string());
        return Some(circle);
    }
    if done.contains(module) {
        return None;
    }
    path.push(module.to_string());
    for next in graph.get(module).into_iter().flatten() {
        if let Some(circle) = circle_from(next, graph, path, done) {
            return Some(circle);
        }
    }
    path.pop();
    done.insert(module.to_string());
    None
}

#[test]
fn no_module_imports_itself_through_others() {
    let graph = imports();
    assert!(graph.len() > 20, "modules found: {:?}", graph.keys());
    assert!(graph["store"].contains("graph"), "the scan sees imports");
    let mut done = BTreeSet::new();
    for module in graph.keys() {
        if let Some(circle) = circle_from(module, &graph, &mut Vec::new(), &mut done) {
            panic!("import circle: {}", circle.join(" → "));
        }
    }
}

#[test]
fn grouped_imports_are_seen() {
    let mut named = BTreeSet::new();
    names_after_crate(
        "use crate::{\n    model::{Level, Tier},\n    plan::Plan, wording,\n};",
        &mut named,
    );
    names_after_crate("let x = crate::debt::compute();", &mut named);
    let expected: BTreeSet<String> = ["model", "plan", "wording", "debt"]
        .map(String::from)
        .into();
    assert_eq!(named, expected);
}

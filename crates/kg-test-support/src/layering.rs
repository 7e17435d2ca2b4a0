//! The layering check every crate runs on itself: its top-level modules import each
//! other without a circle, so each can be read, and changed, knowing only the modules
//! below it. ARCHITECTURE.md draws the layers.
//!
//! A module is a top-level file or folder of `src/` (`sync/git.rs` belongs to `sync`);
//! its imports are the modules its non-test code names through `crate::`. The crate's
//! root files (`lib.rs`, `main.rs`) and `bin/` only assemble, so they are not modules.
//! Test code does not count: an inline `#[cfg(test)] mod tests`, nor one in its own
//! file (`search/tests.rs`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Module → the modules its non-test code names through `crate::`.
pub type Imports = BTreeMap<String, BTreeSet<String>>;

/// The import graph of the crate whose sources are in `src`.
pub fn imports(src: &Path) -> Imports {
    let mut graph: Imports = BTreeMap::new();
    let mut files = vec![src.to_path_buf()];
    while let Some(path) = files.pop() {
        if path.is_dir() {
            let entries = std::fs::read_dir(&path)
                .unwrap_or_else(|e| panic!("cannot list {}: {e}", path.display()));
            files.extend(entries.map(|e| e.expect("a folder entry").path()));
            continue;
        }
        let relative = path.strip_prefix(src).expect("under src");
        let top = relative.components().next().expect("a component");
        let module = top
            .as_os_str()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_string();
        if ["lib", "main", "bin", "layering"].contains(&module.as_str())
            || path.extension().is_none_or(|e| e != "rs")
            || path.file_stem().is_some_and(|s| s == "tests")
        {
            continue;
        }
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
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
pub fn names_after_crate(code: &str, into: &mut BTreeSet<String>) {
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

/// An import circle, as the modules along it (the first repeated last), if any.
pub fn circle(graph: &Imports) -> Option<Vec<String>> {
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|module| circle_from(module, graph, &mut Vec::new(), &mut done))
}

fn circle_from(
    module: &str,
    graph: &Imports,
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

/// Panics naming the circle when the modules under `src` import each other in one.
/// `at_least` guards the scan itself: fewer modules found means it looked elsewhere.
pub fn assert_no_circle(src: &Path, at_least: usize) -> Imports {
    let graph = imports(src);
    assert!(
        graph.len() >= at_least,
        "modules found under {}: {:?}",
        src.display(),
        graph.keys()
    );
    if let Some(circle) = circle(&graph) {
        panic!("import circle in {}: {}", src.display(), circle.join(" → "));
    }
    graph
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crate_with(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("a temporary folder");
        for (name, code) in files {
            let path = dir.path().join(name);
            std::fs::create_dir_all(path.parent().expect("a parent")).expect("folders");
            std::fs::write(path, code).expect("a source file");
        }
        dir
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

    #[test]
    fn a_circle_through_a_folder_module_is_found() {
        let src = crate_with(&[
            ("lib.rs", "mod state; mod rest; mod sync;"),
            ("state.rs", "use crate::sync::git::Git;"),
            ("sync/mod.rs", "mod git; mod served;"),
            ("sync/git.rs", "pub struct Git;"),
            // The circle: sync → rest → state → sync.
            ("sync/served.rs", "use crate::rest::Answer;"),
            ("rest.rs", "use crate::{state::AppState};"),
        ]);
        let found = circle(&imports(src.path())).expect("the circle");
        assert_eq!(found.first(), found.last());
        let members: BTreeSet<&str> = found.iter().map(String::as_str).collect();
        assert_eq!(members, ["rest", "state", "sync"].into());
        let panicked = std::panic::catch_unwind(|| assert_no_circle(src.path(), 1));
        assert!(panicked.is_err(), "assert_no_circle let a circle pass");
    }

    #[test]
    fn layers_without_a_circle_pass_and_tests_and_comments_do_not_count() {
        let src = crate_with(&[
            (
                "main.rs",
                "mod app; mod state; fn main() { crate::app::run() }",
            ),
            ("app.rs", "use crate::state::AppState;\npub fn run() {}"),
            (
                "state.rs",
                "// crate::app is named only in a comment\npub struct AppState;\n\
                 #[cfg(test)]\nmod tests { use crate::app::run; }",
            ),
            (
                "store.rs",
                "use crate::state::AppState;\n#[cfg(test)]\nmod tests;",
            ),
            // A test module in its own file does not count either.
            ("store/tests.rs", "use crate::app::run;"),
        ]);
        let graph = assert_no_circle(src.path(), 2);
        assert_eq!(graph["app"], ["state".to_string()].into());
        assert!(graph["state"].is_empty());
        assert_eq!(graph["store"], ["state".to_string()].into());
    }
}

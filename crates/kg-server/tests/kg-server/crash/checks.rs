//! What is checked after each kill: the files parse, every acknowledged write is there,
//! `.prev` is an earlier state.

use super::*;

/// What a graph file holds, as the model sees it.
pub(super) fn observed(graph: &Graph, level: &str, key: &Key) -> Option<Val> {
    match key {
        Key::Node { level: l, id } if l == level => {
            Some(graph.nodes.get(id).map(|n| n.gist().to_string()))
        }
        Key::Edge { level: l, key } if l == level => Some(
            graph
                .edges
                .contains_key(&EdgeKey::new(&key.0, &key.1, &key.2))
                .then(String::new),
        ),
        Key::Progress { level: l, task } if l == level => {
            Some(graph.progress.get(task).map(Value::to_string))
        }
        _ => None,
    }
}

pub(super) fn load_graph(path: &Path) -> Result<Graph, String> {
    match std::fs::read(path) {
        Ok(bytes) => parse_graph(&bytes)
            .map(|f| f.graph)
            .map_err(|e| format!("{} does not parse: {e}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Graph::default()),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// `.prev` is an earlier state of `current`: versions never go backwards, none
/// disappears, and a node at the same version has the same gist.
pub(super) fn check_prev(prev: &Graph, current: &Graph, what: &str) -> Result<(), String> {
    for (key, pv) in &prev.versions {
        let Some(cv) = current.versions.get(key) else {
            return Err(format!(
                "{what}: version {key} is in .prev but not in the file"
            ));
        };
        if pv.v() > cv.v() {
            return Err(format!(
                "{what}: .prev has {key} at v{} but the file at v{}",
                pv.v(),
                cv.v()
            ));
        }
        if pv.v() == cv.v()
            && let Some(id) = key.strip_prefix("node:")
            && let (Some(a), Some(b)) = (prev.nodes.get(id), current.nodes.get(id))
            && a.gist() != b.gist()
        {
            return Err(format!(
                "{what}: node {id} at v{} differs between .prev and the file",
                pv.v()
            ));
        }
    }
    Ok(())
}

/// Every file of the storage root parses; returns the names of temp leftovers.
pub(super) fn check_files(storage: &Path) -> Result<Vec<String>, String> {
    let mut leftovers = Vec::new();
    let mut stack = vec![storage.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            if name.ends_with(".tmp") || name.ends_with(".prev-tmp") {
                leftovers.push(name);
            } else if name.contains(".corrupt-") {
                return Err(format!("a file was quarantined: {}", path.display()));
            } else if name == "graph.json" || name == "user.json" || name.ends_with(".prev") {
                parse_graph(&bytes)
                    .map_err(|e| format!("{} does not parse: {e}", path.display()))?;
            } else if name.ends_with(".json") {
                serde_json::from_slice::<Value>(&bytes)
                    .map_err(|e| format!("{} does not parse: {e}", path.display()))?;
            }
        }
    }
    Ok(leftovers)
}

/// A storage root on the real disk (never tmpfs), so fsync and rename are real.
pub(crate) fn disk_home(prefix: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("temporary home under the target folder");
    let path = std::fs::canonicalize(dir.path()).expect("canonical");
    if wire::is_tmpfs(&path) {
        eprintln!(
            "WARNING: {} is on tmpfs; fsync is not exercised by this run",
            path.display()
        );
    }
    (dir, path)
}

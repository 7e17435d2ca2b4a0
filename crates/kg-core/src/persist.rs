//! Graph files on disk: the reference's JSON format, atomic write-through saves with a
//! one-generation `.prev` backup, and quarantine of files that do not parse.
//!
//! A save is acknowledged only after the new bytes are durable: temp file in the same
//! folder, fsync, rename over the target, fsync of the folder. The previous file becomes
//! `.prev` by a hard link (no copy of the data), and only when it is the file this
//! process last wrote or it still parses — a corrupt or foreign file never replaces a
//! good backup.

use crate::graph::Graph;
use crate::model::{Edge, EdgeKey, Level, Node, Object, Version};
use crate::pyfmt::{JsonStyle, push_spaces, write_json, write_json_str, write_json_str_of};
use serde_json::Value;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Why a graph file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum PersistError {
    /// A graph file exists but could not be read; the load fails rather than start
    /// the graph empty over it.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The graph file.
        path: PathBuf,
        /// The I/O error.
        source: io::Error,
    },
    /// A file could not be replaced (its folder, the temp file, an fsync, the `.prev`
    /// backup or the rename failed), or a graph file that does not parse could not be
    /// moved aside.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file being replaced or moved aside.
        path: PathBuf,
        /// The I/O error.
        source: io::Error,
    },
    /// A write would take a graph file past [`crate::limits::MAX_GRAPH_BYTES`]; nothing
    /// was written.
    #[error(
        "the graph would grow to {bytes} bytes, past the limit of {limit} bytes for one graph; nothing was stored. Delete or shorten nodes (notes especially) to make room"
    )]
    TooLarge {
        /// The graph file.
        path: PathBuf,
        /// Its size with the change.
        bytes: usize,
        /// The limit.
        limit: usize,
    },
    /// A file's content is not a graph file in the reference's format.
    #[error("{path} is not a valid graph file: {cause}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What the parser objected to.
        cause: String,
    },
}

/// A parsed graph file.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GraphFile {
    /// The nodes, edges, versions and progress.
    pub graph: Graph,
    /// `_meta.project_path` as recorded in the file.
    pub project_path: Option<String>,
    /// The level `_meta.namespace.kind` names; `None` when it names none (a file
    /// written by hand, or by a version of the tool before namespaces).
    pub level: Option<Level>,
}

/// Parse the bytes of a graph file, checking the structure the program relies on.
/// Node contents are not validated (nodes are free-form); shapes are.
pub fn parse_graph(bytes: &[u8]) -> Result<GraphFile, String> {
    let root: Value = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    let Value::Object(mut root) = root else {
        return Err(format!("top level is {}, not an object", kind_of(&root)));
    };
    let mut graph = Graph::default();
    match root.shift_remove("nodes") {
        None | Some(Value::Null) => {}
        Some(Value::Object(nodes)) => {
            for (id, node) in nodes {
                if id == "_meta" {
                    continue; // legacy guard: an old writer put _meta inside nodes
                }
                let Value::Object(obj) = node else {
                    return Err(format!("node '{id}' is {}, not an object", kind_of(&node)));
                };
                graph.nodes.insert(id, Node::from_object(obj));
            }
        }
        Some(other) => return Err(format!("'nodes' is {}, not an object", kind_of(&other))),
    }
    match root.shift_remove("edges") {
        None | Some(Value::Null) => {}
        Some(Value::Object(edges)) => {
            for (key, edge) in edges {
                let Value::Object(obj) = edge else {
                    return Err(format!("edge '{key}' is {}, not an object", kind_of(&edge)));
                };
                let edge = Edge::from_object(obj)
                    .ok_or_else(|| format!("edge '{key}' lacks a string from, to or rel"))?;
                // Identity comes from the object, not the key: duplicates collapse,
                // keeping the first position and the last content.
                if let Some(slot) = graph.edges.get_mut(&edge.key) {
                    *slot = edge;
                } else {
                    graph.edges.insert(edge.key.clone(), edge);
                }
            }
        }
        Some(other) => return Err(format!("'edges' is {}, not an object", kind_of(&other))),
    }
    let (mut project_path, mut level) = (None, None);
    match root.shift_remove("_meta") {
        None | Some(Value::Null) => {}
        Some(Value::Object(mut meta)) => {
            match meta.shift_remove("versions") {
                None | Some(Value::Null) => {}
                Some(Value::Object(versions)) => {
                    for (key, entry) in versions {
                        let Value::Object(obj) = entry else {
                            return Err(format!("version '{key}' is not an object"));
                        };
                        graph.versions.insert(key, Version::from_object(obj));
                    }
                }
                Some(_) => return Err("'_meta.versions' is not an object".into()),
            }
            match meta.shift_remove("progress") {
                None | Some(Value::Null) => {}
                Some(Value::Object(progress)) => graph.progress = progress.into_iter().collect(),
                Some(_) => return Err("'_meta.progress' is not an object".into()),
            }
            if let Some(Value::String(path)) = meta.shift_remove("project_path") {
                project_path = Some(path);
            }
            level = meta
                .get("namespace")
                .and_then(|namespace| namespace.get("kind"))
                .and_then(Value::as_str)
                .and_then(|kind| Level::parse(kind).ok());
        }
        Some(other) => return Err(format!("'_meta' is {}, not an object", kind_of(&other))),
    }
    Ok(GraphFile {
        graph,
        project_path,
        level,
    })
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Serialise a graph exactly as the reference writes it (`json.dump(indent=2)`):
/// `nodes`, `edges`, then a rebuilt `_meta`. A store saves through a [`GraphWriter`].
pub fn serialize_graph(graph: &Graph, level: Level, project_path: Option<&str>) -> String {
    let mut writer = GraphWriter::default();
    writer.write(graph, level, project_path);
    writer.text
}

/// The text of a graph file read with [`parse_graph`], as a save writes it.
pub fn serialize_file(file: &GraphFile, level: Level) -> String {
    serialize_graph(&file.graph, level, file.project_path.as_deref())
}

/// Builds a graph's file text, keeping the last text it built and where each entry
/// lies in it. The next text copies every run of entries that still hold the text it
/// wrote as one block, and serialises only entries that changed or were added: visiting
/// every entry of a large graph, cold in the caches, costs more than writing the file.
///
/// An entry is reused only when its map's lineage is unchanged (so the key at its
/// position is the one written; see [`crate::tracked::Tracked::lineage`]) and its cached
/// text carries the stamp written (so its text is the one written).
#[derive(Debug, Default)]
pub struct GraphWriter {
    text: String,
    /// The buffer of the text before last, reused for the next one.
    spare: String,
    /// Nodes, edges, versions.
    sections: [SavedSection; 3],
}

#[derive(Debug, Default)]
struct SavedSection {
    /// The lineage of the map the spans were written from (0: none yet).
    lineage: u64,
    spans: Vec<EntrySpan>,
    spare: Vec<EntrySpan>,
}

/// Where `<indent><key>: <text>` of one entry lies in the last text.
#[derive(Debug, Clone, Copy)]
struct EntrySpan {
    start: usize,
    end: usize,
    text_stamp: u64,
}

/// A stretch of the last text being copied as one block.
struct Run {
    from: usize,
    to: usize,
    /// Where it starts in the new text.
    at: usize,
}

impl GraphWriter {
    /// The file text of `graph` (kept until the next call).
    pub fn write(&mut self, graph: &Graph, level: Level, project_path: Option<&str>) -> &str {
        let prev = std::mem::take(&mut self.text);
        let mut out = std::mem::take(&mut self.spare);
        out.clear();
        // Sized up front: growing a megabyte buffer by doubling copies it again and again.
        out.reserve(prev.len() + prev.len() / 16 + 4096);
        let style = JsonStyle::file(2);
        let [nodes, edges, versions] = &mut self.sections;
        out.push_str("{\n  \"nodes\": ");
        write_section(
            &mut out,
            &prev,
            nodes,
            graph.nodes.lineage(),
            graph.nodes.iter(),
            1,
            Node::text_stamp,
            |n: &Node| n.cached_text(|n| object_text(n.fields(), n.len(), style, 2)),
            |out, id: &String| write_json_str(out, id, true),
        );
        out.push_str(",\n  \"edges\": ");
        write_section(
            &mut out,
            &prev,
            edges,
            graph.edges.lineage(),
            graph.edges.iter(),
            1,
            Edge::text_stamp,
            |e: &Edge| e.cached_text(|obj| map_text(obj, style, 2)),
            |out, k: &EdgeKey| {
                write_json_str_of(out, &[k.from(), "->", k.to(), ":", k.rel()], true)
            },
        );
        out.push_str(",\n  \"_meta\": {\n    \"versions\": ");
        write_section(
            &mut out,
            &prev,
            versions,
            graph.versions.lineage(),
            graph.versions.iter(),
            2,
            Version::text_stamp,
            |v: &Version| v.cached_text(|obj| map_text(obj, style, 3)),
            |out, k: &String| write_json_str(out, k, true),
        );
        if !graph.progress.is_empty() {
            out.push_str(",\n    \"progress\": ");
            let progress: Object = graph
                .progress
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            write_json(&mut out, &Value::Object(progress), style, 2);
        }
        if level == Level::Project {
            out.push_str(",\n    \"project_path\": ");
            match project_path {
                Some(p) => write_json_str(&mut out, p, true),
                None => out.push_str("null"),
            }
        }
        out.push_str(",\n    \"namespace\": {\n      \"kind\": ");
        write_json_str(&mut out, level.as_str(), true);
        out.push_str(",\n      \"owner\": null\n    }\n  }\n}");
        self.spare = prev;
        self.text = out;
        // The reuse is correct only while its invariants hold (see above): in debug
        // builds every save that had a last text to reuse checks itself against a fresh
        // writer (which has none, so it does not check again).
        if !self.spare.is_empty() {
            debug_assert_eq!(
                self.text,
                serialize_graph(graph, level, project_path),
                "a writer reusing its last text must write what a fresh one writes"
            );
        }
        &self.text
    }
}

/// One map of the file (`nodes`, `edges` or `_meta.versions`) at nesting `depth`:
/// entries that still hold the text `saved` recorded are copied from `prev` in runs,
/// the others written fresh; `saved` then describes the new text.
#[allow(clippy::too_many_arguments)]
fn write_section<'g, K: 'g, V: 'g>(
    out: &mut String,
    prev: &str,
    saved: &mut SavedSection,
    lineage: u64,
    entries: impl ExactSizeIterator<Item = (&'g K, &'g V)>,
    depth: usize,
    text_stamp: impl Fn(&V) -> Option<u64>,
    text: impl Fn(&'g V) -> (&'g str, u64),
    write_key: impl Fn(&mut String, &'g K),
) {
    let old = std::mem::take(&mut saved.spans);
    // The spans must describe `prev`: a write that panicked half-way leaves spans of a
    // text that was never kept.
    let describes_prev = old.last().is_none_or(|span| span.end <= prev.len());
    let reusable = if saved.lineage == lineage && entries.len() >= old.len() && describes_prev {
        old.len()
    } else {
        0
    };
    let mut spans = std::mem::take(&mut saved.spare);
    spans.clear();
    spans.reserve(entries.len());
    let mut run: Option<Run> = None;
    let flush = |out: &mut String, run: &mut Option<Run>| {
        if let Some(r) = run.take() {
            out.push_str(&prev[r.from..r.to]);
        }
    };
    let mut any = false;
    for (i, (key, value)) in entries.enumerate() {
        let separator = if any { ",\n" } else { "{\n" };
        any = true;
        if let Some(span) = old
            .get(i)
            .filter(|span| i < reusable && text_stamp(value) == Some(span.text_stamp))
        {
            // Consecutive entries lie next to each other in the last text, `,\n` apart.
            let r = match &mut run {
                Some(r) => {
                    debug_assert_eq!(prev.get(r.to..span.start), Some(",\n"));
                    r.to = span.end;
                    r
                }
                None => {
                    out.push_str(separator);
                    run.insert(Run {
                        from: span.start,
                        to: span.end,
                        at: out.len(),
                    })
                }
            };
            spans.push(EntrySpan {
                start: r.at + (span.start - r.from),
                end: r.at + (span.end - r.from),
                text_stamp: span.text_stamp,
            });
            continue;
        }
        flush(out, &mut run);
        out.push_str(separator);
        let start = out.len();
        push_spaces(out, 2 * (depth + 1));
        write_key(out, key);
        out.push_str(": ");
        let (entry_text, stamp) = text(value);
        out.push_str(entry_text);
        spans.push(EntrySpan {
            start,
            end: out.len(),
            text_stamp: stamp,
        });
    }
    flush(out, &mut run);
    if any {
        out.push('\n');
        push_spaces(out, 2 * depth);
        out.push('}');
    } else {
        out.push_str("{}");
    }
    saved.lineage = lineage;
    saved.spans = spans;
    saved.spare = old;
}

/// The JSON text of an object nested at `depth`.
fn object_text<'a>(
    fields: impl Iterator<Item = (&'a str, &'a Value)>,
    len: usize,
    style: JsonStyle,
    depth: usize,
) -> String {
    if len == 0 {
        return "{}".to_string();
    }
    let mut out = String::with_capacity(64 * (len + 1));
    out.push('{');
    for (i, (key, value)) in fields.enumerate() {
        out.push_str(if i > 0 { ",\n" } else { "\n" });
        push_spaces(&mut out, 2 * (depth + 1));
        write_json_str(&mut out, key, true);
        out.push_str(": ");
        write_json(&mut out, value, style, depth + 1);
    }
    out.push('\n');
    push_spaces(&mut out, 2 * depth);
    out.push('}');
    out
}

/// A map entry's text: `obj` as a JSON object at nesting `depth`.
fn map_text(obj: &Object, style: JsonStyle, depth: usize) -> String {
    let fields = obj.iter().map(|(key, value)| (key.as_str(), value));
    object_text(fields, obj.len(), style, depth)
}

/// `graph.json` → `graph.prev` (the reference replaces the extension).
pub fn sibling_with_extension(path: &Path, extension: &str) -> PathBuf {
    path.with_extension(extension)
}

/// Checks that bytes are a usable file (a graph file must parse).
pub type Validator = dyn Fn(&[u8]) -> bool;

/// Identity of the file this process last wrote, to recognise a foreign replacement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStamp {
    len: u64,
    modified: Option<std::time::SystemTime>,
    #[cfg(unix)]
    ino: u64,
}

impl FileStamp {
    /// The file's length in bytes when stamped.
    pub fn file_len(&self) -> u64 {
        self.len
    }

    /// The stamp of the file at `path` now (length, modification time and, on Unix,
    /// inode); `None` when it cannot be inspected, e.g. it does not exist. An equal
    /// stamp later means the file was left alone.
    pub fn of(path: &Path) -> Option<FileStamp> {
        let meta = fs::metadata(path).ok()?;
        Some(FileStamp {
            len: meta.len(),
            modified: meta.modified().ok(),
            #[cfg(unix)]
            ino: std::os::unix::fs::MetadataExt::ino(&meta),
        })
    }
}

/// How durable a write must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteMode {
    /// fsync the data and the folder before returning.
    pub durable: bool,
    /// Keep the replaced file as `<name>.prev`.
    pub keep_prev: bool,
}

impl WriteMode {
    /// Graph files: durable, with a backup.
    pub const GRAPH: WriteMode = WriteMode {
        durable: true,
        keep_prev: true,
    };
    /// The session registry: durable, no backup.
    pub const DURABLE: WriteMode = WriteMode {
        durable: true,
        keep_prev: false,
    };
    /// Counters and aliases: atomic but not fsynced (losing the last bump is harmless).
    pub const ATOMIC: WriteMode = WriteMode {
        durable: false,
        keep_prev: false,
    };
}

/// Replace `path` with `bytes` atomically. `last_written` is the stamp of the file this
/// process wrote last; a target that differs from it is only kept as `.prev` if it
/// still parses as a graph (`validate`). Returns the stamp of the new file.
pub fn atomic_write(
    path: &Path,
    bytes: &[u8],
    mode: WriteMode,
    last_written: Option<FileStamp>,
    validate: Option<&Validator>,
) -> Result<Option<FileStamp>, PersistError> {
    let write_err = |source: io::Error| PersistError::Write {
        path: path.to_path_buf(),
        source,
    };
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    create_dir_durably(dir, mode.durable).map_err(write_err)?;
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{file_name}."))
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(write_err)?;
    tmp.write_all(bytes).map_err(write_err)?;
    if mode.durable {
        tmp.as_file().sync_all().map_err(write_err)?;
    }
    if mode.keep_prev {
        keep_previous(path, last_written, validate).map_err(write_err)?;
    }
    tmp.persist(path).map_err(|e| write_err(e.error))?;
    if mode.durable {
        sync_dir(dir).map_err(write_err)?;
    }
    Ok(FileStamp::of(path))
}

/// Make the current target the `.prev` backup, unless it is not a file we trust.
fn keep_previous(
    path: &Path,
    last_written: Option<FileStamp>,
    validate: Option<&Validator>,
) -> io::Result<()> {
    let Some(current) = FileStamp::of(path) else {
        return Ok(()); // nothing to back up (first save, or quarantined)
    };
    if last_written != Some(current) {
        let trusted = match validate {
            Some(check) => fs::read(path).map(|b| check(&b)).unwrap_or(false),
            None => true,
        };
        if !trusted {
            // A damaged file is never overwritten: it is moved aside, as a load would.
            // (Something else in the way, such as a folder, makes the save fail.)
            if fs::symlink_metadata(path).is_ok_and(|m| m.is_file()) {
                let changed = fs::metadata(path)
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .map_or(0.0, |d| d.as_secs_f64());
                let moved_to = quarantine(path, changed)?;
                log::error!(
                    "{} changed outside KG Memory and does not parse; moved it to {} and saved the graph in memory",
                    path.display(),
                    moved_to.display()
                );
            }
            return Ok(());
        }
    }
    let prev = sibling_with_extension(path, "prev");
    let staging = sibling_with_extension(path, "prev-tmp");
    let _ = fs::remove_file(&staging);
    // A hard link makes the old inode the backup without copying its bytes.
    if fs::hard_link(path, &staging).is_err() {
        fs::copy(path, &staging)?;
    }
    fs::rename(&staging, &prev)
}

/// Create `dir` and its missing parents. When durable, each new folder's entry is
/// fsynced in its parent too: a file fsynced inside a folder whose own entry never
/// reached the disk would vanish with it after a power cut.
fn create_dir_durably(dir: &Path, durable: bool) -> io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    let mut created = Vec::new();
    let mut missing = Some(dir);
    while let Some(d) = missing.filter(|d| !d.as_os_str().is_empty() && !d.exists()) {
        created.push(d);
        missing = d.parent();
    }
    fs::create_dir_all(dir)?;
    if durable {
        for d in created.iter().rev() {
            if let Some(parent) = d.parent().filter(|p| !p.as_os_str().is_empty()) {
                sync_dir(parent)?;
            }
        }
    }
    Ok(())
}

#[cfg(unix)]
fn sync_dir(dir: &Path) -> io::Result<()> {
    fs::File::open(dir)?.sync_all()
}

#[cfg(not(unix))]
fn sync_dir(_dir: &Path) -> io::Result<()> {
    Ok(()) // Windows has no directory handles to fsync; rename is already durable there.
}

/// What loading a graph file found.
#[derive(Debug)]
pub enum Loaded {
    /// No file yet: an empty graph.
    Missing,
    /// The file parsed.
    Fine(GraphFile),
    /// The file did not parse and was moved aside; `recovered` is the `.prev`
    /// content when that parsed, else the graph starts empty.
    Quarantined {
        moved_to: PathBuf,
        /// Why the file did not parse, as the parser said it.
        cause: String,
        recovered: Option<GraphFile>,
    },
}

/// Load a graph file, quarantining it when it does not parse.
pub fn load_graph_file(path: &Path, now: f64) -> Result<Loaded, PersistError> {
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Loaded::Missing),
        Err(source) => {
            return Err(PersistError::Read {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    match parse_graph(&bytes) {
        Ok(file) => Ok(Loaded::Fine(file)),
        Err(cause) => {
            let moved_to = quarantine(path, now).map_err(|source| PersistError::Write {
                path: path.to_path_buf(),
                source,
            })?;
            let prev = sibling_with_extension(path, "prev");
            let recovered = fs::read(&prev).ok().and_then(|b| parse_graph(&b).ok());
            log::error!(
                "{} is not a valid graph file ({cause}); moved it to {} and {}",
                path.display(),
                moved_to.display(),
                if recovered.is_some() {
                    format!("loaded the backup {}", prev.display())
                } else {
                    "started this graph empty (no valid backup)".to_string()
                }
            );
            Ok(Loaded::Quarantined {
                moved_to,
                cause,
                recovered,
            })
        }
    }
}

/// Move a bad file aside as `<file>.corrupt-<unix-ts>` (never overwriting another).
pub fn quarantine(path: &Path, now: f64) -> io::Result<PathBuf> {
    let base = format!("{}.corrupt-{}", path.display(), now.floor() as i64);
    let mut target = PathBuf::from(&base);
    let mut n = 1;
    while target.exists() {
        target = PathBuf::from(format!("{base}-{n}"));
        n += 1;
    }
    fs::rename(path, &target)?;
    Ok(target)
}

/// Read a small JSON object file (sessions, aliases, counters). Missing → `None`.
pub fn read_json_object(path: &Path) -> Result<Option<Object>, String> {
    match fs::read(path) {
        Ok(bytes) => match serde_json::from_slice::<Value>(&bytes) {
            Ok(Value::Object(obj)) => Ok(Some(obj)),
            Ok(other) => Err(format!(
                "{} holds {}, not an object",
                path.display(),
                kind_of(&other)
            )),
            Err(e) => Err(format!("{}: {e}", path.display())),
        },
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// Write a small JSON object file with the reference's indentation.
pub fn write_json_object(
    path: &Path,
    obj: &Object,
    indent: usize,
    mode: WriteMode,
) -> Result<(), PersistError> {
    let mut text = String::new();
    write_json(
        &mut text,
        &Value::Object(obj.clone()),
        JsonStyle::file(indent),
        0,
    );
    atomic_write(path, text.as_bytes(), mode, None, None).map(|_| ())
}

/// Remove temp files a killed process left behind next to `path`.
pub fn remove_stale_temps(path: &Path) {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return;
    };
    let prefix = format!(".{}.", name.to_string_lossy());
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let file_name = entry.file_name().to_string_lossy().into_owned();
        if file_name.starts_with(&prefix) && file_name.ends_with(".tmp") {
            let _ = fs::remove_file(entry.path());
        }
    }
}

#[cfg(test)]
mod tests;

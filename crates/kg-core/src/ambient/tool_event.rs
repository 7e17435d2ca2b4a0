//! Capture nudges (interfaces.md §7.4, core.md §10): when the same file, URL or web
//! query keeps coming back and no memory node mentions it, suggest recording the
//! conclusion once instead of re-deriving it.

use super::ToolUse;
use super::prompt::is_py_space;
use crate::namespace::resolve_path;
use crate::store::{GraphSlot, Policy, Store};
use crate::tool_events::ToolEvents;
use crate::wording;
use std::path::Path;
use std::sync::Mutex;

/// Distinct Claude sessions that must have read a file before it nudges.
pub const READ_THRESHOLD: usize = 2;
/// Fetches or searches of one target before it nudges.
pub const WEB_THRESHOLD: u64 = 2;
/// Seconds before the same target may nudge again.
pub const TARGET_COOLDOWN_SECS: f64 = 86_400.0;
/// Nudges one KG session receives at most (per project counter file).
pub const NUDGES_PER_SESSION: u64 = 3;
/// Seconds between two nudges to one KG session.
pub const NUDGE_GAP_SECS: f64 = 600.0;
/// Throttle entries idle longer than this are dropped when a nudge fires.
const THROTTLE_IDLE_SECS: f64 = 604_800.0;
/// Targets longer than this (bytes) are not counted: no real path, URL or query is
/// that long, and every key is rewritten into the counter file on each event.
pub const MAX_TARGET_BYTES: usize = 4_096;

/// Under `KG_POLICY=reference`: path substrings that make a read noise wherever they
/// occur, so a whole project under `/tmp/` or `…/build/` never nudges.
const NOISE: &[&str] = &[
    "/tmp/",
    "/node_modules/",
    "/venv/",
    "/.venv/",
    "/__pycache__/",
    "/.git/",
    "/dist/",
    "/build/",
    "/.claude/",
    "/.knowledge-graph/",
    "/scratchpad/",
];

/// Under our policy: folders inside a project whose files are tooling, dependencies,
/// build output, caches or scratch, never project knowledge. Only the part of the
/// path below the project root is looked at.
const IGNORED_FOLDERS: &[&str] = &[
    ".git",
    ".hg",
    ".svn",
    "node_modules",
    "venv",
    ".venv",
    "__pycache__",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
    ".tox",
    ".cache",
    ".next",
    "dist",
    "build",
    "target",
    "tmp",
    ".claude",
    ".knowledge-graph",
    "scratchpad",
];

/// One process-wide lock around every counter file's load–count–save, so concurrent
/// hooks never lose a count.
static COUNTER_LOCK: Mutex<()> = Mutex::new(());

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Read,
    Web,
    Search,
}

impl Kind {
    fn prefix(self) -> &'static str {
        match self {
            Kind::Read => "read",
            Kind::Web => "web",
            Kind::Search => "search",
        }
    }
}

/// The needle of a read under our policy: the file's path relative to the project
/// `root` (for a session in a linked worktree of it, relative to the worktree's top),
/// `None` for noise: a file outside the project, or inside one of its
/// [`IGNORED_FOLDERS`]. Where the project itself lives (`/tmp/…`, `…/build/…`) does
/// not matter. Relative paths are taken from `cwd`, where the tool ran.
fn project_file_needle(store: &Store, file_path: &str, cwd: &str, root: &str) -> Option<String> {
    let resolved = resolve_path(&Path::new(cwd).join(file_path));
    let root = Path::new(root);
    let relative = match crate::touch_path::inside(&resolved, root) {
        Some(rel) => rel.to_string_lossy().into_owned(),
        None => store.worktree_path(root, &resolved)?,
    };
    let ignored = Path::new(&relative).components().any(|c| {
        c.as_os_str()
            .to_str()
            .is_some_and(|name| IGNORED_FOLDERS.contains(&name))
    });
    (!ignored).then_some(relative)
}

/// The needle of a read under `KG_POLICY=reference`: the project-relative path inside
/// `cwd`, else the absolute path; `None` for noise ([`NOISE`] anywhere in the path).
/// Relative paths are taken from `cwd`, where the tool ran.
fn file_needle(file_path: &str, cwd: &str) -> Option<String> {
    let cwd_real = resolve_path(Path::new(cwd));
    let resolved = resolve_path(&Path::new(cwd).join(file_path));
    let text = resolved.to_string_lossy();
    let probe = format!("{text}/");
    if NOISE.iter().any(|n| probe.contains(n)) {
        return None;
    }
    let root = cwd_real.to_string_lossy();
    Some(match text.strip_prefix(root.as_ref()) {
        Some("") => ".".to_string(),
        Some(rest) if rest.starts_with('/') && root != "/" => rest[1..].to_string(),
        _ => text.into_owned(),
    })
}

/// Does any node of the graph mention the (lowercased) needle in a touch, its gist
/// or a note? Every tier counts.
fn covered(store: &Store, slot: &GraphSlot, needle: &str) -> bool {
    store.with_graph(slot, |graph| {
        graph.nodes.values().any(|node| {
            node.touches()
                .iter()
                .any(|t| t.to_lowercase().contains(needle))
                || node.gist().to_lowercase().contains(needle)
                || node
                    .notes()
                    .iter()
                    .any(|n| n.to_lowercase().contains(needle))
        })
    })
}

/// The PostToolUse capture nudge for a hook payload (interfaces.md §7.4), or `None`.
///
/// Counts the event in the counter file of the cwd's project (the folder the store
/// files that project's graph in); a cwd outside home, or whose graph cannot be
/// filed, is neither counted nor nudged.
pub fn tool_event(store: &Store, used: &ToolUse<'_>, now: f64) -> Option<String> {
    let cwd = used.cwd.filter(|c| !c.is_empty())?;
    let tool = used.tool_name.filter(|t| !t.is_empty())?;
    let claude = used
        .harness_session
        .filter(|c| !c.is_empty())
        .unwrap_or("unknown");
    fn input(value: Option<&str>) -> Option<&str> {
        value.filter(|s| !s.is_empty())
    }
    let policy = store.config().policy;
    // Where the event is counted, and what "inside the project" means for a read.
    let root = store.project_root_of(cwd).ok()?;
    let (kind, needle) = match tool {
        // Gemini CLI's `read_file` and `google_web_search` are counted as Claude Code's.
        "Read" | "read_file" if policy == Policy::Reference => {
            (Kind::Read, file_needle(input(used.file_path)?, cwd)?)
        }
        "Read" | "read_file" => (
            Kind::Read,
            project_file_needle(store, input(used.file_path)?, cwd, &root)?,
        ),
        "WebFetch" => (Kind::Web, input(used.url)?.to_string()),
        "WebSearch" | "google_web_search" => {
            let query = input(used.query)?.trim_matches(is_py_space).to_lowercase();
            // A blank query is no target (the reference counted it under `search:`).
            if query.is_empty() {
                return None;
            }
            (Kind::Search, query)
        }
        _ => return None,
    };
    if needle.len() > MAX_TARGET_BYTES {
        return None;
    }
    // Also loads the cwd's graph, which the coverage scan reads; a made-up folder
    // gets no graph and no counter file.
    let project = match store.existing_project_slot(&root, now) {
        Ok(slot) => slot,
        Err(e) => {
            log::warn!(
                "tool event for {} not counted: {e}",
                crate::limits::for_log(&root)
            );
            return None;
        }
    };
    let slug = project.slug.as_deref()?;
    let path = store.layout().tool_events(slug);
    let key = format!("{}:{needle}", kind.prefix());

    let event = Event {
        kind,
        needle: &needle,
        key: &key,
        claude,
        cwd,
    };
    let _counting = COUNTER_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let mut events = ToolEvents::load(&path);
    events.bump(&key, claude, now);
    let nudge = decide(store, &mut events, &event, &project, now);
    // Saved whether or not it nudged: the count is the evidence for the next event.
    if let Err(e) = events.save(&path) {
        log::warn!("tool events of {slug} not saved: {e}");
        return None;
    }
    store.note_activity(&project, events.last_seen().collect());
    nudge
}

/// One counted tool use.
#[derive(Debug, Clone, Copy)]
struct Event<'a> {
    kind: Kind,
    needle: &'a str,
    /// `<kind>:<needle>`, the counter's key.
    key: &'a str,
    claude: &'a str,
    cwd: &'a str,
}

/// The checks of interfaces.md §7.4 step 5, in order, stopping at the first failure;
/// on success the throttle and the target's `nudged_ts` are stamped.
fn decide(
    store: &Store,
    events: &mut ToolEvents,
    this: &Event<'_>,
    project: &GraphSlot,
    now: f64,
) -> Option<String> {
    let Event {
        kind,
        needle,
        key,
        claude,
        cwd,
    } = *this;
    let event = events.events.get(key)?;
    let (ready, evidence) = match kind {
        Kind::Read => (
            event.sessions.len() >= READ_THRESHOLD,
            wording::read_evidence(event.sessions.len()),
        ),
        Kind::Web => (
            event.count >= WEB_THRESHOLD,
            wording::fetch_evidence(event.count),
        ),
        Kind::Search => (
            event.count >= WEB_THRESHOLD,
            wording::search_evidence(event.count),
        ),
    };
    if !ready || now - event.nudged_ts.unwrap_or(0.0) < TARGET_COOLDOWN_SECS {
        return None;
    }
    let sid = store.hook_session(Some(claude), Some(cwd))?;
    // The session's own graphs are loaded (and its activity refreshed); a graph that
    // fails to load only narrows the coverage scan.
    if let Err(e) = store.session_project_slot(Some(&sid), now) {
        log::debug!("graphs of session {sid} not loaded: {e}");
    }
    let lowered = needle.to_lowercase();
    if covered(store, store.user_slot(), &lowered) || covered(store, project, &lowered) {
        return None;
    }
    let throttle = events.throttle.get(&sid).cloned().unwrap_or_default();
    if throttle.count >= NUDGES_PER_SESSION || now - throttle.last_ts < NUDGE_GAP_SECS {
        return None;
    }
    events
        .throttle
        .retain(|other, t| *other == sid || now - t.last_ts <= THROTTLE_IDLE_SECS);
    let throttle = events.throttle.entry(sid.clone()).or_default();
    throttle.count += 1;
    throttle.last_ts = now;
    if let Some(event) = events.events.get_mut(key) {
        event.nudged_ts = Some(now);
    }
    Some(match (kind, store.config().policy) {
        (Kind::Read, _) => wording::capture_nudge(needle, &evidence, &sid, "project"),
        // The reference's call names a level no tool accepts.
        (Kind::Web | Kind::Search, Policy::Reference) => {
            wording::capture_nudge(needle, &evidence, &sid, wording::CROSS_PROJECT_LEVEL)
        }
        (Kind::Web | Kind::Search, Policy::Ours) => {
            wording::cross_project_capture_nudge(needle, &evidence, &sid)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_needles_are_project_relative_and_noise_is_dropped() {
        // A folder that does not exist resolves lexically: no temporary folder, whose
        // path would lie under the `/tmp/` noise segment.
        let cwd = "/kg-core-nonexistent/proj".to_string();
        let inside = format!("{cwd}/src/a.rs");
        assert_eq!(file_needle(&inside, &cwd).as_deref(), Some("src/a.rs"));
        assert_eq!(file_needle("src/a.rs", &cwd).as_deref(), Some("src/a.rs"));
        assert_eq!(
            file_needle("./src/../src/a.rs", &cwd).as_deref(),
            Some("src/a.rs")
        );
        assert_eq!(
            file_needle("/etc/hosts", &cwd).as_deref(),
            Some("/etc/hosts")
        );
        for noise in [
            "node_modules/x/index.js",
            ".git/config",
            "build/out.o",
            "a/__pycache__/m.pyc",
        ] {
            assert_eq!(file_needle(noise, &cwd), None, "{noise}");
        }
        assert_eq!(file_needle("/tmp/x.rs", &cwd), None);
        // A folder literally named `.venv` is noise even as the last component.
        assert_eq!(file_needle(".venv", &cwd), None);
        // A sibling whose name starts with the cwd's is not inside it.
        let sibling = format!("{cwd}-other/a.rs");
        assert_eq!(
            file_needle(&sibling, &cwd).as_deref(),
            Some(sibling.as_str())
        );
    }
}

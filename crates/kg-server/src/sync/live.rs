//! Merging the remote's commits into the store of the process that holds the root
//! (the server, or a `kg-memory sync` command that opened it under the root's lock):
//! never through `git merge` in the work tree, which would check out whatever the
//! remote's tree holds, through whatever attributes it carries, and rewrite files the
//! store keeps in memory (its next save would write over the merge).
//!
//! Only what travels is taken ([`Scope::travels`]). Each graph file the remote changed
//! is screened against the write rules (what breaks one is held back, see
//! `kg_core::screen_incoming`), then merged node by node (`kg_sync::merge_files`, as
//! the git driver merges) from the common ancestor, the graph as the store holds it
//! now and the remote's version, and the store takes the result in: saved through its
//! atomic write, recorded in the change log with the remote as origin. Then the work
//! tree, as it now is, is committed with both histories as parents. A crash in between
//! leaves merged files and an unmoved branch: the next sync commits them and merges
//! again, which changes nothing twice.

use super::files::{MAX_SMALL_FILE, Travel};
use super::git::{Git, GitError};
use super::{Scope, SyncError, incoming_checked, merge_message, read_graph, remote_label};
use kg_core::{HeldBack, Store, WriteMode, atomic_write, parse_graph};
use std::path::Path;

/// Merge `tracking` (the remote's branch `remote/branch`) into HEAD through `store`;
/// how many commits came in.
pub(super) fn merge_into_store(
    scope: &Scope,
    git: &Git,
    store: &Store,
    (remote, branch, tracking): (&str, &str, &str),
    now: f64,
) -> Result<usize, SyncError> {
    let incoming = incoming_checked(scope, git, tracking)?;
    if incoming == 0 {
        return Ok(0);
    }
    // Histories that never met (a root that autocommitted before it synced) merge
    // from nothing: every file of theirs is new to us.
    let base = git
        .ok(&["merge-base", "HEAD", tracking])
        .ok()
        .map(|sha| sha.trim().to_string());
    let changed = match &base {
        Some(base) => git.ok(&["diff", "--name-only", "-z", "--no-renames", base, tracking])?,
        None => git.ok(&["ls-tree", "-r", "-z", "--name-only", tracking])?,
    };
    let origin = remote_label(git, remote);
    for path in changed.split('\0').filter(|p| !p.is_empty()) {
        let travel = scope.travels(path);
        if travel == Travel::No {
            log::info!(
                "sync: {} from {origin} is not a file sync takes; left out",
                crate::terminal::safe_line(path)
            );
            continue;
        }
        let theirs = git.blob(tracking, path)?;
        let base_bytes = match &base {
            Some(base) => git.blob(base, path)?,
            None => None,
        };
        let Some(in_store) = scope.graph_in_store(path) else {
            // A small file that travels: theirs, unless this machine changed it too,
            // then ours.
            if git.blob("HEAD", path)? == base_bytes {
                take_small_file(&scope.dir, path, theirs.as_deref())?;
            }
            continue;
        };
        let Some(theirs) = theirs else {
            // Deleting a whole graph is not something sync does to a machine.
            log::warn!("sync: {path} was deleted on {origin}; this machine keeps its copy");
            continue;
        };
        let unreadable = |cause: String| SyncError::RemoteGraphUnreadable {
            path: path.to_string(),
            cause,
        };
        let base_file = match &base_bytes {
            Some(bytes) if !bytes.iter().all(u8::is_ascii_whitespace) => {
                Some(parse_graph(bytes).map_err(unreadable)?)
            }
            _ => None,
        };
        let mut their_file = read_graph(&theirs).map_err(unreadable)?;
        let held: Vec<HeldBack> =
            kg_core::screen_incoming(&mut their_file.graph, base_file.as_ref().map(|f| &f.graph));
        let base_file = base_file.unwrap_or_default();
        let merge = |current: Option<&[u8]>| -> Result<Vec<u8>, String> {
            match current {
                None => Ok(kg_core::serialize_graph(
                    &their_file.graph,
                    their_file.level.unwrap_or(if scope_is_user(&in_store) {
                        kg_core::Level::User
                    } else {
                        kg_core::Level::Project
                    }),
                    their_file.project_path.as_deref(),
                )
                .into_bytes()),
                Some(ours) => {
                    let ours = parse_graph(ours)?;
                    kg_sync::merge_files_at(&base_file, &ours, &their_file, now)
                        .map(|merged| merged.text.into_bytes())
                        .map_err(|e| e.to_string())
                }
            }
        };
        let taken =
            store
                .take_in(&in_store, &origin, now, merge)
                .map_err(|e| SyncError::MergeFailed {
                    files: vec![path.to_string()],
                    detail: e.to_string(),
                })?;
        store
            .hold_back(&in_store, &origin, held, now)
            .map_err(|e| SyncError::Io {
                path: kg_core::held_back_file(&scope.dir.join(path)),
                error: std::io::Error::other(e.to_string()),
            })?;
        if !taken.is_empty() {
            log::info!(
                "sync: {path} from {origin}: {} node(s) arrived or changed, {} deleted, {} edge change(s)",
                taken.updated.len(),
                taken.deleted.len(),
                taken.edges
            );
        }
    }
    commit_merge(scope, git, tracking, &merge_message(remote, branch, now))?;
    Ok(incoming)
}

fn scope_is_user(in_store: &str) -> bool {
    in_store == "user.json"
}

/// Commit the work tree as it is now with HEAD and `tracking` as parents; a tree that
/// is the remote's exactly just moves the branch there.
fn commit_merge(scope: &Scope, git: &Git, tracking: &str, message: &str) -> Result<(), GitError> {
    // What the merged `.gitignore` now names (a project that moved to a remote of its
    // own on another machine) leaves git and stays on disk.
    super::stage_travelling(scope, git)?;
    let tree = git.ok(&["write-tree"])?.trim().to_string();
    let head = git.ok(&["rev-parse", "HEAD"])?.trim().to_string();
    let their_tree = git.ok(&["rev-parse", &format!("{tracking}^{{tree}}")])?;
    let commit = if their_tree.trim() == tree {
        git.ok(&["rev-parse", tracking])?.trim().to_string()
    } else {
        git.ok(&[
            "commit-tree",
            &tree,
            "-p",
            &head,
            "-p",
            tracking,
            "-m",
            message,
        ])?
        .trim()
        .to_string()
    };
    // Only if the branch is still where this merge started from.
    git.ok(&["update-ref", "-m", message, "HEAD", &commit, &head])?;
    Ok(())
}

/// Make the work tree's `path` (a small file that travels) the remote's version
/// (`None`: it deleted it). One too large to be what it claims is left out.
fn take_small_file(root: &Path, path: &str, theirs: Option<&[u8]>) -> Result<(), SyncError> {
    let target = root.join(path);
    let io = |error: std::io::Error| SyncError::Io {
        path: target.clone(),
        error,
    };
    match theirs {
        Some(bytes) if bytes.len() as u64 > MAX_SMALL_FILE => {
            log::warn!(
                "sync: the remote's {path} is {} bytes, too large for what it is; left out",
                bytes.len()
            );
            Ok(())
        }
        Some(bytes) => {
            if let Some(folder) = target.parent() {
                std::fs::create_dir_all(folder).map_err(io)?;
            }
            atomic_write(&target, bytes, WriteMode::ATOMIC, None, None)
                .map(|_| ())
                .map_err(|e| io(std::io::Error::other(e.to_string())))
        }
        None => match std::fs::remove_file(&target) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io(e)),
            _ => Ok(()),
        },
    }
}

/// The held-back items of each graph file of `scope` that has any: `(graph file as
/// git names it, how many)`.
pub fn held_back_in(scope: &Scope) -> Vec<(String, usize)> {
    scope
        .graph_files()
        .into_iter()
        .filter_map(|path| {
            let file = kg_core::held_back_file(&scope.dir.join(&path));
            let bytes = kg_core::read_regular(&file, 64 << 20).ok()?;
            let value: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
            let n = value["items"].as_array().map_or(0, Vec::len);
            (n > 0).then_some((path, n))
        })
        .collect()
}

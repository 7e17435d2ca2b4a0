//! Merging the remote's commits while a server holds the root: into its store, not
//! through `git merge` in the work tree, which would rewrite files the server keeps in
//! memory (and its next save would write over the merge).
//!
//! Each graph file the remote changed is merged node by node (`kg_sync::merge`, as the
//! git driver merges) from the common ancestor, the graph as the store holds it now
//! and the remote's version, and the store takes the result in: saved through its
//! atomic write, recorded in the change log with the remote as origin. Then the work
//! tree, as it now is, is committed with both histories as parents. A crash in between
//! leaves merged files and an unmoved branch: the next sync commits them and merges
//! again, which changes nothing twice.

use super::git::{Git, GitError};
use super::{Scope, SyncError, incoming_checked, merge_message, remote_label};
use kg_core::{Store, WriteMode, atomic_write};
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
        let theirs = git.blob(tracking, path)?;
        let base_bytes = match &base {
            Some(base) => git.blob(base, path)?,
            None => None,
        };
        if let Some(in_store) = scope.graph_in_store(path) {
            let Some(theirs) = theirs else {
                // Deleting a whole graph is not something sync does to a machine.
                log::warn!("sync: {path} was deleted on {origin}; this machine keeps its copy");
                continue;
            };
            let merge = |current: Option<&[u8]>| match current {
                None => Ok(theirs.clone()),
                Some(ours) => kg_sync::merge(base_bytes.as_deref().unwrap_or(&[]), ours, &theirs)
                    .map(|merged| merged.text.into_bytes())
                    .map_err(|e| e.to_string()),
            };
            let taken = store.take_in(&in_store, &origin, now, merge).map_err(|e| {
                SyncError::MergeFailed {
                    files: vec![path.to_string()],
                    detail: e.to_string(),
                }
            })?;
            if !taken.is_empty() {
                log::info!(
                    "sync: {path} from {origin}: {} node(s) arrived or changed, {} deleted, {} edge change(s)",
                    taken.updated.len(),
                    taken.deleted.len(),
                    taken.edges
                );
            }
        } else if git.blob("HEAD", path)? == base_bytes {
            // Not a graph (our .gitattributes, a file a person added): theirs, unless
            // this machine changed it too, then ours.
            take_theirs(&scope.dir, path, theirs.as_deref())?;
        }
    }
    commit_merge(git, tracking, &merge_message(remote, branch, now))?;
    Ok(incoming)
}

/// Commit the work tree as it is now with HEAD and `tracking` as parents; a tree that
/// is the remote's exactly just moves the branch there.
fn commit_merge(git: &Git, tracking: &str, message: &str) -> Result<(), GitError> {
    super::stage_all(git)?;
    // What the merged `.gitignore` now names (a project that moved to a remote of its
    // own on another machine) leaves git and stays on disk.
    super::untrack_ignored(git)?;
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

/// Make the work tree's `path` the remote's version (`None`: it deleted it).
fn take_theirs(root: &Path, path: &str, theirs: Option<&[u8]>) -> Result<(), SyncError> {
    // A path git would never check out (outside the root, inside `.git`) stays out.
    let plain = Path::new(path).components().all(
        |c| matches!(c, std::path::Component::Normal(name) if !name.eq_ignore_ascii_case(".git")),
    );
    if !plain {
        log::warn!("sync: the remote's file {path:?} is not one sync writes; skipped");
        return Ok(());
    }
    let target = root.join(path);
    let io = |error: std::io::Error| SyncError::Io {
        path: target.clone(),
        error,
    };
    match theirs {
        Some(bytes) => atomic_write(&target, bytes, WriteMode::ATOMIC, None, None)
            .map(|_| ())
            .map_err(|e| io(std::io::Error::other(e.to_string()))),
        None => match std::fs::remove_file(&target) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io(e)),
            _ => Ok(()),
        },
    }
}

//! What `kg-memory sync status`, `GET /api/sync`, the tray and the view show: the
//! remote, the last sync and its error, what is ahead or behind, and the merge
//! conflicts the graph files hold. Read from the repository and the sync record; no
//! network.

use super::files::{Scope, SyncState};
use super::git::Git;
use super::{SyncError, configured_remote, has_ref, held_back_in, remote_label, synced_branch};
use std::fmt;

/// Unresolved merge conflicts per graph file in the work tree (files without any
/// are left out; a file that does not parse counts none here).
pub fn conflicts_in(scope: &Scope) -> Vec<(String, usize)> {
    scope
        .graph_files()
        .into_iter()
        .filter_map(|path| {
            let bytes = std::fs::read(scope.dir.join(&path)).ok()?;
            let file = kg_core::parse_graph(&bytes).ok()?;
            let n = kg_sync::unresolved_conflicts(&file.graph);
            (n > 0).then_some((path, n))
        })
        .collect()
}

/// What `kg-memory sync status` shows.
#[derive(Debug, Clone)]
pub struct SyncStatus {
    pub scope: Scope,
    /// `origin (url)`; `None` when sync is off.
    pub remote: Option<String>,
    pub branch: Option<String>,
    pub state: SyncState,
    /// Commits here and not on the remote, and there and not here, as of the last
    /// fetch; `None` before the first.
    pub ahead_behind: Option<(usize, usize)>,
    /// Files changed here since the last commit.
    pub uncommitted: usize,
    /// Unresolved merge conflicts per graph file.
    pub conflicts: Vec<(String, usize)>,
    /// Items held back from each graph file: content from a remote that broke a
    /// write rule.
    pub held_back: Vec<(String, usize)>,
}

/// The sync state of `scope`, from the repository and the sync record (no network).
pub fn status(scope: &Scope) -> Result<SyncStatus, SyncError> {
    let git = Git::new(&scope.dir);
    let mut status = SyncStatus {
        scope: scope.clone(),
        remote: None,
        branch: None,
        state: SyncState::load(&scope.dir),
        ahead_behind: None,
        uncommitted: 0,
        conflicts: Vec::new(),
        held_back: held_back_in(scope),
    };
    let remote = match configured_remote(scope, &git) {
        Ok(remote) => remote,
        // Off: nothing more to read (DEBT still counts conflicts a past sync left).
        Err(SyncError::NotSetUp { .. }) => return Ok(status),
        Err(e) => return Err(e),
    };
    status.remote = Some(remote_label(&git, &remote));
    // Parsing every graph: only for a repository that syncs.
    status.conflicts = conflicts_in(scope);
    let branch = synced_branch(&git)?;
    let tracking = format!("refs/remotes/{remote}/{branch}");
    if has_ref(&git, &tracking) {
        let counts = git.ok(&[
            "rev-list",
            "--left-right",
            "--count",
            &format!("HEAD...{tracking}"),
        ])?;
        let mut n = counts.split_whitespace().map(|n| n.parse().unwrap_or(0));
        status.ahead_behind = Some((n.next().unwrap_or(0), n.next().unwrap_or(0)));
    }
    status.branch = Some(branch);
    status.uncommitted = git.ok(&["status", "--porcelain"])?.lines().count();
    Ok(status)
}

impl SyncStatus {
    /// Unresolved merge conflicts across the graph files.
    pub fn conflict_count(&self) -> usize {
        self.conflicts.iter().map(|(_, n)| n).sum()
    }

    /// Items held back across the graph files.
    pub fn held_back_count(&self) -> usize {
        self.held_back.iter().map(|(_, n)| n).sum()
    }
}

impl fmt::Display for SyncStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let when = |ts: f64| crate::clock::local_minute(ts);
        let Some(remote) = &self.remote else {
            let project = match self.scope.project {
                Some(_) => "--project <its folder> ",
                None => "",
            };
            writeln!(
                f,
                "Sync: off for {}. Turn it on with `kg-memory sync setup {project}<remote>`.",
                self.scope.describe()
            )?;
            return Ok(());
        };
        writeln!(
            f,
            "Sync: on for {}, with the remote {remote}, branch {}",
            self.scope.describe(),
            self.branch.as_deref().unwrap_or("?")
        )?;
        match self.state.last_success {
            Some(ts) => writeln!(f, "Last sync: {}", when(ts))?,
            None => writeln!(f, "Last sync: never")?,
        }
        if let Some(error) = &self.state.last_error {
            let at = self.state.last_attempt.map(when).unwrap_or_default();
            writeln!(f, "Last attempt failed ({at}): {error}")?;
        }
        if let Some(since) = self.state.offline_since {
            writeln!(f, "Remote unreachable since {}", when(since))?;
        }
        match self.ahead_behind {
            Some((ahead, behind)) => writeln!(
                f,
                "Ahead: {ahead} commit(s) to send; behind: {behind} commit(s) to receive (as of the last fetch)"
            )?,
            None => writeln!(f, "Ahead/behind: unknown until the first successful fetch")?,
        }
        writeln!(
            f,
            "Local changes not yet committed: {} file(s)",
            self.uncommitted
        )?;
        self.write_conflicts(f)
    }
}

impl SyncStatus {
    fn write_conflicts(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "Merge conflicts to resolve: {}", self.conflict_count())?;
        for (path, n) in &self.conflicts {
            writeln!(
                f,
                "  {path}: {n} node note(s) starting \"{}\"",
                kg_sync::CONFLICT_NOTE_PREFIX.trim_end()
            )?;
        }
        if !self.held_back.is_empty() {
            writeln!(
                f,
                "Held back from the remote (it broke a write rule; never shown to an agent): {}",
                self.held_back_count()
            )?;
            for (path, n) in &self.held_back {
                let file = kg_core::held_back_file(&self.scope.dir.join(path));
                writeln!(
                    f,
                    "  {path}: {n} item(s), in {} (review, then delete the file)",
                    file.display()
                )?;
            }
        }
        Ok(())
    }
}

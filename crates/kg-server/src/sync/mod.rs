//! Git sync of the storage root: one memory across a person's machines.
//!
//! The storage root is a git repository with a remote. A sync ([`sync_once`]) commits
//! what changed here (as the autocommit does), fetches, merges the remote's branch —
//! graph files through `kg-memory merge-driver` (kg-sync's node-by-node merge), set
//! up by `.gitattributes` and the repository's git config — and pushes. Files that
//! belong to this machine (sessions, tool events, backups, quarantined files, the
//! lock) are git-ignored and never leave it.
//!
//! Safety: a remote graph file that does not parse is refused before anything is
//! merged; a merge git cannot finish is aborted, leaving the local files as they
//! were; an unreachable remote fails the sync with nothing lost (the local commit
//! stays and goes out with the next sync). Credentials are git's own.
//!
//! Sync writes graph files in the work tree, so it must not run beside a server that
//! holds the root: that server would keep its own copy in memory and save over the
//! merge. The CLI refuses then (see [`run`]).

mod cli;
mod files;
pub(crate) mod git;
mod live;
pub mod served;
mod status;

pub use cli::{SyncAction, SyncArgs, run};
pub use files::{STATE_FILE, Scope, SyncState, is_graph_path};
pub use git::GitError;
pub use status::{SyncStatus, conflicts_in, status};

use files::{DRIVER_NAME, read_graph};
use git::Git;
use kg_core::{WriteMode, atomic_write};
use std::fmt;
use std::path::{Path, PathBuf};

/// Which remote sync uses, in the repository's git config.
const CONFIG_REMOTE: &str = "kgsync.remote";
/// Which of the remote's branches it syncs with: the one the first machine pushed,
/// whatever this machine's own branch is called (`main` here, `master` there).
const CONFIG_BRANCH: &str = "kgsync.branch";
/// How many times a push refused because the remote moved on is retried (each time
/// after fetching and merging again).
const PUSH_ATTEMPTS: usize = 3;

/// Why a sync did not happen or did not finish. Whatever the cause, the local memory
/// is as it was before (plus, at most, a local commit of it).
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error("sync is not set up for {what}; run `kg-memory sync setup <remote>` first")]
    NotSetUp { what: String },
    #[error(
        "cannot reach the remote {remote} ({detail}). Nothing was lost: this machine's changes are committed locally and go out with the next sync"
    )]
    Unreachable { remote: String, detail: String },
    #[error(
        "the remote's {path} is not a readable memory graph ({cause}); nothing was merged and the local memory is untouched. Fix or revert that file on the remote (or on the machine that pushed it), then sync again"
    )]
    RemoteGraphUnreadable { path: String, cause: String },
    #[error(
        "git could not merge the remote's changes{} ({detail}); the merge was undone and the local memory is untouched",
        files_clause(files)
    )]
    MergeFailed { files: Vec<String>, detail: String },
    #[error(
        "the remote {remote} kept changing while this machine pushed ({detail}); nothing was lost, sync again"
    )]
    PushRaced { remote: String, detail: String },
    #[error(
        "cannot push to the remote {remote} ({detail}); nothing was lost, the changes stay committed here"
    )]
    PushFailed { remote: String, detail: String },
    #[error(
        "the remote {remote} has the branches {branches} and none is named {local} like this machine's; sync one of them by renaming this machine's branch (`git -C <storage root> branch -m <name>`), then run setup again"
    )]
    AmbiguousBranch {
        remote: String,
        local: String,
        branches: String,
    },
    #[error(transparent)]
    Git(#[from] GitError),
    // Not `source`: the cause is in the message, and an error chain would say it twice.
    #[error("cannot write {path}: {error}")]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
}

fn files_clause(files: &[String]) -> String {
    if files.is_empty() {
        String::new()
    } else {
        format!(" in {}", files.join(", "))
    }
}

/// What a sync did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SyncReport {
    /// Local changes were committed first.
    pub committed: bool,
    /// Commits that came in from the remote.
    pub received: usize,
    /// Commits sent to the remote.
    pub sent: usize,
    /// Merge-conflict notes the graph files hold now (see
    /// [`kg_sync::unresolved_conflicts`]).
    pub conflicts: usize,
}

impl SyncReport {
    /// Count `other` in: the report of several repositories' syncs.
    pub fn add(&mut self, other: &SyncReport) {
        self.committed |= other.committed;
        self.received += other.received;
        self.sent += other.sent;
        self.conflicts += other.conflicts;
    }
}

impl fmt::Display for SyncReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Synced: received {} commit(s), sent {}",
            self.received, self.sent
        )?;
        if self.conflicts > 0 {
            write!(
                f,
                ". {} merge conflict(s) to resolve: nodes edited on two machines keep the other gist in a note starting \"{}\"; read it, then edit or remove the note",
                self.conflicts,
                kg_sync::CONFLICT_NOTE_PREFIX.trim_end()
            )?;
        }
        Ok(())
    }
}

/// How a sync runs git.
#[derive(Debug, Clone)]
pub struct SyncOptions {
    /// The `kg-memory` executable git runs as the merge driver. The tray app passes
    /// the `kg-memory` beside it, not itself.
    pub driver_exe: PathBuf,
    /// Now, in seconds since the epoch (commit messages, the sync record).
    pub now: f64,
}

/// Make `scope` sync with `remote_url` under the remote name `remote_name`: a git
/// repository if it is not one, our `.gitattributes` and `.gitignore`, the merge
/// driver in its git config, the remote added; then one sync. A remote with no
/// branch yet receives this machine's memory.
pub fn setup(
    scope: &Scope,
    remote_name: &str,
    remote_url: &str,
    options: &SyncOptions,
) -> Result<SyncReport, SyncError> {
    let io = |error| SyncError::Io {
        path: scope.dir.clone(),
        error,
    };
    std::fs::create_dir_all(&scope.dir).map_err(io)?;
    let git = Git::new(&scope.dir);
    if !scope.dir.join(".git").is_dir() {
        git.ok(&["init", "--quiet", "--initial-branch=main"])?;
    }
    scope.write_git_files().map_err(io)?;
    untrack_ignored(&git)?;
    match git.ok(&["remote", "get-url", remote_name]) {
        Ok(url) if url.trim() == remote_url => {}
        Ok(_) => {
            git.ok(&["remote", "set-url", remote_name, remote_url])?;
        }
        Err(_) => {
            git.ok(&["remote", "add", remote_name, remote_url])?;
        }
    }
    git.ok(&["config", CONFIG_REMOTE, remote_name])?;
    let branch = remote_branch_for(&git, remote_name)?;
    git.ok(&["config", CONFIG_BRANCH, &branch])?;
    sync_once(scope, options)
}

/// The remote's branch to sync with: the one named as this machine's branch if the
/// remote has it, else the remote's only branch; this machine's branch name when the
/// remote has none yet.
fn remote_branch_for(git: &Git, remote: &str) -> Result<String, SyncError> {
    let local = current_branch(git)?;
    git.remote(&["fetch", "--quiet", "--prune", remote])
        .map_err(|e| SyncError::Unreachable {
            remote: remote_label(git, remote),
            detail: e.stderr_or_what(),
        })?;
    let prefix = format!("refs/remotes/{remote}/");
    let listed = git.ok(&["for-each-ref", "--format=%(refname)", &prefix])?;
    let branches: Vec<&str> = listed
        .lines()
        .filter_map(|r| r.strip_prefix(&prefix))
        .filter(|b| *b != "HEAD")
        .collect();
    match branches.as_slice() {
        [] => Ok(local),
        _ if branches.contains(&local.as_str()) => Ok(local),
        [only] => Ok((*only).to_string()),
        several => Err(SyncError::AmbiguousBranch {
            remote: remote_label(git, remote),
            local,
            branches: several.join(", "),
        }),
    }
}

/// Files the repository tracked before they were ignored (an autocommitted
/// `sessions.json`): taken out of git, kept on disk.
fn untrack_ignored(git: &Git) -> Result<(), GitError> {
    let listed = git.ok(&[
        "ls-files",
        "-z",
        "--cached",
        "--ignored",
        "--exclude-standard",
    ])?;
    let tracked: Vec<&str> = listed.split('\0').filter(|p| !p.is_empty()).collect();
    if tracked.is_empty() {
        return Ok(());
    }
    let mut args = vec!["rm", "--cached", "--quiet", "--"];
    args.extend(tracked);
    git.ok(&args).map(|_| ())
}

/// The remote sync uses in `scope`, or why there is none.
fn configured_remote(scope: &Scope, git: &Git) -> Result<String, SyncError> {
    let not_set_up = || SyncError::NotSetUp {
        what: scope.describe(),
    };
    if !scope.dir.join(".git").is_dir() {
        return Err(not_set_up());
    }
    let name = git
        .ok(&["config", CONFIG_REMOTE])
        .map_err(|_| not_set_up())?;
    let name = name.trim().to_string();
    if name.is_empty() || git.ok(&["remote", "get-url", &name]).is_err() {
        return Err(not_set_up());
    }
    Ok(name)
}

/// The branch checked out in the root.
fn current_branch(git: &Git) -> Result<String, GitError> {
    Ok(git
        .ok(&["symbolic-ref", "--quiet", "--short", "HEAD"])?
        .trim()
        .to_string())
}

/// The remote's branch sync uses: as set up, else the one named like this machine's.
fn synced_branch(git: &Git) -> Result<String, GitError> {
    match git.ok(&["config", CONFIG_BRANCH]) {
        Ok(name) if !name.trim().is_empty() => Ok(name.trim().to_string()),
        _ => current_branch(git),
    }
}

/// How the remote's commits are merged into this machine's.
#[derive(Clone, Copy)]
enum Merger<'a> {
    /// `git merge` in the work tree, graph files through our merge driver: nobody
    /// holds the graphs in memory.
    Git,
    /// The running server's store takes each graph file in (see [`sync_live`]).
    Store(&'a kg_core::Store),
}

/// Commit, fetch, merge, push once, with no server holding the root. Records the
/// outcome in the repository's sync record.
pub fn sync_once(scope: &Scope, options: &SyncOptions) -> Result<SyncReport, SyncError> {
    sync_recorded(scope, options, Merger::Git)
}

/// [`sync_once`] for the server that holds the root and keeps its graphs in `store`:
/// its graphs are saved and committed, and what the remote brings is merged into
/// them through the store, so requests are served throughout, a write made during
/// the sync is kept, and sessions, `kg_sync` and live views see what arrived.
pub fn sync_live(
    scope: &Scope,
    store: &kg_core::Store,
    options: &SyncOptions,
) -> Result<SyncReport, SyncError> {
    store.flush();
    sync_recorded(scope, options, Merger::Store(store))
}

/// Whether `scope` syncs with a remote (a cheap look at its git config; no network).
pub fn is_on(scope: &Scope) -> bool {
    configured_remote(scope, &Git::new(&scope.dir)).is_ok()
}

/// The repositories of the storage root `root` that sync: the root itself and the
/// projects with a remote of their own.
pub fn synced_scopes(root: &Path) -> Vec<Scope> {
    std::iter::once(Scope::storage_root(root))
        .chain(Scope::projects(root))
        .filter(is_on)
        .collect()
}

/// Whether anything in the storage root `root` syncs.
pub fn any_on(root: &Path) -> bool {
    !synced_scopes(root).is_empty()
}

fn sync_recorded(
    scope: &Scope,
    options: &SyncOptions,
    merger: Merger<'_>,
) -> Result<SyncReport, SyncError> {
    let result = sync_steps(scope, options, merger);
    let mut state = SyncState::load(&scope.dir);
    state.last_attempt = Some(options.now);
    match &result {
        Ok(_) => {
            state.last_success = Some(options.now);
            state.last_error = None;
            state.offline_since = None;
        }
        Err(SyncError::NotSetUp { .. }) => return result,
        Err(e) => {
            state.last_error = Some(e.to_string());
            if matches!(e, SyncError::Unreachable { .. }) {
                state.offline_since.get_or_insert(options.now);
            } else {
                state.offline_since = None;
            }
        }
    }
    state.save(&scope.dir);
    result
}

fn sync_steps(
    scope: &Scope,
    options: &SyncOptions,
    merger: Merger<'_>,
) -> Result<SyncReport, SyncError> {
    let git = Git::new(&scope.dir).with_identity();
    let remote = configured_remote(scope, &git)?;
    clear_stale_index_lock(&scope.dir);
    configure_driver(&git, &options.driver_exe)?;
    // A root set up by an older version learns the files it must not share.
    if scope.write_git_files().map_err(|error| SyncError::Io {
        path: scope.dir.clone(),
        error,
    })? {
        untrack_ignored(&git)?;
    }
    let branch = synced_branch(&git)?;
    let mut report = SyncReport {
        committed: commit_local(&git, options.now)?,
        ..SyncReport::default()
    };
    let tracking = format!("refs/remotes/{remote}/{branch}");
    for attempt in 1..=PUSH_ATTEMPTS {
        git.remote(&["fetch", "--quiet", "--prune", &remote])
            .map_err(|e| SyncError::Unreachable {
                remote: remote_label(&git, &remote),
                detail: e.stderr_or_what(),
            })?;
        if has_ref(&git, &tracking) {
            report.received += match merger {
                Merger::Git => merge_remote(scope, &git, &remote, &branch, &tracking, options.now)?,
                Merger::Store(store) => live::merge_into_store(
                    scope,
                    &git,
                    store,
                    (&remote, &branch, &tracking),
                    options.now,
                )?,
            };
        }
        let outgoing = if has_ref(&git, &tracking) {
            count(&git, &format!("{tracking}..HEAD"))?
        } else {
            count(&git, "HEAD")?
        };
        if outgoing == 0 {
            break;
        }
        let refspec = format!("HEAD:refs/heads/{branch}");
        match git.remote(&["push", "--quiet", &remote, &refspec]) {
            Ok(_) => {
                report.sent = outgoing;
                // Record what the remote now holds, for `sync status`.
                let _ = git.remote(&["fetch", "--quiet", &remote]);
                break;
            }
            Err(e) if is_rejected(&e) && attempt < PUSH_ATTEMPTS => continue,
            Err(e) if is_rejected(&e) => {
                return Err(SyncError::PushRaced {
                    remote: remote_label(&git, &remote),
                    detail: e.stderr_or_what(),
                });
            }
            Err(e) => {
                return Err(SyncError::PushFailed {
                    remote: remote_label(&git, &remote),
                    detail: e.stderr_or_what(),
                });
            }
        }
    }
    report.conflicts = conflicts_in(scope).iter().map(|(_, n)| n).sum();
    Ok(report)
}

impl GitError {
    /// The command and what went wrong, on one line (for a log).
    pub fn one_line(&self) -> String {
        format!("`git {}`: {}", self.command, self.stderr_or_what())
    }

    /// Git's own words when it said any, else ours.
    fn stderr_or_what(&self) -> String {
        if self.stderr.is_empty() {
            self.what.clone()
        } else {
            self.stderr.replace('\n', " ")
        }
    }
}

/// `origin (git@host:me/memory.git)`.
fn remote_label(git: &Git, remote: &str) -> String {
    match git.ok(&["remote", "get-url", remote]) {
        Ok(url) => format!("{remote} ({})", url.trim()),
        Err(_) => remote.to_string(),
    }
}

/// Point the driver at `exe` (the path can change between versions, so it is set
/// on every sync).
fn configure_driver(git: &Git, exe: &Path) -> Result<(), SyncError> {
    let exe = exe.to_string_lossy();
    // Git runs the driver through the shell.
    let quoted = shlex::try_quote(&exe).map_err(|e| SyncError::Io {
        path: PathBuf::from(exe.as_ref()),
        error: std::io::Error::other(format!("cannot quote this path for git: {e}")),
    })?;
    let driver = format!("{quoted} merge-driver %O %A %B %P");
    let name_key = format!("merge.{DRIVER_NAME}.name");
    let driver_key = format!("merge.{DRIVER_NAME}.driver");
    git.ok(&["config", &name_key, "KG Memory graph merge (node by node)"])?;
    git.ok(&["config", &driver_key, &driver])?;
    Ok(())
}

/// Commit the storage root `root` if it is a git repository and something changed
/// (the autocommit, synced or not): whether a commit was made. Where git knows no
/// author, KG Memory is the author, as for a sync's commits.
pub fn commit_storage_root(root: &Path, now: f64) -> Result<bool, GitError> {
    if !root.join(".git").is_dir() {
        return Ok(false); // checked every time, so a later `git init` is picked up
    }
    commit_local(&Git::new(root).with_identity(), now)
}

/// Commit everything changed here but the server's lock file (it says which process
/// serves the root now: not history). Whether a commit was made.
fn commit_local(git: &Git, now: f64) -> Result<bool, GitError> {
    let lock = crate::root_lock::LOCK_FILE;
    let exclude = format!(":(exclude){lock}");
    let status = git.ok(&["status", "--porcelain", "--", ".", &exclude])?;
    if status.trim().is_empty() {
        return Ok(false);
    }
    let message = format!("Auto-save {}", crate::clock::local_minute(now));
    stage_all(git)?;
    // Staged, then taken out again: in a root that is not synced, no .gitignore
    // keeps it out (naming it in an exclude would make `git add` refuse where one does).
    git.ok(&["rm", "-q", "--cached", "--ignore-unmatch", "--", lock])?;
    git.ok(&["commit", "--quiet", "--no-verify", "-m", &message])?;
    Ok(true)
}

/// A git command killed with its machine (a power cut) leaves `.git/index.lock`, and
/// every later commit would fail on it. One older than any git command of ours may
/// take is left from such a crash: removed, and said.
fn clear_stale_index_lock(dir: &Path) {
    let lock = dir.join(".git").join("index.lock");
    let age = std::fs::metadata(&lock)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok());
    if age.is_some_and(|age| age > git::LOCAL_TIMEOUT * 2) {
        match std::fs::remove_file(&lock) {
            Ok(()) => log::warn!(
                "sync: removed {}, left by a git command that did not finish",
                lock.display()
            ),
            Err(e) => log::warn!("sync: cannot remove the stale {}: {e}", lock.display()),
        }
    }
}

/// Stage every change of the work tree. The lock file and the other machine-local
/// files stay out through our `.gitignore` (naming the lock in an exclude as well
/// makes git refuse, since it is ignored).
fn stage_all(git: &Git) -> Result<(), GitError> {
    git.ok(&["add", "-A", "--", "."]).map(|_| ())
}

fn has_ref(git: &Git, name: &str) -> bool {
    git.ok(&["rev-parse", "--verify", "--quiet", name]).is_ok()
}

fn count(git: &Git, range: &str) -> Result<usize, GitError> {
    Ok(git
        .ok(&["rev-list", "--count", range])?
        .trim()
        .parse()
        .unwrap_or(0))
}

fn is_rejected(e: &GitError) -> bool {
    ["rejected", "non-fast-forward", "fetch first"]
        .iter()
        .any(|s| e.stderr.contains(s))
}

/// Merge the remote's branch into HEAD; how many commits came in. Graph files the
/// remote changed are read first, and one that does not parse refuses the merge
/// before it starts; a merge git cannot finish is aborted.
fn merge_remote(
    scope: &Scope,
    git: &Git,
    remote: &str,
    branch: &str,
    tracking: &str,
    now: f64,
) -> Result<usize, SyncError> {
    let incoming = incoming_checked(scope, git, tracking)?;
    if incoming == 0 {
        return Ok(0);
    }
    let kept = graphs_they_deleted(scope, git, tracking)?;
    let message = merge_message(remote, branch, now);
    let merged = git.ok(&[
        "merge",
        "--quiet",
        "--no-edit",
        "--no-verify",
        "--allow-unrelated-histories",
        "-m",
        &message,
        tracking,
    ]);
    if let Err(e) = merged {
        let files: Vec<String> = git
            .ok(&["diff", "--name-only", "--diff-filter=U"])
            .map(|out| out.lines().map(str::to_string).collect())
            .unwrap_or_default();
        // Graphs the remote deleted and this machine changed stop git's merge: this
        // machine's version stays (below), and the merge goes on.
        let only_kept_graphs = !files.is_empty()
            && files
                .iter()
                .all(|file| kept.iter().any(|(path, _)| path == file));
        if only_kept_graphs {
            keep_graphs(scope, git, &kept, now)?;
            return Ok(incoming);
        }
        // Undo the half-done merge: the work tree returns to the local commit.
        if git.ok(&["merge", "--abort"]).is_err() {
            // `--abort` needs a merge in progress; one that failed before starting
            // left nothing to undo, but make sure of it.
            let _ = git.ok(&["reset", "--merge"]);
        }
        return Err(SyncError::MergeFailed {
            files,
            detail: e.stderr_or_what(),
        });
    }
    keep_graphs(scope, git, &kept, now)?;
    Ok(incoming)
}

/// The graph files the remote deleted since the common ancestor that this machine
/// still has, with their bytes here. Sync never deletes a whole graph from a machine
/// (the live merge keeps them too): a project that moved to a remote of its own on
/// another machine leaves the storage root's repository, not this machine's memory.
fn graphs_they_deleted(
    scope: &Scope,
    git: &Git,
    tracking: &str,
) -> Result<Vec<(String, Vec<u8>)>, GitError> {
    let Ok(base) = git.ok(&["merge-base", "HEAD", tracking]) else {
        return Ok(Vec::new()); // histories that never met delete nothing
    };
    let deleted = git.ok(&[
        "diff",
        "--name-only",
        "-z",
        "--no-renames",
        "--diff-filter=D",
        base.trim(),
        tracking,
    ])?;
    let mut kept = Vec::new();
    for path in deleted.split('\0').filter(|p| !p.is_empty()) {
        if scope.graph_in_store(path).is_some()
            && let Some(bytes) = git.blob("HEAD", path)?
        {
            kept.push((path.to_string(), bytes));
        }
    }
    Ok(kept)
}

/// After git's merge: each graph of `kept` is on disk as this machine had it, and
/// tracked unless the merged `.gitignore` names it; a merge git stopped at them is
/// concluded, and a graph put back is committed.
fn keep_graphs(
    scope: &Scope,
    git: &Git,
    kept: &[(String, Vec<u8>)],
    now: f64,
) -> Result<(), SyncError> {
    if kept.is_empty() {
        return Ok(());
    }
    for (path, bytes) in kept {
        let file = scope.dir.join(path);
        if file.exists() {
            continue; // git left this machine's version (a modify/delete conflict)
        }
        log::warn!("sync: {path} was deleted on the remote; this machine keeps its copy");
        atomic_write(&file, bytes, WriteMode::ATOMIC, None, None).map_err(|e| SyncError::Io {
            path: file.clone(),
            error: std::io::Error::other(e.to_string()),
        })?;
    }
    stage_all(git)?;
    untrack_ignored(git)?;
    if has_ref(git, "MERGE_HEAD") {
        git.ok(&["commit", "--quiet", "--no-edit", "--no-verify"])?;
    } else if git.ok(&["diff", "--cached", "--quiet"]).is_err() {
        let message = format!(
            "Sync {}: keep the graphs the remote deleted",
            crate::clock::local_minute(now)
        );
        git.ok(&["commit", "--quiet", "--no-verify", "-m", &message])?;
    }
    Ok(())
}

/// How many of the remote's commits are not merged here yet; when there are any, the
/// remote's graph files are checked first (see [`check_remote_graphs`]).
fn incoming_checked(scope: &Scope, git: &Git, tracking: &str) -> Result<usize, SyncError> {
    let incoming = count(git, &format!("HEAD..{tracking}"))?;
    if incoming > 0 {
        check_remote_graphs(scope, git, tracking)?;
    }
    Ok(incoming)
}

/// The message of a sync's merge commit.
fn merge_message(remote: &str, branch: &str, now: f64) -> String {
    format!(
        "Sync {}: merge {remote}/{branch}",
        crate::clock::local_minute(now)
    )
}

/// Refuse the remote's branch when a graph file it changed does not read as a graph:
/// git would take such a file as it is when only the remote changed it.
fn check_remote_graphs(scope: &Scope, git: &Git, tracking: &str) -> Result<(), SyncError> {
    let changed = git.ok(&[
        "diff",
        "--name-only",
        "-z",
        "--no-renames",
        "HEAD",
        tracking,
    ])?;
    for path in changed
        .split('\0')
        .filter(|p| scope.graph_in_store(p).is_some())
    {
        let spec = format!("{tracking}:{path}");
        // Deleted on the remote: nothing to read (the merge decides).
        if git.ok(&["cat-file", "-e", &spec]).is_err() {
            continue;
        }
        let out = git.run(&["cat-file", "blob", &spec], git::LOCAL_TIMEOUT)?;
        if let Err(cause) = read_graph(&out.bytes) {
            return Err(SyncError::RemoteGraphUnreadable {
                path: path.to_string(),
                cause,
            });
        }
    }
    Ok(())
}

/// Stop syncing `scope`: the remote and the driver are removed from its git config.
/// The memory, its git history and the autocommit stay. Whether sync was on.
pub fn off(scope: &Scope) -> Result<bool, SyncError> {
    let git = Git::new(&scope.dir);
    let remote = match configured_remote(scope, &git) {
        Ok(remote) => Some(remote),
        Err(SyncError::NotSetUp { .. }) if scope.dir.join(".git").is_dir() => None,
        Err(SyncError::NotSetUp { .. }) => return Ok(false),
        Err(e) => return Err(e),
    };
    if let Some(remote) = &remote {
        git.ok(&["remote", "remove", remote])?;
    }
    for section in ["kgsync", &format!("merge.{DRIVER_NAME}")] {
        // Absent sections are fine: `off` twice is no error.
        let _ = git.ok(&["config", "--remove-section", section]);
    }
    Ok(remote.is_some())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, SystemTime};

    #[test]
    fn only_an_index_lock_older_than_any_git_command_is_removed() {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir_all(dir.path().join(".git")).expect(".git");
        let lock = dir.path().join(".git/index.lock");
        std::fs::write(&lock, b"").expect("lock");
        clear_stale_index_lock(dir.path());
        assert!(lock.exists(), "a fresh lock belongs to a running git");
        let old = SystemTime::now() - git::LOCAL_TIMEOUT * 2 - Duration::from_secs(1);
        std::fs::File::options()
            .write(true)
            .open(&lock)
            .and_then(|f| f.set_modified(old))
            .expect("age the lock");
        clear_stale_index_lock(dir.path());
        assert!(!lock.exists(), "a lock from a crash is removed");
    }
}

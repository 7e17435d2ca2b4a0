//! Git sync of the storage root: one memory across a person's machines.
//!
//! The storage root is a git repository with a remote. A sync commits what changed
//! here, fetches, merges the remote's branch into the graphs the store holds (node by
//! node, kg-sync's merge; see `live`) and pushes.
//!
//! A remote is a stranger: what it sends is checked before anything is taken.
//! - Only graph files travel, with `.gitignore` and each project's recorded git
//!   remote ([`Scope::travels`]): the lock, sessions, tool events, aliases, path maps,
//!   backups, quarantined files and git's temporaries are never committed and never
//!   taken from a remote. Commits stage those paths one by one, never `git add -A`.
//! - A remote tree holding a symbolic link, a submodule or any other non-regular file
//!   is refused before anything is merged; so is a graph file that does not parse or
//!   is larger than a graph may grow.
//! - Every graph that arrives is screened against the write rules before it is
//!   merged (`kg_core::screen_incoming`); what breaks a rule is held back, never
//!   rendered.
//! - Git never checks out a remote's tree: our merge writes the files, so a remote's
//!   `.gitattributes` cannot filter, re-encode or line-merge a graph. Our attributes
//!   and config live in `.git/info/attributes` and the repository config, which
//!   outrank the tree, for a person's own git commands too.
//! - git's copies of the memory are the owner's only (`core.sharedRepository`, an
//!   owner-only `.git`).
//!
//! A merge that cannot finish, or a remote that cannot be reached, leaves the local
//! memory as it was (plus, at most, a local commit of it). Credentials are git's own.

mod files;
mod git;
mod live;
mod status;

pub use files::{STATE_FILE, Scope, SyncState, ignore_in_storage_root, is_graph_path};
pub use git::{Git, GitError, NETWORK_TIMEOUT};
pub use live::held_back_in;
pub use status::{SyncStatus, conflicts_in, status};

use files::{DRIVER_NAME, REPOSITORY_CONFIG, Travel, read_graph};
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
        "the remote's {path:?} is {what}, not a plain file; sync takes only plain files, so nothing was merged and the local memory is untouched. Remove it from the remote (or from the machine that pushed it), then sync again"
    )]
    RemoteTreeRefused { path: String, what: String },
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
    store: &kg_core::Store,
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
    harden(scope, &git)?;
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
    sync_live(scope, store, options)
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

/// Commit, fetch, merge, push once, in the process that holds the storage root and
/// keeps its graphs in `store` (the server, or a `kg-memory sync` command that opened
/// the store under the root's lock): its graphs are saved and committed, and what the
/// remote brings is screened and merged into them through the store, so requests are
/// served throughout, a write made during the sync is kept, and sessions, `kg_sync`
/// and live views see what arrived. Records the outcome in the repository's sync
/// record.
pub fn sync_live(
    scope: &Scope,
    store: &kg_core::Store,
    options: &SyncOptions,
) -> Result<SyncReport, SyncError> {
    store.flush();
    let result = sync_steps(scope, store, options);
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

fn sync_steps(
    scope: &Scope,
    store: &kg_core::Store,
    options: &SyncOptions,
) -> Result<SyncReport, SyncError> {
    let git = Git::new(&scope.dir).with_identity();
    let remote = configured_remote(scope, &git)?;
    recover_from_a_killed_git(&scope.dir);
    configure_driver(&git, &options.driver_exe)?;
    // A root set up by an older version learns our attributes and its own files.
    scope.write_git_files().map_err(|error| SyncError::Io {
        path: scope.dir.clone(),
        error,
    })?;
    harden(scope, &git)?;
    let branch = synced_branch(&git)?;
    let mut report = SyncReport {
        committed: commit_local(scope, &git, options.now)?,
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
            report.received += live::merge_into_store(
                scope,
                &git,
                store,
                (&remote, &branch, &tracking),
                options.now,
            )?;
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
/// author, KG Memory is the author, as for a sync's commits. Only what travels is
/// committed (see [`Scope::travels`]).
pub fn commit_storage_root(root: &Path, now: f64) -> Result<bool, GitError> {
    if !root.join(".git").is_dir() {
        return Ok(false); // checked every time, so a later `git init` is picked up
    }
    commit_local(
        &Scope::storage_root(root),
        &Git::new(root).with_identity(),
        now,
    )
}

/// Commit what travels and changed here: whether a commit was made.
fn commit_local(scope: &Scope, git: &Git, now: f64) -> Result<bool, GitError> {
    stage_travelling(scope, git)?;
    if git.ok(&["diff", "--cached", "--quiet"]).is_ok() {
        return Ok(false);
    }
    let message = format!("Auto-save {}", crate::clock::local_minute(now));
    git.ok(&["commit", "--quiet", "--no-verify", "-m", &message])?;
    Ok(true)
}

/// Make the index hold exactly what travels, as the work tree has it: each graph file
/// that reads as a graph within the size bound, `.gitignore` and the recorded remotes
/// (regular files only, none that `.gitignore` names). Everything else that is
/// tracked leaves the index and stays on disk: a lock file, a session registry or a
/// `.merge_file_*` that an older version or a remote committed. A graph file that
/// does not read as one keeps the last commit's version in the index, so it is never
/// committed; its path is returned and logged.
fn stage_travelling(scope: &Scope, git: &Git) -> Result<Vec<String>, GitError> {
    let listed = |args: &[&str]| -> Result<Vec<String>, GitError> {
        Ok(git
            .ok(args)?
            .split('\0')
            .filter(|p| !p.is_empty())
            .map(str::to_string)
            .collect())
    };
    let tracked = listed(&["ls-files", "-z", "--cached"])?;
    let candidates = scope.travelling_files();
    let ignored = ignored_among(git, &candidates)?;
    let mut add = Vec::new();
    let mut refused = Vec::new();
    for path in candidates {
        if ignored.contains(&path) {
            continue;
        }
        match fits_to_travel(scope, &path) {
            Ok(()) => add.push(path),
            Err(cause) => {
                log::warn!(
                    "sync: {path} is not committed: {cause}; the last commit's version stays until it reads as a graph again"
                );
                refused.push(path);
            }
        }
    }
    let leave: Vec<&str> = tracked
        .iter()
        .filter(|p| !add.contains(p) && !refused.contains(p))
        .map(String::as_str)
        .collect();
    for chunk in leave.chunks(200) {
        let mut args = vec!["rm", "--cached", "--quiet", "--ignore-unmatch", "--"];
        args.extend(chunk);
        git.ok(&args)?;
    }
    for chunk in add.chunks(200) {
        let mut args = vec!["add", "--"];
        args.extend(chunk.iter().map(String::as_str));
        git.ok(&args)?;
    }
    Ok(refused)
}

/// Which of `paths` a `.gitignore` (or `.git/info/exclude`) names, tracked or not:
/// what the merged `.gitignore` names (a project that moved to a remote of its own on
/// another machine) leaves git and stays on disk.
fn ignored_among(
    git: &Git,
    paths: &[String],
) -> Result<std::collections::HashSet<String>, GitError> {
    let mut ignored = std::collections::HashSet::new();
    for chunk in paths.chunks(200) {
        let mut args = vec![
            "-c",
            "core.quotePath=false",
            "check-ignore",
            "--no-index",
            "--",
        ];
        args.extend(chunk.iter().map(String::as_str));
        match git.ok(&args) {
            Ok(out) => ignored.extend(out.lines().filter(|p| !p.is_empty()).map(str::to_string)),
            // Exit status 1 and nothing said: none of them is ignored.
            Err(e) if e.stderr.is_empty() => {}
            Err(e) => return Err(e),
        }
    }
    Ok(ignored)
}

/// Whether the work tree's `path` (one that travels) may be committed: a graph file
/// must read as a graph within the size bound, a small file must be small.
fn fits_to_travel(scope: &Scope, path: &str) -> Result<(), String> {
    let file = scope.dir.join(path);
    match scope.travels(path) {
        Travel::Graph => {
            let bytes = std::fs::read(&file).map_err(|e| e.to_string())?;
            if bytes.len() > kg_core::MAX_GRAPH_BYTES {
                return Err(format!(
                    "it is {} bytes, past the {} a graph may hold",
                    bytes.len(),
                    kg_core::MAX_GRAPH_BYTES
                ));
            }
            read_graph(&bytes).map(drop)
        }
        _ => {
            let size = std::fs::metadata(&file).map_err(|e| e.to_string())?.len();
            if size > files::MAX_SMALL_FILE {
                return Err(format!("it is {size} bytes, too large for what it is"));
            }
            Ok(())
        }
    }
}

/// Keep git's copies of the memory private and its settings ours: the repository
/// config sync relies on, and an owner-only `.git`.
fn harden(scope: &Scope, git: &Git) -> Result<(), SyncError> {
    for (key, value) in REPOSITORY_CONFIG {
        git.ok(&["config", key, value])?;
    }
    let dot_git = scope.dir.join(".git");
    crate::permissions::owner_only(&dot_git).map_err(|error| SyncError::Io {
        path: dot_git,
        error,
    })
}

/// What a `git` killed mid-way (with its machine, or with a `kg-memory sync` a person
/// stopped) leaves behind: `.git/index.lock`, on which every later commit would fail,
/// and the merge driver's `.merge_file_*` copies. Sync runs only in the process that
/// holds the storage root, one at a time, so no git of ours runs now: a lock no
/// process has open is a leftover and goes, said in the log. (Where the open files of
/// processes cannot be seen, only a lock older than any git command of ours may take.)
fn recover_from_a_killed_git(dir: &Path) {
    let lock = dir.join(".git").join("index.lock");
    if let Ok(meta) = std::fs::symlink_metadata(&lock) {
        let stale = match git::open_by_any_process(&lock) {
            Some(open) => !open,
            None => meta
                .modified()
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age > git::LOCAL_TIMEOUT * 2),
        };
        if stale {
            match std::fs::remove_file(&lock) {
                Ok(()) => log::warn!(
                    "sync: removed {}, left by a git command that did not finish",
                    lock.display()
                ),
                Err(e) => log::warn!("sync: cannot remove the stale {}: {e}", lock.display()),
            }
        }
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        if entry
            .file_name()
            .to_string_lossy()
            .starts_with(".merge_file_")
            && entry.file_type().is_ok_and(|t| t.is_file())
            && git::open_by_any_process(&entry.path()) != Some(true)
        {
            log::warn!("sync: removed git's leftover {}", entry.path().display());
            let _ = std::fs::remove_file(entry.path());
        }
    }
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

/// How many of the remote's commits are not merged here yet; when there are any, the
/// remote's tree is checked first (see [`check_remote_tree`]).
fn incoming_checked(scope: &Scope, git: &Git, tracking: &str) -> Result<usize, SyncError> {
    let incoming = count(git, &format!("HEAD..{tracking}"))?;
    if incoming > 0 {
        check_remote_tree(scope, git, tracking)?;
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

/// Refuse the remote's branch before anything is merged when its tree holds anything
/// but plain files (a symbolic link, which a path map could point a project at so
/// that its graph is written outside the storage root; a submodule), or a graph file
/// that is too large or does not read as a graph.
fn check_remote_tree(scope: &Scope, git: &Git, tracking: &str) -> Result<(), SyncError> {
    let listing = git.run(
        &["ls-tree", "-r", "-z", "--full-tree", "-l", tracking],
        git::LOCAL_TIMEOUT,
    )?;
    for entry in listing.stdout.split('\0').filter(|e| !e.is_empty()) {
        // `<mode> <type> <object> <size>\t<path>`
        let Some((meta, path)) = entry.split_once('\t') else {
            continue;
        };
        let mut fields = meta.split_whitespace();
        let mode = fields.next().unwrap_or("");
        let size: u64 = fields.nth(2).and_then(|s| s.parse().ok()).unwrap_or(0);
        let what = match mode {
            "100644" | "100755" => None,
            "120000" => Some("a symbolic link"),
            "160000" => Some("a submodule (another repository)"),
            _ => Some("not a regular file"),
        };
        if let Some(what) = what {
            return Err(SyncError::RemoteTreeRefused {
                path: crate::terminal::safe(path).into_owned(),
                what: what.to_string(),
            });
        }
        if scope.travels(path) != Travel::Graph {
            continue;
        }
        if size > kg_core::MAX_GRAPH_BYTES as u64 {
            return Err(SyncError::RemoteGraphUnreadable {
                path: path.to_string(),
                cause: format!(
                    "it is {size} bytes, past the {} a graph may hold",
                    kg_core::MAX_GRAPH_BYTES
                ),
            });
        }
        let Some(bytes) = git.blob(tracking, path)? else {
            continue;
        };
        if let Err(cause) = read_graph(&bytes) {
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
    fn an_index_lock_no_process_holds_is_removed_and_one_held_open_stays() {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir_all(dir.path().join(".git")).expect(".git");
        let lock = dir.path().join(".git/index.lock");
        let held = std::fs::File::create(&lock).expect("lock");
        if git::open_by_any_process(&lock).is_some() {
            recover_from_a_killed_git(dir.path());
            assert!(
                lock.exists(),
                "a lock a process holds open belongs to a running git"
            );
            drop(held);
            recover_from_a_killed_git(dir.path());
            assert!(!lock.exists(), "a lock nobody holds is a leftover");
        } else {
            // No way to see open files here: only an old lock goes.
            drop(held);
            recover_from_a_killed_git(dir.path());
            assert!(lock.exists(), "a fresh lock may belong to a running git");
            let old = SystemTime::now() - git::LOCAL_TIMEOUT * 2 - Duration::from_secs(1);
            std::fs::File::options()
                .write(true)
                .open(&lock)
                .and_then(|f| f.set_modified(old))
                .expect("age the lock");
            recover_from_a_killed_git(dir.path());
            assert!(!lock.exists(), "a lock from a crash is removed");
        }
    }
}

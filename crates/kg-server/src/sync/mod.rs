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

mod files;
mod git;

pub use files::{STATE_FILE, SyncState, is_graph_path};
pub use git::GitError;

use files::{DRIVER_NAME, graph_files, read_graph, write_git_files};
use git::{Git, NETWORK_TIMEOUT};
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
    #[error(
        "sync is not set up for {}; run `kg-memory sync setup <remote>` first",
        root.display()
    )]
    NotSetUp { root: PathBuf },
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
    #[error("cannot write {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
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

/// Make `root` sync with `remote_url` under the remote name `remote_name`: a git
/// repository if it is not one, our `.gitattributes` and `.gitignore`, the merge
/// driver in its git config, the remote added; then one sync. A remote with no
/// branch yet receives this machine's memory.
pub fn setup(
    root: &Path,
    remote_name: &str,
    remote_url: &str,
    options: &SyncOptions,
) -> Result<SyncReport, SyncError> {
    std::fs::create_dir_all(root).map_err(|source| SyncError::Io {
        path: root.to_path_buf(),
        source,
    })?;
    let git = Git::new(root);
    if !root.join(".git").is_dir() {
        git.ok(&["init", "--quiet", "--initial-branch=main"])?;
    }
    write_git_files(root).map_err(|source| SyncError::Io {
        path: root.to_path_buf(),
        source,
    })?;
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
    sync_once(root, options)
}

/// The remote's branch to sync with: the one named as this machine's branch if the
/// remote has it, else the remote's only branch; this machine's branch name when the
/// remote has none yet.
fn remote_branch_for(git: &Git, remote: &str) -> Result<String, SyncError> {
    let local = current_branch(git)?;
    git.run(&["fetch", "--quiet", "--prune", remote], NETWORK_TIMEOUT)
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

/// The remote sync uses in `root`, or why there is none.
fn configured_remote(root: &Path, git: &Git) -> Result<String, SyncError> {
    let not_set_up = || SyncError::NotSetUp {
        root: root.to_path_buf(),
    };
    if !root.join(".git").is_dir() {
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

/// Commit, fetch, merge, push once. Records the outcome in the root's sync record.
pub fn sync_once(root: &Path, options: &SyncOptions) -> Result<SyncReport, SyncError> {
    let result = sync_steps(root, options);
    let mut state = SyncState::load(root);
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
    state.save(root);
    result
}

fn sync_steps(root: &Path, options: &SyncOptions) -> Result<SyncReport, SyncError> {
    let git = Git::new(root).with_identity();
    let remote = configured_remote(root, &git)?;
    configure_driver(&git, &options.driver_exe)?;
    let branch = synced_branch(&git)?;
    let mut report = SyncReport {
        committed: commit_local(&git, options.now)?,
        ..SyncReport::default()
    };
    let tracking = format!("refs/remotes/{remote}/{branch}");
    for attempt in 1..=PUSH_ATTEMPTS {
        git.run(&["fetch", "--quiet", "--prune", &remote], NETWORK_TIMEOUT)
            .map_err(|e| SyncError::Unreachable {
                remote: remote_label(&git, &remote),
                detail: e.stderr_or_what(),
            })?;
        if has_ref(&git, &tracking) {
            report.received += merge_remote(&git, &remote, &branch, &tracking, options.now)?;
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
        match git.run(&["push", "--quiet", &remote, &refspec], NETWORK_TIMEOUT) {
            Ok(_) => {
                report.sent = outgoing;
                // Record what the remote now holds, for `sync status`.
                let _ = git.run(&["fetch", "--quiet", &remote], NETWORK_TIMEOUT);
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
    report.conflicts = conflicts_in(root).iter().map(|(_, n)| n).sum();
    Ok(report)
}

impl GitError {
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
        source: std::io::Error::other(format!("cannot quote this path for git: {e}")),
    })?;
    let driver = format!("{quoted} merge-driver %O %A %B %P");
    let name_key = format!("merge.{DRIVER_NAME}.name");
    let driver_key = format!("merge.{DRIVER_NAME}.driver");
    git.ok(&["config", &name_key, "KG Memory graph merge (node by node)"])?;
    git.ok(&["config", &driver_key, &driver])?;
    Ok(())
}

/// Commit everything changed here, as the autocommit does. Whether a commit was made.
fn commit_local(git: &Git, now: f64) -> Result<bool, GitError> {
    let exclude = format!(":(exclude){}", crate::root_lock::LOCK_FILE);
    let status = git.ok(&["status", "--porcelain", "--", ".", &exclude])?;
    if status.trim().is_empty() {
        return Ok(false);
    }
    let message = format!("Auto-save {}", crate::clock::local_minute(now));
    git.ok(&["add", "-A", "--", ".", &exclude])?;
    git.ok(&["commit", "--quiet", "--no-verify", "-m", &message])?;
    Ok(true)
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
    git: &Git,
    remote: &str,
    branch: &str,
    tracking: &str,
    now: f64,
) -> Result<usize, SyncError> {
    let incoming = count(git, &format!("HEAD..{tracking}"))?;
    if incoming == 0 {
        return Ok(0);
    }
    check_remote_graphs(git, tracking)?;
    let message = format!(
        "Sync {}: merge {remote}/{branch}",
        crate::clock::local_minute(now)
    );
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
        let files = git
            .ok(&["diff", "--name-only", "--diff-filter=U"])
            .map(|out| out.lines().map(str::to_string).collect())
            .unwrap_or_default();
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
    Ok(incoming)
}

/// Refuse the remote's branch when a graph file it changed does not read as a graph:
/// git would take such a file as it is when only the remote changed it.
fn check_remote_graphs(git: &Git, tracking: &str) -> Result<(), SyncError> {
    let changed = git.ok(&[
        "diff",
        "--name-only",
        "-z",
        "--no-renames",
        "HEAD",
        tracking,
    ])?;
    for path in changed.split('\0').filter(|p| is_graph_path(p)) {
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

/// Unresolved merge conflicts per graph file in the work tree (files without any
/// are left out; a file that does not parse counts none here).
pub fn conflicts_in(root: &Path) -> Vec<(String, usize)> {
    graph_files(root)
        .into_iter()
        .filter_map(|path| {
            let bytes = std::fs::read(root.join(&path)).ok()?;
            let file = kg_core::parse_graph(&bytes).ok()?;
            let n = kg_sync::unresolved_conflicts(&file.graph);
            (n > 0).then_some((path, n))
        })
        .collect()
}

/// Stop syncing: the remote and the driver are removed from the repository's config.
/// The memory, its git history and the autocommit stay. Whether sync was on.
pub fn off(root: &Path) -> Result<bool, SyncError> {
    let git = Git::new(root);
    let remote = match configured_remote(root, &git) {
        Ok(remote) => Some(remote),
        Err(SyncError::NotSetUp { .. }) if root.join(".git").is_dir() => None,
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

/// What `kg-memory sync status` shows.
#[derive(Debug, Clone)]
pub struct SyncStatus {
    pub root: PathBuf,
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
}

/// The sync state of `root`, from the repository and the sync record (no network).
pub fn status(root: &Path) -> Result<SyncStatus, SyncError> {
    let git = Git::new(root);
    let mut status = SyncStatus {
        root: root.to_path_buf(),
        remote: None,
        branch: None,
        state: SyncState::load(root),
        ahead_behind: None,
        uncommitted: 0,
        conflicts: conflicts_in(root),
    };
    let remote = match configured_remote(root, &git) {
        Ok(remote) => remote,
        Err(SyncError::NotSetUp { .. }) => return Ok(status),
        Err(e) => return Err(e),
    };
    status.remote = Some(remote_label(&git, &remote));
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
    let exclude = format!(":(exclude){}", crate::root_lock::LOCK_FILE);
    status.uncommitted = git
        .ok(&["status", "--porcelain", "--", ".", &exclude])?
        .lines()
        .count();
    Ok(status)
}

impl SyncStatus {
    /// Unresolved merge conflicts across the graph files.
    pub fn conflict_count(&self) -> usize {
        self.conflicts.iter().map(|(_, n)| n).sum()
    }
}

impl fmt::Display for SyncStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let when = |ts: f64| crate::clock::local_minute(ts);
        let Some(remote) = &self.remote else {
            writeln!(
                f,
                "Sync: off for {}. Turn it on with `kg-memory sync setup <remote>`.",
                self.root.display()
            )?;
            return self.write_conflicts(f);
        };
        writeln!(
            f,
            "Sync: on for {}, with the remote {remote}, branch {}",
            self.root.display(),
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
        Ok(())
    }
}

/// `kg-memory sync …`.
#[derive(Debug, clap::Args)]
pub struct SyncArgs {
    #[command(subcommand)]
    pub action: SyncAction,
}

#[derive(Debug, clap::Subcommand)]
pub enum SyncAction {
    /// Sync this storage root with a git remote: makes it a git repository if needed,
    /// adds the remote, installs the graph merge driver, then syncs once
    ///
    /// The remote can be any git URL (SSH, HTTPS, a path); an empty one receives this
    /// machine's memory. Credentials are git's own (SSH agent, credential helper).
    Setup {
        /// The remote repository's URL or path
        remote: String,
        /// The name to give the remote in the storage root's git config
        #[arg(long, default_value = "origin")]
        name: String,
    },
    /// Show the remote, the last sync, what is ahead or behind, and merge conflicts
    Status,
    /// Sync now: commit, fetch, merge, push
    Now,
    /// Stop syncing: removes the remote and the merge driver from the storage root's
    /// git config; the memory and its history stay
    Off,
}

/// Run a `sync` action on the storage root `root`, printing with `say`.
///
/// `setup` and `now` refuse while a server holds the root: they rewrite graph files
/// that server keeps in memory and would save over.
pub fn run(args: SyncArgs, root: &Path, now: f64, say: fn(&str)) -> anyhow::Result<()> {
    use anyhow::Context;
    let options = || -> anyhow::Result<SyncOptions> {
        if let Some(held) = crate::root_lock::held(root) {
            anyhow::bail!(
                "{} is serving the storage root {} and keeps its graphs in memory, so a sync now would be overwritten by its next save. Stop that server (or quit the tray app), run this again, then start it again",
                held.who(),
                root.display()
            );
        }
        Ok(SyncOptions {
            driver_exe: std::env::current_exe()
                .context("cannot find this program's own path for git's merge driver")?,
            now,
        })
    };
    match args.action {
        SyncAction::Setup { remote, name } => {
            let options = options()?;
            // A local path is made absolute: git would read it from the root.
            let url = if Path::new(&remote).exists() {
                std::path::absolute(&remote)
                    .with_context(|| format!("cannot resolve the path {remote}"))?
                    .to_string_lossy()
                    .into_owned()
            } else {
                remote
            };
            let report = setup(root, &name, &url, &options)?;
            say(&format!(
                "Sync is set up: {} now syncs with {url} as the remote {name}.\n{report}\n",
                root.display()
            ));
        }
        SyncAction::Now => {
            let report = sync_once(root, &options()?)?;
            say(&format!("{report}\n"));
        }
        SyncAction::Status => say(&status(root)?.to_string()),
        SyncAction::Off => {
            if off(root)? {
                say(&format!(
                    "Sync is off for {}. The memory and its git history stay; turn it back on with `kg-memory sync setup <remote>`.\n",
                    root.display()
                ));
            } else {
                say(&format!("Sync was not on for {}.\n", root.display()));
            }
        }
    }
    Ok(())
}

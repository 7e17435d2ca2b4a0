//! Where git says a project's files went: the renames recorded in the repository a
//! project lies in, for the stale-touch fix (`kg_core::renamed_path`). Git runs with
//! a timeout, in the C locale, never prompting and taking no optional locks; its
//! answer is kept until the repository's HEAD moves, so a view refreshing its level
//! asks git for one `rev-parse`, not for the history again.

use crate::sync::{Git, GitError};
use kg_core::Renames;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long one git command may take here: a repository that needs longer gets no
/// rename offers rather than a stalled request.
const GIT_TIMEOUT: Duration = Duration::from_secs(5);
/// The newest commits whose renames are read.
const COMMITS_READ: &str = "2000";
/// How long a repository's answer is trusted without asking git for its HEAD again.
const RECHECK: Duration = Duration::from_secs(5);
/// Repositories remembered at most; past that the memory starts over.
const REMEMBER_AT_MOST: usize = 64;

/// Options that keep a git run read-only and quiet whatever the repository's own
/// configuration says: no optional locks, no signature checks (gpg), no external
/// diff or text conversion programs, no filesystem monitor.
const QUIET: [&str; 7] = [
    "--no-optional-locks",
    "-c",
    "log.showSignature=false",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "diff.external=",
];

/// The renames of each repository asked about, by the project root that asked.
#[derive(Debug, Default)]
pub struct RenameFinder {
    known: Mutex<HashMap<PathBuf, Known>>,
}

#[derive(Debug, Clone)]
struct Known {
    /// The HEAD commit (and the index's stamp) the renames were read at.
    head: String,
    at: Instant,
    renames: Option<Arc<Renames>>,
}

impl RenameFinder {
    /// The renames git recorded in the repository `root` lies in: committed ones
    /// (newest 2,000 commits) and renames staged in the index. `None` when `root`
    /// is in no repository, git is missing, or it did not answer in time.
    pub fn renames(&self, root: &Path) -> Option<Arc<Renames>> {
        if let Some(known) = self.recent(root) {
            return known.renames;
        }
        let git = Git::new(root);
        // Which commit the history is read at; the index's stamp catches staged renames.
        let head = match run(
            &git,
            &["rev-parse", "--show-toplevel", "--absolute-git-dir", "HEAD"],
        ) {
            Ok(out) => String::from_utf8_lossy(&out).into_owned(),
            Err(e) => {
                log::debug!("no git renames for {}: {e}", root.display());
                self.remember(root, String::new(), None);
                return None;
            }
        };
        let mut lines = head.lines().map(str::trim);
        let top = PathBuf::from(lines.next()?);
        // The index's stamp stands for the staged renames.
        let index_stamp = lines
            .next()
            .and_then(|dir| std::fs::metadata(Path::new(dir).join("index")).ok())
            .and_then(|m| m.modified().ok())
            .map(|t| format!("{t:?}"))
            .unwrap_or_default();
        let head = format!("{} {index_stamp}", lines.next().unwrap_or(""));
        {
            let known = self.known.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(k) = known.get(root).filter(|k| k.head == head) {
                let renames = k.renames.clone();
                drop(known);
                self.remember(root, head, renames.clone());
                return renames;
            }
        }
        let renames = read_renames(&git, top).map(Arc::new);
        self.remember(root, head, renames.clone());
        renames
    }

    fn recent(&self, root: &Path) -> Option<Known> {
        let known = self.known.lock().unwrap_or_else(|e| e.into_inner());
        known
            .get(root)
            .filter(|k| k.at.elapsed() < RECHECK)
            .cloned()
    }

    fn remember(&self, root: &Path, head: String, renames: Option<Arc<Renames>>) {
        let mut known = self.known.lock().unwrap_or_else(|e| e.into_inner());
        if known.len() >= REMEMBER_AT_MOST && !known.contains_key(root) {
            known.clear();
        }
        known.insert(
            root.to_path_buf(),
            Known {
                head,
                at: Instant::now(),
                renames,
            },
        );
    }
}

/// `git <QUIET> <args>`: its standard output, as bytes.
fn run(git: &Git, args: &[&str]) -> Result<Vec<u8>, GitError> {
    let all: Vec<&str> = QUIET.iter().chain(args).copied().collect();
    git.run(&all, GIT_TIMEOUT).map(|out| out.bytes)
}

/// The renames of the repository at `top`: staged ones first (the newest), then the
/// committed ones newest first; an old path keeps its newest rename.
fn read_renames(git: &Git, top: PathBuf) -> Option<Renames> {
    let mut moves = HashMap::new();
    // A repository without commits has no history and no HEAD to diff the index with.
    let staged = run(
        git,
        &[
            "diff",
            "--cached",
            "-M",
            "--name-status",
            "--no-ext-diff",
            "--no-textconv",
            "-z",
        ],
    );
    if let Ok(out) = staged {
        add_renames(&out, &mut moves);
    }
    let log = run(
        git,
        &[
            "log",
            "-M",
            "--diff-filter=R",
            "--name-status",
            "--no-ext-diff",
            "--no-textconv",
            "--format=",
            "-z",
            "-n",
            COMMITS_READ,
        ],
    );
    match log {
        Ok(out) => add_renames(&out, &mut moves),
        Err(e) => {
            log::info!("git renames of {} not read: {e}", top.display());
            if moves.is_empty() {
                return None;
            }
        }
    }
    Some(Renames { top, moves })
}

/// Add the renames of `git … --name-status -z` output (`R<score>\0old\0new\0`, other
/// statuses skipped) that are not known yet. Paths git writes that are not UTF-8
/// cannot be a touch's, and are skipped.
fn add_renames(bytes: &[u8], moves: &mut HashMap<String, String>) {
    let mut fields = bytes.split(|&b| b == 0).map(|f| f.trim_ascii_start());
    while let Some(status) = fields.next() {
        let paths = match status.first() {
            Some(b'R' | b'C') => 2,
            Some(b'A' | b'D' | b'M' | b'T' | b'U' | b'X') => 1,
            _ => continue,
        };
        let (Some(old), new) = (fields.next(), (paths == 2).then(|| fields.next()).flatten())
        else {
            break;
        };
        if status.first() != Some(&b'R') {
            continue;
        }
        let (Ok(old), Some(Ok(new))) = (std::str::from_utf8(old), new.map(std::str::from_utf8))
        else {
            continue;
        };
        if !old.is_empty() && !new.is_empty() && old != new {
            moves
                .entry(old.to_string())
                .or_insert_with(|| new.to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renames_are_read_from_name_status_output_newest_first() {
        let out = b"R100\0src/b.rs\0src/c.rs\0M\0README.md\0\nR087\0src/a.rs\0src/b.rs\0D\0gone.rs\0R100\0src/b.rs\0src/old-c.rs\0C075\0x.rs\0y.rs\0R100\0bad-\xff.rs\0ok.rs\0";
        let mut moves = HashMap::new();
        add_renames(out, &mut moves);
        let mut got: Vec<(&str, &str)> = moves
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        got.sort_unstable();
        assert_eq!(got, [("src/a.rs", "src/b.rs"), ("src/b.rs", "src/c.rs")]);
        // Truncated output ends the scan without a panic.
        add_renames(b"R100\0only-old", &mut moves);
    }
}

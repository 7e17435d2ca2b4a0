//! The git merge driver: `kg-memory merge-driver %O %A %B %P`.
//!
//! Git hands the driver three temporary files (the common ancestor, ours, theirs) and
//! the file's path in the repository, and expects the result in `%A`, exit code 0 for
//! a clean merge and anything else for a conflict it leaves to the user.

use crate::merge::{MergeError, Side, merge_at};
use kg_core::{WriteMode, atomic_write};
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// What the driver did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DriverOutcome {
    /// The merged graph replaced `%A`. Conflicts, if any, are kept in the nodes'
    /// notes, so git sees a clean merge.
    Merged {
        /// The file's path in the repository (`%P`).
        path_name: String,
        /// Gist conflicts this merge kept in notes.
        conflicts: usize,
    },
    /// An input is not a graph file; `%A` was left as it was, for git to mark the
    /// file as conflicted.
    Refused {
        /// The file's path in the repository (`%P`).
        path_name: String,
        /// Why, naming the input.
        cause: String,
    },
}

impl DriverOutcome {
    /// The exit code git reads: 0 merged, 1 conflict.
    pub fn exit_code(&self) -> i32 {
        match self {
            DriverOutcome::Merged { .. } => 0,
            DriverOutcome::Refused { .. } => 1,
        }
    }
}

impl fmt::Display for DriverOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DriverOutcome::Merged {
                path_name,
                conflicts: 0,
            } => write!(f, "merged the memory graph {path_name}"),
            DriverOutcome::Merged {
                path_name,
                conflicts,
            } => write!(
                f,
                "merged the memory graph {path_name}; {conflicts} node(s) were edited on both sides with different gists: the newer gist was kept and the other one is in the node's notes, marked \"[merge conflict]\""
            ),
            DriverOutcome::Refused { path_name, cause } => write!(
                f,
                "cannot merge {path_name} as a memory graph: {cause}. The file was left as it was on this side and git marks it as conflicted."
            ),
        }
    }
}

/// Why the driver could not run at all (git then reports a conflict, `%A` untouched).
#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    /// One of git's files could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: io::Error,
    },
    /// The merged graph could not be written over `%A`.
    #[error("cannot write the merged graph: {0}")]
    Write(#[from] kg_core::PersistError),
}

/// Merge the graph files `base` (`%O`), `ours` (`%A`) and `theirs` (`%B`), writing
/// the result over `ours`. `path_name` (`%P`) names the file in messages.
///
/// The result is written atomically and durably (a temporary file beside `%A`,
/// fsynced, renamed over it), so a crash leaves either the old `%A` or the whole
/// merged file. Nothing is written unless the merged graph parses back; an input
/// that does not parse leaves `%A` untouched and answers [`DriverOutcome::Refused`].
pub fn merge_driver(
    base: &Path,
    ours: &Path,
    theirs: &Path,
    path_name: &str,
) -> Result<DriverOutcome, DriverError> {
    let read = |path: &Path| {
        std::fs::read(path).map_err(|source| DriverError::Read {
            path: path.to_path_buf(),
            source,
        })
    };
    let (base_bytes, ours_bytes, theirs_bytes) = (read(base)?, read(ours)?, read(theirs)?);
    // The driver is a process of its own: its clock is the system's.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(f64::INFINITY, |d| d.as_secs_f64());
    let outcome = match merge_at(&base_bytes, &ours_bytes, &theirs_bytes, now) {
        Ok(outcome) => outcome,
        Err(e @ (MergeError::Unparsable { .. } | MergeError::Unreadable { .. })) => {
            return Ok(DriverOutcome::Refused {
                path_name: path_name.to_string(),
                cause: match &e {
                    MergeError::Unparsable {
                        side: Side::Ours, ..
                    } => format!("{e} (this checkout's copy)"),
                    _ => e.to_string(),
                },
            });
        }
    };
    // No `.prev` beside a file in a git work tree: git keeps the history.
    atomic_write(
        ours,
        outcome.text.as_bytes(),
        WriteMode::DURABLE,
        None,
        None,
    )?;
    Ok(DriverOutcome::Merged {
        path_name: path_name.to_string(),
        conflicts: outcome.conflicts.len(),
    })
}

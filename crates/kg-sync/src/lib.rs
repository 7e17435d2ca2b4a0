//! KG Memory across machines through git: the 3-way merge of graph files, and the git
//! merge driver that applies it (`kg-memory merge-driver %O %A %B %P`).
//!
//! A graph file is merged at node and edge level, keyed by id (an edge's id is its
//! `from`, `to` and `rel`), never as lines of text. [`merge`] states the rules; in
//! short:
//!
//! - nodes and edges added on either side are kept;
//! - one changed on one side takes that side's version;
//! - one changed on both sides is merged field by field, the newer version winning
//!   each field both changed, except the fields below that are combined instead;
//! - a delete wins only over an unchanged node or edge;
//! - endorsements (`_useful_ts`) are unioned, and so are notes and touches; the read
//!   stamp (`_last_read_ts`) keeps the later read;
//! - tiers are left to maintenance, which recomputes them after the merge;
//! - two different gists keep both texts: the losing one goes into the node's notes
//!   as a note starting with [`CONFLICT_NOTE_PREFIX`], which stays (and counts, see
//!   [`unresolved_conflicts`]) until a person or an agent removes it.
//!
//! The result is healed and checked as any load heals and checks a graph file, and
//! `merge(base, a, b)` equals `merge(base, b, a)`: nothing depends on which side is
//! "ours".

mod driver;
mod merge;
mod order;

pub use driver::{DriverError, DriverOutcome, merge_driver};
pub use merge::{
    Conflict, MergeError, MergeOutcome, Side, merge, merge_at, merge_files, merge_files_at,
};
// The conflict note is kg-core's concept (DEBT counts the notes a merge leaves); they
// are named here too for the merge's callers.
pub use kg_core::{CONFLICT_NOTE_PREFIX, unresolved_conflicts};

//! KG Memory's core: the knowledge graphs, their files, sessions, scoring,
//! compaction, rendering and search. No async runtime, no HTTP: front ends (the
//! server, the tray app) call the [`Store`] and the text functions here.

pub mod ambient;
pub mod catalogue;
pub mod change;
pub mod compact;
pub mod debt;
pub mod graph;
pub mod heal;
pub mod inspect;
pub mod journal;
pub mod limits;
pub mod model;
pub mod namespace;
pub mod persist;
pub mod plan;
pub mod pyfmt;
pub mod render;
pub mod results;
pub mod score;
pub mod search;
pub mod session;
pub mod store;
pub mod structure;
pub mod tool_events;
pub mod tools;
pub mod tracked;
pub mod wording;

#[cfg(test)]
mod layering;

pub use change::{Change, ChangeKind, TierMoves};
pub use graph::Graph;
pub use model::{EdgeKey, Level, Node, Object, Tier};
pub use store::{Store, StoreConfig, StoreError, Target};

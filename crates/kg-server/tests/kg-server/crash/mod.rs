//! Crash consistency of the whole server: `kg-memory serve` on a real disk, under a
//! mixed write load from several clients (MCP puts, edges, deletes and progress; REST
//! puts, edges, deletes and progress), killed with SIGKILL at random moments and
//! restarted, again and again.
//!
//! After every kill: every file parses; every acknowledged write is on disk with its
//! acknowledged value (a write in flight at the kill may or may not be there); each
//! `.prev` is a valid earlier state of its file; leftover temp files do not stop the
//! next start; every acknowledged session survives and can be continued; and the
//! restarted server shows exactly what the disk holds.
//!
//! Bounded here (`KG_CRASH_KILLS`, default 50); `scripts/reliability.sh` runs 500.
//! `KG_CRASH_SEED` replays a run.

use crate::server::serve;
use crate::wire::{self, Rng};
use kg_core::parse_graph;
use kg_core::{EdgeKey, Graph};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod checks;
mod clients;
mod kills;

pub(crate) use checks::disk_home;
use checks::*;
use clients::*;

const DEFAULT_KILLS: usize = 50;
/// Any single request taking longer than this is a hang, and fails the test.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(20);

/// What a key of the model holds on disk.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Key {
    Node {
        level: String,
        id: String,
    },
    Edge {
        level: String,
        key: (String, String, String),
    },
    Progress {
        level: String,
        task: String,
    },
}

/// The value of a key: `None` = absent (deleted, or never written).
type Val = Option<String>;

/// One operation's effect on the model.
#[derive(Debug, Clone)]
struct Effect {
    /// Keys and the value each holds once the operation is applied.
    set: Vec<(Key, Val)>,
}

/// What one client saw: acknowledged effects in order, and the one in flight when the
/// server died (it may or may not have landed).
#[derive(Debug, Default)]
struct ClientLog {
    acked: Vec<Effect>,
    in_flight: Option<Effect>,
    sessions: Vec<String>,
    ops: usize,
    /// A failure that is not explained by the kill (a wrong answer while alive).
    failure: Option<String>,
}

/// The model of the storage: what acknowledged writes left there.
#[derive(Debug, Default)]
struct Model {
    values: BTreeMap<Key, Val>,
}

impl Model {
    fn value(&self, key: &Key) -> Val {
        self.values.get(key).cloned().flatten()
    }

    fn apply(&mut self, effect: &Effect) {
        for (k, v) in &effect.set {
            self.values.insert(k.clone(), v.clone());
        }
    }

    fn present_nodes(&self, owner: &str) -> Vec<(String, String)> {
        self.values
            .iter()
            .filter_map(|(k, v)| match (k, v) {
                (Key::Node { level, id }, Some(_)) if id.starts_with(owner) => {
                    Some((level.clone(), id.clone()))
                }
                _ => None,
            })
            .collect()
    }

    fn present_edges(&self, owner: &str) -> Vec<(String, (String, String, String))> {
        self.values
            .iter()
            .filter_map(|(k, v)| match (k, v) {
                (Key::Edge { level, key }, Some(_)) if key.0.starts_with(owner) => {
                    Some((level.clone(), key.clone()))
                }
                _ => None,
            })
            .collect()
    }

    /// Edges of the model touching a node (a node delete takes them along).
    fn edges_touching(&self, level: &str, id: &str) -> Vec<Key> {
        self.values
            .iter()
            .filter_map(|(k, v)| match (k, v) {
                (Key::Edge { level: l, key }, Some(_))
                    if l == level && (key.0 == id || key.1 == id) =>
                {
                    Some(k.clone())
                }
                _ => None,
            })
            .collect()
    }
}

/// The level of a client's node: fixed per id, so a delete (user graph first, then
/// project) always finds it where it was put.
fn level_of(index: u64) -> &'static str {
    if index & 1 == 0 { "user" } else { "project" }
}

fn node_key(level: &str, id: &str) -> Key {
    Key::Node {
        level: level.into(),
        id: id.into(),
    }
}

fn edge_key(level: &str, from: &str, to: &str, rel: &str) -> Key {
    Key::Edge {
        level: level.into(),
        key: (from.into(), to.into(), rel.into()),
    }
}

/// Shared by the clients of one round.
struct Round {
    port: u16,
    project: String,
    /// Set when the server is being killed: errors from then on are expected.
    dying: AtomicBool,
}

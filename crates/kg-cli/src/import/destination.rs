//! Where an import writes: the running server that holds the storage root (over its
//! REST API, the route the graph view takes), or, when none runs, the store itself,
//! opened under the root's lock the way a server opens it. Either way the import is
//! one batch through the store (`Store::import`): checked whole, journalled, one
//! maintenance pass that keeps the level in budget, one save.

use super::{GraphFacts, NewEdge, NewNode, TargetGraph};
use kg_client::{self as client, ClientError};
use kg_core::{BatchEdge, BatchNode, BatchOutcome, Level, Store, Target, Tier};
use kg_server::clock::Clock;
use kg_server::config::Settings;
use kg_server::root_lock::{self, RootLock};
use serde_json::{Value, json};
use std::collections::HashSet;
use std::time::Duration;

/// How long one request to the server may take (a write saves the graph first).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Why the import could not reach, read or write its graph. A cause is a `source`
/// (said after the message by the binary), except the store's refusals, which are
/// said in the message.
#[derive(Debug, thiserror::Error)]
pub enum DestinationError {
    /// The storage root could not be opened here.
    #[error("cannot open the storage root {root}: {error}")]
    Open { root: String, error: String },
    /// The root's server left no address in its lock file.
    #[error(
        "the storage root {root} is held by a KG Memory server whose address cannot be read from its lock file; stop it, or run the import where it can be reached"
    )]
    NoAddress { root: String },
    /// The root's server does not answer.
    #[error("the KG Memory server holding {root} (pid {pid}) does not answer at {base}")]
    NotAnswering {
        root: String,
        pid: u32,
        base: String,
        #[source]
        error: ClientError,
    },
    /// The server refused the request, in its own words.
    #[error("the server refused it ({status}): {detail}")]
    Refused { status: u16, detail: String },
    /// The request failed on the way.
    #[error(transparent)]
    Client(ClientError),
    /// The server's answer is not what its route sends.
    #[error("{0}")]
    Answer(String),
    /// The server's answer is not JSON.
    #[error("the server's answer {about} is not JSON")]
    NotJson {
        about: &'static str,
        #[source]
        error: serde_json::Error,
    },
    /// The store refused (its words).
    #[error("{0}")]
    Store(String),
    /// The target graph could not be read or opened.
    #[error("cannot {doing} the {graph}")]
    Graph {
        doing: &'static str,
        graph: String,
        #[source]
        error: Box<DestinationError>,
    },
}

/// The way to the graphs.
pub enum Destination {
    /// The server holding the storage root, at this base URL.
    Server { base: String },
    /// The store, opened here; the lock keeps a server from starting meanwhile.
    Store {
        store: Box<Store>,
        clock: Clock,
        _lock: Option<RootLock>,
    },
}

impl std::fmt::Debug for Destination {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

impl Destination {
    /// The server holding `settings`' storage root, or, when none holds it, the
    /// store opened directly under the root's lock.
    pub async fn open(settings: &Settings) -> Result<Destination, DestinationError> {
        if let Some(held) = root_lock::held(&settings.storage_root) {
            return Destination::server(settings, held).await;
        }
        match RootLock::acquire(&settings.storage_root, &settings.host, settings.port) {
            Ok(lock) => {
                let clock = settings.clock();
                let store = Store::open(settings.store_config(), clock.now()).map_err(|e| {
                    DestinationError::Open {
                        root: settings.storage_root.display().to_string(),
                        error: e.to_string(),
                    }
                })?;
                Ok(Destination::Store {
                    store: Box::new(store),
                    clock,
                    _lock: lock,
                })
            }
            // A server started in between: import through it after all.
            Err(held) => Destination::server(settings, held).await,
        }
    }

    async fn server(
        settings: &Settings,
        held: root_lock::RootHeld,
    ) -> Result<Destination, DestinationError> {
        let root = settings.storage_root.display().to_string();
        let Some(holder) = held.holder else {
            return Err(DestinationError::NoAddress { root });
        };
        let base = holder.base_url();
        if let Err(error) = client::get(&format!("{base}/health"), Duration::from_secs(5)).await {
            return Err(DestinationError::NotAnswering {
                root,
                pid: holder.pid,
                base,
                error,
            });
        }
        Ok(Destination::Server { base })
    }

    /// The route, in words, for the preview.
    pub fn describe(&self) -> String {
        match self {
            Destination::Server { base } => format!("the running KG Memory server at {base}"),
            Destination::Store { store, .. } => format!(
                "the storage root {} directly (no server is running; it stays locked until the import ends)",
                store.config().storage_root.display()
            ),
        }
    }

    /// What the target graph holds now.
    pub async fn facts(&self, target: &TargetGraph) -> Result<GraphFacts, DestinationError> {
        match self {
            Destination::Server { base } => {
                let mut url = format!("{base}/api/view/level?level={}", target.level.as_str());
                if let Some(path) = &target.project {
                    url.push_str(&format!("&project_path={}", client::encode(path)));
                }
                let body = client::get(&url, REQUEST_TIMEOUT).await.map_err(|e| {
                    DestinationError::Graph {
                        doing: "read",
                        graph: target.name(),
                        error: Box::new(refusal(e)),
                    }
                })?;
                let level: Value =
                    serde_json::from_str(&body).map_err(|error| DestinationError::NotJson {
                        about: "about the graph",
                        error,
                    })?;
                Ok(facts_of_view(&level))
            }
            Destination::Store { store, clock, .. } => {
                let slot = match &target.project {
                    None => store.user_slot().clone(),
                    Some(path) => store
                        .existing_project_slot(path, clock.now())
                        .map_err(|e| DestinationError::Graph {
                            doing: "open",
                            graph: target.name(),
                            error: Box::new(DestinationError::Store(e.to_string())),
                        })?,
                };
                let level_budget = store.config().budgets.level;
                Ok(store.with_graph(&slot, |graph| {
                    let budget = kg_core::level_budget(graph, level_budget);
                    let mut counts = (0, 0, 0);
                    for node in graph.nodes.values() {
                        match node.tier() {
                            Tier::Active => counts.0 += 1,
                            Tier::Archived => counts.1 += 1,
                            Tier::Orphaned => counts.2 += 1,
                        }
                    }
                    GraphFacts {
                        node_ids: graph.nodes.keys().cloned().collect(),
                        edges: graph
                            .edges
                            .values()
                            .map(|e| (e.from().into(), e.to().into(), e.rel().into()))
                            .collect(),
                        chars: budget.chars,
                        budget: budget.budget,
                        counts,
                    }
                }))
            }
        }
    }

    /// Create `nodes`, then `edges`, in the target graph as one write through the
    /// store's batch (`Store::import`): all or nothing, one maintenance pass, one
    /// save. With `dry_run`, nothing is written and the outcome says what would be.
    pub async fn import(
        &self,
        target: &TargetGraph,
        nodes: &[NewNode],
        edges: &[NewEdge],
        dry_run: bool,
    ) -> Result<BatchOutcome, DestinationError> {
        match self {
            Destination::Server { base } => {
                let mut body = json!({
                    "level": target.level.as_str(),
                    "dry_run": dry_run,
                    "nodes": nodes
                        .iter()
                        .map(|n| json!({"id": n.id, "gist": n.gist, "notes": n.notes}))
                        .collect::<Vec<_>>(),
                    "edges": edges
                        .iter()
                        .map(|e| json!({"from": e.from, "to": e.to, "rel": e.rel}))
                        .collect::<Vec<_>>(),
                });
                if let Some(path) = &target.project {
                    body["project_path"] = json!(path);
                }
                let answer = client::post(
                    &format!("{base}/api/import"),
                    &body.to_string(),
                    REQUEST_TIMEOUT,
                )
                .await
                .map_err(refusal)?;
                let answer: Value =
                    serde_json::from_str(&answer).map_err(|error| DestinationError::NotJson {
                        about: "to the import",
                        error,
                    })?;
                outcome_of(&answer)
            }
            Destination::Store { store, clock, .. } => {
                let nodes: Vec<BatchNode> = nodes
                    .iter()
                    .map(|n| BatchNode {
                        id: n.id.clone(),
                        gist: n.gist.clone(),
                        notes: n.notes.clone(),
                    })
                    .collect();
                let edges: Vec<BatchEdge> = edges
                    .iter()
                    .map(|e| BatchEdge {
                        from: e.from.clone(),
                        to: e.to.clone(),
                        rel: e.rel.clone(),
                    })
                    .collect();
                store
                    .import(store_target(target), &nodes, &edges, dry_run, clock.now())
                    .map_err(|e| DestinationError::Store(e.to_string()))
            }
        }
    }

    /// Save whatever is still only in memory (read stamps, maintenance results) when
    /// the store was opened here; the server saves its own.
    pub fn finish(&self) {
        if let Destination::Store { store, .. } = self {
            store.flush();
        }
    }
}

fn store_target(target: &TargetGraph) -> Target<'_> {
    Target {
        level: target.level,
        session: None,
        project_path: match target.level {
            Level::User => None,
            Level::Project => target.project.as_deref(),
        },
    }
}

/// A refused request in the server's own words (`{"detail": …}`), else as it came.
fn refusal(e: ClientError) -> DestinationError {
    if let ClientError::Status { status, body, .. } = &e
        && let Ok(answer) = serde_json::from_str::<Value>(body)
        && let Some(detail) = answer["detail"].as_str()
    {
        return DestinationError::Refused {
            status: *status,
            detail: detail.to_string(),
        };
    }
    DestinationError::Client(e)
}

/// The facts in a `GET /api/view/level` answer.
fn facts_of_view(level: &Value) -> GraphFacts {
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    let count = |v: &Value| v.as_u64().unwrap_or(0) as usize;
    let node_ids: HashSet<String> = level["nodes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|row| text(&row["node"]["id"]))
        .collect();
    let edges = level["edges"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|row| {
            let e = &row["edge"];
            (text(&e["from"]), text(&e["to"]), text(&e["rel"]))
        })
        .collect();
    let counts = &level["counts"];
    GraphFacts {
        node_ids,
        edges,
        chars: count(&level["budget"]["chars"]),
        budget: count(&level["budget"]["budget"]),
        counts: (
            count(&counts["active"]),
            count(&counts["archived"]),
            count(&counts["orphaned"]),
        ),
    }
}

/// The outcome in a `POST /api/import` answer.
pub fn outcome_of(answer: &Value) -> Result<BatchOutcome, DestinationError> {
    let ids = |key: &str| -> Result<Vec<String>, DestinationError> {
        answer[key]
            .as_array()
            .ok_or_else(|| {
                DestinationError::Answer(format!("the server's import answer has no list `{key}`"))
            })?
            .iter()
            .map(|v| {
                v.as_str().map(str::to_string).ok_or_else(|| {
                    DestinationError::Answer(format!("`{key}` holds something other than ids"))
                })
            })
            .collect()
    };
    let count = |v: &Value| -> Result<usize, DestinationError> {
        v.as_u64().map(|n| n as usize).ok_or_else(|| {
            DestinationError::Answer(format!("the server's import answer lacks a count: {v}"))
        })
    };
    let counts = &answer["counts"];
    Ok(BatchOutcome {
        created: ids("created")?,
        kept: ids("kept")?,
        edges_created: count(&answer["edges_created"])?,
        edges_kept: count(&answer["edges_kept"])?,
        rebalanced: kg_core::TierMoves {
            archived: ids("archived")?,
            restored: ids("restored")?,
            orphaned: ids("orphaned")?,
            ..kg_core::TierMoves::default()
        },
        archived_existing: ids("archived_existing")?,
        chars_before: count(&answer["chars_before"])?,
        chars_after: count(&answer["chars_after"])?,
        budget: count(&answer["budget"])?,
        counts: (
            count(&counts["active"])?,
            count(&counts["archived"])?,
            count(&counts["orphaned"])?,
        ),
    })
}

//! Where an import writes: the running server that holds the storage root (over its
//! REST API, the route the graph view takes), or, when none runs, the store itself,
//! opened under the root's lock the way a server opens it. Either way the import is
//! one batch through the store (`Store::import`): checked whole, journalled, one
//! maintenance pass that keeps the level in budget, one save.

use super::{GraphFacts, NewEdge, NewNode, TargetGraph};
use crate::clock::Clock;
use crate::config::Settings;
use crate::root_lock::{self, RootLock};
use anyhow::Context;
use kg_client::{self as client, ClientError};
use kg_core::{BatchEdge, BatchNode, BatchOutcome, Level, Store, Target, Tier};
use serde_json::{Value, json};
use std::collections::HashSet;
use std::time::Duration;

/// How long one request to the server may take (a write saves the graph first).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

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
    pub async fn open(settings: &Settings) -> anyhow::Result<Destination> {
        if let Some(held) = root_lock::held(&settings.storage_root) {
            return Destination::server(settings, held).await;
        }
        match RootLock::acquire(&settings.storage_root, &settings.host, settings.port) {
            Ok(lock) => {
                let clock = settings.clock();
                let store = Store::open(settings.store_config(), clock.now()).map_err(|e| {
                    anyhow::anyhow!(
                        "cannot open the storage root {}: {e}",
                        settings.storage_root.display()
                    )
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

    async fn server(settings: &Settings, held: root_lock::RootHeld) -> anyhow::Result<Destination> {
        let Some(holder) = held.holder else {
            anyhow::bail!(
                "the storage root {} is held by a KG Memory server whose address cannot be read from its lock file; stop it, or run the import where it can be reached",
                settings.storage_root.display()
            );
        };
        let base = holder.base_url();
        client::get(&format!("{base}/health"), Duration::from_secs(5))
            .await
            .with_context(|| {
                format!(
                    "the KG Memory server holding {} (pid {}) does not answer at {base}",
                    settings.storage_root.display(),
                    holder.pid
                )
            })?;
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
    pub async fn facts(&self, target: &TargetGraph) -> anyhow::Result<GraphFacts> {
        match self {
            Destination::Server { base } => {
                let mut url = format!("{base}/api/view/level?level={}", target.level.as_str());
                if let Some(path) = &target.project {
                    url.push_str(&format!("&project_path={}", client::encode(path)));
                }
                let body = client::get(&url, REQUEST_TIMEOUT)
                    .await
                    .map_err(refusal)
                    .with_context(|| format!("cannot read the {}", target.name()))?;
                let level: Value = serde_json::from_str(&body)
                    .context("the server's answer about the graph is not JSON")?;
                Ok(facts_of_view(&level))
            }
            Destination::Store { store, clock, .. } => {
                let slot = match &target.project {
                    None => store.user_slot().clone(),
                    Some(path) => store
                        .existing_project_slot(path, clock.now())
                        .map_err(|e| anyhow::anyhow!("{e}"))
                        .with_context(|| format!("cannot open the {}", target.name()))?,
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
    ) -> anyhow::Result<BatchOutcome> {
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
                let answer: Value = serde_json::from_str(&answer)
                    .context("the server's answer to the import is not JSON")?;
                super::route::outcome_of(&answer)
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
                    .map_err(|e| anyhow::anyhow!("{e}"))
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
fn refusal(e: ClientError) -> anyhow::Error {
    if let ClientError::Status { status, body, .. } = &e
        && let Ok(answer) = serde_json::from_str::<Value>(body)
        && let Some(detail) = answer["detail"].as_str()
    {
        return anyhow::anyhow!("the server refused it ({status}): {detail}");
    }
    anyhow::Error::new(e)
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

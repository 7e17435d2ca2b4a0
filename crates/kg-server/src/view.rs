//! The graph view: the built page (`ui/dist`, embedded by `build.rs`) at `/ui`, and the
//! REST routes only the view needs, under `/api/view/…`:
//!
//! - `GET /api/view/graphs` — the user graph and every project graph on disk (or in
//!   memory), with tier counts and maintenance debt, for the graph selector;
//! - `GET /api/view/level?level=user|project&project_path=…` — one level's nodes and
//!   edges with why each node is in its tier (score and percentiles), live edges, the
//!   budget from the server's own accounting, HEALTH, DEBT with its factors, and the
//!   debt items;
//! - `GET /api/view/search?q=…&levels=user,project&project_path=…` — the server's
//!   ranking, without a session (nothing is marked seen);
//! - `GET /api/view/neighbourhood?level=user|project&project_path=…&id=…&k=1|2|3` — a
//!   node and what lies within `k` hops of it, across tiers (`kg_core::neighbourhood`);
//!
//! The view's changes (moves, edits, deletions), previewed and undoable, are in
//! `steps.rs`. Nothing here reads a node the way an agent does: looking at a node in
//! the view never promotes it; only an explicit step does.

use crate::payload::{
    self, ArtifactRow, Budget, Connector, DebtItem, EdgeRow, GraphList, GraphRow, Health,
    LevelData, NeighbourRow, NeighbourhoodAnswer, NodeRow, PathEdge, SearchAnswer, SearchHit,
};
use crate::rest::{Answer, ApiError, ApiResult, FieldProblem, param};
use crate::state::AppState;
use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use kg_core::GraphSlot;
use kg_core::{Graph, StoreError};
use kg_core::{InspectConfig, LevelInspection};
use kg_core::{Level, Tier};
use kg_core::{NEIGHBOURHOOD_HOPS, NeighbourhoodError};
use kg_core::{query_terms, search};
use std::collections::HashMap;
use std::sync::Arc;

mod assets {
    include!(concat!(env!("OUT_DIR"), "/ui_assets.rs"));
}

type Shared = State<Arc<AppState>>;
type Params = Query<HashMap<String, String>>;

pub fn router() -> Router<Arc<AppState>> {
    Router::new()
        .route("/ui", get(index))
        .route("/ui/", get(index))
        .route("/ui/{*path}", get(asset))
        .route("/api/view/graphs", get(graphs))
        .route("/api/view/level", get(level))
        .route("/api/view/search", get(search_route))
        .route("/api/view/neighbourhood", get(neighbourhood_route))
}

// ----- the page ---------------------------------------------------------------------

/// Is the page built into this binary?
pub fn embedded() -> bool {
    find_asset("index.html").is_some()
}

fn find_asset(path: &str) -> Option<&'static [u8]> {
    assets::ASSETS
        .iter()
        .find(|(p, _)| *p == path)
        .map(|(_, bytes)| *bytes)
}

fn content_type(path: &str) -> &'static str {
    let ext = path.rsplit('.').next().unwrap_or("").to_ascii_lowercase();
    match ext.as_str() {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "json" | "map" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "ico" => "image/x-icon",
        "woff2" => "font/woff2",
        "txt" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

fn not_built() -> Response {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        "The graph view is not built into this server. Build it with `cd ui && npm ci && npm run build`, then rebuild the server (cargo build -p kg-cli).\n",
    )
        .into_response()
}

/// What the page may load and who may frame it: scripts, styles, fonts and images from
/// the server itself, connections to itself and its WebSocket, no plugins, no forms
/// sent elsewhere, and no framing (so no other page can overlay it and steer clicks).
/// `'self'` covers `ws:` only in newer engines, so the WebSocket is named from the
/// `Host` the guard already checked to be local.
fn with_page_policy(request: &HeaderMap, mut response: Response) -> Response {
    let host = request
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .filter(|h| {
            !h.is_empty()
                && h.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b".:-[]".contains(&b))
        });
    let ws = host.map(|h| format!(" ws://{h}")).unwrap_or_default();
    let policy = format!(
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
         font-src 'self'; connect-src 'self'{ws}; base-uri 'none'; form-action 'none'; \
         frame-ancestors 'none'"
    );
    let headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(&policy) {
        headers.insert(header::CONTENT_SECURITY_POLICY, value);
    }
    // For browsers that predate `frame-ancestors`.
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

async fn index(request: HeaderMap) -> Response {
    let response = match find_asset("index.html") {
        Some(bytes) => (
            [
                (header::CONTENT_TYPE, "text/html; charset=utf-8"),
                (header::CACHE_CONTROL, "no-cache"),
            ],
            bytes,
        )
            .into_response(),
        None => not_built(),
    };
    with_page_policy(&request, response)
}

async fn asset(Path(path): Path<String>, request: HeaderMap) -> Response {
    if path.is_empty() || path == "index.html" {
        return index(request).await;
    }
    if !embedded() {
        return with_page_policy(&request, not_built());
    }
    let response = match find_asset(&path) {
        Some(bytes) => {
            // Vite names built assets by content hash: they never change.
            let cache = if path.starts_with("assets/") {
                "public, max-age=31536000, immutable"
            } else {
                "no-cache"
            };
            (
                [
                    (header::CONTENT_TYPE, content_type(&path)),
                    (header::CACHE_CONTROL, cache),
                ],
                bytes,
            )
                .into_response()
        }
        None => (
            StatusCode::NOT_FOUND,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            "Not Found",
        )
            .into_response(),
    };
    with_page_policy(&request, response)
}

// ----- helpers ----------------------------------------------------------------------

/// The graph a view request names: the user graph, or a project by its path.
pub(crate) fn slot_of(
    state: &AppState,
    level: Level,
    project_path: Option<&str>,
    now: f64,
) -> Result<Arc<GraphSlot>, ApiError> {
    match level {
        Level::User => Ok(state.store.user_slot().clone()),
        Level::Project => {
            let path = project_path.ok_or_else(|| {
                ApiError::bad_request("project_path is required for the project level")
            })?;
            Ok(state.store.existing_project_slot(path, now)?)
        }
    }
}

fn parse_level(text: Option<&str>) -> Result<Level, ApiError> {
    Level::parse(text.unwrap_or("user")).map_err(ApiError::bad_request)
}

fn inspect_config(state: &AppState) -> InspectConfig {
    state.store.config().inspect_config()
}

fn level_data<'a>(
    level: Level,
    slot: &'a GraphSlot,
    graph: &'a Graph,
    (inspection, config): (&'a LevelInspection, InspectConfig),
    offers: &[(kg_core::StaleTouch, Option<String>)],
    damaged: Option<kg_core::DamagedFile>,
    change_head: u64,
) -> LevelData<'a> {
    let offer = |id: &str, touch: Option<&str>| {
        let touch = touch?;
        offers.iter().find(|(s, _)| s.id == id && s.touch == touch)
    };
    let h = &inspection.health;
    LevelData {
        level: level.into(),
        project_path: slot.project_root(),
        graph: slot.slug.as_deref().unwrap_or("user"),
        counts: inspection.counts.into(),
        budget: Budget::of(inspection, config.grace_days),
        health: Health {
            nodes: h.nodes,
            edges: h.edges,
            orphans: h.orphans,
            orphan_pct: h.orphan_pct,
            avg_edges: h.avg_edges,
            line: &h.line,
        },
        debt: (&inspection.debt).into(),
        debt_items: inspection
            .debt_items
            .iter()
            .map(|i| DebtItem {
                kind: i.kind.into(),
                id: &i.id,
                gist_chars: i.gist_chars,
                touch: i.touch.as_deref(),
                file: offer(&i.id, i.touch.as_deref()).map(|(s, _)| s.file.clone()),
                renamed_to: offer(&i.id, i.touch.as_deref()).and_then(|(_, to)| to.clone()),
            })
            .collect(),
        damaged: damaged.map(Into::into),
        change_head,
        nodes: graph
            .nodes
            .values()
            .zip(&inspection.nodes)
            .map(|(node, why)| NodeRow {
                node,
                tier: why.tier.into(),
                why: why.into(),
            })
            .collect(),
        edges: graph
            .edges
            .values()
            .zip(&inspection.live_edges)
            .map(|(edge, &live)| EdgeRow {
                edge: edge.as_object(),
                live,
                from_artifact: kg_core::is_artifact_ref(edge.from()),
                to_artifact: kg_core::is_artifact_ref(edge.to()),
            })
            .collect(),
    }
}

// ----- routes -----------------------------------------------------------------------

/// `GET /api/view/graphs`: the store's catalogue: the user graph, then every project
/// graph on disk (storage folder order), then projects loaded in memory but not yet
/// saved.
///
/// A [`GraphList`]. Loaded graphs report memory; others their file.
async fn graphs(State(state): Shared) -> Answer {
    state
        .blocking(move |state, now| {
            // Only graphs in memory can have been found damaged.
            let store = &state.store;
            let mut damaged: Vec<((Level, String), kg_core::DamagedFile)> =
                std::iter::once(store.user_slot().clone())
                    .chain(store.loaded_projects())
                    .filter_map(|slot| {
                        let name = slot.slug.clone().unwrap_or_else(|| "user".into());
                        store.damaged_file(&slot).map(|d| ((slot.level, name), d))
                    })
                    .collect();
            let graphs = store
                .catalogue_checked(now, true)
                .into_iter()
                .map(|g| GraphRow {
                    damaged: damaged
                        .iter()
                        .position(|((level, name), _)| *level == g.level && *name == g.name)
                        .map(|i| damaged.swap_remove(i).1.into()),
                    graph: g.name,
                    level: g.level.into(),
                    project_path: g.project_path,
                    loaded: g.loaded,
                    counts: g.counts.into(),
                    debt: (&g.debt).into(),
                })
                .collect();
            let recent_project = store.with_sessions(|sessions| {
                sessions
                    .iter()
                    .filter_map(|(_, r)| r.project_path.as_ref().map(|p| (p, r.last_activity)))
                    .max_by(|a, b| a.1.total_cmp(&b.1))
                    .map(|(p, _)| p.clone())
            });
            Answer(payload::value(&GraphList {
                graphs,
                recent_project,
            }))
        })
        .await
}

/// `GET /api/view/level?level=user|project&project_path=…`: everything the view draws
/// for one level: a [`LevelData`].
async fn level(State(state): Shared, Query(params): Params) -> ApiResult {
    let level = parse_level(param(&params, "level"))?;
    state
        .blocking(move |state, now| {
            let slot = slot_of(state, level, param(&params, "project_path"), now)?;
            let config = inspect_config(state);
            let damaged = state.store.damaged_file(&slot);
            // Looked up now, before the graph is locked for the rest (git may be asked).
            let stale = state.store.stale_touches(&slot);
            let root = slot.project_root().map(std::path::Path::new);
            let offers = state.stale_offers(stale.clone(), root);
            let held_back = state.store.held_back(&slot);
            // Read before the graph: every change numbered below it is in the snapshot
            // (a change is logged after its graph changed, under the graph's lock).
            let change_head = state.store.change_head();
            let body = state.store.with_graph_activity(&slot, |g, activity| {
                let mut inspection =
                    kg_core::inspect_level(g, activity.iter().copied(), config, now)
                        .with_stale_touches(&stale);
                inspection.debt = inspection.debt.with_held_back(held_back);
                let data = level_data(
                    level,
                    &slot,
                    g,
                    (&inspection, config),
                    &offers,
                    damaged,
                    change_head,
                );
                payload::value(&data)
            });
            Ok(Answer(body))
        })
        .await
}

/// `GET /api/view/search?q=…&levels=user,project&project_path=…`: the server's
/// ranking over the levels on screen, as data (a [`SearchAnswer`]). No session:
/// nothing is marked seen.
async fn search_route(State(state): Shared, Query(params): Params) -> ApiResult {
    let query = param(&params, "q").unwrap_or("").to_string();
    let levels = param(&params, "levels")
        .unwrap_or("user,project")
        .to_string();
    state
        .blocking(move |state, now| {
            let mut slots = Vec::new();
            for name in levels.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                let level = Level::parse(name).map_err(ApiError::bad_request)?;
                if level == Level::Project && param(&params, "project_path").is_none() {
                    continue; // no project on screen
                }
                slots.push(slot_of(state, level, param(&params, "project_path"), now)?);
            }
            kg_core::check_query(&query).map_err(ApiError::bad_request)?;
            let terms = query_terms(&query);
            let result = state
                .store
                .with_graphs(&slots, |graphs| search(graphs, &terms, None));
            fn hit(h: &kg_core::Hit, top: bool) -> SearchHit<'_> {
                let tier = if h.orphaned {
                    Tier::Orphaned
                } else if h.archived {
                    Tier::Archived
                } else {
                    Tier::Active
                };
                SearchHit {
                    level: h.level.into(),
                    id: &h.id,
                    gist: &h.gist,
                    tier: tier.into(),
                    score: h.score,
                    top,
                }
            }
            Ok(Answer(payload::value(&SearchAnswer {
                query: &query,
                total: result.total,
                hits: result
                    .top
                    .iter()
                    .map(|h| hit(h, true))
                    .chain(result.more.iter().map(|h| hit(h, false)))
                    .collect(),
                path_edges: result.path_edges.iter().map(PathEdge::from).collect(),
                connectors: result
                    .connectors
                    .iter()
                    .map(|c| Connector {
                        level: c.level.into(),
                        id: &c.id,
                        gist: &c.gist,
                    })
                    .collect(),
            })))
        })
        .await
}

/// `GET /api/view/neighbourhood?level=user|project&project_path=…&id=…&k=…`: node `id`
/// and what lies within `k` hops of it in that level (`k` 1 to 3, 1 when not given),
/// edge direction ignored, every tier: a [`NeighbourhoodAnswer`], from
/// `kg_core::neighbourhood` over the graph as the store holds it. No session: nothing
/// is marked seen. A missing `id` is 422, a bad `k` 400, an unknown node or project 404.
async fn neighbourhood_route(State(state): Shared, Query(params): Params) -> ApiResult {
    let level = parse_level(param(&params, "level"))?;
    let Some(id) = param(&params, "id").map(str::to_string) else {
        return Err(ApiError::Fields(vec![FieldProblem {
            location: "query",
            field: "id",
            message: "Field required",
        }]));
    };
    let k_text = param(&params, "k").unwrap_or("1");
    let k = k_text
        .parse::<usize>()
        .ok()
        .filter(|k| NEIGHBOURHOOD_HOPS.contains(k))
        .ok_or_else(|| ApiError::bad_request(kg_core::hops_message(k_text)))?;
    state
        .blocking(move |state, now| {
            let slot = slot_of(state, level, param(&params, "project_path"), now)?;
            state.store.with_graph(&slot, |g| {
                let n = kg_core::neighbourhood(g, &id, k).map_err(|e| match e {
                    NeighbourhoodError::UnknownNode(id) => {
                        ApiError::from(StoreError::NodeNotFound {
                            id,
                            level: level.as_str().into(),
                        })
                    }
                    e @ NeighbourhoodError::Hops(_) => ApiError::bad_request(e.to_string()),
                })?;
                Ok(Answer(payload::value(&NeighbourhoodAnswer {
                    level: level.into(),
                    project_path: slot.project_root(),
                    id: n.centre,
                    k: n.k,
                    nodes: n
                        .nodes
                        .iter()
                        .map(|x| NeighbourRow {
                            id: x.id,
                            distance: x.distance,
                            tier: x.tier.into(),
                        })
                        .collect(),
                    artifacts: n
                        .artifacts
                        .iter()
                        .map(|a| ArtifactRow {
                            path: a.path,
                            distance: a.distance,
                        })
                        .collect(),
                    edges: n.edges.iter().copied().map(PathEdge::from).collect(),
                    outside_edges: n.outside_edges,
                })))
            })
        })
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assets_get_their_content_types() {
        assert_eq!(content_type("index.html"), "text/html; charset=utf-8");
        assert_eq!(
            content_type("assets/index-AbC.js"),
            "text/javascript; charset=utf-8"
        );
        assert_eq!(
            content_type("assets/index-AbC.css"),
            "text/css; charset=utf-8"
        );
        assert_eq!(content_type("x.SVG"), "image/svg+xml");
        assert_eq!(content_type("blob"), "application/octet-stream");
    }

    #[test]
    fn the_page_is_embedded_whole_or_not_at_all() {
        // Either `ui/dist` was built (index.html and its hashed assets are all here)
        // or nothing is embedded and `/ui` explains how to build it.
        if embedded() {
            assert!(assets::ASSETS.iter().any(|(p, _)| p.starts_with("assets/")));
        } else {
            assert!(assets::ASSETS.is_empty());
        }
    }
}

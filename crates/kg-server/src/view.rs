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
//! - `POST /api/view/tier` — drag to promote / archive by hand through
//!   `Store::set_tier`, re-balancing the budget when a promotion overfills the level.
//!
//! Nothing here reads a node the way an agent does: looking at a node in the view never
//! promotes it; only an explicit move does.

// Handlers answer errors as ready responses; boxing them would only add noise.
#![allow(clippy::result_large_err)]

use crate::app::AppState;
use crate::rest::{JsonObject, detail, ok, store_error};
use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use kg_core::inspect::{self, InspectConfig, LevelInspection};
use kg_core::model::{Graph, Level, Tier};
use kg_core::pyfmt::round_to;
use kg_core::search::{query_terms, search};
use kg_core::store::GraphSlot;
use kg_core::tool_events::ToolEvents;
use kg_core::{StoreError, Target};
use serde_json::{Map, Value, json};
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
        .route("/api/view/tier", post(tier))
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
        "The graph view is not built into this server. Build it with `cd ui && npm ci && npm run build`, then rebuild the server (cargo build -p kg-server).\n",
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

fn param<'a>(params: &'a HashMap<String, String>, key: &str) -> Option<&'a str> {
    params
        .get(key)
        .map(String::as_str)
        .filter(|s| !s.is_empty())
}

fn num(x: f64, digits: usize) -> Value {
    kg_core::model::float_value(round_to(x, digits))
}

/// The graph a view request names: the user graph, or a project by its path.
fn slot_of(
    state: &AppState,
    level: Level,
    project_path: Option<&str>,
    now: f64,
) -> Result<Arc<GraphSlot>, Response> {
    match level {
        Level::User => Ok(state.store.user_slot().clone()),
        Level::Project => {
            let Some(path) = project_path else {
                return Err(detail(
                    StatusCode::BAD_REQUEST,
                    "project_path is required for the project level",
                ));
            };
            state
                .store
                .existing_project_slot(path, now)
                .map_err(|e| store_error(&e))
        }
    }
}

fn parse_level(text: Option<&str>) -> Result<Level, Response> {
    Level::parse(text.unwrap_or("user")).map_err(|m| detail(StatusCode::BAD_REQUEST, m))
}

fn counts_json((active, archived, orphaned): (usize, usize, usize)) -> Value {
    json!({"active": active, "archived": archived, "orphaned": orphaned})
}

/// Tool-event stamps of a project (they count as activity in its debt).
fn extra_activity(state: &AppState, slot: &GraphSlot) -> Vec<f64> {
    slot.slug
        .as_deref()
        .map(|slug| {
            ToolEvents::load(&state.store.layout().tool_events(slug))
                .last_seen()
                .collect()
        })
        .unwrap_or_default()
}

fn inspect_config(state: &AppState) -> InspectConfig {
    InspectConfig {
        grace_days: state.store.config().grace_days,
        orphan_grace_days: state.store.config().orphan_grace_days,
    }
}

fn budget_json(b: &inspect::Budget) -> Value {
    json!({
        "chars": b.chars,
        "budget": b.budget,
        "fill_line": b.fill_line,
        "fill_ratio": num(b.fill_line as f64 / b.budget as f64, 2),
        "anchor_chars": b.anchor_chars,
        "anchor_budget": b.anchor_budget,
        "state": b.state.as_str(),
    })
}

fn why_json(w: &inspect::TierWhy) -> Value {
    let s = w.score;
    json!({
        "score": s.map(|s| num(s.score, 4)),
        "recency": s.map(|s| num(s.recency, 4)),
        "connectedness": s.map(|s| num(s.connectedness, 4)),
        "usefulness": s.map(|s| num(s.usefulness, 4)),
        "pool": w.pool.map(|p| p.as_str()),
        "rank": w.rank,
        "rank_of": w.rank_of,
        "grace_left_days": w.grace_left_days.map(|d| num(d, 1)),
        "cost": w.cost,
        "traces": w.traces,
        "deleted_at": w.deleted_at.map(kg_core::model::float_value),
        "reason": w.reason,
    })
}

fn level_json(
    level: Level,
    slot: &GraphSlot,
    graph: &Graph,
    inspection: &LevelInspection,
) -> Value {
    let nodes: Vec<Value> = graph
        .nodes
        .values()
        .zip(&inspection.nodes)
        .map(|(node, why)| {
            json!({
                "node": node,
                "tier": why.tier.as_str(),
                "why": why_json(why),
            })
        })
        .collect();
    let edges: Vec<Value> = graph
        .edges
        .values()
        .zip(&inspection.live_edges)
        .map(|(edge, live)| json!({"edge": edge.as_object(), "live": live}))
        .collect();
    let d = &inspection.debt;
    let mut debt = d.debt.to_object();
    debt.insert("staleness".into(), num(d.staleness, 3));
    debt.insert("activity".into(), num(d.activity, 3));
    debt.insert("deficit".into(), num(d.deficit, 3));
    debt.insert("line".into(), Value::String(d.line.clone()));
    let h = &inspection.health;
    json!({
        "level": level.as_str(),
        "project_path": slot.project_root(),
        "graph": slot.slug.clone().unwrap_or_else(|| "user".into()),
        "counts": counts_json(inspection.counts),
        "budget": budget_json(&inspection.budget),
        "health": {
            "nodes": h.nodes, "edges": h.edges, "orphans": h.orphans,
            "orphan_pct": h.orphan_pct, "avg_edges": kg_core::model::float_value(h.avg_edges),
            "line": h.line,
        },
        "debt": debt,
        "debt_items": inspection.debt_items.iter().map(|i| json!({
            "kind": i.kind.as_str(), "id": i.id, "gist_chars": i.gist_chars,
        })).collect::<Vec<_>>(),
        "nodes": nodes,
        "edges": edges,
    })
}

// ----- routes -----------------------------------------------------------------------

/// `GET /api/view/graphs`: the user graph, then every project graph on disk (storage
/// folder order) plus projects loaded in memory but not yet saved.
///
/// `{"graphs":[{"graph","level","project_path","loaded","counts":{active,archived,
/// orphaned},"debt":{…}|null}]}`. Loaded graphs report memory; others their file.
async fn graphs(State(state): Shared) -> Response {
    state
        .blocking(move |state, now| {
            let store = &state.store;
            let debts: HashMap<String, Value> = kg_core::debt::survey(store.layout(), now)
                .into_iter()
                .map(|r| (r.graph.clone(), Value::Object(r.debt.to_object())))
                .collect();
            let loaded = store.loaded_projects();
            let mut rows = Vec::new();
            let user = store.user_slot();
            let user_counts = store.with_graph(user, kg_core::render::tier_counts);
            let user_debt = kg_core::tools::level_debt(store, user, now).to_object();
            rows.push(json!({
                "graph": "user", "level": "user", "project_path": null, "loaded": true,
                "counts": counts_json(user_counts), "debt": user_debt,
            }));
            let mut seen = std::collections::HashSet::new();
            let mut dirs: Vec<String> = std::fs::read_dir(store.layout().projects_dir())
                .map(|it| {
                    it.flatten()
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .filter(|d| kg_core::namespace::validate_slug(d).is_ok())
                        .collect()
                })
                .unwrap_or_default();
            dirs.sort();
            for dir in dirs {
                let in_memory = loaded.iter().find(|s| s.slug.as_deref() == Some(&dir));
                let (project_path, counts, is_loaded) = match in_memory {
                    Some(slot) => (
                        slot.project_root().map(str::to_string),
                        store.with_graph(slot, kg_core::render::tier_counts),
                        true,
                    ),
                    None => {
                        let Ok(bytes) = std::fs::read(store.layout().project_graph(&dir)) else {
                            continue;
                        };
                        let Ok(file) = kg_core::persist::parse_graph(&bytes) else {
                            continue;
                        };
                        (
                            file.project_path,
                            kg_core::render::tier_counts(&file.graph),
                            false,
                        )
                    }
                };
                seen.insert(dir.clone());
                let debt = match in_memory {
                    Some(slot) => {
                        Value::Object(kg_core::tools::level_debt(store, slot, now).to_object())
                    }
                    None => debts.get(&dir).cloned().unwrap_or(Value::Null),
                };
                rows.push(json!({
                    "graph": dir, "level": "project", "project_path": project_path,
                    "loaded": is_loaded, "counts": counts_json(counts), "debt": debt,
                }));
            }
            for slot in loaded {
                let Some(slug) = slot.slug.clone() else {
                    continue;
                };
                if seen.contains(&slug) {
                    continue;
                }
                let counts = store.with_graph(&slot, kg_core::render::tier_counts);
                rows.push(json!({
                    "graph": slug, "level": "project", "project_path": slot.project_root(),
                    "loaded": true, "counts": counts_json(counts),
                    "debt": kg_core::tools::level_debt(store, &slot, now).to_object(),
                }));
            }
            ok(json!({"graphs": rows}))
        })
        .await
}

/// `GET /api/view/level?level=user|project&project_path=…`: everything the view draws
/// for one level (see [`level_json`] for the shape).
async fn level(State(state): Shared, Query(params): Params) -> Response {
    let level = match parse_level(param(&params, "level")) {
        Ok(l) => l,
        Err(r) => return r,
    };
    state
        .blocking(move |state, now| {
            let slot = match slot_of(state, level, param(&params, "project_path"), now) {
                Ok(s) => s,
                Err(r) => return r,
            };
            let extra = extra_activity(state, &slot);
            let config = inspect_config(state);
            let body = state.store.with_graph(&slot, |g| {
                let inspection = inspect::inspect_level(g, extra, config, now);
                level_json(level, &slot, g, &inspection)
            });
            ok(body)
        })
        .await
}

/// `GET /api/view/search?q=…&levels=user,project&project_path=…`: the server's
/// ranking over the levels on screen, as data. No session: nothing is marked seen.
///
/// `{"query","total","hits":[{"level","id","gist","tier","score","top"}],
/// "path_edges":[{"from","to","rel"}],"connectors":[{"level","id","gist"}]}`.
async fn search_route(State(state): Shared, Query(params): Params) -> Response {
    let query = param(&params, "q").unwrap_or("").to_string();
    let levels = param(&params, "levels")
        .unwrap_or("user,project")
        .to_string();
    state
        .blocking(move |state, now| {
            let mut slots = Vec::new();
            for name in levels.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                let level = match Level::parse(name) {
                    Ok(l) => l,
                    Err(m) => return detail(StatusCode::BAD_REQUEST, m),
                };
                if level == Level::Project && param(&params, "project_path").is_none() {
                    continue; // no project on screen
                }
                match slot_of(state, level, param(&params, "project_path"), now) {
                    Ok(s) => slots.push(s),
                    Err(r) => return r,
                }
            }
            let terms = query_terms(&query);
            let result = state
                .store
                .with_graphs(&slots, |graphs| search(graphs, &terms, None));
            let hit = |h: &kg_core::search::Hit, top: bool| {
                let tier = if h.orphaned {
                    Tier::Orphaned
                } else if h.archived {
                    Tier::Archived
                } else {
                    Tier::Active
                };
                json!({
                    "level": h.level.as_str(), "id": h.id, "gist": h.gist,
                    "tier": tier.as_str(), "score": kg_core::model::float_value(h.score), "top": top,
                })
            };
            let hits: Vec<Value> = result
                .top
                .iter()
                .map(|h| hit(h, true))
                .chain(result.more.iter().map(|h| hit(h, false)))
                .collect();
            ok(json!({
                "query": query,
                "total": result.total,
                "hits": hits,
                "path_edges": result.path_edges.iter().map(|k| json!({"from": k.from(), "to": k.to(), "rel": k.rel()})).collect::<Vec<_>>(),
                "connectors": result.connectors.iter().map(|c| json!({"level": c.level.as_str(), "id": c.id, "gist": c.gist})).collect::<Vec<_>>(),
            }))
        })
        .await
}

fn tiers_of(state: &AppState, slot: &GraphSlot) -> HashMap<String, Tier> {
    state.store.with_graph(slot, |g| {
        g.nodes
            .iter()
            .map(|(id, n)| (id.clone(), n.tier()))
            .collect()
    })
}

/// `POST /api/view/tier` with `{level, id, tier: "active"|"archived", project_path?,
/// session_id?}`: drag to promote (a read: chain rescue included) or archive by hand.
///
/// When a promotion takes the level over its 17,500-character budget, the maintenance
/// pass runs at once (it would within `KG_SAVE_INTERVAL` anyway) and the answer says
/// what it moved. An archive by hand never triggers a pass: below the fill line the
/// next tick's refill may restore archived nodes, which the view reports as it
/// happens.
///
/// `{"id","level","from","to","node":{…},"rescued":[…],"rebalanced":{"archived",
/// "restored","orphaned","reason"}|null,"budget":{…}}`.
async fn tier(State(state): Shared, body: Result<JsonObject, Response>) -> Response {
    let JsonObject(body) = match body {
        Ok(b) => b,
        Err(r) => return r,
    };
    let text = |k: &str| {
        body.get(k)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    let (Some(id), Some(tier_name)) = (text("id"), text("tier")) else {
        return detail(
            StatusCode::UNPROCESSABLE_ENTITY,
            "id and tier (\"active\" or \"archived\") are required",
        );
    };
    let level = match parse_level(text("level").as_deref()) {
        Ok(l) => l,
        Err(r) => return r,
    };
    let to = match tier_name.as_str() {
        "active" => Tier::Active,
        "archived" => Tier::Archived,
        other => {
            return detail(
                StatusCode::BAD_REQUEST,
                format!("Invalid tier '{other}': move a node to \"active\" or \"archived\""),
            );
        }
    };
    let project_path = text("project_path");
    let session = text("session_id");
    state
        .blocking(move |state, now| {
            let slot = match slot_of(state, level, project_path.as_deref(), now) {
                Ok(s) => s,
                Err(r) => return r,
            };
            let before = tiers_of(state, &slot);
            let Some(from) = before.get(&id).copied() else {
                return store_error(&StoreError::NodeNotFound {
                    id: id.clone(),
                    level: level.as_str().into(),
                });
            };
            if from == Tier::Orphaned && to == Tier::Archived {
                return detail(
                    StatusCode::CONFLICT,
                    format!("'{id}' is orphaned: drag it to the active area to promote it (an orphan cannot be archived by hand)"),
                );
            }
            let target = Target {
                level,
                session: session.as_deref(),
                project_path: slot.project_root(),
            };
            let read = match state.store.set_tier(target, &id, to, now) {
                Ok(r) => r,
                Err(e) => return store_error(&e),
            };
            let over = state.store.with_graph(&slot, |g| {
                kg_core::render::level_chars(g) > kg_core::compact::LEVEL_BUDGET
            });
            let rebalanced = (to == Tier::Active && over).then(|| {
                let moves = state.store.maintain(
                    &slot,
                    "the promotion took the level over its 17,500-character budget",
                    now,
                );
                let sorted = |mut ids: Vec<String>| {
                    ids.sort();
                    ids
                };
                json!({
                    "archived": sorted(moves.archived),
                    "restored": sorted(moves.restored),
                    "orphaned": sorted(moves.orphaned),
                    "reason": "the promotion took the level over its 17,500-character budget, so the maintenance pass archived the lowest-scored active nodes",
                })
            });
            let node = state
                .store
                .with_graph(&slot, |g| g.nodes.get(&id).map(|n| n.to_object()))
                .unwrap_or_else(|| read.node.clone());
            let now_tier = state
                .store
                .with_graph(&slot, |g| g.nodes.get(&id).map(|n| n.tier()))
                .unwrap_or(to);
            let budget = state.store.with_graph(&slot, inspect::level_budget);
            let mut out = Map::new();
            out.insert("id".into(), Value::String(id));
            out.insert("level".into(), Value::String(level.as_str().into()));
            out.insert("from".into(), Value::String(from.as_str().into()));
            out.insert("to".into(), Value::String(now_tier.as_str().into()));
            out.insert("node".into(), Value::Object(node));
            out.insert(
                "rescued".into(),
                Value::Array(read.rescued.into_iter().map(Value::String).collect()),
            );
            out.insert("rebalanced".into(), rebalanced.unwrap_or(Value::Null));
            out.insert("budget".into(), budget_json(&budget));
            ok(Value::Object(out))
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

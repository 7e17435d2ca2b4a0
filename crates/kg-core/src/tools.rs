//! The nine memory tools as text-in, text-out operations over the [`Store`].
//!
//! Transports (MCP over HTTP or stdio, tests) decode their own argument types and call
//! these; the answers are exactly what the model reads.

use crate::model::{EdgeKey, IdentKind, Level, validate_ident};
use crate::relevance::Query;
use crate::render::{LevelSource, ReadKind, ReadOptions, RenderKey, render_read};
use crate::search::{query_terms, search, search_ours, search_text, shown_ids};
use crate::session::{Page, Pages, View};
use crate::store::{Actor, GraphSlot, Policy, Store, StoreError, Target, WriteCheck};
use crate::wording;
use serde_json::Value;
use std::collections::HashSet;
use std::sync::Arc;
use text::{likes_text, node_block, node_not_found_block, progress_text, sync_text};

#[cfg(test)]
mod memo_tests;
pub mod pages;
pub mod text;
pub mod touches;

/// A tool's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolText {
    /// What the model reads: the answer, or the error message prefixed `Error: ` (a
    /// rejected identifier, an unknown node or session) or `Internal error: ` (any other
    /// failure), as the reference words them.
    pub text: String,
    /// Set for every error (the reference never set it; clients should know).
    pub is_error: bool,
}

impl ToolText {
    fn ok(text: String) -> ToolText {
        ToolText {
            text,
            is_error: false,
        }
    }

    fn error(e: &StoreError) -> ToolText {
        let prefix = if e.is_domain() {
            "Error"
        } else {
            "Internal error"
        };
        ToolText {
            text: format!("{prefix}: {e}"),
            is_error: true,
        }
    }
}

fn answer(result: Result<String, StoreError>) -> ToolText {
    match result {
        Ok(text) => ToolText::ok(text),
        Err(e) => ToolText::error(&e),
    }
}

/// Arguments of `kg_read`.
#[derive(Debug, Clone, Default)]
pub struct ReadArgs {
    /// The project folder. Without a usable `session_id`, the call continues the session
    /// a hook just preloaded for this project (when exactly one fits), else starts one.
    pub cwd: Option<String>,
    /// A session returned by an earlier call; used only when it is known and bound to a
    /// project, else `cwd` decides.
    pub session_id: Option<String>,
    /// One node to read in full; ignored when `ids` is not empty.
    pub id: Option<String>,
    /// Nodes to read in full, in this order (a missing one answers NOT FOUND). Without
    /// `ids` or `id`, the whole memory is rendered.
    pub ids: Option<Vec<String>>,
    /// Limits id lookups to one graph; without it the user graph is tried first, then the
    /// project graph.
    pub level: Option<Level>,
    /// Fetch the next part of the session's last read that did not fit in one reply.
    pub more: bool,
    /// Who reads: replies longer than it keeps whole come in parts.
    pub client: pages::Client,
}

/// `kg_read`: the whole memory, or nodes in full; under our policy a reply longer than
/// the client keeps whole comes in parts, the rest fetched with `more` (the reference
/// has no parts, and reads `more` as an argument it does not know).
pub fn kg_read(store: &Store, args: &ReadArgs, now: f64) -> ToolText {
    if args.more && store.config().policy == Policy::Ours {
        return next_part(store, args.session_id.as_deref().unwrap_or_default(), now);
    }
    // Looked up in place: a copy of the record (its seen ids) cost more than the
    // rest of a full read's bookkeeping.
    let reusable = args.session_id.as_deref().filter(|sid| {
        store.with_sessions(|s| s.lookup(sid).is_some_and(|r| r.project_path.is_some()))
    });
    // Said once, when this call starts a session whose folder could belong to more
    // than one project.
    let mut project_note = None;
    // Said once, when a Codex session starts here with no hook behind it.
    let mut no_hooks = false;
    let sid = match (reusable, args.cwd.as_deref()) {
        (Some(sid), _) => {
            if let Err(e) = store.count_op(sid, now) {
                return ToolText::error(&e);
            }
            sid.to_string()
        }
        (None, Some(cwd)) => match preloaded_session_for(store, cwd, now) {
            Some(sid) => {
                if let Err(e) = store.count_op(&sid, now) {
                    return ToolText::error(&e);
                }
                sid
            }
            None => match store.project_of(cwd) {
                Ok(choice) => {
                    project_note = choice.note();
                    no_hooks = args.client == pages::Client::Codex
                        && store.config().policy == Policy::Ours
                        && !hooks_preloaded_lately(store, &choice.root, now);
                    store.register_in(Some(choice.root), None, now)
                }
                Err(e) => return ToolText::error(&e),
            },
        },
        (None, None) => {
            return ToolText {
                text: format!("Error: {}", wording::READ_NEEDS_CWD),
                is_error: true,
            };
        }
    };
    let ids: Option<Vec<String>> = args
        .ids
        .clone()
        .filter(|ids| !ids.is_empty())
        .or_else(|| args.id.clone().map(|id| vec![id]));
    let read = match ids {
        Some(ids) => read_nodes(store, &sid, &ids, args.level, now).map(|text| (text, None)),
        None => Ok(full_read(store, &sid, now)).map(|(text, effects)| (text, Some(effects))),
    };
    let mut reply = match read {
        Ok((text, effects)) => ToolText::ok(deliver(store, &sid, text, effects, args.client, now)),
        Err(e) => ToolText::error(&e),
    };
    if let Some(note) = project_note {
        reply.text.push_str("\n\n");
        reply.text.push_str(&note);
    }
    if no_hooks && !reply.is_error {
        reply.text.push_str("\n\n");
        reply.text.push_str(wording::CODEX_NO_HOOKS);
    }
    reply
}

/// Some session of the project at `root` was preloaded by a session-start hook within
/// the hour: the agent's hooks run.
fn hooks_preloaded_lately(store: &Store, root: &str, now: f64) -> bool {
    store.with_sessions(|sessions| {
        sessions.iter().any(|(_, r)| {
            r.project_path.as_deref() == Some(root)
                && r.claude_sid.is_some()
                && r.preloaded_ids.is_some()
                && now - r.last_activity <= PRELOAD_FRESH_SECS
        })
    })
}

/// What a full read tells the session, applied as its parts are delivered.
struct FullReadEffects {
    /// Every rendered active node: seen.
    active: crate::structure::IdList,
    /// The ones whose gist is shown: their view time is recorded.
    gists: crate::structure::IdList,
    viewed_at: f64,
}

/// Hand the session a reply: whole, or its first part, the others kept for
/// `kg_read(more=true)`. A full read's effects follow delivery: an id is seen with the
/// part that shows its line, and the read completes with the last part.
fn deliver(
    store: &Store,
    sid: &str,
    text: String,
    effects: Option<FullReadEffects>,
    client: pages::Client,
    now: f64,
) -> String {
    let parts = match store.config().policy {
        Policy::Ours => pages::split_parts(text, client.unit(), client.reply_limit()),
        Policy::Reference => vec![text],
    };
    let total = parts.len();
    let viewed_at = effects.as_ref().map_or(now, |e| e.viewed_at);
    let gists: HashSet<&str> = effects
        .as_ref()
        .map(|e| e.gists.iter().collect())
        .unwrap_or_default();
    if total == 1 {
        // One part: every id is seen with it and nothing is kept for `more`; what
        // `apply_page` does with a page, straight from the render's id lists.
        let text = parts.into_iter().next().unwrap_or_default();
        store.with_sessions_mut(|sessions| {
            if let Some(r) = sessions.lookup_mut(sid) {
                if let Some(e) = &effects {
                    r.mark_seen(e.active.iter());
                    r.record_view(
                        e.active.iter().filter(|id| gists.contains(id)),
                        View::Seen,
                        viewed_at,
                    );
                    r.full_read_ts = Some(now);
                }
                r.pages = None;
            }
        });
        return text;
    }
    let active: Vec<String> = effects
        .as_ref()
        .map(|e| e.active.to_vec())
        .unwrap_or_default();
    let mut assigned: HashSet<String> = HashSet::new();
    let mut built: Vec<Page> = Vec::with_capacity(total);
    for (i, part) in pages::with_footers(parts, sid).into_iter().enumerate() {
        let last = i + 1 == total;
        let mut page = Page {
            text: part,
            completes_full_read: last && effects.is_some(),
            ..Page::default()
        };
        if effects.is_some() {
            let seen: Vec<String> = if last {
                active
                    .iter()
                    .filter(|id| !assigned.contains(*id))
                    .cloned()
                    .collect()
            } else {
                pages::ids_shown_in(&page.text, &active)
                    .into_iter()
                    .filter(|id| !assigned.contains(id))
                    .collect()
            };
            page.gists = seen
                .iter()
                .filter(|id| gists.contains(id.as_str()))
                .cloned()
                .collect();
            assigned.extend(seen.iter().cloned());
            page.seen = seen;
        }
        built.push(page);
    }
    let first = built.first().cloned().unwrap_or_default();
    store.with_sessions_mut(|sessions| {
        if let Some(r) = sessions.lookup_mut(sid) {
            apply_page(r, &first, viewed_at, now);
            r.pages = Some(Pages {
                parts: built,
                next: 1,
                viewed_at,
            });
        }
    });
    store.save_sessions();
    first.text
}

fn apply_page(r: &mut crate::session::SessionRecord, page: &Page, viewed_at: f64, now: f64) {
    r.mark_seen(page.seen.iter().map(String::as_str));
    r.record_view(page.gists.iter().map(String::as_str), View::Seen, viewed_at);
    if page.completes_full_read {
        r.full_read_ts = Some(now);
    }
}

/// `kg_read(session_id, more=true)`: the next part of the session's last split read.
fn next_part(store: &Store, sid: &str, now: f64) -> ToolText {
    if let Err(e) = store.count_op(sid, now) {
        return ToolText::error(&e);
    }
    if sid.is_empty() {
        return ToolText::error(&StoreError::SessionRequired);
    }
    let part = store.with_sessions_mut(|sessions| {
        let r = sessions.lookup_mut(sid)?;
        let pages = r.pages.as_mut()?;
        let page = pages.parts.get(pages.next)?.clone();
        pages.next += 1;
        let viewed_at = pages.viewed_at;
        if pages.next >= pages.parts.len() {
            r.pages = None;
        }
        apply_page(r, &page, viewed_at, now);
        Some(page.text)
    });
    store.save_sessions();
    match part {
        Some(text) => ToolText::ok(text),
        None => ToolText {
            text: format!("Error: {}", wording::NOTHING_MORE),
            is_error: true,
        },
    }
}

/// How recent a preload must be for `kg_read(cwd)` to continue its session.
const PRELOAD_FRESH_SECS: f64 = 3_600.0;

/// The session a hook preloaded for this project, when `kg_read(cwd)` is evidently
/// its loud read: exactly one session of the project is bound to Claude Code,
/// preloaded, not yet fully read, and active within the hour. Continuing it (rather
/// than minting a second session) is what stops that session's full-read nudge; with
/// several candidates it is ambiguous, and a fresh session is safer.
fn preloaded_session_for(store: &Store, cwd: &str, now: f64) -> Option<String> {
    let root = store.project_root_of(cwd).ok()?;
    store.with_sessions(|sessions| {
        let mut candidates = sessions.iter().filter(|(_, r)| {
            r.project_path.as_deref() == Some(root.as_str())
                && r.claude_sid.is_some()
                && r.preloaded_ids.is_some()
                && r.full_read_ts.is_none()
                && now - r.last_activity <= PRELOAD_FRESH_SECS
        });
        match (candidates.next(), candidates.next()) {
            (Some((sid, _)), None) => Some(sid.clone()),
            _ => None,
        }
    })
}

fn read_nodes(
    store: &Store,
    sid: &str,
    ids: &[String],
    level: Option<Level>,
    now: f64,
) -> Result<String, StoreError> {
    let mut blocks = Vec::with_capacity(ids.len());
    let mut found = Vec::new();
    for id in ids {
        let target = level.map(|level| Target::session(level, sid));
        match store.read_node(target, Some(sid), id, now) {
            Ok(read) => {
                blocks.push(node_block(&read));
                found.push(id.as_str());
            }
            Err(StoreError::NodeNotFound { .. }) => blocks.push(node_not_found_block(id)),
            Err(e) => return Err(e),
        }
    }
    // Each read recorded its own view time (`Store::read_node`); this keeps the seen
    // list in the order the ids were asked for.
    store.mark_seen(sid, found);
    Ok(format!("{}\n\nSession: {sid}", blocks.join("\n\n")))
}

/// The graphs of a session: the user graph and, when the session has a project, its
/// graph (a project graph that fails to load renders empty, as a full read must still
/// show the user level).
pub fn session_slots(
    store: &Store,
    sid: &str,
    now: f64,
) -> (Arc<GraphSlot>, Option<Arc<GraphSlot>>) {
    let project = match store.session_project_slot(Some(sid), now) {
        Ok(p) => p,
        Err(e) => {
            log::warn!("project graph of session {sid} unavailable: {e}");
            None
        }
    };
    (store.user_slot().clone(), project)
}

/// Render both levels for a session (full read or preload); locks user then project.
/// Also answers the view time of what it shows (see [`Store::event_ts`]). A preload is
/// sized for the `client` that shows it.
pub fn render_session(
    store: &Store,
    sid: &str,
    kind: ReadKind,
    client: pages::Client,
    header: Option<&str>,
    preloaded: Option<&HashSet<String>>,
    now: f64,
) -> (crate::render::ReadRender, f64) {
    let (user, project) = session_slots(store, sid, now);
    let debt_line = |debt: crate::debt::Debt| match store.config().policy {
        Policy::Ours => debt.line(),
        Policy::Reference => debt.reference_line(),
    };
    let user_debt = debt_line(store.level_debt_now(&user, now));
    let project_debt = project
        .as_ref()
        .map(|p| debt_line(store.level_debt_now(p, now)));
    let empty = crate::graph::Graph::default();
    let budgets = store.config().budgets;
    let ours = store.config().policy == Policy::Ours;
    let budget = match kind {
        ReadKind::FullRead => budgets.read,
        ReadKind::Preload if ours => client.preload_budget(budgets.preload),
        ReadKind::Preload => budgets.preload,
    };
    // Ours measures the preload as its client does (Claude Code in UTF-16 code units,
    // Codex in bytes); the render counts characters, so a text over the budget in that
    // unit is rendered again with the excess taken off.
    let unit = match kind {
        ReadKind::Preload if ours => client.unit(),
        _ => pages::Unit::Chars,
    };
    let mut opts = ReadOptions {
        kind,
        budget,
        preloaded,
        header,
        session_id: Some(sid),
        now,
        grace_days: store.config().grace_days,
    };
    let mut slots = vec![user];
    slots.extend(project);
    store.with_graphs_stamped(&slots, |graphs, stamps| {
        let viewed_at = store.event_ts(now);
        let at = |level: Level| graphs.iter().position(|g| g.level == level);
        let (user_at, project_at) = (at(Level::User), at(Level::Project));
        let levels = [
            LevelSource {
                level: Level::User,
                graph: user_at.map_or(&empty, |i| graphs[i].graph),
                debt_line: Some(&user_debt),
            },
            LevelSource {
                level: Level::Project,
                graph: project_at.map_or(&empty, |i| graphs[i].graph),
                debt_line: project_debt.as_deref(),
            },
        ];
        // The render reads the graphs (their stamps), the clock (its keys), the
        // DEBT lines and the options; the same inputs answer the same bytes.
        let clock = |at: Option<usize>| {
            at.map(|i| {
                store
                    .renders()
                    .clock_key(graphs[i].graph, stamps[i], now, opts.grace_days)
            })
        };
        let mut key = RenderKey {
            stamps: [user_at.map(|i| stamps[i]), project_at.map(|i| stamps[i])],
            clock: [clock(user_at), clock(project_at)],
            debt: [Some(user_debt.clone()), project_debt.clone()],
            kind,
            budget: opts.budget,
            preloaded: preloaded.cloned(),
            header: header.map(str::to_string),
            session_id: Some(sid.to_string()),
        };
        let render = |opts: &ReadOptions<'_>, key: &RenderKey| match store.renders().get(key) {
            Some(hit) => Arc::unwrap_or_clone(hit),
            None => {
                let fresh = render_read(levels, opts);
                store.renders().put(key.clone(), Arc::new(fresh.clone()));
                fresh
            }
        };
        let mut rendered = render(&opts, &key);
        for _ in 0..8 {
            let size = unit.len(&rendered.text);
            if size <= budget || opts.budget == 0 {
                break;
            }
            // In proportion: bytes of a non-Latin text can be twice its characters,
            // and taking off only the excess would leave it over again and again.
            let scaled = (opts.budget as u128 * budget as u128 / size as u128) as usize;
            opts.budget = scaled.min(opts.budget - 1);
            key.budget = opts.budget;
            rendered = render(&opts, &key);
        }
        (rendered, viewed_at)
    })
}

fn full_read(store: &Store, sid: &str, now: f64) -> (String, FullReadEffects) {
    let (preloaded, first) = store.with_sessions(|sessions| match sessions.lookup(sid) {
        Some(r) => {
            let preloaded: Option<HashSet<String>> = r
                .preloaded_ids
                .as_ref()
                .map(|ids| ids.iter().cloned().collect());
            (preloaded, r.full_read_ts.is_none())
        }
        None => (None, true),
    });
    let (rendered, viewed_at) = render_session(
        store,
        sid,
        ReadKind::FullRead,
        pages::Client::ClaudeCode,
        None,
        preloaded.as_ref(),
        now,
    );
    // Preloaded anchors show no gist: their view time stays the preload's.
    let effects = FullReadEffects {
        active: rendered.active_ids,
        gists: rendered.shown_ids,
        viewed_at,
    };
    let mut text = rendered.text;
    if first {
        text.push_str("\n\n");
        text.push_str(&wording::first_read_close());
    }
    (text, effects)
}

/// `kg_search`.
pub fn kg_search(store: &Store, query: &str, session_id: Option<&str>, now: f64) -> ToolText {
    if let Err(e) = crate::limits::query(query) {
        return ToolText::error(&StoreError::Invalid(e));
    }
    if let Some(sid) = session_id
        && let Err(e) = store.count_op(sid, now)
    {
        return ToolText::error(&e);
    }
    let slots = match search_slots(store, session_id, now) {
        Ok(s) => s,
        Err(e) => return ToolText::error(&e),
    };
    let seen: Option<HashSet<String>> = session_id.map(|sid| {
        store.with_sessions(|s| {
            s.lookup(sid)
                .map(|r| r.seen_ids().iter().cloned().collect())
                .unwrap_or_default()
        })
    });
    let is_seen = |id: &str| seen.as_ref().is_some_and(|s| s.contains(id));
    let seen_fn = seen.as_ref().map(|_| &is_seen as &dyn Fn(&str) -> bool);
    let (result, viewed_at) = match store.config().policy {
        Policy::Reference => store.with_graphs_viewed(&slots, now, |graphs, at| {
            (search(graphs, &query_terms(query), seen_fn), at)
        }),
        Policy::Ours => {
            let words = Query::of(query);
            store.with_graphs_viewed(&slots, now, |graphs, at| {
                (search_ours(graphs, &words, seen_fn), at)
            })
        }
    };
    let mut text = search_text(query, &result, session_id.is_some());
    if let Some(sid) = session_id {
        let ids = shown_ids(&result);
        store.mark_seen(sid, ids.iter().map(String::as_str));
        store.record_views(sid, ids.iter().map(String::as_str), View::Seen, viewed_at);
        let hits = result.top.iter().map(|h| h.id.as_str());
        store.note_focus(
            sid,
            Query::of(query).texts().iter().map(String::as_str),
            hits,
            [],
        );
        // Other sessions' writes come with a search that found something (ours only),
        // after its hits are marked seen so none is told twice.
        if !result.top.is_empty()
            && let Some(news) = crate::push::session_news(store, sid, now)
        {
            text.push_str("\n\n");
            text.push_str(&news);
        }
    }
    ToolText::ok(text)
}

/// Graphs a search covers: the user graph, then the session's project graph (loaded
/// on demand), or without a session every project graph in memory.
pub fn search_slots(
    store: &Store,
    session_id: Option<&str>,
    now: f64,
) -> Result<Vec<Arc<GraphSlot>>, StoreError> {
    let mut slots = vec![store.user_slot().clone()];
    match session_id {
        Some(sid) => slots.extend(store.session_project_slot(Some(sid), now)?),
        None => slots.extend(store.loaded_projects()),
    }
    Ok(slots)
}

/// Arguments of `kg_put_node`.
#[derive(Debug, Clone)]
pub struct PutNodeArgs {
    /// The calling session: counted as one operation, required for the project level, and
    /// recorded as the change's author for `kg_sync`. Empty for none.
    pub session_id: String,
    /// The graph to write: `user` for cross-project knowledge, `project` for the
    /// session's codebase.
    pub level: Level,
    /// The node id (letters, digits, `.`, `_`, `-`; at most 128 characters); an existing
    /// id is updated.
    pub id: String,
    /// The one-line bottom line, healed and length-checked before it is stored.
    pub gist: String,
    /// Depth and rationale; `None` keeps the stored notes, `Some` replaces them.
    pub notes: Option<Vec<String>>,
    /// Precise file pointers; `None` keeps the stored ones, `Some` replaces them.
    pub touches: Option<Vec<String>>,
}

/// Judge the identifiers (in order), then count the call against the session: the
/// order in which the reference reports errors.
fn admit(
    store: &Store,
    session_id: &str,
    idents: &[(IdentKind, &str)],
    now: f64,
) -> Result<(), StoreError> {
    for &(kind, value) in idents {
        validate_ident(kind, value).map_err(StoreError::Invalid)?;
    }
    store.count_op(session_id, now)
}

/// `kg_put_node`: create or update a node in the user or the session's project graph. A
/// write re-activates an archived or orphaned node and may compact the level. Answers
/// `Node '<id>' saved to <level> graph`, with advice to shorten a gist over 300
/// characters and, for a created node under our policy, a note on its id (at the word
/// limit, or dated) and on an existing node it nearly repeats. A write built on a stale
/// view of the node is refused (`NOT WRITTEN …`, no notes appended), and so is an
/// update of a locked node.
pub fn kg_put_node(store: &Store, args: &PutNodeArgs, now: f64) -> ToolText {
    let idents = [(IdentKind::NodeId, args.id.as_str())];
    if let Err(e) = admit(store, &args.session_id, &idents, now) {
        return ToolText::error(&e);
    }
    let target = Target::session(args.level, &args.session_id);
    let put = store.put_node_checked(
        target,
        &args.id,
        &args.gist,
        args.notes.clone(),
        args.touches.clone(),
        WriteCheck::SessionView,
        now,
    );
    match put {
        Ok(put) => {
            let mut text = format!("Node '{}' saved to {} graph", args.id, put.level);
            if put.submitted_gist_chars > crate::debt::GIST_SCAN_LIMIT {
                text.push_str(&wording::oversized_gist_advice(put.submitted_gist_chars));
            }
            // The nudges point at kg_rename_node, which the reference policy does not offer.
            if put.created
                && store.config().policy == Policy::Ours
                && let Some(nudge) = id_nudge(&args.id)
            {
                text.push_str("\n\n");
                text.push_str(&nudge);
            }
            if let Some(nudge) = repeat_nudge(store, target, &args.id, put.created, now) {
                text.push_str("\n\n");
                text.push_str(&nudge);
            }
            if let Some(news) = crate::push::session_news(store, &args.session_id, now) {
                text.push_str("\n\n");
                text.push_str(&news);
            }
            ToolText::ok(text)
        }
        // A refusal is what the agent must act on, marker first, not an `Error: `.
        Err(StoreError::NotWritten(refused)) => ToolText {
            text: refused.message(),
            is_error: true,
        },
        Err(e) => ToolText::error(&e),
    }
}

/// The note a created id earns under the id length rule: at the word limit, or
/// holding a date (since-0.9.30.md §5).
pub fn id_nudge(id: &str) -> Option<String> {
    let shape = crate::model::IdShape::of(id);
    if shape.words == crate::model::MAX_ID_WORDS {
        Some(wording::id_at_most_words(id))
    } else if shape.dated {
        Some(wording::id_with_date(id))
    } else {
        None
    }
}

/// `kg_rename_node`: give a node a new id, its edges (in every graph), history and
/// fields following it. `level` limits the lookup to one graph; without it the user
/// graph is tried first, then the session's project graph.
pub fn kg_rename_node(
    store: &Store,
    session_id: &str,
    old_id: &str,
    new_id: &str,
    level: Option<Level>,
    now: f64,
) -> ToolText {
    let renamed = admit(store, session_id, &[], now).and_then(|()| {
        let target = level.map(|level| Target::session(level, session_id));
        store.rename_node(target, Some(session_id), old_id, new_id, Actor::Agent, now)
    });
    answer(renamed.map(|r| {
        let mut text = wording::renamed(&r.from, &r.to, r.level, r.edges_rewired);
        for skipped in &r.skipped {
            text.push('\n');
            text.push_str(&wording::rename_skipped(
                &skipped.graph,
                skipped.reason.as_str(),
            ));
        }
        if let Some(nudge) = id_nudge(new_id) {
            text.push_str("\n\n");
            text.push_str(&nudge);
        }
        text
    }))
}

/// Under our policy, the note a created node earns when it nearly repeats one its
/// graph holds: which, and how to fold the two into one. Never for an update.
fn repeat_nudge(
    store: &Store,
    target: Target<'_>,
    id: &str,
    created: bool,
    now: f64,
) -> Option<String> {
    if !created || store.config().policy != crate::store::Policy::Ours {
        return None;
    }
    let similar = store.repeat_of(target, id, now)?;
    Some(match similar.repeat {
        crate::near_duplicate::Repeat::LookAlike => wording::look_alike_id(
            id,
            &similar.id,
            &similar.gist,
            target.session.unwrap_or_default(),
        ),
        crate::near_duplicate::Repeat::Content { .. } => wording::repeats_node(
            id,
            &similar.id,
            &similar.gist,
            target.session.unwrap_or_default(),
        ),
    })
}

/// Arguments of `kg_put_edge`.
#[derive(Debug, Clone)]
pub struct PutEdgeArgs {
    /// The calling session: counted as one operation, required for the project level, and
    /// recorded as the change's author for `kg_sync`. Empty for none.
    pub session_id: String,
    /// The graph that stores the edge; a cross-level edge lives in the project graph and
    /// points at a user node.
    pub level: Level,
    /// The source: a node id or a file path (it need not exist).
    pub from: String,
    /// The target: a node id of either level or a file path (it need not exist).
    pub to: String,
    /// The relation, such as `requires`, `part-of` or `supersedes`; with `from` and `to`
    /// it identifies the edge.
    pub rel: String,
    /// Notes on the relation; `None` keeps the stored notes, `Some` replaces them.
    pub notes: Option<Vec<String>>,
}

/// `kg_put_edge`: create or update the edge `from` → `to` of type `rel` in the chosen
/// graph. Answers `Edge <from>-><to>:<rel> saved to <level> graph`.
pub fn kg_put_edge(store: &Store, args: &PutEdgeArgs, now: f64) -> ToolText {
    let idents = [
        (IdentKind::EdgeRef, args.from.as_str()),
        (IdentKind::EdgeRef, args.to.as_str()),
        (IdentKind::Rel, args.rel.as_str()),
    ];
    if let Err(e) = admit(store, &args.session_id, &idents, now) {
        return ToolText::error(&e);
    }
    let target = Target::session(args.level, &args.session_id);
    answer(
        store
            .put_edge(
                target,
                &args.from,
                &args.to,
                &args.rel,
                args.notes.clone(),
                now,
            )
            .map(|(level, _)| {
                format!(
                    "Edge {} saved to {level} graph",
                    EdgeKey::new(&args.from, &args.to, &args.rel)
                )
            }),
    )
}

/// `kg_delete_node`: delete a node and every edge touching it in its graph, looking in
/// the user graph first, then the session's project graph. Answers how many edges went
/// with it; an id in neither graph is an error.
pub fn kg_delete_node(store: &Store, session_id: &str, id: &str, now: f64) -> ToolText {
    answer(
        admit(store, session_id, &[], now)
            .and_then(|()| store.delete_node_by(None, Some(session_id), id, Actor::Agent, now))
            .map(|(level, n)| {
                format!("Deleted node '{id}' and {n} connected edges from {level} graph")
            }),
    )
}

/// `kg_delete_edge`: delete the edge `key`, looking in the user graph first, then the
/// session's project graph. Answers `Edge deleted: …`, or `Edge not found: …`, which is
/// not an error.
pub fn kg_delete_edge(store: &Store, session_id: &str, key: &EdgeKey, now: f64) -> ToolText {
    answer(
        admit(store, session_id, &[], now)
            .and_then(|()| store.delete_edge(None, Some(session_id), key, now))
            .map(|found| match found {
                Some(_) => format!("Edge deleted: {key}"),
                None => format!("Edge not found: {key}"),
            }),
    )
}

/// `kg_useful`: endorse nodes that changed the outcome, at most 5 per session. Each
/// endorsement adds to the node's usefulness score, worth half as much every 90 days.
/// Answers the ids marked, those skipped with the reason, and the likes left.
pub fn kg_useful(store: &Store, session_id: &str, ids: &[String], now: f64) -> ToolText {
    answer(
        admit(store, session_id, &[], now)
            .and_then(|()| store.useful(session_id, ids, now))
            .map(|likes| likes_text(&likes)),
    )
}

/// `kg_sync`: what other sessions changed in the user graph and the session's project
/// graph since this session last synced (or started). Answers the changed nodes and edges
/// per level, or `No updates from other sessions`.
pub fn kg_sync(store: &Store, session_id: &str, now: f64) -> ToolText {
    answer(
        admit(store, session_id, &[], now)
            .and_then(|()| store.sync(session_id, now))
            .map(|report| sync_text(&report)),
    )
}

/// `kg_progress`: a task's durable checkpoint, in the user graph or the session's project
/// graph. With `state`, replaces it (`Progress saved for task '<id>'`); without, answers
/// the stored state as JSON, or `No progress found…`. A `maintain` checkpoint's `last_ts`
/// is what resets a graph's DEBT staleness.
pub fn kg_progress(
    store: &Store,
    session_id: &str,
    task_id: &str,
    state: Option<Value>,
    level: Level,
    now: f64,
) -> ToolText {
    if let Err(e) = admit(store, session_id, &[], now) {
        return ToolText::error(&e);
    }
    answer(match state {
        Some(state) => store
            .progress_set(Some(session_id), task_id, state, level, now)
            .map(|()| format!("Progress saved for task '{task_id}'")),
        None => store
            .progress_get(Some(session_id), task_id, level, now)
            .map(|state| progress_text(task_id, state.as_ref())),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ambient::{BootstrapRequest, session_bootstrap};
    use crate::store::StoreConfig;

    const T: f64 = 1_795_176_000.0;

    fn store_in(home: &std::path::Path) -> Store {
        Store::open(StoreConfig::new(home.join("storage"), home), T).expect("store")
    }

    fn boot(store: &Store, cwd: &str, claude: &str) -> String {
        let request = BootstrapRequest {
            project_path: cwd.to_string(),
            claude_session_id: Some(claude.to_string()),
            source: Some("startup".into()),
            transcript_path: None,
        };
        session_bootstrap(store, &request, crate::ambient::PreloadHeader::Standard, T)
            .expect("bootstrap")
            .session_id
    }

    fn footer_sid(text: &str) -> String {
        text.rsplit("Session: ")
            .next()
            .map(|t| t.chars().take(8).collect())
            .unwrap_or_default()
    }

    #[test]
    fn read_with_cwd_after_a_preload_continues_the_preloaded_session() {
        let home = tempfile::tempdir().expect("home");
        let cwd = home.path().join("app");
        std::fs::create_dir_all(&cwd).expect("project");
        let cwd = cwd.to_string_lossy().into_owned();
        let store = store_in(home.path());
        let preloaded = boot(&store, &cwd, "cc-1");
        let args = ReadArgs {
            cwd: Some(cwd.clone()),
            ..ReadArgs::default()
        };
        let read = kg_read(&store, &args, T + 10.0);
        assert_eq!(footer_sid(&read.text), preloaded);
        assert!(
            store
                .session(&preloaded)
                .is_some_and(|r| r.full_read_ts.is_some())
        );
        // Once read, a later kg_read(cwd) is a new session again.
        let again = kg_read(&store, &args, T + 20.0);
        assert_ne!(footer_sid(&again.text), preloaded);
    }

    #[test]
    fn two_preloaded_sessions_are_ambiguous_and_get_a_fresh_one() {
        let home = tempfile::tempdir().expect("home");
        let cwd = home.path().join("app");
        std::fs::create_dir_all(&cwd).expect("project");
        let cwd = cwd.to_string_lossy().into_owned();
        let store = store_in(home.path());
        let a = boot(&store, &cwd, "cc-a");
        let b = boot(&store, &cwd, "cc-b");
        let read = kg_read(
            &store,
            &ReadArgs {
                cwd: Some(cwd),
                ..ReadArgs::default()
            },
            T + 1.0,
        );
        let sid = footer_sid(&read.text);
        assert!(sid != a && sid != b);
    }
}

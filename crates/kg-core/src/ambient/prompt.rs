//! Prompt recall (interfaces.md §7.3, core.md §8.5): what a user prompt brings back
//! from memory before the model starts on it.
//!
//! Precision over recall: the human-text gate drops machine text, the terms drop
//! generic vocabulary, two score gates drop weak matches, and a gist is injected at
//! most once per session. Ranking is the shared core in [`crate::search`].

use super::PromptEvent;
use crate::model::{EdgeKey, Level};
use crate::recall_log::{Decision, Weighed};
use crate::relevance::{self, Query};
use crate::search::{SearchResult, search};
use crate::store::Policy;
use crate::store::Store;
use crate::tools::search_slots;
use crate::wording::{self, ReminderFits};
use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

/// Hits injected at most.
pub const RECALL_MAX_HITS: usize = 5;
/// Character budget of one injection.
pub const RECALL_BUDGET: usize = 2_500;
/// Terms shorter than this carry too little to search on.
pub const MIN_TERM_CHARS: usize = 4;
/// A prompt with fewer human-typed characters than this is not worth a search.
pub const MIN_HUMAN_CHARS: usize = 8;
/// Terms searched at most per prompt.
pub const MAX_TERMS: usize = 24;
/// Score a hit needs when the prompt has one term.
pub const GATE_ONE_TERM: f64 = 0.010;
/// Score a hit needs when the prompt has two or more terms.
pub const GATE_MANY_TERMS: f64 = 0.020;
/// First line of every injection (format, pinned by the goldens).
pub const RECALL_HEADER: &str = "KG recall — memory matching this prompt:";
const CONNECTIONS_HEAD: &str = "  connections:";

/// Words too common in prompts to say anything about the memory. Sorted, for
/// binary search.
const STOPWORDS: &[&str] = &[
    "about", "after", "again", "also", "back", "been", "before", "being", "between", "both",
    "cannot", "could", "does", "doing", "done", "down", "each", "else", "even", "every", "from",
    "good", "have", "having", "here", "into", "just", "know", "like", "little", "look", "made",
    "make", "many", "maybe", "more", "most", "much", "need", "needs", "okay", "only", "other",
    "over", "please", "really", "right", "same", "should", "some", "still", "such", "sure", "take",
    "than", "that", "them", "then", "there", "these", "they", "thing", "things", "think", "this",
    "those", "through", "under", "very", "want", "well", "were", "what", "when", "where", "which",
    "while", "will", "with", "would", "your", "yours",
];

/// Serialises recall so a gist cannot be injected twice by two concurrent prompts of
/// one session (the search and the seen marking form one step).
static RECALL_LOCK: Mutex<()> = Mutex::new(());

/// Python's `str.isspace`: Unicode whitespace plus the separators U+001C–U+001F.
pub(crate) fn is_py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// The text after the last `/` (all of it when there is none).
fn last_segment(s: &str) -> &str {
    s.rsplit_once('/').map_or(s, |(_, tail)| tail)
}

/// Replace every `[Image:…]` placeholder (`\[Image:[^\]]*\]`) by one space.
fn replace_image_placeholders(text: &str) -> String {
    const OPEN: &str = "[Image:";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find(OPEN) {
        // The placeholder ends at the first `]` after it; without one, no later
        // placeholder can close either.
        let Some(len) = rest[start + OPEN.len()..].find(']') else {
            break;
        };
        out.push_str(&rest[..start]);
        out.push(' ');
        rest = &rest[start + OPEN.len() + len + 1..];
    }
    out.push_str(rest);
    out
}

/// Replace every quoted span holding a `/` (`'[^']*/[^']*'|"[^"]*/[^"]*"`, leftmost,
/// non-overlapping) by one space, pushing each span's basename to `kept`.
///
/// A span starting at a quote can only end at the next quote of the same kind, so
/// each quote costs the distance to the next one: linear overall.
fn remove_quoted_paths(text: &str, kept: &mut Vec<String>) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        let quote = bytes[i];
        if (quote == b'\'' || quote == b'"')
            && let Some(len) = bytes[i + 1..].iter().position(|&b| b == quote)
        {
            let close = i + 1 + len;
            // Quotes and `/` are ASCII, so these offsets are char boundaries.
            if text[i + 1..close].contains('/') {
                out.push_str(&text[copied..i]);
                out.push(' ');
                let base = last_segment(
                    text[i..=close]
                        .trim_matches(|c| c == '\'' || c == '"')
                        .trim_end_matches('/'),
                );
                if !base.is_empty() {
                    kept.push(base.to_string());
                }
                i = close + 1;
                copied = i;
                continue;
            }
        }
        i += 1;
    }
    out.push_str(&text[copied..]);
    out
}

/// The human-text gate (interfaces.md §7.3 step 3): the prompt with machine text
/// removed and paths reduced to basenames, or `None` when too little of it was typed
/// by a person (notifications, image placeholders, bare dragged paths, "ok").
pub fn human_text(prompt: &str) -> Option<String> {
    human_text_over(prompt, MIN_HUMAN_CHARS)
}

/// [`human_text`] with its floor of typed characters.
fn human_text_over(prompt: &str, min_human_chars: usize) -> Option<String> {
    let text = prompt.trim_matches(is_py_space);
    if text.is_empty()
        || text.contains("<task-notification>")
        || text.contains("[SYSTEM NOTIFICATION")
    {
        return None;
    }
    let text = replace_image_placeholders(text);
    // Basenames of quoted paths come first, in match order.
    let mut kept: Vec<String> = Vec::new();
    let text = remove_quoted_paths(&text, &mut kept);
    let mut human = 0usize;
    for token in text.split(is_py_space).filter(|t| !t.is_empty()) {
        let core = token.trim_matches(|c| "'\"()[]<>,".contains(c));
        if core.contains('/') {
            // A path: its file name may match touches, but it was not typed prose.
            let base = last_segment(core.trim_end_matches('/'));
            if !base.is_empty() {
                kept.push(base.to_string());
            }
        } else {
            human += token.chars().count();
            kept.push(token.to_string());
        }
    }
    (human >= min_human_chars).then(|| kept.join(" "))
}

fn is_stopword(term: &str) -> bool {
    STOPWORDS.binary_search(&term).is_ok()
}

/// Search terms of a prompt's human text (interfaces.md §7.3 step 4): lowercase runs
/// of `[a-z0-9][a-z0-9_\-./]*` with `.`, `/`, `-` trimmed from the ends; at least
/// [`MIN_TERM_CHARS`] long, no stopwords, no repeats, at most [`MAX_TERMS`].
pub fn prompt_terms(text: &str) -> Vec<String> {
    let lower = text.to_lowercase();
    let bytes = lower.as_bytes();
    let starts = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let continues = |b: u8| starts(b) || matches!(b, b'_' | b'-' | b'.' | b'/');
    let mut terms: Vec<String> = Vec::new();
    let mut i = 0;
    while i < bytes.len() && terms.len() < MAX_TERMS {
        if !starts(bytes[i]) {
            i += 1;
            continue;
        }
        let start = i;
        i += 1;
        while i < bytes.len() && continues(bytes[i]) {
            i += 1;
        }
        // ASCII run, so `start..i` lies on char boundaries.
        let term = lower[start..i].trim_matches(|c| matches!(c, '.' | '/' | '-'));
        // At most MAX_TERMS kept, so the repeat check stays cheap.
        if term.len() >= MIN_TERM_CHARS && !is_stopword(term) && !terms.iter().any(|t| t == term) {
            terms.push(term.to_string());
        }
    }
    terms
}

/// A record that may be rendered: a hit or a connector.
#[derive(Debug, Clone, Copy)]
struct Entry<'a> {
    level: Level,
    id: &'a str,
    gist: &'a str,
    seen: bool,
}

impl Entry<'_> {
    fn line(&self, indent: &str) -> String {
        if self.seen {
            format!("{indent}- [{}] {} (in context)", self.level, self.id)
        } else {
            format!("{indent}- [{}] {}: {}", self.level, self.id, self.gist)
        }
    }
}

/// What gate 1 and the neighbourhood rule keep of a search (steps 6–7).
#[derive(Debug, Default)]
struct Recall<'a> {
    hits: Vec<Entry<'a>>,
    connectors: Vec<Entry<'a>>,
    edges: Vec<&'a EdgeKey>,
}

fn select(result: &SearchResult, term_count: usize) -> Recall<'_> {
    let threshold = if term_count >= 2 {
        GATE_MANY_TERMS
    } else {
        GATE_ONE_TERM
    };
    let hits: Vec<Entry<'_>> = result
        .top
        .iter()
        .filter(|h| h.score >= threshold && !h.gist.is_empty())
        .take(RECALL_MAX_HITS)
        .map(|h| Entry {
            level: h.level,
            id: &h.id,
            gist: &h.gist,
            seen: h.seen,
        })
        .collect();
    if hits.is_empty() {
        return Recall::default();
    }
    // Records a path endpoint may be pulled in from; a top record replaces a "more"
    // record or connector of the same id.
    let mut pool: HashMap<&str, Entry<'_>> = HashMap::new();
    for c in &result.connectors {
        let entry = Entry {
            level: c.level,
            id: &c.id,
            gist: &c.gist,
            seen: c.seen,
        };
        pool.insert(&c.id, entry);
    }
    for h in result.more.iter().chain(&result.top) {
        let entry = Entry {
            level: h.level,
            id: &h.id,
            gist: &h.gist,
            seen: h.seen,
        };
        pool.insert(&h.id, entry);
    }
    let hit_ids: HashSet<&str> = hits.iter().map(|e| e.id).collect();
    let mut connector_ids: HashSet<&str> = HashSet::new();
    let mut connectors = Vec::new();
    let mut edges = Vec::new();
    'edges: for edge in &result.path_edges {
        let mut new: Vec<Entry<'_>> = Vec::new();
        for id in [edge.from(), edge.to()] {
            if hit_ids.contains(id) || connector_ids.contains(id) || new.iter().any(|e| e.id == id)
            {
                continue;
            }
            match pool.get(id) {
                Some(entry) if !entry.gist.is_empty() => new.push(*entry),
                // An endpoint we cannot show makes the edge meaningless.
                _ => continue 'edges,
            }
        }
        for entry in new {
            connector_ids.insert(entry.id);
            connectors.push(entry);
        }
        edges.push(edge);
    }
    Recall {
        hits,
        connectors,
        edges,
    }
}

/// Render within [`RECALL_BUDGET`], trimming edges (last first), then connectors,
/// then seen hits (last first), then trailing hits while more than one remains.
/// `recall` is left holding what was rendered.
fn render(recall: &mut Recall<'_>) -> String {
    let hit_lines: Vec<String> = recall.hits.iter().map(|e| e.line("")).collect();
    let connector_lines: Vec<String> = recall.connectors.iter().map(|e| e.line("  ")).collect();
    let edge_lines: Vec<String> = recall
        .edges
        .iter()
        .map(|e| format!("  {} --{}--> {}", e.from(), e.rel(), e.to()))
        .collect();
    // Every line after the header costs its characters plus the newline before it;
    // the connections heading is there while it has a line under it.
    let cost = |line: &String| line.chars().count() + 1;
    let hit_costs: Vec<usize> = hit_lines.iter().map(cost).collect();
    let section: Vec<usize> = connector_lines
        .iter()
        .chain(&edge_lines)
        .map(cost)
        .collect();
    let heading = CONNECTIONS_HEAD.chars().count() + 1;
    let mut hits: Vec<usize> = (0..hit_lines.len()).collect();
    let mut kept = section.len(); // connectors first, then edges, trimmed from the end
    let mut total = RECALL_HEADER.chars().count()
        + hit_costs.iter().sum::<usize>()
        + section.iter().sum::<usize>()
        + if kept > 0 { heading } else { 0 };
    while total > RECALL_BUDGET {
        if kept > 0 {
            kept -= 1;
            total -= section[kept] + if kept == 0 { heading } else { 0 };
        } else if let Some(pos) = hits.iter().rposition(|&i| recall.hits[i].seen) {
            total -= hit_costs[hits.remove(pos)];
        } else if hits.len() > 1 {
            total -= hits.pop().map_or(0, |i| hit_costs[i]);
        } else {
            break; // one hit always stays, even over budget
        }
    }
    let connectors = kept.min(connector_lines.len());
    recall.hits = hits.iter().map(|&i| recall.hits[i]).collect();
    recall.connectors.truncate(connectors);
    recall.edges.truncate(kept - connectors);
    let mut lines: Vec<&str> = vec![RECALL_HEADER];
    lines.extend(hits.iter().map(|&i| hit_lines[i].as_str()));
    if kept > 0 {
        lines.push(CONNECTIONS_HEAD);
        lines.extend(connector_lines[..connectors].iter().map(String::as_str));
        lines.extend(edge_lines[..kept - connectors].iter().map(String::as_str));
    }
    lines.join("\n")
}

/// What a prompt hook is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PromptReply {
    /// Add this to the model's context.
    Say(String),
    /// Nothing from memory, and no reminder either (our policy decided).
    Quiet,
    /// Nothing from memory; the hook may add one of its reminders at random (the
    /// reference's way, kept under `KG_POLICY=reference`).
    Nothing,
}

/// The recall (or the full-read nudge) for a UserPromptSubmit hook payload
/// (interfaces.md §7.3), or `None` when memory has nothing new to say; reminders are
/// [`prompt_reply`]'s. Marks the injected gists seen in the resolved session.
pub fn prompt_context(store: &Store, event: &PromptEvent<'_>, now: f64) -> Option<String> {
    match respond(store, event, now, false) {
        PromptReply::Say(text) => Some(text),
        PromptReply::Quiet | PromptReply::Nothing => None,
    }
}

/// What a prompt brings back: the recall (or, before the session's full read, the
/// nudge to make it), a reminder when the memory knows the topic but had nothing new,
/// or silence. Marks the injected gists seen in the resolved session.
///
/// Ours differs from the reference in two places: the first prompts of a session get
/// their recall along with the full-read nudge (the opening question is often the one
/// that matters most), and a reminder is chosen here, by the session's state and the
/// prompt's topic, instead of at random by the hook.
pub fn prompt_reply(store: &Store, event: &PromptEvent<'_>, now: f64) -> PromptReply {
    respond(store, event, now, true)
}

fn respond(store: &Store, event: &PromptEvent<'_>, now: f64, remind: bool) -> PromptReply {
    let mut decision = Decision::prompt(
        event.cwd.unwrap_or(""),
        event.harness_session.filter(|s| !s.is_empty()),
        now,
    );
    let reply = respond_logged(store, event, now, remind, &mut decision);
    let sid = decision.kg_session.clone();
    store.log_recall(decision);
    // Other sessions' writes that bear on this one come after the recall (ours only).
    match sid.and_then(|sid| crate::push::session_news(store, &sid, now)) {
        None => reply,
        Some(news) => PromptReply::Say(match reply {
            PromptReply::Say(text) => format!("{text}\n\n{news}"),
            PromptReply::Quiet | PromptReply::Nothing => news,
        }),
    }
}

fn respond_logged(
    store: &Store,
    event: &PromptEvent<'_>,
    now: f64,
    remind: bool,
    decision: &mut Decision,
) -> PromptReply {
    let ours = store.config().policy == Policy::Ours;
    let silence = if ours {
        PromptReply::Quiet
    } else {
        PromptReply::Nothing
    };
    decision.outcome("unresolved_session");
    let Some(sid) = store.hook_session(event.harness_session, event.cwd) else {
        return silence;
    };
    decision.kg_session = Some(sid.clone());
    let Some((full_read, root)) = store.with_sessions(|s| {
        s.lookup(&sid)
            .map(|r| (!r.needs_full_read(), r.project_path.clone()))
    }) else {
        return silence;
    };
    decision.project_root = root;
    let prompt = event.prompt.unwrap_or("");
    if !full_read {
        if !ours {
            return PromptReply::Say(wording::FULL_READ_NUDGE.to_string());
        }
        return PromptReply::Say(match recall(store, &sid, prompt, now, decision) {
            Recalled::Text(text) => format!("{}\n\n{text}", wording::FULL_READ_NUDGE),
            Recalled::Nothing { .. } => wording::FULL_READ_NUDGE.to_string(),
        });
    }
    match recall(store, &sid, prompt, now, decision) {
        Recalled::Text(text) => PromptReply::Say(text),
        Recalled::Nothing { .. } if !ours => PromptReply::Nothing,
        Recalled::Nothing { on_topic: false } => PromptReply::Quiet,
        Recalled::Nothing { .. } if !remind => PromptReply::Quiet,
        Recalled::Nothing { on_topic: true } => {
            let transcript = event.transcript_path.filter(|p| !p.is_empty());
            reminder(store, &sid, prompt, transcript, now).map_or(PromptReply::Quiet, |text| {
                PromptReply::Say(text.to_string())
            })
        }
    }
}

/// What a prompt's recall found.
enum Recalled {
    /// The recall block to inject (its gists are now marked seen).
    Text(String),
    /// Nothing new to say; `on_topic` when the memory holds something about the
    /// prompt's words at all (a reminder can then be relevant).
    Nothing { on_topic: bool },
}

fn recall(store: &Store, sid: &str, prompt: &str, now: f64, decision: &mut Decision) -> Recalled {
    let prompt = crate::limits::head(prompt, crate::limits::MAX_RECALL_CHARS);
    if store.config().policy == Policy::Ours {
        return recall_ours(store, sid, prompt, now, decision);
    }
    let off_topic = Recalled::Nothing { on_topic: false };
    let Some(text) = human_text(prompt) else {
        return off_topic;
    };
    let terms = prompt_terms(&text);
    if terms.is_empty() {
        return off_topic;
    }
    let _recall = RECALL_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let Some(slots) = recall_slots(store, sid, now) else {
        return off_topic;
    };
    // The session registry is a leaf lock, so asking it under the graph locks is safe.
    let is_seen = |id: &str| store.with_sessions(|s| s.lookup(sid).is_some_and(|r| r.has_seen(id)));
    let (result, viewed_at) = store.with_graphs_viewed(&slots, now, |graphs, at| {
        (search(graphs, &terms, Some(&is_seen)), at)
    });
    let nothing = Recalled::Nothing {
        on_topic: result.total > 0,
    };
    let recall = select(&result, terms.len());
    say(store, sid, recall, nothing, viewed_at, decision, false)
}

/// The graphs a prompt's recall searches. Loads the session's project graph if needed
/// and refreshes its activity; counts no op. `None` (logged) when they cannot be had.
fn recall_slots(
    store: &Store,
    sid: &str,
    now: f64,
) -> Option<Vec<std::sync::Arc<crate::store::GraphSlot>>> {
    search_slots(store, Some(sid), now)
        .map_err(|e| log::warn!("prompt recall for session {sid} skipped: {e}"))
        .ok()
}

/// Short prompts ("SSO", "429s", "deploy?") are worth a search under our ranking: its
/// evidence gate, not a length floor, keeps acknowledgements silent.
const OUR_MIN_HUMAN_CHARS: usize = 2;

/// Our recall ([`relevance::recall`]): the few nodes the prompt's informative words
/// point at, and the neighbour a strong hit pulls in.
fn recall_ours(
    store: &Store,
    sid: &str,
    prompt: &str,
    now: f64,
    decision: &mut Decision,
) -> Recalled {
    let off_topic = Recalled::Nothing { on_topic: false };
    decision.outcome("not_a_prompt");
    let Some(text) = human_text_over(prompt, OUR_MIN_HUMAN_CHARS) else {
        return off_topic;
    };
    let query = Query::of(&text);
    decision.outcome("no_terms");
    if query.is_empty() {
        return off_topic;
    }
    decision.terms = query.texts().iter().take(MAX_TERMS).cloned().collect();
    store.note_focus(sid, query.texts().iter().map(String::as_str), [], []);
    let _recall = RECALL_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    decision.outcome("no_graphs");
    let Some(slots) = recall_slots(store, sid, now) else {
        return off_topic;
    };
    let (found, viewed_at) = store.with_graphs_viewed(&slots, now, |graphs, at| {
        let ordered: Vec<(Level, &crate::graph::Graph)> =
            graphs.iter().map(|sg| (sg.level, sg.graph)).collect();
        (relevance::recall(&ordered, &query), at)
    });
    decision.outcome("no_hits");
    let nothing = Recalled::Nothing {
        on_topic: found.on_topic,
    };
    let is_seen = |id: &str| store.with_sessions(|s| s.lookup(sid).is_some_and(|r| r.has_seen(id)));
    fn entry<'a>(
        (level, id, gist): &'a (Level, String, String),
        seen: &dyn Fn(&str) -> bool,
    ) -> Entry<'a> {
        Entry {
            level: *level,
            id,
            gist,
            seen: seen(id),
        }
    }
    decision.weighed = found
        .weighed
        .iter()
        .map(|(level, id, score)| Weighed {
            id: id.clone(),
            level: *level,
            score: *score,
            seen: is_seen(id),
        })
        .collect();
    let recall = Recall {
        hits: found.hits.iter().map(|e| entry(e, &is_seen)).collect(),
        connectors: found
            .neighbours
            .iter()
            .map(|e| entry(e, &is_seen))
            .collect(),
        edges: found.edges.iter().collect(),
    };
    say(store, sid, recall, nothing, viewed_at, decision, true)
}

/// Gate 2 and the rendering: a recall is said when it holds something the session has
/// not seen; what it says is then marked seen, at `viewed_at` (taken while the graphs
/// were locked). With `pointers` (our policy), hits the
/// session already holds are named too — `- [level] id (in context)`, no gist
/// repeated — once per session each, and never after recall showed them in full: a
/// model holding the whole memory is pointed at the lesson that fits the prompt.
fn say(
    store: &Store,
    sid: &str,
    mut recall: Recall<'_>,
    nothing: Recalled,
    viewed_at: f64,
    decision: &mut Decision,
    pointers: bool,
) -> Recalled {
    if recall.hits.is_empty() {
        return nothing;
    }
    decision.outcome("all_seen");
    let anything_new = recall
        .hits
        .iter()
        .chain(&recall.connectors)
        .any(|e| !e.seen);
    if !anything_new {
        if !pointers {
            return nothing;
        }
        // Only pointers: the hits not pointed at before in this session, no
        // connections (they would only repeat what is in context).
        recall.hits.retain(|e| !was_pointed_at(sid, e.id));
        if recall.hits.is_empty() {
            return nothing;
        }
        recall.connectors.clear();
        recall.edges.clear();
    }
    let text = render(&mut recall);
    let fresh: Vec<&str> = recall
        .hits
        .iter()
        .chain(&recall.connectors)
        .filter(|e| !e.seen)
        .map(|e| e.id)
        .collect();
    if fresh.is_empty() && anything_new {
        return nothing;
    }
    decision.outcome(if anything_new { "injected" } else { "pointed" });
    decision.injected = recall
        .hits
        .iter()
        .chain(&recall.connectors)
        .map(|e| e.id.to_string())
        .collect();
    decision.chars = text.chars().count();
    if pointers {
        // A hit shown in full now needs no pointer later either.
        point_at(sid, recall.hits.iter().map(|e| e.id), decision.ts);
    }
    store.mark_seen(sid, fresh.iter().copied());
    store.record_views(sid, fresh, crate::session::View::Seen, viewed_at);
    // What the prompt was about, for judging later news from other sessions.
    store.note_focus(sid, [], recall.hits.iter().map(|e| e.id), []);
    Recalled::Text(text)
}

/// Per session: when it was last pointed at something, and the ids it was pointed at
/// (in memory; a restart forgets, and sessions idle a day are dropped).
#[allow(clippy::type_complexity)]
static POINTED_AT: Mutex<Option<HashMap<String, (f64, HashSet<String>)>>> = Mutex::new(None);

fn was_pointed_at(sid: &str, id: &str) -> bool {
    let pointed = POINTED_AT.lock().unwrap_or_else(|e| e.into_inner());
    pointed
        .as_ref()
        .and_then(|map| map.get(sid))
        .is_some_and(|(_, ids)| ids.contains(id))
}

fn point_at<'a>(sid: &str, ids: impl Iterator<Item = &'a str>, now: f64) {
    let mut pointed = POINTED_AT.lock().unwrap_or_else(|e| e.into_inner());
    let map = pointed.get_or_insert_with(HashMap::new);
    map.retain(|_, (at, _)| now - *at < 86_400.0);
    let (at, set) = map.entry(sid.to_string()).or_default();
    *at = now;
    set.extend(ids.map(str::to_string));
}

/// At most one reminder per session in this long: a reminder on every prompt is noise
/// the model learns to skip.
pub const REMINDER_GAP_SECS: f64 = 600.0;

/// When each session last got a reminder (in memory; a restart forgets it).
static REMINDED_AT: Mutex<Option<HashMap<String, f64>>> = Mutex::new(None);

/// Words of a prompt that speak of handing work to subagents.
const SUBAGENT_WORDS: &[&str] = &[
    "agent",
    "agents",
    "subagent",
    "subagents",
    "delegate",
    "dispatch",
    "parallel",
];

/// A reminder that fits the session's state and the prompt, or none: not within
/// [`REMINDER_GAP_SECS`] of the last one, never about loading memory after the full
/// read, about subagents only when the prompt speaks of them, about debt only when a
/// level's debt is HIGH. The pick is stable for a session and prompt.
fn reminder(
    store: &Store,
    sid: &str,
    prompt: &str,
    transcript: Option<&str>,
    now: f64,
) -> Option<&'static str> {
    let mut reminded = REMINDED_AT.lock().unwrap_or_else(|e| e.into_inner());
    let reminded = reminded.get_or_insert_with(HashMap::new);
    if reminded
        .get(sid)
        .is_some_and(|at| now - at < REMINDER_GAP_SECS)
    {
        return None;
    }
    let words: HashSet<String> = prompt
        .split(|c: char| !c.is_alphanumeric())
        .map(str::to_lowercase)
        .collect();
    let about_subagents = SUBAGENT_WORDS.iter().any(|w| words.contains(*w));
    let debt_high = || {
        search_slots(store, Some(sid), now).is_ok_and(|slots| {
            slots
                .iter()
                .any(|slot| store.level_debt(slot, now).level == crate::debt::DebtLevel::High)
        })
    };
    // Only the file's size is read: how far the conversation has come.
    let bytes = transcript.map(|p| std::fs::metadata(p).map_or(0, |m| m.len()));
    let fitting: Vec<&wording::Reminder> = wording::reminder_pool(bytes)
        .iter()
        .filter(|r| match r.fits {
            ReminderFits::Always => true,
            ReminderFits::BeforeFullRead => false,
            ReminderFits::Subagents => about_subagents,
            ReminderFits::DebtHigh => debt_high(),
        })
        .collect();
    if fitting.is_empty() {
        return None;
    }
    let pick = stable_index(&format!("{sid}\u{0}{prompt}"), fitting.len());
    // Forget sessions idle for a day, so the map stays small.
    reminded.retain(|_, at| now - *at < 86_400.0);
    reminded.insert(sid.to_string(), now);
    Some(fitting[pick].text)
}

/// An index below `len` that depends only on `key` (FNV-1a).
fn stable_index(key: &str, len: usize) -> usize {
    let hash = key.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    (hash % len.max(1) as u64) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stopwords_are_sorted_for_binary_search() {
        assert!(STOPWORDS.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(STOPWORDS.len(), 82);
    }

    #[test]
    fn the_gate_follows_the_spec_examples() {
        assert_eq!(
            human_text("please review assets/mm-zephyr.css for the widget").as_deref(),
            Some("please review mm-zephyr.css for the widget")
        );
        assert_eq!(human_text("ok /very/long/path/that/is/not/text.png"), None);
        assert_eq!(
            human_text("Yes commit all").as_deref(),
            Some("Yes commit all")
        );
        assert_eq!(human_text("  \u{1f}\t "), None);
        assert_eq!(
            human_text("<task-notification>build ok, reconciler done"),
            None
        );
        assert_eq!(
            human_text("done [SYSTEM NOTIFICATION: background reconciler finished]"),
            None
        );
    }

    #[test]
    fn images_and_quoted_paths_leave_only_basenames() {
        let prompt = "[Image: /h/u/shot one.png] '/h/u/screens/error dialog.png'";
        assert_eq!(human_text(prompt), None);
        // Quoted basenames come first, then the tokens in order.
        assert_eq!(
            human_text("compare these \"/a/b/c d.rs\" and 'x/y/' please").as_deref(),
            Some("c d.rs y compare these and please")
        );
        // A quote without a slash stays text; an unclosed one too.
        assert_eq!(
            human_text("it's 'quoted text' here").as_deref(),
            Some("it's 'quoted text' here")
        );
        // An image placeholder without `]` is not one.
        assert_eq!(
            human_text("[Image: never closed").as_deref(),
            Some("[Image: never closed")
        );
        // Punctuation-only tokens count; bracketed paths reduce.
        assert_eq!(human_text("() (src/a.rs)").as_deref(), None);
        assert_eq!(
            human_text("look (src/a.rs) ok!!").as_deref(),
            Some("look a.rs ok!!")
        );
    }

    #[test]
    fn path_characters_do_not_count_toward_the_floor() {
        assert_eq!(human_text("fix src/some/really/long/module/name.rs"), None);
        assert_eq!(human_text("fix this src/a/b.rs"), None);
        assert_eq!(
            human_text("please fix src/a/b.rs").as_deref(),
            Some("please fix b.rs")
        );
    }

    #[test]
    fn terms_follow_the_reference_tests() {
        let t = prompt_terms("Please make the compactor logging quieter in prod");
        assert!(t.contains(&"compactor".to_string()));
        assert!(t.contains(&"logging".to_string()));
        assert!(!t.contains(&"please".to_string()));
        assert!(!t.contains(&"make".to_string()));
        assert!(t.iter().all(|x| x.len() >= 4));
        assert!(prompt_terms("yes go on do it").is_empty());
        assert_eq!(prompt_terms("alpha beta alpha beta"), ["alpha", "beta"]);
        let many: String = (0..50).map(|i| format!("term{i:02} ")).collect();
        let t = prompt_terms(&many);
        assert_eq!(t.len(), MAX_TERMS);
        assert_eq!(t[0], "term00");
        assert_eq!(t[23], "term23");
    }

    #[test]
    fn terms_trim_path_punctuation_and_keep_file_names() {
        assert_eq!(
            prompt_terms("Check ./src/ledger/journal.rs... and -flag- __init__.py"),
            ["check", "src/ledger/journal.rs", "flag", "init__.py"]
        );
        assert_eq!(prompt_terms("mm-zephyr.css/"), ["mm-zephyr.css"]);
        // Non-ASCII letters split runs; Unicode lowercasing applies first.
        assert_eq!(
            prompt_terms("ÜBERSICHT Kelvin\u{212a}ey"),
            ["bersicht", "kelvinkey"]
        );
    }

    #[test]
    fn adversarial_inputs_stay_linear() {
        let quotes = "'\"".repeat(200_000);
        assert!(human_text(&quotes).is_some());
        let opens = "[Image:".repeat(100_000);
        assert!(human_text(&opens).is_some());
        let run = "a-".repeat(500_000);
        assert_eq!(prompt_terms(&run).len(), 1);
    }
}

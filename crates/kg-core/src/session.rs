//! The session registry: application-level KG sessions that outlive MCP transport
//! sessions and server restarts (`sessions.json`).

use crate::model::{Level, Object, as_ts, float_value};
use indexmap::IndexMap;
use serde_json::Value;
use std::collections::HashSet;
use std::hash::{BuildHasher, Hasher};

/// Idle time after which a session is forgotten.
pub const SESSION_TTL_SECS: f64 = 86_400.0;
/// Likes one session may give.
pub const LIKES_PER_SESSION: usize = 5;
/// Sessions kept at most. Beyond it the least recently active session is forgotten,
/// so a flood of registrations cannot grow
/// memory and `sessions.json` without bound. Far above real use: a session lives
/// 24 h idle, and a person runs a few dozen a day.
pub const MAX_SESSIONS: usize = 1_000;

/// A `kg_read` reply too long for the client, split into parts the session fetches
/// with `kg_read(more=true)` (since-0.9.30.md §6). Persisted, so the parts survive a
/// restart; any other `kg_read` replaces them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Pages {
    /// Every part, footer included, first to last.
    pub parts: Vec<Page>,
    /// The part `more=true` returns next (1 after the first was given).
    pub next: usize,
    /// The view time of the read the parts come from.
    pub viewed_at: f64,
}

/// One part of a split reply and what delivering it tells the session.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Page {
    /// What the session reads.
    pub text: String,
    /// Ids the part shows on a line of their own: seen once it is delivered.
    pub seen: Vec<String>,
    /// Of those, the ones whose gist it shows (their view time is recorded).
    pub gists: Vec<String>,
    /// Delivering this part completes a full read (the last part of one).
    pub completes_full_read: bool,
}

impl Pages {
    fn to_value(&self) -> Value {
        let parts: Vec<Value> = self
            .parts
            .iter()
            .map(|p| {
                serde_json::json!({
                    "text": p.text,
                    "seen": p.seen,
                    "gists": p.gists,
                    "completes_full_read": p.completes_full_read,
                })
            })
            .collect();
        serde_json::json!({"parts": parts, "next": self.next, "total": self.parts.len(),
                           "viewed_at": self.viewed_at})
    }

    fn from_value(value: &Value) -> Option<Pages> {
        let parts = value
            .get("parts")?
            .as_array()?
            .iter()
            .map(|p| Page {
                text: p
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                seen: p.get("seen").map(strings).unwrap_or_default(),
                gists: p.get("gists").map(strings).unwrap_or_default(),
                completes_full_read: p.get("completes_full_read") == Some(&Value::Bool(true)),
            })
            .collect();
        let next = value.get("next").and_then(Value::as_u64)? as usize;
        let viewed_at = value
            .get("viewed_at")
            .and_then(Value::as_f64)
            .unwrap_or(0.0);
        Some(Pages {
            parts,
            next,
            viewed_at,
        })
    }
}

/// How much of a node a session was shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    /// Its gist (and id): the preload, a full read, search hits, prompt recall, and
    /// what other routes show of it in one line.
    Seen,
    /// All of its content, notes and touches too: a node read by id, the session's
    /// own write of it, a refused write (which shows the node as it stands).
    Read,
}

/// One KG session.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionRecord {
    /// When the session was registered, in seconds since the Unix epoch: `kg_sync`
    /// reports changes after it until the first sync, and a hook looking up a
    /// project's session takes the newest.
    pub start_ts: f64,
    /// Resolved project root, or none for a path-less session (graph view, REST).
    pub project_path: Option<String>,
    /// When a tool call or hook last used the session, in seconds since the Unix epoch;
    /// after 24 hours idle the session is forgotten.
    pub last_activity: f64,
    /// Tool calls made in the session, for the session stats.
    pub op_count: u64,
    /// The Claude Code session bound to this one, through which hooks find it; a Claude
    /// session is bound to at most one KG session.
    pub claude_sid: Option<String>,
    seen: Vec<String>,
    seen_set: HashSet<String>,
    has_seen_field: bool,
    /// Ids whose gists the session-start preload showed in full; a full read prints
    /// them as `<id> (preloaded)` instead of repeating the gist. `None` without a preload.
    pub preloaded_ids: Option<Vec<String>>,
    /// When the session last did a full `kg_read`, in seconds since the Unix epoch.
    /// Until the first, every prompt gets the full-read nudge instead of recall.
    pub full_read_ts: Option<f64>,
    /// The parts of a split `kg_read` reply still to be fetched, if any.
    pub pages: Option<Pages>,
    /// The session-start preload held every active node and said so (our policy): no
    /// full read is owed.
    pub preload_complete: bool,
    /// When `kg_sync` last reported to the session, in seconds since the Unix epoch;
    /// after a restart it reports the changes made since.
    pub last_synced_ts: Option<f64>,
    /// Ids the session endorsed with `kg_useful`, at most 5 and each once; `None`
    /// before the first like.
    pub liked_ids: Option<Vec<String>>,
    /// Up to when other sessions' writes were last checked for this session (the
    /// push, since-0.9.30.md §2): later checks look only at writes after it.
    pub pushed_ts: Option<f64>,
    /// What the session has been working on, for deciding whether another session's
    /// write bears on it. Not persisted: after a restart it starts over.
    focus: Focus,
    /// View times: node id → when the session was last shown the node's gist
    /// (`seen_at` in `sessions.json`), and node id → when it was last shown its notes
    /// and touches too (`read_at`). See [`View`].
    seen_at: IndexMap<String, f64>,
    read_at: IndexMap<String, f64>,
    /// Fields written by other versions, kept as they are.
    pub extra: Object,
    /// Notes lists whose removals a refused write showed the session, by node: the
    /// same write sent again means the removal is intended (since-0.9.30.md §4, rule
    /// 3). Not persisted: after a restart the agent is asked once more.
    refused_removals: std::collections::HashMap<(Level, String), Vec<String>>,
    /// Position in this process's change log up to which `kg_sync` has reported.
    /// Not persisted: after a restart the timestamp watermark takes over.
    pub sync_seq: Option<u64>,
}

impl SessionRecord {
    /// A session registered at `now` (seconds since the Unix epoch) for a resolved
    /// project root, or for none; nothing seen, read or liked yet.
    pub fn new(now: f64, project_path: Option<String>) -> SessionRecord {
        SessionRecord {
            start_ts: now,
            project_path,
            last_activity: now,
            ..SessionRecord::default()
        }
    }

    /// Node ids the session was shown (preloaded gists, reads, search results, recall),
    /// in first-shown order; `kg_search` leaves out the notes of these.
    pub fn seen_ids(&self) -> &[String] {
        &self.seen
    }

    /// Whether the session was shown the node `id`: such hits show no notes, and prompt
    /// recall only speaks when it has an unseen node to add.
    pub fn has_seen(&self, id: &str) -> bool {
        self.seen_set.contains(id)
    }

    /// Record node ids as shown to the session, each kept once, so later searches leave
    /// out their notes and prompt recall does not repeat them.
    pub fn mark_seen<'a>(&mut self, ids: impl IntoIterator<Item = &'a str>) {
        self.has_seen_field = true;
        for id in ids {
            // Every full read marks the whole active graph again: most ids are known.
            if !self.seen_set.contains(id) {
                self.seen_set.insert(id.to_string());
                self.seen.push(id.to_string());
            }
        }
    }

    /// Record that the session was shown nodes at `at` (a view time from
    /// `Store::event_ts`, taken under the locks of the graphs shown): their view
    /// times move forward to `at` (never back: two replies of one session may be
    /// recorded out of order). The seen set is the routes' own business (see
    /// [`SessionRecord::mark_seen`]): a session's own write, say, has a view time but
    /// leaves recall free to bring the node back later.
    pub fn record_view<'a>(&mut self, ids: impl IntoIterator<Item = &'a str>, view: View, at: f64) {
        for id in ids {
            advance(&mut self.seen_at, id, at);
            if view == View::Read {
                advance(&mut self.read_at, id, at);
            }
        }
    }

    /// When the session was last shown the gist of node `id`, if ever since view
    /// times were recorded.
    pub fn seen_at(&self, id: &str) -> Option<f64> {
        self.seen_at.get(id).copied()
    }

    /// When the session was last shown all of node `id` (its notes and touches too), if
    /// ever since view times were recorded.
    pub fn read_at(&self, id: &str) -> Option<f64> {
        self.read_at.get(id).copied()
    }

    /// Whether the session has seen node `id` since its content was last written
    /// at `written_ts`: a view time at or after the write.
    pub fn has_seen_since(&self, id: &str, written_ts: f64) -> bool {
        self.seen_at(id).is_some_and(|at| at >= written_ts)
    }

    /// Node `old` is called `new` now: the ids the session saw, had preloaded or
    /// liked, its view times and refused removals follow.
    pub fn rename_id(&mut self, old: &str, new: &str) {
        let rename = |ids: &mut Vec<String>| {
            for id in ids.iter_mut().filter(|id| *id == old) {
                *id = new.to_string();
            }
        };
        if self.seen_set.remove(old) {
            if self.seen_set.insert(new.to_string()) {
                rename(&mut self.seen);
            } else {
                self.seen.retain(|id| id != old);
            }
        }
        if let Some(ids) = &mut self.preloaded_ids {
            rename(ids);
        }
        if let Some(ids) = &mut self.liked_ids {
            rename(ids);
        }
        rename(&mut self.focus.nodes);
        for times in [&mut self.seen_at, &mut self.read_at] {
            if let Some(at) = times.shift_remove(old) {
                advance(times, new, at);
            }
        }
        let keys: Vec<(Level, String)> = self
            .refused_removals
            .keys()
            .filter(|(_, id)| id == old)
            .cloned()
            .collect();
        for (level, id) in keys {
            if let Some(notes) = self.refused_removals.remove(&(level, id)) {
                self.refused_removals
                    .insert((level, new.to_string()), notes);
            }
        }
    }

    /// Remember that a write sending `notes` for node `id` was refused for the stored
    /// notes it leaves out.
    pub fn remember_refused_removal(&mut self, level: Level, id: &str, notes: &[String]) {
        self.refused_removals
            .insert((level, id.to_string()), notes.to_vec());
    }

    /// Whether a write sending `notes` for node `id` repeats one refused for the
    /// notes it leaves out: the removal is then intended.
    pub fn confirms_removal(&self, level: Level, id: &str, notes: &[String]) -> bool {
        self.refused_removals
            .get(&(level, id.to_string()))
            .is_some_and(|refused| refused.as_slice() == notes)
    }

    /// Forget a refused removal once a write of the node went through.
    pub fn settle_removal(&mut self, level: Level, id: &str) {
        if !self.refused_removals.is_empty() {
            self.refused_removals.remove(&(level, id.to_string()));
        }
    }

    /// Whether the session still owes a full read: it made none, and its preload did
    /// not hold everything.
    pub fn needs_full_read(&self) -> bool {
        self.full_read_ts.is_none() && !self.preload_complete
    }

    /// The ids the session liked so far (empty before the first like).
    pub fn liked(&self) -> &[String] {
        self.liked_ids.as_deref().unwrap_or(&[])
    }

    /// The watermark `kg_sync` falls back to when no change-log cursor exists.
    pub fn sync_watermark(&self) -> f64 {
        self.last_synced_ts.unwrap_or(self.start_ts)
    }

    /// Start the next check for other sessions' writes, which covers the writes after
    /// the returned time (the end of the last check, the session's start or its last
    /// `kg_sync`, whichever is latest) up to `until`, where the next check begins.
    /// Taken under the registry's lock, so two replies racing never look at one write
    /// twice.
    pub fn take_push_window(&mut self, until: f64) -> f64 {
        let since = [self.last_synced_ts, self.pushed_ts]
            .into_iter()
            .flatten()
            .fold(self.start_ts, f64::max);
        self.pushed_ts = Some(until.max(since));
        since
    }

    /// What the session has been working on lately.
    pub(crate) fn focus(&self) -> &Focus {
        &self.focus
    }

    /// Remember what the session just worked on: words it typed or searched for, nodes
    /// it was shown on purpose (recall, search hits), file keys it read or changed.
    pub(crate) fn note_focus<'a>(
        &mut self,
        words: impl IntoIterator<Item = &'a str>,
        nodes: impl IntoIterator<Item = &'a str>,
        files: impl IntoIterator<Item = &'a str>,
    ) {
        self.focus.note(words, nodes, files);
    }

    /// Whether the session was registered as another program's maintenance session
    /// (the reference 0.17 marks them `maintenance: true`): what such a session writes
    /// is housekeeping, not news for others.
    pub fn is_maintenance(&self) -> bool {
        self.extra.get("maintenance") == Some(&Value::Bool(true))
    }

    fn from_object(mut obj: Object) -> Option<SessionRecord> {
        let mut take = |k: &str| obj.shift_remove(k);
        let start_ts = as_ts(take("start_ts").as_ref())?;
        let project_path = match take("project_path") {
            Some(Value::String(s)) => Some(s),
            _ => None,
        };
        let last_activity = as_ts(take("last_activity").as_ref()).unwrap_or(start_ts);
        let op_count = take("op_count").and_then(|v| v.as_u64()).unwrap_or(0);
        let claude_sid = take("claude_sid").and_then(|v| v.as_str().map(str::to_string));
        let seen_value = take("seen_ids");
        let preloaded_ids = take("preloaded_ids").map(|v| strings(&v));
        let full_read_ts = as_ts(take("full_read_ts").as_ref());
        let preload_complete = take("preload_complete") == Some(Value::Bool(true));
        let pages = take("pages").as_ref().and_then(Pages::from_value);
        let last_synced_ts = as_ts(take("last_synced_ts").as_ref());
        let liked_ids = take("liked_ids").map(|v| strings(&v));
        let pushed_ts = as_ts(take("pushed_ts").as_ref());
        let seen_at = view_times(take("seen_at"));
        let read_at = view_times(take("read_at"));
        let mut record = SessionRecord {
            start_ts,
            project_path,
            last_activity,
            op_count,
            claude_sid,
            preloaded_ids,
            full_read_ts,
            preload_complete,
            pages,
            last_synced_ts,
            liked_ids,
            pushed_ts,
            seen_at,
            read_at,
            extra: obj,
            ..SessionRecord::default()
        };
        if let Some(seen) = seen_value {
            let ids = strings(&seen);
            record.mark_seen(ids.iter().map(String::as_str));
        }
        Some(record)
    }

    fn to_object(&self) -> Object {
        let mut obj = Object::new();
        obj.insert("start_ts".into(), float_value(self.start_ts));
        obj.insert(
            "project_path".into(),
            self.project_path.clone().map_or(Value::Null, Value::String),
        );
        obj.insert("last_activity".into(), float_value(self.last_activity));
        obj.insert("op_count".into(), Value::from(self.op_count));
        if let Some(c) = &self.claude_sid {
            obj.insert("claude_sid".into(), Value::String(c.clone()));
        }
        if self.has_seen_field {
            obj.insert("seen_ids".into(), string_array(&self.seen));
        }
        if let Some(p) = &self.preloaded_ids {
            obj.insert("preloaded_ids".into(), string_array(p));
        }
        if let Some(t) = self.full_read_ts {
            obj.insert("full_read_ts".into(), float_value(t));
        }
        if self.preload_complete {
            obj.insert("preload_complete".into(), Value::Bool(true));
        }
        if let Some(pages) = &self.pages {
            obj.insert("pages".into(), pages.to_value());
        }
        if let Some(t) = self.last_synced_ts {
            obj.insert("last_synced_ts".into(), float_value(t));
        }
        if let Some(l) = &self.liked_ids {
            obj.insert("liked_ids".into(), string_array(l));
        }
        if let Some(t) = self.pushed_ts {
            obj.insert("pushed_ts".into(), float_value(t));
        }
        for (key, times) in [("seen_at", &self.seen_at), ("read_at", &self.read_at)] {
            if !times.is_empty() {
                let times = times.iter().map(|(id, &at)| (id.clone(), float_value(at)));
                obj.insert(key.into(), Value::Object(times.collect()));
            }
        }
        for (k, v) in &self.extra {
            obj.insert(k.clone(), v.clone());
        }
        obj
    }
}

/// What a session has been working on lately, kept small: the words of its recent
/// prompts and searches (normalised as search normalises them), the nodes recall and
/// search showed it, and the files it read or changed (as touch keys). Oldest first;
/// each list drops its oldest entries beyond its bound.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Focus {
    words: Vec<String>,
    nodes: Vec<String>,
    files: Vec<String>,
}

impl Focus {
    /// Words kept: a few prompts' worth.
    pub const MAX_WORDS: usize = 48;
    /// Nodes kept.
    pub const MAX_NODES: usize = 48;
    /// File keys kept.
    pub const MAX_FILES: usize = 32;

    fn note<'a>(
        &mut self,
        words: impl IntoIterator<Item = &'a str>,
        nodes: impl IntoIterator<Item = &'a str>,
        files: impl IntoIterator<Item = &'a str>,
    ) {
        remember(&mut self.words, words, Self::MAX_WORDS);
        remember(&mut self.nodes, nodes, Self::MAX_NODES);
        remember(&mut self.files, files, Self::MAX_FILES);
    }

    /// Recent words, normalised.
    pub fn words(&self) -> &[String] {
        &self.words
    }

    /// Nodes recently shown on purpose.
    pub fn nodes(&self) -> &[String] {
        &self.nodes
    }

    /// Touch keys of files recently read or changed.
    pub fn files(&self) -> &[String] {
        &self.files
    }
}

/// Append `items` to `list` (a repeat moves to the end, as the most recent), keeping
/// the newest `max`.
fn remember<'a>(list: &mut Vec<String>, items: impl IntoIterator<Item = &'a str>, max: usize) {
    for item in items {
        list.retain(|kept| kept != item);
        list.push(item.to_string());
    }
    if list.len() > max {
        list.drain(..list.len() - max);
    }
}

/// Move a view time forward to `at`.
fn advance(times: &mut IndexMap<String, f64>, id: &str, at: f64) {
    match times.get_mut(id) {
        Some(t) => *t = t.max(at),
        None => {
            times.insert(id.to_string(), at);
        }
    }
}

/// A stored view-time map (`{id: seconds}`); entries that are not numbers are dropped.
fn view_times(value: Option<Value>) -> IndexMap<String, f64> {
    match value {
        Some(Value::Object(map)) => map
            .into_iter()
            .filter_map(|(id, at)| at.as_f64().map(|at| (id, at)))
            .collect(),
        _ => IndexMap::new(),
    }
}

fn strings(value: &Value) -> Vec<String> {
    match value {
        Value::Array(items) => items
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect(),
        _ => Vec::new(),
    }
}

fn string_array(items: &[String]) -> Value {
    Value::Array(items.iter().cloned().map(Value::String).collect())
}

/// Is `s` a KG session id (8 lowercase hex characters)?
pub fn is_session_id(s: &str) -> bool {
    s.len() == 8
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// All sessions known to this process, in registration order.
#[derive(Debug, Default)]
pub struct SessionRegistry {
    records: IndexMap<String, SessionRecord>,
}

impl SessionRegistry {
    /// Load from the `sessions.json` object, skipping expired and malformed records.
    pub fn from_object(obj: Object, now: f64) -> SessionRegistry {
        let mut records = IndexMap::new();
        for (sid, value) in obj {
            let Value::Object(rec) = value else { continue };
            let Some(mut record) = SessionRecord::from_object(rec) else {
                log::warn!("sessions.json: dropping malformed session {sid}");
                continue;
            };
            // Activity stamped further ahead than clock skew explains (a wrong clock, a
            // hand edit) would keep the session from ever expiring: count it from now.
            if crate::score::credible_ts(record.last_activity, now).is_none() {
                record.last_activity = now;
            }
            if now - record.last_activity > SESSION_TTL_SECS {
                continue;
            }
            records.insert(sid, record);
        }
        let mut registry = SessionRegistry { records };
        while registry.records.len() > MAX_SESSIONS {
            registry.evict_least_active();
        }
        registry
    }

    /// Forget the least recently active session (the first registered on ties).
    fn evict_least_active(&mut self) {
        let oldest = self
            .records
            .iter()
            .enumerate()
            .min_by(|(i, (_, a)), (j, (_, b))| {
                a.last_activity.total_cmp(&b.last_activity).then(i.cmp(j))
            })
            .map(|(i, _)| i);
        if let Some((sid, _)) = oldest.and_then(|i| self.records.shift_remove_index(i)) {
            log::info!(
                "session {sid} forgotten: more than {MAX_SESSIONS} sessions, it was the least recently active"
            );
        }
    }

    /// Room for one more record.
    fn make_room(&mut self) {
        while self.records.len() >= MAX_SESSIONS {
            self.evict_least_active();
        }
    }

    /// The registry as the `sessions.json` object: session id → record, in
    /// registration order, each record's unknown fields kept.
    pub fn to_object(&self) -> Object {
        self.records
            .iter()
            .map(|(sid, r)| (sid.clone(), Value::Object(r.to_object())))
            .collect()
    }

    /// How many sessions are registered (at most 1,000).
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether no session is registered.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Every session id with its record, in registration order.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &SessionRecord)> {
        self.records.iter()
    }

    /// Mint a fresh session id that no record holds.
    pub fn mint_id(&self) -> String {
        let state = std::collections::hash_map::RandomState::new();
        let mut salt = self.records.len() as u64;
        loop {
            let mut hasher = state.build_hasher();
            hasher.write_u64(salt);
            let sid = format!("{:08x}", hasher.finish() as u32);
            if !self.records.contains_key(&sid) {
                return sid;
            }
            salt = salt.wrapping_add(0x9E37_79B9_7F4A_7C15);
        }
    }

    /// Register a new session (the project path is already resolved).
    pub fn register(
        &mut self,
        project_path: Option<String>,
        claude_sid: Option<&str>,
        now: f64,
        sync_seq: u64,
    ) -> String {
        let sid = self.mint_id();
        let mut record = SessionRecord::new(now, project_path);
        record.sync_seq = Some(sync_seq);
        self.make_room();
        self.records.insert(sid.clone(), record);
        if let Some(c) = claude_sid {
            self.bind_claude(&sid, c);
        }
        sid
    }

    /// A pure lookup: no record is created.
    pub fn lookup(&self, sid: &str) -> Option<&SessionRecord> {
        self.records.get(sid)
    }

    /// The record of `sid` to change; like [`SessionRegistry::lookup`], it creates no
    /// record and leaves the activity time alone.
    pub fn lookup_mut(&mut self, sid: &str) -> Option<&mut SessionRecord> {
        self.records.get_mut(sid)
    }

    /// Bind a Claude session id to `sid`, clearing it from any other holder.
    pub fn bind_claude(&mut self, sid: &str, claude_sid: &str) {
        for (other, record) in self.records.iter_mut() {
            if other != sid && record.claude_sid.as_deref() == Some(claude_sid) {
                record.claude_sid = None;
            }
        }
        if let Some(record) = self.records.get_mut(sid) {
            record.claude_sid = Some(claude_sid.to_string());
        }
    }

    /// The KG session bound to the Claude Code session `claude_sid`: how a hook finds
    /// its session.
    pub fn find_by_claude_sid(&self, claude_sid: &str) -> Option<&str> {
        self.records
            .iter()
            .find(|(_, r)| r.claude_sid.as_deref() == Some(claude_sid))
            .map(|(sid, _)| sid.as_str())
    }

    /// The newest session registered for a (resolved) project root; ties keep the
    /// first registered.
    pub fn find_by_project_path(&self, root: &str) -> Option<&str> {
        let mut best: Option<(&str, f64)> = None;
        for (sid, record) in &self.records {
            if record.project_path.as_deref() == Some(root)
                && best.is_none_or(|(_, ts)| record.start_ts > ts)
            {
                best = Some((sid.as_str(), record.start_ts));
            }
        }
        best.map(|(sid, _)| sid)
    }

    /// Node `old` is called `new` now, in every session (see
    /// [`SessionRecord::rename_id`]).
    pub fn rename_id(&mut self, old: &str, new: &str) {
        for record in self.records.values_mut() {
            record.rename_id(old, new);
        }
    }

    /// Drop sessions idle longer than the TTL; returns how many went.
    pub fn expire(&mut self, now: f64) -> usize {
        let before = self.records.len();
        self.records
            .retain(|_, r| now - r.last_activity <= SESSION_TTL_SECS);
        before - self.records.len()
    }
}

/// Find the last KG session id our own outputs left in a transcript.
///
/// Only lines containing `ession` are scanned; within a line the three marker shapes
/// are tried one after another, so the last match is by pattern order, then by
/// position — the reference's behaviour, kept because transcripts written by it
/// must resolve the same way.
pub fn recover_from_transcript(text: &str) -> Option<String> {
    let mut last = None;
    for line in text.lines() {
        if !line.contains("ession") {
            continue;
        }
        for (prefix, suffix) in [
            ("session_id: ", " (pass"),
            ("Session: ", ""),
            ("session_id='", "'"),
        ] {
            let mut rest = line;
            while let Some(pos) = rest.find(prefix) {
                let after = &rest[pos + prefix.len()..];
                if let Some(candidate) = after.get(..8)
                    && is_session_id(candidate)
                    && after[8..].starts_with(suffix)
                {
                    last = Some(candidate.to_string());
                }
                rest = &rest[pos + prefix.len()..];
            }
        }
    }
    last
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_registration_creates_records() {
        let mut reg = SessionRegistry::default();
        assert!(reg.lookup("deadbeef").is_none());
        assert!(reg.lookup_mut("deadbeef").is_none());
        assert!(reg.is_empty());
        let sid = reg.register(Some("/home/u/p".into()), None, 10.0, 0);
        assert_eq!(reg.len(), 1);
        assert!(is_session_id(&sid));
    }

    #[test]
    fn seen_and_preloaded_survive_a_round_trip() {
        let mut reg = SessionRegistry::default();
        let sid = reg.register(None, Some("cc-1"), 10.0, 0);
        let r = reg.lookup_mut(&sid).expect("registered");
        r.mark_seen(["a", "b", "a"]);
        r.preloaded_ids = Some(vec!["x".into()]);
        r.full_read_ts = Some(11.0);
        let obj = reg.to_object();
        let again = SessionRegistry::from_object(obj.clone(), 12.0);
        let r = again.lookup(&sid).expect("kept");
        assert_eq!(r.seen_ids(), ["a", "b"]);
        assert_eq!(r.preloaded_ids.as_deref(), Some(&["x".to_string()][..]));
        assert_eq!(r.full_read_ts, Some(11.0));
        assert_eq!(r.claude_sid.as_deref(), Some("cc-1"));
        assert_eq!(again.to_object(), obj);
        assert!(SessionRegistry::from_object(obj, 10.0 + SESSION_TTL_SECS + 1.0).is_empty());
    }

    #[test]
    fn view_times_move_forward_and_survive_a_round_trip() {
        let mut reg = SessionRegistry::default();
        let sid = reg.register(None, None, 10.0, 0);
        let r = reg.lookup_mut(&sid).expect("registered");
        r.record_view(["a", "b"], View::Seen, 20.0);
        r.record_view(["a"], View::Read, 30.0);
        // A reply recorded late does not move a view time back.
        r.record_view(["a", "b"], View::Read, 25.0);
        assert!(
            r.seen_ids().is_empty(),
            "view times leave the seen set alone"
        );
        assert_eq!((r.seen_at("a"), r.read_at("a")), (Some(30.0), Some(30.0)));
        assert_eq!((r.seen_at("b"), r.read_at("b")), (Some(25.0), Some(25.0)));
        assert!(r.has_seen_since("a", 30.0) && !r.has_seen_since("a", 30.5));
        assert_eq!(r.seen_at("c"), None);
        let obj = reg.to_object();
        assert_eq!(
            obj[&sid]["seen_at"],
            serde_json::json!({"a": 30.0, "b": 25.0})
        );
        let again = SessionRegistry::from_object(obj.clone(), 40.0);
        assert_eq!(again.to_object(), obj);
        let r = again.lookup(&sid).expect("kept");
        assert_eq!((r.seen_at("b"), r.read_at("b")), (Some(25.0), Some(25.0)));
    }

    #[test]
    fn sessions_stamped_in_the_future_still_expire() {
        let now = 1_795_176_000.0;
        let record = |last: f64| serde_json::json!({"start_ts": now, "last_activity": last});
        let obj = serde_json::json!({
            "a1b2c3d4": record(4_070_908_800.0), // 2099
            "e5f6a7b8": record(now + 3_600.0),   // a clock an hour ahead: believed
        });
        let Value::Object(obj) = obj else {
            unreachable!()
        };
        let mut reg = SessionRegistry::from_object(obj, now);
        assert_eq!(reg.lookup("a1b2c3d4").map(|r| r.last_activity), Some(now));
        assert_eq!(
            reg.lookup("e5f6a7b8").map(|r| r.last_activity),
            Some(now + 3_600.0)
        );
        assert_eq!(reg.expire(now + SESSION_TTL_SECS + 1.0), 1);
        assert_eq!(reg.expire(now + 3_600.0 + SESSION_TTL_SECS + 1.0), 1);
    }

    #[test]
    fn binding_moves_between_holders() {
        let mut reg = SessionRegistry::default();
        let a = reg.register(None, Some("cc-x"), 1.0, 0);
        let b = reg.register(None, None, 2.0, 0);
        reg.bind_claude(&b, "cc-x");
        assert_eq!(reg.find_by_claude_sid("cc-x"), Some(b.as_str()));
        assert_eq!(reg.lookup(&a).and_then(|r| r.claude_sid.clone()), None);
    }

    #[test]
    fn newest_session_wins_path_lookup() {
        let mut reg = SessionRegistry::default();
        let _old = reg.register(Some("/h/p".into()), None, 1.0, 0);
        let new = reg.register(Some("/h/p".into()), None, 2.0, 0);
        let _tie = reg.register(Some("/h/p".into()), None, 2.0, 0);
        assert_eq!(reg.find_by_project_path("/h/p"), Some(new.as_str()));
        assert_eq!(reg.find_by_project_path("/h/q"), None);
    }

    #[test]
    fn the_least_recently_active_session_makes_room() {
        let t = 1e6;
        let mut reg = SessionRegistry::default();
        let first = reg.register(None, None, t, 0);
        let busy = reg.register(None, None, t + 1.0, 0);
        for k in 0..MAX_SESSIONS - 2 {
            reg.register(None, None, t + 2.0 + k as f64, 0);
        }
        assert_eq!(reg.len(), MAX_SESSIONS);
        if let Some(r) = reg.lookup_mut(&busy) {
            r.last_activity = t + 5_000.0;
        }
        let newest = reg.register(None, None, t + 5_001.0, 0);
        assert_eq!(reg.len(), MAX_SESSIONS);
        assert!(
            reg.lookup(&first).is_none(),
            "the least recently active went"
        );
        assert!(reg.lookup(&busy).is_some() && reg.lookup(&newest).is_some());
        // A file holding more (an older version wrote it) loads the most recent.
        let mut obj = reg.to_object();
        obj.insert(
            "0000beef".into(),
            serde_json::json!({"start_ts": t + 5_003.0, "last_activity": t + 5_003.0}),
        );
        let loaded = SessionRegistry::from_object(obj, t + 5_004.0);
        assert_eq!(loaded.len(), MAX_SESSIONS);
        assert!(loaded.lookup("0000beef").is_some() && loaded.lookup(&busy).is_some());
    }

    #[test]
    fn transcript_recovery_takes_the_last_marker() {
        let text = "x session_id: deadbeef (pass it\nfoo\n{\"text\":\"Session: cafe0123\"}\n";
        assert_eq!(recover_from_transcript(text).as_deref(), Some("cafe0123"));
        assert_eq!(recover_from_transcript("Session: DEADBEEF"), None);
        assert_eq!(
            recover_from_transcript("kg_put_node(session_id='0badf00d', level='x')").as_deref(),
            Some("0badf00d")
        );
    }
}

//! The data model: nodes, edges, versions and the per-graph `_meta`.
//!
//! Nodes and edges are free-form JSON objects. The fields the system knows are read
//! through accessors; everything else, and the order of the keys, survives a
//! load–save round trip untouched, because users hand-edit these files and older or
//! newer versions of the tool may add fields of their own.

use crate::pyfmt::repr_str;
use crate::tracked::fresh_stamp;
use serde_json::{Map, Value};
use std::fmt;

/// A JSON object with its key order kept.
pub type Object = Map<String, Value>;

/// The two levels of memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Level {
    /// One graph across all projects (`user.json`): preferences and lessons that travel.
    User,
    /// One graph per codebase (`projects/<name>/graph.json`), chosen by the session's
    /// project path.
    Project,
}

impl Level {
    /// The name clients pass and answers and graph files (`_meta.namespace.kind`)
    /// use: `user` or `project`.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::User => "user",
            Level::Project => "project",
        }
    }

    /// Parse a level argument; the message is the one clients have always seen.
    pub fn parse(s: &str) -> Result<Level, String> {
        match s {
            "user" => Ok(Level::User),
            "project" => Ok(Level::Project),
            other => Err(format!(
                "Invalid level '{other}', must be one of ('user', 'project')"
            )),
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a node stands in the bounded memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tier {
    /// Rendered in full on every read and charged to the budget.
    Active,
    /// Rendered as an id anchor; reachable through its edges.
    Archived,
    /// Invisible in reads; only search reaches it.
    Orphaned,
}

impl Tier {
    /// The tier's name in the graph view and its payloads: `active`, `archived` or
    /// `orphaned`.
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Active => "active",
            Tier::Archived => "archived",
            Tier::Orphaned => "orphaned",
        }
    }
}

/// Field names of the internal bookkeeping on a node.
pub mod field {
    /// The node's id, a copy of its key in the graph's `nodes` map.
    pub const ID: &str = "id";
    /// The one-line headline: the only content charged to the budget.
    pub const GIST: &str = "gist";
    /// Depth and rationale behind the gist: a list of strings.
    pub const NOTES: &str = "notes";
    /// The files and folders the node is about: a list of strings.
    pub const TOUCHES: &str = "touches";
    /// When the node was first created (seconds since the Unix epoch).
    pub const CREATED_TS: &str = "_created_ts";
    /// When the node was last read in full (the read stamp).
    pub const LAST_READ_TS: &str = "_last_read_ts";
    /// One timestamp per endorsement (`kg_useful`).
    pub const USEFUL_TS: &str = "_useful_ts";
    /// Truthy: the node is archived (a tier flag).
    pub const ARCHIVED: &str = "_archived";
    /// Present: the node is orphaned, since this time (a tier flag).
    pub const ORPHANED_TS: &str = "_orphaned_ts";
    /// Who wrote the node's current content and when: `{"ts": <seconds>, "by": <KG
    /// session id or null>}` (see [`WriteStamp`](super::WriteStamp)).
    pub const WRITTEN: &str = "_written";
    /// `true`: a person locked the node (only boolean `true` counts). Agents cannot
    /// rewrite, rename or delete it, and compaction never archives it.
    pub const LOCKED: &str = "locked";
}

/// Who wrote a node's current content, and when (the node field `_written`).
///
/// Set by every write that changes the node's content (its creation, gist, notes or
/// touches), whoever asks for it: an agent's `kg_put_node`, a REST write, the graph
/// view. Promotions, renames, read stamps, endorsements and tier moves leave it alone,
/// so it answers "has the content changed since this session last looked?" (the
/// stale-write guard) and "what did other sessions write meanwhile?" (cross-session
/// push).
#[derive(Debug, Clone, PartialEq)]
pub struct WriteStamp {
    /// When the content was written, in seconds since the Unix epoch. The store hands
    /// these out strictly increasing (see `Store::event_ts`), so a write and a view
    /// of the same graph never share a time.
    pub ts: f64,
    /// The KG session that wrote it; `None` for a person (REST, the graph view) or a
    /// caller that named no registered session.
    pub by: Option<String>,
}

impl WriteStamp {
    /// Read a stored `_written` value; anything without a number `ts` reads as absent
    /// (a hand edit or another version may have left something else there).
    pub fn parse(value: &Value) -> Option<WriteStamp> {
        let ts = value.get("ts").and_then(Value::as_f64)?;
        let by = value.get("by").and_then(Value::as_str).map(str::to_string);
        Some(WriteStamp { ts, by })
    }

    /// The stored form, `{"ts": <float>, "by": <string or null>}`.
    pub fn to_value(&self) -> Value {
        let mut obj = Object::new();
        obj.insert("ts".into(), float_value(self.ts));
        obj.insert(
            "by".into(),
            self.by.clone().map_or(Value::Null, Value::String),
        );
        Value::Object(obj)
    }

    /// Written by someone other than session `sid`: another session, a person, or a
    /// caller without a session.
    pub fn by_other_than(&self, sid: &str) -> bool {
        self.by.as_deref() != Some(sid)
    }
}

/// Python's truthiness, which the reference applies to flags such as `_archived`.
pub fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// A number field read as seconds; anything else reads as absent.
pub fn as_ts(value: Option<&Value>) -> Option<f64> {
    value.and_then(Value::as_f64)
}

/// A node's words as our ranking weighs them (built in `relevance.rs`): each word's
/// 64-bit hash once, sorted, with its weight by where it stands, and the node's
/// weighted length.
#[derive(Debug, Clone, Default)]
pub struct WordIndex {
    /// `(word, weight)`, sorted by word.
    pub words: Box<[(u64, f32)]>,
    /// The sum of the weights of every word, repeats included.
    pub length: f32,
    /// The words of the id, sorted: the memory's names for its topics.
    pub title: Box<[u64]>,
}

impl WordIndex {
    /// The weight of `word` in the node, if it holds it.
    pub fn weight(&self, word: u64) -> Option<f32> {
        self.words
            .binary_search_by_key(&word, |&(w, _)| w)
            .ok()
            .map(|i| self.words[i].1)
    }

    /// The id holds `word`.
    pub fn in_title(&self, word: u64) -> bool {
        self.title.binary_search(&word).is_ok()
    }
}

/// Moves whenever any node's `touches` or `_archived` flag change in place (a node
/// added or removed moves its graph's node-map stamp instead), so what is derived from
/// the touches (the reverse index `touch_index`, the stale touches of active nodes)
/// can tell it is stale. One counter for every graph: both change only on writes and
/// tier moves, so a rebuild after an unrelated graph's change costs little.
static TOUCHES_EPOCH: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn touches_changed() {
    TOUCHES_EPOCH.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

/// The current value of the touches counter (see `TOUCHES_EPOCH`).
pub(crate) fn touches_epoch() -> u64 {
    TOUCHES_EPOCH.load(std::sync::atomic::Ordering::Relaxed)
}

/// A value derived from an object (its JSON text, its typed fields), computed on first
/// use and dropped whenever the object changes. Saving a graph re-serialises only the
/// entries that changed since the last save.
pub struct Memo<T>(std::cell::OnceCell<T>);

impl<T> Default for Memo<T> {
    fn default() -> Self {
        Memo(std::cell::OnceCell::new())
    }
}

impl<T: Clone> Clone for Memo<T> {
    fn clone(&self) -> Self {
        Memo(self.0.clone())
    }
}

impl<T> PartialEq for Memo<T> {
    /// A cache never makes two objects different.
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl<T> fmt::Debug for Memo<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Memo")
    }
}

impl<T> Memo<T> {
    pub fn get_or_init(&self, f: impl FnOnce() -> T) -> &T {
        self.0.get_or_init(f)
    }
}

/// An object's JSON text as a graph file holds it, computed on first use and dropped
/// whenever the object changes. Each computed text carries a stamp no other text has
/// had, so a save can tell that an entry still holds the very text the last save wrote
/// (and copy that stretch of the last file instead of visiting the entry).
#[derive(Clone, Default, PartialEq, Debug)]
pub struct TextMemo(Memo<(Box<str>, u64)>);

impl TextMemo {
    /// The text, rendered by `render` when not yet cached, and its stamp.
    pub fn get_or_render(&self, render: impl FnOnce() -> String) -> (&str, u64) {
        let (text, stamp) = self
            .0
            .get_or_init(|| (render().into_boxed_str(), fresh_stamp()));
        (text, *stamp)
    }

    /// The stamp of the cached text, when there is one.
    pub fn stamp(&self) -> Option<u64> {
        self.0.0.get().map(|(_, stamp)| *stamp)
    }
}

/// The typed fields of a node that scoring and planning read for every node.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeMeta {
    pub tier: Tier,
    /// `_archived` is truthy (it may be, on an orphan too).
    pub archived_flag: bool,
    /// `_archived` is present, with any value.
    has_archived_key: bool,
    pub created_ts: f64,
    pub last_read_ts: Option<f64>,
    /// Where the gist sits among the object's fields, when it is a string (fields keep
    /// their positions until one is removed, which drops these memoised fields).
    gist_at: Option<usize>,
    pub gist_chars: usize,
    pub useful_ts: Box<[f64]>,
    /// A person locked the node (`"locked": true`).
    pub locked: bool,
    /// Notes that start with [`crate::wording::CONFLICT_NOTE_PREFIX`]: merge
    /// conflicts nobody has resolved (DEBT counts them on every read).
    pub conflict_notes: usize,
}

impl NodeMeta {
    /// The tier the flags give: `_orphaned_ts` present wins, then a truthy `_archived`.
    fn tier_from(archived_flag: bool, orphaned: bool) -> Tier {
        if orphaned {
            Tier::Orphaned
        } else if archived_flag {
            Tier::Archived
        } else {
            Tier::Active
        }
    }

    /// Bring the fields read from `key` up to date for its new `value`; false when `key`
    /// feeds fields this cannot patch (the caller recomputes them all).
    fn refresh(&mut self, key: &str, value: &Value) -> bool {
        match key {
            field::ARCHIVED => {
                self.has_archived_key = true;
                self.archived_flag = truthy(value);
                // Setting `_archived` leaves `_orphaned_ts`, and so an orphan, as it is.
                let orphaned = self.tier == Tier::Orphaned;
                self.tier = NodeMeta::tier_from(self.archived_flag, orphaned);
            }
            // Present with any value, `_orphaned_ts` makes an orphan.
            field::ORPHANED_TS => self.tier = Tier::Orphaned,
            field::LAST_READ_TS => self.last_read_ts = as_ts(Some(value)),
            _ => return false,
        }
        true
    }

    fn of<'a>(fields: impl Iterator<Item = (&'a str, &'a Value)>) -> NodeMeta {
        // One walk over the fields (keys are unique) instead of a hashed lookup per field:
        // a pass over a freshly loaded graph computes this for every node.
        let (mut archived_flag, mut has_archived_key, mut orphaned) = (false, false, false);
        let (mut created_ts, mut last_read_ts) = (None, None);
        let (mut gist, mut gist_at) = ("", None);
        let mut useful_ts = Box::default();
        let mut locked = false;
        let mut conflict_notes = 0;
        let is_conflict = |note: &str| note.starts_with(crate::wording::CONFLICT_NOTE_PREFIX);
        for (at, (key, value)) in fields.enumerate() {
            match key {
                field::ARCHIVED => (archived_flag, has_archived_key) = (truthy(value), true),
                field::ORPHANED_TS => orphaned = true,
                field::CREATED_TS => created_ts = as_ts(Some(value)),
                field::LAST_READ_TS => last_read_ts = as_ts(Some(value)),
                field::GIST => {
                    if let Some(text) = value.as_str() {
                        (gist, gist_at) = (text, Some(at));
                    }
                }
                field::USEFUL_TS => {
                    if let Value::Array(items) = value {
                        useful_ts = items.iter().filter_map(Value::as_f64).collect();
                    }
                }
                field::LOCKED => locked = *value == Value::Bool(true),
                // Read as `Node::notes` reads them: a list, or one string.
                field::NOTES => {
                    conflict_notes = match value {
                        Value::Array(notes) => notes
                            .iter()
                            .filter(|note| note.as_str().is_some_and(is_conflict))
                            .count(),
                        Value::String(note) => usize::from(is_conflict(note)),
                        _ => 0,
                    }
                }
                _ => {}
            }
        }
        NodeMeta {
            archived_flag,
            has_archived_key,
            tier: NodeMeta::tier_from(archived_flag, orphaned),
            created_ts: created_ts.unwrap_or(0.0),
            last_read_ts,
            gist_at,
            gist_chars: char_len(gist),
            useful_ts,
            locked,
            conflict_notes,
        }
    }
}

/// One memory: a JSON object whose map key is its id.
#[derive(Debug, Clone)]
pub struct Node {
    obj: Object,
    /// Tier flags (`_archived`, `_orphaned_ts`) the object did not hold when they were
    /// set, in the order they were set: logically the object's last fields, kept out of
    /// the hashed map because a first pass over a large loaded graph flags nearly every
    /// node. They join the map when a field after them is added.
    appended: Vec<(&'static str, Value)>,
    memos: NodeMemos,
}

/// What a node derives from its fields, each computed on first use.
#[derive(Debug, Clone, Default)]
struct NodeMemos {
    meta: Memo<NodeMeta>,
    text: TextMemo,
    search_text: Memo<Box<str>>,
    words: Memo<WordIndex>,
}

impl NodeMemos {
    /// Drop or patch what no longer holds once `key` is set to `value`: setting
    /// `_archived` (compaction) or `_last_read_ts` (reads) patches the typed fields and
    /// keeps the searchable text instead of dropping them.
    fn forget_for(&mut self, key: &str, value: &Value) {
        self.text = TextMemo::default();
        if matches!(key, field::GIST | field::NOTES | field::TOUCHES) {
            self.search_text = Memo::default();
            self.words = Memo::default();
        }
        if matches!(key, field::TOUCHES | field::ARCHIVED) {
            touches_changed();
        }
        if let Some(fields) = self.meta.0.get_mut()
            && !fields.refresh(key, value)
        {
            self.meta = Memo::default();
        }
    }

    /// Whether the typed fields, when computed, say `key` is a tier flag the node lacks.
    fn knows_absent(&self, key: &str) -> bool {
        match (key, self.meta.0.get()) {
            (field::ARCHIVED, Some(meta)) => !meta.has_archived_key,
            (field::ORPHANED_TS, Some(meta)) => meta.tier != Tier::Orphaned,
            _ => false,
        }
    }
}

impl PartialEq for Node {
    /// Equal fields, whichever way each node holds them (key order aside, as for maps).
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len()
            && self
                .fields()
                .all(|(key, value)| other.get(key) == Some(value))
    }
}

impl serde::Serialize for Node {
    /// As its JSON object, fields in order, without copying them into one first.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(self.len()))?;
        for (key, value) in self.fields() {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

impl Node {
    /// A new node object `{"id": id}`.
    pub fn new(id: &str) -> Node {
        let mut obj = Object::new();
        obj.insert(field::ID.into(), Value::String(id.to_string()));
        Node::from_object(obj)
    }

    /// A node holding a stored object as it is, unknown fields and key order included.
    pub fn from_object(obj: Object) -> Node {
        Node {
            obj,
            appended: Vec::new(),
            memos: NodeMemos::default(),
        }
    }

    fn changed(&mut self) {
        self.memos = NodeMemos::default();
    }

    /// The typed fields, computed once per change.
    pub(crate) fn meta(&self) -> &NodeMeta {
        self.memos.meta.get_or_init(|| NodeMeta::of(self.fields()))
    }

    /// The fields in order, the appended flags last.
    pub fn fields(&self) -> impl Iterator<Item = (&str, &Value)> {
        let own = self.obj.iter().map(|(key, value)| (key.as_str(), value));
        own.chain(self.appended.iter().map(|(key, value)| (*key, value)))
    }

    /// How many fields the node has.
    pub fn len(&self) -> usize {
        self.obj.len() + self.appended.len()
    }

    /// Whether the node has no field at all, not even `id`.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The node's JSON text as written by `render` from its fields (computed once per
    /// change), with its stamp.
    pub fn cached_text(&self, render: impl FnOnce(&Node) -> String) -> (&str, u64) {
        self.memos.text.get_or_render(|| render(self))
    }

    /// The stamp of the cached text (see `TextMemo`).
    pub fn text_stamp(&self) -> Option<u64> {
        self.memos.text.stamp()
    }

    /// The text search scans, as built by `render` (computed once per change).
    pub fn cached_search_text(&self, render: impl FnOnce(&Object) -> String) -> &str {
        self.memos
            .search_text
            .get_or_init(|| render(&self.obj).into_boxed_str())
    }

    /// The node's words for our ranking, as built by `index` from its fields
    /// (computed once per change of its gist, notes or touches).
    pub(crate) fn cached_words(&self, index: impl FnOnce(&Object) -> WordIndex) -> &WordIndex {
        self.memos.words.get_or_init(|| index(&self.obj))
    }

    /// A copy of the node as one JSON object, its fields in order.
    pub fn to_object(&self) -> Object {
        let mut obj = self.obj.clone();
        obj.extend(
            self.appended
                .iter()
                .map(|(key, value)| (key.to_string(), value.clone())),
        );
        obj
    }

    /// The node as one JSON object, its fields in order, without copying them.
    pub fn into_object(mut self) -> Object {
        self.join_appended();
        self.obj
    }

    /// The raw value of any field, known or not.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self.obj.get(key) {
            Some(value) => Some(value),
            None => self.appended_at(key).map(|at| &self.appended[at].1),
        }
    }

    /// Where `key` is among the appended flags.
    fn appended_at(&self, key: &str) -> Option<usize> {
        self.appended.iter().position(|(k, _)| *k == key)
    }

    /// Move the appended flags into the map, after its fields.
    fn join_appended(&mut self) {
        for (key, value) in self.appended.drain(..) {
            self.obj.insert(key.to_string(), value);
        }
    }

    /// Set a field, keeping its position when it exists (Python dict semantics).
    pub fn set(&mut self, key: &str, value: Value) {
        // A tier flag the memoised fields know is absent needs no lookup (a first pass
        // over a large loaded graph flags nearly every node).
        let slot = if self.memos.knows_absent(key) {
            None
        } else {
            match self.obj.get_mut(key) {
                Some(slot) => Some(slot),
                None => self
                    .appended
                    .iter_mut()
                    .find(|(k, _)| *k == key)
                    .map(|(_, slot)| slot),
            }
        };
        // Re-setting a flag or a text to what it is changes nothing, so the memos stay
        // valid. (Numbers are always written: 0.0 and -0.0 compare equal but print
        // differently.)
        if let Some(slot) = &slot
            && matches!(value, Value::Bool(_) | Value::Null | Value::String(_))
            && **slot == value
        {
            return;
        }
        self.memos.forget_for(key, &value);
        match slot {
            Some(slot) => *slot = value,
            None => self.push(key, value),
        }
    }

    /// Add a field the node lacks, last.
    fn push(&mut self, key: &str, value: Value) {
        match [field::ARCHIVED, field::ORPHANED_TS]
            .into_iter()
            .find(|&flag| flag == key)
        {
            Some(flag) => {
                // Room for both flags in one allocation (the second must not grow it).
                if self.appended.capacity() == 0 {
                    self.appended.reserve_exact(2);
                }
                self.appended.push((flag, value));
            }
            None => {
                self.join_appended();
                self.obj.insert(key.to_string(), value);
            }
        }
    }

    /// Remove a field, keeping the order of the others.
    pub fn remove(&mut self, key: &str) -> Option<Value> {
        let removed = match self.obj.shift_remove(key) {
            Some(value) => Some(value),
            None => self.appended_at(key).map(|at| self.appended.remove(at).1),
        };
        if removed.is_some() {
            if matches!(key, field::TOUCHES | field::ARCHIVED) {
                touches_changed();
            }
            self.changed();
        }
        removed
    }

    /// The `id` field as stored (renderers read it from here, not from the map key).
    pub fn id_field(&self) -> Option<&str> {
        self.obj.get(field::ID).and_then(Value::as_str)
    }

    /// The gist; a missing or non-string gist reads as empty.
    pub fn gist(&self) -> &str {
        self.meta()
            .gist_at
            .and_then(|at| self.obj.values().nth(at))
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    /// The `notes` (depth and rationale behind the gist); a lone string reads as one
    /// note, other non-string items as their JSON text.
    pub fn notes(&self) -> Vec<String> {
        string_list(self.obj.get(field::NOTES))
    }

    /// The `touches`: the files (with lines or anchors) and folders the node is about,
    /// read like [`Node::notes`].
    pub fn touches(&self) -> Vec<String> {
        string_list(self.obj.get(field::TOUCHES))
    }

    /// Creation time; a node without one is long past its grace period.
    pub fn created_ts(&self) -> f64 {
        self.meta().created_ts
    }

    /// When the node was last read in full (`_last_read_ts`, seconds since the Unix
    /// epoch); recency scoring takes the later of this and its last write.
    pub fn last_read_ts(&self) -> Option<f64> {
        self.meta().last_read_ts
    }

    /// When sessions endorsed the node with `kg_useful` (`_useful_ts`, seconds since
    /// the Unix epoch); each like feeds usefulness, decaying with age.
    pub fn useful_ts(&self) -> &[f64] {
        &self.meta().useful_ts
    }

    /// Whether `_archived` is truthy. Orphans normally keep the flag, so this is not
    /// the same as being in the archived tier (see [`Node::tier`]); the DEBT counts
    /// a node without it as active.
    pub fn is_archived_flag(&self) -> bool {
        self.meta().archived_flag
    }

    /// When the node was orphaned (`_orphaned_ts`, seconds since the Unix epoch); the
    /// field's presence alone makes an orphan, and a non-number reads as 0, so such an
    /// orphan is past its grace period at the next tick.
    pub fn orphaned_ts(&self) -> Option<f64> {
        self.get(field::ORPHANED_TS)
            .map(|v| v.as_f64().unwrap_or(0.0))
    }

    /// Whether the node is in the orphaned tier: invisible in reads, found by search.
    pub fn is_orphaned(&self) -> bool {
        self.tier() == Tier::Orphaned
    }

    /// The tier the flags give: `_orphaned_ts` present makes an orphan, else a truthy
    /// `_archived` makes it archived, else it is active.
    pub fn tier(&self) -> Tier {
        self.meta().tier
    }

    /// Whether the node is in the active tier: rendered in full and charged to the
    /// level's 17,500-character budget.
    pub fn is_active(&self) -> bool {
        self.tier() == Tier::Active
    }

    /// Whether a person locked the node (`"locked": true`).
    pub fn is_locked(&self) -> bool {
        self.meta().locked
    }

    /// Who wrote the node's current content and when (`_written`); `None` for a node
    /// no write has stamped since stamps began (files of older versions, hand edits).
    pub fn written(&self) -> Option<WriteStamp> {
        self.get(field::WRITTEN).and_then(WriteStamp::parse)
    }
}

/// Read a list of strings the way renderers need it: strings as they are, other
/// values as their JSON text (a hand-edited file may hold anything).
fn string_list(value: Option<&Value>) -> Vec<String> {
    match value {
        Some(Value::Array(items)) => items.iter().map(value_text).collect(),
        Some(Value::String(s)) => vec![s.clone()],
        _ => Vec::new(),
    }
}

/// A value as display text: strings without quotes, everything else as JSON.
pub fn value_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Identity of an edge: `from`, `to` and `rel`, kept end to end in one allocation
/// (deriving a graph's structure reads all three texts of every key).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct EdgeKey {
    /// `from`, then `to`, then `rel`; equal keys have equal texts and offsets.
    text: Box<str>,
    to_at: usize,
    rel_at: usize,
}

impl EdgeKey {
    /// The key of the edge `from` → `to` with relation `rel`; nothing is validated.
    pub fn new(from: &str, to: &str, rel: &str) -> EdgeKey {
        let mut text = String::with_capacity(from.len() + to.len() + rel.len());
        text.push_str(from);
        text.push_str(to);
        text.push_str(rel);
        EdgeKey {
            text: text.into_boxed_str(),
            to_at: from.len(),
            rel_at: from.len() + to.len(),
        }
    }

    /// The source end: a node id, or an artifact path (it holds `/` or `~`).
    pub fn from(&self) -> &str {
        &self.text[..self.to_at]
    }

    /// The target end: a node id, or an artifact path (it holds `/` or `~`).
    pub fn to(&self) -> &str {
        &self.text[self.to_at..self.rel_at]
    }

    /// The relation name, such as `uses` or `in`.
    pub fn rel(&self) -> &str {
        &self.text[self.rel_at..]
    }

    fn parts(&self) -> (&str, &str, &str) {
        (self.from(), self.to(), self.rel())
    }
}

impl Ord for EdgeKey {
    /// By `from`, then `to`, then `rel`.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.parts().cmp(&other.parts())
    }
}

impl PartialOrd for EdgeKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Debug for EdgeKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EdgeKey")
            .field("from", &self.from())
            .field("to", &self.to())
            .field("rel", &self.rel())
            .finish()
    }
}

impl fmt::Display for EdgeKey {
    /// The on-disk key and the text tools print: `<from>-><to>:<rel>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}->{}:{}", self.from(), self.to(), self.rel())
    }
}

/// A typed relation between two node ids or a node id and an artifact path.
#[derive(Debug, Clone, PartialEq)]
pub struct Edge {
    /// The edge's identity, also its key in the graph's edge map (and, as
    /// `<from>-><to>:<rel>`, in the file); it must agree with the object's `from`, `to`
    /// and `rel` fields.
    pub key: EdgeKey,
    obj: Object,
    text: TextMemo,
}

impl Edge {
    /// A new edge object holding only the `from`, `to` and `rel` of `key` (no notes), as
    /// `kg_put_edge` creates an edge the graph lacks.
    pub fn new(key: EdgeKey) -> Edge {
        let mut obj = Object::new();
        obj.insert("from".into(), Value::String(key.from().to_string()));
        obj.insert("to".into(), Value::String(key.to().to_string()));
        obj.insert("rel".into(), Value::String(key.rel().to_string()));
        Edge {
            key,
            obj,
            text: TextMemo::default(),
        }
    }

    /// Build from a stored object; `None` when `from`, `to` or `rel` is not a string.
    pub fn from_object(obj: Object) -> Option<Edge> {
        let text = |k: &str| obj.get(k).and_then(Value::as_str);
        let key = EdgeKey::new(text("from")?, text("to")?, text("rel")?);
        Some(Edge {
            key,
            obj,
            text: TextMemo::default(),
        })
    }

    /// The object's JSON text (computed once per change), with its stamp.
    pub fn cached_text(&self, render: impl FnOnce(&Object) -> String) -> (&str, u64) {
        self.text.get_or_render(|| render(&self.obj))
    }

    /// The stamp of the cached text (see `TextMemo`).
    pub fn text_stamp(&self) -> Option<u64> {
        self.text.stamp()
    }

    /// The source end: a node id, or an artifact path (it holds `/` or `~`); nothing
    /// checks that it exists.
    pub fn from(&self) -> &str {
        self.key.from()
    }

    /// The target end: a node id of this or the other level, or an artifact path.
    pub fn to(&self) -> &str {
        self.key.to()
    }

    /// The relation type, such as `uses` or `part-of`; with the ends it identifies the
    /// edge, so two nodes may be joined by several edges of different `rel`.
    pub fn rel(&self) -> &str {
        self.key.rel()
    }

    /// The stored object in file order: `from`, `to`, `rel`, `notes` and any field a
    /// hand edit or another version of the tool added. Node reads and change events
    /// report it as it is.
    pub fn as_object(&self) -> &Object {
        &self.obj
    }

    /// The `notes` on the relation, read like [`Node::notes`] (a lone string is one
    /// note, other non-strings read as their JSON text).
    pub fn notes(&self) -> Vec<String> {
        string_list(self.obj.get("notes"))
    }

    /// Replace the notes (what `kg_put_edge` does when given notes), keeping the
    /// field's position; a new `notes` field goes last.
    pub fn set_notes(&mut self, notes: Vec<String>) {
        self.text = TextMemo::default();
        let value = Value::Array(notes.into_iter().map(Value::String).collect());
        if let Some(slot) = self.obj.get_mut("notes") {
            *slot = value;
        } else {
            self.obj.insert("notes".into(), value);
        }
    }

    /// Whether either end is the node `id`: the edges a node read lists and a node
    /// deletion removes. (Unrelated to a node's `touches` field.)
    pub fn touches(&self, id: &str) -> bool {
        self.key.from() == id || self.key.to() == id
    }
}

/// One entry of `_meta.versions`, kept as the stored object so nothing is lost.
#[derive(Debug, Clone, PartialEq)]
pub struct Version {
    obj: Object,
    /// `ts` read once: scoring needs it for every node on every render.
    ts: f64,
    text: TextMemo,
}

impl Version {
    /// An entry as the file stores it; a missing or non-number `ts` reads as 0.
    pub fn from_object(obj: Object) -> Version {
        Version {
            ts: as_ts(obj.get("ts")).unwrap_or(0.0),
            obj,
            text: TextMemo::default(),
        }
    }
    /// The stored entry (`v`, `ts`, `session` and any other field), as the graph file
    /// holds it.
    pub fn as_object(&self) -> &Object {
        &self.obj
    }
    /// How many times the node or edge was written, or promoted back to active by a
    /// read: 1 after the first; 0 when missing or not an integer.
    pub fn v(&self) -> i64 {
        self.obj.get("v").and_then(Value::as_i64).unwrap_or(0)
    }
    /// When the last write or promotion happened, in seconds since the Unix epoch (0
    /// when missing): recency scoring reads it, and so does `kg_sync` after a restart.
    pub fn ts(&self) -> f64 {
        self.ts
    }
    /// The session (or graph-view connection) behind the last write or promotion, so
    /// its own `kg_sync` skips it; `None` when the caller named none.
    pub fn session(&self) -> Option<&str> {
        self.obj.get("session").and_then(Value::as_str)
    }
    /// Record a write: `v` + 1, `ts` = now, `session` = the acting session.
    pub(crate) fn bump(&mut self, now: f64, session: Option<&str>) {
        self.text = TextMemo::default();
        let next = self.v() + 1;
        let session = session.map_or(Value::Null, |s| Value::String(s.to_string()));
        self.obj.insert("v".into(), Value::from(next));
        let ts = float_value(now);
        self.ts = as_ts(Some(&ts)).unwrap_or(0.0);
        self.obj.insert("ts".into(), ts);
        self.obj.insert("session".into(), session);
    }
    /// The object's JSON text (computed once per change), with its stamp.
    pub fn cached_text(&self, render: impl FnOnce(&Object) -> String) -> (&str, u64) {
        self.text.get_or_render(|| render(&self.obj))
    }

    /// The stamp of the cached text (see `TextMemo`).
    pub fn text_stamp(&self) -> Option<u64> {
        self.text.stamp()
    }
}

/// The version key of a node.
pub fn node_version_key(id: &str) -> String {
    format!("node:{id}")
}

/// The version key of an edge.
pub fn edge_version_key(key: &EdgeKey) -> String {
    format!("edge:{key}")
}

/// Length in characters; identifiers are ASCII, which is counted at memory speed.
pub fn char_len(s: &str) -> usize {
    if s.is_ascii() {
        s.len()
    } else {
        s.chars().count()
    }
}

/// A float as a JSON number (timestamps are always written as floats).
pub fn float_value(x: f64) -> Value {
    serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number)
}

/// What kind of identifier is being checked, with its rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdentKind {
    /// A node id: ASCII letters, digits, `.`, `_`, `-`, starting alphanumeric; at most
    /// 128 characters.
    NodeId,
    /// An edge's relation name: the node id alphabet, at most 64 characters.
    Rel,
    /// An edge end (`from` or `to`): a node id or an artifact path, so `/` and `~` are
    /// allowed too, also first; at most 256 characters.
    EdgeRef,
}

impl IdentKind {
    fn max_len(self) -> usize {
        match self {
            IdentKind::NodeId => 128,
            IdentKind::Rel => 64,
            IdentKind::EdgeRef => 256,
        }
    }

    fn allows_first(self, c: char) -> bool {
        c.is_ascii_alphanumeric() || (self == IdentKind::EdgeRef && (c == '~' || c == '/'))
    }

    fn allows_rest(self, c: char) -> bool {
        c.is_ascii_alphanumeric()
            || matches!(c, '.' | '_' | '-')
            || (self == IdentKind::EdgeRef && (c == '~' || c == '/'))
    }

    fn message(self, value: &str) -> String {
        // A huge value is named by its start and length, not echoed whole.
        let q = repr_str(&crate::limits::for_log(value));
        match self {
            IdentKind::NodeId => format!(
                "Invalid node id {q}: use letters, digits, '.', '_', '-' (max 128 chars, must start alphanumeric)"
            ),
            IdentKind::Rel => format!(
                "Invalid rel {q}: use letters, digits, '.', '_', '-' (max 64 chars, must start alphanumeric)"
            ),
            IdentKind::EdgeRef => format!(
                "Invalid edge ref {q}: use letters, digits, '.', '_', '-', '/', '~' (max 256 chars)"
            ),
        }
    }
}

pub use crate::limits::MAX_ID_WORDS;

/// What the id length rule says about a new id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdShape {
    /// Its words: the non-empty hyphen-separated parts, an ISO date
    /// (`YYYY-MM` or `YYYY-MM-DD`) counting as one.
    pub words: usize,
    /// It holds an ISO date.
    pub dated: bool,
}

impl IdShape {
    /// Count the words of `id` and find any date in it.
    pub fn of(id: &str) -> IdShape {
        let parts: Vec<&str> = id.split('-').collect();
        let (mut words, mut dated, mut i) = (0, false, 0);
        while i < parts.len() {
            let date_len = date_parts(&parts[i..]);
            if date_len > 0 {
                dated = true;
                words += 1;
                i += date_len;
                continue;
            }
            if !parts[i].is_empty() {
                words += 1;
            }
            i += 1;
        }
        IdShape { words, dated }
    }

    /// Over [`MAX_ID_WORDS`]: refused for a new node or a rename target.
    pub fn too_long(self) -> bool {
        self.words > MAX_ID_WORDS
    }
}

/// How many hyphen parts at the start of `parts` form an ISO date: 3 for
/// `YYYY-MM-DD`, 2 for `YYYY-MM`, 0 for none.
fn date_parts(parts: &[&str]) -> usize {
    let digits = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_digit());
    let in_range = |s: &str, max: u32| s.parse::<u32>().is_ok_and(|v| (1..=max).contains(&v));
    match parts {
        [y, m, rest @ ..] if digits(y, 4) && digits(m, 2) && in_range(m, 12) => match rest {
            [d, ..] if digits(d, 2) && in_range(d, 31) => 3,
            _ => 2,
        },
        _ => 0,
    }
}

/// Whether an edge end names a file or folder (an artifact the node is about) rather
/// than a node: it holds `/` or `~`, which node ids cannot.
pub fn is_artifact_ref(reference: &str) -> bool {
    reference.contains('/') || reference.contains('~')
}

/// Check an identifier at the write boundary; the error says what is allowed.
/// Unlike the reference, a trailing newline is refused.
pub fn validate_ident(kind: IdentKind, value: &str) -> Result<(), String> {
    let mut chars = value.chars();
    let ok = match chars.next() {
        Some(first) => {
            kind.allows_first(first)
                && chars.all(|c| kind.allows_rest(c))
                && value.chars().count() <= kind.max_len()
        }
        None => false,
    };
    if ok { Ok(()) } else { Err(kind.message(value)) }
}

#[cfg(test)]
mod tests;

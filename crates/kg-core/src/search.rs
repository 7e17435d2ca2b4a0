//! Search: the ranking core shared by `kg_search` and prompt recall, and the
//! `kg_search` tool text (core.md §8, interfaces.md §3.4).
//!
//! Everything here is a pure function over borrowed graphs: no store, no lock, no
//! clock. The caller picks the graphs (§8.1), answers "has the session seen this id"
//! and marks [`shown_ids`] seen afterwards.
//!
//! Ranking is Reciprocal Rank Fusion of per-term rankings, with every order-relevant
//! detail pinned by the spec and checked against the reference goldens: the pre-sort
//! record order (first score contribution), the stable sort on the *rounded* score, the
//! adjacency built in graph-then-edge order, and path edges collected from the target
//! end back to the source.

use crate::graph::Graph;
use crate::model::{EdgeKey, Level, Node, field, value_text};
use crate::pyfmt::round_to;
use crate::structure::Incidence;
use crate::wording;
use serde_json::Value;
use std::cmp::Reverse;
use std::collections::HashSet;

/// Character budget of the `kg_search` text.
pub const SEARCH_BUDGET: usize = 10_000;
/// Hits shown in full.
pub const TOP_HITS: usize = 5;
/// One-line matches after the top hits.
pub const MORE_HITS: usize = 10;
/// Reciprocal Rank Fusion constant.
const RRF_K: f64 = 60.0;
/// Longest connection path between two top hits, in edges.
const MAX_PATH_EDGES: usize = 4;

/// One graph taking part in a search.
///
/// Pass them in search order: the user graph first, then the project graph(s) in load
/// order. The order decides ties (user records sort before project records, an id
/// found in several project graphs keeps its first position), the adjacency order of
/// connection paths, and which graph a connector's gist comes from. User graphs are
/// moved ahead of project graphs (stably) should a caller list them otherwise.
#[derive(Debug, Clone, Copy)]
pub struct SearchGraph<'a> {
    /// The graph's level: hits and connectors report it, and user graphs go first.
    pub level: Level,
    /// The graph, searched in all three tiers.
    pub graph: &'a Graph,
}

/// A ranked record: a top hit or a "more" match.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// The graph the node was found in; an id held by both levels gives two hits.
    pub level: Level,
    /// The matching node's id.
    pub id: String,
    /// The node's one-line gist, as stored.
    pub gist: String,
    /// The node's `_archived` flag is set. An orphaned node may carry it too, so
    /// [`Hit::orphaned`] decides the tier first.
    pub archived: bool,
    /// The node is orphaned: archived, no longer rendered even as an anchor, and deleted
    /// once the orphan grace period runs out.
    pub orphaned: bool,
    /// The session was already shown this node (preload, read or earlier search), so its
    /// notes are left out. Always `false` without a session.
    pub seen: bool,
    /// The score rounded to 4 decimals (Python `round`): what the order and recall
    /// thresholds compare.
    pub score: f64,
    /// The unrounded score: over the query terms, the sum of idf / (60 + the node's rank
    /// among that term's matches). When several graphs of one level hold the id, the
    /// higher raw score wins.
    pub raw_score: f64,
    /// A copy of the node's notes, only when the session has not seen the node.
    pub notes: Option<Vec<String>>,
}

/// A node on a connection path that is neither a top hit nor a "more" match.
#[derive(Debug, Clone, PartialEq)]
pub struct Connector {
    /// The id of the node the path passes through.
    pub id: String,
    /// Its gist, from the first graph in search order that holds the id.
    pub gist: String,
    /// The level of that graph.
    pub level: Level,
    /// The session was already shown this node (preload, read, earlier search or
    /// recall); prompt recall stays silent when it has nothing unseen. Always `false`
    /// without a session.
    pub seen: bool,
}

/// The outcome of [`search`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SearchResult {
    /// The first five records, shown with their gists.
    pub top: Vec<Hit>,
    /// The next ten records, listed by id.
    pub more: Vec<Hit>,
    /// Number of records (every matching (level, id)).
    pub total: usize,
    /// Edges on the connection paths between top hits, in first-collected order. Each
    /// edge (its `(from, to, rel)` identity) appears once; parallel edges with another
    /// `rel` are distinct.
    pub path_edges: Vec<EdgeKey>,
    /// Path endpoints that are neither top nor "more" hits, in path-edge order (`from`
    /// then `to`), each once; gist and level from the first graph holding the id.
    pub connectors: Vec<Connector>,
}

/// Query terms: Unicode-lowercased, whitespace-split, duplicates dropped (first kept).
///
/// Whitespace is Python's `str.split()` set: Unicode whitespace plus the four
/// information separators U+001C–U+001F, which Python also splits on.
pub fn query_terms(query: &str) -> Vec<String> {
    let lower = query.to_lowercase();
    let mut seen = std::collections::HashSet::new();
    lower
        .split(|c: char| c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c))
        .filter(|t| !t.is_empty() && seen.insert(*t))
        .map(str::to_string)
        .collect()
}

/// Append each string of a `notes`/`touches` field, space-separated. Reads the field
/// the way [`Node::notes`] does (a list; a lone string is one item; non-strings as
/// JSON text) without copying it first.
fn push_list(buf: &mut String, value: Option<&Value>) {
    match value {
        Some(Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    buf.push(' ');
                }
                match item {
                    Value::String(s) => buf.push_str(s),
                    other => buf.push_str(&value_text(other)),
                }
            }
        }
        Some(Value::String(s)) => buf.push_str(s),
        _ => {}
    }
}

/// Append the searchable text of a node, `id gist notes… touches…`, lowercased.
///
/// The part after the id is memoised on the node. Lowercasing the two parts apart
/// equals lowercasing the whole: the only context-dependent mapping (final sigma)
/// never looks across the separating space.
fn push_searchable(buf: &mut String, id: &str, node: &Node) {
    push_lowercase(buf, id);
    buf.push(' ');
    buf.push_str(node.cached_search_text(searchable_fields));
}

/// `gist notes… touches…` of a node object, lowercased.
fn searchable_fields(obj: &crate::model::Object) -> String {
    // One linear walk over the few fields beats three hashed look-ups.
    let (mut gist, mut notes, mut touches) = (None, None, None);
    for (key, value) in obj {
        match key.as_str() {
            field::GIST => gist = Some(value),
            field::NOTES => notes = Some(value),
            field::TOUCHES => touches = Some(value),
            _ => {}
        }
    }
    let mut text = String::new();
    text.push_str(gist.and_then(Value::as_str).unwrap_or(""));
    text.push(' ');
    push_list(&mut text, notes);
    text.push(' ');
    push_list(&mut text, touches);
    let mut lower = String::with_capacity(text.len());
    push_lowercase(&mut lower, &text);
    lower
}

/// Append `text` lowercased the way Python's `str.lower` does.
fn push_lowercase(buf: &mut String, text: &str) {
    if text.is_ascii() {
        let start = buf.len();
        buf.push_str(text);
        buf[start..].make_ascii_lowercase();
    } else {
        // Unicode lowercasing, context-dependent mappings such as final sigma included.
        buf.push_str(&text.to_lowercase());
    }
}

/// Score one graph: `(node index, raw score)` in the order each node first gained
/// score (terms in query order, each term's matches in rank order).
fn score_graph(graph: &Graph, terms: &[String]) -> Vec<(usize, f64)> {
    let n = graph.nodes.len();
    if n == 0 || terms.is_empty() {
        return Vec::new();
    }
    // Node texts are built and lowercased once per call into a chunk of a few dozen
    // kilobytes, which every term then scans while it is still in cache. Texts are
    // separated by '\n': a term never holds whitespace, so no match spans two nodes,
    // and the leftmost non-overlapping matches over the chunk are exactly the per-node
    // ones (Python's `str.count`).
    const CHUNK_BYTES: usize = 32 * 1024;
    let mut term_hits: Vec<Vec<(usize, usize)>> = vec![Vec::new(); terms.len()];
    // Vectorised substring search, each term's searcher built once per call. Like
    // Python's `str.count`, it reports non-overlapping matches, left to right.
    let finders: Vec<memchr::memmem::Finder> = terms
        .iter()
        .map(|term| memchr::memmem::Finder::new(term.as_bytes()))
        .collect();
    let mut chunk = String::with_capacity(CHUNK_BYTES * 2);
    let mut ends: Vec<usize> = Vec::new();
    let mut first = 0;
    for (index, (id, node)) in graph.nodes.iter().enumerate() {
        push_searchable(&mut chunk, id, node);
        ends.push(chunk.len());
        chunk.push('\n');
        if chunk.len() < CHUNK_BYTES && index + 1 < n {
            continue;
        }
        for (finder, hits) in finders.iter().zip(term_hits.iter_mut()) {
            // (node, tf) in node order.
            let mut local = 0;
            for at in finder.find_iter(chunk.as_bytes()) {
                while ends[local] <= at {
                    local += 1;
                }
                let node = first + local;
                match hits.last_mut() {
                    Some((last, tf)) if *last == node => *tf += 1,
                    _ => hits.push((node, 1)),
                }
            }
        }
        chunk.clear();
        ends.clear();
        first = index + 1;
    }
    let mut scores: Vec<Option<f64>> = vec![None; n];
    let mut order: Vec<usize> = Vec::new();
    let n_f = n as f64;
    for mut hits in term_hits {
        if hits.is_empty() {
            continue;
        }
        let df = hits.len() as f64;
        let idf = if n > 1 {
            (n_f / df).ln() / n_f.ln()
        } else {
            1.0
        };
        if idf <= 0.0 {
            continue; // the term is in every node: it tells nothing apart
        }
        // Stable: equal tf keeps node order, yet every match gets its own rank.
        hits.sort_by_key(|&(_, tf)| Reverse(tf));
        for (rank, &(index, _)) in hits.iter().enumerate() {
            let add = idf / (RRF_K + rank as f64);
            match &mut scores[index] {
                Some(score) => *score += add,
                slot @ None => {
                    *slot = Some(add);
                    order.push(index);
                }
            }
        }
    }
    order
        .into_iter()
        .filter_map(|index| scores[index].map(|s| (index, s)))
        .collect()
}

/// Python's `round(x, 4)`. Most scores are far from a rounding tie, and then the
/// integer nearest to `x·10⁴` divided by 10⁴ (one correctly rounded division) is
/// exactly the double nearest the rounded decimal, as Python returns; near a tie, or
/// for huge values, the exact decimal path of [`round_to`] decides.
fn round4(x: f64) -> f64 {
    let y = x * 10_000.0;
    if y.is_finite() && y.abs() < 1e12 && ((y - y.floor()) - 0.5).abs() > 1e-6 {
        y.round() / 10_000.0
    } else {
        round_to(x, 4)
    }
}

/// A scored (level, id) before materialisation.
#[derive(Debug, Clone, Copy)]
struct Record {
    graph: usize,
    node: usize,
    raw: f64,
    rounded: f64,
}

/// The graph indices in search order: user graphs first, otherwise as given.
fn search_order(graphs: &[SearchGraph<'_>]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..graphs.len()).collect();
    order.sort_by_key(|&g| graphs[g].level != Level::User);
    order
}

/// Rank `terms` over `graphs` (core.md §8.2–§8.3).
///
/// `seen` answers whether the session has been shown an id; `None` means no session,
/// so nothing is seen and every hit carries its notes.
///
/// Records are keyed by (level, id). When several graphs of one level hold the same id
/// (no session, several project graphs loaded), the record keeps the position where
/// the id was first recorded, and a later graph replaces its score and content only
/// with a strictly greater raw score. With a single graph per level this never
/// applies, so callers need not say which case they are in.
pub fn search(
    graphs: &[SearchGraph<'_>],
    terms: &[String],
    seen: Option<&dyn Fn(&str) -> bool>,
) -> SearchResult {
    let order = search_order(graphs);
    let mut records: Vec<Record> = Vec::new();
    let mut by_key: FastMap<(Level, &str), usize> = FastMap::default();
    for &g in &order {
        for (node, raw) in score_graph(graphs[g].graph, terms) {
            keep_best(graphs, &mut records, &mut by_key, g, node, raw);
        }
    }
    // Stable descending sort on the rounded score: ties keep the pre-sort order.
    records.sort_by(|a, b| b.rounded.total_cmp(&a.rounded));
    assemble(graphs, &order, records, seen)
}

/// Rank `query` over `graphs` by our relevance ranking (the default policy's
/// `kg_search`; [`crate::relevance`]). Records, connection paths and connectors are
/// built as [`search`] builds them; only the scores and their order differ.
pub fn search_ours(
    graphs: &[SearchGraph<'_>],
    query: &crate::relevance::Query,
    seen: Option<&dyn Fn(&str) -> bool>,
) -> SearchResult {
    let order = search_order(graphs);
    let ordered: Vec<&Graph> = order.iter().map(|&g| graphs[g].graph).collect();
    let ranking = crate::relevance::rank(&ordered, query);
    let mut records: Vec<Record> = Vec::new();
    let mut by_key: FastMap<(Level, &str), usize> = FastMap::default();
    for scored in &ranking.scored {
        keep_best(
            graphs,
            &mut records,
            &mut by_key,
            order[scored.graph],
            scored.node,
            scored.score,
        );
    }
    assemble(graphs, &order, records, seen)
}

/// Add a scored node to `records`. When several graphs of one level hold the id (no
/// session, several project graphs loaded), the record keeps the position where the
/// id was first recorded, and a later graph replaces its score and content only with a
/// strictly greater raw score.
fn keep_best<'g>(
    graphs: &[SearchGraph<'g>],
    records: &mut Vec<Record>,
    by_key: &mut FastMap<(Level, &'g str), usize>,
    g: usize,
    node: usize,
    raw: f64,
) {
    let sg = &graphs[g];
    let record = Record {
        graph: g,
        node,
        raw,
        rounded: round4(raw),
    };
    // Merging is only needed when a level has several graphs.
    if graphs
        .iter()
        .filter(|other| other.level == sg.level)
        .count()
        < 2
    {
        records.push(record);
        return;
    }
    let Some((id, _)) = sg.graph.nodes.get_index(node) else {
        return;
    };
    match by_key.get(&(sg.level, id.as_str())) {
        Some(&at) => {
            if raw > records[at].raw {
                records[at] = record;
            }
        }
        None => {
            by_key.insert((sg.level, id.as_str()), records.len());
            records.push(record);
        }
    }
}

/// The top and "more" hits of ranked `records`, the connection paths between the top
/// hits and their connectors.
fn assemble(
    graphs: &[SearchGraph<'_>],
    order: &[usize],
    records: Vec<Record>,
    seen: Option<&dyn Fn(&str) -> bool>,
) -> SearchResult {
    let is_seen = |id: &str| seen.is_some_and(|f| f(id));
    let total = records.len();
    let hit = |r: &Record| -> Option<Hit> {
        let sg = &graphs[r.graph];
        let (id, node) = sg.graph.nodes.get_index(r.node)?;
        let seen = is_seen(id);
        Some(Hit {
            level: sg.level,
            id: id.clone(),
            gist: node.gist().to_string(),
            archived: node.is_archived_flag(),
            orphaned: node.is_orphaned(),
            seen,
            score: r.rounded,
            raw_score: r.raw,
            notes: (!seen).then(|| node.notes()),
        })
    };
    let top: Vec<Hit> = records.iter().take(TOP_HITS).filter_map(hit).collect();
    let more: Vec<Hit> = records
        .iter()
        .skip(TOP_HITS)
        .take(MORE_HITS)
        .filter_map(hit)
        .collect();

    let path_edges = if top.len() >= 2 {
        connection_paths(graphs, order, &top)
    } else {
        Vec::new()
    };

    let listed: HashSet<&str> = top.iter().chain(&more).map(|h| h.id.as_str()).collect();
    let mut connectors: Vec<Connector> = Vec::new();
    let mut connector_ids: HashSet<&str> = HashSet::new();
    for edge in &path_edges {
        for id in [edge.from(), edge.to()] {
            if listed.contains(id) || connector_ids.contains(id) {
                continue;
            }
            let holder = order.iter().find_map(|&g| {
                let sg = &graphs[g];
                sg.graph.nodes.get(id).map(|node| (sg.level, node))
            });
            if let Some((level, node)) = holder {
                connector_ids.insert(id);
                connectors.push(Connector {
                    id: id.to_string(),
                    gist: node.gist().to_string(),
                    level,
                    seen: is_seen(id),
                });
            }
        }
    }

    SearchResult {
        top,
        more,
        total,
        path_edges,
        connectors,
    }
}

/// Undirected adjacency over the node ids of the participating graphs: a vertex's
/// `(neighbour, edge)` entries in graph order, then edge order; an edge is its position
/// in `keys`.
///
/// Not the graphs' own [`crate::structure::Structure::neighbours`]: a vertex is an id
/// whichever graphs hold it, and an edge may join nodes of two graphs (its ends are
/// resolved by id across them), so the lists are built per search, from the links
/// only (no artifact ends, no self-loops), with the same builder.
struct Adjacency<'g> {
    lists: Incidence,
    keys: Vec<&'g EdgeKey>,
}

impl<'g> Adjacency<'g> {
    fn neighbours(&self, v: usize) -> impl Iterator<Item = (usize, &'g EdgeKey)> + '_ {
        let lists = &self.lists;
        lists
            .others(v)
            .iter()
            .zip(lists.edges(v))
            .map(|(&w, &edge)| (w as usize, self.keys[edge as usize]))
    }

    fn is_isolated(&self, v: usize) -> bool {
        self.lists.edges(v).is_empty()
    }
}

// Fx-hashed maps for the per-call id lookups: the keys are our own node ids, and
// SipHash's flooding resistance costs more than the lookups themselves.
type FastMap<K, V> = rustc_hash::FxHashMap<K, V>;
type FastSet<K> = rustc_hash::FxHashSet<K>;

/// Vertex numbering: an id is one vertex whatever the number of graphs holding it.
/// `vertex[g][i]` is the vertex of node `i` of graph `g`; returns it with the count.
///
/// Each graph's own nodes are numbered by position; only ids shared between graphs
/// need a look-up, and those are found from the smaller graph of each pair.
fn vertices(graphs: &[SearchGraph<'_>], order: &[usize]) -> (Vec<Vec<usize>>, usize) {
    let mut vertex: Vec<Vec<usize>> = vec![Vec::new(); graphs.len()];
    let mut count = 0;
    for (rank, &g) in order.iter().enumerate() {
        let nodes = &graphs[g].graph.nodes;
        let mut mine: Vec<Option<usize>> = vec![None; nodes.len()];
        for &earlier in &order[..rank] {
            let theirs = &graphs[earlier].graph.nodes;
            if nodes.len() <= theirs.len() {
                for (i, id) in nodes.keys().enumerate() {
                    if mine[i].is_none()
                        && let Some(j) = theirs.get_index_of(id.as_str())
                    {
                        mine[i] = Some(vertex[earlier][j]);
                    }
                }
            } else {
                for (j, id) in theirs.keys().enumerate() {
                    if let Some(i) = nodes.get_index_of(id.as_str())
                        && mine[i].is_none()
                    {
                        mine[i] = Some(vertex[earlier][j]);
                    }
                }
            }
        }
        vertex[g] = mine
            .into_iter()
            .map(|v| {
                v.unwrap_or_else(|| {
                    count += 1;
                    count - 1
                })
            })
            .collect();
    }
    (vertex, count)
}

/// The union of the shortest paths (≤ 4 edges) between every pair of top hits.
fn connection_paths(graphs: &[SearchGraph<'_>], order: &[usize], top: &[Hit]) -> Vec<EdgeKey> {
    let (vertex, count) = vertices(graphs, order);
    // The vertex of an id in whichever graph holds it (an edge may name a node of
    // another level).
    let find = |id: &str| {
        order
            .iter()
            .find_map(|&g| graphs[g].graph.nodes.get_index_of(id).map(|i| vertex[g][i]))
    };
    // Qualifying edges: both endpoints are nodes (artifacts do not route), no self-loop.
    let edge_count = order.iter().map(|&g| graphs[g].graph.edges.len()).sum();
    let mut links: Vec<(u32, u32)> = Vec::with_capacity(edge_count);
    let mut keys: Vec<&EdgeKey> = Vec::with_capacity(edge_count);
    for &g in order {
        let graph = graphs[g].graph;
        let structure = graph.structure();
        for (key, ends) in graph.edges.keys().zip(&structure.edges) {
            // Ends at node positions are the same id exactly when at the same position
            // (ids are unique); an end at a node and one outside the graph differ.
            let self_loop = match (ends.from.node(), ends.to.node()) {
                (Some(from), Some(to)) => from == to,
                (None, None) => key.from() == key.to(),
                _ => false,
            };
            if self_loop {
                continue;
            }
            let end = |position: Option<usize>, id: &str| match position {
                Some(i) => Some(vertex[g][i]),
                None => find(id),
            };
            if let (Some(a), Some(b)) = (
                end(ends.from.node(), key.from()),
                end(ends.to.node(), key.to()),
            ) {
                // Vertices count the nodes of graphs held in memory.
                links.push((a as u32, b as u32));
                keys.push(key);
            }
        }
    }
    if links.is_empty() {
        return Vec::new();
    }
    let adjacency = Adjacency {
        lists: Incidence::of(
            count,
            links
                .iter()
                .map(|&(a, b)| [Some(a as usize), Some(b as usize)]),
        ),
        keys,
    };

    let ends: Vec<Option<usize>> = top
        .iter()
        .map(|hit| find(&hit.id).filter(|&v| !adjacency.is_isolated(v)))
        .collect();
    let mut search = Bfs::new(count);
    let mut collected: Vec<EdgeKey> = Vec::new();
    let mut known: FastSet<&EdgeKey> = FastSet::default();
    for (i, source) in ends.iter().enumerate() {
        for target in &ends[i + 1..] {
            // A pair is skipped when either id has no adjacency entry.
            let (Some(source), Some(target)) = (*source, *target) else {
                continue;
            };
            for key in search.path(&adjacency, source, target) {
                // The same edge on a later path keeps its first position.
                if known.insert(key) {
                    collected.push(key.clone());
                }
            }
        }
    }
    collected
}

/// Breadth-first search state, reused across pairs: a generation stamp marks the
/// vertices discovered by the current search, so nothing is cleared between pairs.
struct Bfs<'g> {
    stamp: Vec<u32>,
    generation: u32,
    parent: Vec<(usize, Option<&'g EdgeKey>)>,
}

impl<'g> Bfs<'g> {
    fn new(count: usize) -> Bfs<'g> {
        Bfs {
            stamp: vec![0; count],
            generation: 0,
            parent: vec![(0, None); count],
        }
    }

    /// Parents are fixed at first discovery and the search stops when `target` is
    /// discovered; the path's edges come back from the target end to `source`. Empty
    /// when `target` is further than [`MAX_PATH_EDGES`] (or is `source` itself).
    fn path(
        &mut self,
        adjacency: &Adjacency<'g>,
        source: usize,
        target: usize,
    ) -> Vec<&'g EdgeKey> {
        self.generation += 1;
        let generation = self.generation;
        self.stamp[source] = generation;
        let mut frontier = vec![source];
        for _ in 0..MAX_PATH_EDGES {
            let mut next = Vec::new();
            for &v in &frontier {
                for (w, key) in adjacency.neighbours(v) {
                    if self.stamp[w] == generation {
                        continue;
                    }
                    self.stamp[w] = generation;
                    self.parent[w] = (v, Some(key));
                    if w == target {
                        let mut path = Vec::new();
                        let mut at = w;
                        while at != source {
                            let (up, Some(key)) = self.parent[at] else {
                                break;
                            };
                            path.push(key);
                            at = up;
                        }
                        return path;
                    }
                    next.push(w);
                }
            }
            if next.is_empty() {
                break;
            }
            frontier = next;
        }
        Vec::new()
    }
}

/// Ids to mark seen after a search with a session: top, more and connectors, even the
/// ones the text's trim ladder dropped (core.md §3.6). Each id once, in that order.
pub fn shown_ids(result: &SearchResult) -> Vec<String> {
    let mut seen: HashSet<&str> = HashSet::new();
    result
        .top
        .iter()
        .map(|h| h.id.as_str())
        .chain(result.more.iter().map(|h| h.id.as_str()))
        .chain(result.connectors.iter().map(|c| c.id.as_str()))
        .filter(|id| seen.insert(id))
        .map(str::to_string)
        .collect()
}

fn chars(s: &str) -> usize {
    s.chars().count()
}

const CONNECTIONS_HEAD: &str = "CONNECTIONS between hits:";
const MORE_HEAD: &str = "MORE MATCHES:";

/// One top hit's lines.
struct HitBlock {
    head: String,
    gist: String,
    notes: Vec<String>,
}

/// The `kg_search` text (core.md §8.4), trimmed to [`SEARCH_BUDGET`] characters.
///
/// `query` is shown as typed. `has_session` = false adds the no-session notes. Lines
/// are joined by `\n` with no trailing newline. Over budget, the ladder drops "more"
/// lines from the end, then path-edge lines from the end, then connector lines from
/// the end, then single note lines (always the last note of the lowest-ranked hit that
/// still has notes); a section whose lines are all gone disappears with its heading.
/// Hit headers and gists are never dropped, so a text whose headers and gists alone
/// exceed the budget stays over it.
pub fn search_text(query: &str, result: &SearchResult, has_session: bool) -> String {
    if result.top.is_empty() {
        let mut text = format!("No nodes found matching '{query}'");
        if !has_session {
            text.push_str(wording::SEARCH_NO_SESSION_MISS);
        }
        return text;
    }
    let mut header = format!(
        "Found {} match(es) for '{query}' — top {}:",
        result.total,
        result.top.len()
    );
    if !has_session {
        header.push_str(wording::SEARCH_NO_SESSION_HEADER);
    }
    let mut blocks: Vec<HitBlock> = result
        .top
        .iter()
        .map(|hit| {
            let mut flags = hit.level.as_str().to_string();
            for (on, flag) in [
                (hit.archived, ", archived"),
                (hit.orphaned, ", orphaned"),
                (hit.seen, ", seen"),
            ] {
                if on {
                    flags.push_str(flag);
                }
            }
            HitBlock {
                head: format!("▸ {} ({flags})", hit.id),
                gist: format!("  gist: {}", hit.gist),
                notes: hit
                    .notes
                    .iter()
                    .flatten()
                    .map(|note| format!("    - {note}"))
                    .collect(),
            }
        })
        .collect();
    let mut connector_lines: Vec<String> = result
        .connectors
        .iter()
        .map(|c| format!("  {}: {}", c.id, c.gist))
        .collect();
    let mut edge_lines: Vec<String> = result
        .path_edges
        .iter()
        .map(|e| format!("  {} --{}--> {}", e.from(), e.rel(), e.to()))
        .collect();
    let mut more_lines: Vec<String> = result
        .more
        .iter()
        .map(|h| format!("  {}: {}", h.id, h.gist))
        .collect();

    // Length bookkeeping: every line after the header costs its characters plus the
    // newline before it; a section costs a blank line and its heading while it has
    // lines. Kept incrementally so trimming thousands of notes stays linear.
    let line_cost = |line: &String| chars(line) + 1;
    let section_cost = |head: &str| 1 + chars(head) + 1;
    let mut total = chars(&header);
    for block in &blocks {
        total += 1 + line_cost(&block.head) + line_cost(&block.gist);
        total += block.notes.iter().map(line_cost).sum::<usize>();
    }
    if !connector_lines.is_empty() || !edge_lines.is_empty() {
        total += section_cost(CONNECTIONS_HEAD);
        total += connector_lines
            .iter()
            .chain(&edge_lines)
            .map(line_cost)
            .sum::<usize>();
    }
    if !more_lines.is_empty() {
        total += section_cost(MORE_HEAD) + more_lines.iter().map(line_cost).sum::<usize>();
    }

    while total > SEARCH_BUDGET {
        let Some(line) = more_lines.pop() else { break };
        total -= line_cost(&line);
        if more_lines.is_empty() {
            total -= section_cost(MORE_HEAD);
        }
    }
    for lines in [&mut edge_lines, &mut connector_lines] {
        while total > SEARCH_BUDGET {
            let Some(line) = lines.pop() else { break };
            total -= line_cost(&line);
        }
    }
    if connector_lines.is_empty()
        && edge_lines.is_empty()
        && (!result.connectors.is_empty() || !result.path_edges.is_empty())
    {
        total -= section_cost(CONNECTIONS_HEAD);
    }
    let mut last_with_notes = blocks.len();
    while total > SEARCH_BUDGET {
        while last_with_notes > 0 && blocks[last_with_notes - 1].notes.is_empty() {
            last_with_notes -= 1;
        }
        if last_with_notes == 0 {
            break;
        }
        if let Some(note) = blocks[last_with_notes - 1].notes.pop() {
            total -= line_cost(&note);
        }
    }

    let mut text = String::with_capacity(total * 2);
    text.push_str(&header);
    for block in &blocks {
        text.push_str("\n\n");
        text.push_str(&block.head);
        text.push('\n');
        text.push_str(&block.gist);
        for note in &block.notes {
            text.push('\n');
            text.push_str(note);
        }
    }
    if !connector_lines.is_empty() || !edge_lines.is_empty() {
        text.push_str("\n\n");
        text.push_str(CONNECTIONS_HEAD);
        for line in connector_lines.iter().chain(&edge_lines) {
            text.push('\n');
            text.push_str(line);
        }
    }
    if !more_lines.is_empty() {
        text.push_str("\n\n");
        text.push_str(MORE_HEAD);
        for line in &more_lines {
            text.push('\n');
            text.push_str(line);
        }
    }
    debug_assert_eq!(chars(&text), total);
    text
}

#[cfg(test)]
mod tests;

//! Our relevance ranking, the default policy's `kg_search` order and prompt recall
//! (issue 21). `KG_POLICY=reference` keeps [`crate::search`]'s reference ranking.
//!
//! Where the reference ranks by raw substring counts of terms of four or more
//! letters, this ranks by BM25F over *words*:
//!
//! - words are split at punctuation, `_`, `-` and camel case, lowercased and stemmed
//!   (Snowball English), so "retries" finds "retried" and `PaymentIntents` finds
//!   "payment intent"; short technical words count (`JWT`, `S3`, `429`), stopwords of
//!   seven languages do not;
//! - a file name in a path (`webhook.rs`) is one more word, so a pasted path finds the
//!   nodes that touch that file;
//! - a word's weight is its rarity across the memory searched (IDF), and where it
//!   appears: the id words count most, then the gist, the touches, the notes;
//! - prompt recall asks for *evidence*, not a score: the best match must hold most of
//!   the prompt's informative weight, and what it injects is the few nodes close to the
//!   best one, plus the neighbour of a strong hit that the prompt partly names
//!   (spreading activation along the edges, decayed).
//!
//! Words are hashed to 64 bits once per node change (memoised on the node), so a query
//! compares integers: a 2,000-node memory is scored well within a millisecond.

use crate::graph::Graph;
use crate::model::{EdgeKey, Level, Node, Object, WordIndex, field, value_text};
use rustc_hash::{FxHashMap, FxHashSet, FxHasher};
use serde_json::Value;
use std::hash::Hasher;
use std::sync::LazyLock;

/// A word, normalised and hashed.
type Word = u64;

/// How much a word counts by where it stands in a node.
mod weight {
    /// The id's words: the node's own title.
    pub const ID: f32 = 2.0;
    pub const GIST: f32 = 1.0;
    /// File names and path words of the touches.
    pub const TOUCHES: f32 = 0.6;
    pub const NOTES: f32 = 0.5;
}

/// BM25's term-frequency saturation and length normalisation.
const K1: f64 = 1.2;
const B: f64 = 0.5;

/// The verbs and fillers of requests to an assistant ("please explain", "ok go
/// ahead"): they say what to do, never what about.
#[rustfmt::skip]
const REQUEST_WORDS: &[&str] = &[
    "please", "thanks", "thank", "hey", "hi", "ok", "okay", "yes", "yeah", "sure", "let",
    "lets", "let's", "want", "need", "like", "make", "get", "got", "go", "going", "do",
    "does", "did", "done", "can", "could", "would", "should", "will", "shall", "may",
    "might", "must", "also", "just", "still", "again", "really", "actually", "maybe",
    "know", "think", "look", "see", "tell", "show", "help", "try", "use", "using", "used",
    "thing", "things", "something", "anything", "everything", "way", "ways", "now", "today",
    "time", "bit", "lot", "lots", "kind", "sort", "one", "two", "new", "old", "good", "bad",
    "right", "wrong", "well", "much", "many", "every", "even", "yet", "back", "keep",
    "keeps", "kept", "why", "what", "how", "when", "where", "which", "who", "whom", "whose",
    "there", "here", "ever", "never", "always", "sometimes", "last", "next", "first",
    "take", "put", "give", "happen", "happens", "happened", "work", "works", "working",
    "seem", "seems", "instead", "write", "explain", "suggest", "summarize", "summarise",
    "translate", "convert", "recommend", "draft", "create", "ahead", "continue", "proceed",
];

/// Languages whose stopwords are dropped: English, and those people most often mix
/// into prompts about English-language code.
const STOPWORD_LANGUAGES: &[&str] = &["en", "es", "de", "fr", "pt", "it", "nl"];

/// Words too common in prompts and notes to tell nodes apart: the NLTK stopword lists
/// of [`STOPWORD_LANGUAGES`] and the [`REQUEST_WORDS`].
static STOPWORDS: LazyLock<FxHashSet<&'static str>> = LazyLock::new(|| {
    let mut words: FxHashSet<&'static str> = REQUEST_WORDS.iter().copied().collect();
    for language in STOPWORD_LANGUAGES {
        if let Some(list) = stop_words::lookup(language) {
            words.extend(list.iter().copied());
        }
    }
    words
});

static STEMMER: LazyLock<rust_stemmers::Stemmer> =
    LazyLock::new(|| rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English));

fn hash_word(word: &str) -> Word {
    let mut hasher = FxHasher::default();
    hasher.write(word.as_bytes());
    hasher.finish()
}

/// The normal form of one lowercase word, or `None` when it carries no meaning: a
/// stopword, a single character, a number of one or two digits (list numbers, line
/// ranges). Plurals of numbers (`429s`) are the number.
fn normalise(word: &str) -> Option<String> {
    if word.chars().count() < 2 || STOPWORDS.contains(word) {
        return None;
    }
    let digits = word.bytes().filter(u8::is_ascii_digit).count();
    if digits > 0 {
        let number = word.strip_suffix('s').unwrap_or(word);
        if number.bytes().all(|b| b.is_ascii_digit()) {
            return (number.len() >= 3).then(|| number.to_string());
        }
        // Mixed letters and digits (`s3`, `es256`, `p99`) are names: kept as they are.
        return Some(word.to_string());
    }
    if word.bytes().all(|b| b.is_ascii_lowercase()) {
        Some(STEMMER.stem(word).into_owned())
    } else {
        Some(word.to_string())
    }
}

/// Calls `emit` with every normalised word of `text`, in order, repeats included, and
/// whether the word was written as a technical name: a file name, letters with digits
/// (`S3`, `429`), an acronym (`JWT`) or camel case (`DevNonce`).
pub fn for_each_word(text: &str, mut emit: impl FnMut(&str, bool)) {
    let is_piece = |c: char| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '/');
    for piece in text.split(|c: char| !is_piece(c)).filter(|p| !p.is_empty()) {
        if let Some(file) = file_name(piece) {
            emit(&file, true);
        }
        for part in piece.split(|c: char| !c.is_alphanumeric()) {
            let parts = camel_parts(part);
            let camel = parts.len() > 1;
            for word in parts {
                let capitals = word.chars().filter(|c| c.is_uppercase()).count();
                let technical = camel || capitals >= 2 || word.chars().any(|c| c.is_ascii_digit());
                if let Some(word) = normalise(&word.to_lowercase()) {
                    emit(&word, technical);
                }
            }
        }
    }
}

/// The file name a path-like piece ends in (`crates/api/webhook.rs` → `webhook.rs`,
/// `middleware.ts` → itself), lowercased: a name, a dot, an extension of letters.
fn file_name(piece: &str) -> Option<String> {
    let name = piece.trim_end_matches(['.', '/']).rsplit('/').next()?;
    let (stem, extension) = name.rsplit_once('.')?;
    let plausible = !stem.is_empty()
        && stem.chars().any(char::is_alphabetic)
        && (1..=5).contains(&extension.len())
        && extension.chars().all(|c| c.is_ascii_alphanumeric())
        && extension.chars().any(|c| c.is_ascii_alphabetic());
    plausible.then(|| name.to_lowercase())
}

/// `PaymentIntents` → `Payment`, `Intents`; `HTTPServer` → `HTTP`, `Server`; words
/// without an inner lower-to-upper change (`JWT`, `ES256`, `samael`) stay whole.
fn camel_parts(word: &str) -> Vec<&str> {
    let chars: Vec<(usize, char)> = word.char_indices().collect();
    let mut parts = Vec::new();
    let mut start = 0;
    for i in 1..chars.len() {
        let (at, c) = chars[i];
        let prev = chars[i - 1].1;
        let next_lower = chars.get(i + 1).is_some_and(|(_, n)| n.is_lowercase());
        let boundary =
            c.is_uppercase() && (prev.is_lowercase() || (prev.is_uppercase() && next_lower));
        if boundary {
            parts.push(&word[start..at]);
            start = at;
        }
    }
    parts.push(&word[start..]);
    parts
}

/// The words of a node and their weights: the id's, the gist's, the touches', the
/// notes'.
fn index_node(id: &str, obj: &Object) -> WordIndex {
    let mut counts: FxHashMap<Word, f32> = FxHashMap::default();
    let mut length = 0.0;
    let mut add = |text: &str, w: f32| {
        for_each_word(text, |word, _| {
            *counts.entry(hash_word(word)).or_default() += w;
            length += w;
        });
    };
    let mut title: Vec<Word> = Vec::new();
    for_each_word(&id.replace('-', " "), |word, _| title.push(hash_word(word)));
    title.sort_unstable();
    title.dedup();
    add(&id.replace('-', " "), weight::ID);
    for (key, value) in obj {
        let w = match key.as_str() {
            field::GIST => weight::GIST,
            field::NOTES => weight::NOTES,
            field::TOUCHES => weight::TOUCHES,
            _ => continue,
        };
        match value {
            Value::String(s) => add(s, w),
            Value::Array(items) => {
                for item in items {
                    match item {
                        Value::String(s) => add(s, w),
                        other => add(&value_text(other), w),
                    }
                }
            }
            _ => {}
        }
    }
    let mut words: Vec<(Word, f32)> = counts.into_iter().collect();
    words.sort_unstable_by_key(|&(word, _)| word);
    WordIndex {
        words: words.into_boxed_slice(),
        length,
        title: title.into_boxed_slice(),
    }
}

/// The node's words, memoised on the node. The id is read here, not from the memo's
/// object: a node never changes its id (a new id is a new node).
fn node_words<'n>(id: &str, node: &'n Node) -> &'n WordIndex {
    node.cached_words(|obj| index_node(id, obj))
}

/// What a text asks for: its distinct words, in order.
#[derive(Debug, Clone, Default)]
pub struct Query {
    words: Vec<Word>,
    /// Each word as normalised, for traces and tests.
    texts: Vec<String>,
    /// Each word was written as a technical name somewhere in the text.
    technical: Vec<bool>,
    /// The text is written in another language than English (mixed with technical
    /// English words, as people do).
    foreign: bool,
}

impl Query {
    /// The words of `text`, each once.
    pub fn of(text: &str) -> Query {
        let mut query = Query::default();
        for_each_word(text, |word, technical| {
            let hash = hash_word(word);
            match query.words.iter().position(|&w| w == hash) {
                Some(at) => query.technical[at] |= technical,
                None => {
                    query.words.push(hash);
                    query.texts.push(word.to_string());
                    query.technical.push(technical);
                }
            }
        });
        // Letters of another script are another language however short the text; a
        // Latin-script language needs a confident detection, or English prompts with a
        // few odd words would count as foreign.
        let letters = text.chars().filter(|c| c.is_alphabetic()).count();
        let beyond_latin = text
            .chars()
            .filter(|&c| c.is_alphabetic() && c > '\u{24f}')
            .count();
        query.foreign = beyond_latin * 3 >= letters.max(1)
            || whatlang::detect(text)
                .is_some_and(|info| info.lang() != whatlang::Lang::Eng && info.confidence() >= 0.5);
        query
    }

    /// No word left to search on.
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// Each word as normalised (stemmed), for the decision log.
    pub fn texts(&self) -> &[String] {
        &self.texts
    }
}

/// Query words looked at at most: enough for any prompt's informative words, and
/// they fit a bit set.
const MAX_QUERY_WORDS: usize = 64;

/// One graph's node with its score.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Scored {
    /// Position of the graph in the slice searched.
    pub graph: usize,
    /// Position of the node in its graph.
    pub node: usize,
    pub score: f64,
    /// Bit `q` is set when the node holds query word `q`.
    pub held: u64,
}

/// Every node holding a query word, scored, best first (ties in graph, then node
/// order), and what each query word is worth in this memory.
pub(crate) struct Ranking {
    pub scored: Vec<Scored>,
    /// The IDF of each query word, 0 for words the memory does not hold.
    pub idf: Vec<f64>,
    /// The IDF of a word held by one node of the memory.
    pub rarest_idf: f64,
    /// The query is in another language ([`Query::foreign`]).
    pub foreign: bool,
}

impl Ranking {
    /// Whether holding the query words in `held` is evidence that a node is what the
    /// prompt is about ([`gate`]).
    pub fn is_evidence(&self, held: u64) -> bool {
        let unit = self.rarest_idf;
        if unit <= 0.0 {
            return false;
        }
        let evidence = self.weight_of(held) / unit;
        let unknown = if self.foreign {
            gate::FOREIGN_UNKNOWN
        } else {
            1.0
        };
        let prompt: f64 = self
            .idf
            .iter()
            .map(|&idf| if idf > 0.0 { idf / unit } else { unknown })
            .sum();
        let coverage = if held.count_ones() == 1 {
            gate::MIN_ONE_WORD_COVERAGE
        } else {
            gate::MIN_COVERAGE
        };
        (evidence >= gate::STRONG_EVIDENCE && evidence >= gate::MIN_STRONG_COVERAGE * prompt)
            || (evidence >= gate::MIN_EVIDENCE && evidence >= coverage * prompt)
    }

    /// The summed IDF of the query words in `held`.
    pub fn weight_of(&self, held: u64) -> f64 {
        self.idf
            .iter()
            .enumerate()
            .filter(|&(q, _)| held & (1 << q) != 0)
            .map(|(_, idf)| idf)
            .sum()
    }
}

/// Score every node of `graphs` (in the order given) against `query`: BM25 over the
/// weighted words of [`index_node`], IDF from every node searched.
pub(crate) fn rank(graphs: &[&Graph], query: &Query) -> Ranking {
    let words = &query.words[..query.words.len().min(MAX_QUERY_WORDS)];
    let n_docs: usize = graphs.iter().map(|g| g.nodes.len()).sum();
    let mut matches: Vec<(usize, usize, u64)> = Vec::new();
    let mut df = vec![0usize; words.len()];
    let mut total_length = 0.0f64;
    for (g, graph) in graphs.iter().enumerate() {
        for (i, (id, node)) in graph.nodes.iter().enumerate() {
            let index = node_words(id, node);
            total_length += f64::from(index.length);
            let mut held = 0u64;
            for (q, &word) in words.iter().enumerate() {
                if index.weight(word).is_some() {
                    held |= 1 << q;
                    df[q] += 1;
                }
            }
            if held != 0 {
                matches.push((g, i, held));
            }
        }
    }
    let n = n_docs as f64;
    let idf: Vec<f64> = df
        .iter()
        .map(|&d| {
            if d == 0 {
                0.0
            } else {
                (1.0 + (n - d as f64 + 0.5) / (d as f64 + 0.5)).ln()
            }
        })
        .collect();
    let average = if n_docs > 0 { total_length / n } else { 1.0 };
    let mut scored: Vec<Scored> = matches
        .into_iter()
        .filter_map(|(g, i, held)| {
            let (id, node) = graphs[g].nodes.get_index(i)?;
            let index = node_words(id, node);
            let norm = K1 * (1.0 - B + B * f64::from(index.length) / average.max(1.0));
            let mut score = 0.0;
            for (q, &word) in words.iter().enumerate() {
                if held & (1 << q) != 0 {
                    let tf = f64::from(index.weight(word).unwrap_or(0.0));
                    score += idf[q] * tf * (K1 + 1.0) / (tf + norm);
                }
            }
            Some(Scored {
                graph: g,
                node: i,
                score,
                held,
            })
        })
        .collect();
    // Stable: equal scores keep graph and node order.
    scored.sort_by(|a, b| b.score.total_cmp(&a.score));
    Ranking {
        scored,
        idf,
        rarest_idf: if n_docs > 0 {
            (1.0 + (n - 0.5) / 1.5).ln()
        } else {
            0.0
        },
        foreign: query.foreign,
    }
}

/// A neighbour reached from a hit along one edge.
#[derive(Debug, Clone)]
pub(crate) struct Reached {
    pub level: Level,
    pub id: String,
    pub edge: EdgeKey,
}

/// The nodes joined to `id` by an edge, in graph then edge order, each with the edge
/// (both directions; artifacts and self-loops left out).
pub(crate) fn neighbours(graphs: &[(Level, &Graph)], id: &str) -> Vec<Reached> {
    let mut out: Vec<Reached> = Vec::new();
    for (_, graph) in graphs {
        for key in graph.edges.keys() {
            let other = if key.from() == id {
                key.to()
            } else if key.to() == id {
                key.from()
            } else {
                continue;
            };
            if other == id || out.iter().any(|r| r.id == other) {
                continue;
            }
            if let Some((level, _)) = graphs.iter().find(|(_, g)| g.nodes.contains_key(other)) {
                out.push(Reached {
                    level: *level,
                    id: other.to_string(),
                    edge: key.clone(),
                });
            }
        }
    }
    out
}

/// Prompt recall's gates and limits. Weights are in units of the rarest word's IDF in
/// the memory searched (a word held by one node), so they mean the same in a memory
/// of 200 nodes as in one of 10,000.
pub mod gate {
    /// Nodes injected at most as hits: the labels of a good answer are one to three.
    pub const MAX_HITS: usize = 3;
    /// Neighbours pulled in at most by spreading activation.
    pub const MAX_NEIGHBOURS: usize = 1;
    /// The best match must hold this share of the prompt's weight, where a word the
    /// memory does not hold weighs as much as the rarest word it holds: a prompt
    /// about something else is mostly words the memory has never seen.
    pub const MIN_COVERAGE: f64 = 0.45;
    /// A match on a single word must hold more than half the prompt: "a Kalman
    /// filter" is not about the memory's median filter, though `filter` names it.
    pub const MIN_ONE_WORD_COVERAGE: f64 = 0.55;
    /// And at least this much weight: half a rare word.
    pub const MIN_EVIDENCE: f64 = 0.5;
    /// A best match holding this much weight is evidence whatever the coverage: a
    /// long prompt in the memory's words names much else besides.
    pub const STRONG_EVIDENCE: f64 = 1.75;
    /// Even then, the prompt must not be mostly about something else: "a SQL query for
    /// the second highest salary in an employees table" shares three words with a
    /// database-heavy memory and is still not about it.
    pub const MIN_STRONG_COVERAGE: f64 = 0.3;
    /// What a word the memory lacks weighs when the prompt is in another language:
    /// the memory is in English, so such words are the language, not the topic.
    pub const FOREIGN_UNKNOWN: f64 = 0.25;
    /// A prompt about two or three things ("the JWKS cache and the Stripe retries")
    /// has no single node holding most of it. The best nodes up to this many
    /// together are weighed as evidence, each one that clearly names a topic of its
    /// own: [`TOPIC_MIN_WORDS`] prompt words worth [`TOPIC_MIN_EVIDENCE`] rare words,
    /// scoring [`TOPIC_CLOSE_TO_BEST`] of the best.
    pub const TOPIC_NODES: usize = 3;
    /// See [`TOPIC_NODES`].
    pub const TOPIC_MIN_WORDS: u32 = 2;
    /// See [`TOPIC_NODES`].
    pub const TOPIC_MIN_EVIDENCE: f64 = 1.5;
    /// See [`TOPIC_NODES`].
    pub const TOPIC_CLOSE_TO_BEST: f64 = 0.3;
    /// Further hits must score this share of the best one.
    pub const CLOSE_TO_BEST: f64 = 0.7;
    /// A neighbour of a hit must reach this share of the best hit's score, its own
    /// and the spread from that hit together, and hold a prompt word the hits do not.
    pub const NEIGHBOUR_CLOSE_TO_BEST: f64 = 0.6;
    /// The share of a hit's score a neighbour receives along an edge.
    pub const SPREAD: f64 = 0.5;
}

/// Whether the prompt is about what the memory holds: the best match is evidence of
/// it ([`Ranking::is_evidence`]), or the best few together are, each naming a topic
/// of the prompt clearly ([`gate::TOPIC_NODES`]).
fn is_about_the_memory(ranking: &Ranking, best: &Scored) -> bool {
    if ranking.is_evidence(best.held) {
        return true;
    }
    let unit = ranking.rarest_idf;
    if unit <= 0.0 {
        return false;
    }
    let topics = ranking
        .scored
        .iter()
        .take(gate::TOPIC_NODES)
        .filter(|s| {
            s.score >= gate::TOPIC_CLOSE_TO_BEST * best.score
                && s.held.count_ones() >= gate::TOPIC_MIN_WORDS
                && ranking.weight_of(s.held) / unit >= gate::TOPIC_MIN_EVIDENCE
        })
        .fold(0u64, |words, s| words | s.held);
    topics.count_ones() > best.held.count_ones() && ranking.is_evidence(topics)
}

/// A best match on one word only is a match when that word names the node (it is in
/// its id) or was written as a technical name: one ordinary word the prompt shares
/// with a gist ("derivative" and "derived") says nothing of what the prompt is about.
fn names_its_topic(graphs: &[(Level, &Graph)], query: &Query, best: &Scored) -> bool {
    if best.held.count_ones() != 1 {
        return true;
    }
    let q = best.held.trailing_zeros() as usize;
    if query.technical.get(q).copied().unwrap_or(false) {
        return true;
    }
    graphs[best.graph]
        .1
        .nodes
        .get_index(best.node)
        .is_some_and(|(id, node)| node_words(id, node).in_title(query.words[q]))
}

/// What prompt recall injects: hits, then neighbours with the edges that reach them.
#[derive(Debug, Clone, Default)]
pub struct Recalled {
    /// `(level, id, gist)` of each hit, best first.
    pub hits: Vec<(Level, String, String)>,
    /// `(level, id, gist)` of each neighbour pulled in.
    pub neighbours: Vec<(Level, String, String)>,
    /// The edge that reached each neighbour.
    pub edges: Vec<EdgeKey>,
    /// The memory holds some of the prompt's words, whether or not they were evidence
    /// enough to inject.
    pub on_topic: bool,
    /// The best-scored nodes, injected or not, with their scores: why recall spoke or
    /// what came close (the decision log).
    pub weighed: Vec<(Level, String, f64)>,
}

/// Nodes the decision log lists as weighed.
const WEIGHED_LOGGED: usize = 5;

/// The nodes worth putting in front of the model for `query`, or nothing: the best
/// match must hold most of the prompt's informative weight and score as one rare word
/// does; further hits must come close to it; a neighbour of the best hit joins when
/// the prompt names it too and the spread from the hit lifts it as close.
pub fn recall(graphs: &[(Level, &Graph)], query: &Query) -> Recalled {
    let plain: Vec<&Graph> = graphs.iter().map(|(_, g)| *g).collect();
    let ranking = rank(&plain, query);
    let mut recalled = Recalled {
        on_topic: !ranking.scored.is_empty(),
        ..Recalled::default()
    };
    recalled.weighed = ranking
        .scored
        .iter()
        .take(WEIGHED_LOGGED)
        .filter_map(|s| {
            let (level, graph) = graphs[s.graph];
            let (id, _) = graph.nodes.get_index(s.node)?;
            Some((level, id.clone(), s.score))
        })
        .collect();
    let Some(best) = ranking.scored.first().copied() else {
        return recalled;
    };
    if !is_about_the_memory(&ranking, &best) || !names_its_topic(graphs, query, &best) {
        return recalled;
    }
    let entry = |s: &Scored| {
        let (level, graph) = graphs[s.graph];
        graph
            .nodes
            .get_index(s.node)
            .map(|(id, node)| (level, id.clone(), node.gist().to_string()))
    };
    let close = gate::CLOSE_TO_BEST * best.score;
    let mut covered = 0u64;
    for s in ranking.scored.iter().take_while(|s| s.score >= close) {
        if recalled.hits.len() == gate::MAX_HITS {
            break;
        }
        if let Some(hit) = entry(s).filter(|(_, id, gist)| {
            !gist.is_empty() && !recalled.hits.iter().any(|(_, other, _)| other == id)
        }) {
            recalled.hits.push(hit);
            covered |= s.held;
        }
    }
    if recalled.hits.is_empty() {
        return recalled;
    }
    let lexical: FxHashMap<&str, &Scored> = ranking
        .scored
        .iter()
        .filter_map(|s| {
            let (id, _) = graphs[s.graph].1.nodes.get_index(s.node)?;
            Some((id.as_str(), s))
        })
        .collect();
    // Spreading activation: a neighbour of a hit joins when the prompt names it too,
    // for words the hits do not hold, and the spread lifts it close to the best.
    let mut candidates: Vec<(f64, Reached)> = Vec::new();
    for (_, hit_id, _) in &recalled.hits {
        let hit_score = lexical.get(hit_id.as_str()).map_or(0.0, |s| s.score);
        for r in neighbours(graphs, hit_id) {
            if recalled.hits.iter().any(|(_, id, _)| *id == r.id)
                || candidates.iter().any(|(_, c)| c.id == r.id)
            {
                continue;
            }
            let Some(own) = lexical.get(r.id.as_str()) else {
                continue;
            };
            let lifted = own.score + gate::SPREAD * hit_score;
            if own.held & !covered != 0 && lifted >= gate::NEIGHBOUR_CLOSE_TO_BEST * best.score {
                candidates.push((lifted, r));
            }
        }
    }
    // Stable: among equals, the neighbour of the better hit first.
    candidates.sort_by(|a, b| b.0.total_cmp(&a.0));
    for (_, reached) in candidates.into_iter().take(gate::MAX_NEIGHBOURS) {
        let gist = graphs
            .iter()
            .find_map(|(_, g)| g.nodes.get(reached.id.as_str()))
            .map(|n| n.gist().to_string())
            .unwrap_or_default();
        if gist.is_empty() {
            continue;
        }
        recalled.neighbours.push((reached.level, reached.id, gist));
        recalled.edges.push(reached.edge);
    }
    recalled
}

/// How much of a node's lesson another node of its graph repeats: the share of the
/// words of its id and gist (each weighed by its rarity in the graph, the id's words
/// twice) that the other holds anywhere, and how many words they share.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Overlap {
    /// Position of the other node in the graph.
    pub node: usize,
    /// Share of the node's weight the other holds, 0 to 1.
    pub share: f64,
    /// Distinct words they share.
    pub shared: usize,
}

/// The node of `graph` (other than the one at `own`) that repeats most of the node at
/// `own`, and how much; `None` when no other node shares a word with it.
pub(crate) fn closest(graph: &Graph, own: usize) -> Option<Overlap> {
    let (id, node) = graph.nodes.get_index(own)?;
    // The lesson is the id and the gist: notes and touches add detail that an older
    // node of the same lesson need not hold.
    let mut title: Vec<Word> = Vec::new();
    for_each_word(&id.replace('-', " "), |w, _| title.push(hash_word(w)));
    let mut words = title.clone();
    for_each_word(node.gist(), |w, _| words.push(hash_word(w)));
    words.sort_unstable();
    words.dedup();
    if words.is_empty() {
        return None;
    }
    let n = graph.nodes.len() as f64;
    let mut df = vec![0usize; words.len()];
    let mut holders: Vec<(usize, Vec<usize>)> = Vec::new();
    for (i, (other_id, other)) in graph.nodes.iter().enumerate() {
        let theirs = node_words(other_id, other);
        let held: Vec<usize> = (0..words.len())
            .filter(|&q| theirs.weight(words[q]).is_some())
            .collect();
        for &q in &held {
            df[q] += 1;
        }
        if i != own && !held.is_empty() {
            holders.push((i, held));
        }
    }
    // A word's weight: its IDF in this graph, twice over when it names the node.
    let weight: Vec<f64> = words
        .iter()
        .zip(&df)
        .map(|(&w, &d)| {
            let idf = (1.0 + (n - d as f64 + 0.5) / (d as f64 + 0.5)).ln();
            if title.contains(&w) { 2.0 * idf } else { idf }
        })
        .collect();
    let total: f64 = weight.iter().sum();
    if total <= 0.0 {
        return None;
    }
    holders
        .into_iter()
        .map(|(i, held)| Overlap {
            node: i,
            share: held.iter().map(|&q| weight[q]).sum::<f64>() / total,
            shared: held.len(),
        })
        .max_by(|a, b| a.share.total_cmp(&b.share).then(b.node.cmp(&a.node)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        for_each_word(text, |w, _| out.push(w.to_string()));
        out
    }

    #[test]
    fn short_technical_words_count() {
        assert_eq!(words("JWT TTL of S3 and 429s"), ["jwt", "ttl", "s3", "429"]);
        assert_eq!(words("p99 ES256 on port 20"), ["p99", "es256", "port"]);
    }

    #[test]
    fn word_forms_meet() {
        assert_eq!(words("retries"), words("retried"));
        assert_eq!(words("PaymentIntents"), words("payment intent"));
        assert_eq!(words("sla_check"), ["sla", "check"]);
    }

    #[test]
    fn paths_give_their_file_name_and_words() {
        assert_eq!(
            words("crates/api/src/billing/webhook.rs:20-75"),
            ["webhook.rs", "crate", "api", "src", "bill", "webhook", "rs"]
        );
        assert_eq!(
            words("see web/middleware.ts."),
            ["middleware.ts", "web", "middlewar", "ts"]
        );
        assert!(words("v2.3").iter().all(|w| w != "v2.3"));
    }

    #[test]
    fn prompts_in_other_languages_keep_their_technical_words() {
        assert_eq!(
            words("warum bekommen wir 429 von Stripe beim nächtlichen Sync?"),
            [
                "warum",
                "bekommen",
                "429",
                "stripe",
                "beim",
                "nächtlichen",
                "sync"
            ]
        );
        assert!(
            words("¿por qué el webhook de Stripe devuelve 400?").contains(&"webhook".to_string())
        );
    }

    #[test]
    fn a_query_knows_its_technical_words_and_its_language() {
        let query = Query::of("rotate the JWKS key, S3 bucket and DevNonce");
        assert_eq!(
            query.texts,
            ["rotat", "jwks", "key", "s3", "bucket", "dev", "nonc"]
        );
        assert_eq!(
            query.technical,
            [false, true, false, true, false, true, true]
        );
        assert!(!query.foreign);
        assert!(Query::of("warum bekommen wir 429 von Stripe beim nächtlichen Sync?").foreign);
        assert!(Query::of("JWT の有効期限と JWKS のキャッシュ時間は?").foreign);
        assert!(!Query::of("is 2028 a leap year?").foreign);
    }

    /// A ranking of a prompt whose known words have these IDFs (in units of the rarest
    /// word's) and `unknown` words the memory lacks.
    fn prompt_of(known: &[f64], unknown: usize, foreign: bool) -> Ranking {
        let mut idf: Vec<f64> = known.iter().map(|k| k * 5.0).collect();
        idf.extend(std::iter::repeat_n(0.0, unknown));
        Ranking {
            scored: Vec::new(),
            idf,
            rarest_idf: 5.0,
            foreign,
        }
    }

    #[test]
    fn evidence_is_weighed_against_the_whole_prompt() {
        // One rare word of a two-word prompt is only half of it ("a Kalman filter");
        // of a one-word prompt, all of it; two words of a three-word prompt, most.
        assert!(!prompt_of(&[1.0], 1, false).is_evidence(0b1));
        assert!(prompt_of(&[1.0], 0, false).is_evidence(0b1));
        assert!(prompt_of(&[1.0, 1.0], 1, false).is_evidence(0b11));
        // The same word among three words the memory never saw: a prompt about else.
        assert!(!prompt_of(&[1.0], 3, false).is_evidence(0b1));
        // ... unless the prompt is in another language, whose words those are.
        assert!(prompt_of(&[1.0], 3, true).is_evidence(0b1));
        // Three ordinary words held are strong evidence in a prompt of six words,
        // but not in one of twelve.
        assert!(prompt_of(&[0.6, 0.6, 0.6], 3, false).is_evidence(0b111));
        assert!(!prompt_of(&[0.6, 0.6, 0.6], 9, false).is_evidence(0b111));
        // A prompt the memory holds nothing of is never evidence.
        assert!(!prompt_of(&[], 2, false).is_evidence(0));
    }

    #[test]
    fn camel_case_splits_where_a_reader_would() {
        assert_eq!(camel_parts("HTTPServer"), ["HTTP", "Server"]);
        assert_eq!(camel_parts("JWT"), ["JWT"]);
        assert_eq!(camel_parts("samael"), ["samael"]);
        assert_eq!(camel_parts("BroadcastChannel"), ["Broadcast", "Channel"]);
    }
}

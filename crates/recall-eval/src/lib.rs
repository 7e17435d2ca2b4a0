//! The recall evaluation of issue 21: every labelled prompt of tests/recall-eval/
//! through prompt recall, every labelled query through `kg_search`, on each memory
//! under each policy, scored against the labels.
//!
//! The harness measures whatever kg-core does: it calls the same public functions the
//! server's hook endpoint and MCP tool call, and reads the ids back from the text they
//! return. Definitions of every number: tests/recall-eval/README.md, "Running the
//! evaluation".

pub mod data;
pub mod metrics;
pub mod report;
pub mod run;
pub mod world;

use anyhow::{Result, bail};
use kg_core::Policy;
use metrics::{ByKind, RecallStats, SearchStats, recall_by_kind, search_by_kind};
use run::{PromptRun, SearchRun, median_ms};
use serde::Serialize;
use std::collections::HashMap;
use std::path::PathBuf;
use world::{LoadStats, World};

/// What to evaluate.
#[derive(Debug, Clone)]
pub struct Options {
    /// The data folder (tests/recall-eval).
    pub data_dir: PathBuf,
    /// Memories by name; empty for all.
    pub memories: Vec<String>,
    /// Policies, in report order.
    pub policies: Vec<Policy>,
    /// Run one maintenance tick after loading (the default: a running server has).
    pub tick: bool,
    /// Only the first `n` prompts and queries of each kind (fast mode).
    pub limit: Option<usize>,
}

impl Options {
    /// Everything in `data_dir`, reference policy then ours, with the tick.
    pub fn new(data_dir: PathBuf) -> Options {
        Options {
            data_dir,
            memories: Vec::new(),
            policies: vec![Policy::Reference, Policy::Ours],
            tick: true,
            limit: None,
        }
    }
}

/// The policy's name as `KG_POLICY` spells it.
pub fn policy_name(policy: Policy) -> &'static str {
    match policy {
        Policy::Reference => "reference",
        Policy::Ours => "ours",
    }
}

/// The whole evaluation.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The data folder read.
    pub data_dir: String,
    /// The frozen clock.
    pub now_ts: f64,
    /// Whether a maintenance tick ran before each evaluation.
    pub tick: bool,
    /// Fast mode: prompts and queries per kind.
    pub limit: Option<usize>,
    /// One entry per memory, in name order.
    pub memories: Vec<MemoryReport>,
}

/// One memory under each policy.
#[derive(Debug, Clone, Serialize)]
pub struct MemoryReport {
    /// The memory's name.
    pub name: String,
    /// Its project slug.
    pub slug: String,
    /// Prompts evaluated.
    pub prompts: usize,
    /// Queries evaluated.
    pub searches: usize,
    /// One entry per policy, in the order asked for.
    pub policies: Vec<PolicyReport>,
}

/// One memory under one policy.
#[derive(Debug, Clone, Serialize)]
pub struct PolicyReport {
    /// `reference` or `ours`.
    pub policy: String,
    /// The project graph before and after the tick.
    pub load: LoadStats,
    /// Every score: reproducible, run after run.
    pub quality: Quality,
    /// Medians of the calls' wall time (vary by machine and run).
    pub latency: Latency,
    /// Per-prompt and per-query outcomes (left out of `--json` unless `--verbose`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runs: Option<Runs>,
}

/// The scores of one memory under one policy.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Quality {
    /// Each prompt in a fresh session past its full read: per kind, then `all`.
    pub after_full_read: Vec<ByKind<RecallStats>>,
    /// Each prompt as a session's first, before the full read: per kind, then `all`.
    pub first_prompt: Vec<ByKind<RecallStats>>,
    /// `kg_search`: per query kind, then `all`.
    pub search: Vec<ByKind<SearchStats>>,
}

impl Quality {
    /// Prompt stats of one kind (or `all`) after the full read.
    pub fn after(&self, kind: &str) -> Option<&RecallStats> {
        find(&self.after_full_read, kind)
    }

    /// Prompt stats of one kind (or `all`) for the first prompt.
    pub fn first(&self, kind: &str) -> Option<&RecallStats> {
        find(&self.first_prompt, kind)
    }

    /// Query stats of one kind (or `all`).
    pub fn searches(&self, kind: &str) -> Option<&SearchStats> {
        find(&self.search, kind)
    }
}

fn find<'a, T>(rows: &'a [ByKind<T>], kind: &str) -> Option<&'a T> {
    rows.iter().find(|r| r.kind == kind).map(|r| &r.stats)
}

/// Median wall time in milliseconds, in-process.
#[derive(Debug, Clone, Serialize)]
pub struct Latency {
    /// `prompt_reply` per prompt, after the full read (all prompts).
    pub prompt_recall_ms: Option<f64>,
    /// `kg_search` per query.
    pub kg_search_ms: Option<f64>,
}

/// What each prompt and query returned.
#[derive(Debug, Clone, Serialize)]
pub struct Runs {
    /// After the full read.
    pub after_full_read: Vec<PromptRun>,
    /// First prompt, before the full read.
    pub first_prompt: Vec<PromptRun>,
    /// `kg_search`.
    pub searches: Vec<SearchRun>,
}

/// The first `limit` items of each kind, in file order.
fn per_kind<T: Clone>(items: &[T], kind: impl Fn(&T) -> &str, limit: Option<usize>) -> Vec<T> {
    let Some(limit) = limit else {
        return items.to_vec();
    };
    let mut taken: HashMap<String, usize> = HashMap::new();
    items
        .iter()
        .filter(|item| {
            let count = taken.entry(kind(item).to_string()).or_insert(0);
            *count += 1;
            *count <= limit
        })
        .cloned()
        .collect()
}

/// Run the evaluation.
pub fn evaluate(options: &Options) -> Result<Report> {
    let data = data::load(&options.data_dir)?;
    for name in &options.memories {
        if !data.memories.iter().any(|m| &m.name == name) {
            let known: Vec<&str> = data.memories.iter().map(|m| m.name.as_str()).collect();
            bail!(
                "no memory named {name:?} (the data has {})",
                known.join(", ")
            );
        }
    }
    let mut memories = Vec::new();
    for memory in &data.memories {
        if !options.memories.is_empty() && !options.memories.contains(&memory.name) {
            continue;
        }
        let prompts = per_kind(&memory.prompts, |p| &p.kind, options.limit);
        let queries = per_kind(&memory.searches, |q| &q.kind, options.limit);
        let mut policies = Vec::new();
        for &policy in &options.policies {
            // A store per policy: each starts from the data as committed.
            let world = World::open(&data, memory, policy, options.tick)?;
            let now = data.now_ts;
            let after = run::run_prompts(&world, &prompts, true, now)?;
            let first = run::run_prompts(&world, &prompts, false, now)?;
            let searches = run::run_searches(&world, &queries, now)?;
            policies.push(PolicyReport {
                policy: policy_name(policy).to_string(),
                load: world.load.clone(),
                quality: Quality {
                    after_full_read: recall_by_kind(&after),
                    first_prompt: recall_by_kind(&first),
                    search: search_by_kind(&searches),
                },
                latency: Latency {
                    prompt_recall_ms: median_ms(after.iter().map(|r| r.micros)),
                    kg_search_ms: median_ms(searches.iter().map(|r| r.micros)),
                },
                runs: Some(Runs {
                    after_full_read: after,
                    first_prompt: first,
                    searches,
                }),
            });
        }
        memories.push(MemoryReport {
            name: memory.name.clone(),
            slug: memory.spec.slug.clone(),
            prompts: prompts.len(),
            searches: queries.len(),
            policies,
        });
    }
    Ok(Report {
        data_dir: data.dir.display().to_string(),
        now_ts: data.now_ts,
        tick: options.tick,
        limit: options.limit,
        memories,
    })
}

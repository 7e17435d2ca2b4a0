//! The recall evaluation (issues 21 and 37): every labelled prompt of tests/recall-eval/
//! through prompt recall under each protocol, every labelled query through `kg_search`,
//! on each memory under each policy, scored against the labels. Runs made by another
//! system (the reference 0.17 over HTTP) are read from a runs file and scored by the
//! same code.
//!
//! The harness measures whatever kg-core does: it calls the same public functions the
//! server's hook endpoint and MCP tools call, and reads the ids back from the text they
//! return. Definitions of every number: tests/recall-eval/README.md, "Running the
//! evaluation".

pub mod data;
pub mod metrics;
pub mod push;
pub mod report;
pub mod run;
pub mod world;

use anyhow::{Context, Result, bail};
use data::{Dataset, Memory};
use kg_core::Policy;
use metrics::{ByKind, RecallStats, SearchStats, recall_by_kind, search_by_kind};
use run::{PromptRun, Protocol, SearchRun, median_ms};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use world::{LoadStats, World};

/// What to evaluate.
#[derive(Debug, Clone)]
pub struct Options {
    /// The data folder (tests/recall-eval).
    pub data_dir: PathBuf,
    /// Memories by name; empty for all.
    pub memories: Vec<String>,
    /// Policies run in-process, in report order.
    pub policies: Vec<Policy>,
    /// Run one maintenance tick after loading (the default: a running server has).
    pub tick: bool,
    /// Only the first `n` prompts and queries of each kind (fast mode).
    pub limit: Option<usize>,
    /// Runs files of other systems to score beside the policies (`--runs`).
    pub runs_files: Vec<PathBuf>,
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
            runs_files: Vec::new(),
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
    /// Every memory's prompts and queries pooled, per system: what the targets are
    /// judged on.
    pub pooled: Vec<SystemTotals>,
    /// The cross-session push (ours), every memory's trials pooled: per prompt kind,
    /// then `all`. Empty when ours was not run.
    pub push: Vec<(String, push::PushStats)>,
}

/// One memory under each system.
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
    /// One entry per system: the policies in the order asked for, then each runs file.
    pub policies: Vec<PolicyReport>,
}

/// One memory under one system.
#[derive(Debug, Clone, Serialize)]
pub struct PolicyReport {
    /// `reference`, `ours`, or the system a runs file names (`kg-memory 0.17.0`).
    pub policy: String,
    /// `in-process`, or the runs file and how its runs were made.
    pub source: String,
    /// The project graph before and after the tick (in-process runs only).
    pub load: Option<LoadStats>,
    /// Every score: reproducible, run after run.
    pub quality: Quality,
    /// Medians of the calls' wall time (vary by machine and run).
    pub latency: Latency,
    /// Per-prompt and per-query outcomes (left out of `--json` unless `--verbose`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runs: Option<Runs>,
    /// The cross-session push's trials (ours, in-process only).
    #[serde(skip)]
    pub push: Vec<push::PushTrial>,
}

/// The scores of one memory (or of all, pooled) under one system. A protocol the system
/// was not run under has an `all` row with nothing in it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Quality {
    /// Each prompt in a fresh session shown nothing: per kind, then `all`.
    pub clean: Vec<ByKind<RecallStats>>,
    /// Each prompt in a fresh session past a real full read: per kind, then `all`.
    pub live: Vec<ByKind<RecallStats>>,
    /// Each prompt as a session's first, before any full read: per kind, then `all`.
    pub first_prompt: Vec<ByKind<RecallStats>>,
    /// `kg_search`: per query kind, then `all`.
    pub search: Vec<ByKind<SearchStats>>,
}

impl Quality {
    /// Score a set of runs.
    pub fn of(runs: &Runs) -> Quality {
        Quality {
            clean: recall_by_kind(&runs.clean),
            live: recall_by_kind(&runs.live),
            first_prompt: recall_by_kind(&runs.first_prompt),
            search: search_by_kind(&runs.searches),
        }
    }

    /// Prompt stats of one kind (or `all`) under a protocol.
    pub fn prompts(&self, protocol: Protocol, kind: &str) -> Option<&RecallStats> {
        let rows = match protocol {
            Protocol::Clean => &self.clean,
            Protocol::Live => &self.live,
            Protocol::First => &self.first_prompt,
        };
        find(rows, kind)
    }

    /// Query stats of one kind (or `all`).
    pub fn searches(&self, kind: &str) -> Option<&SearchStats> {
        find(&self.search, kind)
    }
}

fn find<'a, T>(rows: &'a [ByKind<T>], kind: &str) -> Option<&'a T> {
    rows.iter().find(|r| r.kind == kind).map(|r| &r.stats)
}

/// Median wall time in milliseconds.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Latency {
    /// One prompt's recall, clean protocol.
    #[serde(default)]
    pub prompt_recall_ms: Option<f64>,
    /// One prompt's recall, live protocol.
    #[serde(default)]
    pub prompt_recall_live_ms: Option<f64>,
    /// One `kg_search` call.
    #[serde(default)]
    pub kg_search_ms: Option<f64>,
    /// What was timed: `in-process` (the function call alone), or how a runs file's
    /// system was called (over HTTP, say), which is not comparable.
    #[serde(default)]
    pub measured: String,
}

impl Latency {
    fn of(runs: &Runs, measured: &str) -> Latency {
        let median = |v: &[PromptRun]| median_ms(v.iter().map(|r| r.micros));
        Latency {
            prompt_recall_ms: median(&runs.clean),
            prompt_recall_live_ms: median(&runs.live),
            kg_search_ms: median_ms(runs.searches.iter().map(|r| r.micros)),
            measured: measured.to_string(),
        }
    }
}

/// What each prompt and query returned: the harness's run shape, also read from the
/// runs files of other systems.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Runs {
    /// Clean protocol.
    #[serde(default)]
    pub clean: Vec<PromptRun>,
    /// Live protocol.
    #[serde(default)]
    pub live: Vec<PromptRun>,
    /// First prompt, before any full read.
    #[serde(default)]
    pub first_prompt: Vec<PromptRun>,
    /// `kg_search`.
    #[serde(default)]
    pub searches: Vec<SearchRun>,
}

impl Runs {
    fn prompts(&self, protocol: Protocol) -> &[PromptRun] {
        match protocol {
            Protocol::Clean => &self.clean,
            Protocol::Live => &self.live,
            Protocol::First => &self.first_prompt,
        }
    }

    fn prompts_mut(&mut self, protocol: Protocol) -> &mut Vec<PromptRun> {
        match protocol {
            Protocol::Clean => &mut self.clean,
            Protocol::Live => &mut self.live,
            Protocol::First => &mut self.first_prompt,
        }
    }

    fn extend(&mut self, other: &Runs) {
        self.clean.extend(other.clean.iter().cloned());
        self.live.extend(other.live.iter().cloned());
        self.first_prompt.extend(other.first_prompt.iter().cloned());
        self.searches.extend(other.searches.iter().cloned());
    }
}

/// A runs file: per memory, what a system answered to each prompt and query. `make eval
/// -- --write-runs FILE` writes one for a policy; tests/recall-eval/run_reference_017.py
/// writes one for the reference 0.17.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunsFile {
    /// The system's name, shown as a column of the report.
    pub system: String,
    /// How the runs were made (one line, shown in the report).
    #[serde(default)]
    pub how: String,
    /// One entry per memory run.
    pub memories: Vec<MemoryRuns>,
}

/// One memory's runs in a runs file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MemoryRuns {
    /// The manifest's name of the memory.
    pub memory: String,
    /// The outcomes.
    pub runs: Runs,
    /// Medians as the system was timed (optional).
    #[serde(default)]
    pub latency: Option<Latency>,
}

/// Every memory pooled, for one system.
#[derive(Debug, Clone, Serialize)]
pub struct SystemTotals {
    /// The system.
    pub policy: String,
    /// The memories it has runs for.
    pub memories: Vec<String>,
    /// The scores over all of them.
    pub quality: Quality,
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

/// Run one memory in-process under `policy`, every protocol and the queries.
fn run_policy(
    data: &Dataset,
    memory: &Memory,
    policy: Policy,
    options: &Options,
) -> Result<PolicyReport> {
    let prompts = per_kind(&memory.prompts, |p| &p.kind, options.limit);
    let queries = per_kind(&memory.searches, |q| &q.kind, options.limit);
    // A store per policy: each starts from the data as committed.
    let world = World::open(data, memory, policy, options.tick)?;
    let now = data.now_ts;
    let mut runs = Runs::default();
    for protocol in Protocol::ALL {
        *runs.prompts_mut(protocol) = run::run_prompts(&world, &prompts, protocol, now)?;
    }
    runs.searches = run::run_searches(&world, &queries, now)?;
    // Last: its writes change the graph the runs above read.
    let push = match policy {
        Policy::Ours => push::run_push(&world, &prompts, now)?,
        Policy::Reference => Vec::new(),
    };
    Ok(PolicyReport {
        push,
        policy: policy_name(policy).to_string(),
        source: "in-process".to_string(),
        load: Some(world.load.clone()),
        quality: Quality::of(&runs),
        latency: Latency::of(&runs, "in-process"),
        runs: Some(runs),
    })
}

/// Read a runs file.
pub fn read_runs_file(path: &Path) -> Result<RunsFile> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the runs file {}", path.display()))?;
    serde_json::from_str(&text)
        .with_context(|| format!("{} is not a runs file (see --write-runs)", path.display()))
}

/// Check a system's runs of one memory against its labels and score them. Kinds, texts
/// and labels come from the data; the file must answer every selected prompt of each
/// protocol it has, once, and nothing else.
fn score_runs(
    memory: &Memory,
    system: &str,
    source: &str,
    given: &MemoryRuns,
    limit: Option<usize>,
) -> Result<PolicyReport> {
    let prompts = per_kind(&memory.prompts, |p| &p.kind, limit);
    let queries = per_kind(&memory.searches, |q| &q.kind, limit);
    let what = |part: &str| format!("{system}, {}, {part}", memory.name);
    let mut runs = Runs::default();
    for protocol in Protocol::ALL {
        let file_runs = given.runs.prompts(protocol);
        if file_runs.is_empty() {
            continue;
        }
        let mut by_id: HashMap<String, PromptRun> = HashMap::new();
        for mut run in file_runs.iter().cloned() {
            run.read_raw_reply()
                .with_context(|| format!("{}: prompt {}", what(protocol.name()), run.id))?;
            run.reply = None;
            if run.said.injected() == run.hits.is_empty() {
                bail!(
                    "{}: prompt {} says {:?} with {} hit(s): a recall has hits, nothing else has",
                    what(protocol.name()),
                    run.id,
                    run.said,
                    run.hits.len()
                );
            }
            let id = run.id.clone();
            if by_id.insert(id.clone(), run).is_some() {
                bail!("{}: prompt {id} appears twice", what(protocol.name()));
            }
        }
        let mut ordered = Vec::with_capacity(prompts.len());
        for p in &prompts {
            let Some(mut run) = by_id.remove(&p.id) else {
                bail!(
                    "{}: no outcome for prompt {} (a runs file made before the prompt was \
                     added? run the system again, see tests/recall-eval/README.md)",
                    what(protocol.name()),
                    p.id
                );
            };
            run.kind = p.kind.clone();
            run.prompt = p.prompt.clone();
            run.relevant = p.relevant.clone();
            ordered.push(run);
        }
        if limit.is_none()
            && let Some(id) = by_id.keys().min()
        {
            bail!("{}: prompt {id} is not in the data", what(protocol.name()));
        }
        *runs.prompts_mut(protocol) = ordered;
    }
    if !given.runs.searches.is_empty() {
        let mut by_id: HashMap<&str, &SearchRun> = HashMap::new();
        for run in &given.runs.searches {
            if by_id.insert(run.id.as_str(), run).is_some() {
                bail!("{}: query {} appears twice", what("kg_search"), run.id);
            }
        }
        for q in &queries {
            let Some(run) = by_id.remove(q.id.as_str()) else {
                bail!("{}: no outcome for query {}", what("kg_search"), q.id);
            };
            let ranked = match &run.text {
                Some(text) => run::ranked_ids(text),
                None => run.ranked.clone(),
            };
            runs.searches.push(SearchRun {
                id: q.id.clone(),
                kind: q.kind.clone(),
                query: q.query.clone(),
                relevant: q.relevant.clone(),
                ranked,
                micros: run.micros,
                text: None,
            });
        }
        if limit.is_none()
            && let Some(id) = by_id.keys().min()
        {
            bail!("{}: query {id} is not in the data", what("kg_search"));
        }
    }
    let latency = given.latency.clone().unwrap_or_default();
    Ok(PolicyReport {
        policy: system.to_string(),
        source: source.to_string(),
        load: None,
        quality: Quality::of(&runs),
        latency,
        runs: Some(runs),
        push: Vec::new(),
    })
}

/// A runs file of one policy's in-process runs, in the shape `--runs` reads.
pub fn runs_file_of(report: &Report, policy: &str) -> RunsFile {
    RunsFile {
        system: policy.to_string(),
        how: format!(
            "recall-eval in-process, KG_POLICY={policy}, clock frozen at {}",
            report.now_ts
        ),
        memories: report
            .memories
            .iter()
            .filter_map(|m| {
                let p = m.policies.iter().find(|p| p.policy == policy)?;
                Some(MemoryRuns {
                    memory: m.name.clone(),
                    runs: p.runs.clone()?,
                    latency: Some(p.latency.clone()),
                })
            })
            .collect(),
    }
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
    let files: Vec<(PathBuf, RunsFile)> = options
        .runs_files
        .iter()
        .map(|path| Ok((path.clone(), read_runs_file(path)?)))
        .collect::<Result<_>>()?;
    for (path, file) in &files {
        for given in &file.memories {
            if !data.memories.iter().any(|m| m.name == given.memory) {
                bail!(
                    "{}: no memory named {:?} in the data",
                    path.display(),
                    given.memory
                );
            }
        }
    }
    let mut memories = Vec::new();
    for memory in &data.memories {
        if !options.memories.is_empty() && !options.memories.contains(&memory.name) {
            continue;
        }
        let mut policies = Vec::new();
        for &policy in &options.policies {
            policies.push(run_policy(&data, memory, policy, options)?);
        }
        for (path, file) in &files {
            for given in file.memories.iter().filter(|g| g.memory == memory.name) {
                let source = if file.how.is_empty() {
                    format!("runs file {}", path.display())
                } else {
                    format!("runs file {} ({})", path.display(), file.how)
                };
                policies.push(score_runs(
                    memory,
                    &file.system,
                    &source,
                    given,
                    options.limit,
                )?);
            }
        }
        memories.push(MemoryReport {
            name: memory.name.clone(),
            slug: memory.spec.slug.clone(),
            prompts: per_kind(&memory.prompts, |p| &p.kind, options.limit).len(),
            searches: per_kind(&memory.searches, |q| &q.kind, options.limit).len(),
            policies,
        });
    }
    let pooled = pool(&memories);
    let trials: Vec<push::PushTrial> = memories
        .iter()
        .flat_map(|m| m.policies.iter().flat_map(|p| p.push.iter().cloned()))
        .collect();
    let kinds =
        metrics::kinds_in_order(trials.iter().map(|t| t.kind.as_str()), metrics::KIND_ORDER);
    let push = if trials.is_empty() {
        Vec::new()
    } else {
        push::push_by_kind(&trials, &kinds)
    };
    Ok(Report {
        push,
        data_dir: data.dir.display().to_string(),
        now_ts: data.now_ts,
        tick: options.tick,
        limit: options.limit,
        memories,
        pooled,
    })
}

/// Every memory's runs pooled per system, systems in their first-seen order.
fn pool(memories: &[MemoryReport]) -> Vec<SystemTotals> {
    let mut order: Vec<String> = Vec::new();
    let mut pooled: HashMap<String, (Vec<String>, Runs)> = HashMap::new();
    for memory in memories {
        for p in &memory.policies {
            let Some(runs) = &p.runs else { continue };
            if !order.contains(&p.policy) {
                order.push(p.policy.clone());
            }
            let entry = pooled.entry(p.policy.clone()).or_default();
            entry.0.push(memory.name.clone());
            entry.1.extend(runs);
        }
    }
    order
        .into_iter()
        .filter_map(|system| {
            let (names, runs) = pooled.remove(&system)?;
            Some(SystemTotals {
                quality: Quality::of(&runs),
                policy: system,
                memories: names,
            })
        })
        .collect()
}

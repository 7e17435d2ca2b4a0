//! The labelled data of tests/recall-eval/: the manifest, the prompts and the
//! `kg_search` queries (the README there defines every field).

use anyhow::{Context, Result, bail};
use serde::Deserialize;
use std::collections::{BTreeMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The data folder of this repository (tests/recall-eval), found from this crate's
/// own folder so the binary and the tests run from any working directory.
pub fn default_data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/recall-eval")
}

#[derive(Debug, Deserialize)]
struct ManifestFile {
    now_ts: f64,
    home_placeholder: String,
    // BTreeMap: the memories are evaluated in name order, the same on every run.
    memories: BTreeMap<String, MemorySpec>,
}

/// One memory as the manifest describes it (paths relative to the data folder).
#[derive(Debug, Clone, Deserialize)]
pub struct MemorySpec {
    /// The storage root to copy: `user.json` and `projects/<slug>/graph.json`.
    pub storage_root: PathBuf,
    /// The project's storage folder name.
    pub slug: String,
    /// The project folder, `<HOME>/src/<slug>`.
    pub project_path: String,
    /// The labelled prompts (JSON lines).
    pub prompts: PathBuf,
    /// The labelled `kg_search` queries (JSON lines).
    pub searches: PathBuf,
}

/// A prompt as typed into Claude Code, with the ids that should come back.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Prompt {
    /// Unique within its file (`ld-047`).
    pub id: String,
    /// `on-topic`, `paraphrase`, `multi-hop`, `file-path`, `multi-topic`, `off-topic`,
    /// `short`, `mixed-language`.
    pub kind: String,
    /// The prompt text.
    pub prompt: String,
    /// Relevant node ids, most important first; empty when silence is right.
    pub relevant: Vec<String>,
}

/// A `kg_search` query with the ids it should rank first.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Query {
    /// Unique within its file (`lds-001`).
    pub id: String,
    /// `direct` or `paraphrase`.
    pub kind: String,
    /// The query as an agent would pass it.
    pub query: String,
    /// Relevant node ids, most important first (the first is the ideal top result).
    pub relevant: Vec<String>,
}

/// One memory with its labels, ready to load.
#[derive(Debug, Clone)]
pub struct Memory {
    /// The manifest's name (`loopdesk`).
    pub name: String,
    /// Where its files are.
    pub spec: MemorySpec,
    /// The storage root folder (absolute).
    pub storage_root: PathBuf,
    /// The labelled prompts, in file order.
    pub prompts: Vec<Prompt>,
    /// The labelled queries, in file order.
    pub searches: Vec<Query>,
}

/// Everything in the data folder.
#[derive(Debug, Clone)]
pub struct Dataset {
    /// The folder read.
    pub dir: PathBuf,
    /// The frozen "now" every timestamp of the memories is relative to.
    pub now_ts: f64,
    /// The text standing for the home folder in the graph files (`<HOME>`).
    pub home_placeholder: String,
    /// The memories, in name order.
    pub memories: Vec<Memory>,
}

/// Read the manifest and every prompt and query file it names.
pub fn load(dir: &Path) -> Result<Dataset> {
    let dir =
        &fs::canonicalize(dir).with_context(|| format!("no data folder at {}", dir.display()))?;
    let manifest_path = dir.join("manifest.json");
    let text = fs::read_to_string(&manifest_path)
        .with_context(|| format!("cannot read {}", manifest_path.display()))?;
    let manifest: ManifestFile = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a valid manifest", manifest_path.display()))?;
    let mut memories = Vec::new();
    for (name, spec) in manifest.memories {
        let prompts: Vec<Prompt> = read_jsonl(&dir.join(&spec.prompts))?;
        let searches: Vec<Query> = read_jsonl(&dir.join(&spec.searches))?;
        unique_ids(prompts.iter().map(|p| p.id.as_str()), &spec.prompts)?;
        unique_ids(searches.iter().map(|q| q.id.as_str()), &spec.searches)?;
        memories.push(Memory {
            storage_root: dir.join(&spec.storage_root),
            name,
            spec,
            prompts,
            searches,
        });
    }
    if memories.is_empty() {
        bail!("{} names no memory", manifest_path.display());
    }
    Ok(Dataset {
        dir: dir.to_path_buf(),
        now_ts: manifest.now_ts,
        home_placeholder: manifest.home_placeholder,
        memories,
    })
}

/// One JSON object a line; blank lines are allowed, anything else must parse.
fn read_jsonl<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Vec<T>> {
    let text =
        fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(i, line)| {
            serde_json::from_str(line)
                .with_context(|| format!("{}:{}: not a valid record", path.display(), i + 1))
        })
        .collect()
}

/// Per-prompt results are keyed by id, so a repeated id would merge two prompts.
fn unique_ids<'a>(ids: impl Iterator<Item = &'a str>, file: &Path) -> Result<()> {
    let mut seen = HashSet::new();
    for id in ids {
        if !seen.insert(id) {
            bail!("{}: id {id} appears twice", file.display());
        }
    }
    Ok(())
}

//! A memory loaded the way the server would hold it: a scratch copy of its storage
//! root, a scratch home with the project folder in it, the clock frozen at the
//! manifest's `now_ts`, and a [`Store`] opened with the policy under test.

use crate::data::{Dataset, Memory};
use anyhow::{Context, Result, bail};
use kg_core::{Policy, Store, StoreConfig, Tier, level_budget};
use serde::Serialize;
use std::fs;
use std::path::Path;
use std::sync::Arc;

/// What the project graph looked like before and after the maintenance tick.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoadStats {
    /// Project nodes in every tier.
    pub project_nodes: usize,
    /// User nodes in every tier.
    pub user_nodes: usize,
    /// Active project nodes as stored in the data.
    pub active_before: usize,
    /// Rendered characters of the active project level as stored (core.md §7.3).
    pub chars_before: usize,
    /// Active project nodes when the evaluation ran (after the tick, if one ran).
    pub active_after: usize,
    /// Rendered characters of the active project level when the evaluation ran.
    pub chars_after: usize,
    /// The level budget the tick compacts against (17,500).
    pub budget: usize,
    /// Whether one maintenance tick ran before the evaluation.
    pub ticked: bool,
}

/// A store over a scratch copy of one memory.
#[derive(Debug)]
pub struct World {
    /// The open store (its policy is the one under test).
    pub store: Store,
    /// The project folder sessions are registered for (the hook's `cwd`).
    pub project: String,
    /// The resolved project root.
    pub root: String,
    /// The project graph, loaded.
    pub slot: Arc<kg_core::GraphSlot>,
    /// The graph's state before and after the tick.
    pub load: LoadStats,
    /// The scratch folders; deleted when the world is dropped.
    _scratch: tempfile::TempDir,
}

impl World {
    /// Copy `memory` to a scratch storage root, substitute the home placeholder, open
    /// a store with `policy` at the frozen `now`, load the project graph and, when
    /// `tick`, run one maintenance tick (what a running server has done within its
    /// first `KG_SAVE_INTERVAL`, 30 s by default).
    pub fn open(data: &Dataset, memory: &Memory, policy: Policy, tick: bool) -> Result<World> {
        let now = data.now_ts;
        let scratch = tempfile::Builder::new()
            .prefix("recall-eval-")
            .tempdir()
            .context("cannot create a scratch folder")?;
        // Project paths must resolve inside home, and the store resolves symlinks
        // (/tmp is one on macOS): the placeholder becomes the resolved home, so the
        // graph's recorded project path equals the root the store resolves.
        let home_dir = scratch.path().join("home");
        fs::create_dir_all(&home_dir).context("cannot create the scratch home")?;
        let home = fs::canonicalize(&home_dir).context("cannot resolve the scratch home")?;
        let home_text = home
            .to_str()
            .context("the scratch home is not valid UTF-8")?
            .to_string();
        let project = memory
            .spec
            .project_path
            .replace(&data.home_placeholder, &home_text);
        fs::create_dir_all(&project)
            .with_context(|| format!("cannot create the project folder {project}"))?;
        let storage = scratch.path().join("storage");
        // Inside a JSON string the home must be escaped (a quote or backslash in a
        // temp path would otherwise break the file).
        let home_json = serde_json::to_string(&home_text).context("home as JSON")?;
        let home_json = &home_json[1..home_json.len() - 1];
        copy_tree(
            &memory.storage_root,
            &storage,
            &data.home_placeholder,
            home_json,
        )?;

        let mut config = StoreConfig::new(&storage, &home);
        config.policy = policy;
        let store = Store::open(config, now)
            .with_context(|| format!("cannot open the storage root of {}", memory.name))?;
        let root = store
            .resolve_root(&project)
            .with_context(|| format!("cannot resolve the project folder {project}"))?;
        let slot = store
            .project_slot(&root, now)
            .with_context(|| format!("cannot load the project graph of {}", memory.name))?;
        if slot.slug.as_deref() != Some(memory.spec.slug.as_str()) {
            bail!(
                "{}: the store filed the project under {:?}, not the data's slug {:?}; \
                 the copy's _meta.project_path does not match the resolved root {root}",
                memory.name,
                slot.slug,
                memory.spec.slug
            );
        }
        let file_nodes = count_file_nodes(
            &storage
                .join("projects")
                .join(&memory.spec.slug)
                .join("graph.json"),
        )?;
        let (project_nodes, active_before, chars_before) = level_state(&store, &slot);
        if project_nodes != file_nodes {
            bail!(
                "{}: the project graph loaded {project_nodes} of the file's {file_nodes} nodes",
                memory.name
            );
        }
        if tick {
            store.tick(now);
        }
        let (_, active_after, chars_after) = level_state(&store, &slot);
        let user_nodes = store.with_graph(store.user_slot(), |g| g.nodes.len());
        let budget = store.config().budgets.level.chars();
        Ok(World {
            store,
            project,
            root,
            slot,
            load: LoadStats {
                project_nodes,
                user_nodes,
                active_before,
                chars_before,
                active_after,
                chars_after,
                budget,
                ticked: tick,
            },
            _scratch: scratch,
        })
    }
}

/// Nodes, active nodes and rendered characters of a graph.
fn level_state(store: &Store, slot: &kg_core::GraphSlot) -> (usize, usize, usize) {
    store.with_graph(slot, |g| {
        (
            g.nodes.len(),
            g.ids_in_tier(Tier::Active).len(),
            level_budget(g, store.config().budgets.level).chars,
        )
    })
}

fn count_file_nodes(path: &Path) -> Result<usize> {
    let text =
        fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let value: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))?;
    value
        .get("nodes")
        .and_then(serde_json::Value::as_object)
        .map(serde_json::Map::len)
        .with_context(|| format!("{} has no \"nodes\" object", path.display()))
}

/// Copy a storage root, replacing `placeholder` by `home` in every JSON file.
fn copy_tree(from: &Path, to: &Path, placeholder: &str, home: &str) -> Result<()> {
    fs::create_dir_all(to).with_context(|| format!("cannot create {}", to.display()))?;
    let entries = fs::read_dir(from).with_context(|| format!("cannot list {}", from.display()))?;
    for entry in entries {
        let entry = entry.with_context(|| format!("cannot list {}", from.display()))?;
        let source = entry.path();
        let target = to.join(entry.file_name());
        let kind = entry
            .file_type()
            .with_context(|| format!("cannot stat {}", source.display()))?;
        if kind.is_dir() {
            copy_tree(&source, &target, placeholder, home)?;
        } else if source.extension().is_some_and(|e| e == "json") {
            let text = fs::read_to_string(&source)
                .with_context(|| format!("cannot read {}", source.display()))?;
            fs::write(&target, text.replace(placeholder, home))
                .with_context(|| format!("cannot write {}", target.display()))?;
        } else {
            fs::copy(&source, &target)
                .with_context(|| format!("cannot copy {}", source.display()))?;
        }
    }
    Ok(())
}

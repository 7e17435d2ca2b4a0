//! An import as one write: many new nodes and edges added to one graph, checked as a
//! whole before anything changes, applied under the graph's lock, followed by one
//! maintenance pass and saved once. A dry run applies the same code and rolls it back,
//! so what a preview says the maintenance pass will archive is what the import does
//! (unless the graph changes in between).
//!
//! An import never overwrites: a node or edge the graph already holds is kept as it
//! is, and the answer says which.

use super::writes::NodeEdit;
use super::*;

/// A node an import creates.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchNode {
    /// Its id (the identifier rules apply).
    pub id: String,
    /// Its gist, healed and limited as `kg_put_node` does.
    pub gist: String,
    /// Its notes (each limited as for `kg_put_node`).
    pub notes: Vec<String>,
}

/// An edge an import creates.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchEdge {
    /// The `from` end.
    pub from: String,
    /// The `to` end.
    pub to: String,
    /// The relation.
    pub rel: String,
}

/// What an import did to its graph or, for a dry run, would do.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BatchOutcome {
    /// Nodes created, in the batch's order.
    pub created: Vec<String>,
    /// Nodes of the batch the graph already held: kept as they are.
    pub kept: Vec<String>,
    /// Edges created.
    pub edges_created: usize,
    /// Edges of the batch the graph already held: left as they are.
    pub edges_kept: usize,
    /// What the one maintenance pass after the batch moved.
    pub rebalanced: TierMoves,
    /// Of the nodes that pass archived, those the graph held before the import.
    pub archived_existing: Vec<String>,
    /// The level's rendered size before the import, in characters.
    pub chars_before: usize,
    /// Its rendered size after it, and the level's budget.
    pub chars_after: usize,
    /// The level's budget, in characters.
    pub budget: usize,
    /// Active, archived and orphaned nodes after the import.
    pub counts: (usize, usize, usize),
}

/// A batch checked and healed, ready to apply.
struct Checked {
    nodes: Vec<NodeEdit>,
    edges: Vec<EdgeKey>,
}

/// Check every node and edge before anything changes: the first problem refuses the
/// whole batch, naming the entry.
/// Every node and edge checked as a tool write would be, credentials included; the
/// first refusal names its node or edge.
fn check(store: &Store, nodes: &[BatchNode], edges: &[BatchEdge]) -> Result<Checked, StoreError> {
    let mut checked = Checked {
        nodes: Vec::with_capacity(nodes.len()),
        edges: Vec::with_capacity(edges.len()),
    };
    let mut ids = HashSet::with_capacity(nodes.len());
    for node in nodes {
        let edit = store
            .checked_edit(&node.id, &node.gist, Some(node.notes.clone()), None)
            .map_err(|e| match e {
                StoreError::Credential {
                    field,
                    kind,
                    fingerprint,
                } => StoreError::Credential {
                    field: format!("node '{}': {field}", node.id),
                    kind,
                    fingerprint,
                },
                other => StoreError::Invalid(format!("node '{}': {other}", node.id)),
            })?;
        if !ids.insert(node.id.as_str()) {
            return Err(StoreError::Invalid(format!(
                "node '{}' is in the import twice; each node may be created once",
                node.id
            )));
        }
        checked.nodes.push(edit);
    }
    for edge in edges {
        let named = |e: String| {
            StoreError::Invalid(format!(
                "edge {} --{}--> {}: {e}",
                edge.from, edge.rel, edge.to
            ))
        };
        validate_ident(IdentKind::EdgeRef, &edge.from).map_err(named)?;
        validate_ident(IdentKind::EdgeRef, &edge.to).map_err(named)?;
        validate_ident(IdentKind::Rel, &edge.rel).map_err(named)?;
        checked
            .edges
            .push(EdgeKey::new(&edge.from, &edge.to, &edge.rel));
    }
    Ok(checked)
}

impl Store {
    /// Add `nodes`, then `edges`, to the graph of `target` as one write: all of them or,
    /// when any is refused or the save fails, none. Nodes and edges the graph already
    /// holds are kept as they are. One maintenance pass follows (the budget rules of
    /// any write), then one save. With `dry_run`, nothing changes and the answer says
    /// what would.
    pub fn import(
        &self,
        target: Target<'_>,
        nodes: &[BatchNode],
        edges: &[BatchEdge],
        dry_run: bool,
        now: f64,
    ) -> Result<BatchOutcome, StoreError> {
        let checked = check(self, nodes, edges)?;
        let slot = self.resolve_target(target, now)?;
        let mut state = slot.lock();
        let (dirty, stall_logged) = (state.dirty, state.stall_logged);
        let mut journal = Journal::default();
        let mut outcome = BatchOutcome {
            chars_before: crate::render::level_chars(&state.graph),
            ..BatchOutcome::default()
        };
        let mut created_nodes = Vec::new();
        let stamp = self.write_stamp(target.session, now);
        let g = &mut state.graph;
        for edit in checked.nodes {
            if g.nodes.contains_key(edit.id()) {
                outcome.kept.push(edit.id().to_string());
                continue;
            }
            let id = edit.id().to_string();
            let (_, snapshot) = edit.apply(g, &mut journal, target.session, &stamp, now);
            outcome.created.push(id);
            created_nodes.push(snapshot);
        }
        let mut created_edges = Vec::new();
        for key in checked.edges {
            if g.edges.contains_key(&key) {
                outcome.edges_kept += 1;
                continue;
            }
            journal.edge(g, &key);
            let snapshot = g.edge_entry(&key).as_object().clone();
            let vkey = edge_version_key(&key);
            journal.version(g, &vkey);
            g.bump_version(vkey, now, target.session);
            created_edges.push(snapshot);
        }
        outcome.edges_created = created_edges.len();
        outcome.rebalanced = self.maybe_compact(&slot, &mut state, now, Some(&mut journal));
        let created: HashSet<&str> = outcome.created.iter().map(String::as_str).collect();
        outcome.archived_existing = outcome
            .rebalanced
            .archived
            .iter()
            .filter(|id| !created.contains(id.as_str()))
            .cloned()
            .collect();
        let budget = crate::inspect::level_budget(&state.graph, self.config.budgets.level);
        (outcome.chars_after, outcome.budget) = (budget.chars, budget.budget);
        outcome.counts = tier_counts(&state.graph);
        if dry_run {
            journal.rollback(&mut state.graph);
            (state.dirty, state.stall_logged) = (dirty, stall_logged);
            return Ok(outcome);
        }
        if created_nodes.is_empty() && created_edges.is_empty() && outcome.rebalanced.is_empty() {
            return Ok(outcome);
        }
        self.commit(&slot, &mut state, journal, now)?;
        // Announced as the writes they are, so `kg_sync`, the graph view and its
        // activity see each imported node and edge.
        let record = |kind| self.record(slot.level, slot.project_root(), target.session, kind, now);
        for node in created_nodes {
            record(ChangeKind::NodeUpdated { node });
        }
        for edge in created_edges {
            record(ChangeKind::EdgeUpdated { edge });
        }
        self.record_moves(&slot, outcome.rebalanced.clone(), "after an import", now);
        Ok(outcome)
    }
}

//! The texts of the tool answers that are not a read of a whole level: a node read,
//! `kg_sync`, `kg_useful` and `kg_progress`.

use crate::model::{Object, value_text};
use crate::pyfmt::{JsonStyle, to_json};
use crate::results::{Likes, NodeRead, SyncItem, SyncReport};
use crate::wording;

/// The text of a single-node read block (core.md §7.10).
pub fn node_block(read: &NodeRead) -> String {
    let status = if read.was_archived {
        "promoted from archive"
    } else {
        "active"
    };
    let node = &read.node;
    let lock = if node.get(crate::model::field::LOCKED) == Some(&serde_json::Value::Bool(true)) {
        ", locked"
    } else {
        ""
    };
    let mut lines = vec![format!("▸ {} ({}, {status}{lock})", read.id, read.level)];
    let gist = node.get("gist").map(value_text).unwrap_or_default();
    lines.push(format!("  gist: {gist}"));
    let list = |key: &str| -> Vec<String> {
        match node.get(key) {
            Some(serde_json::Value::Array(items)) => items.iter().map(value_text).collect(),
            Some(serde_json::Value::String(s)) => vec![s.clone()],
            _ => Vec::new(),
        }
    };
    let notes = list("notes");
    if !notes.is_empty() {
        lines.push("  notes:".to_string());
        lines.extend(notes.iter().map(|n| format!("    - {n}")));
    }
    let touches = list("touches");
    if !touches.is_empty() {
        lines.push(format!("  touches: {}", touches.join(" · ")));
    }
    if !read.edges.is_empty() {
        lines.push("  edges:".to_string());
        for edge in &read.edges {
            lines.push(format!("    {}", edge_line(edge)));
        }
    }
    lines.join("\n")
}

/// `<from> --<rel>--> <to>` of a stored edge object.
pub fn edge_line(edge: &Object) -> String {
    let text = |k: &str| edge.get(k).map(value_text).unwrap_or_default();
    format!("{} --{}--> {}", text("from"), text("rel"), text("to"))
}

/// A missing id in a batch read.
pub fn node_not_found_block(id: &str) -> String {
    format!("▸ {id}: NOT FOUND{}", wording::NOT_FOUND_HINT)
}

/// The `kg_sync` report (core.md §3.7).
pub fn sync_text(report: &SyncReport) -> String {
    let mut text = sync_lists(report);
    if report.behind {
        text.push_str("\n\n");
        text.push_str(&crate::wording::sync_behind(crate::change::LOG_FLOOR));
    }
    text
}

fn sync_lists(report: &SyncReport) -> String {
    if report.user.is_empty() && report.project.is_empty() {
        return "No updates from other sessions".to_string();
    }
    let block = |name: &str, items: &[SyncItem]| -> String {
        let nodes = items
            .iter()
            .filter(|i| matches!(i, SyncItem::Node { .. } | SyncItem::Deleted(_)))
            .count();
        let mut lines = vec![format!(
            "{name}: {nodes} node changes, {} edge changes",
            items.len() - nodes
        )];
        for item in items {
            lines.push(match item {
                SyncItem::Node { id, archived, gist } => format!(
                    "  node {id}{}: {gist}",
                    if *archived { " [archived]" } else { "" }
                ),
                SyncItem::Edge(k) => format!("  edge {} --{}--> {}", k.from(), k.rel(), k.to()),
                SyncItem::Deleted(id) => format!("  node {id}: deleted"),
            });
        }
        lines.join("\n")
    };
    format!(
        "Updates from other sessions:\n\n{}\n{}",
        block("User", &report.user),
        block("Project", &report.project)
    )
}

/// The `kg_useful` answer (core.md §7.11).
pub fn likes_text(likes: &Likes) -> String {
    let mut lines = Vec::new();
    if !likes.accepted.is_empty() {
        lines.push(format!("Marked useful: {}", likes.accepted.join(", ")));
    }
    for (id, reason) in &likes.rejected {
        lines.push(format!("Skipped {id}: {reason}"));
    }
    lines.push(format!(
        "{} like(s) remaining this session.",
        likes.remaining
    ));
    lines.join("\n")
}

/// The `kg_progress` read answer.
pub fn progress_text(task_id: &str, state: Option<&serde_json::Value>) -> String {
    match state {
        Some(v) => format!(
            "Progress for '{task_id}':\n{}",
            to_json(v, JsonStyle::file(2))
        ),
        None => format!("No progress found for task '{task_id}'"),
    }
}

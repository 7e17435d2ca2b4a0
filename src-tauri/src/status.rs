//! What the tray shows: the worst graph's state, one line per graph, and which graphs
//! need tending — from the store's catalogue of graphs.

use kg_core::{CatalogueEntry, neediest_first};
use kg_core::{Debt, DebtLevel};

/// The tray badge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Badge {
    Healthy,
    DebtMed,
    DebtHigh,
    Error,
}

impl Badge {
    pub fn icon(self) -> &'static [u8] {
        match self {
            Badge::Healthy => include_bytes!("../../icons/tray-healthy.png"),
            Badge::DebtMed => include_bytes!("../../icons/tray-med.png"),
            Badge::DebtHigh => include_bytes!("../../icons/tray-high.png"),
            Badge::Error => include_bytes!("../../icons/tray-error.png"),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Badge::Healthy => "healthy",
            Badge::DebtMed => "DEBT MED",
            Badge::DebtHigh => "DEBT HIGH",
            Badge::Error => "server error",
        }
    }
}

/// One graph as the tray lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct GraphStatus {
    /// `user` or the project's storage folder.
    pub name: String,
    pub project_path: Option<String>,
    pub level: DebtLevel,
    pub score: f64,
    pub largest_factor: String,
    pub line: String,
}

/// Everything the tray shows.
#[derive(Debug, Clone, PartialEq)]
pub struct Status {
    pub badge: Badge,
    /// Neediest first.
    pub graphs: Vec<GraphStatus>,
    pub host_line: String,
    /// The storage root's git sync, when it syncs (see `sync_status`).
    pub sync: Option<SyncLines>,
}

/// What the tray shows of sync: the tooltip line, the menu's disabled lines, and
/// whether a sync asked for from the menu is running.
#[derive(Debug, Clone, PartialEq)]
pub struct SyncLines {
    pub tooltip: String,
    pub menu: Vec<String>,
    pub running: bool,
}

impl Status {
    /// The status of the graphs of a catalogue. `failed` puts the tray in its error
    /// state.
    pub fn of(catalogue: &[CatalogueEntry], host_line: String, failed: bool) -> Status {
        let graphs: Vec<GraphStatus> = neediest_first(catalogue, |g| Some(&g.debt))
            .into_iter()
            .map(|(g, debt)| graph_status(g, debt))
            .collect();
        let worst = graphs.iter().map(|g| g.level).max();
        let badge = if failed {
            Badge::Error
        } else {
            match worst {
                Some(DebtLevel::High) => Badge::DebtHigh,
                Some(DebtLevel::Med) => Badge::DebtMed,
                _ => Badge::Healthy,
            }
        };
        Status {
            badge,
            graphs,
            host_line,
            sync: None,
        }
    }

    /// The tooltip: how the memory is reached, then one line per graph.
    pub fn tooltip(&self) -> String {
        let mut lines = vec![self.host_line.clone()];
        lines.extend(self.sync.as_ref().map(|s| s.tooltip.clone()));
        if self.graphs.is_empty() && self.badge != Badge::Error {
            lines.push("No graphs yet: connect Claude Code and start a session.".into());
        }
        lines.extend(self.graphs.iter().map(|g| g.line.clone()));
        lines.join("\n")
    }

    /// Graphs whose debt is MED or HIGH, neediest first.
    pub fn needs_tending(&self) -> impl Iterator<Item = &GraphStatus> {
        self.graphs.iter().filter(|g| g.level >= DebtLevel::Med)
    }
}

fn graph_status(graph: &CatalogueEntry, debt: &Debt) -> GraphStatus {
    let health = graph.health.trim_start_matches("HEALTH: ");
    // Conflicts raise the level without the score: the line says why it is MED.
    let conflicts = debt
        .conflicts_summary()
        .map(|summary| format!(" · {summary}"))
        .unwrap_or_default();
    GraphStatus {
        line: format!(
            "{}: DEBT {} ({}){conflicts} · {health}",
            graph.name,
            debt.level.as_str(),
            kg_core::float_repr(kg_core::round_to(debt.score, 2))
        ),
        name: graph.name.clone(),
        project_path: graph.project_path.clone(),
        level: debt.level,
        score: debt.score,
        largest_factor: debt.largest_factor(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kg_core::Catalogue;
    use kg_core::Layout;

    /// The status of the root as a tray attached to another server sees it.
    fn survey(layout: &Layout, now: f64, host_line: &str, failed: bool) -> Status {
        let catalogue = Catalogue::default().on_disk(layout, now);
        Status::of(&catalogue, host_line.into(), failed)
    }

    #[test]
    fn worst_graph_decides_the_badge() {
        let dir = tempfile::tempdir().expect("dir");
        let layout = Layout {
            root: dir.path().to_path_buf(),
        };
        let empty = survey(&layout, 1.0, "host", false);
        assert_eq!(empty.badge, Badge::Healthy);
        let nodes: String = (0..10)
            .map(|i| {
                format!(
                    "\"n{i}\": {{\"id\": \"n{i}\", \"gist\": \"{}\", \"_last_read_ts\": {}}}",
                    "x".repeat(400),
                    1_795_176_000 - i * 86_400
                )
            })
            .collect::<Vec<_>>()
            .join(",");
        std::fs::write(
            dir.path().join("user.json"),
            format!("{{\"nodes\": {{{nodes}}}}}"),
        )
        .expect("write");
        let busy = survey(&layout, 1_795_176_000.0, "host", false);
        assert_eq!(busy.badge, Badge::DebtHigh);
        assert_eq!(busy.needs_tending().count(), 1);
        assert!(
            busy.tooltip().contains("user: DEBT HIGH"),
            "{}",
            busy.tooltip()
        );
        assert_eq!(survey(&layout, 1.0, "down", true).badge, Badge::Error);
    }

    #[test]
    fn the_sync_line_follows_the_host_line_when_the_root_syncs() {
        let dir = tempfile::tempdir().expect("dir");
        let layout = Layout {
            root: dir.path().to_path_buf(),
        };
        let mut status = survey(
            &layout,
            1.0,
            "KG Memory serving on http://127.0.0.1:8765",
            false,
        );
        assert!(!status.tooltip().contains("Sync"), "{}", status.tooltip());
        status.sync = Some(SyncLines {
            tooltip: "Sync: 10:42, up to date".into(),
            menu: vec!["Last sync: 10:42".into()],
            running: false,
        });
        let tooltip = status.tooltip();
        let lines: Vec<&str> = tooltip.lines().collect();
        assert_eq!(
            lines[..2],
            [
                "KG Memory serving on http://127.0.0.1:8765",
                "Sync: 10:42, up to date"
            ]
        );
    }

    #[test]
    fn a_merge_conflict_makes_a_calm_graph_need_tending_until_its_note_goes() {
        let dir = tempfile::tempdir().expect("dir");
        let layout = Layout {
            root: dir.path().to_path_buf(),
        };
        let now = 1_795_176_000.0;
        // Maintained an hour ago, two linked nodes: nothing to tend.
        let write = |notes: &str| {
            let text = format!(
                r#"{{"nodes": {{"a": {{"id": "a", "gist": "A.", "notes": {notes}}},
                  "b": {{"id": "b", "gist": "B."}}}},
                  "edges": {{"a->b:uses": {{"from": "a", "to": "b", "rel": "uses"}}}},
                  "_meta": {{"progress": {{"maintain": {{"last_ts": {}}}}}}}}}"#,
                now - 3600.0
            );
            std::fs::write(dir.path().join("user.json"), text).expect("write");
        };
        write(r#"["[merge conflict] The other gist was: A, older."]"#);
        let conflicted = survey(&layout, now, "host", false);
        assert_eq!(conflicted.badge, Badge::DebtMed, "{}", conflicted.tooltip());
        assert!(
            conflicted
                .tooltip()
                .contains("user: DEBT MED (0.0) · merged with conflicts: 1 · "),
            "{}",
            conflicted.tooltip()
        );
        let tending: Vec<_> = conflicted.needs_tending().collect();
        assert_eq!(tending.len(), 1);
        assert_eq!(tending[0].largest_factor, "merged with conflicts: 1");

        write(r#"["Settled: A is right."]"#);
        let settled = survey(&layout, now, "host", false);
        assert_eq!(settled.badge, Badge::Healthy, "{}", settled.tooltip());
        assert!(
            !settled.tooltip().contains("conflicts"),
            "{}",
            settled.tooltip()
        );
    }
}

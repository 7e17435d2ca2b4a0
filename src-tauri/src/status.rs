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
    /// Active nodes no cited edge touches, as a whole percentage (HEALTH's orphans).
    pub unlinked_pct: i64,
    pub nodes: usize,
    pub line: String,
}

impl GraphStatus {
    /// The graph's line in the tray menu: its DEBT and HEALTH in short.
    /// A graph that needs tending says what weighs most.
    pub fn menu_line(&self) -> String {
        let why = if self.level >= DebtLevel::Med {
            format!(": {}", self.largest_factor)
        } else {
            String::new()
        };
        format!(
            "{} — DEBT {} ({}{why}) · HEALTH {} node{}, {}% unlinked",
            self.name,
            self.level.as_str(),
            kg_core::float_repr(kg_core::round_to(self.score, 2)),
            self.nodes,
            if self.nodes == 1 { "" } else { "s" },
            self.unlinked_pct
        )
    }
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

    /// The few characters beside the icon (Linux's indicator label, and the macOS menu
    /// bar): the worst DEBT of any graph and the worst HEALTH (the largest share of
    /// unlinked active nodes). Empty while there is no graph.
    pub fn label(&self) -> String {
        if self.badge == Badge::Error {
            return "KG error".into();
        }
        let Some(neediest) = self.graphs.first() else {
            return String::new();
        };
        let unlinked = self
            .graphs
            .iter()
            .map(|g| g.unlinked_pct)
            .max()
            .unwrap_or(0);
        format!("DEBT {} · {unlinked}% unlinked", neediest.level.as_str())
    }
}

fn graph_status(graph: &CatalogueEntry, debt: &Debt) -> GraphStatus {
    let health = graph.health.line.trim_start_matches("HEALTH: ");
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
        unlinked_pct: graph.health.orphan_pct,
        nodes: graph.health.nodes,
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
        assert!(
            busy.tooltip().contains("user: DEBT HIGH"),
            "{}",
            busy.tooltip()
        );
        // Ten unlinked nodes: the label and the menu line say so beside the DEBT.
        assert_eq!(busy.label(), "DEBT HIGH · 100% unlinked");
        let line = busy.graphs[0].menu_line();
        assert!(
            line.starts_with("user — DEBT HIGH (")
                && line.ends_with(") · HEALTH 10 nodes, 100% unlinked"),
            "{line}"
        );
        assert_eq!(empty.label(), "");
        let down = survey(&layout, 1.0, "down", true);
        assert_eq!(
            (down.badge, down.label().as_str()),
            (Badge::Error, "KG error")
        );
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
        assert_eq!(
            conflicted.graphs[0].largest_factor,
            "merged with conflicts: 1"
        );
        assert_eq!(
            conflicted.graphs[0].menu_line(),
            "user — DEBT MED (0.0: merged with conflicts: 1) · HEALTH 2 nodes, 0% unlinked"
        );
        assert_eq!(conflicted.label(), "DEBT MED · 0% unlinked");

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

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
        }
    }

    /// The tooltip: how the memory is reached, then one line per graph.
    pub fn tooltip(&self) -> String {
        let mut lines = vec![self.host_line.clone()];
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
    GraphStatus {
        line: format!(
            "{}: DEBT {} ({}) · {health}",
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
}

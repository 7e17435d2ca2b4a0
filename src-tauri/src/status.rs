//! What the tray shows: the worst graph's state, one line per graph, and which graphs
//! need tending — computed from the graphs on disk.

use kg_core::debt::{DebtLevel, SurveyRow, survey};
use kg_core::namespace::Layout;

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
    /// Survey the storage root. `failed` puts the tray in its error state.
    pub fn survey(layout: &Layout, now: f64, host_line: String, failed: bool) -> Status {
        let rows = survey(layout, now);
        let graphs: Vec<GraphStatus> = rows.iter().map(graph_status).collect();
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

fn graph_status(row: &SurveyRow) -> GraphStatus {
    let name = if row.is_user {
        "user".to_string()
    } else {
        row.graph.clone()
    };
    let health = row.health.trim_start_matches("HEALTH: ");
    GraphStatus {
        line: format!(
            "{name}: DEBT {} ({}) · {health}",
            row.debt.level.as_str(),
            kg_core::pyfmt::float_repr(kg_core::pyfmt::round_to(row.debt.score, 2))
        ),
        name,
        project_path: row.project_path.clone(),
        level: row.debt.level,
        score: row.debt.score,
        largest_factor: row.debt.largest_factor(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worst_graph_decides_the_badge() {
        let dir = tempfile::tempdir().expect("dir");
        let layout = Layout {
            root: dir.path().to_path_buf(),
        };
        let empty = Status::survey(&layout, 1.0, "host".into(), false);
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
        let busy = Status::survey(&layout, 1_795_176_000.0, "host".into(), false);
        assert_eq!(busy.badge, Badge::DebtHigh);
        assert_eq!(busy.needs_tending().count(), 1);
        assert!(
            busy.tooltip().contains("user: DEBT HIGH"),
            "{}",
            busy.tooltip()
        );
        assert_eq!(
            Status::survey(&layout, 1.0, "down".into(), true).badge,
            Badge::Error
        );
    }
}

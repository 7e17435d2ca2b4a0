//! The world the snapshot tests (`snapshots.rs`) build their inputs in: a home with a
//! project, a store over it, the shared fixture graph, and the scrubbing of session
//! ids. Kept apart so the tests keep their module path, which names their snapshots.

use kg_core::render::{ReadKind, ReadOptions};
use kg_core::tools::{self, ReadArgs};
use kg_core::{Graph, Level, Store, Target};
use kg_test_support::{T, TempHome, open_store_with};
use std::fs;

pub(crate) const HOUR: f64 = 3_600.0;
pub(crate) const DAY: f64 = 86_400.0;

/// A home with one project folder (`proj`) and a store over it.
pub(crate) struct World {
    /// Kept for its lifetime: the folder goes when the world does.
    pub(crate) _home: TempHome,
    pub(crate) store: Store,
    pub(crate) project: String,
}

impl World {
    pub(crate) fn new() -> World {
        World::with_policy(kg_core::Policy::Ours)
    }

    /// Under `KG_POLICY=reference`, whose ranking and recall these snapshots pin
    /// beside the goldens.
    pub(crate) fn reference() -> World {
        World::with_policy(kg_core::Policy::Reference)
    }

    pub(crate) fn with_policy(policy: kg_core::Policy) -> World {
        let home = TempHome::new();
        let project = home.path.join("proj");
        fs::create_dir_all(project.join("src")).expect("project folder");
        let store = open_store_with(&home, T - 30.0 * DAY, policy);
        World {
            project: project.to_string_lossy().into_owned(),
            _home: home,
            store,
        }
    }

    pub(crate) fn session(&self, now: f64) -> String {
        self.store
            .register_session(Some(&self.project), None, now)
            .expect("session")
    }

    pub(crate) fn target<'a>(&'a self, sid: &'a str, level: Level) -> Target<'a> {
        Target {
            level,
            session: Some(sid),
            project_path: (level == Level::Project).then_some(self.project.as_str()),
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn node(
        &self,
        sid: &str,
        level: Level,
        id: &str,
        gist: &str,
        notes: &[&str],
        touches: &[&str],
        now: f64,
    ) {
        let list = |l: &[&str]| (!l.is_empty()).then(|| l.iter().map(|s| s.to_string()).collect());
        self.store
            .put_node(
                self.target(sid, level),
                id,
                gist,
                list(notes),
                list(touches),
                now,
            )
            .expect("put_node");
    }

    pub(crate) fn edge(&self, sid: &str, level: Level, from: &str, to: &str, rel: &str, now: f64) {
        self.store
            .put_edge(self.target(sid, level), from, to, rel, None, now)
            .expect("put_edge");
    }

    /// Archive by hand (the graph view's move; no version bump).
    pub(crate) fn archive(&self, sid: &str, level: Level, id: &str, now: f64) {
        let archive = kg_core::Action::Archive { id: id.into() };
        self.store
            .perform(self.target(sid, level), &[archive], now)
            .expect("archive");
    }

    pub(crate) fn graph(&self, sid: &str, level: Level, now: f64) -> Graph {
        let slot = self
            .store
            .resolve_target(self.target(sid, level), now)
            .expect("graph");
        self.store.with_graph(&slot, Graph::clone)
    }

    pub(crate) fn read(&self, args: ReadArgs, now: f64) -> String {
        let answer = tools::kg_read(&self.store, &args, now);
        assert!(!answer.is_error, "{}", answer.text);
        answer.text
    }
}

/// Replace session ids by `<sid>`, `<sid2>`, … (in the order given).
pub(crate) fn scrub(text: &str, sids: &[&str]) -> String {
    let mut text = text.to_string();
    for (i, sid) in sids.iter().enumerate() {
        let name = if i == 0 {
            "<sid>".to_string()
        } else {
            format!("<sid{}>", i + 1)
        };
        text = text.replace(sid, &name);
    }
    text
}

pub(crate) fn args(sid: &str) -> ReadArgs {
    ReadArgs {
        session_id: Some(sid.to_string()),
        ..ReadArgs::default()
    }
}

/// The small two-level memory most snapshots read: user preferences with an archived
/// node; a project with a cluster, an artifact edge, an archived node cited by an
/// active one, an archived → artifact edge (printed nowhere) and a cross-level edge
/// into the user graph.
pub(crate) fn fixture() -> (World, String) {
    let w = World::new();
    let t0 = T - 20.0 * DAY;
    let sid = w.session(t0);
    let u = Level::User;
    let p = Level::Project;
    w.node(
        &sid,
        u,
        "prefers-terse-replies",
        "Owner wants answers first, rationale after, no filler",
        &[],
        &[],
        t0,
    );
    w.node(
        &sid,
        u,
        "uses-fish-shell",
        "Interactive shell is fish; bash-isms in one-liners break",
        &[],
        &[],
        t0 + 60.0,
    );
    w.node(
        &sid,
        u,
        "avoid-force-push",
        "Never force-push shared branches; use --force-with-lease",
        &[],
        &[],
        t0 + 120.0,
    );
    w.edge(
        &sid,
        u,
        "prefers-terse-replies",
        "uses-fish-shell",
        "same-person",
        t0 + 180.0,
    );
    w.node(
        &sid,
        p,
        "retry-policy",
        "3 retries, exponential 2s base, then dead-letter",
        &[
            "Chosen after the March outage",
            "Base delay lives in config",
        ],
        &["src/retry.rs", "config/app.toml"],
        t0,
    );
    w.node(
        &sid,
        p,
        "ingest-queue",
        "Ingest runs on a single SQS FIFO queue; ordering per tenant",
        &["Tenant id is the message group id"],
        &[],
        t0 + 60.0,
    );
    w.node(
        &sid,
        p,
        "build-needs-nightly",
        "Crate uses let-chains; stable toolchain fails",
        &[],
        &["rust-toolchain.toml"],
        t0 + 120.0,
    );
    w.node(
        &sid,
        p,
        "dead-letter-bucket",
        "S3 bucket for poison messages from the queue",
        &["Objects expire after 14 days", "Alarm fires at 100 objects"],
        &["infra/dlq.tf"],
        t0 + 180.0,
    );
    w.edge(
        &sid,
        p,
        "ingest-queue",
        "retry-policy",
        "governed-by",
        t0 + 240.0,
    );
    w.edge(
        &sid,
        p,
        "retry-policy",
        "src/retry.rs",
        "implemented-in",
        t0 + 300.0,
    );
    w.edge(
        &sid,
        p,
        "dead-letter-bucket",
        "ingest-queue",
        "drains",
        t0 + 360.0,
    );
    w.edge(
        &sid,
        p,
        "dead-letter-bucket",
        "infra/dlq.tf",
        "defined-in",
        t0 + 420.0,
    );
    w.edge(
        &sid,
        p,
        "build-needs-nightly",
        "uses-fish-shell",
        "built-from",
        t0 + 480.0,
    );
    w.archive(&sid, u, "avoid-force-push", t0 + HOUR);
    w.archive(&sid, p, "dead-letter-bucket", t0 + HOUR);
    (w, sid)
}

/// The two fixture graphs as a read at `T` sees them.
pub(crate) fn fixture_graphs(w: &World, sid: &str) -> (Graph, Graph) {
    (
        w.graph(sid, Level::User, T),
        w.graph(sid, Level::Project, T),
    )
}

pub(crate) fn read_options<'a>(kind: ReadKind, budget: usize, sid: &'a str) -> ReadOptions<'a> {
    ReadOptions {
        kind,
        budget,
        preloaded: None,
        header: None,
        session_id: Some(sid),
        now: T,
        grace_days: 5.0,
    }
}

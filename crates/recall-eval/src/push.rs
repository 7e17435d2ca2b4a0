//! How often the cross-session push speaks, and how often it is right (issue 37 item 2).
//!
//! Each trial is two sessions of the memory's project. A starts as a working session
//! does (a full read) and sends one labelled prompt: that prompt is its work. Then B
//! rewrites two nodes: the prompt's first labelled node (news that bears on A's work)
//! and the first labelled node of another prompt that shares no label with it (news
//! from elsewhere). A's next reply then carries whatever the push tells it. A told node
//! is right when the prompt's labels hold it.
//!
//! The reference's gate is measured beside ours on the same writes: the writes it would
//! tell (every active node another session wrote that A had not seen since), which is
//! what 0.17 pushes (since-0.9.30.md §2).

use crate::data::Prompt;
use crate::metrics::ratio;
use crate::run::{Protocol, fresh_session};
use crate::world::World;
use anyhow::{Context, Result};
use kg_core::{Level, Target, Tier};
use serde::Serialize;
use std::collections::HashMap;

/// What one trial's push told A.
#[derive(Debug, Clone, Serialize)]
pub struct PushTrial {
    /// The prompt that was A's work.
    pub prompt: String,
    /// Its kind.
    pub kind: String,
    /// The node B rewrote on A's topic.
    pub on_topic: String,
    /// The node B rewrote elsewhere.
    pub elsewhere: String,
    /// The ids our push told A, in order.
    pub told: Vec<String>,
    /// The ids the reference's gate would tell.
    pub reference_told: Vec<String>,
    /// Of `told`, those the prompt's labels hold.
    pub told_relevant: usize,
    /// Of `reference_told`, those the prompt's labels hold.
    pub reference_relevant: usize,
}

/// Push scores over a set of trials.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PushStats {
    /// Trials run.
    pub trials: usize,
    /// Trials in which the write on A's topic was told.
    pub on_topic_told: usize,
    /// Trials in which the write elsewhere was told.
    pub elsewhere_told: usize,
    /// Trials in which the push said anything.
    pub spoke: usize,
    /// Ids told, and of those labelled for A's prompt.
    pub told: usize,
    /// Of `told`, the labelled ones.
    pub told_relevant: usize,
    /// Ids the reference's gate would tell, and of those the labelled ones.
    pub reference_told: usize,
    /// Of `reference_told`, the labelled ones.
    pub reference_relevant: usize,
}

impl PushStats {
    /// Sum of `trials`.
    pub fn of<'a>(trials: impl IntoIterator<Item = &'a PushTrial>) -> PushStats {
        let mut s = PushStats::default();
        for t in trials {
            s.trials += 1;
            s.on_topic_told += usize::from(t.told.contains(&t.on_topic));
            s.elsewhere_told += usize::from(t.told.contains(&t.elsewhere));
            s.spoke += usize::from(!t.told.is_empty());
            s.told += t.told.len();
            s.told_relevant += t.told_relevant;
            s.reference_told += t.reference_told.len();
            s.reference_relevant += t.reference_relevant;
        }
        s
    }

    /// Share of writes on A's topic that reached it.
    pub fn delivered(&self) -> Option<f64> {
        ratio(self.on_topic_told, self.trials)
    }

    /// Share of writes elsewhere that were kept from A.
    pub fn kept_quiet(&self) -> Option<f64> {
        ratio(self.trials - self.elsewhere_told, self.trials)
    }

    /// Share of trials in which the push said anything.
    pub fn spoken(&self) -> Option<f64> {
        ratio(self.spoke, self.trials)
    }

    /// Share of told ids that bear on A's work (by the labels).
    pub fn precision(&self) -> Option<f64> {
        ratio(self.told_relevant, self.told)
    }

    /// The same for the reference's gate.
    pub fn reference_precision(&self) -> Option<f64> {
        ratio(self.reference_relevant, self.reference_told)
    }
}

/// One memory's push trials: one per labelled prompt that has an active project node
/// among its labels and a partner prompt elsewhere.
pub fn run_push(world: &World, prompts: &[Prompt], now: f64) -> Result<Vec<PushTrial>> {
    let gists: HashMap<String, (String, bool)> = world.store.with_graph(&world.slot, |g| {
        g.nodes
            .iter()
            .map(|(id, n)| (id.clone(), (n.gist().to_string(), n.tier() == Tier::Active)))
            .collect()
    });
    let active = |id: &String| gists.get(id).is_some_and(|(_, active)| *active);
    let labelled: Vec<&Prompt> = prompts.iter().filter(|p| !p.relevant.is_empty()).collect();
    let mut trials = Vec::new();
    for (i, p) in labelled.iter().enumerate() {
        let Some(on_topic) = p.relevant.iter().find(|id| active(id)) else {
            continue;
        };
        // The next prompt (in file order) that shares no label with this one.
        let elsewhere = (1..labelled.len())
            .map(|k| labelled[(i + k) % labelled.len()])
            .filter(|q| !q.relevant.iter().any(|id| p.relevant.contains(id)))
            .find_map(|q| q.relevant.iter().find(|id| active(id)));
        let Some(elsewhere) = elsewhere else {
            continue;
        };
        // Each trial later than the last, so its sessions see only its own writes.
        let at = now + 100.0 * (i as f64 + 1.0);
        let a = format!("push-eval-a-{}", p.id);
        let b = format!("push-eval-b-{}", p.id);
        let a_sid = fresh_session(world, &a, Protocol::Live, at)?;
        let event = kg_core::PromptEvent {
            cwd: Some(&world.project),
            harness_session: Some(&a),
            prompt: Some(&p.prompt),
            transcript_path: Some(""),
        };
        let _ = kg_core::prompt_reply(&world.store, &event, at);
        let b_sid = fresh_session(world, &b, Protocol::Clean, at)?;
        for (k, id) in [on_topic, elsewhere].into_iter().enumerate() {
            let gist = &gists.get(id).context("a labelled node")?.0;
            world
                .store
                .put_node(
                    Target {
                        level: Level::Project,
                        session: Some(&b_sid),
                        project_path: None,
                    },
                    id,
                    &format!("{gist} (rechecked in trial {i})"),
                    None,
                    None,
                    at + 1.0 + k as f64,
                )
                .with_context(|| format!("B's rewrite of {id}"))?;
        }
        let reference_told: Vec<String> = world
            .store
            .writes_unseen_by(&a_sid, at)
            .into_iter()
            .filter(|w| w.tier == Tier::Active)
            .map(|w| w.id)
            .collect();
        let told = kg_core::session_news(&world.store, &a_sid, at + 3.0)
            .map(|text| told_ids(&text))
            .unwrap_or_default();
        let labelled_count =
            |ids: &[String]| ids.iter().filter(|id| p.relevant.contains(id)).count();
        trials.push(PushTrial {
            prompt: p.id.clone(),
            kind: p.kind.clone(),
            on_topic: on_topic.clone(),
            elsewhere: elsewhere.clone(),
            told_relevant: labelled_count(&told),
            reference_relevant: labelled_count(&reference_told),
            told,
            reference_told,
        });
    }
    Ok(trials)
}

/// The ids of a push's lines (`- <id> (new|updated): <gist>`).
fn told_ids(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("- "))
        .filter_map(|l| l.split_once(" (").map(|(id, _)| id.to_string()))
        .collect()
}

/// Scores per prompt kind, in `order`, then `all`.
pub fn push_by_kind(trials: &[PushTrial], order: &[String]) -> Vec<(String, PushStats)> {
    let mut rows: Vec<(String, PushStats)> = order
        .iter()
        .map(|kind| {
            let stats = PushStats::of(trials.iter().filter(|t| &t.kind == kind));
            (kind.clone(), stats)
        })
        .filter(|(_, s)| s.trials > 0)
        .collect();
    rows.push(("all".to_string(), PushStats::of(trials)));
    rows
}

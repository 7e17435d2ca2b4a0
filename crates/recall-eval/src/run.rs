//! Driving prompt recall and `kg_search` in-process, exactly as the server's hook
//! endpoint and MCP tool call them, and reading back which node ids they showed.

use crate::data::{Prompt, Query};
use crate::world::World;
use anyhow::{Result, bail};
use kg_core::{PromptEvent, PromptReply, ReadArgs};
use serde::{Deserialize, Serialize};
use std::time::Instant;

/// First line of every recall block. kg-core keeps it private; the format is pinned by
/// the reference goldens and is the same under both policies (issue 21, item 5), so
/// the harness can rely on it.
pub const RECALL_HEADER: &str = "KG recall — memory matching this prompt:";
/// The heading of a recall block's connections section (pinned the same way).
const CONNECTIONS_HEAD: &str = "  connections:";
/// How the full-read nudge starts (kg-core's `wording::FULL_READ_NUDGE`).
const NUDGE_START: &str = "KG preload shows only a PARTIAL view";

/// What a prompt hook would have added to the model's context.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Said {
    /// A recall block: node gists from memory (possibly after the full-read nudge).
    Recall,
    /// The full-read nudge alone: fixed wording, nothing from memory.
    Nudge,
    /// A reminder the server chose (our policy): fixed wording, nothing from memory.
    Reminder,
    /// `{}` under the reference policy: the hook then adds a reminder picked at random
    /// (crates/kg-cli/src/hook.rs). Fixed wording, nothing from memory.
    HookReminder,
    /// Nothing at all (`{"quiet": true}`, our policy).
    #[default]
    Quiet,
}

impl Said {
    /// Whether node text from memory reached the model.
    pub fn injected(self) -> bool {
        self == Said::Recall
    }

    /// Whether the model's context was left untouched (no recall, nudge or reminder).
    pub fn nothing_at_all(self) -> bool {
        self == Said::Quiet
    }
}

/// How a prompt's session stands when the prompt arrives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Protocol {
    /// A fresh session that has been shown nothing, its full read counted as done (so
    /// no nudge stands in for recall): what recall selects, with nothing held back.
    Clean,
    /// A fresh session after a real full read (`kg_read` without ids): every active
    /// gist is seen and in the model's context, as in a working session.
    Live,
    /// A fresh session's first prompt, before any full read (the nudge may come first).
    First,
}

impl Protocol {
    /// Every protocol, in report order.
    pub const ALL: [Protocol; 3] = [Protocol::Clean, Protocol::Live, Protocol::First];

    /// The name the report and the runs file use.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Clean => "clean",
            Protocol::Live => "live",
            Protocol::First => "first",
        }
    }
}

/// One prompt's outcome. This is also the shape of a prompt in a runs file written by
/// another system (`--runs`): there only `id` and either `reply` (the hook text as the
/// system returned it, read by the same parser as ours) or `said` and `hits` are needed;
/// the kind, text and labels are taken from the data, never from the file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PromptRun {
    /// The prompt's id.
    pub id: String,
    /// Its kind.
    #[serde(default)]
    pub kind: String,
    /// The prompt text.
    #[serde(default)]
    pub prompt: String,
    /// Its labels, most important first.
    #[serde(default)]
    pub relevant: Vec<String>,
    /// What the hook would have added.
    #[serde(default)]
    pub said: Said,
    /// Whether the full-read nudge came with it.
    #[serde(default)]
    pub nudged: bool,
    /// Ids of the recall block's hit lines, in order; a node already in context
    /// (`- [level] id (in context)`) counts here too.
    #[serde(default)]
    pub hits: Vec<String>,
    /// Ids of its connection lines (neighbours pulled in by a path between hits).
    #[serde(default)]
    pub connectors: Vec<String>,
    /// How long the call took, in microseconds.
    #[serde(default)]
    pub micros: f64,
    /// Runs files only: the hook's `additionalContext` as the system returned it, empty
    /// when it returned `{}` (its hook then adds a reminder of its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply: Option<String>,
}

impl PromptRun {
    /// Fill `said`, `nudged`, `hits` and `connectors` from `reply`, when there is one.
    pub fn read_raw_reply(&mut self) -> Result<()> {
        let Some(text) = &self.reply else {
            return Ok(());
        };
        let reply = if text.is_empty() {
            PromptReply::Nothing
        } else {
            PromptReply::Say(text.clone())
        };
        (self.said, self.nudged, self.hits, self.connectors) = read_reply(&reply)?;
        Ok(())
    }

    /// Every injected id in the order the block shows them: hits, then connectors;
    /// each id once.
    pub fn injected(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for id in self.hits.iter().chain(&self.connectors) {
            if !out.contains(&id.as_str()) {
                out.push(id);
            }
        }
        out
    }

    /// What the prompt got, without the timing: equal for two runs that behaved alike.
    pub fn outcome(&self) -> (Said, bool, &[String], &[String]) {
        (self.said, self.nudged, &self.hits, &self.connectors)
    }
}

/// One query's outcome (in a runs file, only `id` and either `ranked` or `text`, the
/// tool's answer as the system returned it, are needed).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SearchRun {
    /// The query's id.
    pub id: String,
    /// Its kind.
    #[serde(default)]
    pub kind: String,
    /// The query text.
    #[serde(default)]
    pub query: String,
    /// Its labels, most important first.
    #[serde(default)]
    pub relevant: Vec<String>,
    /// Ranked ids as the tool's text shows them: the top hits, then "MORE MATCHES".
    #[serde(default)]
    pub ranked: Vec<String>,
    /// How long the call took, in microseconds.
    #[serde(default)]
    pub micros: f64,
    /// Runs files only: the tool's text, ranked by the same parser as ours.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// A new KG session for the project, bound to the Claude session `claude`, standing as
/// `protocol` says. Registered in memory only: the registry file is not rewritten for
/// each of the hundreds of sessions (nothing reads it back).
pub(crate) fn fresh_session(
    world: &World,
    claude: &str,
    protocol: Protocol,
    now: f64,
) -> Result<String> {
    let sid = world
        .store
        .register_unsaved(Some(world.root.clone()), Some(claude), now);
    if protocol == Protocol::Clean {
        // The nudge no longer stands in for recall, and nothing has been shown.
        world.store.mark_full_read(&sid, now);
    }
    if protocol == Protocol::Live {
        // The real full read, through the tool's own code: it marks every active gist
        // of both levels seen and stamps the full read, as a working session's has.
        let args = ReadArgs {
            cwd: Some(world.project.clone()),
            session_id: Some(sid.clone()),
            ..ReadArgs::default()
        };
        let read = kg_core::kg_read(&world.store, &args, now);
        if read.is_error {
            bail!("the full read of session {sid} failed: {}", read.text);
        }
    }
    Ok(sid)
}

/// Each prompt in a fresh session, so an earlier prompt's injections cannot suppress a
/// later one's (a gist is injected at most once per session) and reminders are not
/// held back by the ten-minute gap another prompt started.
pub fn run_prompts(
    world: &World,
    prompts: &[Prompt],
    protocol: Protocol,
    now: f64,
) -> Result<Vec<PromptRun>> {
    let mut runs = Vec::with_capacity(prompts.len());
    for p in prompts {
        let claude = format!("recall-eval-{}-{}", protocol.name(), p.id);
        fresh_session(world, &claude, protocol, now)?;
        // What Claude Code's UserPromptSubmit hook sends. No transcript: the reminder
        // pool is then the mid-conversation one.
        let event = PromptEvent {
            cwd: Some(&world.project),
            harness_session: Some(&claude),
            prompt: Some(&p.prompt),
            transcript_path: Some(""),
        };
        let start = Instant::now();
        let reply = kg_core::prompt_reply(&world.store, &event, now);
        let micros = start.elapsed().as_secs_f64() * 1e6;
        let (said, nudged, hits, connectors) = read_reply(&reply)?;
        runs.push(PromptRun {
            id: p.id.clone(),
            kind: p.kind.clone(),
            prompt: p.prompt.clone(),
            relevant: p.relevant.clone(),
            said,
            nudged,
            hits,
            connectors,
            micros,
            reply: None,
        });
    }
    Ok(runs)
}

/// What a reply said, whether the nudge came with it, its hit ids and connector ids.
pub type ReadReply = (Said, bool, Vec<String>, Vec<String>);

/// Classify a reply and take the ids out of its recall block.
pub fn read_reply(reply: &PromptReply) -> Result<ReadReply> {
    let text = match reply {
        PromptReply::Quiet => return Ok((Said::Quiet, false, Vec::new(), Vec::new())),
        PromptReply::Nothing => return Ok((Said::HookReminder, false, Vec::new(), Vec::new())),
        PromptReply::Say(text) => text,
    };
    let nudged = text.starts_with(NUDGE_START);
    let Some(start) = text
        .match_indices(RECALL_HEADER)
        .map(|(i, _)| i)
        .find(|&i| i == 0 || text[..i].ends_with('\n'))
    else {
        let said = if nudged { Said::Nudge } else { Said::Reminder };
        return Ok((said, nudged, Vec::new(), Vec::new()));
    };
    let (hits, connectors) = parse_recall(&text[start..])?;
    Ok((Said::Recall, nudged, hits, connectors))
}

/// The ids of a recall block (interfaces.md §7.3): `- [level] id: gist` hit lines (or
/// `- [level] id (in context)` for one already seen), then optionally `  connections:`
/// with `  - [level] id: gist` connector lines and `  from --rel--> to` edge lines.
pub fn parse_recall(block: &str) -> Result<(Vec<String>, Vec<String>)> {
    let mut hits = Vec::new();
    let mut connectors = Vec::new();
    let mut in_connections = false;
    for line in block.lines().skip(1) {
        if line == CONNECTIONS_HEAD {
            in_connections = true;
            continue;
        }
        if in_connections {
            if let Some(rest) = line.strip_prefix("  - [") {
                connectors.push(entry_id(rest, line)?);
            } else if !line.contains("--") {
                bail!("unexpected line in a recall block's connections: {line:?}");
            }
        } else if let Some(rest) = line.strip_prefix("- [") {
            hits.push(entry_id(rest, line)?);
        } else {
            bail!("unexpected line in a recall block: {line:?}");
        }
    }
    if hits.is_empty() {
        bail!("a recall block without a hit:\n{block}");
    }
    Ok((hits, connectors))
}

/// The id of `level] id: gist` or `level] id (in context)`. Ids are letters, digits,
/// `.`, `_` and `-` only, so the id ends at the first `:` or space.
fn entry_id(rest: &str, line: &str) -> Result<String> {
    let Some((_, after)) = rest.split_once("] ") else {
        bail!("no level in recall line {line:?}");
    };
    let id = after.split([':', ' ']).next().unwrap_or_default();
    if id.is_empty() {
        bail!("no id in recall line {line:?}");
    }
    Ok(id.to_string())
}

/// Each query through the `kg_search` tool with a fresh session (as an agent searching
/// before it captures: nothing seen, so the text carries every hit's notes and the
/// budget trims what it would trim for that agent).
pub fn run_searches(world: &World, queries: &[Query], now: f64) -> Result<Vec<SearchRun>> {
    let mut runs = Vec::with_capacity(queries.len());
    for q in queries {
        let claude = format!("recall-eval-search-{}", q.id);
        let sid = fresh_session(world, &claude, Protocol::Clean, now)?;
        let start = Instant::now();
        let answer = kg_core::kg_search(&world.store, &q.query, Some(&sid), now);
        let micros = start.elapsed().as_secs_f64() * 1e6;
        if answer.is_error {
            bail!("kg_search({:?}) failed: {}", q.query, answer.text);
        }
        runs.push(SearchRun {
            id: q.id.clone(),
            kind: q.kind.clone(),
            query: q.query.clone(),
            relevant: q.relevant.clone(),
            ranked: ranked_ids(&answer.text),
            micros,
            text: None,
        });
    }
    Ok(runs)
}

/// The ranking `kg_search` shows (core.md §8.4): `▸ id (flags)` top-hit headers in
/// order, then the `  id: gist` lines under `MORE MATCHES:`. Connector lines (under
/// `CONNECTIONS between hits:`) are not ranked matches. An id held by both levels is
/// ranked once, at its first place.
pub fn ranked_ids(text: &str) -> Vec<String> {
    let mut ranked: Vec<String> = Vec::new();
    let mut in_more = false;
    for line in text.lines() {
        let id = if let Some(rest) = line.strip_prefix("▸ ") {
            in_more = false;
            rest.split(' ').next()
        } else if line == "MORE MATCHES:" {
            in_more = true;
            None
        } else if line == "CONNECTIONS between hits:" {
            in_more = false;
            None
        } else if in_more {
            line.strip_prefix("  ")
                .and_then(|rest| rest.split_once(": "))
                .map(|(id, _)| id)
        } else {
            None
        };
        if let Some(id) = id.filter(|id| !id.is_empty())
            && !ranked.iter().any(|r| r == id)
        {
            ranked.push(id.to_string());
        }
    }
    ranked
}

/// Median of a list of durations in microseconds, in milliseconds (`None` when empty).
pub fn median_ms(micros: impl Iterator<Item = f64>) -> Option<f64> {
    let mut v: Vec<f64> = micros.collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    let median = if v.len() % 2 == 1 {
        v[mid]
    } else {
        (v[mid - 1] + v[mid]) / 2.0
    };
    Some(median / 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recall_blocks_give_hits_then_connectors() {
        let block = "KG recall — memory matching this prompt:\n\
                     - [project] a-b: gist: with a colon\n\
                     - [user] c.d (in context)\n  connections:\n\
                     \x20 - [project] e_f: its gist\n  a-b --calls--> e_f";
        let (hits, conn) = parse_recall(block).expect("parses");
        assert_eq!(hits, ["a-b", "c.d"]);
        assert_eq!(conn, ["e_f"]);
    }

    #[test]
    fn nudge_and_recall_are_told_apart() {
        let nudge = format!("{NUDGE_START} — call kg_read.");
        let (said, nudged, ..) = read_reply(&PromptReply::Say(nudge.clone())).expect("reads");
        assert_eq!((said, nudged), (Said::Nudge, true));
        let both = format!("{nudge}\n\n{RECALL_HEADER}\n- [project] x: y");
        let (said, nudged, hits, _) = read_reply(&PromptReply::Say(both)).expect("reads");
        assert_eq!(
            (said, nudged, hits),
            (Said::Recall, true, vec!["x".to_string()])
        );
        let (said, ..) = read_reply(&PromptReply::Say("Tip: search first".into())).expect("ok");
        assert_eq!(said, Said::Reminder);
    }

    #[test]
    fn search_text_ranks_top_then_more_and_skips_connections() {
        let text = "Found 9 match(es) for 'q' — top 2:\n\n▸ one (project, archived)\n  gist: g\n    - note: x\n\n\
                    ▸ two (user)\n  gist: g\n\nCONNECTIONS between hits:\n  mid: gist\n  one --calls--> mid\n\n\
                    MORE MATCHES:\n  three: a: b\n  one: again";
        assert_eq!(ranked_ids(text), ["one", "two", "three"]);
        assert!(ranked_ids("No nodes found matching 'q'").is_empty());
    }

    #[test]
    fn medians() {
        assert_eq!(median_ms([3000.0, 1000.0, 2000.0].into_iter()), Some(2.0));
        assert_eq!(median_ms([1000.0, 2000.0].into_iter()), Some(1.5));
        assert_eq!(median_ms(std::iter::empty()), None);
    }
}

//! The ambient loop's decisions: prompt recall (interfaces.md §7.3) and capture nudges
//! (§7.4) — the reference goldens 046–063 plus the acceptance items of core.md
//! §12.10–§12.11 (interfaces.md §13 E–G, I).

use crate::golden::replay;
use kg_core::ambient::{RECALL_BUDGET, RECALL_HEADER, prompt_context, tool_event};
use kg_core::search::{SearchGraph, search};
use kg_core::tools::{self, PutEdgeArgs, PutNodeArgs};
use kg_core::{Level, Policy, Store};
use kg_test_support::golden::{case_files, read_case};
use kg_test_support::hook::{prompt_event, tool_use};
use kg_test_support::{T, TempHome, open_store, open_store_with};
use serde_json::{Value, json};
use std::fs;
use std::sync::Arc;

mod first_prompt;
mod nudges;
mod ours;
mod recall;

#[test]
fn goldens_046_to_063_match_through_kg_core() {
    let mut checked = 0;
    for name in case_files() {
        let Some(number) = name.get(..3).and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        if !(46..=63).contains(&number) {
            continue;
        }
        match replay(&name, read_case(&name)) {
            Ok(None) => checked += 1,
            Ok(Some(why)) => panic!("{name} was skipped: {why}"),
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(checked, 18);
}

// ----- scaffolding ------------------------------------------------------------------

/// A home with one project folder and a store over it.
struct World {
    home: TempHome,
    store: Store,
    project: String,
}

impl World {
    fn new() -> World {
        World::with_policy(Policy::Ours)
    }

    /// Under `KG_POLICY=reference`: the reference's recall, pinned by the goldens.
    fn reference() -> World {
        World::with_policy(Policy::Reference)
    }

    fn with_policy(policy: Policy) -> World {
        World::at("proj", policy)
    }

    /// A world whose project folder is `<home>/<below_home>` (its last name `proj`).
    fn at(below_home: &str, policy: Policy) -> World {
        let home = TempHome::new();
        let project = home.path.join(below_home);
        fs::create_dir_all(project.join("src")).expect("project folder");
        let store = open_store_with(&home, T, policy);
        World {
            project: project.to_string_lossy().into_owned(),
            home,
            store,
        }
    }

    /// A session for the project bound to `claude`, past its full read unless `fresh`.
    fn session(&self, claude: &str, full_read: bool) -> String {
        let sid = self
            .store
            .register_session(Some(&self.project), Some(claude), T)
            .expect("register");
        if full_read {
            // Set directly: a real full read would also mark every active gist seen.
            self.store.mark_full_read(&sid, T);
        }
        sid
    }

    fn node(&self, sid: &str, id: &str, gist: &str, touches: &[&str]) {
        let answer = tools::kg_put_node(
            &self.store,
            &PutNodeArgs {
                session_id: sid.to_string(),
                level: Level::Project,
                id: id.to_string(),
                gist: gist.to_string(),
                notes: None,
                touches: (!touches.is_empty())
                    .then(|| touches.iter().map(|t| t.to_string()).collect()),
            },
            T,
        );
        assert!(!answer.is_error, "{}", answer.text);
    }

    /// Set a project node's gist by editing the graph file and reloading it: the way
    /// to store what the write path refuses (a hand edit, an older version's file).
    fn set_gist_by_hand(&self, id: &str, gist: &str) {
        let root = self.store.resolve_root(&self.project).expect("root");
        let slot = self.store.project_slot(&root, T).expect("slot");
        let text = std::fs::read_to_string(&slot.path).expect("graph file");
        let mut file: Value = serde_json::from_str(&text).expect("graph json");
        file["nodes"][id]["gist"] = json!(gist);
        std::fs::write(&slot.path, file.to_string()).expect("hand edit");
        self.store.reload(&slot, T).expect("reload");
    }

    fn edge(&self, sid: &str, from: &str, to: &str, rel: &str) {
        let answer = tools::kg_put_edge(
            &self.store,
            &PutEdgeArgs {
                session_id: sid.to_string(),
                level: Level::Project,
                from: from.to_string(),
                to: to.to_string(),
                rel: rel.to_string(),
                notes: None,
            },
            T,
        );
        assert!(!answer.is_error, "{}", answer.text);
    }

    fn prompt(&self, claude: &str, prompt: &str) -> Option<String> {
        self.prompt_at(claude, prompt, T)
    }

    fn prompt_at(&self, claude: &str, prompt: &str, now: f64) -> Option<String> {
        let payload = json!({
            "session_id": claude,
            "transcript_path": "/nowhere.jsonl",
            "cwd": self.project,
            "permission_mode": "default",
            "hook_event_name": "UserPromptSubmit",
            "prompt": prompt,
        });
        prompt_context(&self.store, &prompt_event(&payload), now)
    }

    fn seen(&self, sid: &str) -> Vec<String> {
        self.store
            .session(sid)
            .map(|r| r.seen_ids().to_vec())
            .unwrap_or_default()
    }

    fn read(&self, claude: &str, file_path: &str, now: f64) -> Option<String> {
        self.event(
            claude,
            "Read",
            json!({"file_path": file_path}),
            &self.project,
            now,
        )
    }

    fn event(&self, claude: &str, tool: &str, input: Value, cwd: &str, now: f64) -> Option<String> {
        let payload = json!({
            "session_id": claude,
            "transcript_path": "/nowhere.jsonl",
            "cwd": cwd,
            "hook_event_name": "PostToolUse",
            "tool_name": tool,
            "tool_input": input,
            "tool_response": {},
        });
        tool_event(&self.store, &tool_use(&payload), now)
    }

    fn counter_path(&self) -> std::path::PathBuf {
        self.home.storage().join("projects/proj/tool_events.json")
    }

    fn counters(&self) -> Value {
        fs::read_to_string(self.counter_path())
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or(Value::Null)
    }
}

fn lines(text: &str) -> Vec<&str> {
    text.lines().collect()
}

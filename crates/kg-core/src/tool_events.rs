//! The tool-event counter file (`projects/<slug>/tool_events.json`, core.md §1.7):
//! how often each file, URL or web query came up, by which Claude sessions, and when a
//! capture nudge last fired. The decisions built on it live in `ambient`.

use crate::model::{Object, as_ts, float_value};
use crate::persist::{PersistError, WriteMode, read_json_object, write_json_object};
use indexmap::IndexMap;
use serde_json::Value;
use std::path::Path;

/// Keys kept at most; the least recently seen are evicted beyond it.
pub const MAX_EVENT_KEYS: usize = 500;
/// Distinct Claude sessions remembered per key.
pub const SESSIONS_PER_KEY: usize = 10;

/// Counters of one target (`read:<path>`, `web:<url>`, `search:<query>`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EventCount {
    pub count: u64,
    pub sessions: Vec<String>,
    pub last_ts: f64,
    pub nudged_ts: Option<f64>,
    /// Fields written by other versions.
    pub extra: Object,
}

/// Nudges given to one KG session.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Throttle {
    pub count: u64,
    pub last_ts: f64,
}

/// The whole file.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolEvents {
    pub events: IndexMap<String, EventCount>,
    pub throttle: IndexMap<String, Throttle>,
}

impl ToolEvents {
    /// Read the file; a missing or unreadable file reads as empty.
    pub fn load(path: &Path) -> ToolEvents {
        match read_json_object(path) {
            Ok(Some(obj)) => ToolEvents::from_object(&obj),
            Ok(None) => ToolEvents::default(),
            Err(e) => {
                log::warn!("tool events unreadable, starting empty: {e}");
                ToolEvents::default()
            }
        }
    }

    pub fn from_object(obj: &Object) -> ToolEvents {
        let mut out = ToolEvents::default();
        if let Some(Value::Object(events)) = obj.get("events") {
            for (key, value) in events {
                let Value::Object(e) = value else { continue };
                let mut extra = e.clone();
                for k in ["count", "sessions", "last_ts", "nudged_ts"] {
                    extra.shift_remove(k);
                }
                out.events.insert(
                    key.clone(),
                    EventCount {
                        count: e.get("count").and_then(Value::as_u64).unwrap_or(0),
                        sessions: match e.get("sessions") {
                            Some(Value::Array(a)) => a
                                .iter()
                                .filter_map(|s| s.as_str().map(str::to_string))
                                .collect(),
                            _ => Vec::new(),
                        },
                        last_ts: as_ts(e.get("last_ts")).unwrap_or(0.0),
                        nudged_ts: as_ts(e.get("nudged_ts")),
                        extra,
                    },
                );
            }
        }
        if let Some(Value::Object(throttle)) = obj.get("throttle") {
            for (sid, value) in throttle {
                out.throttle.insert(
                    sid.clone(),
                    Throttle {
                        count: value.get("count").and_then(Value::as_u64).unwrap_or(0),
                        last_ts: as_ts(value.get("last_ts")).unwrap_or(0.0),
                    },
                );
            }
        }
        out
    }

    pub fn to_object(&self) -> Object {
        let events: Object = self
            .events
            .iter()
            .map(|(key, e)| {
                let mut obj = Object::new();
                obj.insert("count".into(), Value::from(e.count));
                obj.insert(
                    "sessions".into(),
                    Value::Array(e.sessions.iter().cloned().map(Value::String).collect()),
                );
                obj.insert("last_ts".into(), float_value(e.last_ts));
                if let Some(n) = e.nudged_ts {
                    obj.insert("nudged_ts".into(), float_value(n));
                }
                for (k, v) in &e.extra {
                    obj.insert(k.clone(), v.clone());
                }
                (key.clone(), Value::Object(obj))
            })
            .collect();
        let throttle: Object = self
            .throttle
            .iter()
            .map(|(sid, t)| {
                let mut obj = Object::new();
                obj.insert("count".into(), Value::from(t.count));
                obj.insert("last_ts".into(), float_value(t.last_ts));
                (sid.clone(), Value::Object(obj))
            })
            .collect();
        let mut obj = Object::new();
        obj.insert("events".into(), Value::Object(events));
        obj.insert("throttle".into(), Value::Object(throttle));
        obj
    }

    /// Count one occurrence of a target by a Claude session.
    pub fn bump(&mut self, key: &str, claude_sid: &str, now: f64) -> &mut EventCount {
        let entry = self.events.entry(key.to_string()).or_default();
        entry.count += 1;
        if !entry.sessions.iter().any(|s| s == claude_sid) {
            entry.sessions.push(claude_sid.to_string());
            if entry.sessions.len() > SESSIONS_PER_KEY {
                let excess = entry.sessions.len() - SESSIONS_PER_KEY;
                entry.sessions.drain(..excess);
            }
        }
        entry.last_ts = now;
        entry
    }

    /// Keep the file bounded: drop the least recently seen keys beyond the cap.
    pub fn evict(&mut self) {
        if self.events.len() <= MAX_EVENT_KEYS {
            return;
        }
        let mut by_age: Vec<(f64, usize)> = self
            .events
            .values()
            .enumerate()
            .map(|(i, e)| (e.last_ts, i))
            .collect();
        by_age.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let excess = self.events.len() - MAX_EVENT_KEYS;
        let mut doomed: Vec<usize> = by_age[..excess].iter().map(|&(_, i)| i).collect();
        doomed.sort_unstable();
        for i in doomed.into_iter().rev() {
            self.events.shift_remove_index(i);
        }
    }

    /// Save atomically (1-space indent, the reference's format), evicting first.
    pub fn save(&mut self, path: &Path) -> Result<(), PersistError> {
        self.evict();
        write_json_object(path, &self.to_object(), 1, WriteMode::ATOMIC)
    }

    /// Every event's `last_ts`, for DEBT activity.
    pub fn last_seen(&self) -> impl Iterator<Item = f64> + '_ {
        self.events.values().map(|e| e.last_ts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_the_reference_format() {
        let text = r#"{
 "events": {
  "read:src/main.rs": {
   "count": 2,
   "sessions": [
    "cc-build-1",
    "cc-build-2"
   ],
   "last_ts": 1795007280.0,
   "nudged_ts": 1795007280.0
  }
 },
 "throttle": {
  "58d02d72": {
   "count": 1,
   "last_ts": 1795007280.0
  }
 }
}"#;
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("tool_events.json");
        std::fs::write(&path, text).expect("write");
        let mut events = ToolEvents::load(&path);
        assert_eq!(events.events["read:src/main.rs"].sessions.len(), 2);
        events.save(&path).expect("save");
        assert_eq!(std::fs::read_to_string(&path).expect("read"), text);
    }

    #[test]
    fn keys_and_sessions_stay_bounded() {
        let mut events = ToolEvents::default();
        for i in 0..MAX_EVENT_KEYS + 20 {
            events.bump(&format!("read:f{i}"), "cc", i as f64);
        }
        events.evict();
        assert_eq!(events.events.len(), MAX_EVENT_KEYS);
        assert!(!events.events.contains_key("read:f0"));
        assert!(
            events
                .events
                .contains_key(&format!("read:f{}", MAX_EVENT_KEYS + 19))
        );
        for s in 0..15 {
            events.bump("web:x", &format!("cc-{s}"), 1.0);
        }
        assert_eq!(events.events["web:x"].sessions.len(), SESSIONS_PER_KEY);
        assert_eq!(events.events["web:x"].sessions[0], "cc-5");
    }
}

//! Desktop notifications: a graph that needs tending (at most once per graph per day),
//! a server that cannot start, a quarantined graph file, sync failing for a day (once
//! per failing streak). A missing notification daemon is logged once and never breaks
//! the app.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

static DAEMON_MISSING_LOGGED: AtomicBool = AtomicBool::new(false);

/// Show a notification; `on_open` runs if the person activates it (where the platform
/// supports actions).
pub fn show(summary: &str, body: &str, on_open: Option<Box<dyn FnOnce() + Send>>) {
    let mut n = notify_rust::Notification::new();
    n.appname("KG Memory").summary(summary).body(body);
    if on_open.is_some() {
        n.action("default", "Open graph view");
    }
    match n.show() {
        Ok(handle) => {
            log::info!("notification shown: {summary}");
            #[cfg(all(unix, not(target_os = "macos")))]
            if let Some(open) = on_open {
                // Waiting for the action blocks, so it gets its own thread.
                std::thread::spawn(move || {
                    handle.wait_for_action(|action| {
                        if action == "default" {
                            open();
                        }
                    })
                });
            }
            #[cfg(not(all(unix, not(target_os = "macos"))))]
            let _ = (handle, on_open);
        }
        Err(e) => {
            if !DAEMON_MISSING_LOGGED.swap(true, Ordering::Relaxed) {
                log::warn!("desktop notifications are unavailable ({e}); continuing without them");
            }
        }
    }
}

/// Remembers which graph was reported when, so a person hears about a graph at most
/// once a day even across restarts.
#[derive(Debug)]
pub struct DailyGate {
    path: PathBuf,
    last: HashMap<String, i64>,
}

impl DailyGate {
    pub fn load(path: PathBuf) -> DailyGate {
        let last = std::fs::read_to_string(&path)
            .ok()
            .and_then(|t| serde_json::from_str::<HashMap<String, i64>>(&t).ok())
            .unwrap_or_default();
        DailyGate { path, last }
    }

    /// May `key` be reported on the UTC day of `now`? Records it when yes.
    pub fn admit(&mut self, key: &str, now: f64) -> bool {
        let day = (now / 86_400.0).floor() as i64;
        if self.last.get(key) == Some(&day) {
            return false;
        }
        self.record(key, day);
        true
    }

    /// May `key` be reported at all? Once ever (a key names one event, such as one
    /// failing sync streak). Records it when yes.
    pub fn admit_once(&mut self, key: &str, now: f64) -> bool {
        if self.last.contains_key(key) {
            return false;
        }
        self.record(key, (now / 86_400.0).floor() as i64);
        true
    }

    fn record(&mut self, key: &str, day: i64) {
        self.last.insert(key.to_string(), day);
        if let Some(dir) = self.path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        if let Ok(text) = serde_json::to_string(&self.last)
            && let Err(e) = std::fs::write(&self.path, text)
        {
            log::warn!(
                "cannot remember notifications in {}: {e}",
                self.path.display()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn once_per_graph_per_day_across_restarts() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("notified.json");
        let day = 1_795_176_000.0;
        let mut gate = DailyGate::load(path.clone());
        assert!(gate.admit("alpha", day));
        assert!(!gate.admit("alpha", day + 3_600.0));
        assert!(gate.admit("beta", day));
        let mut again = DailyGate::load(path);
        assert!(
            !again.admit("alpha", day + 60.0),
            "remembered across restarts"
        );
        assert!(again.admit("alpha", day + 86_400.0), "a new day");
    }

    #[test]
    fn once_ever_for_a_one_time_event_across_restarts() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("notified.json");
        let day = 1_795_176_000.0;
        let mut gate = DailyGate::load(path.clone());
        assert!(gate.admit_once("streak-1", day));
        assert!(!gate.admit_once("streak-1", day + 3.0 * 86_400.0));
        assert!(gate.admit_once("streak-2", day));
        let mut again = DailyGate::load(path);
        assert!(!again.admit_once("streak-1", day + 10.0 * 86_400.0));
    }
}

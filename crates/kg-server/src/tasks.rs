//! Background work: the maintenance tick, git autocommit of the storage root, and the
//! orderly shutdown that flushes everything.

use crate::app::AppState;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::process::Command;
use tokio::task::JoinHandle;

/// Each git call may take this long before it is abandoned.
const GIT_TIMEOUT: Duration = Duration::from_secs(60);

/// The running background tasks.
#[derive(Debug)]
pub struct Background {
    tick: JoinHandle<()>,
    autocommit: Option<JoinHandle<()>>,
}

/// Start the tick and, when enabled, the autocommit loop.
pub fn spawn(state: Arc<AppState>) -> Background {
    let tick_state = state.clone();
    let tick = tokio::spawn(async move {
        let period = tick_state.settings.save_interval;
        loop {
            tokio::select! {
                () = tokio::time::sleep(period) => {}
                () = tick_state.shutdown.cancelled() => break,
            }
            tick_state
                .blocking(|state, now| state.store.tick(now))
                .await;
        }
    });
    let autocommit = state.settings.autocommit_interval.map(|period| {
        let state = state.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = tokio::time::sleep(period) => {}
                    () = state.shutdown.cancelled() => break,
                }
                commit_storage(&state.settings.storage_root, &state).await;
            }
        })
    });
    Background { tick, autocommit }
}

impl Background {
    /// Stop the loops, save every graph and the sessions, then make the final commit.
    pub async fn finish(self, state: &Arc<AppState>) {
        state.shutdown.cancel();
        let _ = self.tick.await;
        let autocommit = match self.autocommit {
            Some(handle) => {
                let _ = handle.await;
                true
            }
            None => false,
        };
        state.blocking(|state, _| state.store.flush()).await;
        if autocommit {
            commit_storage(&state.settings.storage_root, state).await;
        }
        log::info!("KG Memory stopped; every graph is saved");
    }
}

/// Commit the storage root when it is a git repository and something changed.
/// Returns whether a commit was made; failures are logged, never raised.
pub async fn commit_storage(root: &Path, state: &AppState) -> bool {
    if !root.join(".git").is_dir() {
        return false; // checked every time, so a later `git init` is picked up
    }
    // The root's lock file says which process serves it now: not history.
    let exclude = format!(":(exclude){}", crate::root_lock::LOCK_FILE);
    let status = match git(root, &["status", "--porcelain", "--", ".", &exclude]).await {
        Ok(out) => out,
        Err(e) => {
            log::warn!("autocommit: git status failed: {e}");
            return false;
        }
    };
    if status.trim().is_empty() {
        return false;
    }
    let message = format!("Auto-save {}", crate::clock::local_minute(state.now()));
    for args in [
        &["add", "-A", "--", ".", &exclude][..],
        &["commit", "-m", &message, "--quiet"][..],
    ] {
        if let Err(e) = git(root, args).await {
            log::warn!("autocommit: git {} failed: {e}", args[0]);
            return false;
        }
    }
    log::info!("autocommit: {message}");
    true
}

async fn git(root: &Path, args: &[&str]) -> Result<String, String> {
    let child = Command::new("git")
        .args(args)
        .current_dir(root)
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(GIT_TIMEOUT, child)
        .await
        .map_err(|_| format!("timed out after {GIT_TIMEOUT:?}"))?
        .map_err(|e| format!("cannot run git: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
    }
}

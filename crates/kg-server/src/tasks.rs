//! Background work: the maintenance tick, git autocommit of the storage root, and the
//! orderly shutdown that flushes everything.

use crate::state::AppState;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;

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
        // The clock is looked at with each tick: a jump since the last one is said,
        // and pauses permanent deletes before the tick could make them.
        let watch = Arc::new(std::sync::Mutex::new(crate::clock::ClockWatch::default()));
        let first = watch.clone();
        tick_state
            .blocking(move |_, now| {
                first.lock().unwrap_or_else(|e| e.into_inner()).look(now);
            })
            .await;
        loop {
            tokio::select! {
                () = tokio::time::sleep(period) => {}
                () = tick_state.shutdown.cancelled() => break,
            }
            let watch = watch.clone();
            tick_state
                .blocking(move |state, now| {
                    let jump = watch.lock().unwrap_or_else(|e| e.into_inner()).look(now);
                    if let Some(jump) = jump {
                        state.store.doubt_clock(jump);
                    }
                    state.store.tick(now);
                })
                .await;
        }
    });
    // Git work on the storage root: a sync when it syncs with a remote, else the
    // autocommit. Checked on every round, so `git init` or `sync setup` done by hand
    // later is picked up.
    let autocommit = (state.settings.autocommit_interval.is_some()
        || crate::sync::any_on(&state.settings.storage_root))
    .then(|| tokio::spawn(storage_loop(state.clone())));
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
        // The last changes are committed; a sync would wait on the network while
        // the user waits for the app to quit, so they go out with the next start's.
        if autocommit {
            commit_storage(&state.settings.storage_root, state).await;
        }
        log::info!("KG Memory stopped; every graph is saved");
    }
}

/// The first retry after the remote could not be reached; each failure doubles the
/// wait, up to the autocommit period.
const FIRST_RETRY: Duration = Duration::from_secs(30);

/// Sync (or commit) at start, then every autocommit period; an unreachable remote is
/// tried again sooner, backing off. (A sync asked for by hand runs at once, in turn
/// with this loop's: `sync_routes::sync_now`.)
async fn storage_loop(state: Arc<AppState>) {
    let root = state.settings.storage_root.clone();
    let period = state.settings.autocommit_interval;
    let mut failures: u32 = 0;
    let mut wait = Duration::ZERO; // at start: bring in what other machines wrote
    loop {
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = state.shutdown.cancelled() => break,
        }
        if !crate::sync::any_on(&root) {
            commit_storage(&root, &state).await;
            failures = 0;
        } else {
            match crate::sync_routes::sync_now(&state).await {
                Ok(synced) => {
                    let report = &synced.total;
                    if failures > 0 {
                        log::info!("sync: the remote is back");
                    }
                    failures = 0;
                    if report.received + report.sent > 0 || report.conflicts > 0 {
                        log::info!("sync: {synced}");
                    }
                }
                Err(e) => {
                    failures += 1;
                    // Said once when it starts failing, then quietly retried.
                    if failures == 1 {
                        log::warn!("sync: {e}");
                    } else {
                        log::debug!("sync (attempt {failures}): {e}");
                    }
                }
            }
        }
        // Without an autocommit period: at start and when asked, only.
        let regular = period.unwrap_or(Duration::from_secs(365 * 24 * 3600));
        wait = if failures == 0 {
            regular
        } else {
            FIRST_RETRY
                .saturating_mul(1 << (failures - 1).min(16))
                .min(regular.max(FIRST_RETRY))
        };
    }
}

/// Commit the storage root when it is a git repository and something changed.
/// Returns whether a commit was made; failures are logged, never raised.
pub async fn commit_storage(root: &Path, state: &AppState) -> bool {
    let (root, now) = (root.to_path_buf(), state.now());
    let committed =
        tokio::task::spawn_blocking(move || crate::sync::commit_storage_root(&root, now)).await;
    match committed {
        Ok(Ok(made)) => {
            if made {
                log::info!("autocommit: saved {}", crate::clock::local_minute(now));
            }
            made
        }
        Ok(Err(e)) => {
            log::warn!("autocommit: {}", e.one_line());
            false
        }
        Err(e) => {
            log::warn!("autocommit: {e}");
            false
        }
    }
}

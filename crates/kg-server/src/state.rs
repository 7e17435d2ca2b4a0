//! What every handler shares: the store, the settings, the clock, the live-change
//! channel and the server's claim on its storage root. Routers depend on this module;
//! it depends on none of them.

use crate::clock::Clock;
use crate::config::Settings;
use crate::connections::Registry;
use crate::root_lock::{RootHeld, RootLock};
use kg_core::{Change, Store};
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

/// Largest request body accepted, on every route.
pub const MAX_BODY_BYTES: usize = 1 << 20;
/// The server's version, reported by `/health` and MCP `serverInfo`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Why a server could not open its storage root.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// Another server holds the root: use that one (the tray attaches to it).
    #[error(transparent)]
    RootHeld(#[from] RootHeld),
    #[error("cannot open the storage root {}: {source}", root.display())]
    Store {
        root: PathBuf,
        source: kg_core::StoreError,
    },
}

/// What every handler shares.
pub struct AppState {
    pub store: Arc<Store>,
    pub settings: Settings,
    pub clock: Clock,
    /// Every change of the store, as it happens (fed by the store's change log).
    pub changes: broadcast::Sender<Arc<Change>>,
    pub ws: Registry,
    /// Cancelled when the server shuts down.
    pub shutdown: CancellationToken,
    /// One git sync of the storage root at a time, whoever asks for it.
    pub sync_gate: tokio::sync::Mutex<()>,
    /// Where git says the files of stale touches went (kept per repository HEAD).
    pub renames: crate::renames::RenameFinder,
    /// This server's claim on the storage root, let go when the state is dropped.
    _root_lock: Option<RootLock>,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl AppState {
    /// Lock the storage root, open the store and wire its change log to the broadcast
    /// channel. Fails with [`OpenError::RootHeld`] when another server holds the root;
    /// `settings.port` is recorded as this server's, so bind first.
    pub fn open(
        settings: Settings,
        shutdown: CancellationToken,
    ) -> Result<Arc<AppState>, OpenError> {
        // Before the store reads anything: a second server must not even heal or
        // quarantine the files the holder is writing.
        let root_lock = RootLock::acquire(&settings.storage_root, &settings.host, settings.port)?;
        // The secret by which this server proves to the owner's clients that it holds
        // the root (see root_lock::serves_another_root).
        if let Err(e) = crate::root_lock::root_token(&settings.storage_root) {
            log::warn!(
                "cannot create {} ({e}); clients will not take this server for the one holding {}",
                settings
                    .storage_root
                    .join(crate::root_lock::TOKEN_FILE)
                    .display(),
                settings.storage_root.display()
            );
        }
        let clock = settings.clock();
        let store = Store::open(settings.store_config(), clock.now()).map_err(|source| {
            OpenError::Store {
                root: settings.storage_root.clone(),
                source,
            }
        })?;
        let store = Arc::new(store);
        let (changes, _) = broadcast::channel(4096);
        let sender = changes.clone();
        store.subscribe(Arc::new(move |change: &Change| {
            // No receiver is fine: nobody is listening right now.
            let _ = sender.send(Arc::new(change.clone()));
        }));
        Ok(Arc::new(AppState {
            store,
            settings,
            clock,
            changes,
            ws: Registry::default(),
            shutdown,
            sync_gate: tokio::sync::Mutex::new(()),
            renames: crate::renames::RenameFinder::default(),
            _root_lock: root_lock,
        }))
    }

    pub fn now(&self) -> f64 {
        self.clock.now()
    }

    /// Stale touches of a graph whose project lies at `root` (none for the user
    /// graph), each with the path git says its file went to, when it knows one.
    pub fn stale_offers(
        &self,
        stale: Vec<kg_core::StaleTouch>,
        root: Option<&std::path::Path>,
    ) -> Vec<(kg_core::StaleTouch, Option<String>)> {
        let renames = |root: &std::path::Path| self.renames.renames(root);
        kg_core::with_renames(stale, root, self.store.home(), &renames)
    }

    /// Run store work off the async runtime (it may fsync).
    pub async fn blocking<R: Send + 'static>(
        self: &Arc<Self>,
        work: impl FnOnce(&AppState, f64) -> R + Send + 'static,
    ) -> R {
        let state = self.clone();
        let now = self.now();
        match tokio::task::spawn_blocking(move || work(&state, now)).await {
            Ok(r) => r,
            Err(e) => std::panic::resume_unwind(e.into_panic()),
        }
    }

    /// Is this `Host` header (port stripped) one of ours?
    pub fn host_allowed(&self, host: &str) -> bool {
        let host = host.trim().to_ascii_lowercase();
        let name = strip_port(&host);
        if name.is_empty() {
            return false;
        }
        let bind = self.settings.host.to_ascii_lowercase();
        is_loopback_name(name) || name == bind || name.trim_matches(['[', ']']) == bind
    }

    /// Is this `Origin` a page of ours: the page this server itself serves (its
    /// origin names the very host and port the request is addressed to — also
    /// through a dev proxy that forwards `Host`), or the tray app's webview? A page on
    /// another port of a local host is another origin: it could otherwise subscribe
    /// to `/ws`, whose handshake carries no `Sec-Fetch-Site`.
    pub fn origin_allowed(&self, origin: &str, host: &str) -> bool {
        let origin = origin.trim().to_ascii_lowercase();
        if [
            "tauri://localhost",
            "http://tauri.localhost",
            "https://tauri.localhost",
        ]
        .contains(&origin.as_str())
            || self
                .settings
                .extra_origins
                .iter()
                .any(|o| o.eq_ignore_ascii_case(&origin))
        {
            return true;
        }
        let Some(authority) = origin
            .strip_prefix("http://")
            .or_else(|| origin.strip_prefix("https://"))
        else {
            return false;
        };
        authority == host.trim().to_ascii_lowercase() && self.host_allowed(authority)
    }
}

/// `localhost:8765` → `localhost`; `[::1]:8765` → `[::1]`; `::1` stays. Anything but
/// `:<digits>` after the name leaves the text whole, so it matches no local name
/// (`localhost:80@evil.example` is not localhost).
fn strip_port(host: &str) -> &str {
    let port = |p: &str| p.bytes().all(|b| b.is_ascii_digit());
    if host.starts_with('[') {
        return match host.find(']') {
            Some(end)
                if host[end + 1..]
                    .strip_prefix(':')
                    .map_or(host.len() == end + 1, port) =>
            {
                &host[..=end]
            }
            _ => host,
        };
    }
    match host.split_once(':') {
        Some((name, rest)) if !rest.contains(':') => {
            if port(rest) {
                name
            } else {
                host
            }
        }
        _ => host,
    }
}

fn is_loopback_name(name: &str) -> bool {
    matches!(name, "localhost" | "127.0.0.1" | "::1" | "[::1]")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_stripped_only_when_they_are_ports() {
        assert_eq!(strip_port("localhost:8765"), "localhost");
        assert_eq!(strip_port("localhost"), "localhost");
        assert_eq!(strip_port("[::1]:8765"), "[::1]");
        assert_eq!(strip_port("[::1]"), "[::1]");
        assert_eq!(strip_port("::1"), "::1");
        for odd in [
            "localhost:80@evil.example",
            "localhost:x",
            "[::1]evil",
            "[::1]:1@e",
        ] {
            assert!(!is_loopback_name(strip_port(odd)), "{odd}");
        }
    }
}

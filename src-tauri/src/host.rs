//! Hosting the memory server: in-process when the port is free, attached to the
//! KG Memory server that already answers there, or failed with a reason a person
//! can act on.

use kg_server::{AppState, Settings};
use std::sync::Arc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// How this app reaches the memory.
pub enum Host {
    /// The server runs inside this app.
    Hosted {
        state: Arc<AppState>,
        server: JoinHandle<anyhow::Result<()>>,
    },
    /// Another KG Memory server already answers on the port; this app only watches it.
    Attached { version: String },
    /// No memory server: the port is taken by something else, or the storage root
    /// cannot be used.
    Failed { reason: String },
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Host::Hosted { .. } => f.write_str("Hosted"),
            Host::Attached { version } => write!(f, "Attached({version})"),
            Host::Failed { reason } => write!(f, "Failed({reason})"),
        }
    }
}

/// Start (or find) the server for `settings`.
pub async fn start(settings: &Settings, shutdown: CancellationToken) -> Host {
    let listener = match kg_server::bind(settings).await {
        Ok(l) => l,
        Err(e) => {
            return match kg_server::app::probe_health(&settings.base_url()).await {
                Some(version) => Host::Attached { version },
                None => Host::Failed {
                    reason: format!("{e:#}"),
                },
            };
        }
    };
    let state = match AppState::open(settings.clone(), shutdown) {
        Ok(s) => s,
        Err(e) => {
            return Host::Failed {
                reason: format!(
                    "{e:#}. Check that the folder exists and is readable, or point KG_STORAGE_ROOT elsewhere."
                ),
            };
        }
    };
    let server = tokio::spawn(kg_server::serve(state.clone(), listener));
    Host::Hosted { state, server }
}

impl Host {
    /// One line for the tooltip saying how the app reaches the memory.
    pub fn describe(&self, settings: &Settings) -> String {
        match self {
            Host::Hosted { .. } => format!("KG Memory serving on {}", settings.base_url()),
            Host::Attached { version } => format!(
                "Attached to the KG Memory {version} server already running on {}",
                settings.base_url()
            ),
            Host::Failed { reason } => format!("KG Memory server not running: {reason}"),
        }
    }
}

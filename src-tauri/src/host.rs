//! Hosting the memory server: in-process when the port is free, attached to the
//! KG Memory server that already answers there, or failed with a reason a person
//! can act on.

use kg_server::root_lock::RootHeld;
use kg_server::{AppState, OpenError, ServeError, Settings};
use std::sync::Arc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// How this app reaches the memory.
pub enum Host {
    /// The server runs inside this app.
    Hosted {
        state: Arc<AppState>,
        server: JoinHandle<Result<(), ServeError>>,
    },
    /// Another KG Memory server already answers on the port; this app only watches it.
    Attached { version: String },
    /// No memory server: a program that is not KG Memory listens on the port.
    PortTaken,
    /// No memory server: the storage root cannot be used, or the port cannot be bound.
    Failed { reason: String },
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Host::Hosted { .. } => f.write_str("Hosted"),
            Host::Attached { version } => write!(f, "Attached({version})"),
            Host::PortTaken => f.write_str("PortTaken"),
            Host::Failed { reason } => write!(f, "Failed({reason})"),
        }
    }
}

/// Start (or find) the server for `settings`. When another server holds the storage
/// root, `settings` are pointed at it (whatever port it chose) and the app attaches:
/// a second server on the same root would lose writes.
pub async fn start(settings: &mut Settings, shutdown: CancellationToken) -> Host {
    if let Some(held) = kg_server::root_lock::held(&settings.storage_root) {
        return attach_to_holder(settings, &held).await;
    }
    let listener = match kg_server::bind(settings).await {
        Ok(l) => l,
        Err(e) => {
            if let Some(version) = kg_client::probe_health(&settings.base_url()).await {
                return Host::Attached { version };
            }
            // Something accepts connections there but does not answer like KG Memory.
            // kg_server's message suggests `--port`, which this app does not take.
            if someone_listens(settings).await {
                return Host::PortTaken;
            }
            return Host::Failed {
                reason: format!("{e:#}"),
            };
        }
    };
    if let Ok(local) = listener.local_addr() {
        settings.port = local.port();
    }
    let state = match AppState::open(settings.clone(), shutdown) {
        Ok(s) => s,
        // Another server took the root between the look above and the lock.
        Err(OpenError::RootHeld(held)) => return attach_to_holder(settings, &held).await,
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

/// Does a program accept connections on the configured address?
async fn someone_listens(settings: &Settings) -> bool {
    let addr = (settings.host.as_str(), settings.port);
    let connect = tokio::net::TcpStream::connect(addr);
    matches!(
        tokio::time::timeout(std::time::Duration::from_secs(2), connect).await,
        Ok(Ok(_))
    )
}

/// Watch the server that holds the storage root, if it answers.
async fn attach_to_holder(settings: &mut Settings, held: &RootHeld) -> Host {
    let Some(holder) = &held.holder else {
        return Host::Failed {
            reason: held.to_string(),
        };
    };
    settings.host = holder.connect_host().to_string();
    settings.port = holder.port;
    let base = holder.base_url();
    match kg_client::probe_health(&base).await {
        Some(version) => Host::Attached { version },
        None => Host::Failed {
            reason: format!(
                "the storage root {} is held by {}, which does not answer; quit it or wait for it, then start the app again",
                held.root.display(),
                held.who()
            ),
        },
    }
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
            Host::PortTaken | Host::Failed { .. } => format!(
                "KG Memory server not running: {}",
                self.failure(settings).unwrap_or_default()
            ),
        }
    }

    /// Why there is no memory server and what to do, when there is none.
    pub fn failure(&self, settings: &Settings) -> Option<String> {
        match self {
            Host::Hosted { .. } | Host::Attached { .. } => None,
            Host::PortTaken => Some(format!(
                "port {} on {} is used by another program, not a KG Memory server. \
                 Stop that program, or set KG_HTTP_PORT to a free port, then start KG Memory again.",
                settings.port, settings.host
            )),
            Host::Failed { reason } => Some(reason.clone()),
        }
    }
}

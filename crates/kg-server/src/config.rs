//! Settings of a server, from the environment the Python implementation used (so
//! existing setups keep working) with command-line overrides on top.

use std::path::PathBuf;
use std::time::Duration;

/// Default port of the memory server.
pub const DEFAULT_PORT: u16 = 8765;
/// Default bind address: loopback only.
pub const DEFAULT_HOST: &str = "127.0.0.1";

/// Everything a server needs to start.
#[derive(Debug, Clone)]
pub struct Settings {
    pub host: String,
    pub port: u16,
    pub storage_root: PathBuf,
    pub home: PathBuf,
    /// Maintenance tick period (`KG_SAVE_INTERVAL`, seconds).
    pub save_interval: Duration,
    /// Git autocommit period (`KG_AUTOCOMMIT_INTERVAL`); `None` disables it.
    pub autocommit_interval: Option<Duration>,
    /// How often a WebSocket is pinged (`KG_WS_PING_INTERVAL`, seconds); one that
    /// answers nothing for two of these is closed, so idle sockets cannot hold the
    /// connection cap.
    pub ws_ping_interval: Duration,
    pub grace_days: f64,
    pub orphan_grace_days: f64,
    /// A file holding the current time as epoch seconds, re-read on every request.
    /// For reproducible tests (`KG_CLOCK_FILE`); unset in normal use.
    pub clock_file: Option<PathBuf>,
    /// Extra browser origins allowed to talk to the server (the tray app's webview).
    pub extra_origins: Vec<String>,
    /// Our improvements, or the reference's behaviour exactly (`KG_POLICY`).
    pub policy: kg_core::Policy,
    /// Folders besides home where project folders may lie (`KG_PROJECT_ROOTS`, separated
    /// like `PATH`).
    pub project_roots: Vec<PathBuf>,
    /// The size targets of each level, of a full read and of the preload
    /// (`KG_LEVEL_BUDGET`, `KG_READ_BUDGET`, `KG_PRELOAD_BUDGET`).
    pub budgets: kg_core::Budgets,
    /// The `kg-memory` program git runs as the graph merge driver when the storage
    /// root syncs; `None`: this program. The tray app names the `kg-memory` beside it.
    pub merge_driver: Option<PathBuf>,
}

/// A setting that could not be understood.
#[derive(Debug, thiserror::Error)]
#[error("{name}: {message}")]
pub struct SettingError {
    pub name: String,
    pub message: String,
}

fn home_dir() -> PathBuf {
    std::env::var_os("HOME")
        .or_else(|| std::env::var_os("USERPROFILE"))
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/"))
}

/// The storage root when `KG_STORAGE_ROOT` does not name one.
pub fn default_storage_root(home: &std::path::Path) -> PathBuf {
    home.join(".knowledge-graph")
}

/// A budget from the environment: a whole number within bounds, else a clear error
/// (a budget of junk would render nothing, or everything).
fn budget(name: &str, default: usize) -> Result<usize, SettingError> {
    const RANGE: std::ops::RangeInclusive<usize> = 1_000..=1_000_000;
    match std::env::var(name) {
        Ok(v) => match v.trim().parse::<usize>() {
            Ok(n) if RANGE.contains(&n) => Ok(n),
            _ => Err(SettingError {
                name: name.into(),
                message: format!(
                    "{v:?} is not a budget: give a whole number of characters from {} to {}",
                    RANGE.start(),
                    RANGE.end()
                ),
            }),
        },
        Err(_) => Ok(default),
    }
}

/// Read a number of seconds; the reference falls back to the default on junk.
fn seconds(name: &str, default: f64) -> f64 {
    match std::env::var(name) {
        Ok(v) => v.trim().parse::<f64>().unwrap_or_else(|_| {
            log::warn!("{name}={v:?} is not a number; using {default}");
            default
        }),
        Err(_) => default,
    }
}

impl Settings {
    /// Settings from the environment (`KG_HTTP_HOST`, `KG_HTTP_PORT`,
    /// `KG_STORAGE_ROOT`, `KG_SAVE_INTERVAL`, `KG_AUTOCOMMIT_INTERVAL`,
    /// `KG_GRACE_PERIOD_DAYS`, `KG_ORPHAN_GRACE_DAYS`, `KG_CLOCK_FILE`), and ours
    /// (`KG_POLICY`, `KG_PROJECT_ROOTS`, `KG_LEVEL_BUDGET`, `KG_READ_BUDGET`,
    /// `KG_PRELOAD_BUDGET`).
    pub fn from_env() -> Result<Settings, SettingError> {
        let home = home_dir();
        let port = match std::env::var("KG_HTTP_PORT") {
            Ok(p) => p.trim().parse().map_err(|_| SettingError {
                name: "KG_HTTP_PORT".into(),
                message: format!("{p:?} is not a port number (1-65535)"),
            })?,
            Err(_) => DEFAULT_PORT,
        };
        let storage_root = std::env::var_os("KG_STORAGE_ROOT")
            .map(PathBuf::from)
            .unwrap_or_else(|| default_storage_root(&home));
        let save = seconds("KG_SAVE_INTERVAL", 30.0).max(1.0);
        let autocommit = seconds("KG_AUTOCOMMIT_INTERVAL", 900.0);
        Ok(Settings {
            host: std::env::var("KG_HTTP_HOST").unwrap_or_else(|_| DEFAULT_HOST.into()),
            port,
            storage_root,
            home,
            save_interval: Duration::from_secs_f64(save),
            autocommit_interval: (autocommit > 0.0).then(|| Duration::from_secs_f64(autocommit)),
            ws_ping_interval: Duration::from_secs_f64(
                seconds("KG_WS_PING_INTERVAL", 30.0).max(0.2),
            ),
            grace_days: seconds("KG_GRACE_PERIOD_DAYS", 5.0),
            orphan_grace_days: seconds("KG_ORPHAN_GRACE_DAYS", 365.0),
            clock_file: std::env::var_os("KG_CLOCK_FILE").map(PathBuf::from),
            extra_origins: Vec::new(),
            policy: match std::env::var("KG_POLICY") {
                Ok(text) => kg_core::Policy::parse(&text).ok_or_else(|| SettingError {
                    name: "KG_POLICY".into(),
                    message: format!(
                        "{text:?} is not a policy: use `ours` (the default) or `reference`"
                    ),
                })?,
                Err(_) => kg_core::Policy::Ours,
            },
            project_roots: std::env::var_os("KG_PROJECT_ROOTS")
                .map(|roots| {
                    std::env::split_paths(&roots)
                        .filter(|p| !p.as_os_str().is_empty())
                        .collect()
                })
                .unwrap_or_default(),
            merge_driver: None,
            budgets: {
                let defaults = kg_core::Budgets::default();
                kg_core::Budgets {
                    level: kg_core::LevelBudget::new(budget(
                        "KG_LEVEL_BUDGET",
                        defaults.level.chars(),
                    )?),
                    read: budget("KG_READ_BUDGET", defaults.read)?,
                    preload: budget("KG_PRELOAD_BUDGET", defaults.preload)?,
                }
            },
        })
    }

    /// Where this server's "now" comes from (`KG_CLOCK_FILE`, else the system clock).
    pub fn clock(&self) -> crate::clock::Clock {
        self.clock_file
            .clone()
            .map_or(crate::clock::Clock::System, crate::clock::Clock::File)
    }

    pub fn store_config(&self) -> kg_core::StoreConfig {
        let mut config = kg_core::StoreConfig::new(&self.storage_root, &self.home);
        config.grace_days = self.grace_days;
        config.orphan_grace_days = self.orphan_grace_days;
        config.policy = self.policy;
        config.project_roots = self.project_roots.clone();
        config.synced = crate::sync::any_on(&self.storage_root);
        config.budgets = self.budgets;
        config
    }

    /// Where this server's pid file and detached-start log live.
    pub fn state_dir(&self) -> PathBuf {
        std::env::var_os("XDG_STATE_HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| self.home.join(".local/state"))
            .join("kg-memory")
    }

    /// The pid file of a server on this port.
    pub fn pid_file(&self) -> PathBuf {
        self.state_dir().join(format!("server-{}.pid", self.port))
    }

    /// The URL clients use.
    pub fn base_url(&self) -> String {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        format!("http://{host}:{}", self.port)
    }
}

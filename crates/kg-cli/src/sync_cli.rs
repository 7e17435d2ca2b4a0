//! `kg-memory sync setup|status|now|off`, for the storage root (a person's memory on
//! all their machines) or, with `--project <path>`, one project's memory shared with
//! a team through a remote of its own.

use kg_client::ClientError;
use kg_core::{Store, StoreError};
use kg_server::config::Settings;
use kg_server::root_lock::RootLock;
use kg_server::sync::{
    Git, NETWORK_TIMEOUT, Scope, SyncError, SyncOptions, ignore_in_storage_root, off, setup,
    status, sync_live, synced_scopes,
};
use std::path::Path;

/// Why a `sync` command stopped. A cause is a `source`, said after the message by the
/// binary.
#[derive(Debug, thiserror::Error)]
pub enum SyncCliError {
    /// git, the remote or the repository refused (sync's own words).
    #[error(transparent)]
    Sync(#[from] SyncError),
    /// One scope's sync failed.
    #[error("sync of {scope}")]
    SyncOf {
        scope: String,
        #[source]
        error: SyncError,
    },
    /// A server holds the storage root: this command must not change it underneath.
    #[error(
        "{who} is serving the storage root {root} and keeps its graphs in memory, so it must not change under it. Stop that server (or quit the tray app), run this again, then start it again"
    )]
    Served { who: String, root: String },
    /// The store refused, with what it was asked.
    #[error("{what}")]
    Store {
        what: String,
        #[source]
        error: StoreError,
    },
    /// The project graph could not be saved.
    #[error(transparent)]
    Save(StoreError),
    /// The project folder is not one on this machine.
    #[error("{0} is not a folder: name the project's folder on this machine")]
    NotAFolder(String),
    /// A project graph without a storage folder (never happens: the store gives one).
    #[error("a project graph always has a storage folder")]
    NoStorageFolder,
    /// A file or path operation failed.
    #[error("{what}")]
    Io {
        what: String,
        #[source]
        error: std::io::Error,
    },
    /// The running server could not be asked.
    #[error(transparent)]
    Server(#[from] ClientError),
    /// The running server answered that it could not sync.
    #[error("the running server could not sync: {0}")]
    ServerFailed(String),
}

fn io(what: String) -> impl FnOnce(std::io::Error) -> SyncCliError {
    move |error| SyncCliError::Io { what, error }
}

/// `kg-memory sync …`.
#[derive(Debug, clap::Args)]
pub struct SyncArgs {
    #[command(subcommand)]
    pub action: SyncAction,
}

#[derive(Debug, clap::Subcommand)]
pub enum SyncAction {
    /// Sync this storage root with a git remote: makes it a git repository if needed,
    /// adds the remote, installs the graph merge driver, then syncs once
    ///
    /// The remote can be any git URL (SSH, HTTPS, a path); an empty one receives this
    /// machine's memory. Credentials are git's own (SSH agent, credential helper).
    /// With `--project <path>`, only that project's memory syncs with the remote (a
    /// team's), and the rest of the storage root stays out of it.
    Setup {
        /// The remote repository's URL or path
        remote: String,
        /// The name to give the remote in the repository's git config
        #[arg(long, default_value = "origin")]
        name: String,
        /// Sync only the memory of the project in this folder, with a remote of its own
        #[arg(long, value_name = "PATH")]
        project: Option<String>,
    },
    /// Show the remote, the last sync, what is ahead or behind, and merge conflicts
    Status,
    /// Sync now: commit, fetch, merge, push (the storage root and every project
    /// memory with a remote of its own)
    Now,
    /// Stop syncing: removes the remote and the merge driver from the repository's git
    /// config; the memory and its history stay
    Off {
        /// Stop syncing only the memory of the project in this folder
        #[arg(long, value_name = "PATH")]
        project: Option<String>,
    },
}

/// Run a `sync` action on the storage root of `settings`, printing with `say`.
///
/// While a server holds the root, `now` asks that server to sync (it keeps the graphs
/// in memory and merges into them) and `setup` refuses: the server reads whether its
/// root syncs when it starts.
pub async fn run(
    args: SyncArgs,
    settings: &Settings,
    now: f64,
    say: fn(&str),
) -> Result<(), SyncCliError> {
    let root = settings.storage_root.as_path();
    let options = || -> Result<SyncOptions, SyncCliError> {
        Ok(SyncOptions {
            driver_exe: std::env::current_exe().map_err(io(
                "cannot find this program's own path for git's merge driver".to_string(),
            ))?,
            now,
        })
    };
    match args.action {
        SyncAction::Setup {
            remote,
            name,
            project,
        } => {
            let options = options()?;
            let (_lock, store) = open_for_sync(settings, now)?;
            // A local path is made absolute: git would read it from the repository.
            let url = if Path::new(&remote).exists() {
                std::path::absolute(&remote)
                    .map_err(io(format!("cannot resolve the path {remote}")))?
                    .to_string_lossy()
                    .into_owned()
            } else {
                remote
            };
            let scope = match project {
                None => Scope::storage_root(root),
                Some(path) => {
                    let scope = project_scope(settings, &store, &path, now, Lookup::OpenOrCreate)?;
                    keep_out_of_storage_root(root, &scope)?;
                    scope
                }
            };
            let report = setup(&scope, &name, &url, &store, &options)?;
            store.flush();
            say(&format!(
                "Sync is set up: {} now syncs with {url} as the remote {name}.\n{report}\n",
                scope.describe()
            ));
        }
        SyncAction::Now => match kg_server::root_lock::held(root).and_then(|held| held.holder) {
            // The server holds the graphs in memory: it syncs them itself.
            Some(server) => say(&format!("{}\n", ask_server_to_sync(&server).await?)),
            None => {
                let options = options()?;
                let scopes = synced_scopes(root);
                if scopes.is_empty() {
                    // Says how to set it up.
                    return Err(SyncError::NotSetUp {
                        what: Scope::storage_root(root).describe(),
                    }
                    .into());
                }
                let (_lock, store) = open_for_sync(settings, now)?;
                for scope in scopes {
                    let report = sync_live(&scope, &store, &options).map_err(|error| {
                        SyncCliError::SyncOf {
                            scope: scope.describe(),
                            error,
                        }
                    })?;
                    say(&kg_server::terminal::safe(&format!(
                        "{}:\n  {report}\n",
                        capitalised(&scope.describe())
                    )));
                }
                store.flush();
            }
        },
        SyncAction::Status => {
            say(&kg_server::terminal::safe(
                &status(&Scope::storage_root(root))?.to_string(),
            ));
            for scope in Scope::projects(root) {
                say(&kg_server::terminal::safe(&format!(
                    "\n{}",
                    status(&scope)?
                )));
            }
        }
        SyncAction::Off { project } => {
            let (scope, again) = match &project {
                None => (Scope::storage_root(root), String::new()),
                Some(path) => (
                    {
                        let (_lock, store) = open_for_sync(settings, now)?;
                        project_scope(settings, &store, path, now, Lookup::Existing)?
                    },
                    format!("--project {} ", shlex::try_quote(path).unwrap_or_default()),
                ),
            };
            if off(&scope)? {
                say(&format!(
                    "Sync is off for {}. The memory and its git history stay; turn it back on with `kg-memory sync setup {again}<remote>`.\n",
                    scope.describe()
                ));
            } else {
                say(&format!("Sync was not on for {}.\n", scope.describe()));
            }
        }
    }
    Ok(())
}

/// The storage root opened for a sync command: its lock taken, so no server starts
/// on it meanwhile (and one that holds it refuses the command), and its store opened,
/// through which what a remote brings is taken in as a server takes it in.
fn open_for_sync(settings: &Settings, now: f64) -> Result<(Option<RootLock>, Store), SyncCliError> {
    let root = &settings.storage_root;
    let lock = RootLock::acquire(root, "", 0).map_err(|held| SyncCliError::Served {
        who: held.who(),
        root: root.display().to_string(),
    })?;
    let mut config = settings.store_config();
    config.synced = true;
    let store = Store::open(config, now).map_err(|error| SyncCliError::Store {
        what: format!("cannot open the storage root {}", root.display()),
        error,
    })?;
    Ok((lock, store))
}

/// Whether a project's memory may start with this command (setup) or must exist
/// already (off).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Lookup {
    OpenOrCreate,
    Existing,
}

/// The repository of the project in folder `path`: its storage folder as the store
/// finds it (the store records this machine's folder for it as it does).
fn project_scope(
    settings: &Settings,
    store: &Store,
    path: &str,
    now: f64,
    lookup: Lookup,
) -> Result<Scope, SyncCliError> {
    let project_root = store
        .resolve_root(path)
        .map_err(|error| SyncCliError::Store {
            what: format!("{path} is not a project folder KG Memory can use"),
            error,
        })?;
    if lookup == Lookup::OpenOrCreate && !Path::new(&project_root).is_dir() {
        return Err(SyncCliError::NotAFolder(project_root));
    }
    // Only a project this machine knows, or one storage holds a graph of.
    let slot = store
        .existing_project_slot(&project_root, now)
        .map_err(|error| SyncCliError::Store {
            what: format!("KG Memory has no memory of {project_root}"),
            error,
        })?;
    let slug = slot.slug.clone().ok_or(SyncCliError::NoStorageFolder)?;
    // Its graph file exists from now on, even before its first node.
    if lookup == Lookup::OpenOrCreate {
        store.save(&slot).map_err(SyncCliError::Save)?;
    }
    store.flush();
    Ok(Scope::project(&settings.storage_root, &slug))
}

/// A project memory with a remote of its own leaves the storage root's repository:
/// ignored there, and no longer tracked if it was.
fn keep_out_of_storage_root(root: &Path, scope: &Scope) -> Result<(), SyncCliError> {
    let Some(slug) = &scope.project else {
        return Ok(());
    };
    ignore_in_storage_root(root, slug).map_err(io(format!(
        "cannot write {}",
        root.join(".gitignore").display()
    )))?;
    if root.join(".git").is_dir() {
        let folder = format!("projects/{slug}");
        // Not tracked (never committed) is fine.
        let _ = Git::new(root).ok(&["rm", "-r", "--cached", "--quiet", "--", &folder]);
    }
    Ok(())
}

/// "The storage root …" from "the storage root …".
fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// Have the server that holds the root sync now; its answer in words.
async fn ask_server_to_sync(server: &kg_server::root_lock::Holder) -> Result<String, SyncCliError> {
    let url = format!("http://{}:{}/api/sync/now", server.host, server.port);
    // Fetching and pushing may take the network's time, as git's own timeouts allow.
    let timeout = NETWORK_TIMEOUT * 3;
    let answer = kg_client::request("POST", &url, Some("{}"), timeout).await?;
    let body: serde_json::Value = serde_json::from_str(&answer.body).unwrap_or_default();
    let said = ["message", "detail"]
        .iter()
        .find_map(|key| body.get(key).and_then(|v| v.as_str()))
        .unwrap_or(&answer.body)
        .to_string();
    if (200..300).contains(&answer.status) {
        Ok(format!("Through the running server: {said}"))
    } else {
        Err(SyncCliError::ServerFailed(said))
    }
}

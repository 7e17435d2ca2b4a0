//! Temporary homes and storage roots, empty or built from the reference fixtures.

use std::fs;
use std::path::{Path, PathBuf};

/// A temporary folder named `prefix…`, canonical, outside `/tmp` where it can be:
/// under `KG_POLICY=reference` tool-event logic treats any path containing `/tmp/` as
/// noise, so homes live in `/dev/shm` when it exists.
pub fn temp_home(prefix: &str) -> (tempfile::TempDir, PathBuf) {
    let shm = Path::new("/dev/shm");
    let dir = if shm.is_dir() {
        tempfile::Builder::new().prefix(prefix).tempdir_in(shm)
    } else {
        tempfile::Builder::new().prefix(prefix).tempdir()
    }
    .expect("temporary home");
    let path = fs::canonicalize(dir.path()).expect("canonical home");
    (dir, path)
}

/// A temporary home folder (see [`temp_home`]), removed when dropped.
#[derive(Debug)]
pub struct TempHome {
    pub dir: tempfile::TempDir,
    pub path: PathBuf,
}

impl TempHome {
    /// An empty home whose folder name starts with `kg-core-test-`.
    pub fn new() -> TempHome {
        TempHome::named("kg-core-test-")
    }

    /// An empty home whose folder name starts with `prefix`.
    pub fn named(prefix: &str) -> TempHome {
        let (dir, path) = temp_home(prefix);
        TempHome { dir, path }
    }

    /// `<home>/storage`, the storage root.
    pub fn storage(&self) -> PathBuf {
        self.path.join("storage")
    }

    /// Copy a fixture storage root (`storage`, `storage_before`, … under the fixture
    /// folder) to [`storage`](Self::storage), putting this home where the files say
    /// `<HOME>`, and create the project folders the fixtures name with the files their
    /// nodes' touches name: the golden cases replay a project whose files are where its
    /// memory says (stale touches have tests of their own).
    pub fn with_fixture_storage(self, which: &str) -> TempHome {
        copy_substituting(
            &crate::golden::fixtures().join(which),
            &self.storage(),
            &self.path.to_string_lossy(),
        );
        for project in ["kgfix/alpha", "kgfix/beta", "kgfix/transcripts"] {
            fs::create_dir_all(self.path.join(project)).expect("project folder");
        }
        self.create_touched_files();
        self
    }

    /// Create (empty) every file a project graph's touches name inside this home.
    fn create_touched_files(&self) {
        let Ok(projects) = fs::read_dir(self.storage().join("projects")) else {
            return;
        };
        for dir in projects.flatten() {
            let Ok(text) = fs::read_to_string(dir.path().join("graph.json")) else {
                continue;
            };
            let graph: serde_json::Value = serde_json::from_str(&text).expect("fixture graph");
            let Some(root) = graph["_meta"]["project_path"].as_str() else {
                continue;
            };
            let nodes = graph["nodes"].as_object().into_iter().flatten();
            for node in nodes.map(|(_, n)| n) {
                for touch in node["touches"].as_array().into_iter().flatten() {
                    let Some(part) = touch.as_str().and_then(kg_core::path_part) else {
                        continue;
                    };
                    let Some(file) = part.resolve(&self.path, Some(Path::new(root))) else {
                        continue;
                    };
                    if file.starts_with(&self.path) && !file.exists() {
                        fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
                        fs::write(&file, "").expect("touched file");
                    }
                }
            }
        }
    }
}

impl Default for TempHome {
    fn default() -> TempHome {
        TempHome::new()
    }
}

/// Copy the tree `from` to `to`, replacing `<HOME>` by `home` in every file.
pub fn copy_substituting(from: &Path, to: &Path, home: &str) {
    fs::create_dir_all(to).expect("mkdir");
    for entry in fs::read_dir(from).expect("read fixture dir").flatten() {
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_substituting(&entry.path(), &target, home);
        } else {
            let text = fs::read_to_string(entry.path()).expect("fixture text");
            fs::write(target, text.replace("<HOME>", home)).expect("write fixture");
        }
    }
}

/// A store over `home`'s storage root, opened at `now`.
pub fn open_store(home: &TempHome, now: f64) -> kg_core::Store {
    open_store_with(home, now, kg_core::Policy::Ours)
}

/// A store over `home`'s storage root under `policy`, opened at `now`.
pub fn open_store_with(home: &TempHome, now: f64, policy: kg_core::Policy) -> kg_core::Store {
    let mut config = kg_core::StoreConfig::new(home.storage(), &home.path);
    config.policy = policy;
    kg_core::Store::open(config, now).expect("store opens")
}

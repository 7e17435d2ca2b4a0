//! Test scaffolding: temporary homes and storage roots built from the fixtures.

#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};

/// A temporary home folder. Tool-event logic treats any path containing `/tmp/` as
/// noise, so homes live in `/dev/shm` when it exists.
pub struct TempHome {
    pub dir: tempfile::TempDir,
    pub path: PathBuf,
}

impl TempHome {
    pub fn new() -> TempHome {
        let shm = Path::new("/dev/shm");
        let dir = if shm.is_dir() {
            tempfile::Builder::new()
                .prefix("kg-core-test-")
                .tempdir_in(shm)
        } else {
            tempfile::Builder::new().prefix("kg-core-test-").tempdir()
        }
        .expect("temporary home");
        let path = fs::canonicalize(dir.path()).expect("canonical home");
        TempHome { dir, path }
    }

    pub fn storage(&self) -> PathBuf {
        self.path.join("storage")
    }

    /// Copy a fixture storage root, putting this home where the files say `<HOME>`,
    /// and create the project folders the fixtures name.
    pub fn with_fixture_storage(self, which: &str) -> TempHome {
        copy_substituting(
            &crate::golden_match::fixtures().join(which),
            &self.storage(),
            &self.path.to_string_lossy(),
        );
        for project in ["kgfix/alpha", "kgfix/beta", "kgfix/transcripts"] {
            fs::create_dir_all(self.path.join(project)).expect("project folder");
        }
        self
    }
}

fn copy_substituting(from: &Path, to: &Path, home: &str) {
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

/// The frozen instant of the fixtures: 2026-11-20 12:00:00 UTC.
pub const T: f64 = 1_795_176_000.0;

pub fn open_store(home: &TempHome, now: f64) -> kg_core::Store {
    kg_core::Store::open(kg_core::StoreConfig::new(home.storage(), &home.path), now)
        .expect("store opens")
}

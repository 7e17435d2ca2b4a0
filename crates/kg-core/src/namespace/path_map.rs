//! This machine's project paths: which storage folder (slug) each project root of
//! this machine uses. The file is machine-local (sync never sends it): the same
//! project sits at `/home/ana/shop` on one machine and `/Users/ana/code/shop` on
//! another, and each machine's map points its own folder at the shared graph.

use crate::persist::{WriteMode, read_json_object, write_json_object};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The map as read from `project-paths.json`: resolved project root → slug.
#[derive(Debug, Default)]
pub(crate) struct PathMap {
    file: PathBuf,
    entries: Vec<(String, String)>,
    /// The file exists but cannot be read: it is never written over, so a damaged or
    /// hand-edited map is left for a person to look at.
    unreadable: bool,
}

impl PathMap {
    /// The map in `file`; a missing file is an empty map.
    pub(crate) fn load(file: &Path) -> PathMap {
        let mut map = PathMap {
            file: file.to_path_buf(),
            ..PathMap::default()
        };
        match read_json_object(file) {
            Ok(Some(object)) => {
                map.entries = object
                    .into_iter()
                    .filter_map(|(root, slug)| match slug {
                        Value::String(slug) => Some((root, slug)),
                        _ => None,
                    })
                    .collect();
            }
            Ok(None) => {}
            Err(e) => {
                log::warn!(
                    "cannot read this machine's project paths ({e}); they are left as they are and storage names are chosen without them"
                );
                map.unreadable = true;
            }
        }
        map
    }

    /// The slug this machine files `root` under.
    pub(crate) fn slug_of(&self, root: &str) -> Option<&str> {
        self.entries
            .iter()
            .find(|(r, _)| r == root)
            .map(|(_, slug)| slug.as_str())
    }

    /// The root of this machine that uses `slug`.
    pub(crate) fn root_of(&self, slug: &str) -> Option<&str> {
        self.entries
            .iter()
            .find(|(_, s)| s == slug)
            .map(|(root, _)| root.as_str())
    }

    /// Every binding, by slug (a slug bound twice keeps its first root).
    pub(crate) fn by_slug(&self) -> std::collections::HashMap<String, String> {
        let mut map = std::collections::HashMap::new();
        for (root, slug) in &self.entries {
            map.entry(slug.clone()).or_insert_with(|| root.clone());
        }
        map
    }

    /// Whether `root` is one of this machine's projects.
    pub(crate) fn binds_root(&self, root: &str) -> bool {
        self.slug_of(root).is_some()
    }

    /// File `root` under `slug` from now on; written at once (atomically) when that
    /// is news. A failed write is logged: the choice still holds for this process,
    /// and the next lookup makes the same one from what storage holds.
    pub(crate) fn bind(&mut self, root: &str, slug: &str) {
        if self.unreadable || self.slug_of(root) == Some(slug) {
            return;
        }
        self.entries.retain(|(r, _)| r != root);
        self.entries.push((root.to_string(), slug.to_string()));
        let object = self
            .entries
            .iter()
            .map(|(r, s)| (r.clone(), Value::String(s.clone())))
            .collect();
        if let Err(e) = write_json_object(&self.file, &object, 2, WriteMode::DURABLE) {
            log::warn!(
                "could not record that {} uses the storage folder '{slug}': {e}",
                crate::limits::for_log(root)
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bindings_survive_a_reload_and_an_unreadable_map_is_never_overwritten() {
        let dir = tempfile::tempdir().expect("dir");
        let file = dir.path().join("project-paths.json");
        let mut map = PathMap::load(&file);
        map.bind("/home/ana/shop", "shop");
        map.bind("/home/ana/oss/shop", "shop-1a2b3c4d");
        map.bind("/home/ana/shop", "shop");
        let again = PathMap::load(&file);
        assert_eq!(again.slug_of("/home/ana/shop"), Some("shop"));
        assert_eq!(again.root_of("shop-1a2b3c4d"), Some("/home/ana/oss/shop"));
        assert!(!again.binds_root("/home/ana/web"));

        std::fs::write(&file, "{not json").expect("damage");
        let mut damaged = PathMap::load(&file);
        damaged.bind("/home/ana/web", "web");
        assert_eq!(
            std::fs::read_to_string(&file).expect("read"),
            "{not json",
            "left for a person to look at"
        );
    }
}

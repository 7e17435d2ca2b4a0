//! Where Claude Code keeps its user configuration: `~/.claude/` and `~/.claude.json`,
//! or — when `CLAUDE_CONFIG_DIR` is set — that folder and the `.claude.json` inside it.
//! Measured with the Claude Code CLI: with `CLAUDE_CONFIG_DIR=/x` it reads hooks only
//! from `/x/settings.json`, keeps its MCP servers in `/x/.claude.json` and its plugins
//! under `/x/plugins/`, and never looks in `~/.claude` at all. Entries written anywhere
//! else are silently ignored, so the installer, `kg-memory status` and the hooks all
//! take these paths from here.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// Claude Code's variable that moves its whole user configuration.
pub const CLAUDE_CONFIG_DIR: &str = "CLAUDE_CONFIG_DIR";

/// Claude Code's user configuration, located once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaudeConfig {
    /// Settings (`settings.json`, where hooks live), plugins, session transcripts.
    pub dir: PathBuf,
    /// The user's MCP servers and per-project state.
    pub json: PathBuf,
    /// The user's home, to name files under it as `~/…` in messages.
    home: PathBuf,
}

impl ClaudeConfig {
    /// Where Claude Code run with this process's environment looks.
    pub fn from_env(home: &Path) -> ClaudeConfig {
        let dir = std::env::var_os(CLAUDE_CONFIG_DIR);
        // Claude Code resolves a relative folder against where it runs; so do we.
        let dir = dir
            .filter(|d| !d.is_empty())
            .map(|d| std::path::absolute(&d).unwrap_or_else(|_| PathBuf::from(d)));
        ClaudeConfig::new(home, dir.as_deref().map(Path::as_os_str))
    }

    /// Where Claude Code looks given `home` and the value of `CLAUDE_CONFIG_DIR` (unset or
    /// empty: the default place in `home`).
    pub fn new(home: &Path, config_dir: Option<&OsStr>) -> ClaudeConfig {
        match config_dir.filter(|d| !d.is_empty()).map(PathBuf::from) {
            Some(dir) => ClaudeConfig {
                json: dir.join(".claude.json"),
                dir,
                home: home.to_path_buf(),
            },
            None => ClaudeConfig::in_home(home),
        }
    }

    /// The default place: `<home>/.claude/` and `<home>/.claude.json`.
    pub fn in_home(home: &Path) -> ClaudeConfig {
        ClaudeConfig {
            dir: home.join(".claude"),
            json: home.join(".claude.json"),
            home: home.to_path_buf(),
        }
    }

    /// The user's settings file, where the installer's hooks go.
    pub fn settings(&self) -> PathBuf {
        self.dir.join("settings.json")
    }

    /// Claude Code's record of installed plugins.
    pub fn installed_plugins(&self) -> PathBuf {
        self.dir.join("plugins").join("installed_plugins.json")
    }

    /// `path` for a message: `~/…` under the home folder, else in full.
    pub fn show(&self, path: &Path) -> String {
        home_relative(path, &self.home)
    }
}

/// `path` for a message: `~/…` under `home`, else in full.
pub fn home_relative(path: &Path, home: &Path) -> String {
    match path.strip_prefix(home) {
        Ok(rest) if !home.as_os_str().is_empty() => format!("~/{}", rest.display()),
        _ => path.display().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_variable_moves_both_the_folder_and_the_json() {
        let home = Path::new("/home/ann");
        let plain = ClaudeConfig::new(home, None);
        assert_eq!(plain, ClaudeConfig::in_home(home));
        assert_eq!(
            plain.settings(),
            Path::new("/home/ann/.claude/settings.json")
        );
        assert_eq!(plain.json, Path::new("/home/ann/.claude.json"));
        assert_eq!(plain.show(&plain.json), "~/.claude.json");
        assert_eq!(
            ClaudeConfig::new(home, Some(OsStr::new(""))),
            plain,
            "empty is unset"
        );

        let moved = ClaudeConfig::new(home, Some(OsStr::new("/srv/claude")));
        assert_eq!(moved.settings(), Path::new("/srv/claude/settings.json"));
        assert_eq!(moved.json, Path::new("/srv/claude/.claude.json"));
        assert_eq!(
            moved.installed_plugins(),
            Path::new("/srv/claude/plugins/installed_plugins.json")
        );
        assert_eq!(moved.show(&moved.settings()), "/srv/claude/settings.json");
        let in_home = ClaudeConfig::new(home, Some(OsStr::new("/home/ann/.claude-work")));
        assert_eq!(in_home.show(&in_home.json), "~/.claude-work/.claude.json");
    }
}

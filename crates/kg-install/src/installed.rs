//! Which server the installed wiring reaches, read back from Claude Code's own files:
//! the port and storage root in the installer's hooks, or the `KG_HTTP_PORT` /
//! `KG_STORAGE_ROOT` a person put in the `env` of Claude Code's settings for the plugin.
//! Plain `kg-memory status` asks that server, so it never reports "no server" for an
//! install made with `--port`/`--storage` while that server runs.

use crate::claude_config::ClaudeConfig;
use crate::courier::Courier;
use crate::wiring::{enabled_plugin, installer_hooks, settings_env};
use std::path::{Path, PathBuf};

/// The server the installed wiring reaches, when it is not the default one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstalledTarget {
    pub port: Option<u16>,
    pub storage: Option<PathBuf>,
    /// Where that was read, in words (`the hooks in ~/.claude/settings.json`).
    pub source: String,
}

impl InstalledTarget {
    /// The first courier that names a port or a storage root of its own (an install
    /// with `--port`/`--storage`), read in `source`.
    pub(crate) fn of_couriers<'a>(
        couriers: impl IntoIterator<Item = &'a Courier>,
        source: impl FnOnce() -> String,
    ) -> Option<InstalledTarget> {
        let courier = couriers.into_iter().find(|c| c.names_its_server())?;
        Some(InstalledTarget {
            port: courier.port,
            storage: courier.storage.clone(),
            source: source(),
        })
    }
}

/// Where the installer's hooks (or, with the plugin enabled, the settings' `env`)
/// point for sessions in `project`; `None` when they name neither a port nor a
/// storage root of their own.
pub fn installed_target(claude: &ClaudeConfig, project: Option<&Path>) -> Option<InstalledTarget> {
    let hooks = installer_hooks(claude, project);
    if let Some(hook) = hooks.iter().find(|h| h.courier.names_its_server()) {
        return InstalledTarget::of_couriers([&hook.courier], || {
            format!("the hooks in {}", claude.show(&hook.file))
        });
    }
    enabled_plugin(claude, project)?;
    let files = crate::wiring::settings_files(claude, project);
    let env = settings_env(&files);
    let port = env.get("KG_HTTP_PORT").and_then(|p| p.trim().parse().ok());
    let storage = env
        .get("KG_STORAGE_ROOT")
        .filter(|s| !s.is_empty())
        .map(PathBuf::from);
    (port.is_some() || storage.is_some()).then(|| InstalledTarget {
        port,
        storage,
        source: "KG_HTTP_PORT / KG_STORAGE_ROOT in the env of Claude Code's settings, which the plugin uses".to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::setup;
    use crate::{Client, apply, plan_install};
    use std::fs;

    #[test]
    fn an_install_for_another_port_and_root_is_found_by_its_hooks() {
        let home = tempfile::tempdir().expect("home");
        let mut s = setup(home.path());
        assert_eq!(installed_target(&s.claude, None), None, "nothing installed");
        s.settings.port = 9123;
        s.settings.storage_root = home.path().join("work memory");
        apply(
            &plan_install(Client::ClaudeCode, &s).expect("plan"),
            1.0,
            true,
        )
        .expect("install");
        let found = installed_target(&s.claude, None).expect("found");
        assert_eq!(found.port, Some(9123));
        assert_eq!(found.storage, Some(home.path().join("work memory")));
        assert_eq!(found.source, "the hooks in ~/.claude/settings.json");
    }

    #[test]
    fn the_plugins_port_comes_from_the_settings_env() {
        let home = tempfile::tempdir().expect("home");
        let s = setup(home.path());
        fs::create_dir_all(home.path().join(".claude/plugins")).expect("mkdir");
        fs::write(
            home.path().join(".claude/plugins/installed_plugins.json"),
            r#"{"version": 2, "plugins": {"knowledge-graph@kg-memory": [{"scope": "user", "installPath": "/x"}]}}"#,
        )
        .expect("write");
        let settings = home.path().join(".claude/settings.json");
        fs::write(
            &settings,
            r#"{"enabledPlugins": {"knowledge-graph@kg-memory": true}, "env": {"KG_HTTP_PORT": "9124"}}"#,
        )
        .expect("write");
        let found = installed_target(&s.claude, None).expect("found");
        assert_eq!((found.port, found.storage), (Some(9124), None));
        // Not enabled: the settings' variables are someone else's business.
        fs::write(&settings, r#"{"env": {"KG_HTTP_PORT": "9124"}}"#).expect("write");
        assert_eq!(installed_target(&s.claude, None), None);
    }
}

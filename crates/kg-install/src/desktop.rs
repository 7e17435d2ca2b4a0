//! Claude Desktop's entry: where its configuration file lives, and the stdio bridge
//! (`kg-memory stdio`) it starts.

use crate::Setup;
use crate::courier::is_kg_memory;
use kg_server::config::{DEFAULT_HOST, DEFAULT_PORT};
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};

/// The name of the MCP server `install claude-desktop` registers.
pub(crate) const DESKTOP_SERVER: &str = "knowledge-graph";

pub(crate) fn desktop_config(home: &Path) -> PathBuf {
    #[cfg(target_os = "macos")]
    let dir = home.join("Library/Application Support/Claude");
    #[cfg(windows)]
    let dir = std::env::var_os("APPDATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| home.join("AppData/Roaming"))
        .join("Claude");
    #[cfg(not(any(target_os = "macos", windows)))]
    let dir = home.join(".config/Claude");
    dir.join("claude_desktop_config.json")
}

/// An entry that runs `kg-memory stdio` (what `install claude-desktop` writes).
pub(crate) fn is_desktop_entry(entry: &Value) -> bool {
    entry["command"].as_str().is_some_and(is_kg_memory) && entry["args"] == json!(["stdio"])
}

pub(crate) fn desktop_entry(setup: &Setup) -> Value {
    let mut entry = json!({"command": setup.exe.to_string_lossy(), "args": ["stdio"]});
    // Claude Desktop starts the bridge without a shell: its environment carries them.
    let s = &setup.settings;
    let mut env = Map::new();
    if s.host != DEFAULT_HOST {
        env.insert("KG_HTTP_HOST".into(), json!(s.host));
    }
    if s.port != DEFAULT_PORT {
        env.insert("KG_HTTP_PORT".into(), json!(s.port.to_string()));
    }
    if s.storage_root != kg_server::config::default_storage_root(&s.home) {
        env.insert(
            "KG_STORAGE_ROOT".into(),
            json!(s.storage_root.to_string_lossy()),
        );
    }
    if !env.is_empty() {
        entry["env"] = Value::Object(env);
    }
    entry
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::setup;
    use crate::{Client, plan_install};
    use std::fs;

    #[test]
    fn desktop_needs_its_folder_and_registers_the_stdio_bridge() {
        let home = tempfile::tempdir().expect("home");
        let s = setup(home.path());
        assert!(
            plan_install(Client::ClaudeDesktop, &s).is_err(),
            "no Claude Desktop folder"
        );
        let config = desktop_config(home.path());
        fs::create_dir_all(config.parent().expect("dir")).expect("mkdir");
        let plan = plan_install(Client::ClaudeDesktop, &s).expect("plan");
        let v: Value = serde_json::from_str(plan[0].after.as_deref().unwrap_or("")).expect("json");
        assert_eq!(v["mcpServers"]["knowledge-graph"]["args"], json!(["stdio"]));
        assert!(v["mcpServers"]["knowledge-graph"].get("env").is_none());
    }
}

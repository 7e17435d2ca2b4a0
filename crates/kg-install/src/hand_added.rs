//! A `kg` MCP server entry someone added by hand (`claude mcp add --transport http kg
//! http://127.0.0.1:8765/`) has exactly the shape `install claude-code` writes. Install
//! never takes it over: one pointing where this install's server listens is kept as it
//! is (and noted, so uninstall leaves it too); one pointing elsewhere stops the install
//! with the two ways on. An entry is taken for an earlier install's own when our hooks
//! are wired beside it, which only the installer does.

use crate::InstallError;
use crate::Setup;
use crate::claude_code::{CODE_SERVER, code_entry, is_code_entry};
use crate::courier::courier_hooks;
use serde_json::{Map, Value};

/// The install record's key for "the MCP server entry was there before us".
pub(crate) const HAND_ADDED: &str = "mcpServerAddedByHand";

/// What install does with the `kg` entry already in `~/.claude.json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Existing {
    /// None there, or an earlier install's: install adds or updates its own.
    Ours,
    /// Added by hand and already pointing at this install's server: left as it is.
    KeptAsAdded,
}

/// Do the settings hold a `kg-memory hook` courier, which only the installer writes?
pub(crate) fn has_our_hooks(settings: &Map<String, Value>) -> bool {
    courier_hooks(settings).next().is_some()
}

/// Whether the install record says the entry was added by hand.
pub(crate) fn recorded_as_hand_added(record: &Map<String, Value>) -> bool {
    record.get(HAND_ADDED) == Some(&Value::Bool(true))
}

/// Whose the `kg` entry in `claude_json` is; an error (nothing changed) when it was
/// added by hand and points somewhere other than this install's server.
pub(crate) fn existing_entry(
    claude_json: &Map<String, Value>,
    settings: &Map<String, Value>,
    record: &Map<String, Value>,
    setup: &Setup,
) -> Result<Existing, InstallError> {
    let Some(entry) = claude_json
        .get("mcpServers")
        .and_then(|servers| servers.get(CODE_SERVER))
    else {
        return Ok(Existing::Ours);
    };
    // Someone else's shape is refused by `add_server` with its own words.
    if !is_code_entry(entry) {
        return Ok(Existing::Ours);
    }
    let by_hand = recorded_as_hand_added(record) || !has_our_hooks(settings);
    if !by_hand {
        return Ok(Existing::Ours);
    }
    if *entry == code_entry(setup) {
        return Ok(Existing::KeptAsAdded);
    }
    Err(added_by_hand_elsewhere(
        &setup.claude.json,
        "`claude mcp add`",
        entry["url"].as_str(),
        "claude-code",
        &format!("claude mcp remove -s user {CODE_SERVER}"),
        &setup.url(),
    ))
}

/// The refusal for a `kg` entry in `file` that the person added (`added_with`) and
/// that reaches another server than this install's (`ours`): nothing is changed, and
/// both ways on are named — install for that server, or `remove` the entry.
pub(crate) fn added_by_hand_elsewhere(
    file: &std::path::Path,
    added_with: &str,
    theirs: Option<&str>,
    agent: &str,
    remove: &str,
    ours: &str,
) -> InstallError {
    let reaches = theirs.map_or("has no url".to_string(), |url| format!("points at {url}"));
    InstallError::NotOurs(format!(
        "the MCP server \"kg\" in {} was added by hand ({added_with}) and {reaches}, while this install's server listens at {ours}. Nothing was changed. Either install for that server (`kg-memory install {agent} --port N` with its port, and --storage if it serves another root), or remove your entry (`{remove}`) and run this again so the installer manages it.",
        file.display()
    ))
}

#[cfg(test)]
mod tests {
    use crate::tests::setup;
    use crate::{Client, apply, plan_install, plan_uninstall};
    use serde_json::{Value, json};
    use std::fs;

    fn claude_json(home: &std::path::Path) -> Value {
        let text = fs::read_to_string(home.join(".claude.json")).expect("claude.json");
        serde_json::from_str(&text).expect("json")
    }

    #[test]
    fn a_hand_added_entry_is_kept_by_install_and_left_by_uninstall() {
        let home = tempfile::tempdir().expect("home");
        let s = setup(home.path());
        // What `claude mcp add --transport http kg http://127.0.0.1:8765/` writes.
        let by_hand = "{\n  \"mcpServers\": {\n    \"kg\": {\n      \"type\": \"http\",\n      \"url\": \"http://127.0.0.1:8765/\"\n    }\n  }\n}";
        fs::write(home.path().join(".claude.json"), by_hand).expect("write");
        let changes = plan_install(Client::ClaudeCode, &s).expect("plan");
        let said = crate::describe(&changes, true);
        assert!(
            said.contains("keep the MCP server \"kg\" you added by hand"),
            "{said}"
        );
        apply(&changes, 1.0, true).expect("install");
        assert_eq!(
            fs::read_to_string(home.path().join(".claude.json")).expect("read"),
            by_hand,
            "the hand-added entry is untouched"
        );
        // A second install still treats it as the person's (our hooks are now wired).
        let again = plan_install(Client::ClaudeCode, &s).expect("plan again");
        apply(&again, 2.0, true).expect("install again");
        let changes = plan_uninstall(Client::ClaudeCode, &s).expect("plan uninstall");
        apply(&changes, 3.0, false).expect("uninstall");
        assert_eq!(
            fs::read_to_string(home.path().join(".claude.json")).expect("read"),
            by_hand,
            "uninstall leaves the person's entry"
        );
        let settings = fs::read_to_string(home.path().join(".claude/settings.json"));
        assert!(
            settings.map_or(true, |t| !t.contains("kg-memory")),
            "our hooks are gone"
        );
    }

    #[test]
    fn a_hand_added_entry_elsewhere_stops_the_install_with_both_ways_on() {
        let home = tempfile::tempdir().expect("home");
        let s = setup(home.path());
        let by_hand =
            json!({"mcpServers": {"kg": {"type": "http", "url": "http://127.0.0.1:9999/"}}});
        fs::write(home.path().join(".claude.json"), by_hand.to_string()).expect("write");
        let err = plan_install(Client::ClaudeCode, &s)
            .expect_err("refused")
            .to_string();
        assert!(err.contains("added by hand"), "{err}");
        assert!(err.contains("http://127.0.0.1:9999/"), "{err}");
        assert!(err.contains("Nothing was changed"), "{err}");
        assert!(err.contains("claude mcp remove -s user kg"), "{err}");
        assert_eq!(claude_json(home.path()), by_hand);
        assert!(!home.path().join(".claude/settings.json").exists());
    }

    #[test]
    fn an_earlier_installs_entry_is_still_brought_up_to_date_and_removed() {
        let home = tempfile::tempdir().expect("home");
        let s = setup(home.path());
        apply(
            &plan_install(Client::ClaudeCode, &s).expect("plan"),
            1.0,
            true,
        )
        .expect("install");
        // Installed again for another port: the installer's own entry follows.
        let mut other = setup(home.path());
        other.settings.port = 9123;
        let changes = plan_install(Client::ClaudeCode, &other).expect("plan");
        apply(&changes, 2.0, true).expect("reinstall");
        assert_eq!(
            claude_json(home.path())["mcpServers"]["kg"]["url"],
            "http://127.0.0.1:9123/"
        );
        apply(
            &plan_uninstall(Client::ClaudeCode, &other).expect("plan"),
            3.0,
            false,
        )
        .expect("uninstall");
        let left = fs::read_to_string(home.path().join(".claude.json")).unwrap_or_default();
        assert!(!left.contains("\"kg\""), "{left}");
    }
}

//! Claude Code's entries: the HTTP MCP server in `~/.claude.json` and the courier hooks
//! in `~/.claude/settings.json` (or both in `$CLAUDE_CONFIG_DIR`; see `claude_config`).

use crate::InstallError;
use crate::Setup;
use crate::courier::{HOOK_EVENTS, courier_command, hook_command};
use crate::error::FIX_BY_HAND;
use crate::files::object;
use crate::servers::loopback_port;
use serde_json::{Map, Value, json};

/// The name of the MCP server `install claude-code` registers (and the plugin too).
pub(crate) const CODE_SERVER: &str = "kg";

/// An entry of the shape `install claude-code` writes, to any loopback port: safe to
/// replace or remove, as it can only be ours (or the same thing typed by hand).
pub(crate) fn is_code_entry(entry: &Value) -> bool {
    entry.as_object().is_some_and(|e| {
        e.len() == 2
            && e.get("type") == Some(&json!("http"))
            && e.get("url")
                .and_then(Value::as_str)
                .is_some_and(|u| loopback_port(u).is_some())
    })
}

pub(crate) fn code_entry(setup: &Setup) -> Value {
    json!({"type": "http", "url": setup.url()})
}

fn hook_entry(setup: &Setup, event: &str, matcher: Option<&str>, via: Option<&str>) -> Value {
    let mut entry = Map::new();
    if let Some(m) = matcher {
        entry.insert("matcher".into(), Value::String(m.into()));
    }
    entry.insert(
        "hooks".into(),
        json!([{"type": "command", "command": hook_command(setup, event, via)}]),
    );
    Value::Object(entry)
}

/// Take every `kg-memory hook` command out of one event's list of hook groups, except
/// in a group equal to `keep`; groups left empty go. Returns the commands taken out.
fn strip_couriers(list: &mut Vec<Value>, keep: Option<&Value>) -> Vec<String> {
    let mut removed = Vec::new();
    list.retain_mut(|group| {
        if Some(&*group) == keep {
            return true;
        }
        let Some(Value::Array(hooks)) = group.get_mut("hooks") else {
            return true;
        };
        let before = hooks.len();
        hooks.retain(|h| match courier_command(h) {
            Some(command) => {
                removed.push(command.to_string());
                false
            }
            None => true,
        });
        !(hooks.is_empty() && before > 0)
    });
    removed
}

pub(crate) fn add_hooks(
    settings: &mut Map<String, Value>,
    setup: &Setup,
    summary: &mut Vec<String>,
) -> Result<(), InstallError> {
    let entries = HOOK_EVENTS
        .iter()
        .map(|(event, name, matcher)| (*event, hook_entry(setup, name, *matcher, None)));
    merge_hooks(settings, entries, summary)
}

/// The courier hooks of an agent whose hooks file has Claude Code's shape (Codex's
/// `hooks.json`): its event name, our courier's, and the tool matcher, per hook; `via`
/// tells the courier which agent runs it.
pub(crate) fn add_hook_events(
    settings: &mut Map<String, Value>,
    setup: &Setup,
    events: &[(&str, &str, Option<&str>)],
    via: Option<&str>,
    summary: &mut Vec<String>,
) -> Result<(), InstallError> {
    let entries = events
        .iter()
        .map(|(event, name, matcher)| (*event, hook_entry(setup, name, *matcher, via)));
    merge_hooks(settings, entries, summary)
}

/// Put each `(event, hook group)` in the settings' `hooks`, replacing the courier hooks
/// an earlier install left there. Claude Code and Gemini CLI share this shape.
pub(crate) fn merge_hooks<'a>(
    settings: &mut Map<String, Value>,
    entries: impl IntoIterator<Item = (&'a str, Value)>,
    summary: &mut Vec<String>,
) -> Result<(), InstallError> {
    let hooks = object(settings, "hooks")?;
    for (event, entry) in entries {
        let list = hooks.entry(event.to_string()).or_insert_with(|| json!([]));
        let list = list.as_array_mut().ok_or_else(|| {
            InstallError::ByHand(format!("hooks.{event} is not a list{FIX_BY_HAND}"))
        })?;
        // An earlier install's hooks (another binary, port or storage root) are
        // replaced: two couriers would answer every event twice.
        let replaced = strip_couriers(list, Some(&entry));
        if !list.contains(&entry) {
            list.push(entry);
            summary.push(match replaced.first() {
                Some(old) => format!("replace {event} hook (was `{old}`)"),
                None => format!("add {event} hook"),
            });
        } else if !replaced.is_empty() {
            summary.push(format!(
                "remove a second {event} hook (`{}`)",
                replaced.join("`, `")
            ));
        }
    }
    Ok(())
}

pub(crate) fn remove_hooks(settings: &mut Map<String, Value>, summary: &mut Vec<String>) {
    let Some(Value::Object(hooks)) = settings.get_mut("hooks") else {
        return;
    };
    let events: Vec<String> = hooks.keys().cloned().collect();
    for event in events {
        if let Some(Value::Array(list)) = hooks.get_mut(&event) {
            if !strip_couriers(list, None).is_empty() {
                summary.push(format!("remove {event} hook"));
            }
            if list.is_empty() {
                hooks.shift_remove(&event);
            }
        }
    }
    if hooks.is_empty() {
        settings.shift_remove("hooks");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::setup;
    use crate::{Client, apply, plan_install, plan_uninstall};
    use std::fs;
    use std::path::PathBuf;

    #[test]
    fn a_second_install_replaces_its_own_hooks_and_uninstall_finds_them_by_shape() {
        let home = tempfile::tempdir().expect("home");
        let mut s = setup(home.path());
        apply(
            &plan_install(Client::ClaudeCode, &s).expect("plan"),
            1.0,
            true,
        )
        .expect("first");
        s.exe = PathBuf::from("/usr/local/bin/kg-memory");
        s.settings.port = 9200;
        let plan = plan_install(Client::ClaudeCode, &s).expect("plan");
        assert!(
            plan[0].summary[0].starts_with("point MCP server \"kg\" at http://127.0.0.1:9200/"),
            "{:?}",
            plan[0].summary
        );
        assert!(
            plan[1].summary[0].starts_with(
                "replace SessionStart hook (was `/opt/kg/bin/kg-memory hook session-start`)"
            ),
            "{:?}",
            plan[1].summary
        );
        apply(&plan, 2.0, true).expect("second");
        let settings: Value = serde_json::from_str(
            &fs::read_to_string(home.path().join(".claude/settings.json")).expect("read"),
        )
        .expect("json");
        for (event, _, _) in HOOK_EVENTS {
            assert_eq!(settings["hooks"][event].as_array().map(Vec::len), Some(1));
        }
        // Uninstall with default settings still finds them. (The second install backed
        // up the first one's files, so emptied files stay rather than vanish.)
        let plain = setup(home.path());
        apply(
            &plan_uninstall(Client::ClaudeCode, &plain).expect("plan"),
            3.0,
            false,
        )
        .expect("uninstall");
        for file in [".claude.json", ".claude/settings.json"] {
            assert_eq!(
                fs::read_to_string(home.path().join(file)).expect("read"),
                "{}\n"
            );
        }
    }
}

//! `install claude-code --disable-auto-memory`: turn Claude Code's own auto-memory off,
//! noting the user's value in a file of ours so that uninstall puts exactly that back.

use serde_json::{Map, Value};

/// Claude Code's setting for its built-in auto-memory (documented in its settings
/// schema: "When false, Claude will not read from or write to the auto-memory
/// directory").
pub const AUTO_MEMORY: &str = "autoMemoryEnabled";

/// Turn auto-memory off, remembering the user's value (absent, or what they set) in the
/// install `record` (a file of ours) so that uninstall puts exactly that back.
pub(crate) fn disable_auto_memory(
    settings: &mut Map<String, Value>,
    record: &mut Map<String, Value>,
    summary: &mut Vec<String>,
    record_summary: &mut Vec<String>,
) {
    let current = settings.get(AUTO_MEMORY).cloned();
    if current == Some(Value::Bool(false)) {
        // Already off, by the user or by an earlier install: nothing to note.
        return;
    }
    settings.insert(AUTO_MEMORY.into(), Value::Bool(false));
    summary.push(format!(
        "turn off Claude Code's auto-memory ({AUTO_MEMORY}: false)"
    ));
    let mut previous = Map::new();
    if let Some(value) = current {
        previous.insert("previous".into(), value);
    }
    record.insert(AUTO_MEMORY.into(), Value::Object(previous));
    record_summary.push(format!(
        "remember your {AUTO_MEMORY} setting, for `kg-memory uninstall claude-code` to restore"
    ));
}

/// Put back the auto-memory setting install turned off — unless the user changed it
/// since, which wins.
pub(crate) fn restore_auto_memory(
    settings: &mut Map<String, Value>,
    record: &Map<String, Value>,
    summary: &mut Vec<String>,
) {
    let Some(Value::Object(saved)) = record.get(AUTO_MEMORY) else {
        return;
    };
    if settings.get(AUTO_MEMORY) != Some(&Value::Bool(false)) {
        return;
    }
    match saved.get("previous") {
        Some(value) => {
            settings.insert(AUTO_MEMORY.into(), value.clone());
            summary.push(format!("restore {AUTO_MEMORY}: {value}"));
        }
        None => {
            settings.shift_remove(AUTO_MEMORY);
            summary.push(format!(
                "remove {AUTO_MEMORY} (back to Claude Code's default: on)"
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Setup;
    use crate::tests::setup;
    use crate::{Client, apply, plan_install, plan_uninstall};
    use serde_json::json;
    use std::fs;
    use std::path::PathBuf;

    fn record(s: &Setup) -> PathBuf {
        s.record_path()
    }

    #[test]
    fn auto_memory_is_turned_off_and_the_users_own_value_comes_back() {
        for (label, users) in [
            ("absent", None),
            ("true", Some(json!(true))),
            ("odd", Some(json!("yes"))),
        ] {
            let home = tempfile::tempdir().expect("home");
            let mut s = setup(home.path());
            s.disable_auto_memory = true;
            fs::create_dir_all(home.path().join(".claude")).expect("mkdir");
            let mut original = json!({"theme": "dark"});
            if let Some(v) = &users {
                original[AUTO_MEMORY] = v.clone();
            }
            let text = format!(
                "{}\n",
                serde_json::to_string_pretty(&original).expect("json")
            );
            let path = home.path().join(".claude/settings.json");
            fs::write(&path, &text).expect("write");
            let plan = plan_install(Client::ClaudeCode, &s).expect("plan");
            assert!(
                plan[1].summary.iter().any(|l| l.contains("auto-memory")),
                "{label}: {:?}",
                plan[1].summary
            );
            apply(&plan, 1.0, true).expect("install");
            let now: Value =
                serde_json::from_str(&fs::read_to_string(&path).expect("read")).expect("json");
            assert_eq!(now[AUTO_MEMORY], json!(false), "{label}");
            assert!(record(&s).is_file(), "{label}: the user's value is noted");

            apply(
                &plan_uninstall(Client::ClaudeCode, &s).expect("plan"),
                2.0,
                false,
            )
            .expect("uninstall");
            assert_eq!(fs::read_to_string(&path).expect("read"), text, "{label}");
            assert!(!record(&s).exists(), "{label}");
        }
    }

    #[test]
    fn auto_memory_changed_by_the_user_after_install_is_left_alone() {
        let home = tempfile::tempdir().expect("home");
        let mut s = setup(home.path());
        s.disable_auto_memory = true;
        apply(
            &plan_install(Client::ClaudeCode, &s).expect("plan"),
            1.0,
            true,
        )
        .expect("install");
        let path = home.path().join(".claude/settings.json");
        let mut v: Value =
            serde_json::from_str(&fs::read_to_string(&path).expect("read")).expect("json");
        v[AUTO_MEMORY] = json!(true);
        fs::write(&path, v.to_string()).expect("write");
        apply(
            &plan_uninstall(Client::ClaudeCode, &s).expect("plan"),
            2.0,
            false,
        )
        .expect("uninstall");
        let v: Value =
            serde_json::from_str(&fs::read_to_string(&path).expect("read")).expect("json");
        assert_eq!(v, json!({AUTO_MEMORY: true}));
    }
}

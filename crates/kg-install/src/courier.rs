//! The courier: the `kg-memory hook <event>` command Claude Code runs at each event.
//! The installer writes it; it is read back (whoever wrote it) to find our hooks in any
//! settings file and to know which server they reach.

use crate::Setup;
use kg_server::launch::{server_flags, shell_line};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// The tools whose results the PostToolUse hook sees: file reads and edits (file
/// recall), shell commands that read, and web fetches and searches (capture nudges).
/// The plugin's `hooks/hooks.json` names the same list.
pub(crate) const POST_TOOL_MATCHER: &str =
    "Read|Edit|Write|MultiEdit|NotebookEdit|Bash|WebFetch|WebSearch";

/// Claude Code's hook event, our courier's event name, and the tool matcher.
pub(crate) const HOOK_EVENTS: [(&str, &str, Option<&str>); 3] = [
    ("SessionStart", "session-start", None),
    ("UserPromptSubmit", "prompt-submit", None),
    ("PostToolUse", "post-tool", Some(POST_TOOL_MATCHER)),
];

/// Claude Code's name for one of our courier events (`session-start` → `SessionStart`).
pub fn claude_event(courier_event: &str) -> Option<&'static str> {
    HOOK_EVENTS
        .iter()
        .find(|(_, ours, _)| *ours == courier_event)
        .map(|(theirs, _, _)| *theirs)
}

/// The courier command line for `event`; `via` names the agent when it is not Claude
/// Code (`--via gemini`), so the hook answers in that agent's words.
pub(crate) fn hook_command(setup: &Setup, event: &str, via: Option<&str>) -> String {
    let mut words: Vec<std::ffi::OsString> =
        vec![setup.exe.clone().into(), "hook".into(), event.into()];
    if let Some(via) = via {
        words.extend(["--via".into(), via.into()]);
    }
    words.extend(server_flags(&setup.settings));
    shell_line(words)
}

/// A `kg-memory … hook …` command line, read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Courier {
    /// The program as written (a path, or a name looked up on `PATH`).
    pub program: String,
    pub event: Option<String>,
    pub host: Option<String>,
    pub port: Option<u16>,
    pub storage: Option<PathBuf>,
    /// `--via plugin`: the knowledge-graph plugin's hooks.
    pub via_plugin: bool,
}

impl Courier {
    /// Read a hook command: `None` unless it runs `kg-memory hook`.
    pub fn parse(command: &str) -> Option<Courier> {
        let words = shlex::split(command)?;
        // `KG_HTTP_PORT=9123 kg-memory hook …`, as one might write it by hand.
        let assignment = |w: &String| {
            w.split_once('=').is_some_and(|(name, _)| {
                !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            })
        };
        let start = words.iter().take_while(|w| assignment(w)).count();
        let (program, args) = words[start..].split_first()?;
        if !is_kg_memory(program) {
            return None;
        }
        let mut courier = Courier {
            program: program.clone(),
            event: None,
            host: None,
            port: None,
            storage: None,
            via_plugin: false,
        };
        // The variables the hook would see, then its flags over them.
        for (name, value) in words[..start].iter().filter_map(|w| w.split_once('=')) {
            match name {
                "KG_HTTP_HOST" => courier.host = Some(value.to_string()),
                "KG_HTTP_PORT" => courier.port = value.parse().ok(),
                "KG_STORAGE_ROOT" => courier.storage = Some(PathBuf::from(value)),
                _ => {}
            }
        }
        let mut hook = false;
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            let (flag, inline) = match arg.split_once('=') {
                Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
                _ => (arg.as_str(), None),
            };
            let mut value = || inline.clone().or_else(|| args.next().cloned());
            match flag {
                "--host" => courier.host = value(),
                "--port" => courier.port = value().and_then(|p| p.parse().ok()),
                "--storage" => courier.storage = value().map(PathBuf::from),
                "--via" => courier.via_plugin = value().as_deref() == Some("plugin"),
                "hook" if !hook => hook = true,
                _ if hook && courier.event.is_none() && !arg.starts_with('-') => {
                    courier.event = Some(arg.clone());
                }
                _ => {}
            }
        }
        hook.then_some(courier)
    }

    /// It names a port or a storage root of its own (an install with `--port` or
    /// `--storage`), not the defaults.
    pub(crate) fn names_its_server(&self) -> bool {
        self.port.is_some() || self.storage.is_some()
    }

    /// The program exists (a bare name is taken to be on `PATH`).
    pub(crate) fn runnable(&self) -> bool {
        !self.program.contains(['/', '\\']) || Path::new(&self.program).is_file()
    }
}

/// `kg-memory` or `kg-memory.exe`, by any path.
pub(crate) fn is_kg_memory(program: &str) -> bool {
    let name = program.rsplit(['/', '\\']).next().unwrap_or(program);
    name == "kg-memory" || name.eq_ignore_ascii_case("kg-memory.exe")
}

/// The command of a command hook that runs `kg-memory hook`.
pub(crate) fn courier_command(hook: &Value) -> Option<&str> {
    let command = hook["command"].as_str()?;
    (hook["type"] == "command" && Courier::parse(command).is_some()).then_some(command)
}

/// A `kg-memory hook` command hook found in an agent's settings.
pub(crate) struct CourierHook<'a> {
    /// The agent's event name (`SessionStart`, `BeforeAgent`, …).
    pub event: &'a str,
    /// Where it sits: its group in the event's list, and its place in that group's
    /// `hooks` (Codex names its trust records by both).
    pub group: usize,
    pub index: usize,
    pub command: &'a str,
}

/// Every courier hook in a settings object's `hooks`, in the shape Claude Code, Codex
/// and Gemini CLI share: event → list of groups → each group's `hooks`.
pub(crate) fn courier_hooks(
    settings: &Map<String, Value>,
) -> impl Iterator<Item = CourierHook<'_>> {
    let events = match settings.get("hooks") {
        Some(Value::Object(events)) => Some(events),
        _ => None,
    };
    events.into_iter().flatten().flat_map(|(event, groups)| {
        let groups = groups.as_array().into_iter().flatten().enumerate();
        groups.flat_map(move |(group, g)| {
            let hooks = g["hooks"].as_array().into_iter().flatten().enumerate();
            hooks.filter_map(move |(index, hook)| {
                courier_command(hook).map(|command| CourierHook {
                    event: event.as_str(),
                    group,
                    index,
                    command,
                })
            })
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn couriers_are_read_back_in_any_order_and_others_are_not() {
        let c = Courier::parse("kg-memory --port=9 hook prompt-submit --via plugin").expect("ours");
        assert_eq!(
            (c.port, c.event.as_deref(), c.via_plugin),
            (Some(9), Some("prompt-submit"), true)
        );
        assert!(Courier::parse("\"C:\\kg\\kg-memory.exe\" hook post-tool").is_some());
        let by_hand = Courier::parse("KG_HTTP_PORT=9 kg-memory hook session-start").expect("ours");
        assert_eq!(
            (by_hand.event.as_deref(), by_hand.port),
            (Some("session-start"), Some(9))
        );
        for other in [
            "say done",
            "kg-memory serve",
            "my-kg-memory hook x",
            "'unclosed",
        ] {
            assert!(Courier::parse(other).is_none(), "{other}");
        }
    }
}

//! What a session start says when its memory is not reachable — to the model (the
//! hook's context) and to the person (Claude Code's `systemMessage`, shown in the
//! session). Claude Code connects its MCP tools before the session-start hook runs, so
//! a server started by the hook comes too late for this session's tools: the person is
//! told, with the one step that brings memory into this session.

use kg_server::config::Settings;
use kg_server::launch::{serve_command, shell_line};
use kg_server::root_lock::{NotOurs, RootHeld};
use serde_json::{Value, json};

/// The agent whose session starts: each has its own way to bring the tools back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Agent {
    ClaudeCode,
    Codex,
    Gemini,
}

impl Agent {
    /// How the agent reconnects its MCP tools within the session.
    fn reconnect(self) -> &'static str {
        match self {
            // Whichever route named the server.
            Agent::ClaudeCode => {
                "run /mcp, select the KG Memory server (kg, or plugin:knowledge-graph:kg) and choose Reconnect"
            }
            // Codex connects its MCP servers when a session (re)starts; a resumed one
            // keeps the conversation.
            Agent::Codex => {
                "leave this session and run `codex resume --last`: it goes on with this conversation, tools connected"
            }
            Agent::Gemini => "run /mcp reload",
        }
    }

    fn title(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "Claude Code",
            Agent::Codex => "Codex CLI",
            Agent::Gemini => "Gemini CLI",
        }
    }

    fn install_name(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "claude-code",
            Agent::Codex => "codex",
            Agent::Gemini => "gemini",
        }
    }
}

/// Why this session starts without its memory.
#[derive(Debug)]
pub enum Offline<'a> {
    /// Nothing ran; a server is starting now.
    Starting,
    /// Nothing ran and none could be started.
    CannotStart(&'a str),
    /// A program that is not KG Memory holds the port.
    PortTaken,
    /// The storage root is held by a server that does not answer.
    RootHeldSilent(&'a RootHeld),
    /// A KG Memory server of another storage root answers on the port.
    OtherRoot(&'a NotOurs),
}

/// The hook answer for a session start without memory: context for the model and a
/// `systemMessage` for the person.
pub fn session_start_offline(
    why: &Offline<'_>,
    agent: Agent,
    settings: &Settings,
    base: &str,
) -> String {
    let (model, person) = words(why, agent, settings, base);
    json!({
        "systemMessage": person,
        "hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": model},
    })
    .to_string()
}

fn install_elsewhere(agent: Agent, settings: &Settings) -> String {
    format!(
        "kg-memory install {} --port <N> --storage {}",
        agent.install_name(),
        shell_line([&settings.storage_root])
    )
}

/// (for the model, for the person).
fn words(why: &Offline<'_>, agent: Agent, settings: &Settings, base: &str) -> (String, String) {
    let port = settings.port;
    let reconnect = agent.reconnect();
    let title = agent.title();
    match why {
        Offline::Starting => (
            match agent {
                // The reference's words, which name Claude Code's /mcp menu.
                Agent::ClaudeCode => kg_core::server_warming_up(base),
                _ => format!(
                    "KG memory server is starting, so this session's kg_* tools may be offline for a moment. Check {base}/health; once it answers, if the kg_* tools are still missing, tell the user: to get memory in this session, {reconnect}."
                ),
            },
            format!(
                "KG Memory: no server was running, so this session started without its memory tools; one is starting now at {base}. To get memory in this session, {reconnect}."
            ),
        ),
        Offline::CannotStart(e) => {
            let serve = serve_command(settings);
            (
                format!(
                    "KG memory server is not running and could not be started ({e}); start it with `{serve}`."
                ),
                format!(
                    "KG Memory is off in this session: no server runs and none could be started ({e}). To get memory in this session, run `{serve}` in a terminal, then {reconnect}."
                ),
            )
        }
        Offline::PortTaken => (
            format!(
                "KG memory is offline for this session: port {port} is taken by another program that is not KG Memory, so no memory server can run there. The kg_* tools are unavailable; tell the user if memory matters for the task."
            ),
            format!(
                "KG Memory is off in this session: port {port} is taken by another program, not KG Memory. To get memory, stop that program and {reconnect}, or move KG Memory to a free port (`{}`) and restart {title}.",
                install_elsewhere(agent, settings)
            ),
        ),
        Offline::RootHeldSilent(held) => (
            format!(
                "KG memory is offline for this session: the storage root {} is held by {}, which does not answer; no second server was started. Check it with `kg-memory status`.",
                held.root.display(),
                held.who()
            ),
            format!(
                "KG Memory is off in this session: its storage root {} is held by {}, which does not answer. To get memory in this session, stop that process (`kg-memory status` names it), start the server (`{}`), then {reconnect}.",
                held.root.display(),
                held.who(),
                serve_command(settings)
            ),
        ),
        Offline::OtherRoot(stranger) => {
            let why = stranger.why(&settings.storage_root);
            (
                format!(
                    "KG memory is offline for this session: the server at {base} {why}, which these hooks name. Stop that server, or give this memory a port of its own: `{}`.",
                    install_elsewhere(agent, settings)
                ),
                format!(
                    "KG Memory is off in this session: the server at {base} {why}; the kg tools would read and write that other memory. To get yours, stop that server, start this one (`{}`) and {reconnect}; or give this memory a port of its own (`{}`) and restart {title}.",
                    serve_command(settings),
                    install_elsewhere(agent, settings)
                ),
            )
        }
    }
}

/// The installer's closing words for Claude Code: the path on which no session starts
/// without memory — the server up before Claude Code, now and after each login.
pub fn install_closing_words(serve: &str) -> String {
    format!(
        "Done. Start the server before Claude Code: `{serve}` in a terminal that stays open, or the KG Memory tray app with \"Start at login\" so it is there after every reboot. Then restart Claude Code: every session starts with its memory. (A session started while no server runs gets one started, but its tools only after /mcp → Reconnect; it says so.)\n"
    )
}

/// What `kg-memory install codex` says once done.
pub fn codex_closing_words(serve: &str) -> String {
    format!(
        "Done. Start the server before Codex: `{serve}` in a terminal that stays open, or the KG Memory tray app with \"Start at login\". `codex mcp list` now shows \"kg\". Codex runs a new hook only once you trust it: in your next Codex session, type /hooks and trust the three KG Memory hooks (session start, prompt, tool use); until then the memory's tools work, without its preload and recall.\n"
    )
}

/// What `kg-memory setup` says once it connected `agents`: start the server first, then
/// each agent's own next step.
pub fn setup_closing_words(serve: &str, agents: &[kg_install::Client]) -> String {
    use kg_install::Client;
    let mut out = format!(
        "Done. Start the server before your agents: `{serve}` in a terminal that stays open, or the KG Memory tray app with \"Start at login\".\n"
    );
    for agent in agents {
        out.push_str(match agent {
            Client::ClaudeCode => "- Claude Code: start a new session; it begins with its memory.\n",
            Client::Codex => "- Codex CLI: in your next session, type /hooks and trust the three KG Memory hooks; until then its tools work, without preload and recall.\n",
            Client::Gemini => "- Gemini CLI: start it in a folder you trust (it runs MCP servers and hooks only there).\n",
            Client::ClaudeDesktop => "- Claude Desktop: restart it.\n",
        });
    }
    out
}

/// The installer's closing words for Gemini CLI: its tools connect when a session
/// starts, so the server must be up first.
pub fn gemini_closing_words(serve: &str) -> String {
    format!(
        "Done. Start the server before Gemini CLI: `{serve}` in a terminal that stays open, or the KG Memory tray app with \"Start at login\" so it is there after every reboot. Then restart Gemini CLI in a folder you trust (Gemini CLI runs MCP servers and hooks only there); `gemini mcp list` shows kg as Connected. (A session started while no server runs gets one started, but its tools only after /mcp reload; it says so.)\n"
    )
}

/// The person's line of an answer made here, for tests and `doctor`.
pub fn person_line(answer: &str) -> Option<String> {
    let value: Value = serde_json::from_str(answer).ok()?;
    value["systemMessage"].as_str().map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> Settings {
        let mut s = Settings::from_env().expect("settings");
        s.port = 9123;
        s.storage_root = "/srv/kg memory".into();
        s
    }

    #[test]
    fn every_offline_start_tells_the_person_how_to_get_memory_in_this_session() {
        let s = settings();
        let held = RootHeld {
            root: s.storage_root.clone(),
            holder: None,
        };
        let stranger = NotOurs::OtherRoot("/srv/other".into());
        for why in [
            Offline::Starting,
            Offline::CannotStart("permission denied"),
            Offline::PortTaken,
            Offline::RootHeldSilent(&held),
            Offline::OtherRoot(&stranger),
        ] {
            let answer =
                session_start_offline(&why, Agent::ClaudeCode, &s, "http://127.0.0.1:9123");
            // Codex has no /mcp Reconnect: its person and model hear Codex's way back.
            let codex = session_start_offline(&why, Agent::Codex, &s, "http://127.0.0.1:9123");
            assert!(!codex.contains("/mcp"), "{why:?}: {codex}");
            if !matches!(why, Offline::PortTaken | Offline::OtherRoot(_)) {
                let line = person_line(&codex).expect("a systemMessage");
                assert!(line.contains("codex resume --last"), "{why:?}: {line}");
            }
            let person = person_line(&answer).expect("a systemMessage");
            assert!(person.starts_with("KG Memory"), "{why:?}: {person}");
            assert!(
                person.contains("To get memory") || person.contains("To get yours"),
                "{why:?}: {person}"
            );
            assert!(!person.contains('\n'), "one line: {person}");
            let value: Value = serde_json::from_str(&answer).expect("json");
            assert!(
                value["hookSpecificOutput"]["additionalContext"]
                    .as_str()
                    .is_some_and(|c| c.contains("offline")
                        || c.contains("not running")
                        || c.contains("starting")),
                "{why:?}: {answer}"
            );
        }
    }
}

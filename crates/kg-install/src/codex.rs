//! OpenAI's Codex CLI: the memory's MCP server in its `config.toml`, the courier hooks
//! in its `hooks.json`, and a block of instructions in its `AGENTS.md`, all in Codex's
//! home (`~/.codex`, or `$CODEX_HOME`).
//!
//! Measured with `@openai/codex` 0.169.0: `codex mcp add kg --url U` writes
//! `[mcp_servers.kg]` with `url = U` (a streamable HTTP server); hooks are on by
//! default, read from `hooks.json` beside `config.toml`, in Claude Code's shape
//! (`{"hooks": {Event: [{matcher, hooks: [{type, command}]}]}}`) with Claude Code's
//! payload fields and answer (`hookSpecificOutput.additionalContext`,
//! `systemMessage`); Codex runs a hook the person has not trusted yet (`/hooks` in
//! the CLI) not at all; `AGENTS.md` in its home holds the person's instructions for
//! every project. `config.toml` is the person's own file, edited with `toml_edit` so
//! its layout and comments stay.

use crate::InstallError;
use crate::error::FIX_BY_HAND;
use std::path::{Path, PathBuf};
use toml_edit::{DocumentMut, Item, Table, value};

/// Codex's variable that moves its whole home.
pub const CODEX_HOME: &str = "CODEX_HOME";

/// The name of the MCP server `install codex` registers (what `codex mcp add` would
/// call it too).
pub(crate) const CODEX_SERVER: &str = "kg";

/// The `--via` value that makes a courier answer as Codex's (Claude Code's routes are
/// not consulted, and a session without memory is told Codex's way back).
pub(crate) const VIA_CODEX: &str = "codex";

/// Codex's hook event, our courier's event name, and the tool matcher. Codex's shell
/// reaches hooks as `Bash` and its file edits as `apply_patch`: the calls file recall
/// and the capture nudges read.
pub(crate) const CODEX_HOOK_EVENTS: [(&str, &str, Option<&str>); 3] = [
    ("SessionStart", "session-start", None),
    ("UserPromptSubmit", "prompt-submit", None),
    ("PostToolUse", "post-tool", Some("Bash|apply_patch")),
];

/// Codex's home, located once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodexHome {
    pub dir: PathBuf,
}

impl CodexHome {
    /// Where Codex run with this process's environment looks.
    pub fn from_env(home: &Path) -> CodexHome {
        match std::env::var_os(CODEX_HOME).filter(|d| !d.is_empty()) {
            Some(dir) => CodexHome {
                dir: std::path::absolute(&dir).unwrap_or_else(|_| PathBuf::from(dir)),
            },
            None => CodexHome::in_home(home),
        }
    }

    /// The default place: `<home>/.codex`.
    pub fn in_home(home: &Path) -> CodexHome {
        CodexHome {
            dir: home.join(".codex"),
        }
    }

    pub fn config(&self) -> PathBuf {
        self.dir.join("config.toml")
    }

    pub fn hooks(&self) -> PathBuf {
        self.dir.join("hooks.json")
    }

    pub fn agents(&self) -> PathBuf {
        self.dir.join("AGENTS.md")
    }
}

/// A TOML file's text and document (empty when missing); a damaged file stops the
/// install rather than being overwritten.
pub(crate) fn read_toml(path: &Path) -> Result<(Option<String>, DocumentMut), InstallError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok((None, DocumentMut::new()));
        }
        Err(e) => return Err(InstallError::io("cannot read", path, &e)),
    };
    let doc = text.parse::<DocumentMut>().map_err(|e| {
        InstallError::ByHand(format!(
            "{} is not valid TOML ({}){FIX_BY_HAND}",
            path.display(),
            e.to_string().trim()
        ))
    })?;
    Ok((Some(text), doc))
}

/// The URL of Codex's MCP server `kg`, when it has one.
pub fn codex_server_url(doc: &DocumentMut) -> Option<String> {
    doc.get("mcp_servers")?
        .get(CODEX_SERVER)?
        .get("url")?
        .as_str()
        .map(str::to_string)
}

/// The entry exists (whatever it holds).
pub(crate) fn has_codex_server(doc: &DocumentMut) -> bool {
    doc.get("mcp_servers")
        .and_then(|s| s.get(CODEX_SERVER))
        .is_some()
}

/// Add `[mcp_servers.kg]` with `url`, or point ours at `url`.
pub(crate) fn set_codex_server(
    doc: &mut DocumentMut,
    url: &str,
    summary: &mut Vec<String>,
) -> Result<(), InstallError> {
    let servers = doc
        .entry("mcp_servers")
        .or_insert_with(|| {
            let mut t = Table::new();
            // `[mcp_servers.kg]` alone, as `codex mcp add` writes it.
            t.set_implicit(true);
            Item::Table(t)
        })
        .as_table_like_mut()
        .ok_or_else(|| {
            InstallError::ByHand(
                "\"mcp_servers\" in Codex's config.toml is not a table{FIX_BY_HAND}".to_string(),
            )
        })?;
    match servers.get_mut(CODEX_SERVER) {
        Some(entry) => {
            let entry = entry.as_table_like_mut().ok_or_else(|| {
                InstallError::ByHand(
                    "\"mcp_servers.kg\" in Codex's config.toml is not a table{FIX_BY_HAND}"
                        .to_string(),
                )
            })?;
            let old = entry.get("url").and_then(Item::as_str).map(str::to_string);
            if old.as_deref() != Some(url) {
                entry.insert("url", value(url));
                summary.push(format!(
                    "point the MCP server \"{CODEX_SERVER}\" at {url} (was {})",
                    old.as_deref().unwrap_or("no url")
                ));
            }
        }
        None => {
            let mut entry = Table::new();
            entry.insert("url", value(url));
            servers.insert(CODEX_SERVER, Item::Table(entry));
            summary.push(format!("add MCP server \"{CODEX_SERVER}\" ({url})"));
        }
    }
    Ok(())
}

/// Take `[mcp_servers.kg]` out; an `mcp_servers` left empty goes too.
pub(crate) fn remove_codex_server(doc: &mut DocumentMut, summary: &mut Vec<String>) {
    let Some(servers) = doc.get_mut("mcp_servers").and_then(Item::as_table_like_mut) else {
        return;
    };
    if servers.remove(CODEX_SERVER).is_some() {
        summary.push(format!("remove MCP server \"{CODEX_SERVER}\""));
    }
    if servers.is_empty() {
        doc.remove("mcp_servers");
    }
}

/// Where Codex keeps its trust in our hooks: `[hooks.state."<hooks.json>:<event>:<group>:<handler>"]`
/// in `config.toml`, written when the person trusts a hook in `/hooks`. The keys of
/// the courier hooks in `hooks` (the parsed `hooks.json` at `path`).
pub(crate) fn trust_keys(
    path: &Path,
    hooks: &serde_json::Map<String, serde_json::Value>,
) -> Vec<String> {
    let mut keys = Vec::new();
    for hook in crate::courier::courier_hooks(hooks) {
        // `SessionStart` → `session_start`, as Codex names the event in the key.
        let mut snake = String::new();
        for (i, c) in hook.event.chars().enumerate() {
            if c.is_ascii_uppercase() && i > 0 {
                snake.push('_');
            }
            snake.push(c.to_ascii_lowercase());
        }
        keys.push(format!(
            "{}:{snake}:{}:{}",
            path.display(),
            hook.group,
            hook.index
        ));
    }
    keys
}

/// Take Codex's trust records of our hooks out of `config.toml` (a `hooks.state` or
/// `hooks` table left empty goes too): with the hooks gone they name nothing.
pub(crate) fn remove_hook_trust(doc: &mut DocumentMut, keys: &[String], summary: &mut Vec<String>) {
    let Some(hooks) = doc.get_mut("hooks").and_then(Item::as_table_like_mut) else {
        return;
    };
    if let Some(state) = hooks.get_mut("state").and_then(Item::as_table_like_mut) {
        let before = state.len();
        for key in keys {
            state.remove(key);
        }
        if state.len() < before {
            summary.push("forget Codex's trust in the KG Memory hooks".to_string());
        }
        if state.is_empty() {
            hooks.remove("state");
        }
    }
    if hooks.is_empty() {
        doc.remove("hooks");
    }
}

/// The same text but for blank lines and trailing spaces: what tells an untouched
/// file from one the person changed, after our entry is taken out again.
pub(crate) fn same_but_blank_lines(a: &str, b: &str) -> bool {
    let lines = |t: &str| -> Vec<String> {
        t.lines()
            .map(str::trim_end)
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect()
    };
    lines(a) == lines(b)
}

const BEGIN: &str = "<!-- kg-memory: begin. Written by `kg-memory install codex`; `kg-memory uninstall codex` removes it. -->";
const END: &str = "<!-- kg-memory: end -->";

/// What Codex is told about the memory, in every project.
fn instructions() -> String {
    [
        BEGIN,
        "## KG Memory",
        "",
        "The `kg` MCP server is KG Memory: a knowledge graph of what earlier sessions learned, \
         shared with every coding agent on this machine. It has two levels: `user` (what holds \
         in every project) and `project` (this project's root).",
        "",
        "- At the start of a session, a block beginning `KG MEMORY PRELOADED` may already be in \
         your context; it names the session id to pass as `session_id` to every `kg_*` call. \
         Before substantive work, call `kg_read(session_id=...)` once to read what the preload left out.",
        "- With no such block (hooks not trusted yet, or the server was not running), call \
         `kg_read(cwd=\"<absolute project root>\")` first; the `Session:` line of its answer gives the id.",
        "- Before exploring code or answering from scratch, `kg_search` the memory; lines marked as \
         recalled from memory after a prompt or a file touch are earlier lessons about that topic or file.",
        "- When you learn something a later session would want (a decision, a cause, a pitfall, how \
         the person likes things done), write it with `kg_put_node`: a short id, a one-sentence gist, \
         and `touches` naming the files it is about. Update a node rather than writing a near-duplicate.",
        "- If a `kg_*` call fails because the server is unreachable, tell the person that \
         `kg-memory serve` (or the KG Memory tray app) starts it; `kg-memory doctor` shows what is wrong.",
        END,
    ]
    .join("\n")
}

/// `AGENTS.md` with our block (added at the end, or brought up to date in place).
pub(crate) fn with_instructions(text: Option<&str>) -> String {
    let block = instructions();
    match text {
        None => format!("{block}\n"),
        Some(t) => match block_span(t) {
            Some((start, end)) => format!("{}{block}{}", &t[..start], &t[end..]),
            None if t.trim().is_empty() => format!("{block}\n"),
            None => {
                let sep = if t.ends_with("\n\n") {
                    ""
                } else if t.ends_with('\n') {
                    "\n"
                } else {
                    "\n\n"
                };
                format!("{t}{sep}{block}\n")
            }
        },
    }
}

/// `AGENTS.md` without our block, and the blank line we put before it; `None` when
/// it has no block of ours.
pub(crate) fn without_instructions(text: &str) -> Option<String> {
    let (start, mut end) = block_span(text)?;
    if text[end..].starts_with('\n') {
        end += 1;
    }
    let mut head = text[..start].to_string();
    if text[end..].is_empty() && head.ends_with("\n\n") {
        head.pop();
    }
    Some(format!("{head}{}", &text[end..]))
}

/// Where our block sits (from its first marker to the end of its last). The end
/// marker is found first and its begin marker searched backwards from it: a begin
/// marker whose end the person deleted must not stretch our block over their text,
/// which an update or an uninstall would then remove.
fn block_span(text: &str) -> Option<(usize, usize)> {
    let end_marker = text.find(END)?;
    let start = text[..end_marker].rfind("<!-- kg-memory: begin")?;
    Some((start, end_marker + END.len()))
}

/// Our block is there and says what this version would write.
pub(crate) fn instructions_current(text: &str) -> bool {
    block_span(text).is_some_and(|(s, e)| text[s..e] == instructions())
}

/// How Codex reaches KG Memory, read back from its files (for `status` and `doctor`).
#[derive(Debug, Clone, Default)]
pub struct CodexWiring {
    /// Codex's home exists (Codex has run, or been set up, here).
    pub present: bool,
    /// `config.toml` could not be read as TOML: why.
    pub config_error: Option<String>,
    /// The URL of its MCP server `kg`.
    pub url: Option<String>,
    /// Our couriers in `hooks.json`: Codex's event and the command.
    pub hooks: Vec<(String, String)>,
}

/// Read Codex's wiring; never fails (a damaged file is reported, not fatal).
pub fn codex_wiring(codex: &CodexHome) -> CodexWiring {
    let mut w = CodexWiring {
        present: codex.dir.is_dir(),
        ..CodexWiring::default()
    };
    match read_toml(&codex.config()) {
        Ok((_, doc)) => w.url = codex_server_url(&doc),
        Err(e) => w.config_error = Some(e.diagnosis()),
    }
    let hooks = crate::files::read_lenient(&codex.hooks());
    w.hooks = crate::courier::courier_hooks(&hooks)
        .map(|hook| (hook.event.to_string(), hook.command.to_string()))
        .collect();
    w
}

/// Whether Codex trusts each of our hooks, as Codex itself says (`codex app-server`'s
/// `hooks/list`, the list its `/hooks` screen shows): `(command, trustStatus)` per
/// courier hook, `trusted` or not. `None` when Codex could not be asked in time.
pub fn codex_hook_trust(
    codex_program: &Path,
    cwd: &Path,
    wait: std::time::Duration,
) -> Option<Vec<(String, String)>> {
    use std::io::{BufRead, Write};
    use std::process::{Command, Stdio};
    let mut child = Command::new(codex_program)
        .arg("app-server")
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let requests = [
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"clientInfo": {"name": "kg-memory-doctor", "version": env!("CARGO_PKG_VERSION")}}}),
        serde_json::json!({"jsonrpc": "2.0", "method": "initialized"}),
        serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "hooks/list",
            "params": {"cwds": [cwd.to_string_lossy()]}}),
    ];
    let mut stdin = child.stdin.take()?;
    let stdout = child.stdout.take()?;
    let (tx, rx) = std::sync::mpsc::channel();
    // The reader is left behind if Codex never answers; killing Codex ends it.
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) else {
                continue;
            };
            if v["id"] == 2 {
                let _ = tx.send(v);
                return;
            }
        }
    });
    let sent = requests
        .iter()
        .try_for_each(|r| writeln!(stdin, "{r}"))
        .is_ok();
    let answer = if sent {
        rx.recv_timeout(wait).ok()
    } else {
        None
    };
    let _ = child.kill();
    let _ = child.wait();
    let mut found = Vec::new();
    for entry in answer?["result"]["data"].as_array()? {
        for hook in entry["hooks"].as_array().into_iter().flatten() {
            let Some(command) = hook["command"].as_str() else {
                continue;
            };
            if crate::Courier::parse(command).is_some() {
                let status = hook["trustStatus"].as_str().unwrap_or("unknown");
                found.push((command.to_string(), status.to_string()));
            }
        }
    }
    Some(found)
}

/// Where our hooks in Codex's `hooks.json` point, when they name a port or storage
/// root of their own (plain `status` asks that server when Claude Code names none).
pub fn codex_installed_target(codex: &CodexHome) -> Option<crate::InstalledTarget> {
    let couriers: Vec<crate::Courier> = codex_wiring(codex)
        .hooks
        .iter()
        .filter_map(|(_, command)| crate::Courier::parse(command))
        .collect();
    crate::InstalledTarget::of_couriers(&couriers, || {
        format!("the hooks in {}", codex.hooks().display())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::setup;
    use crate::{Client, apply, plan_install, plan_uninstall};
    use std::fs;

    #[test]
    fn install_writes_server_hooks_and_instructions_and_uninstall_restores_every_byte() {
        let home = tempfile::tempdir().expect("home");
        let mut s = setup(home.path());
        s.settings.port = 9123;
        let codex = home.path().join(".codex");
        fs::create_dir_all(&codex).expect("mkdir");
        let config = "# mine\nmodel = \"o3\"\n\n[mcp_servers.docs]\ncommand = \"docs\"   # keep\n";
        fs::write(codex.join("config.toml"), config).expect("write");
        let agents = "# House rules\n\nTabs, always.\n";
        fs::write(codex.join("AGENTS.md"), agents).expect("write");

        let plan = plan_install(Client::Codex, &s).expect("plan");
        apply(&plan, 1.0, true).expect("install");
        let written = fs::read_to_string(codex.join("config.toml")).expect("read");
        assert!(written.starts_with(config), "{written}");
        assert!(written.contains("[mcp_servers.kg]\nurl = \"http://127.0.0.1:9123/\""));
        let hooks: serde_json::Value =
            serde_json::from_str(&fs::read_to_string(codex.join("hooks.json")).expect("read"))
                .expect("json");
        assert_eq!(
            hooks["hooks"]["PostToolUse"][0]["matcher"],
            "Bash|apply_patch"
        );
        assert_eq!(
            hooks["hooks"]["SessionStart"][0]["hooks"][0]["command"],
            "/opt/kg/bin/kg-memory hook session-start --via codex --port 9123"
        );
        let instructions = fs::read_to_string(codex.join("AGENTS.md")).expect("read");
        assert!(instructions.starts_with(agents) && instructions.contains("kg_read"));
        assert!(
            plan_install(Client::Codex, &s)
                .expect("again")
                .iter()
                .all(|c| c.summary.is_empty()),
            "idempotent"
        );

        apply(
            &plan_uninstall(Client::Codex, &s).expect("plan"),
            2.0,
            false,
        )
        .expect("uninstall");
        assert_eq!(
            fs::read_to_string(codex.join("config.toml")).expect("read"),
            config
        );
        assert_eq!(
            fs::read_to_string(codex.join("AGENTS.md")).expect("read"),
            agents
        );
        assert!(!codex.join("hooks.json").exists(), "install created it");
        assert!(!s.codex_record_path().exists());
    }

    #[test]
    fn a_begin_marker_left_without_its_end_never_takes_the_persons_text_with_it() {
        // The person deleted our end marker (and the block's last lines) by hand.
        let broken = "<!-- kg-memory: begin. edited -->\n## KG Memory\n\nTabs, always.\n";
        let installed = with_instructions(Some(broken));
        assert!(installed.starts_with(broken), "{installed}");
        assert!(instructions_current(&installed));
        assert_eq!(without_instructions(&installed).as_deref(), Some(broken));
        let updated = with_instructions(Some(&installed));
        assert_eq!(updated, installed, "an update rewrites only our new block");
    }

    #[test]
    fn a_hand_added_entry_is_kept_and_one_elsewhere_stops_the_install() {
        let home = tempfile::tempdir().expect("home");
        let s = setup(home.path());
        let codex = home.path().join(".codex");
        fs::create_dir_all(&codex).expect("mkdir");
        let by_hand = format!("[mcp_servers.kg]\nurl = \"{}\"\n", s.url());
        fs::write(codex.join("config.toml"), &by_hand).expect("write");
        apply(&plan_install(Client::Codex, &s).expect("plan"), 1.0, true).expect("install");
        assert_eq!(
            fs::read_to_string(codex.join("config.toml")).expect("read"),
            by_hand
        );
        apply(
            &plan_uninstall(Client::Codex, &s).expect("plan"),
            2.0,
            false,
        )
        .expect("uninstall");
        assert_eq!(
            fs::read_to_string(codex.join("config.toml")).expect("read"),
            by_hand,
            "uninstall leaves the person's entry"
        );
        assert!(!codex.join("AGENTS.md").exists() && !codex.join("hooks.json").exists());

        let elsewhere = "[mcp_servers.kg]\nurl = \"http://127.0.0.1:7000/\"\n";
        fs::write(codex.join("config.toml"), elsewhere).expect("write");
        let err = plan_install(Client::Codex, &s).expect_err("refused");
        assert!(err.to_string().contains("codex mcp remove kg"), "{err}");
        fs::write(codex.join("config.toml"), "model = [unclosed\n").expect("write");
        let err = plan_install(Client::Codex, &s).expect_err("damaged");
        assert!(err.to_string().contains("not valid TOML"), "{err}");
        assert_eq!(
            fs::read_to_string(codex.join("config.toml")).expect("read"),
            "model = [unclosed\n"
        );
    }

    #[test]
    fn codexs_trust_in_our_hooks_is_found_by_their_place_and_forgotten() {
        let hooks: serde_json::Value = serde_json::json!({"hooks": {
            "SessionStart": [{"hooks": [{"type": "command", "command": "say hi"},
                {"type": "command", "command": "kg-memory hook session-start --via codex"}]}],
            "PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "kg-memory hook post-tool"}]}]
        }});
        let path = Path::new("/h/.codex/hooks.json");
        let keys = trust_keys(path, hooks.as_object().expect("object"));
        assert_eq!(
            keys,
            [
                "/h/.codex/hooks.json:session_start:0:1",
                "/h/.codex/hooks.json:post_tool_use:0:0"
            ]
        );
        let text = "model = \"o3\"\n\n[hooks.state.\"/h/.codex/hooks.json:session_start:0:0\"]\ntrusted_hash = \"sha256:1\"\n\n[hooks.state.\"/h/.codex/hooks.json:session_start:0:1\"]\ntrusted_hash = \"sha256:2\"\n";
        let mut doc: DocumentMut = text.parse().expect("toml");
        let mut summary = Vec::new();
        remove_hook_trust(&mut doc, &keys, &mut summary);
        let left = doc.to_string();
        assert!(
            left.contains("session_start:0:0") && !left.contains("session_start:0:1"),
            "{left}"
        );
        assert_eq!(summary.len(), 1);
    }

    #[test]
    fn the_instructions_block_comes_and_goes_leaving_the_persons_text() {
        for original in [
            "# My rules\n\nUse tabs.\n",
            "# My rules\nUse tabs.",
            "Use tabs.\n\n",
        ] {
            let added = with_instructions(Some(original));
            assert!(added.starts_with(original.trim_end()), "{added}");
            assert!(instructions_current(&added));
            assert_eq!(with_instructions(Some(&added)), added, "idempotent");
            let removed = without_instructions(&added).expect("our block");
            assert!(same_but_blank_lines(&removed, original), "{removed:?}");
        }
        let alone = with_instructions(None);
        assert_eq!(without_instructions(&alone).as_deref(), Some(""));
        assert_eq!(without_instructions("# Mine\n"), None);
    }

    #[test]
    fn the_mcp_entry_keeps_the_persons_layout_and_comments() {
        let original =
            "# my model\nmodel = \"o3\"  # fast\n\n[mcp_servers.docs]\ncommand = \"docs-mcp\"\n";
        let mut doc: DocumentMut = original.parse().expect("toml");
        let mut summary = Vec::new();
        set_codex_server(&mut doc, "http://127.0.0.1:9123/", &mut summary).expect("set");
        let text = doc.to_string();
        assert!(text.starts_with(original), "{text}");
        assert!(
            text.contains("[mcp_servers.kg]\nurl = \"http://127.0.0.1:9123/\""),
            "{text}"
        );
        assert_eq!(
            codex_server_url(&doc).as_deref(),
            Some("http://127.0.0.1:9123/")
        );
        let mut doc: DocumentMut = text.parse().expect("toml");
        remove_codex_server(&mut doc, &mut summary);
        assert_eq!(doc.to_string(), original);
        assert_eq!(summary.len(), 2, "{summary:?}");

        let mut empty = DocumentMut::new();
        set_codex_server(&mut empty, "http://127.0.0.1:1/", &mut Vec::new()).expect("set");
        assert_eq!(
            empty.to_string(),
            "[mcp_servers.kg]\nurl = \"http://127.0.0.1:1/\"\n"
        );
        remove_codex_server(&mut empty, &mut Vec::new());
        assert_eq!(empty.to_string().trim(), "");

        let mut odd: DocumentMut = "mcp_servers = 3\n".parse().expect("toml");
        assert!(set_codex_server(&mut odd, "http://127.0.0.1:1/", &mut Vec::new()).is_err());
    }
}

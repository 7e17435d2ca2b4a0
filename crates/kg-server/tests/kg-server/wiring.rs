//! How the real binary is wired into Claude Code: hook commands that carry their
//! server, one answer when the plugin and the installer are both wired, unknown flags
//! refused, output into a closed pipe, and the stdio bridge when its server is gone.

use crate::server::{Server, bin, free_port, temp_home};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// `kg-memory <args>` with a clean environment: `HOME`, and whatever `env` adds.
pub(crate) fn kg(args: &[&str], home: &Path, env: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(bin());
    cmd.args(args)
        .env("HOME", home)
        .env("KG_AUTOCOMMIT_INTERVAL", "0");
    for var in [
        "KG_HTTP_PORT",
        "KG_HTTP_HOST",
        "KG_STORAGE_ROOT",
        "KG_CLOCK_FILE",
        "XDG_STATE_HOME",
        "CLAUDE_CONFIG_DIR",
        "GEMINI_CLI_HOME",
        "CODEX_HOME",
    ] {
        cmd.env_remove(var);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

/// Run to the end with `stdin`; (stdout, stderr, exit code).
pub(crate) fn run(mut cmd: Command, stdin: &str) -> (String, String, i32) {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn kg-memory");
    let _ = child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes());
    let out = child.wait_with_output().expect("wait");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

fn listening(port: u16) -> bool {
    std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
}

/// The server holding `storage`, from its lock file: (pid, port).
fn holder(storage: &Path) -> Option<(i32, u16)> {
    let text = std::fs::read_to_string(storage.join(".kg-memory.lock")).ok()?;
    let v: Value = serde_json::from_str(text.trim()).ok()?;
    Some((
        i32::try_from(v["pid"].as_u64()?).ok()?,
        u16::try_from(v["port"].as_u64()?).ok()?,
    ))
}

/// A server that a courier started on `storage`: found through the root's lock and
/// stopped when the test ends, whatever the test found.
struct Detached {
    storage: PathBuf,
}

impl Detached {
    /// Wait (20 s at most) until a server holds the root; its port.
    fn wait(&self) -> u16 {
        let start = Instant::now();
        loop {
            if let Some((_, port)) = holder(&self.storage)
                && listening(port)
            {
                return port;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "no server came up on {}",
                self.storage.display()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// SIGKILL the holder and wait until its port is free.
    fn kill(&self) {
        if let Some((pid, port)) = holder(&self.storage) {
            // SAFETY: signalling the process the lock file names.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
            let start = Instant::now();
            while listening(port) && start.elapsed() < Duration::from_secs(10) {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

impl Drop for Detached {
    fn drop(&mut self) {
        if let Some((pid, port)) = holder(&self.storage) {
            // SAFETY: signalling the process the lock file names.
            unsafe {
                libc::kill(pid, libc::SIGTERM);
            }
            let start = Instant::now();
            while listening(port) && start.elapsed() < Duration::from_secs(20) {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
}

/// Before: the hook ignored where it was installed for and followed `KG_HTTP_PORT`,
/// starting a second server over `~/.knowledge-graph`.
#[test]
fn a_hook_starts_its_server_where_its_flags_say_whatever_the_environment() {
    let (_dir, home) = temp_home();
    let storage = home.join("my storage");
    let port = free_port();
    let elsewhere = free_port();
    let detached = Detached {
        storage: storage.clone(),
    };
    let start = json!({"session_id": "cc-flags", "cwd": home, "source": "startup"}).to_string();
    let cmd = kg(
        &[
            "hook",
            "session-start",
            "--port",
            &port.to_string(),
            "--storage",
            &storage.to_string_lossy(),
        ],
        &home,
        &[("KG_HTTP_PORT", &elsewhere.to_string())],
    );
    let (out, _, code) = run(cmd, &start);
    assert_eq!(code, 0);
    assert!(
        out.contains(&format!("http://127.0.0.1:{port}/health")),
        "{out}"
    );
    assert_eq!(
        detached.wait(),
        port,
        "the server listens where the flags say"
    );
    assert!(!listening(elsewhere));
    assert!(!home.join(".knowledge-graph").exists());
}

pub(crate) fn install_plugin_record(home: &Path) {
    std::fs::create_dir_all(home.join(".claude/plugins")).expect("mkdir");
    std::fs::write(
        home.join(".claude/plugins/installed_plugins.json"),
        json!({"version": 2, "plugins": {"knowledge-graph@kg-memory": [
            {"scope": "user", "installPath": home.join("plugin-copy"), "version": "0.1.0"}]}})
        .to_string(),
    )
    .expect("write");
    let path = home.join(".claude/settings.json");
    let mut settings: Value = std::fs::read_to_string(&path)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_else(|| json!({}));
    settings["enabledPlugins"] = json!({"knowledge-graph@kg-memory": true});
    std::fs::write(&path, settings.to_string()).expect("write");
}

/// Before: both routes answered every event, and the session was preloaded twice.
#[test]
fn with_the_plugin_and_the_installer_wired_one_hook_answers_and_says_which_to_remove() {
    let server = Server::fresh();
    let home = server.home.clone();
    let project = home.join("app");
    std::fs::create_dir_all(&project).expect("project");
    let env = [
        ("KG_HTTP_PORT", server.port.to_string()),
        (
            "KG_STORAGE_ROOT",
            server.storage.to_string_lossy().into_owned(),
        ),
    ];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (out, err, code) = run(kg(&["install", "claude-code"], &home, &env), "");
    assert_eq!(code, 0, "{out}{err}");
    let start = json!({"session_id": "cc-twice", "cwd": project, "source": "startup",
                       "hook_event_name": "SessionStart", "transcript_path": ""})
    .to_string();
    let hook = |via_plugin: bool| {
        let mut args = vec!["hook", "session-start"];
        if via_plugin {
            args.extend(["--via", "plugin"]);
        }
        run(kg(&args, &home, &env), &start)
    };
    let scrub = |text: &str| {
        text.replace(&server.storage.to_string_lossy().into_owned(), "<STORAGE>")
            .replace(&home.to_string_lossy().into_owned(), "<HOME>")
            .replace(&server.port.to_string(), "<PORT>")
            .replace(env!("CARGO_PKG_VERSION"), "<VERSION>")
    };
    let (out, _, code) = run(kg(&["status"], &home, &env), "");
    assert_eq!(code, 0, "{out}");
    insta::assert_snapshot!("status_wiring_installer_route", wiring_lines(&scrub(&out)));
    // Only the installer: it answers, and has nothing to warn about.
    let (out, _, code) = hook(false);
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(out.trim()).expect("hook JSON");
    assert!(!v["systemMessage"].as_str().unwrap_or("").contains("twice"));

    // Now the plugin too: the installer refuses to run again beside it...
    install_plugin_record(&home);
    let (out, err, code) = run(kg(&["install", "claude-code"], &home, &env), "");
    assert_eq!(code, 1, "{out}");
    assert!(
        err.contains("`claude plugin uninstall knowledge-graph@kg-memory`")
            && err.contains("Nothing was changed"),
        "{err}"
    );
    insta::assert_snapshot!("install_refused_beside_the_plugin", scrub(&err));
    // ...the plugin's hook stands aside for every event...
    for event in ["session-start", "prompt-submit", "post-tool"] {
        let (out, _, code) = run(kg(&["hook", event, "--via", "plugin"], &home, &env), &start);
        assert_eq!((out.as_str(), code), ("", 0), "{event}");
    }
    // ...and the installer's says which to remove, beside its usual answer.
    let (out, _, code) = hook(false);
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(out.trim()).expect("hook JSON");
    let message = v["systemMessage"].as_str().expect("a message");
    assert!(
        message.contains("connected to Claude Code twice")
            && message.contains("`kg-memory uninstall claude-code`")
            && message.contains("`claude plugin uninstall knowledge-graph@kg-memory`"),
        "{message}"
    );
    // The line about the two routes (the preload line before it names the session).
    let twice: Vec<&str> = message.lines().filter(|l| l.contains("twice")).collect();
    insta::assert_snapshot!("hook_says_connected_twice", scrub(&twice.join("\n")));
    assert!(
        v["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .is_some_and(|c| c.contains("KG MEMORY PRELOADED")),
        "{out}"
    );
    // `status` says the same.
    let (out, _, code) = run(kg(&["status"], &home, &env), "");
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("plugin knowledge-graph@kg-memory"), "{out}");
    assert!(
        out.contains("! KG Memory is connected to Claude Code twice"),
        "{out}"
    );
    insta::assert_snapshot!("status_wiring_both_routes", wiring_lines(&scrub(&out)));
}

/// The part of `kg-memory status` that says how Claude Code reaches KG Memory: from
/// its "Claude Code" heading to the next blank line (the rest names live sessions and
/// graphs, which vary run to run).
fn wiring_lines(status: &str) -> String {
    let mut lines = status.lines().skip_while(|l| !l.contains("Claude Code"));
    let mut kept: Vec<&str> = Vec::new();
    for line in lines.by_ref() {
        if line.trim().is_empty() && !kept.is_empty() {
            break;
        }
        kept.push(line);
    }
    kept.join("\n")
}

#[test]
fn unknown_flags_are_refused_with_a_usage_line() {
    let (_dir, home) = temp_home();
    for args in [
        &["install", "claude-code", "--dryrun"][..],
        &["uninstall", "claude-code", "--force"],
        &["serve", "--bogus"],
        &["status", "--verbose"],
        &["stdio", "--x"],
        &["hook", "session-start", "--x"],
        &["hook", "--via", "elsewhere", "session-start"],
        &["--bogus", "status"],
    ] {
        let (out, err, code) = run(kg(args, &home, &[]), "{}");
        // 1, never 2: a Claude Code hook that exits 2 blocks the prompt.
        assert_eq!(code, 1, "{args:?}: {err}");
        assert_eq!(out, "", "{args:?}");
        // A wrong value lists the right ones instead.
        assert!(
            err.contains("Usage: kg-memory")
                || err.contains("[possible values: plugin, gemini, codex]"),
            "{args:?}: {err}"
        );
    }
    assert!(!home.join(".claude.json").exists());
}

/// Spawn with stdout a pipe whose reading end is already closed (`| head` that quit).
fn into_a_closed_pipe(mut cmd: Command) -> (String, i32) {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    drop(child.stdout.take());
    let mut err = String::new();
    let _ = child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut err);
    let status = child.wait().expect("wait");
    (err, status.code().unwrap_or(-1))
}

/// Before: `kg-memory install … | head` panicked with "Broken pipe" once the files
/// were written.
#[test]
fn output_into_a_closed_pipe_is_no_failure() {
    let (_dir, home) = temp_home();
    let (err, code) = into_a_closed_pipe(kg(&["install", "claude-code"], &home, &[]));
    assert_eq!((err.as_str(), code), ("", 0));
    assert!(
        home.join(".claude.json").is_file(),
        "installed all the same"
    );
    for args in [
        &["uninstall", "claude-code", "--dry-run"][..],
        &["completions", "bash"],
        &["--version"],
        &["version"],
        &["status"],
    ] {
        let (err, code) = into_a_closed_pipe(kg(args, &home, &[]));
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert_ne!(code, 101, "{args:?}: {err}");
    }
}

/// A program that holds a port and answers every request with 404, as a web server
/// that is not KG Memory would.
pub(crate) fn foreign_program() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut stream = stream;
            let mut buf = [0u8; 4096];
            let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
            let _ = stream.read(&mut buf);
            let _ = stream.write_all(
                b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
            );
        }
    });
    port
}

/// The bridge, its stdin to write to and its stdout's lines.
struct Bridge {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<String>,
}

impl Bridge {
    fn start(home: &Path, storage: &Path, port: u16) -> Bridge {
        let mut child = kg(
            &[
                "stdio",
                "--port",
                &port.to_string(),
                "--storage",
                &storage.to_string_lossy(),
            ],
            home,
            &[],
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the bridge");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Bridge {
            child,
            stdin,
            lines,
        }
    }

    fn ask(&mut self, message: &Value, wait: Duration) -> Value {
        writeln!(self.stdin, "{message}").expect("write");
        let line = self.lines.recv_timeout(wait).expect("an answer in time");
        serde_json::from_str(&line).expect("a JSON-RPC line")
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn tools_list(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": {}})
}

/// Before: the bridge waited ~23 s, then said only that the server did not come up.
#[test]
fn the_bridge_reports_a_port_held_by_another_program_at_once() {
    let (_dir, home) = temp_home();
    let storage = home.join("storage");
    let port = foreign_program();
    let started = Instant::now();
    let (_, err, code) = run(
        kg(
            &[
                "stdio",
                "--port",
                &port.to_string(),
                "--storage",
                &storage.to_string_lossy(),
            ],
            &home,
            &[],
        ),
        &format!("{}\n", tools_list(1)),
    );
    let took = started.elapsed();
    assert_eq!(code, 1, "{err}");
    assert!(took < Duration::from_secs(8), "took {took:?}: {err}");
    assert!(
        err.contains("stopped at once") && err.contains("already in use"),
        "{err}"
    );
    assert!(
        err.contains(&format!("kg-memory serve --port {port}")),
        "{err}"
    );
}

/// Before: once its server died, every request failed until Claude Desktop restarted.
#[test]
fn the_bridge_restarts_a_server_that_died_or_says_why_it_cannot() {
    let (_dir, home) = temp_home();
    let storage = home.join("storage");
    let port = free_port();
    let detached = Detached {
        storage: storage.clone(),
    };
    let mut bridge = Bridge::start(&home, &storage, port);
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "wiring-test", "version": "1"}}});
    let answer = bridge.ask(&init, Duration::from_secs(30));
    assert!(answer["result"]["serverInfo"].is_object(), "{answer}");
    assert_eq!(detached.wait(), port);

    detached.kill();
    let answer = bridge.ask(&tools_list(1), Duration::from_secs(30));
    assert!(
        answer["result"]["tools"]
            .as_array()
            .is_some_and(|t| t.len() == 11),
        "restarted and answered: {answer}"
    );
    assert_eq!(detached.wait(), port);

    // Dead again, and this time another program took the port meanwhile.
    detached.kill();
    let squatter = std::net::TcpListener::bind(("127.0.0.1", port)).expect("take the port");
    std::thread::spawn(move || {
        for stream in squatter.incoming().flatten() {
            let mut stream = stream;
            let mut buf = [0u8; 4096];
            let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
            let _ = stream.read(&mut buf);
            let _ = stream.write_all(
                b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
            );
        }
    });
    let started = Instant::now();
    let answer = bridge.ask(&tools_list(2), Duration::from_secs(30));
    let took = started.elapsed();
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert_eq!(answer["id"], 2, "{answer}");
    assert!(
        message.contains("could not be started again") && message.contains("already in use"),
        "{answer}"
    );
    assert!(took < Duration::from_secs(8), "took {took:?}");
}

/// `kg-memory status` for the two other routes: the plugin alone, and a hand-made
/// `claude mcp add --transport http -s user kg …` entry without hooks.
#[test]
fn status_names_each_route_as_it_is_wired() {
    let server = Server::fresh();
    let home = server.home.clone();
    let env = [
        ("KG_HTTP_PORT", server.port.to_string()),
        (
            "KG_STORAGE_ROOT",
            server.storage.to_string_lossy().into_owned(),
        ),
    ];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let scrub = |text: &str| {
        text.replace(&server.storage.to_string_lossy().into_owned(), "<STORAGE>")
            .replace(&home.to_string_lossy().into_owned(), "<HOME>")
            .replace(&server.port.to_string(), "<PORT>")
    };
    let status = || {
        let (out, err, code) = run(kg(&["status"], &home, &env), "");
        assert_eq!(code, 0, "{out}{err}");
        wiring_lines(&scrub(&out))
    };

    install_plugin_record(&home);
    insta::assert_snapshot!("status_wiring_plugin_route", status());

    // The plugin gone, an MCP entry made by `claude mcp add` in its place.
    std::fs::remove_dir_all(home.join(".claude")).expect("remove plugin");
    let url = format!("http://127.0.0.1:{}/", server.port);
    std::fs::write(
        home.join(".claude.json"),
        json!({"mcpServers": {"kg": {"type": "http", "url": url}}}).to_string(),
    )
    .expect("write ~/.claude.json");
    insta::assert_snapshot!("status_wiring_mcp_add_route", status());
}

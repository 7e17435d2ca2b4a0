//! One server per storage root, with the real binary: a second `serve` on a held root
//! refuses and names the holder; couriers configured with another port talk to the
//! holder (or say why not) and never start a second server, so no acknowledged write
//! is saved over. Before the root lock, every test here failed (checked against the
//! binary built from the tree without it): the second server started, and the hook
//! and the bridge each started a server of their own on their port.

use crate::server::{Server, free_port, temp_home};
use kg_test_support::http::session_of;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const LOCK_FILE: &str = ".kg-memory.lock";

/// `kg-memory <args>` as a courier (or a second server) configured with `port` and
/// the same home and storage root as a running server.
fn kg(args: &[&str], home: &Path, storage: &Path, port: u16) -> Command {
    let mut cmd = Command::new(kg_test_support::kg_memory_bin());
    cmd.args(args)
        .env("HOME", home)
        .env("KG_STORAGE_ROOT", storage)
        .env("KG_HTTP_PORT", port.to_string())
        .env("KG_AUTOCOMMIT_INTERVAL", "0")
        .env_remove("KG_HTTP_HOST")
        .env_remove("KG_CLOCK_FILE")
        .env_remove("XDG_STATE_HOME");
    cmd
}

/// Run a hook courier on `stdin`; returns what it printed.
fn hook(event: &str, stdin: &Value, home: &Path, storage: &Path, port: u16) -> String {
    let mut child = kg(&["hook", event], home, storage, port)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the hook");
    let _ = child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.to_string().as_bytes());
    let out = child.wait_with_output().expect("hook output");
    assert!(out.status.success(), "a hook always exits 0");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn listening(port: u16) -> bool {
    std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
}

/// A server that a courier may have started on `port` (it must not have): stopped
/// when the test ends, whatever the test found, so none outlives it.
struct Stray {
    pid_file: PathBuf,
    port: u16,
}

impl Stray {
    fn on(home: &Path, port: u16) -> Stray {
        Stray {
            pid_file: home.join(format!(".local/state/kg-memory/server-{port}.pid")),
            port,
        }
    }

    /// No server came up on the port (given a moment to try).
    fn assert_none(&self) {
        std::thread::sleep(Duration::from_millis(1500));
        assert!(
            !self.pid_file.exists() && !listening(self.port),
            "a second server was started on port {} for the held storage root",
            self.port
        );
    }
}

impl Drop for Stray {
    fn drop(&mut self) {
        let Some(pid) = std::fs::read_to_string(&self.pid_file)
            .ok()
            .and_then(|p| p.trim().parse::<i32>().ok())
        else {
            return;
        };
        // SAFETY: signalling a process by the pid its own pid file names.
        unsafe {
            libc::kill(pid, libc::SIGTERM);
        }
        let start = Instant::now();
        while listening(self.port) && start.elapsed() < Duration::from_secs(20) {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Open a KG session through `server` and put a user-level node; returns the session.
fn put_user_node(server: &mut Server, project: &Path, id: &str) -> String {
    let (text, _) = server.call("kg_read", &json!({"cwd": project}));
    let sid = session_of(&text).expect("session id");
    let (text, is_error) = server.call(
        "kg_put_node",
        &json!({"session_id": sid, "level": "user", "id": id, "gist": format!("Fact {id} for the lock test")}),
    );
    assert!(!is_error, "{text}");
    sid
}

/// The user graph's node ids, as saved on disk.
fn user_nodes_on_disk(storage: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(storage.join("user.json")).expect("user.json");
    let graph: Value = serde_json::from_str(&text).expect("user.json parses");
    let mut ids: Vec<String> = graph["nodes"]
        .as_object()
        .map(|nodes| nodes.keys().cloned().collect())
        .unwrap_or_default();
    ids.sort();
    ids
}

fn lock_record(storage: &Path) -> Value {
    let text = std::fs::read_to_string(storage.join(LOCK_FILE)).expect("the root's lock file");
    serde_json::from_str(text.trim()).expect("the lock file holds a JSON record")
}

/// Before the lock, the second server started and served the same root.
#[test]
fn a_second_server_on_a_held_root_refuses_naming_the_holder_until_it_dies() {
    let (_dir, home) = temp_home();
    let storage = home.join("storage");
    let mut first = Server::start_in(&home, &storage, None, &[]);
    let other = free_port();
    let mut second = kg(
        &["serve", "--port", &other.to_string()],
        &home,
        &storage,
        other,
    )
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .expect("spawn the second server");
    let start = Instant::now();
    let status = loop {
        if let Some(status) = second.try_wait().expect("wait") {
            break status;
        }
        if start.elapsed() > Duration::from_secs(15) {
            let _ = second.kill();
            let _ = second.wait();
            panic!("a second server started on the held storage root (port {other})");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut message = String::new();
    let _ = std::io::Read::read_to_string(&mut second.stderr.take().expect("stderr"), &mut message);
    assert!(!status.success(), "{message}");
    assert!(
        message.contains(&format!("pid {}", first.child.id()))
            && message.contains(&format!("port {}", first.port)),
        "the refusal names the holder: {message}"
    );
    assert_eq!(message.trim().lines().count(), 1, "one line: {message}");
    assert!(!listening(other));
    let record = lock_record(&storage);
    assert_eq!(
        (record["pid"].as_u64(), record["port"].as_u64()),
        (
            Some(u64::from(first.child.id())),
            Some(u64::from(first.port))
        )
    );

    // The OS lets go of a killed holder's lock: its leftover file blocks nobody.
    let _ = first.child.kill();
    let _ = first.child.wait();
    assert!(storage.join(LOCK_FILE).exists());
    let third = Server::start_in(&home, &storage, None, &[]);
    assert_eq!(
        lock_record(&storage)["pid"].as_u64(),
        Some(u64::from(third.child.id()))
    );
}

/// Before the lock, the hook started a server on its own port and said it was warming up.
#[test]
fn a_hook_with_another_port_reaches_the_holder_and_starts_no_server() {
    let (_dir, home) = temp_home();
    let storage = home.join("storage");
    let project = home.join("app");
    std::fs::create_dir_all(&project).expect("project");
    let mut holder = Server::start_in(&home, &storage, None, &[]);
    put_user_node(&mut holder, &project, "before-hook");

    let port = free_port();
    let stray = Stray::on(&home, port);
    let start = json!({"session_id": "cc-lock-1", "cwd": project, "source": "startup"});
    let out = hook("session-start", &start, &home, &storage, port);
    assert!(
        out.contains("KG MEMORY PRELOADED") && out.contains("before-hook"),
        "the holder answered the hook: {out}"
    );
    // About what the memory holds: the preload showed all of it (nothing owed), so
    // the holder answers with a reminder.
    let prompt = json!({"session_id": "cc-lock-1", "cwd": project,
                        "prompt": "which fact did the lock test keep before the hook?"});
    let out = hook("prompt-submit", &prompt, &home, &storage, port);
    assert!(
        out.contains("hookSpecificOutput"),
        "the holder answered the prompt: {out}"
    );
    stray.assert_none();
    // `status` asks the holder too, not the port in its own settings (it answered
    // "No KG Memory server" and exited 1 before).
    let out = kg(&["status"], &home, &storage, port)
        .output()
        .expect("status");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.starts_with(&format!(
            "KG Memory {} at http://127.0.0.1:{}",
            env!("CARGO_PKG_VERSION"),
            holder.port
        )),
        "{text}"
    );

    put_user_node(&mut holder, &project, "after-hook");
    assert!(holder.stop().success());
    assert_eq!(
        user_nodes_on_disk(&storage),
        ["after-hook", "before-hook"],
        "every acknowledged node is on disk"
    );
}

/// Before the lock, the hook started a second server here too.
#[test]
fn a_hook_says_why_and_starts_no_server_when_the_holder_does_not_answer() {
    let (_dir, home) = temp_home();
    let storage = home.join("storage");
    let mut holder = Server::start_in(&home, &storage, None, &[]);
    let port = free_port();
    let stray = Stray::on(&home, port);
    // A stopped process keeps its lock but answers nothing.
    // SAFETY: signalling our own child by its pid.
    unsafe {
        libc::kill(holder.child.id() as i32, libc::SIGSTOP);
    }
    let start = json!({"session_id": "cc-lock-2", "cwd": home, "source": "startup"});
    let out = hook("session-start", &start, &home, &storage, port);
    // SAFETY: as above.
    unsafe {
        libc::kill(holder.child.id() as i32, libc::SIGCONT);
    }
    assert!(
        out.contains(&format!("pid {}", holder.child.id()))
            && out.contains(&format!("port {}", holder.port))
            && out.contains("no second server was started"),
        "the hook says why it started nothing: {out}"
    );
    stray.assert_none();
    assert!(holder.stop().success());
}

/// Before the lock, the bridge started its own server, and the holder's next save
/// dropped `via-bridge` from disk.
#[test]
fn the_stdio_bridge_with_another_port_talks_to_the_holder() {
    let (_dir, home) = temp_home();
    let storage = home.join("storage");
    let project = home.join("desk");
    std::fs::create_dir_all(&project).expect("project");
    let mut holder = Server::start_in(&home, &storage, None, &[]);
    put_user_node(&mut holder, &project, "before-bridge");

    let port = free_port();
    let stray = Stray::on(&home, port);
    let mut bridge = kg(&["stdio"], &home, &storage, port)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the bridge");
    let mut input = bridge.stdin.take().expect("stdin");
    let (lines, answers) = mpsc::channel();
    let output = bridge.stdout.take().expect("stdout");
    std::thread::spawn(move || {
        for line in BufReader::new(output).lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let mut ask = move |message: Value| -> Option<Value> {
        writeln!(input, "{message}").expect("write to the bridge");
        message.get("id")?;
        let line = answers
            .recv_timeout(Duration::from_secs(30))
            .expect("the bridge answers");
        Some(serde_json::from_str(&line).expect("JSON-RPC answer"))
    };
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "kg-lock-test", "version": "1"}}});
    assert!(ask(init).is_some_and(|a| a["result"].is_object()));
    ask(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let call = |id: u32, name: &str, args: Value| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": name, "arguments": args}})
    };
    let text = |answer: Option<Value>| {
        answer.expect("an answer")["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    let read = text(ask(call(1, "kg_read", json!({"cwd": project}))));
    assert!(read.contains("before-bridge"), "{read}");
    let sid = session_of(&read).expect("session id");
    let put = text(ask(call(
        2,
        "kg_put_node",
        json!({"session_id": sid, "level": "user", "id": "via-bridge", "gist": "Written through the bridge"}),
    )));
    assert!(put.starts_with("Node 'via-bridge' saved"), "{put}");
    drop(ask);
    assert!(bridge.wait().expect("bridge exits").success());

    // The holder saves its graph after the bridge's write: it must have seen it.
    put_user_node(&mut holder, &project, "after-bridge");
    assert!(holder.stop().success());
    assert_eq!(
        user_nodes_on_disk(&storage),
        ["after-bridge", "before-bridge", "via-bridge"],
        "every acknowledged node is on disk"
    );
    stray.assert_none();
}

/// Before the lock, there was no lock file to keep out. Also when the root's
/// .gitignore already names it (a root sync was set up on, then turned off), and where
/// git knows no author (a fresh machine): KG Memory signs the commit then.
#[test]
fn the_lock_file_stays_out_of_autocommits() {
    for (ignored, author) in [(false, Some("kg")), (true, Some("kg")), (false, None)] {
        lock_file_stays_out_of_autocommits(ignored, author);
    }
}

fn lock_file_stays_out_of_autocommits(ignored: bool, author: Option<&str>) {
    let (_dir, home) = temp_home();
    let storage = home.join("storage");
    std::fs::create_dir_all(&storage).expect("storage");
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args(args)
            .current_dir(&storage)
            .output()
            .expect("git runs");
        assert!(out.status.success(), "git {args:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    git(&["init", "--quiet"]);
    if ignored {
        std::fs::write(storage.join(".gitignore"), format!("/{LOCK_FILE}\n")).expect("ignore");
    }
    let mut env = vec![
        ("KG_AUTOCOMMIT_INTERVAL", "1"),
        ("GIT_CONFIG_NOSYSTEM", "1"),
    ];
    if let Some(name) = author {
        env.extend([
            ("GIT_AUTHOR_NAME", name),
            ("GIT_AUTHOR_EMAIL", "kg@example.invalid"),
            ("GIT_COMMITTER_NAME", name),
            ("GIT_COMMITTER_EMAIL", "kg@example.invalid"),
        ]);
    }
    let mut server = Server::start_in(&home, &storage, None, &env);
    let project = home.join("app");
    std::fs::create_dir_all(&project).expect("project");
    put_user_node(&mut server, &project, "committed");
    let start = Instant::now();
    // Committed, not only staged (a repository without commits answers nothing).
    let committed = || {
        Command::new("git")
            .args(["log", "--all", "--name-only", "--format="])
            .current_dir(&storage)
            .output()
            .map(|out| String::from_utf8_lossy(&out.stdout).into_owned())
            .unwrap_or_default()
    };
    while !committed().contains("user.json") {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "no autocommit of user.json"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(server.stop().success());
    assert!(
        storage.join(LOCK_FILE).exists(),
        "the root carries its lock file"
    );
    let history = git(&["log", "--all", "--name-only", "--format="]);
    assert!(!history.contains(LOCK_FILE), "{history}");
    let authors = git(&["log", "--all", "--format=%an"]);
    let expected = author.unwrap_or("KG Memory");
    assert!(authors.lines().all(|a| a == expected), "authors: {authors}");
}

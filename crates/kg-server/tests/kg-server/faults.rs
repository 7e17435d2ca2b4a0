//! Disk faults under a running server: the storage root turned read-only, a full
//! disk, and graph files deleted or replaced behind the server's back.
//!
//! For every refused write: the caller gets a clear error (MCP `Internal error: could
//! not save…` with `isError`, REST 500 with a `detail`), nothing is kept in memory (a
//! following read does not show it), no partial or temp file is left, reads keep
//! being served, and once the fault is gone writes succeed again and the files hold
//! exactly what was acknowledged.
//!
//! The read-only root is a read-only bind mount over it (chmod does not stop root)
//! and the full disk a small tmpfs. A non-root user falls back to `chmod` for the read-only
//! case, which does stop it; the full disk needs root, so its test is ignored unless
//! asked for (`--ignored`, which scripts/test.sh passes when it runs as root). A fault
//! that cannot be produced fails its test: it never passes without checking.

use crate::crash::disk_home;
use crate::server::{ServerProcess, serve};
use crate::wire;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(20);

/// A mount made by this test, undone (lazily) when dropped.
struct Mount {
    target: PathBuf,
}

fn c_path(path: &Path) -> CString {
    CString::new(path.as_os_str().as_bytes()).expect("path without NUL")
}

fn mount(
    source: &str,
    target: &Path,
    fstype: &str,
    flags: libc::c_ulong,
    data: &str,
) -> std::io::Result<()> {
    let (source, fstype, data) = (
        CString::new(source).expect("source"),
        CString::new(fstype).expect("fstype"),
        CString::new(data).expect("data"),
    );
    let target = c_path(target);
    // SAFETY: every pointer is a valid NUL-terminated string that outlives the call.
    let rc = unsafe {
        libc::mount(
            source.as_ptr(),
            target.as_ptr(),
            fstype.as_ptr(),
            flags,
            data.as_ptr().cast(),
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

impl Mount {
    fn tmpfs(target: &Path, bytes: usize) -> std::io::Result<Mount> {
        std::fs::create_dir_all(target)?;
        mount(
            "kg-faults",
            target,
            "tmpfs",
            0,
            &format!("size={bytes},mode=0755"),
        )?;
        Ok(Mount {
            target: target.to_path_buf(),
        })
    }

    /// A read-only view of the folder `target` mounted over it. Paths under `target`
    /// then reach the view; files opened before stay writable on the mount beneath
    /// (the server holds its root lock open for writing, so remounting that one
    /// read-only would be refused as busy).
    fn read_only_view(target: &Path) -> std::io::Result<Mount> {
        let path = target.to_string_lossy().into_owned();
        mount(&path, target, "", libc::MS_BIND, "")?;
        let view = Mount {
            target: target.to_path_buf(),
        };
        mount(
            "",
            target,
            "",
            libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY,
            "",
        )?;
        Ok(view)
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let target = c_path(&self.target);
        // SAFETY: a valid path; a lazy unmount never fails on busy files.
        unsafe {
            libc::umount2(target.as_ptr(), libc::MNT_DETACH);
        }
    }
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// A fault that cannot be produced here fails the test: nothing was checked. Run it
/// as root (or with CAP_SYS_ADMIN), or leave it out explicitly (`--skip <test>`).
fn cannot_produce(fault: &str, why: &std::io::Error) -> ! {
    panic!(
        "faults: cannot produce '{fault}' in this environment ({why}), so nothing was \
         checked. Run the test as root (or with CAP_SYS_ADMIN), or leave it out \
         explicitly with `--skip`."
    );
}

/// Every file under `root`, with its bytes.
pub(crate) fn tree(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let bytes = std::fs::read(&path).unwrap_or_default();
                out.insert(
                    path.strip_prefix(root).unwrap_or(&path).to_path_buf(),
                    bytes,
                );
            }
        }
    }
    out
}

/// An MCP client of one session.
struct Agent {
    port: u16,
    sid: String,
}

impl Agent {
    fn open(port: u16, cwd: &str) -> Agent {
        let (text, err) =
            wire::mcp_call(port, "kg_read", &json!({"cwd": cwd}), TIMEOUT).expect("kg_read");
        assert!(!err, "{text}");
        Agent {
            port,
            sid: wire::session_of(&text).expect("session id"),
        }
    }

    fn call(&self, tool: &str, mut args: Value) -> (String, bool) {
        args["session_id"] = Value::String(self.sid.clone());
        wire::mcp_call(self.port, tool, &args, TIMEOUT).expect("answer")
    }

    fn ok(&self, tool: &str, args: Value) -> String {
        let (text, err) = self.call(tool, args);
        assert!(!err, "{tool}: {text}");
        text
    }

    /// The call is refused with the save error.
    fn refused(&self, tool: &str, args: Value, cause: &str) {
        let (text, err) = self.call(tool, args.clone());
        assert!(err, "{tool} {args} should fail: {text}");
        assert!(
            text.starts_with(
                "Internal error: could not save the change, nothing was stored: cannot write"
            ) && text.contains(cause),
            "{tool}: unclear error: {text}"
        );
    }

    /// What a node read shows: its gist, or `None` when not found.
    fn gist(&self, level: &str, id: &str) -> Option<String> {
        let text = self.ok("kg_read", json!({"ids": [id], "level": level}));
        if text.contains(&format!("▸ {id}: NOT FOUND")) {
            return None;
        }
        text.lines()
            .find_map(|l| l.strip_prefix("  gist: "))
            .map(str::to_string)
    }
}

fn rest(port: u16, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    wire::json_request(port, method, path, body.as_ref(), TIMEOUT).expect("rest")
}

/// Known state written before the fault.
fn seed(agent: &Agent, project: &str) {
    agent.ok(
        "kg_put_node",
        json!({"level": "user", "id": "keep", "gist": "before the fault"}),
    );
    agent.ok(
        "kg_put_node",
        json!({"level": "project", "id": "pkeep", "gist": "project before"}),
    );
    agent.ok(
        "kg_put_edge",
        json!({"level": "user", "from": "keep", "to": "src/a.rs", "rel": "touches"}),
    );
    agent.ok(
        "kg_progress",
        json!({"task_id": "scout", "state": {"step": 1}}),
    );
    let (status, body) = rest(
        agent.port,
        "POST",
        "/api/nodes",
        Some(
            json!({"level": "project", "id": "rkeep", "gist": "rest before", "project_path": project}),
        ),
    );
    assert_eq!(status, 200, "{body}");
}

/// Every kind of write is refused with `cause`, memory keeps nothing of it, reads
/// are served, and the files did not change.
fn writes_are_refused(agent: &Agent, project: &str, storage: &Path, cause: &str) {
    let port = agent.port;
    let before = tree(storage);
    agent.refused(
        "kg_put_node",
        json!({"level": "user", "id": "keep", "gist": "changed during the fault"}),
        cause,
    );
    agent.refused(
        "kg_put_node",
        // About 50 KB of notes: more than a nearly full disk holds.
        json!({"level": "project", "id": "fresh", "gist": "fresh", "notes": vec!["x".repeat(2_000); 25]}),
        cause,
    );
    agent.refused(
        "kg_put_edge",
        json!({"level": "user", "from": "keep", "to": "src/b.rs", "rel": "touches"}),
        cause,
    );
    agent.refused("kg_delete_node", json!({"id": "pkeep"}), cause);
    agent.refused(
        "kg_delete_edge",
        json!({"from": "keep", "to": "src/a.rs", "rel": "touches"}),
        cause,
    );
    agent.refused(
        "kg_progress",
        json!({"task_id": "scout", "state": {"step": 2}}),
        cause,
    );
    let q = format!("project_path={}", kg_client::encode(project));
    for (method, path, body) in [
        (
            "POST",
            "/api/nodes".to_string(),
            Some(
                json!({"level": "project", "id": "rkeep", "gist": "rest during", "project_path": project}),
            ),
        ),
        ("DELETE", format!("/api/nodes/project/rkeep?{q}"), None),
        (
            "POST",
            "/api/edges".to_string(),
            Some(
                json!({"level": "project", "from": "rkeep", "to": "pkeep", "rel": "r", "project_path": project}),
            ),
        ),
        (
            "POST",
            "/api/progress".to_string(),
            Some(json!({"task_id": "scout", "state": {"step": 3}})),
        ),
    ] {
        let (status, v) = rest(port, method, &path, body);
        assert_eq!(status, 500, "{method} {path}: {v}");
        let detail = v["detail"].as_str().unwrap_or_default();
        assert!(
            detail.contains("could not save") && detail.contains(cause),
            "{method} {path}: unclear detail {v}"
        );
    }
    // Nothing refused is in memory; everything acknowledged still is.
    assert_eq!(
        agent.gist("user", "keep").as_deref(),
        Some("before the fault")
    );
    assert_eq!(agent.gist("project", "fresh"), None);
    assert_eq!(
        agent.gist("project", "pkeep").as_deref(),
        Some("project before")
    );
    let read = agent.ok("kg_read", json!({"ids": ["keep"], "level": "user"}));
    assert!(read.contains("keep --touches--> src/a.rs"), "{read}");
    assert!(!read.contains("src/b.rs"), "{read}");
    let progress = agent.ok("kg_progress", json!({"task_id": "scout"}));
    assert!(progress.contains("\"step\": 1"), "{progress}");
    let (status, graph) = rest(port, "GET", &format!("/api/graph/read?{q}"), None);
    assert_eq!(status, 200);
    let rkeep = graph["project"]["nodes"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|n| n["id"] == "rkeep")
        .cloned();
    assert_eq!(rkeep.map(|n| n["gist"].clone()), Some(json!("rest before")));
    assert_eq!(graph["project"]["edges"].as_array().map(Vec::len), Some(0));
    // Reads keep being served.
    let full = agent.ok("kg_read", json!({}));
    assert!(full.contains("  keep: before the fault"), "{full}");
    agent.ok("kg_search", json!({"query": "before"}));
    let other = Agent::open(port, project); // a new session lives in memory meanwhile
    assert!(other.gist("user", "keep").is_some());
    let (status, _) = rest(port, "GET", "/health", None);
    assert_eq!(status, 200);
    // A maintenance tick runs against the fault too, and the server survives it.
    std::thread::sleep(Duration::from_millis(1_500));
    let (status, _) = rest(port, "GET", "/health", None);
    assert_eq!(status, 200);
    // No partial file and no change: the storage is byte for byte what it was.
    let after = tree(storage);
    assert_eq!(
        before.keys().collect::<Vec<_>>(),
        after.keys().collect::<Vec<_>>(),
        "files appeared or vanished during the fault"
    );
    for (name, bytes) in &before {
        assert!(
            after[name] == *bytes,
            "{} changed during the fault",
            name.display()
        );
    }
}

/// After the fault: writes succeed, and a graceful stop leaves exactly the model.
fn writes_recover(agent: &Agent, project: &str, server: &mut ServerProcess, storage: &Path) {
    agent.ok(
        "kg_put_node",
        json!({"level": "user", "id": "keep", "gist": "after the fault"}),
    );
    agent.ok(
        "kg_put_node",
        json!({"level": "project", "id": "fresh", "gist": "written after"}),
    );
    agent.ok(
        "kg_progress",
        json!({"task_id": "scout", "state": {"step": 4}}),
    );
    let (status, v) = rest(
        agent.port,
        "POST",
        "/api/nodes",
        Some(
            json!({"level": "project", "id": "rkeep", "gist": "rest after", "project_path": project}),
        ),
    );
    assert_eq!(status, 200, "{v}");
    assert!(server.stop().success(), "graceful stop");
    let graph = |path: PathBuf| {
        kg_core::parse_graph(&std::fs::read(&path).expect("graph"))
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
            .graph
    };
    let user = graph(storage.join("user.json"));
    let slug = Path::new(project)
        .file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned();
    let proj = graph(storage.join(format!("projects/{slug}/graph.json")));
    assert_eq!(user.nodes["keep"].gist(), "after the fault");
    assert_eq!(proj.nodes["fresh"].gist(), "written after");
    assert_eq!(proj.nodes["rkeep"].gist(), "rest after");
    assert_eq!(proj.nodes["pkeep"].gist(), "project before");
    assert_eq!(user.progress["scout"], json!({"step": 4}));
    let names: Vec<String> = tree(storage)
        .keys()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    assert!(
        !names
            .iter()
            .any(|n| n.ends_with(".tmp") || n.contains(".corrupt-")),
        "leftovers: {names:?}"
    );
}

#[test]
fn read_only_storage_refuses_writes_cleanly_and_recovers() {
    let (_dir, home) = disk_home("kg-faults-ro-");
    let project = home.join("proj");
    std::fs::create_dir_all(&project).expect("project");
    let project = project.to_string_lossy().into_owned();
    let storage = home.join("storage");
    let mut server = serve(&home, &storage, &[("KG_SAVE_INTERVAL", "1")]);
    let agent = Agent::open(server.port, &project);
    seed(&agent, &project);
    // Root: a read-only mount over the storage root (chmod does not stop root).
    // Others: chmod, which binds them.
    let mut view: Option<Mount> = None;
    let mut set_read_only = |ro: bool| -> std::io::Result<()> {
        if is_root() {
            view = if ro {
                Some(Mount::read_only_view(&storage)?)
            } else {
                None
            };
            return Ok(());
        }
        use std::os::unix::fs::PermissionsExt;
        let mode = if ro { 0o555 } else { 0o755 };
        for dir in [
            storage.clone(),
            storage.join("projects"),
            storage.join("projects/proj"),
        ] {
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(mode))?;
        }
        Ok(())
    };
    if let Err(e) = set_read_only(true) {
        cannot_produce("read-only storage root", &e);
    }
    // The fault is real: nothing can be created in the storage root now.
    let probe = std::fs::write(storage.join("probe"), b"x");
    assert!(probe.is_err(), "the storage root is still writable");
    let cause = if is_root() {
        "Read-only file system"
    } else {
        "Permission denied"
    };
    writes_are_refused(&agent, &project, &storage, cause);
    set_read_only(false).expect("writable again");
    writes_recover(&agent, &project, &mut server, &storage);
}

#[test]
#[ignore = "needs root: mounts a 1 MiB tmpfs as the storage root to fill it"]
fn full_disk_refuses_writes_cleanly_and_recovers() {
    let (_dir, home) = disk_home("kg-faults-full-");
    let project = home.join("proj");
    std::fs::create_dir_all(&project).expect("project");
    let project = project.to_string_lossy().into_owned();
    let storage = home.join("storage");
    let _disk = match Mount::tmpfs(&storage, 1 << 20) {
        Ok(m) => m,
        Err(e) => cannot_produce("full disk (a small tmpfs)", &e),
    };
    let mut server = serve(&home, &storage, &[("KG_SAVE_INTERVAL", "1")]);
    let agent = Agent::open(server.port, &project);
    seed(&agent, &project);
    // Fill the disk to the last byte.
    let filler = storage.join("filler");
    {
        use std::io::Write;
        let mut f = std::fs::File::create(&filler).expect("filler");
        let chunk = vec![0u8; 4096];
        while f.write_all(&chunk).is_ok() {}
        while f.write_all(&chunk[..1]).is_ok() {}
        let _ = f.sync_all();
    }
    assert!(
        std::fs::write(storage.join("probe"), b"x").is_err(),
        "the disk is not full"
    );
    writes_are_refused(&agent, &project, &storage, "No space left on device");
    std::fs::remove_file(&filler).expect("free the space");
    writes_recover(&agent, &project, &mut server, &storage);
}

#[test]
fn graph_files_deleted_or_replaced_under_the_server() {
    let (_dir, home) = disk_home("kg-faults-files-");
    let project = home.join("proj");
    std::fs::create_dir_all(&project).expect("project");
    let project = project.to_string_lossy().into_owned();
    let storage = home.join("storage");
    let mut server = serve(&home, &storage, &[]);
    let agent = Agent::open(server.port, &project);
    let put = |id: &str, gist: &str| {
        agent.ok(
            "kg_put_node",
            json!({"level": "user", "id": id, "gist": gist}),
        )
    };
    put("a", "first");
    put("b", "second");
    let user = storage.join("user.json");
    let prev = storage.join("user.prev");
    let parse = |path: &Path| {
        kg_core::parse_graph(&std::fs::read(path).expect("file"))
            .expect("parses")
            .graph
    };
    let ids = |path: &Path| parse(path).nodes.keys().cloned().collect::<Vec<_>>();

    // Deleted: the next write puts the whole graph back from memory.
    std::fs::remove_file(&user).expect("rm");
    put("c", "third");
    assert_eq!(ids(&user), ["a", "b", "c"]);

    // Replaced by another valid graph: memory wins, the stranger is kept as .prev.
    std::fs::write(
        &user,
        r#"{"nodes": {"x": {"id": "x", "gist": "restored by hand"}}}"#,
    )
    .expect("replace");
    put("d", "fourth");
    assert_eq!(ids(&user), ["a", "b", "c", "d"]);
    assert_eq!(ids(&prev), ["x"], "the replaced file became the backup");

    // Replaced by garbage: memory wins, the garbage is moved aside (never destroyed),
    // and the backup is not replaced by it.
    std::fs::write(&user, b"{\"nodes\": {\"half-edited").expect("scribble");
    put("e", "fifth");
    assert_eq!(ids(&user), ["a", "b", "c", "d", "e"]);
    assert_eq!(ids(&prev), ["x"]);
    let quarantined: Vec<_> = std::fs::read_dir(&storage)
        .expect("ls")
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("user.json.corrupt-")
        })
        .map(|e| std::fs::read(e.path()).expect("read"))
        .collect();
    assert_eq!(
        quarantined,
        [b"{\"nodes\": {\"half-edited".to_vec()],
        "the damaged file is kept aside"
    );

    // Replaced by a directory: the write cannot land and is refused cleanly.
    std::fs::remove_file(&user).expect("rm");
    std::fs::create_dir(&user).expect("dir in the way");
    let (text, err) = agent.call(
        "kg_put_node",
        json!({"level": "user", "id": "f", "gist": "sixth"}),
    );
    assert!(
        err && text.starts_with("Internal error: could not save the change, nothing was stored"),
        "{text}"
    );
    let (status, v) = rest(
        server.port,
        "POST",
        "/api/nodes",
        Some(json!({"level": "user", "id": "f", "gist": "sixth"})),
    );
    assert_eq!(status, 500, "{v}");
    assert!(
        v["detail"]
            .as_str()
            .unwrap_or("")
            .contains("could not save"),
        "{v}"
    );
    assert_eq!(
        agent.gist("user", "f"),
        None,
        "a refused write is not in memory"
    );
    assert_eq!(agent.gist("user", "e").as_deref(), Some("fifth"));
    let leftovers: Vec<_> = std::fs::read_dir(&storage)
        .expect("ls")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    std::fs::remove_dir(&user).expect("clear the way");
    put("f", "sixth");

    // A project folder removed entirely: recreated by the next write.
    agent.ok(
        "kg_put_node",
        json!({"level": "project", "id": "p", "gist": "project node"}),
    );
    std::fs::remove_dir_all(storage.join("projects/proj")).expect("rm project");
    agent.ok(
        "kg_put_node",
        json!({"level": "project", "id": "q", "gist": "another"}),
    );
    assert_eq!(ids(&storage.join("projects/proj/graph.json")), ["p", "q"]);

    assert!(server.stop().success());
    assert_eq!(ids(&user), ["a", "b", "c", "d", "e", "f"]);
}

//! `kg-memory install | uninstall` given bad input, run as a person would: an agent
//! name it does not know, an agent's configuration file that is damaged or unreadable,
//! a home it may not write. Each gets a clear error naming what is wrong, and nothing
//! is written: not the file, not a backup, not half of an install.

use crate::server::temp_home;
use crate::wiring::{kg, run};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Every file under `dir`, with its bytes (what "nothing was written" compares).
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                found.push((path.clone(), fs::read(&path).unwrap_or_default()));
            }
        }
    }
    found.sort();
    found
}

fn state(home: &Path) -> String {
    home.join(".state").to_string_lossy().into_owned()
}

#[test]
fn an_unknown_agent_is_refused_naming_the_known_ones() {
    let (_dir, home) = temp_home();
    let before = snapshot(&home);
    for command in ["install", "uninstall"] {
        let (out, err, code) = run(kg(&[command, "gemini-cli"], &home, &[]), "");
        assert_eq!(code, 1, "{out}{err}");
        assert!(err.contains("'gemini-cli'"), "{err}");
        for known in ["claude-code", "claude-desktop", "codex", "gemini"] {
            assert!(err.contains(known), "{command}: {err}");
        }
    }
    assert_eq!(snapshot(&home), before);
}

/// (agent, file under home, its content, what the error must say)
const DAMAGED: &[(&str, &str, &str, &str)] = &[
    (
        "claude-code",
        ".claude.json",
        "{\"mcpServers\": {",
        "is not valid JSON",
    ),
    (
        "claude-code",
        ".claude/settings.json",
        "[1, 2]",
        "is not a JSON object",
    ),
    (
        "claude-code",
        ".claude/settings.json",
        "{\"hooks\": {\"SessionStart\": {}}}",
        "hooks.SessionStart is not a list",
    ),
    (
        "claude-desktop",
        ".config/Claude/claude_desktop_config.json",
        "{\"mcpServers\": []}",
        "\"mcpServers\" is not an object",
    ),
    (
        "gemini",
        ".gemini/settings.json",
        "{\"ui\": ",
        "is not valid JSON",
    ),
    (
        "gemini",
        ".gemini/settings.json",
        "{\n  // my theme\n  \"ui\": {\"theme\": \"ANSI\"}\n}\n",
        "has comments",
    ),
    (
        "gemini",
        ".gemini/settings.json",
        "{\"hooks\": {\"AfterTool\": \"kg-memory\"}}",
        "hooks.AfterTool is not a list",
    ),
    (
        "codex",
        ".codex/config.toml",
        "[mcp_servers\nkg = 1",
        "is not valid TOML",
    ),
    ("codex", ".codex/hooks.json", "[1", "is not valid JSON"),
    (
        "codex",
        ".codex/hooks.json",
        "{\"hooks\": []}",
        "\"hooks\" is not an object",
    ),
];

#[test]
fn a_damaged_agent_file_is_named_and_kept_untouched() {
    for (agent, file, content, says) in DAMAGED {
        let (_dir, home) = temp_home();
        let path = home.join(file);
        fs::create_dir_all(path.parent().expect("folder")).expect("mkdir");
        fs::write(&path, content).expect("write");
        let before = snapshot(&home);
        for command in ["install", "uninstall"] {
            let (out, err, code) = run(
                kg(
                    &[command, agent],
                    &home,
                    &[("XDG_STATE_HOME", &state(&home))],
                ),
                "",
            );
            let said = format!("{out}{err}");
            if *command == *"uninstall" && !said.contains(says) {
                // Uninstall reads only what it may have to change; a damaged file it
                // need not read is simply left as it is.
                assert_eq!(code, 0, "{said}");
                assert_eq!(
                    snapshot(&home),
                    before,
                    "{command} {agent}: nothing written"
                );
                continue;
            }
            assert_eq!(code, 1, "{agent} {file}: {said}");
            assert!(
                err.contains(&path.display().to_string()) && err.contains(says),
                "{command} {agent} with {file} = {content:?}: {err}"
            );
            assert_eq!(
                snapshot(&home),
                before,
                "{command} {agent}: nothing written"
            );
        }
    }
}

#[test]
fn an_unreadable_agent_file_is_named() {
    let (_dir, home) = temp_home();
    // A folder where the settings file belongs: unreadable as a file, whoever runs this.
    let path = home.join(".gemini/settings.json");
    fs::create_dir_all(&path).expect("mkdir");
    let before = snapshot(&home);
    let (out, err, code) = run(kg(&["install", "gemini"], &home, &[]), "");
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains(&format!("cannot read {}", path.display())),
        "{err}"
    );
    assert_eq!(snapshot(&home), before);
}

/// This process's effective user id (0: root, whom file modes do not stop).
fn effective_uid() -> u32 {
    fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2))
                .and_then(|u| u.parse().ok())
        })
        .unwrap_or(u32::MAX)
}

/// The user that runs `kg-memory` in the read-only tests: this one, or `nobody` when
/// the tests run as root (whom read-only modes would not stop).
const NOBODY: u32 = 65_534;

/// `kg-memory <args>` as a user that read-only modes stop; `_bin` keeps alive a copy of
/// the program that user can run, when it cannot reach the build's (a checkout under
/// a private `/root`).
fn kg_unprivileged(args: &[&str], home: &Path, bin: &mut Option<tempfile::TempDir>) -> Command {
    let plain = kg(args, home, &[("XDG_STATE_HOME", &state(home))]);
    if effective_uid() != 0 {
        return plain;
    }
    let as_nobody = |program: &Path| {
        let mut cmd = Command::new("setpriv");
        cmd.args([
            format!("--reuid={NOBODY}"),
            format!("--regid={NOBODY}"),
            "--clear-groups".to_string(),
        ])
        .arg(program);
        cmd
    };
    let mut program = PathBuf::from(plain.get_program());
    // Readable, not only runnable: install copies a build's program to ~/.local/bin.
    let reachable = as_nobody(Path::new("test"))
        .arg("-r")
        .arg(&program)
        .status()
        .is_ok_and(|s| s.success());
    if !reachable {
        use std::os::unix::fs::PermissionsExt;
        let dir = bin.get_or_insert_with(|| {
            let dir = tempfile::Builder::new()
                .prefix("kg-runner-")
                .tempdir_in("/dev/shm")
                .expect("runner folder");
            fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).expect("chmod");
            dir
        });
        let copy = dir.path().join("kg-memory");
        if !copy.exists() {
            fs::copy(&program, &copy).expect("copy the program");
            // Another test thread's child may hold the new file open for writing a
            // moment ("text file busy") until it runs its own program.
            for _ in 0..100 {
                let runs = as_nobody(&copy)
                    .arg("--version")
                    .output()
                    .is_ok_and(|o| o.status.success());
                if runs {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        }
        program = copy;
    }
    let mut cmd = as_nobody(&program);
    cmd.args(plain.get_args());
    for (k, v) in plain.get_envs() {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    cmd
}

/// Let the user `kg_unprivileged` runs as write `dir` (a no-op when that is us).
fn writable_by_runner(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    fs::create_dir_all(dir).expect("mkdir");
    if effective_uid() == 0 {
        std::os::unix::fs::chown(dir, Some(NOBODY), Some(NOBODY)).expect("chown");
    }
    fs::set_permissions(dir, fs::Permissions::from_mode(0o755)).expect("chmod");
}

fn read_only(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(dir, fs::Permissions::from_mode(0o555)).expect("chmod");
}

/// A home with the person's Claude Code and Gemini CLI settings, readable by the
/// runner, writable by nobody: every install stops with the folder it could not write,
/// and nothing changes.
#[test]
fn a_read_only_home_changes_nothing() {
    let mut bin = None;
    use std::os::unix::fs::PermissionsExt;
    let (_dir, home) = temp_home();
    fs::create_dir_all(home.join(".claude")).expect("mkdir");
    fs::create_dir_all(home.join(".gemini")).expect("mkdir");
    fs::create_dir_all(home.join(".codex")).expect("mkdir");
    fs::write(home.join(".codex/config.toml"), "model = \"o4\"\n").expect("write");
    fs::write(home.join(".claude.json"), "{\"numStartups\": 4}").expect("write");
    fs::write(home.join(".claude/settings.json"), "{\"theme\": \"dark\"}").expect("write");
    fs::write(home.join(".gemini/settings.json"), "{\"ui\": {}}").expect("write");
    writable_by_runner(&home.join(".state"));
    for dir in [
        home.join(".claude"),
        home.join(".gemini"),
        home.join(".codex"),
        home.clone(),
    ] {
        read_only(&dir);
    }
    let before = snapshot(&home);
    for agent in ["claude-code", "codex", "gemini"] {
        let (out, err, code) = run(kg_unprivileged(&["install", agent], &home, &mut bin), "");
        assert_eq!(code, 1, "{agent}: {out}{err}");
        assert!(
            err.contains(&home.display().to_string()) && err.contains("ermission denied"),
            "{agent}: {err}"
        );
        assert_eq!(snapshot(&home), before, "{agent}: nothing written");
    }
    // Writable again, so the temporary home can be removed.
    for dir in [
        home.clone(),
        home.join(".claude"),
        home.join(".gemini"),
        home.join(".codex"),
    ] {
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).expect("chmod");
    }
}

/// The program's folder and the first file can be written, the second cannot: the
/// install puts the first back, and removes its backup and the program it copied.
#[test]
fn an_install_that_fails_on_its_second_file_leaves_the_first_as_it_was() {
    let mut bin = None;
    use std::os::unix::fs::PermissionsExt;
    let (_dir, home) = temp_home();
    writable_by_runner(&home);
    writable_by_runner(&home.join(".state"));
    writable_by_runner(&home.join(".local"));
    fs::create_dir_all(home.join(".claude")).expect("mkdir");
    let claude_json = home.join(".claude.json");
    fs::write(&claude_json, "{\"numStartups\": 4}").expect("write");
    if effective_uid() == 0 {
        std::os::unix::fs::chown(&claude_json, Some(NOBODY), Some(NOBODY)).expect("chown");
    }
    fs::write(home.join(".claude/settings.json"), "{\"theme\": \"dark\"}").expect("write");
    read_only(&home.join(".claude"));
    let before = snapshot(&home);
    let (out, err, code) = run(
        kg_unprivileged(&["install", "claude-code"], &home, &mut bin),
        "",
    );
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains(".claude/settings.json") && err.ends_with("; nothing was changed\n"),
        "{err}"
    );
    assert_eq!(
        snapshot(&home),
        before,
        "the first file is back, no backup, no copy"
    );
    fs::set_permissions(home.join(".claude"), fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// Codex's install writes three files; the last cannot be written (its `AGENTS.md` is a
/// link into a read-only folder): the first two get their bytes back.
#[test]
fn a_codex_install_that_fails_on_its_last_file_puts_back_the_others() {
    let mut bin = None;
    use std::os::unix::fs::PermissionsExt;
    let (_dir, home) = temp_home();
    writable_by_runner(&home);
    writable_by_runner(&home.join(".state"));
    writable_by_runner(&home.join(".local"));
    let codex = home.join(".codex");
    writable_by_runner(&codex);
    let config = codex.join("config.toml");
    fs::write(&config, "model = \"o4\"\n").expect("write");
    if effective_uid() == 0 {
        std::os::unix::fs::chown(&config, Some(NOBODY), Some(NOBODY)).expect("chown");
    }
    let notes = home.join("notes");
    fs::create_dir_all(&notes).expect("mkdir");
    fs::write(notes.join("AGENTS.md"), "Be brief.\n").expect("write");
    std::os::unix::fs::symlink(notes.join("AGENTS.md"), codex.join("AGENTS.md")).expect("link");
    read_only(&notes);
    let before = snapshot(&home);
    let (out, err, code) = run(kg_unprivileged(&["install", "codex"], &home, &mut bin), "");
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains(".codex/AGENTS.md") && err.ends_with("; nothing was changed\n"),
        "{err}"
    );
    assert_eq!(
        snapshot(&home),
        before,
        "config.toml back, no hooks.json, no backup, no copy"
    );
    fs::set_permissions(&notes, fs::Permissions::from_mode(0o755)).expect("chmod");
}

//! `kg-memory install` run from a build folder names a copy in `~/.local/bin`, never
//! the build folder; run from an installed place, it names itself. Uninstall removes
//! exactly what install added, the copy included.

use crate::server::temp_home;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The binary cargo built: it runs from `target/debug/`, a build folder.
fn built() -> &'static Path {
    kg_test_support::kg_memory_bin()
}

/// Run `program <args>` with `home` as HOME (and its state folder inside it):
/// (stdout, stderr, exit code).
fn run(program: &Path, args: &[&str], home: &Path) -> (String, String, i32) {
    let out = Command::new(program)
        .args(args)
        .env("HOME", home)
        .env("XDG_STATE_HOME", home.join(".state"))
        .env("KG_HTTP_PORT", "8765")
        .env_remove("KG_HTTP_HOST")
        .env_remove("KG_STORAGE_ROOT")
        .env_remove("CLAUDE_CONFIG_DIR")
        .output()
        .expect("run kg-memory");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

fn json_file(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("read")).expect("json")
}

/// Every program a hook of `~/.claude/settings.json` runs.
fn hook_programs(home: &Path) -> Vec<String> {
    let settings = json_file(&home.join(".claude/settings.json"));
    let mut programs = Vec::new();
    for groups in settings["hooks"].as_object().expect("hooks").values() {
        for group in groups.as_array().expect("groups") {
            for hook in group["hooks"].as_array().expect("hook list") {
                let command = hook["command"].as_str().expect("command");
                let words = shlex::split(command).expect("a shell line");
                programs.push(words[0].clone());
            }
        }
    }
    programs
}

fn copied(home: &Path) -> PathBuf {
    home.join(".local/bin/kg-memory")
}

#[test]
fn install_from_a_build_folder_names_a_copy_and_uninstall_removes_it() {
    let (_dir, home) = temp_home();
    let (out, err, code) = run(built(), &["install", "claude-code", "--dry-run"], &home);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains(&format!("to {}", copied(&home).display())),
        "{out}"
    );
    assert!(!copied(&home).exists(), "a dry run copies nothing");

    let (out, err, code) = run(built(), &["install", "claude-code"], &home);
    assert_eq!(code, 0, "{out}{err}");
    let copy = copied(&home);
    assert_eq!(
        std::fs::read(&copy).expect("the copy"),
        std::fs::read(built()).expect("the build"),
        "the copy is the program that ran"
    );
    let programs = hook_programs(&home);
    assert!(!programs.is_empty());
    for program in &programs {
        assert_eq!(Path::new(program), copy, "{programs:?}");
        assert!(!program.contains("/target/"), "{program}");
    }
    // The copy runs.
    let (version, _, code) = run(&copy, &["--version"], &home);
    assert_eq!(code, 0);
    assert!(version.starts_with("kg-memory "), "{version}");

    let (out, err, code) = run(built(), &["uninstall", "claude-code"], &home);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("remove") && out.contains(".local/bin/kg-memory"),
        "{out}"
    );
    assert!(!copy.exists(), "uninstall removes the copy install made");
    assert!(!home.join(".claude.json").exists());
    assert!(!home.join(".claude/settings.json").exists());
    assert!(
        !home
            .join(".state/kg-memory/installed-programs.json")
            .exists()
            && !home.join(".state/installed-programs.json").exists(),
        "nothing noted stays behind"
    );
}

#[test]
fn install_from_an_installed_place_names_itself_and_copies_nothing() {
    let (_dir, home) = temp_home();
    let usr_bin = home.join("usr/bin");
    std::fs::create_dir_all(&usr_bin).expect("mkdir");
    let installed = usr_bin.join("kg-memory");
    std::fs::copy(built(), &installed).expect("install the program");
    let (out, err, code) = run(&installed, &["install", "claude-code"], &home);
    assert_eq!(code, 0, "{out}{err}");
    for program in hook_programs(&home) {
        assert_eq!(Path::new(&program), installed);
    }
    assert!(!home.join(".local/bin").exists(), "nothing copied");
    let (out, err, code) = run(&installed, &["uninstall", "claude-code"], &home);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        installed.exists(),
        "uninstall leaves the installed program alone"
    );
}

#[test]
fn install_keeps_the_copy_while_another_client_uses_it_and_never_removes_a_replaced_one() {
    let (_dir, home) = temp_home();
    let desktop_dir = home.join(".config/Claude");
    std::fs::create_dir_all(&desktop_dir).expect("Claude Desktop's folder");
    for client in ["claude-code", "claude-desktop"] {
        let (out, err, code) = run(built(), &["install", client], &home);
        assert_eq!(code, 0, "{out}{err}");
    }
    let copy = copied(&home);
    let desktop = json_file(&desktop_dir.join("claude_desktop_config.json"));
    assert_eq!(
        desktop["mcpServers"]["knowledge-graph"]["command"].as_str(),
        Some(copy.to_string_lossy().as_ref())
    );
    let (out, err, code) = run(built(), &["uninstall", "claude-code"], &home);
    assert_eq!(code, 0, "{out}{err}");
    assert!(copy.exists(), "Claude Desktop still runs the copy");

    // Someone puts their own program there: uninstall leaves it.
    std::fs::write(&copy, "#!/bin/sh\necho mine\n").expect("replace the copy");
    let (out, err, code) = run(built(), &["uninstall", "claude-desktop"], &home);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("keep"), "{out}");
    assert_eq!(
        std::fs::read_to_string(&copy).expect("still there"),
        "#!/bin/sh\necho mine\n"
    );
}

/// Claude Code with two configuration folders (a work profile in `CLAUDE_CONFIG_DIR`
/// beside the default one) uses the copy twice: uninstalling from one leaves it to the
/// other.
#[test]
fn the_copy_stays_while_claude_code_under_another_config_folder_uses_it() {
    let (_dir, home) = temp_home();
    let work_profile = home.join("profiles/work");
    let with_profile = |args: &[&str]| {
        let out = Command::new(built())
            .args(args)
            .env("HOME", &home)
            .env("XDG_STATE_HOME", home.join(".state"))
            .env("KG_HTTP_PORT", "8765")
            .env("CLAUDE_CONFIG_DIR", &work_profile)
            .env_remove("KG_HTTP_HOST")
            .env_remove("KG_STORAGE_ROOT")
            .output()
            .expect("run kg-memory");
        assert!(
            out.status.success(),
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let (out, err, code) = run(built(), &["install", "claude-code"], &home);
    assert_eq!(code, 0, "{out}{err}");
    with_profile(&["install", "claude-code"]);
    let copy = copied(&home);
    let (out, err, code) = run(built(), &["uninstall", "claude-code"], &home);
    assert_eq!(code, 0, "{out}{err}");
    assert!(copy.exists(), "the work profile's hooks still run the copy");
    with_profile(&["uninstall", "claude-code"]);
    assert!(!copy.exists(), "no profile uses the copy any more");
}

#[test]
fn install_refuses_to_replace_a_program_it_did_not_copy() {
    let (_dir, home) = temp_home();
    let copy = copied(&home);
    std::fs::create_dir_all(copy.parent().expect("folder")).expect("mkdir");
    std::fs::write(&copy, "#!/bin/sh\necho mine\n").expect("someone's program");
    let (out, err, code) = run(built(), &["install", "claude-code"], &home);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains("was not put there by KG Memory") && err.contains("Nothing was changed"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(&copy).expect("untouched"),
        "#!/bin/sh\necho mine\n"
    );
    assert!(!home.join(".claude.json").exists(), "no entry written");
}

/// Uninstalling what was never installed says so, rather than "Done".
#[test]
fn uninstall_with_nothing_installed_says_so() {
    let (_dir, home) = temp_home();
    for client in ["claude-code", "claude-desktop"] {
        let (out, err, code) = run(built(), &["uninstall", client], &home);
        assert_eq!(code, 0, "{out}{err}");
        assert!(
            out.contains("Nothing to remove: KG Memory was not set up for Claude"),
            "{out}"
        );
        assert!(!out.contains("Done"), "{out}");
    }
}

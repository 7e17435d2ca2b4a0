//! Which files an agent's tool call touched, read from the agent's own hook payload:
//! the wire format stays here, and kg-core's file recall receives plain paths
//! ([`kg_core::FileTouch`]), so any agent whose hooks can name files can feed it.
//!
//! Claude Code: `Read`, `Edit`, `Write`, `MultiEdit` (`tool_input.file_path`),
//! `NotebookEdit` (`notebook_path`) and `Bash` commands that only read files
//! ([`shell`]). Codex: `apply_patch` (`*** Update File: <path>` lines). Gemini CLI:
//! `read_file`, `write_file`, `replace` (`file_path`) and `run_shell_command` (in its
//! `dir_path` when one is given).

mod shell;

use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// Files one tool call names at most; a command naming more is not a focused read.
pub const MAX_FILES: usize = 8;
/// Commands longer than this are not analysed (no reading command is that long).
const MAX_COMMAND_BYTES: usize = 64 << 10;

/// What a tool call touched, as absolute paths.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Touched {
    /// The files, each once, in the order the call named them.
    pub files: Vec<PathBuf>,
    /// A shell command (its files were checked to exist as regular files).
    pub shell: bool,
    /// Why a shell command gave no files though it may have read some (for the
    /// decision log), e.g. a `cd` before relative operands.
    pub note: Option<&'static str>,
}

/// The files the PostToolUse `payload` touched; `home` expands `~`.
pub fn touched(payload: &Map<String, Value>, home: &Path) -> Touched {
    fn text(value: Option<&Value>) -> Option<&str> {
        value.and_then(Value::as_str).filter(|s| !s.is_empty())
    }
    let Some(tool) = text(payload.get("tool_name")) else {
        return Touched::default();
    };
    let input = payload.get("tool_input").and_then(Value::as_object);
    let field = |key: &str| text(input.and_then(|i| i.get(key)));
    let Some(cwd) = text(payload.get("cwd"))
        .map(Path::new)
        .filter(|c| c.is_absolute())
    else {
        return Touched::default();
    };
    match tool {
        "Read" | "Edit" | "Write" | "MultiEdit" | "read_file" | "write_file" | "replace" => {
            one_file(field("file_path"), cwd, home)
        }
        "NotebookEdit" => one_file(field("notebook_path"), cwd, home),
        "Bash" => {
            // An absolute `workdir` (Codex's shell) wins over the session folder.
            let shell_cwd = field("workdir")
                .map(Path::new)
                .filter(|w| w.is_absolute())
                .unwrap_or(cwd);
            shell_reads(field("command"), shell_cwd, home)
        }
        "run_shell_command" => {
            // Gemini CLI's `dir_path` is relative to the session folder.
            let dir = field("dir_path").map(|d| cwd.join(d));
            shell_reads(field("command"), dir.as_deref().unwrap_or(cwd), home)
        }
        "apply_patch" => patched(field("command").or(field("input")), cwd, home),
        _ => Touched::default(),
    }
}

fn one_file(path: Option<&str>, cwd: &Path, home: &Path) -> Touched {
    let files = path
        .filter(|p| p.len() <= kg_core::MAX_PATH_BYTES)
        .map(|p| absolute(p, cwd, home))
        .into_iter()
        .collect();
    Touched {
        files,
        ..Touched::default()
    }
}

/// `~` expanded, a relative path joined to `cwd`. It need not exist: a Write makes it.
fn absolute(path: &str, cwd: &Path, home: &Path) -> PathBuf {
    if path == "~" {
        return home.to_path_buf();
    }
    if let Some(rest) = path.strip_prefix("~/") {
        return home.join(rest);
    }
    cwd.join(path)
}

/// The existing regular files a shell command reads.
fn shell_reads(command: Option<&str>, cwd: &Path, home: &Path) -> Touched {
    let mut touched = Touched {
        shell: true,
        ..Touched::default()
    };
    let Some(command) = command.filter(|c| c.len() <= MAX_COMMAND_BYTES) else {
        return touched;
    };
    let Ok(operands) = shell::read_operands(command, MAX_FILES) else {
        return touched;
    };
    for operand in operands {
        let path = operand.path.as_str();
        let relative = !path.starts_with('/') && !path.starts_with('~');
        if relative && operand.after_cd {
            touched.note = Some("a cd came before a relative path");
            continue;
        }
        if path.len() > kg_core::MAX_PATH_BYTES {
            continue;
        }
        let file = absolute(path, cwd, home);
        // Only files that exist and are regular: a command's words are not evidence
        // of a file otherwise (`grep -r foo src` names a folder). `canonicalize` stats
        // and follows links but opens nothing, so a FIFO or device cannot block it.
        match std::fs::canonicalize(&file) {
            Ok(real) if real.is_file() && !touched.files.contains(&real) => {
                touched.files.push(real);
            }
            _ => {}
        }
    }
    touched
}

/// The files a Codex `apply_patch` adds, updates, deletes or moves to.
fn patched(patch: Option<&str>, cwd: &Path, home: &Path) -> Touched {
    const HEADS: &[&str] = &[
        "*** Add File: ",
        "*** Update File: ",
        "*** Delete File: ",
        "*** Move to: ",
    ];
    let mut touched = Touched::default();
    let Some(patch) = patch.filter(|p| p.len() <= MAX_COMMAND_BYTES * 16) else {
        return touched;
    };
    for line in patch.lines() {
        let Some(path) = HEADS.iter().find_map(|h| line.strip_prefix(h)) else {
            continue;
        };
        let path = path.trim();
        if path.is_empty() || path.len() > kg_core::MAX_PATH_BYTES {
            continue;
        }
        let file = absolute(path, cwd, home);
        if !touched.files.contains(&file) {
            touched.files.push(file);
        }
        if touched.files.len() == MAX_FILES {
            break;
        }
    }
    touched
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn payload(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn file_tools_name_their_file() {
        let home = Path::new("/home/u");
        let p = payload(
            json!({"tool_name": "Read", "cwd": "/home/u/p", "tool_input": {"file_path": "src/a.rs"}}),
        );
        assert_eq!(
            touched(&p, home).files,
            [PathBuf::from("/home/u/p/src/a.rs")]
        );
        let p = payload(
            json!({"tool_name": "Edit", "cwd": "/home/u/p", "tool_input": {"file_path": "~/notes.md"}}),
        );
        assert_eq!(touched(&p, home).files, [PathBuf::from("/home/u/notes.md")]);
        let p = payload(
            json!({"tool_name": "NotebookEdit", "cwd": "/home/u/p", "tool_input": {"notebook_path": "/x/n.ipynb"}}),
        );
        assert_eq!(touched(&p, home).files, [PathBuf::from("/x/n.ipynb")]);
    }

    #[test]
    fn gemini_clis_file_and_shell_tools_name_their_files() {
        let home = Path::new("/home/u");
        for tool in ["read_file", "write_file", "replace"] {
            let p = payload(
                json!({"tool_name": tool, "cwd": "/home/u/p", "tool_input": {"file_path": "src/a.rs"}}),
            );
            assert_eq!(
                touched(&p, home).files,
                [PathBuf::from("/home/u/p/src/a.rs")],
                "{tool}"
            );
        }
        // A shell command reads in its `dir_path`, relative to the session folder.
        let project = tempfile::tempdir().expect("dir");
        std::fs::create_dir_all(project.path().join("sub")).expect("mkdir");
        std::fs::write(project.path().join("sub/notes.txt"), "x").expect("write");
        let p = payload(json!({
            "tool_name": "run_shell_command",
            "cwd": project.path(),
            "tool_input": {"command": "cat notes.txt", "dir_path": "sub"},
        }));
        let got = touched(&p, home);
        assert!(got.shell);
        assert_eq!(got.files, [project.path().join("sub/notes.txt")]);
    }

    #[test]
    fn unusable_payloads_touch_nothing() {
        let home = Path::new("/home/u");
        for p in [
            json!({"tool_name": "Read", "cwd": "relative", "tool_input": {"file_path": "a"}}),
            json!({"tool_name": "Read", "tool_input": {"file_path": "a"}}),
            json!({"tool_name": "Read", "cwd": "/p", "tool_input": {"file_path": 5}}),
            json!({"tool_name": "Read", "cwd": "/p", "tool_input": "a"}),
            json!({"tool_name": "WebFetch", "cwd": "/p", "tool_input": {"url": "https://x"}}),
            json!({"tool_name": ["Read"], "cwd": "/p"}),
        ] {
            assert_eq!(
                touched(&payload(p.clone()), home),
                Touched::default(),
                "{p}"
            );
        }
        let long = "a".repeat(kg_core::MAX_PATH_BYTES + 1);
        let p =
            payload(json!({"tool_name": "Read", "cwd": "/p", "tool_input": {"file_path": long}}));
        assert!(touched(&p, home).files.is_empty());
    }

    #[test]
    fn shell_reads_keep_existing_regular_files_only() {
        let dir = tempfile::tempdir().expect("dir");
        let root = std::fs::canonicalize(dir.path()).expect("real");
        std::fs::write(root.join("a.txt"), "a").expect("write");
        std::fs::create_dir(root.join("sub")).expect("mkdir");
        let cwd = root.to_string_lossy().into_owned();
        let bash = |command: &str| {
            touched(
                &payload(
                    json!({"tool_name": "Bash", "cwd": cwd, "tool_input": {"command": command}}),
                ),
                Path::new("/home/u"),
            )
        };
        assert_eq!(
            bash("cat a.txt missing.txt sub").files,
            [root.join("a.txt")]
        );
        assert!(bash("cd sub && cat ../a.txt").files.is_empty());
        assert_eq!(
            bash("cd sub && cat ../a.txt").note,
            Some("a cd came before a relative path")
        );
        assert!(bash("cat /dev/zero").files.is_empty());
    }

    #[test]
    fn apply_patch_names_every_file_it_changes() {
        let patch = "*** Begin Patch\n*** Update File: src/app.py\n@@\n-a\n+b\n*** Add File: docs/new.md\n+x\n*** End Patch";
        let p = payload(
            json!({"tool_name": "apply_patch", "cwd": "/home/u/p", "tool_input": {"command": patch}}),
        );
        assert_eq!(
            touched(&p, Path::new("/home/u")).files,
            [
                PathBuf::from("/home/u/p/src/app.py"),
                PathBuf::from("/home/u/p/docs/new.md")
            ]
        );
    }
}

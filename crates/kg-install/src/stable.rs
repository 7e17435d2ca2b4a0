//! The program the entries name. Hooks, MCP entries and login items outlive the
//! build folder a developer ran `kg-memory install` from (`cargo clean`, a moved
//! clone), so a program running from a cargo output folder is copied to
//! `~/.local/bin` and the entries name the copy; an installed program (the package's
//! `/usr/bin/kg-memory`, anything outside a build folder) names itself.
//!
//! Uninstalling removes the copy only when install put it there and nothing replaced
//! it since (its size and modification time are noted in the state folder), and only
//! once no client installed through it remains.

use crate::InstallError;
use crate::claude_config::ClaudeConfig;
use crate::{Client, Setup};
use serde_json::{Map, Value, json};
use std::fs;
use std::path::{Path, PathBuf};

/// Where install notes the programs it copied (in the server's state folder).
const RECORD: &str = "installed-programs.json";

/// `exe` runs from a cargo output folder: `…/target/debug/`, `…/target/release/`, or
/// any `CARGO_TARGET_DIR`, recognised by the fingerprints cargo keeps beside the
/// binaries.
pub fn in_build_tree(exe: &Path) -> bool {
    let path = exe.to_string_lossy().replace('\\', "/");
    path.contains("/target/debug/")
        || path.contains("/target/release/")
        || exe
            .parent()
            .is_some_and(|dir| dir.join(".fingerprint").is_dir())
}

/// Where a program copied out of a build folder goes: the per-user folder of
/// programs that most shells put on `PATH`.
pub fn user_bin_dir(home: &Path) -> PathBuf {
    home.join(".local").join("bin")
}

/// The path the entries should name for the program at `current`, and the build
/// output to copy there first (None: `current` is installed and names itself).
pub fn stable_path(current: &Path, home: &Path) -> (PathBuf, Option<PathBuf>) {
    match current.file_name() {
        Some(name) if in_build_tree(current) => {
            (user_bin_dir(home).join(name), Some(current.to_path_buf()))
        }
        _ => (current.to_path_buf(), None),
    }
}

/// What uses a program copied out of a build folder: a client `kg-memory install`
/// wired, or the tray app's "Start at login". The copy stays while any uses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgramUser {
    Client(Client),
    LoginItem,
}

impl From<Client> for ProgramUser {
    fn from(client: Client) -> ProgramUser {
        ProgramUser::Client(client)
    }
}

impl ProgramUser {
    /// Its name in the record.
    fn name(self) -> &'static str {
        match self {
            ProgramUser::Client(client) => client.name(),
            ProgramUser::LoginItem => "start-at-login",
        }
    }

    /// Its name in the record of `setup`'s copy. Claude Code with another configuration
    /// folder (`CLAUDE_CONFIG_DIR`) is another user of the copy: uninstalling from one
    /// leaves the copy to the other.
    fn record_name(self, setup: &Setup) -> String {
        match self {
            ProgramUser::Client(Client::ClaudeCode)
                if setup.claude != ClaudeConfig::in_home(setup.home()) =>
            {
                format!("{} ({})", self.name(), setup.claude.dir.display())
            }
            ProgramUser::Client(Client::Codex)
                if setup.codex != crate::CodexHome::in_home(setup.home()) =>
            {
                format!("{} ({})", self.name(), setup.codex.dir.display())
            }
            _ => self.name().to_string(),
        }
    }

    /// What to do about a file in the way that is not ours.
    fn way_out(self, dest: &Path) -> String {
        match self {
            ProgramUser::Client(_) => format!(
                "Remove or rename it, or run `{} install {}` to use it as it is.",
                dest.display(),
                self.name()
            ),
            ProgramUser::LoginItem => {
                "Remove or rename it, or start KG Memory from that program, then turn Start at login on again.".to_string()
            }
        }
    }
}

/// What identifies the very file install wrote: its size and modification time.
fn fingerprint(path: &Path) -> Option<Value> {
    let meta = fs::metadata(path).ok()?;
    let modified = meta
        .modified()
        .ok()?
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?
        .as_nanos();
    Some(json!({"size": meta.len(), "modified_ns": modified.to_string()}))
}

fn record_path(setup: &Setup) -> PathBuf {
    setup.state_dir.join(RECORD)
}

fn read_record(setup: &Setup) -> Result<Map<String, Value>, InstallError> {
    Ok(crate::files::read_object(&record_path(setup))?.1)
}

fn write_record(setup: &Setup, record: &Map<String, Value>) -> Result<(), InstallError> {
    let path = record_path(setup);
    if record.is_empty() {
        return match fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(InstallError::io("cannot remove", &path, &e))
            }
            _ => Ok(()),
        };
    }
    fs::create_dir_all(&setup.state_dir)
        .map_err(|e| InstallError::io("cannot create", &setup.state_dir, &e))?;
    fs::write(&path, crate::files::pretty(record))
        .map_err(|e| InstallError::io("cannot write", &path, &e))
}

/// The copy install made of `dest`, if the file there is still that copy.
fn is_our_copy(entry: Option<&Value>, dest: &Path) -> bool {
    entry.is_some_and(|e| fingerprint(dest).is_some_and(|f| e["file"] == f))
}

/// Put the program the entries name in place: copy the build output to its stable
/// path (replacing only an earlier copy of ours) and note it for uninstall. Returns
/// what it did, in words; with `dry_run`, what it would do, and changes nothing.
pub fn place_program(
    setup: &Setup,
    user: impl Into<ProgramUser>,
    dry_run: bool,
) -> Result<Option<String>, InstallError> {
    let user = user.into();
    let Some(source) = &setup.copy_from else {
        return Ok(None);
    };
    let dest = &setup.exe;
    let mut record = read_record(setup)?;
    let key = dest.to_string_lossy().into_owned();
    let ours = is_our_copy(record.get(&key), dest);
    if dest.exists() && !ours {
        return Err(InstallError::NotOurs(format!(
            "{} already exists and was not put there by KG Memory. Nothing was changed. {}",
            dest.display(),
            user.way_out(dest)
        )));
    }
    let said = format!(
        "copy {} to {} (the entries name this copy, which stays when the build folder goes)",
        source.display(),
        dest.display()
    );
    if dry_run {
        return Ok(Some(said));
    }
    copy_program(source, dest)?;
    let mut clients: Vec<Value> = record
        .get(&key)
        .filter(|_| ours)
        .and_then(|e| e["clients"].as_array().cloned())
        .unwrap_or_default();
    let name = json!(user.record_name(setup));
    if !clients.contains(&name) {
        clients.push(name);
    }
    let file = fingerprint(dest)
        .ok_or_else(|| InstallError::Io(format!("cannot read back the copy {}", dest.display())))?;
    record.insert(key, json!({"file": file, "clients": clients}));
    write_record(setup, &record)?;
    Ok(Some(said))
}

/// The program the entries name is already in place for `user`: an installed program,
/// or install's copy, recorded for `user`, with the same bytes as the build output.
pub fn program_in_place(setup: &Setup, user: impl Into<ProgramUser>) -> bool {
    let Some(source) = &setup.copy_from else {
        return true;
    };
    let dest = &setup.exe;
    let Ok(record) = read_record(setup) else {
        return false;
    };
    let entry = record.get(dest.to_string_lossy().as_ref());
    let name = json!(user.into().record_name(setup));
    is_our_copy(entry, dest)
        && entry.is_some_and(|e| e["clients"].as_array().is_some_and(|c| c.contains(&name)))
        && fs::metadata(source).ok().map(|m| m.len()) == fs::metadata(dest).ok().map(|m| m.len())
        && fs::read(source).ok() == fs::read(dest).ok()
}

/// Copy through a temporary file and a rename: a copy that is running (a hook, the
/// stdio bridge) is replaced rather than written into ("text file busy").
fn copy_program(source: &Path, dest: &Path) -> Result<(), InstallError> {
    let dir = dest
        .parent()
        .ok_or_else(|| InstallError::Io(format!("{} has no folder", dest.display())))?;
    fs::create_dir_all(dir).map_err(|e| InstallError::io("cannot create", dir, &e))?;
    let failed = |e: std::io::Error| {
        InstallError::Io(format!(
            "cannot copy {} to {}: {e}",
            source.display(),
            dest.display()
        ))
    };
    let tmp = tempfile::Builder::new()
        .prefix(".kg-memory.")
        .tempfile_in(dir)
        .map_err(failed)?;
    fs::copy(source, tmp.path()).map_err(failed)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(tmp.path(), fs::Permissions::from_mode(0o755)).map_err(failed)?;
    }
    tmp.persist(dest).map_err(|e| failed(e.error))?;
    Ok(())
}

/// Uninstalling `client`: forget that it uses the programs install copied, and remove
/// each copy no client uses any more, if it is still the file install wrote. Returns
/// what it did, in words; with `dry_run`, what it would do, and changes nothing.
pub fn release_program(
    setup: &Setup,
    user: impl Into<ProgramUser>,
    dry_run: bool,
) -> Result<Vec<String>, InstallError> {
    let mut record = read_record(setup)?;
    let name = json!(user.into().record_name(setup));
    let mut said = Vec::new();
    let paths: Vec<String> = record.keys().cloned().collect();
    for key in paths {
        let Some(entry) = record.get_mut(&key) else {
            continue;
        };
        let Some(clients) = entry["clients"].as_array_mut() else {
            continue;
        };
        if !clients.contains(&name) {
            continue;
        }
        clients.retain(|c| *c != name);
        if !clients.is_empty() {
            continue;
        }
        let dest = PathBuf::from(&key);
        if is_our_copy(record.get(&key), &dest) {
            said.push(format!(
                "remove {}, which install copied there",
                dest.display()
            ));
            if !dry_run {
                fs::remove_file(&dest).map_err(|e| InstallError::io("cannot remove", &dest, &e))?;
            }
        } else if dest.exists() {
            said.push(format!(
                "keep {}: it changed since install copied it there",
                dest.display()
            ));
        }
        record.shift_remove(&key);
    }
    if !dry_run {
        write_record(setup, &record)?;
    }
    Ok(said)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_folders_are_recognised_by_path_or_by_cargo_fingerprints() {
        let home = Path::new("/home/ann");
        for built in [
            "/home/ann/src/kg/target/release/kg-memory",
            "/home/ann/src/kg/target/debug/kg-memory",
        ] {
            assert_eq!(
                stable_path(Path::new(built), home),
                (
                    PathBuf::from("/home/ann/.local/bin/kg-memory"),
                    Some(PathBuf::from(built))
                )
            );
        }
        for installed in ["/usr/bin/kg-memory", "/opt/target-tools/kg-memory"] {
            assert_eq!(
                stable_path(Path::new(installed), home),
                (PathBuf::from(installed), None)
            );
        }
        // Any CARGO_TARGET_DIR: cargo's fingerprints sit beside the binaries.
        let dir = tempfile::tempdir().expect("dir");
        let out = dir.path().join("build-out/release");
        std::fs::create_dir_all(out.join(".fingerprint")).expect("mkdir");
        assert!(in_build_tree(&out.join("kg-memory")));
        assert!(!in_build_tree(&dir.path().join("kg-memory")));
    }
}

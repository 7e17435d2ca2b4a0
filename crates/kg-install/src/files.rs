//! The agents' configuration files as JSON objects: read (a damaged file stops the install
//! rather than being overwritten), backed up next to themselves, and written back
//! atomically, keeping their mode and any symbolic link.

use crate::FileChange;
use crate::InstallError;
use crate::error::FIX_BY_HAND;
use serde_json::{Map, Value, json};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

pub(crate) fn read_object(
    path: &Path,
) -> Result<(Option<String>, Map<String, Value>), InstallError> {
    match fs::read_to_string(path) {
        Ok(text) if text.trim().is_empty() => Ok((Some(text), Map::new())),
        Ok(text) => match serde_json::from_str::<Value>(&text) {
            Ok(Value::Object(map)) => Ok((Some(text), map)),
            Ok(_) => Err(InstallError::ByHand(format!(
                "{} is not a JSON object{FIX_BY_HAND}",
                path.display()
            ))),
            Err(e) => Err(InstallError::ByHand(format!(
                "{} is not valid JSON ({e}){FIX_BY_HAND}",
                path.display()
            ))),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok((None, Map::new())),
        Err(e) => Err(InstallError::io("cannot read", path, &e)),
    }
}

/// A file's object, or an empty one when it is missing or unreadable (for reading the
/// wiring, where a damaged file must not stop a hook).
pub(crate) fn read_lenient(path: &Path) -> Map<String, Value> {
    read_object(path).map(|(_, m)| m).unwrap_or_default()
}

/// An error about the content of the file at `path`, said with its name first.
pub(crate) fn in_file(path: &Path) -> impl FnOnce(InstallError) -> InstallError + '_ {
    move |e| e.reworded(|m| format!("{}: {m}", path.display()))
}

pub(crate) fn pretty_value(value: &Value) -> String {
    let mut text = serde_json::to_string_pretty(value).unwrap_or_default();
    text.push('\n');
    text
}

pub(crate) fn pretty(map: &Map<String, Value>) -> String {
    pretty_value(&Value::Object(map.clone()))
}

pub(crate) fn object<'a>(
    map: &'a mut Map<String, Value>,
    key: &str,
) -> Result<&'a mut Map<String, Value>, InstallError> {
    let slot = map.entry(key.to_string()).or_insert_with(|| json!({}));
    slot.as_object_mut()
        .ok_or_else(|| InstallError::ByHand(format!("\"{key}\" is not an object{FIX_BY_HAND}")))
}

fn backup_prefix(path: &Path) -> String {
    format!(
        "{}.bak-kg-",
        path.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    )
}

/// The newest backup this tool made of `path`.
pub(crate) fn latest_backup(path: &Path) -> Option<String> {
    let dir = path.parent()?;
    let prefix = backup_prefix(path);
    let mut backups: Vec<PathBuf> = fs::read_dir(dir)
        .ok()?
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .map(|e| e.path())
        .collect();
    backups.sort();
    fs::read_to_string(backups.last()?).ok()
}

/// Write a new file holding `text` with the permissions of `like`, the file it copies;
/// never replaces a file already there.
fn write_copy(target: &Path, text: &str, like: &fs::Permissions) -> std::io::Result<()> {
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // Private until the copy's own mode is set: never wider than the original.
        options.mode(0o600);
    }
    let mut file = options.open(target)?;
    file.set_permissions(like.clone())?;
    file.write_all(text.as_bytes())?;
    file.sync_all()
}

/// Back `path` up next to itself, with its mode (a private `~/.claude.json` must not
/// get a world-readable copy); returns the copy's path.
fn back_up(path: &Path, text: &str, now: f64) -> Result<PathBuf, InstallError> {
    let like = fs::metadata(path)
        .map_err(|e| InstallError::io("cannot read the permissions of", path, &e))?
        .permissions();
    let stamp = kg_server::clock::iso_utc(now).replace([':', '-'], "");
    let base = format!("{}{stamp}", backup_prefix(path));
    // Two installs within a second: the later copy sorts after the earlier one.
    for n in 0..100 {
        let name = if n == 0 {
            base.clone()
        } else {
            format!("{base}-{n:02}")
        };
        let copy = path.with_file_name(name);
        match write_copy(&copy, text, &like) {
            Ok(()) => return Ok(copy),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(InstallError::io("cannot back up", path, &e)),
        }
    }
    Err(InstallError::Io(format!(
        "cannot back up {}: too many backups from this second",
        path.display()
    )))
}

/// Replace `path`'s content atomically, keeping its mode; through a symbolic link, the
/// file it points at is replaced (a dotfiles link stays a link). A new file is private.
fn write_in_place(path: &Path, text: &str) -> Result<(), InstallError> {
    let target = fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let dir = target
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    fs::create_dir_all(dir).map_err(|e| InstallError::io("cannot create", dir, &e))?;
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let failed = |e: std::io::Error| InstallError::io("cannot write", path, &e);
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".kg-tmp")
        .tempfile_in(dir)
        .map_err(failed)?;
    if let Ok(meta) = fs::metadata(&target) {
        tmp.as_file()
            .set_permissions(meta.permissions())
            .map_err(failed)?;
    }
    tmp.write_all(text.as_bytes()).map_err(failed)?;
    tmp.as_file().sync_all().map_err(failed)?;
    tmp.persist(&target).map_err(|e| failed(e.error))?;
    #[cfg(unix)]
    if let Ok(d) = fs::File::open(dir) {
        // The rename is durable once the folder is; a failure here loses nothing yet.
        let _ = d.sync_all();
    }
    Ok(())
}

/// Write the planned changes, backing each existing file up first. All or nothing:
/// when one cannot be written (a read-only folder, a full disk), the files already
/// written get their earlier content back and this run's backups go, so no agent is
/// left half wired; the error says so, or names what could not be put back.
pub fn apply(changes: &[FileChange], now: f64, backup: bool) -> Result<(), InstallError> {
    let mut done: Vec<(&FileChange, Option<PathBuf>)> = Vec::new();
    for c in changes {
        if c.after == c.before {
            continue;
        }
        let mut copy = None;
        let written = (|| {
            if let (true, false, Some(before)) = (backup, c.ours, &c.before) {
                copy = Some(back_up(&c.path, before, now)?);
            }
            match &c.after {
                Some(text) => write_in_place(&c.path, text),
                None => fs::remove_file(&c.path)
                    .map_err(|e| InstallError::io("cannot remove", &c.path, &e)),
            }
        })();
        if let Err(e) = written {
            done.push((c, copy));
            let left = roll_back(&done);
            if left.is_empty() {
                return Err(e.reworded(|m| format!("{m}; nothing was changed")));
            }
            return Err(e.reworded(|m| {
                format!(
                    "{m}; and some files could not be put back as they were: {}",
                    left.join("; ")
                )
            }));
        }
        done.push((c, copy));
    }
    Ok(())
}

/// Undo `done` (newest first): each file gets its earlier content back (or goes, if
/// it was new) and its backup from this run is removed. Returns what could not be
/// undone, in words.
fn roll_back(done: &[(&FileChange, Option<PathBuf>)]) -> Vec<String> {
    let mut left = Vec::new();
    for (c, copy) in done.iter().rev() {
        let current = fs::read_to_string(&c.path).ok();
        if current == c.before {
            // Never written (the failing one), or already as it was.
        } else {
            let undone = match &c.before {
                Some(text) => write_in_place(&c.path, text),
                None => fs::remove_file(&c.path)
                    .map_err(|e| InstallError::io("cannot remove", &c.path, &e)),
            };
            if let Err(e) = undone {
                left.push(match copy {
                    Some(copy) => format!("{e} (its earlier content is in {})", copy.display()),
                    None => e.to_string(),
                });
                continue;
            }
        }
        if let Some(copy) = copy {
            let _ = fs::remove_file(copy);
        }
    }
    left
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::setup;
    use crate::{Client, plan_install};

    #[cfg(unix)]
    #[test]
    fn backups_and_rewritten_files_keep_their_mode() {
        use std::os::unix::fs::PermissionsExt;
        let home = tempfile::tempdir().expect("home");
        let s = setup(home.path());
        let claude_json = home.path().join(".claude.json");
        fs::write(&claude_json, r#"{"numStartups": 1}"#).expect("write");
        fs::set_permissions(&claude_json, fs::Permissions::from_mode(0o600)).expect("chmod");
        fs::create_dir_all(home.path().join(".claude")).expect("mkdir");
        let settings = home.path().join(".claude/settings.json");
        fs::write(&settings, "{}").expect("write");
        fs::set_permissions(&settings, fs::Permissions::from_mode(0o644)).expect("chmod");
        apply(
            &plan_install(Client::ClaudeCode, &s).expect("plan"),
            1.0,
            true,
        )
        .expect("install");
        let mode = |p: &Path| fs::metadata(p).expect("stat").permissions().mode() & 0o777;
        assert_eq!(mode(&claude_json), 0o600);
        assert_eq!(mode(&settings), 0o644);
        let backups: Vec<PathBuf> = fs::read_dir(home.path())
            .expect("ls")
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.to_string_lossy().contains(".claude.json.bak-kg-"))
            .collect();
        assert_eq!(backups.len(), 1);
        assert_eq!(mode(&backups[0]), 0o600);
        let backup = fs::read_dir(home.path().join(".claude"))
            .expect("ls")
            .flatten()
            .map(|e| e.path())
            .find(|p| p.to_string_lossy().contains("settings.json.bak-kg-"))
            .expect("settings backup");
        assert_eq!(mode(&backup), 0o644);
        // A second install in the same second keeps the first backup.
        let mut s2 = s.clone();
        s2.settings.port = 9300;
        apply(
            &plan_install(Client::ClaudeCode, &s2).expect("plan"),
            1.0,
            true,
        )
        .expect("again");
        let count = fs::read_dir(home.path())
            .expect("ls")
            .flatten()
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .contains(".claude.json.bak-kg-")
            })
            .count();
        assert_eq!(count, 2);
    }

    #[test]
    fn a_failure_on_the_second_file_leaves_the_first_as_it_was() {
        let home = tempfile::tempdir().expect("home");
        let s = setup(home.path());
        let claude_json = home.path().join(".claude.json");
        let mine = "{\"numStartups\": 7}";
        fs::write(&claude_json, mine).expect("write");
        // `~/.claude` is a file, so settings.json cannot be written under it (as a
        // read-only folder would refuse it, whoever runs the install).
        fs::write(home.path().join(".claude"), "not a folder").expect("write");
        let plan = vec![
            FileChange {
                path: claude_json.clone(),
                before: Some(mine.into()),
                after: Some("{\"numStartups\": 7, \"mcpServers\": {}}\n".into()),
                summary: vec!["add".into()],
                ours: false,
            },
            FileChange {
                path: home.path().join(".claude/settings.json"),
                before: None,
                after: Some("{}\n".into()),
                summary: vec!["add".into()],
                ours: false,
            },
        ];
        let err = format!("{:#}", apply(&plan, 1.0, true).expect_err("fails"));
        assert!(
            err.starts_with("cannot create") && err.ends_with("; nothing was changed"),
            "{err}"
        );
        assert!(err.contains(".claude"), "{err}");
        assert_eq!(fs::read_to_string(&claude_json).expect("read"), mine);
        let left: Vec<String> = fs::read_dir(home.path())
            .expect("ls")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            left.iter()
                .all(|n| !n.contains(".bak-kg-") && !n.contains(".kg-tmp")),
            "no backup or temporary file left: {left:?}"
        );

        // Planned for real, the install stops before writing, naming the file.
        let err = format!(
            "{:#}",
            plan_install(Client::ClaudeCode, &s).expect_err("refused")
        );
        assert!(err.contains(".claude/settings.json"), "{err}");
        assert_eq!(fs::read_to_string(&claude_json).expect("read"), mine);
    }

    #[cfg(unix)]
    #[test]
    fn a_symlinked_settings_file_stays_a_link() {
        let home = tempfile::tempdir().expect("home");
        let s = setup(home.path());
        let real = home.path().join("dotfiles-claude.json");
        fs::write(&real, "{}").expect("write");
        std::os::unix::fs::symlink(&real, home.path().join(".claude.json")).expect("link");
        apply(
            &plan_install(Client::ClaudeCode, &s).expect("plan"),
            1.0,
            true,
        )
        .expect("install");
        assert!(
            fs::symlink_metadata(home.path().join(".claude.json"))
                .expect("stat")
                .file_type()
                .is_symlink()
        );
        assert!(fs::read_to_string(&real).expect("read").contains("\"kg\""));
    }
}

//! A project's git remote, read from its own `.git/config` (no git process is
//! started), in one spelling for every way of writing it: two machines whose folders
//! of the same name clone the same repository hold the same project.

use super::git_files::{CONFIG_FILE_CAP, git_dirs, read_small_file};
use std::path::{Path, PathBuf};

/// The project's `origin` remote (or, without one, its first remote with a URL),
/// normalised; `None` when `root` is no git repository or has no remote.
///
/// Only `<root>/.git` is read, never a parent folder's repository: a home folder
/// kept in git would otherwise lend its remote to every project inside it. For a
/// linked worktree or a submodule (whose `.git` is a file saying `gitdir: …`) the
/// config of the repository it belongs to is read, if it lies in an `allowed` folder.
pub(crate) fn project_remote(root: &Path, allowed: &[PathBuf]) -> Option<String> {
    let (_, common) = git_dirs(root, allowed)?;
    let text = read_small_file(&common.join("config"), CONFIG_FILE_CAP)?;
    let remotes = remote_urls(&text);
    let (_, url) = remotes
        .iter()
        .find(|(name, _)| name == "origin")
        .or_else(|| remotes.first())?;
    normalise_remote(url)
}

/// `(remote name, first url)` of each `[remote "name"]` section, in file order.
fn remote_urls(config: &str) -> Vec<(String, String)> {
    let mut found: Vec<(String, String)> = Vec::new();
    let mut section: Option<String> = None;
    for line in config.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(header) = line.strip_prefix('[') {
            section = remote_section(header.split(']').next().unwrap_or(""));
            continue;
        }
        let Some(name) = &section else { continue };
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        if key.trim().eq_ignore_ascii_case("url") && !found.iter().any(|(n, _)| n == name) {
            found.push((name.clone(), config_value(value)));
        }
    }
    found
}

/// The remote a section header names: `remote "origin"` or the old `remote.origin`.
fn remote_section(header: &str) -> Option<String> {
    let header = header.trim();
    let (kind, rest) = header
        .split_once(|c: char| c.is_whitespace() || c == '.')
        .unwrap_or((header, ""));
    if !kind.eq_ignore_ascii_case("remote") {
        return None;
    }
    let name = rest.trim().trim_matches('"');
    (!name.is_empty()).then(|| name.to_string())
}

/// A config value: quoted text as written, or the text before a comment.
fn config_value(raw: &str) -> String {
    let raw = raw.trim();
    if let Some(quoted) = raw.strip_prefix('"') {
        return quoted.split('"').next().unwrap_or("").to_string();
    }
    raw.split([';', '#'])
        .next()
        .unwrap_or("")
        .trim()
        .to_string()
}

/// One spelling for every way of writing a remote: `git@host:a/b.git`,
/// `ssh://git@host:22/a/b` and `https://user:token@Host/a/b/` are all `host/a/b`.
/// User names, passwords and ports are dropped (a token must never reach a synced
/// file); a local path stays a path, without a trailing `.git`.
pub(crate) fn normalise_remote(url: &str) -> Option<String> {
    let url = url.trim();
    let (host, path) = if let Some((scheme, rest)) = url.split_once("://") {
        if scheme.eq_ignore_ascii_case("file") {
            (None, rest)
        } else {
            let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
            (Some(authority), path)
        }
    } else {
        match url.split_once(':') {
            // scp-like `[user@]host:path`; a one-letter "host" is a Windows drive.
            Some((host, path)) if host.len() > 1 && !host.contains('/') => (Some(host), path),
            _ => (None, url),
        }
    };
    let path = path.trim_end_matches('/');
    let path = path
        .strip_suffix(".git")
        .unwrap_or(path)
        .trim_end_matches('/');
    let normal = match host {
        Some(authority) => {
            let host = authority.rsplit('@').next().unwrap_or(authority);
            let host = host.split(':').next().unwrap_or(host).to_ascii_lowercase();
            let path = path.trim_start_matches('/');
            if host.is_empty() || path.is_empty() {
                return None;
            }
            format!("{host}/{path}")
        }
        None => path.to_string(),
    };
    (!normal.is_empty()).then_some(normal)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn one_spelling_for_every_way_of_writing_a_remote() {
        for url in [
            "git@github.com:ana/shop.git",
            "https://github.com/ana/shop",
            "https://github.com/ana/shop.git/",
            "ssh://git@GitHub.com:22/ana/shop.git",
            "https://ana:secret-token@github.com/ana/shop",
            "github.com:/ana/shop",
        ] {
            assert_eq!(
                normalise_remote(url).as_deref(),
                Some("github.com/ana/shop"),
                "{url}"
            );
        }
        assert_eq!(
            normalise_remote("/srv/git/shop.git").as_deref(),
            Some("/srv/git/shop")
        );
        assert_eq!(
            normalise_remote("file:///srv/git/shop.git").as_deref(),
            Some("/srv/git/shop")
        );
        assert_eq!(normalise_remote("  "), None);
        assert_eq!(normalise_remote("https://github.com/"), None);
    }

    #[test]
    fn origin_is_read_from_the_projects_own_git_config() {
        let dir = tempfile::tempdir().expect("dir");
        let allowed = [fs::canonicalize(dir.path()).expect("canonical")];
        let root = allowed[0].join("shop");
        fs::create_dir_all(root.join(".git")).expect("mkdir");
        assert_eq!(project_remote(&root, &allowed), None, "no config");
        fs::write(
            root.join(".git/config"),
            "[core]\n\tbare = false\n[remote \"upstream\"]\n\turl = https://example.com/team/shop\n\
             [remote \"origin\"] # ours\n\tURL = \"git@example.com:ana/shop.git\"\n\turl = https://mirror/x\n",
        )
        .expect("config");
        assert_eq!(
            project_remote(&root, &allowed).as_deref(),
            Some("example.com/ana/shop")
        );
        // Without an origin, the first remote.
        fs::write(
            root.join(".git/config"),
            "[remote.upstream]\n url = https://example.com/team/shop ; comment\n",
        )
        .expect("config");
        assert_eq!(
            project_remote(&root, &allowed).as_deref(),
            Some("example.com/team/shop")
        );
        // A linked worktree: `.git` is a file pointing into the main repository.
        let worktree = allowed[0].join("shop-wt");
        let linked = root.join(".git/worktrees/shop-wt");
        fs::create_dir_all(&linked).expect("mkdir");
        fs::write(linked.join("commondir"), "../..\n").expect("commondir");
        fs::create_dir_all(&worktree).expect("mkdir");
        fs::write(
            worktree.join(".git"),
            format!("gitdir: {}\n", linked.display()),
        )
        .expect("pointer");
        assert_eq!(
            project_remote(&worktree, &allowed).as_deref(),
            Some("example.com/team/shop")
        );
    }
}

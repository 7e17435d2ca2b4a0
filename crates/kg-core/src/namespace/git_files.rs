//! What a folder's git files say, read without running git: which folder is the top of
//! the checkout it lies in, and, for a linked worktree, the main checkout of its
//! repository. Only the small pointer files git writes are read (`.git` as a file,
//! `commondir`, `gitdir`, `config`), each through [`read_small_file`] (the stranger's
//! reader): a `.git` that is a FIFO, a device, a symlink loop or a huge file is never
//! opened or read whole.

use std::fs;
use std::path::{Path, PathBuf};

/// The most a pointer file (`.git`, `commondir`, `gitdir`) may hold: a path and a
/// newline. Anything longer is not one of git's.
pub(crate) const POINTER_FILE_CAP: u64 = 8 * 1024;
/// The most of a repository's `config` that is read.
pub(crate) const CONFIG_FILE_CAP: u64 = 1024 * 1024;

/// The text of a small regular file, or `None` when `path` is no regular file (a
/// folder, a FIFO, a device, a socket, a symlink loop), is larger than `cap` bytes, or
/// is not UTF-8: read as a stranger's file ([`crate::stranger`]), so nothing blocks.
/// The type is checked before opening too, so a device in a `.git`'s place is never
/// even opened.
pub(crate) fn read_small_file(path: &Path, cap: u64) -> Option<String> {
    let before = fs::metadata(path).ok()?;
    if !before.is_file() || before.len() > cap {
        return None;
    }
    crate::stranger::read_regular_text(path, cap).ok()
}

/// The checkout a folder lies in, as its git files describe it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Checkout {
    /// The top folder of the checkout: the nearest folder at or above the start that
    /// holds a `.git`.
    pub top: PathBuf,
    /// The repository's main checkout when `top` is a linked worktree of a repository
    /// that has one (not bare); else `top` itself. Submodules and repositories whose
    /// git folder lies elsewhere (`--separate-git-dir`) are their own main checkout.
    pub main: PathBuf,
}

impl Checkout {
    /// Whether `top` is a linked worktree of another checkout.
    pub fn is_linked(&self) -> bool {
        self.main != self.top
    }
}

/// The checkout `start` lies in: the nearest folder from `start` up that holds a
/// `.git`, looking no higher than just below `boundary` (a home folder kept in git is
/// no project that every folder inside it belongs to). Every path a `.git` file points
/// to must lie inside one of the `allowed` folders, or it is not followed.
pub(crate) fn enclosing_checkout(
    start: &Path,
    boundary: &Path,
    allowed: &[PathBuf],
) -> Option<Checkout> {
    let top = start
        .ancestors()
        .take_while(|dir| *dir == start || (dir.starts_with(boundary) && *dir != boundary))
        .find(|dir| fs::symlink_metadata(dir.join(".git")).is_ok())?;
    let main = main_checkout(top, allowed).unwrap_or_else(|| top.to_path_buf());
    Some(Checkout {
        top: top.to_path_buf(),
        main,
    })
}

/// The git folder of the checkout at `top` and the repository's common git folder
/// (the same folder except for a linked worktree): `top/.git` when it is a folder,
/// else where the `.git` file's `gitdir:` line points, with its `commondir`.
pub(crate) fn git_dirs(top: &Path, allowed: &[PathBuf]) -> Option<(PathBuf, PathBuf)> {
    let dot_git = top.join(".git");
    let git_dir = if fs::metadata(&dot_git).ok()?.is_dir() {
        dot_git
    } else {
        let pointer = read_small_file(&dot_git, POINTER_FILE_CAP)?;
        let target = pointer
            .lines()
            .next()?
            .trim()
            .strip_prefix("gitdir:")?
            .trim();
        inside(&top.join(target), allowed)?
    };
    let common = match read_small_file(&git_dir.join("commondir"), POINTER_FILE_CAP) {
        Some(text) => inside(&git_dir.join(text.lines().next()?.trim()), allowed)?,
        None => git_dir.clone(),
    };
    Some((git_dir, common))
}

/// The main checkout of the linked worktree at `top`, if it is one whose repository
/// has a main checkout: its git folder names a common folder `<main>/.git` (not a bare
/// repository) and points back at this worktree's `.git`, so a `.git` file copied
/// elsewhere (or a worktree moved without `git worktree repair`) maps nothing.
fn main_checkout(top: &Path, allowed: &[PathBuf]) -> Option<PathBuf> {
    let (git_dir, common) = git_dirs(top, allowed)?;
    if git_dir == common || common.file_name()? != ".git" {
        return None;
    }
    let back = read_small_file(&git_dir.join("gitdir"), POINTER_FILE_CAP)?;
    let back = fs::canonicalize(git_dir.join(back.lines().next()?.trim())).ok()?;
    if back != fs::canonicalize(top.join(".git")).ok()? {
        return None;
    }
    let config = read_small_file(&common.join("config"), CONFIG_FILE_CAP).unwrap_or_default();
    if is_bare(&config) {
        return None;
    }
    let main = common.parent()?.to_path_buf();
    (main.is_dir() && fs::canonicalize(main.join(".git")).ok()? == common).then_some(main)
}

/// `path` with symlinks followed, when it exists and lies inside an allowed folder.
fn inside(path: &Path, allowed: &[PathBuf]) -> Option<PathBuf> {
    let real = fs::canonicalize(path).ok()?;
    allowed
        .iter()
        .any(|folder| real.starts_with(folder))
        .then_some(real)
}

/// Whether a git config sets `core.bare` to true.
fn is_bare(config: &str) -> bool {
    let mut in_core = false;
    for line in config.lines().map(str::trim) {
        if let Some(header) = line.strip_prefix('[') {
            let name = header.split(']').next().unwrap_or("").trim();
            in_core = name.eq_ignore_ascii_case("core");
            continue;
        }
        if !in_core {
            continue;
        }
        if let Some((key, value)) = line.split_once('=')
            && key.trim().eq_ignore_ascii_case("bare")
        {
            let value = value.split(['#', ';']).next().unwrap_or("").trim();
            return matches!(
                value.to_ascii_lowercase().as_str(),
                "true" | "yes" | "on" | "1"
            );
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canonical(dir: &tempfile::TempDir) -> PathBuf {
        fs::canonicalize(dir.path()).expect("canonical")
    }

    /// A worktree at `wt` of the repository whose main checkout is `main`, laid out
    /// as `git worktree add` lays it out.
    fn link_worktree(main: &Path, wt: &Path, name: &str) {
        let admin = main.join(".git/worktrees").join(name);
        fs::create_dir_all(&admin).expect("admin");
        fs::create_dir_all(wt).expect("worktree");
        fs::write(admin.join("commondir"), "../..\n").expect("commondir");
        fs::write(
            admin.join("gitdir"),
            format!("{}\n", wt.join(".git").display()),
        )
        .expect("gitdir");
        fs::write(wt.join(".git"), format!("gitdir: {}\n", admin.display())).expect(".git");
    }

    #[test]
    fn a_linked_worktree_maps_to_its_main_checkout() {
        let home = tempfile::tempdir().expect("home");
        let home = canonical(&home);
        let allowed = [home.clone()];
        let main = home.join("proj");
        fs::create_dir_all(main.join(".git")).expect("repo");
        fs::create_dir_all(main.join("src/deep")).expect("src");
        let wt = home.join("proj-feature");
        link_worktree(&main, &wt, "proj-feature");
        fs::create_dir_all(wt.join("src")).expect("src");

        let at = |p: &Path| enclosing_checkout(p, &home, &allowed);
        let plain = at(&main.join("src/deep")).expect("checkout");
        assert_eq!(
            (plain.top.as_path(), plain.main.as_path()),
            (main.as_path(), main.as_path())
        );
        assert!(!plain.is_linked());
        let linked = at(&wt.join("src")).expect("checkout");
        assert_eq!(linked.top, wt);
        assert_eq!(linked.main, main);
        assert!(linked.is_linked());
        assert_eq!(at(&home.join("elsewhere")), None);

        // Moved away without repair: its admin folder points at the old place.
        let moved = home.join("moved");
        fs::rename(&wt, &moved).expect("move");
        let stale = at(&moved).expect("checkout");
        assert_eq!(
            stale.main, moved,
            "a worktree that is not linked back maps nothing"
        );
    }

    #[test]
    fn bare_repositories_and_submodules_stay_separate() {
        let home = tempfile::tempdir().expect("home");
        let home = canonical(&home);
        let allowed = [home.clone()];
        // A worktree of a bare repository: there is no main checkout to map to.
        let bare = home.join("repo.git");
        fs::create_dir_all(bare.join("worktrees/wt")).expect("bare");
        fs::write(bare.join("config"), "[core]\n\tbare = true\n").expect("config");
        let wt = home.join("wt");
        fs::create_dir_all(&wt).expect("wt");
        let admin = bare.join("worktrees/wt");
        fs::write(admin.join("commondir"), "../..\n").expect("commondir");
        fs::write(
            admin.join("gitdir"),
            format!("{}\n", wt.join(".git").display()),
        )
        .expect("gitdir");
        fs::write(wt.join(".git"), format!("gitdir: {}\n", admin.display())).expect(".git");
        let found = enclosing_checkout(&wt, &home, &allowed).expect("checkout");
        assert_eq!(found.main, wt);
        // A bare main folder named `.git` (core.bare = true) is no checkout either.
        let odd = home.join("odd");
        fs::create_dir_all(odd.join(".git")).expect("repo");
        fs::write(
            odd.join(".git/config"),
            "[core]\n bare = yes ; set by hand\n",
        )
        .expect("config");
        let owt = home.join("odd-wt");
        link_worktree(&odd, &owt, "odd-wt");
        assert_eq!(
            enclosing_checkout(&owt, &home, &allowed)
                .expect("checkout")
                .main,
            owt
        );

        // A submodule: `.git` points into the superproject's modules, no commondir.
        let sup = home.join("super");
        let module_dir = sup.join(".git/modules/lib");
        fs::create_dir_all(&module_dir).expect("modules");
        let sub = sup.join("lib");
        fs::create_dir_all(&sub).expect("sub");
        fs::write(sub.join(".git"), "gitdir: ../.git/modules/lib\n").expect(".git");
        let found = enclosing_checkout(&sub, &home, &allowed).expect("checkout");
        assert_eq!(
            (found.top.as_path(), found.main.as_path()),
            (sub.as_path(), sub.as_path())
        );
    }

    #[test]
    fn nothing_outside_the_allowed_folders_is_followed_and_home_is_no_checkout() {
        let home = tempfile::tempdir().expect("home");
        let outside = tempfile::tempdir().expect("outside");
        let home = canonical(&home);
        let outside = canonical(&outside);
        let allowed = [home.clone()];
        // Home kept in git: a folder inside it is not in a checkout.
        fs::create_dir_all(home.join(".git")).expect("dotfiles");
        fs::create_dir_all(home.join("notes")).expect("notes");
        assert_eq!(
            enclosing_checkout(&home.join("notes"), &home, &allowed),
            None
        );
        assert!(
            enclosing_checkout(&home, &home, &allowed).is_some(),
            "home itself may be"
        );
        // A worktree whose repository lies outside home: its own top, nothing followed.
        let main = outside.join("proj");
        fs::create_dir_all(main.join(".git")).expect("repo");
        let wt = home.join("wt");
        link_worktree(&main, &wt, "wt");
        assert_eq!(
            enclosing_checkout(&wt, &home, &allowed)
                .expect("checkout")
                .main,
            wt
        );
    }

    #[cfg(unix)]
    #[test]
    fn hostile_dot_git_entries_never_block_and_are_never_read_whole() {
        let home = tempfile::tempdir().expect("home");
        let home = canonical(&home);
        let allowed = [home.clone()];
        let mkfifo = |p: &Path| {
            let c = std::ffi::CString::new(p.to_string_lossy().as_bytes()).expect("path");
            // SAFETY: a valid path; mkfifo only creates the node.
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        };
        let fifo = home.join("fifo");
        fs::create_dir_all(&fifo).expect("dir");
        mkfifo(&fifo.join(".git"));
        let huge = home.join("huge");
        fs::create_dir_all(&huge).expect("dir");
        let f = fs::File::create(huge.join(".git")).expect("create");
        f.set_len(1 << 40).expect("sparse terabyte");
        let looped = home.join("looped");
        fs::create_dir_all(&looped).expect("dir");
        std::os::unix::fs::symlink(looped.join(".git"), looped.join(".git")).expect("loop");
        let device = home.join("device");
        fs::create_dir_all(&device).expect("dir");
        std::os::unix::fs::symlink("/dev/zero", device.join(".git")).expect("link");
        for dir in [&fifo, &huge, &looped, &device] {
            let found = enclosing_checkout(dir, &home, &allowed).expect("a .git is there");
            assert_eq!(
                found.main,
                *dir,
                "{}: its own top, nothing mapped",
                dir.display()
            );
        }
        assert_eq!(read_small_file(&fifo.join(".git"), POINTER_FILE_CAP), None);
        assert_eq!(read_small_file(&huge.join(".git"), POINTER_FILE_CAP), None);
        assert_eq!(
            read_small_file(&looped.join(".git"), POINTER_FILE_CAP),
            None
        );
        assert_eq!(
            read_small_file(Path::new("/dev/zero"), POINTER_FILE_CAP),
            None
        );
        assert_eq!(read_small_file(&home, POINTER_FILE_CAP), None);
        fs::write(home.join("small"), "gitdir: x\n").expect("write");
        assert_eq!(
            read_small_file(&home.join("small"), POINTER_FILE_CAP).as_deref(),
            Some("gitdir: x\n")
        );
        assert_eq!(
            read_small_file(&home.join("small"), 4),
            None,
            "over the cap"
        );
    }

    #[test]
    fn bare_is_read_from_the_core_section_only() {
        assert!(is_bare("[core]\n\tbare = true\n"));
        assert!(is_bare("[Core]\nBARE=On\n"));
        assert!(!is_bare("[core]\n\tbare = false\n"));
        assert!(!is_bare("[remote \"x\"]\n\tbare = true\n"));
        assert!(!is_bare(""));
    }
}

//! Running git for sync: in the storage root, in the C locale (its messages are
//! matched), never prompting (a credential it lacks is an error, not a hang), and
//! abandoned after a timeout.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Local git work (status, commit, merge) may take this long.
pub const LOCAL_TIMEOUT: Duration = Duration::from_secs(60);
/// Talking to the remote (fetch, push) may take this long: a slow network is
/// tolerated, a hung one is not.
pub const NETWORK_TIMEOUT: Duration = Duration::from_secs(120);

/// The name and e-mail used when git has no identity configured (a fresh machine, a
/// service account): a commit must never fail for want of one.
const FALLBACK_NAME: &str = "KG Memory";
const FALLBACK_EMAIL: &str = "kg-memory@localhost";

/// A git command that did not succeed.
#[derive(Debug, Clone, thiserror::Error)]
#[error("`git {command}` {what}")]
pub struct GitError {
    /// The arguments, joined.
    pub command: String,
    /// "failed: <git's message>", "timed out after …", "could not be run: …".
    pub what: String,
    /// Git's standard error, trimmed (empty when git did not run).
    pub stderr: String,
}

/// What a git command printed.
#[derive(Debug, Clone)]
pub struct Output {
    pub stdout: String,
    /// The standard output as git wrote it (a blob need not be UTF-8).
    pub bytes: Vec<u8>,
}

/// Git in one repository.
#[derive(Debug, Clone)]
pub struct Git {
    root: PathBuf,
    /// `-c user.name=… -c user.email=…` when the repository has no identity.
    identity: Vec<String>,
}

impl Git {
    /// Git working in `root` (its own `.git`, never an enclosing repository's).
    pub fn new(root: &Path) -> Git {
        Git {
            root: root.to_path_buf(),
            identity: Vec::new(),
        }
    }

    /// Make commits possible where git knows no author: use the user's identity when
    /// configured, else KG Memory's.
    pub fn with_identity(mut self) -> Git {
        let configured = |key: &str| {
            self.run(&["config", key], LOCAL_TIMEOUT)
                .is_ok_and(|out| !out.stdout.trim().is_empty())
        };
        if !(configured("user.name") && configured("user.email")) {
            self.identity = vec![
                "-c".into(),
                format!("user.name={FALLBACK_NAME}"),
                "-c".into(),
                format!("user.email={FALLBACK_EMAIL}"),
            ];
        }
        self
    }

    /// Run `git <args>` with the local timeout; its standard output on success.
    pub fn ok(&self, args: &[&str]) -> Result<String, GitError> {
        self.run(args, LOCAL_TIMEOUT).map(|out| out.stdout)
    }

    /// The bytes of `path` at `rev`; `None` when it has no such file.
    pub fn blob(&self, rev: &str, path: &str) -> Result<Option<Vec<u8>>, GitError> {
        let spec = format!("{rev}:{path}");
        if self.ok(&["cat-file", "-e", &spec]).is_err() {
            return Ok(None);
        }
        Ok(Some(
            self.run(&["cat-file", "blob", &spec], LOCAL_TIMEOUT)?.bytes,
        ))
    }

    /// Run a git command that talks to the remote (fetch, push), with the network
    /// timeout. SSH runs in batch mode: in a server started from a terminal, ssh would
    /// otherwise ask that terminal for a passphrase or a host key confirmation and wait
    /// for nobody. The user's own ssh command (`GIT_SSH_COMMAND`, `core.sshCommand`)
    /// is kept, with batch mode added.
    pub fn remote(&self, args: &[&str]) -> Result<Output, GitError> {
        let ssh = match std::env::var("GIT_SSH_COMMAND") {
            Ok(own) if !own.trim().is_empty() => own,
            _ => self
                .ok(&["config", "--get", "core.sshCommand"])
                .ok()
                .map(|own| own.trim().to_string())
                .filter(|own| !own.is_empty())
                .unwrap_or_else(|| "ssh".to_string()),
        };
        let batch = format!("{ssh} -o BatchMode=yes");
        self.run_with(
            args,
            NETWORK_TIMEOUT,
            &[("GIT_SSH_COMMAND", batch.as_str())],
        )
    }

    /// Run `git <args>`; the output on success, else why not.
    pub fn run(&self, args: &[&str], timeout: Duration) -> Result<Output, GitError> {
        self.run_with(args, timeout, &[])
    }

    fn run_with(
        &self,
        args: &[&str],
        timeout: Duration,
        env: &[(&str, &str)],
    ) -> Result<Output, GitError> {
        let command = args.join(" ");
        let fail = |what: String, stderr: String| GitError {
            command: command.clone(),
            what,
            stderr,
        };
        let mut child = Command::new("git")
            .args(&self.identity)
            .args(args)
            .current_dir(&self.root)
            // Messages are matched in English; a credential prompt would hang a
            // background sync, so git fails instead (credential helpers and SSH
            // agents still work; the timeout ends anything else that waits).
            .env("LC_ALL", "C")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_ASKPASS", "")
            .env("SSH_ASKPASS", "")
            // Git's own pager and editor must never wait for a person.
            .env("GIT_PAGER", "cat")
            .env("GIT_EDITOR", "true")
            .env("GIT_MERGE_AUTOEDIT", "no")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| {
                fail(
                    format!("could not be run: {e}; is git installed?"),
                    String::new(),
                )
            })?;
        // Drain both pipes while waiting, so a chatty git never blocks on a full pipe.
        let drain = |pipe: Option<Box<dyn Read + Send>>| {
            std::thread::spawn(move || {
                let mut bytes = Vec::new();
                if let Some(mut pipe) = pipe {
                    let _ = pipe.read_to_end(&mut bytes);
                }
                bytes
            })
        };
        let stdout = drain(
            child
                .stdout
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
        );
        let stderr = drain(
            child
                .stderr
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
        );
        let started = Instant::now();
        // Most git commands end within milliseconds: look soon, then less often.
        let mut pause = Duration::from_millis(1);
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break Some(status),
                Ok(None) if started.elapsed() >= timeout => {
                    let _ = child.kill();
                    let _ = child.wait();
                    break None;
                }
                Ok(None) => {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(20));
                }
                Err(e) => {
                    let _ = child.kill();
                    return Err(fail(format!("could not be waited for: {e}"), String::new()));
                }
            }
        };
        let bytes = stdout.join().unwrap_or_default();
        let stderr = String::from_utf8_lossy(&stderr.join().unwrap_or_default())
            .trim()
            .to_string();
        match status {
            None => Err(fail(
                format!("timed out after {} seconds", timeout.as_secs()),
                stderr,
            )),
            Some(s) if s.success() => Ok(Output {
                stdout: String::from_utf8_lossy(&bytes).into_owned(),
                bytes,
            }),
            Some(_) => {
                let what = if stderr.is_empty() {
                    "failed".to_string()
                } else {
                    format!("failed: {stderr}")
                };
                Err(fail(what, stderr))
            }
        }
    }
}

/// Whether any process has `path` open: `Some` on Linux, read from `/proc` (the
/// processes of this user, which own the repository); `None` where that cannot be
/// seen. A git command holds `index.lock` open from taking it until it lets go.
pub fn open_by_any_process(path: &Path) -> Option<bool> {
    let processes = std::fs::read_dir("/proc").ok()?;
    let target = std::fs::canonicalize(path).ok()?;
    for process in processes.flatten() {
        let name = process.file_name();
        if !name.to_string_lossy().bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(fds) = std::fs::read_dir(process.path().join("fd")) else {
            continue; // another user's, or gone
        };
        if fds
            .flatten()
            .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|link| link == target))
        {
            return Some(true);
        }
    }
    Some(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The user's ssh command (here a script that notes its arguments) still runs, in
    /// batch mode.
    #[cfg(unix)]
    #[test]
    fn talking_to_the_remote_runs_the_users_ssh_in_batch_mode() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("temp dir");
        let said = dir.path().join("ssh-args");
        let ssh = dir.path().join("my-ssh");
        std::fs::write(
            &ssh,
            format!("#!/bin/sh\necho \"$@\" > '{}'\nexit 1\n", said.display()),
        )
        .expect("script");
        std::fs::set_permissions(&ssh, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(&repo).expect("repo");
        let git = Git::new(&repo);
        git.ok(&["init", "--quiet"]).expect("init");
        git.ok(&[
            "config",
            "core.sshCommand",
            &format!("{} -i id_work", ssh.display()),
        ])
        .expect("config");
        git.ok(&[
            "remote",
            "add",
            "origin",
            "ssh://git@example.invalid/memory.git",
        ])
        .expect("remote");
        // Only if the test's own environment does not name an ssh command.
        if std::env::var_os("GIT_SSH_COMMAND").is_some() {
            return;
        }
        assert!(git.remote(&["fetch", "origin"]).is_err());
        let args = std::fs::read_to_string(&said).expect("the user's ssh ran");
        assert!(args.contains("-i id_work"), "{args}");
        assert!(args.contains("-o BatchMode=yes"), "{args}");
    }
}

//! Start `kg-memory serve` in the background for a courier (a hook, the stdio bridge),
//! detached from it and logging to the user's state folder.
//!
//! The child is told its host, port and storage root on its command line: it must
//! serve exactly what the courier was configured for, whatever `KG_*` variables the
//! courier's own environment happens to hold.

use crate::config::Settings;
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::process::Child;

/// A server this process started.
#[derive(Debug)]
pub struct Started {
    child: Child,
    log: PathBuf,
    /// Where the log ended before the child started: what follows is the child's.
    log_from: u64,
}

/// The longest excerpt of a failed start's log that is reported.
const MAX_REASON: u64 = 4096;

impl Started {
    /// The server's log file.
    pub fn log(&self) -> &std::path::Path {
        &self.log
    }

    /// `None` while the child runs; once it has exited, why (its last log lines, or
    /// its exit status when it logged nothing).
    pub fn exited(&mut self) -> Option<String> {
        let status = self.child.try_wait().ok()??;
        let logged = self.logged_since_start();
        Some(if logged.is_empty() {
            format!("it exited ({status}) without logging why")
        } else {
            logged
        })
    }

    fn logged_since_start(&self) -> String {
        let Ok(mut file) = std::fs::File::open(&self.log) else {
            return String::new();
        };
        let len = file.metadata().map_or(0, |m| m.len());
        let from = self.log_from.max(len.saturating_sub(MAX_REASON));
        let mut text = String::new();
        if file.seek(SeekFrom::Start(from)).is_err()
            || file.take(MAX_REASON).read_to_string(&mut text).is_err()
        {
            return String::new();
        }
        // The lines that say what went wrong; a started server's INFO lines do not.
        let lines: Vec<&str> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with("INFO "))
            .map(|l| l.strip_prefix("kg-memory: ").unwrap_or(l))
            .collect();
        lines[lines.len().saturating_sub(3)..].join(" ")
    }
}

/// Start `kg-memory serve --host H --port P --storage DIR` for `settings`, detached
/// from this process (its own session on Unix), appending to `server.log` in the state
/// folder.
pub fn start_detached(settings: &Settings) -> std::io::Result<Started> {
    let exe = std::env::current_exe()?;
    let log_dir = settings.state_dir();
    std::fs::create_dir_all(&log_dir)?;
    let log_path = log_dir.join("server.log");
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)?;
    let log_from = log.metadata().map_or(0, |m| m.len());
    let mut cmd = std::process::Command::new(exe);
    cmd.arg("serve")
        .arg("--host")
        .arg(&settings.host)
        .arg("--port")
        .arg(settings.port.to_string())
        .arg("--storage")
        .arg(&settings.storage_root)
        .stdin(std::process::Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: setsid only detaches the child from our session; no memory is touched.
        unsafe {
            cmd.pre_exec(|| {
                libc::setsid();
                Ok(())
            });
        }
    }
    #[cfg(windows)]
    {
        use std::os::windows::process::CommandExt;
        const DETACHED_PROCESS: u32 = 0x0000_0008;
        const CREATE_NEW_PROCESS_GROUP: u32 = 0x0000_0200;
        cmd.creation_flags(DETACHED_PROCESS | CREATE_NEW_PROCESS_GROUP);
    }
    let child = cmd.spawn()?;
    Ok(Started {
        child,
        log: log_path,
        log_from,
    })
}

/// The flags that name `settings`' host, port and storage root, each only where it is
/// not the default: what a command line needs to reach exactly this server whatever
/// its environment holds.
pub fn server_flags(settings: &Settings) -> Vec<std::ffi::OsString> {
    let mut flags: Vec<std::ffi::OsString> = Vec::new();
    if settings.host != crate::config::DEFAULT_HOST {
        flags.extend(["--host".into(), settings.host.clone().into()]);
    }
    if settings.port != crate::config::DEFAULT_PORT {
        flags.extend(["--port".into(), settings.port.to_string().into()]);
    }
    if settings.storage_root != crate::config::default_storage_root(&settings.home) {
        flags.extend(["--storage".into(), settings.storage_root.clone().into()]);
    }
    flags
}

/// Words joined into one command line as a POSIX shell reads it (Claude Code runs hook
/// commands through a shell), each quoted only where it must be.
pub fn shell_line<I, S>(words: I) -> String
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    words
        .into_iter()
        .map(|w| {
            let w = w.as_ref().to_string_lossy().into_owned();
            // Only a NUL byte cannot be quoted, and no path or flag holds one.
            shlex::try_quote(&w).map_or(w.clone(), |q| q.into_owned())
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The command that starts the server `settings` describe, for messages:
/// `kg-memory serve`, plus `--port`/`--storage` where they are not the defaults.
pub fn serve_command(settings: &Settings) -> String {
    let mut words: Vec<std::ffi::OsString> = vec!["kg-memory".into(), "serve".into()];
    words.extend(server_flags(settings));
    shell_line(words)
}

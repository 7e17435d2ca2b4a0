//! Why an install, an uninstall or a program copy stopped. Each message says what
//! happened and what to do; the kind says whose move it is.

use std::path::Path;

/// An installer's refusal or failure. Nothing was changed unless the message says
/// otherwise (a rollback that could not put everything back names what is left).
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    /// A file could not be read, created, copied, backed up or written.
    #[error("{0}")]
    Io(String),
    /// A configuration file is damaged or shaped unexpectedly (not JSON or TOML, a
    /// list where an object belongs, comments a rewrite would lose): fix it by hand.
    #[error("{0}")]
    ByHand(String),
    /// What is there is not the installer's to change (another program's MCP entry
    /// under our name, a hand-added entry elsewhere, the plugin, a file KG Memory did
    /// not put there) or the agent is not set up yet.
    #[error("{0}")]
    NotOurs(String),
}

/// What a refusal to touch a damaged file adds to saying what is wrong with it.
pub(crate) const FIX_BY_HAND: &str = "; fix it by hand, nothing was changed";

impl InstallError {
    /// What is wrong, without the installer's own advice: for read-only reports
    /// (`status`, `doctor`), where "nothing was changed" would say nothing.
    pub fn diagnosis(&self) -> String {
        let said = self.to_string();
        match said.strip_suffix(FIX_BY_HAND) {
            Some(what) => what.to_string(),
            None => said,
        }
    }

    /// `"<doing> <path>: <error>"`, as a failed file operation is said.
    pub(crate) fn io(doing: &str, path: &Path, error: &std::io::Error) -> InstallError {
        InstallError::Io(format!("{doing} {}: {error}", path.display()))
    }

    /// The same kind, its message rewritten (a file's name put first, what the
    /// rollback did put after).
    pub(crate) fn reworded(self, say: impl FnOnce(String) -> String) -> InstallError {
        match self {
            InstallError::Io(m) => InstallError::Io(say(m)),
            InstallError::ByHand(m) => InstallError::ByHand(say(m)),
            InstallError::NotOurs(m) => InstallError::NotOurs(say(m)),
        }
    }
}

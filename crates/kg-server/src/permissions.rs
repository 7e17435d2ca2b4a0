//! Files and folders only their owner may read: the storage root, git's copies of it.

use std::path::Path;

/// Make `dir` (the storage root, a repository's `.git`) the owner's only: other
/// local users can neither read the memory nor git's copies of it, nor take its
/// lock. Does nothing where there are no Unix permissions.
pub fn owner_only(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let meta = std::fs::metadata(dir)?;
        if meta.permissions().mode() & 0o077 != 0 {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
            log::info!("made {} readable by its owner only", dir.display());
        }
    }
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

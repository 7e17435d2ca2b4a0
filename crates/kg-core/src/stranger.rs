//! Files the memory did not write and does not own — a project folder's `.git`
//! metadata, a transcript a hook names, a file given to `kg-memory import` — are
//! opened as strangers: only when they are regular files, without blocking (opening a
//! FIFO waits for a writer that may never come, and freezes whoever waits with it),
//! and read up to a cap (a link to `/dev/zero` never ends).

use std::fs::{File, Metadata};
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

/// Open `path` for reading if it is a regular file (symbolic links followed), without
/// blocking on a FIFO; anything else is an `InvalidInput` error naming what it is.
pub fn open_regular(path: &Path) -> io::Result<(File, Metadata)> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // A FIFO opened without the flag blocks until a writer comes; regular files
        // ignore it. (O_NOCTTY: a terminal device never becomes ours by being opened.)
        options.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    let file = options.open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("it is {}, not a regular file", kind_of(&meta)),
        ));
    }
    Ok((file, meta))
}

/// The whole of the regular file `path`, refused (`InvalidData`) when it is larger
/// than `cap` bytes; see [`open_regular`].
pub fn read_regular(path: &Path, cap: u64) -> io::Result<Vec<u8>> {
    let (file, meta) = open_regular(path)?;
    if meta.len() > cap {
        return Err(too_large(meta.len(), cap));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    // The file may grow while it is read: never more than the cap.
    file.take(cap + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Err(too_large(bytes.len() as u64, cap));
    }
    Ok(bytes)
}

/// [`read_regular`] as UTF-8 text.
pub fn read_regular_text(path: &Path, cap: u64) -> io::Result<String> {
    String::from_utf8(read_regular(path, cap)?).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{} is not UTF-8 text", path.display()),
        )
    })
}

/// The last `cap` bytes of the regular file `path` (all of it when smaller), and
/// whether that is all of it; see [`open_regular`].
pub fn read_regular_tail(path: &Path, cap: u64) -> io::Result<(Vec<u8>, bool)> {
    let (mut file, meta) = open_regular(path)?;
    let start = meta.len().saturating_sub(cap);
    if start > 0 {
        file.seek(SeekFrom::Start(start))?;
    }
    let mut bytes = Vec::new();
    file.take(cap).read_to_end(&mut bytes)?;
    Ok((bytes, start == 0))
}

fn too_large(size: u64, cap: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("it is {size} bytes, more than the {cap} read from such a file"),
    )
}

/// What a file that is not a regular one is, in words.
fn kind_of(meta: &Metadata) -> &'static str {
    let kind = meta.file_type();
    if kind.is_dir() {
        return "a folder";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if kind.is_char_device() || kind.is_block_device() {
            return "a device";
        }
        if kind.is_socket() {
            return "a socket";
        }
    }
    "something other than a file"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regular_files_are_read_up_to_their_cap() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("a");
        std::fs::write(&file, b"hello").expect("write");
        assert_eq!(read_regular(&file, 5).expect("read"), b"hello");
        let err = read_regular(&file, 4).expect_err("too large");
        assert!(err.to_string().contains("is 5 bytes"), "{err}");
        assert_eq!(
            read_regular_tail(&file, 3).expect("tail"),
            (b"llo".to_vec(), false)
        );
    }

    #[cfg(unix)]
    #[test]
    fn devices_fifos_and_folders_are_refused_at_once() {
        let dir = tempfile::tempdir().expect("temp dir");
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_string_lossy().as_bytes()).expect("path");
        // SAFETY: a valid NUL-terminated path; mkfifo touches nothing else.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let err = read_regular(&fifo, 100).expect_err("a FIFO");
        assert!(err.to_string().contains("a FIFO"), "{err}");
        let err = read_regular(Path::new("/dev/zero"), 100).expect_err("a device");
        assert!(err.to_string().contains("a device"), "{err}");
        let err = read_regular(dir.path(), 100).expect_err("a folder");
        assert!(err.to_string().contains("a folder"), "{err}");
    }
}

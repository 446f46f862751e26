//! rtlab's own files: result files, checkpoints, exports, state directories, journals, locks,
//! queues and the files a person names as input. Written so that a crash or a power loss
//! leaves the old content or the new, never half of it ([`write`]); read whole but bounded
//! ([`read`]); checked before a run rather than after it, and kept private ([`place`]); and
//! the file system under them ([`disk`]).
//!
//! Never kernel files: those go through `sys::Root`, the only door to the kernel. This crate
//! depends on no other room, so every room that writes files (the push queue included) uses
//! the same writes. It must not choose paths or formats; every error names the path.

use std::io;
use std::path::{Path, PathBuf};

pub mod disk;
pub mod place;
pub mod read;
pub mod write;

pub use disk::{Filesystem, filesystem, set_ext_journal_probe, unjournalled};
pub use place::{
    check_creatable, check_creatable_with_dirs, check_dir_creatable, create_private_dir,
    is_empty_dir, remove_tree,
};
pub use read::{plain_io, read_input, read_input_text};
pub use write::{
    create_dir_all, open_durably, remove_durably, rename_durably, try_lock, write_atomically,
    write_private,
};

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A file that could not be written, read or made. Every variant names the path.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The file or directory does not exist.
    #[error("{path}: not found")]
    NotFound {
        /// The path that was missing.
        path: PathBuf,
    },
    /// Access was refused.
    #[error("{path}: permission denied; {fix}")]
    PermissionDenied {
        /// The path refused.
        path: PathBuf,
        /// What to do about it.
        fix: String,
    },
    /// What was asked cannot be done with this path.
    #[error("{what}: not supported: {why}")]
    Unsupported {
        /// What was attempted.
        what: String,
        /// Why it cannot work.
        why: String,
    },
    /// Any other I/O failure.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
}

impl Error {
    /// Classifies an I/O error on `path`.
    pub fn from_io(path: impl Into<PathBuf>, source: io::Error) -> Error {
        let path = path.into();
        match source.kind() {
            io::ErrorKind::NotFound => Error::NotFound { path },
            io::ErrorKind::PermissionDenied => Error::PermissionDenied {
                path,
                fix: "run as root".to_string(),
            },
            _ => Error::Io { path, source },
        }
    }

    /// Whether this error means "the file is not there".
    pub fn is_not_found(&self) -> bool {
        matches!(self, Error::NotFound { .. })
    }
}

/// The directory (`.` for a bare name) and the file name of `path`.
pub(crate) fn split(path: &Path) -> Result<(PathBuf, &std::ffi::OsStr)> {
    let name = path.file_name().ok_or_else(|| Error::Unsupported {
        what: format!("writing {}", path.display()),
        why: "the path names no file".to_string(),
    })?;
    Ok((parent_of(path), name))
}

/// Where a write to `path` lands: `path` itself, or for a symbolic link the file it names in
/// the end (a dangling link: the path it would create), so that the link is written through,
/// not replaced by a plain file. More than 40 links in a row are the kernel's ELOOP.
pub(crate) fn final_target(path: &Path) -> Result<PathBuf> {
    let mut at = path.to_path_buf();
    for _ in 0..40 {
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => {
                let next = std::fs::read_link(&at).map_err(|e| io_error(&at, e))?;
                at = parent_of(&at).join(next);
            }
            _ => return Ok(at),
        }
    }
    Err(io_error(path, io::Error::from_raw_os_error(libc::ELOOP)))
}

/// Where an output streamed to `path` goes: `(path, true)` for a device, FIFO or descriptor,
/// to be opened and appended to as it is; else the file a link leads to and `false`, to be
/// written beside and renamed over (as [`write_atomically`] does for a whole buffer).
pub fn output_target(path: &Path) -> Result<(PathBuf, bool)> {
    if is_special(path) {
        return Ok((path.to_path_buf(), true));
    }
    Ok((final_target(path)?, false))
}

/// Whether `path` is (or a link leads to) something other than a file or a directory: a
/// device (`/dev/null`), a FIFO or a socket, which an output is written into as it is; or one
/// of the process's own descriptors (`/dev/stdout`, `/dev/fd/N`, `/proc/self/fd/N`), whose file
/// the shell opened: it is written into too, not replaced under the shell's feet.
pub(crate) fn is_special(path: &Path) -> bool {
    let own = ["/dev/stdout", "/dev/stderr", "/dev/fd/", "/proc/self/fd/"]
        .iter()
        .any(|p| {
            path.as_os_str()
                .as_encoded_bytes()
                .starts_with(p.as_bytes())
        });
    std::fs::metadata(path).is_ok_and(|m| own || (!m.is_file() && !m.is_dir()))
}

/// The directory holding `path` (`.` for a bare name).
pub(crate) fn parent_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Like [`Error::from_io`], with fixes that fit user files.
pub(crate) fn io_error(path: &Path, e: io::Error) -> Error {
    let fix = match e.raw_os_error() {
        Some(libc::EROFS) => "the filesystem is read-only; write the file somewhere else",
        Some(libc::EACCES | libc::EPERM) => {
            "choose a directory you may write to, or fix its permissions"
        }
        _ => return Error::from_io(path, e),
    };
    Error::PermissionDenied {
        path: path.to_path_buf(),
        fix: fix.to_string(),
    }
}

#[cfg(test)]
mod tests;

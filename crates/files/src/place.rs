//! Where rtlab's outputs go, checked before a run rather than after it ([`check_creatable`],
//! [`check_dir_creatable`], [`is_empty_dir`]), and the private directories it makes and removes
//! ([`create_private_dir`], [`remove_tree`]).

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::{Error, Result, io_error, split};

/// Checks, without creating anything, that `path` could be written: its directory exists, is a
/// directory, and is writable (access W_OK), and `path` itself is not a directory. For early
/// "bad --json path" errors.
pub fn check_creatable(path: &Path) -> Result<()> {
    let (dir, _) = split(path)?;
    let meta = std::fs::metadata(&dir).map_err(|e| io_error(&dir, e))?;
    let refuse = |why: String| Error::Unsupported {
        what: format!("writing {}", path.display()),
        why,
    };
    if !meta.is_dir() {
        return Err(refuse(format!("{} is not a directory", dir.display())));
    }
    if std::fs::metadata(path).is_ok_and(|m| m.is_dir()) {
        return Err(refuse("it is a directory; name a file".to_string()));
    }
    let c_dir = CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| refuse("the path contains a NUL byte".to_string()))?;
    // SAFETY: `c_dir` is a valid NUL-terminated path; access only reads it.
    if unsafe { libc::access(c_dir.as_ptr(), libc::W_OK | libc::X_OK) } != 0 {
        return Err(io_error(&dir, io::Error::last_os_error()));
    }
    Ok(())
}

/// Checks, without creating anything, that `dir` is a writable directory or could be created
/// as one: it is a directory already, or the nearest part of it that exists is a writable
/// directory. For early "bad --trace-dir" errors.
pub fn check_dir_creatable(dir: &Path) -> Result<()> {
    let refuse = |why: String| Error::Unsupported {
        what: format!("writing into {}", dir.display()),
        why,
    };
    let mut existing = dir;
    loop {
        match std::fs::metadata(existing) {
            Ok(meta) if meta.is_dir() => break,
            Ok(_) => return Err(refuse(format!("{} is not a directory", existing.display()))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => match existing.parent() {
                Some(parent) if !parent.as_os_str().is_empty() => existing = parent,
                _ => {
                    existing = Path::new(".");
                    break;
                }
            },
            Err(e) => return Err(io_error(existing, e)),
        }
    }
    let c_dir = CString::new(existing.as_os_str().as_bytes())
        .map_err(|_| refuse("the path contains a NUL byte".to_string()))?;
    // SAFETY: `c_dir` is a valid NUL-terminated path; access only reads it.
    if unsafe { libc::access(c_dir.as_ptr(), libc::W_OK | libc::X_OK) } != 0 {
        return Err(io_error(existing, io::Error::last_os_error()));
    }
    Ok(())
}

/// Whether `dir` is a directory with nothing in it (an output directory a command may fill);
/// a path that cannot be listed is not empty.
pub fn is_empty_dir(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|mut d| d.next().is_none())
}

/// Creates a new directory only its owner may enter (mode 0700): `BASE/PREFIXn` for the first
/// `n` below `tries` that is not taken. `Ok(None)` when every one is.
pub fn create_private_dir(base: &Path, prefix: &str, tries: u32) -> io::Result<Option<PathBuf>> {
    use std::os::unix::fs::DirBuilderExt;
    for n in 0..tries {
        let dir = base.join(format!("{prefix}{n}"));
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => return Ok(Some(dir)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(None)
}

/// Removes the directory `dir` rtlab made, with everything in it. Ok when it is gone:
/// removed now, or absent already; else the error says why it stays.
pub fn remove_tree(dir: &Path) -> Result<()> {
    match std::fs::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::from_io(dir, e)),
    }
}

//! Where rtlab's outputs go, checked before a run rather than after it ([`check_creatable`],
//! [`check_dir_creatable`], [`is_empty_dir`]), and the private directories it makes and removes
//! ([`create_private_dir`], [`remove_tree`]).
//!
//! A check creates and removes a hidden probe file where the output will go, as the write will
//! (its temporary file): permission bits cannot tell, since root passes `access(2)` on `/proc`
//! and `/sys`, where no file can be created (`rtlab measure -o /proc/x.json` measured the whole
//! run, then failed to write it; issue #48).

use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::{Error, Result, io_error, split};

/// Checks that `path` could be written: its directory exists, is a directory, and takes a new
/// file (a probe, removed at once), and `path` itself is not a directory. Nothing is left
/// behind. For early "bad --output" errors.
pub fn check_creatable(path: &Path) -> Result<()> {
    if crate::is_special(path) {
        // A device or FIFO is written into as it is (see `write_atomically`).
        return Ok(());
    }
    let target = crate::final_target(path)?;
    let path = target.as_path();
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
    probe(&dir, &refuse)
}

/// As [`check_creatable`], for a file whose directories the write creates (a journal under
/// `/var/lib/rtlab`): the nearest part of its directory that exists takes a new file.
pub fn check_creatable_with_dirs(path: &Path) -> Result<()> {
    let (dir, _) = split(path)?;
    if std::fs::metadata(path).is_ok_and(|m| m.is_dir()) {
        return Err(Error::Unsupported {
            what: format!("writing {}", path.display()),
            why: "it is a directory; name a file".to_string(),
        });
    }
    check_dir_creatable(&dir)
}

/// Creates and removes a hidden file in `dir`: whether a file can be made there at all.
fn probe(dir: &Path, refuse: &dyn Fn(String) -> Error) -> Result<()> {
    if dir.as_os_str().as_bytes().contains(&0) {
        return Err(refuse("the path contains a NUL byte".to_string()));
    }
    let file = dir.join(format!(".rtlab-probe-{}.tmp", std::process::id()));
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&file)
    {
        Ok(_) => {
            std::fs::remove_file(&file).map_err(|e| io_error(&file, e))?;
            Ok(())
        }
        // A probe of an earlier run of this pid: the directory takes files.
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        // The directory is there (its caller saw it), yet "not found": a kernel interface
        // (/proc, /sys) that takes no new files.
        Err(e) if e.kind() == io::ErrorKind::NotFound => Err(refuse(format!(
            "{} takes no new files (a kernel interface); write it somewhere else",
            dir.display()
        ))),
        Err(e) => Err(refuse(format!(
            "no file can be created in {}: {}",
            dir.display(),
            io_error(dir, e)
        ))),
    }
}

/// Checks that `dir` is a writable directory or could be created as one: it is a directory
/// already, or the nearest part of it that exists is a directory that takes a new file (a
/// probe, removed at once). For early "bad --trace-dir" errors.
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
    probe(existing, &refuse)
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

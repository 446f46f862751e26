//! Crash-safe result files: [`write_atomically`] replaces a file so that a reader never sees
//! it half written and a crash (SIGKILL, power loss) leaves either the old or the new content;
//! [`create_dir_all`], [`open_durably`] and [`rename_durably`] make new directories, new files
//! and renames survive a power loss on filesystems without a journal (ext2, vfat, f2fs), where
//! nothing reaches the disk unless fsynced: a new name needs its directory fsynced, a new
//! directory its parent;
//! [`try_lock`] keeps a directory to one process at a time; [`check_creatable`] reports a bad output path before a run starts rather than after it;
//! [`filesystem`] says how much room a directory has and whether it is backed by RAM (where an
//! io load would never reach a disk).
//!
//! This module writes user files only (result exports, checkpoints), never kernel files — those
//! go through [`crate::Root`]. It must not choose paths or formats; every error names the path.

use std::ffi::{CString, OsString};
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

use crate::{Error, Result};

/// Replaces `path` with `bytes` atomically and durably.
///
/// The content goes into an unnamed file (`O_TMPFILE`) in the target's directory, is written
/// and fsynced, linked in as the hidden `.{file}.rtlab-{pid}.tmp` (linkat from
/// `/proc/self/fd/N`), renamed over `path`, and the directory is fsynced so the new name
/// survives a power loss. On a file system without a journal (ext2, FAT, exFAT) the whole file
/// system is synced (`syncfs`) before the rename: that puts the allocation bitmaps holding the
/// new file's inode on disk before any name refers to it, which no fsync promises there. ext2
/// came back from a power cut with a campaign's files' inodes marked free, and the next file
/// made there failed with EIO ("doubly allocated"; found by the lab, issue #26). Journalled
/// file systems are not synced: a sync there would flush everything else dirty on them. Where the filesystem has no `O_TMPFILE`, or `/proc` is absent, the
/// hidden name is created directly instead. A replaced file keeps its permission bits; on any
/// error the hidden name is removed. The hidden name is per process: one writer per path at a
/// time (rtlab's checkpoints are written by one thread).
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let (dir, name) = split(path)?;
    let mut hidden = OsString::from(".");
    hidden.push(name);
    hidden.push(format!(".rtlab-{}.tmp", std::process::id()));
    let tmp = dir.join(hidden);
    let mode = std::fs::metadata(path)
        .ok()
        .filter(|m| m.is_file())
        .map(|m| m.permissions().mode() & 0o7777);
    let result = write_unnamed(&dir, &tmp, path, bytes, mode)
        .and_then(|linked| match linked {
            true => Ok(()),
            false => write_named(&tmp, path, bytes, mode),
        })
        .and_then(|()| match crate::fs_sync::unjournalled(&dir) {
            true => crate::fs_sync::sync_filesystem(&dir),
            false => Ok(()),
        })
        .and_then(|()| rename_durably(&tmp, path));
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Takes an exclusive advisory lock (flock) on `path`, creating it, without waiting: `None`
/// when another process holds it. The lock lasts as long as the returned file is open (and
/// ends with the process, however it ends), so one process at a time owns what it guards.
///
/// With `inherited`, the file stays open in the child processes this process starts (no
/// close-on-exec): the lock is held until the last of them has ended too, so a successor
/// cannot start while a child of a killed holder still writes.
///
/// A lock file this call creates is made durable ([`open_durably`]): in a directory fsynced
/// later (a state written beside it) its name would otherwise reach the disk without its inode.
pub fn try_lock(path: &Path, inherited: bool) -> Result<Option<File>> {
    let file = open_durably(
        path,
        OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600),
    )?;
    match file.try_lock() {
        Ok(()) => {
            // SAFETY: F_SETFD on a descriptor this function owns; 0 clears FD_CLOEXEC.
            if inherited && unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETFD, 0) } != 0 {
                return Err(io_error(path, io::Error::last_os_error()));
            }
            Ok(Some(file))
        }
        Err(std::fs::TryLockError::WouldBlock) => Ok(None),
        Err(std::fs::TryLockError::Error(e)) => Err(io_error(path, e)),
    }
}

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

/// Reads a file a person named (a result, an import, a kernel config or log) whole, but at
/// most `limit` bytes: a directory, or more than `limit` bytes, is refused with one line
/// that says so (without the path, which the caller names with its flag). Pipes and
/// process substitutions (`--dmesg <(dmesg)`) are read like files.
pub fn read_input(path: &Path, limit: u64) -> std::result::Result<Vec<u8>, String> {
    use std::io::Read as _;
    let file = File::open(path).map_err(|e| plain_io(&e))?;
    let meta = file.metadata().map_err(|e| plain_io(&e))?;
    if meta.is_dir() {
        return Err("it is a directory; name a file".to_string());
    }
    if meta.is_file() && meta.len() > limit {
        return Err(model_too_large(meta.len(), limit));
    }
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| plain_io(&e))?;
    if bytes.len() as u64 > limit {
        return Err(model_too_large(bytes.len() as u64, limit));
    }
    Ok(bytes)
}

/// [`read_input`] for a text file: bytes that are not UTF-8 are refused too.
pub fn read_input_text(path: &Path, limit: u64) -> std::result::Result<String, String> {
    String::from_utf8(read_input(path, limit)?)
        .map_err(|_| "not a text file: it is not UTF-8".to_string())
}

/// An I/O error as people read it: "no such file", "permission denied", else the system's
/// words without "(os error N)".
pub fn plain_io(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::NotFound => return "no such file".to_string(),
        io::ErrorKind::PermissionDenied => return "permission denied".to_string(),
        _ => {}
    }
    let text = e.to_string();
    match text.find(" (os error") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

fn model_too_large(size: u64, limit: u64) -> String {
    format!(
        "it holds more than {} MiB, more than rtlab reads of such a file{}; is it the right file?",
        limit >> 20,
        if size > limit {
            String::new()
        } else {
            format!(" ({size} bytes)")
        }
    )
}

/// Whether `dir` is a directory with nothing in it (an output directory a command may fill);
/// a path that cannot be listed is not empty.
pub fn is_empty_dir(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|mut d| d.next().is_none())
}

/// Creates the user directory `dir` and its missing parents (`--trace-dir`, a campaign's
/// state directory, the tuning journal's), durably: each directory made is fsynced, then the
/// directory its name was added to, so that after a power loss on a filesystem without a
/// journal the new directories are there (and no name points at an inode that never reached
/// the disk). Directories that exist already are left as they are, nothing fsynced.
pub fn create_dir_all(dir: &Path) -> io::Result<()> {
    create_dir_all_with(dir, &mut real_sync)
}

/// [`create_dir_all`] with its fsync given; the walk is std's (the leaf tried first, so its own
/// error is the one reported), with each directory made synced, then its parent.
fn create_dir_all_with(dir: &Path, sync: Syncer<'_>) -> io::Result<()> {
    if dir.as_os_str().is_empty() {
        return Ok(());
    }
    match std::fs::create_dir(dir) {
        Ok(()) => return made(dir, sync),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        // There already (or made meanwhile by another process, which syncs it).
        Err(_) if dir.is_dir() => return Ok(()),
        Err(e) => return Err(e),
    }
    match dir.parent() {
        Some(parent) => create_dir_all_with(parent, sync)?,
        None => return Err(io::Error::other("failed to create the whole tree")),
    }
    match std::fs::create_dir(dir) {
        Ok(()) => made(dir, sync),
        Err(_) if dir.is_dir() => Ok(()),
        Err(e) => Err(e),
    }
}

/// Makes the directory `dir`, just created, durable: itself, then the directory holding its
/// name.
fn made(dir: &Path, sync: Syncer<'_>) -> io::Result<()> {
    sync(dir, None)?;
    sync(&parent_of(dir), None)
}

/// Opens `path` with `options`, which create it where it is absent; a file this call creates
/// is made durable at once: the new file and its directory are fsynced, so that its name
/// survives a power loss on a filesystem without a journal (for a tuning journal, a lock).
/// Opening a file that exists fsyncs nothing. Errors name the path.
pub fn open_durably(path: &Path, options: &OpenOptions) -> Result<File> {
    open_durably_with(path, options, &mut real_sync)
}

/// [`open_durably`] with its fsync given.
fn open_durably_with(path: &Path, options: &OpenOptions, sync: Syncer<'_>) -> Result<File> {
    let (dir, _) = split(path)?;
    let mut last = None;
    // A file removed between the two opens by another process is looked for again, a few times.
    for _ in 0..4 {
        match options.clone().create(false).create_new(false).open(path) {
            Ok(file) => return Ok(file),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_error(path, e)),
        }
        match options.clone().create_new(true).open(path) {
            Ok(file) => {
                sync(path, Some(&file)).map_err(|e| io_error(path, e))?;
                sync(&dir, None).map_err(|e| io_error(&dir, e))?;
                return Ok(file);
            }
            // Made meanwhile by another process: open it.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(io_error(path, e)),
        }
    }
    Err(io_error(path, last.expect("the loop ran")))
}

/// Renames `from` to `to` and fsyncs the directory (both, when they differ), so that the
/// rename survives a power loss. A failed rename names `from`.
pub fn rename_durably(from: &Path, to: &Path) -> Result<()> {
    std::fs::rename(from, to).map_err(|e| io_error(from, e))?;
    let (to_dir, _) = split(to)?;
    sync_dir(&to_dir)?;
    let (from_dir, _) = split(from)?;
    if from_dir != to_dir {
        sync_dir(&from_dir)?;
    }
    Ok(())
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

/// Removes the directory `dir` rtlab made, with everything in it. True when it is gone:
/// removed now, or absent already.
pub fn remove_tree(dir: &Path) -> bool {
    std::fs::remove_dir_all(dir).is_ok() || !dir.exists()
}

/// What the filesystem holding a directory offers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Filesystem {
    /// Bytes an unprivileged writer may still use (`f_bavail` × `f_frsize`).
    pub available_bytes: u64,
    /// Backed by memory (tmpfs, ramfs): writes and fsyncs never reach a disk.
    pub in_memory: bool,
}

/// The filesystem holding `dir` (statfs).
pub fn filesystem(dir: &Path) -> Result<Filesystem> {
    const TMPFS_MAGIC: i64 = 0x0102_1994;
    const RAMFS_MAGIC: i64 = 0x8584_58f6;
    let st = crate::fs_sync::statfs(dir).map_err(|e| io_error(dir, e))?;
    let fragment = if st.f_frsize > 0 {
        st.f_frsize
    } else {
        st.f_bsize
    };
    #[allow(clippy::unnecessary_cast)] // f_type's width differs between architectures
    let kind = st.f_type as i64;
    Ok(Filesystem {
        available_bytes: (st.f_bavail as u64).saturating_mul(fragment as u64),
        in_memory: kind == TMPFS_MAGIC || kind == RAMFS_MAGIC,
    })
}

/// The directory (`.` for a bare name) and the file name of `path`.
fn split(path: &Path) -> Result<(PathBuf, &std::ffi::OsStr)> {
    let name = path.file_name().ok_or_else(|| Error::Unsupported {
        what: format!("writing {}", path.display()),
        why: "the path names no file".to_string(),
    })?;
    Ok((parent_of(path), name))
}

/// Writes `bytes` into an O_TMPFILE file in `dir` and links it in as `tmp`. `Ok(false)` when
/// the filesystem or the system cannot do this and the named fallback should be used.
fn write_unnamed(
    dir: &Path,
    tmp: &Path,
    target: &Path,
    bytes: &[u8],
    mode: Option<u32>,
) -> Result<bool> {
    let file = match OpenOptions::new()
        .write(true)
        .mode(0o666)
        .custom_flags(libc::O_TMPFILE)
        .open(dir)
    {
        Ok(file) => file,
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::EOPNOTSUPP | libc::EISDIR | libc::EINVAL)
            ) =>
        {
            return Ok(false);
        }
        Err(e) => return Err(io_error(dir, e)),
    };
    fill(&file, target, bytes, mode)?;
    let proc_fd = CString::new(format!("/proc/self/fd/{}", file.as_raw_fd()))
        .expect("no NUL in a formatted path");
    let c_tmp = CString::new(tmp.as_os_str().as_bytes()).map_err(|_| Error::Unsupported {
        what: format!("writing {}", target.display()),
        why: "the path contains a NUL byte".to_string(),
    })?;
    for attempt in 0..2 {
        // SAFETY: both paths are valid NUL-terminated strings; linkat only reads them.
        let rc = unsafe {
            libc::linkat(
                libc::AT_FDCWD,
                proc_fd.as_ptr(),
                libc::AT_FDCWD,
                c_tmp.as_ptr(),
                libc::AT_SYMLINK_FOLLOW,
            )
        };
        if rc == 0 {
            return Ok(true);
        }
        let err = io::Error::last_os_error();
        match err.raw_os_error() {
            // A leftover of a crashed run that had our pid: it is ours to replace.
            Some(libc::EEXIST) if attempt == 0 => {
                std::fs::remove_file(tmp).map_err(|e| io_error(tmp, e))?;
            }
            // No /proc mounted: name the file the plain way.
            Some(libc::ENOENT) => return Ok(false),
            _ => return Err(io_error(tmp, err)),
        }
    }
    Ok(false)
}

/// The fallback: create the hidden name itself and write into it.
fn write_named(tmp: &Path, target: &Path, bytes: &[u8], mode: Option<u32>) -> Result<()> {
    let _ = std::fs::remove_file(tmp);
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o666)
        .custom_flags(libc::O_NOFOLLOW)
        .open(tmp)
        .map_err(|e| io_error(tmp, e))?;
    fill(&file, target, bytes, mode)
}

/// Writes everything, restores the replaced file's permissions, and fsyncs.
fn fill(mut file: &File, target: &Path, bytes: &[u8], mode: Option<u32>) -> Result<()> {
    file.write_all(bytes).map_err(|e| io_error(target, e))?;
    if let Some(mode) = mode {
        file.set_permissions(std::fs::Permissions::from_mode(mode))
            .map_err(|e| io_error(target, e))?;
    }
    file.sync_all().map_err(|e| io_error(target, e))
}

/// fsyncs a directory so a rename in it is durable. Filesystems that cannot (EINVAL) are let be.
fn sync_dir(dir: &Path) -> Result<()> {
    real_sync(dir, None).map_err(|e| io_error(dir, e))
}

/// How the durable helpers fsync: `path` as a directory, or `file` (open, named `path`).
/// Tests pass their own to see what is synced and to make an fsync fail.
type Syncer<'a> = &'a mut dyn FnMut(&Path, Option<&File>) -> io::Result<()>;

/// fsyncs `file`, or the directory `path`; a filesystem that cannot fsync a directory
/// (EINVAL) is let be.
fn real_sync(path: &Path, file: Option<&File>) -> io::Result<()> {
    if let Some(file) = file {
        return file.sync_all();
    }
    match File::open(path).and_then(|d| d.sync_all()) {
        Err(e) if e.raw_os_error() != Some(libc::EINVAL) => Err(e),
        _ => Ok(()),
    }
}

/// The directory holding `path` (`.` for a bare name).
fn parent_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Like [`Error::from_io`], with fixes that fit user files.
fn io_error(path: &Path, e: io::Error) -> Error {
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
mod tests {

    #[test]
    fn an_atomic_write_replaces_the_file_and_syncs_its_file_system() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        write_atomically(&path, b"one").unwrap();
        write_atomically(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        // Nothing hidden is left beside it.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        let e = crate::fs_sync::sync_filesystem(&dir.path().join("gone")).unwrap_err();
        assert!(e.to_string().contains("gone"), "{e}");
    }

    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn private_dirs_take_the_next_free_name_and_go_whole() {
        use std::os::unix::fs::PermissionsExt;
        let base = tempfile::tempdir().unwrap();
        let first = create_private_dir(base.path(), "w-", 2).unwrap().unwrap();
        let second = create_private_dir(base.path(), "w-", 2).unwrap().unwrap();
        assert_eq!(first, base.path().join("w-0"));
        assert_eq!(second, base.path().join("w-1"));
        let mode = std::fs::metadata(&first).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        assert_eq!(create_private_dir(base.path(), "w-", 2).unwrap(), None);
        std::fs::write(first.join("f"), "x").unwrap();
        assert!(remove_tree(&first));
        assert!(!first.exists());
        assert!(remove_tree(&first), "already gone counts as gone");
        assert!(create_private_dir(&base.path().join("missing"), "w-", 2).is_err());
    }

    /// A fsync that records what it was given (`f:` a file, `d:` a directory, relative to
    /// `base`) and fails on the `fail`-th call (1-based; 0: never).
    struct Recorder {
        base: PathBuf,
        fail: usize,
        seen: Vec<String>,
    }

    impl Recorder {
        fn new(base: &Path, fail: usize) -> Recorder {
            Recorder {
                base: base.to_path_buf(),
                fail,
                seen: Vec::new(),
            }
        }

        fn sync(&mut self, path: &Path, file: Option<&File>) -> io::Result<()> {
            let rel = path.strip_prefix(&self.base).unwrap_or(path).display();
            let kind = if file.is_some() { "f" } else { "d" };
            self.seen.push(format!("{kind}:{rel}"));
            match self.seen.len() == self.fail {
                true => Err(io::Error::from_raw_os_error(libc::EIO)),
                false => Ok(()),
            }
        }
    }

    #[test]
    fn dirs_made_are_synced_each_then_their_parent() {
        let base = tempfile::tempdir().unwrap();
        let leaf = base.path().join("a/b/c");
        let mut rec = Recorder::new(base.path(), 0);
        create_dir_all_with(&leaf, &mut |p, f| rec.sync(p, f)).unwrap();
        assert!(leaf.is_dir());
        assert_eq!(rec.seen, ["d:a", "d:", "d:a/b", "d:a", "d:a/b/c", "d:a/b"]);
        // There already: nothing made, nothing synced.
        rec.seen.clear();
        create_dir_all_with(&leaf, &mut |p, f| rec.sync(p, f)).unwrap();
        create_dir_all_with(base.path(), &mut |p, f| rec.sync(p, f)).unwrap();
        assert!(rec.seen.is_empty(), "{:?}", rec.seen);
        // The real one.
        create_dir_all(&base.path().join("x/y")).unwrap();
        assert!(base.path().join("x/y").is_dir());
        create_dir_all(&base.path().join("x/y")).unwrap();
    }

    #[test]
    fn a_failed_directory_fsync_is_an_error() {
        let base = tempfile::tempdir().unwrap();
        // The parent's fsync (the second) fails: the entry may not be on disk.
        let mut rec = Recorder::new(base.path(), 2);
        let err =
            create_dir_all_with(&base.path().join("a/b"), &mut |p, f| rec.sync(p, f)).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EIO));
        assert_eq!(rec.seen, ["d:a", "d:"], "stops at the failure");
        // A file where a directory should be is refused, as std does.
        std::fs::write(base.path().join("file"), "x").unwrap();
        let err = create_dir_all(&base.path().join("file/sub")).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ENOTDIR), "{err}");
        assert!(create_dir_all(&base.path().join("file")).is_err());
    }

    #[test]
    fn a_file_created_is_synced_with_its_directory_and_an_existing_one_is_not() {
        let base = tempfile::tempdir().unwrap();
        let path = base.path().join("journal.jsonl");
        let mut append = OpenOptions::new();
        append.create(true).append(true);
        let mut rec = Recorder::new(base.path(), 0);
        let mut file = open_durably_with(&path, &append, &mut |p, f| rec.sync(p, f)).unwrap();
        assert_eq!(rec.seen, ["f:journal.jsonl", "d:"]);
        file.write_all(b"one\n").unwrap();
        rec.seen.clear();
        let mut file = open_durably_with(&path, &append, &mut |p, f| rec.sync(p, f)).unwrap();
        file.write_all(b"two\n").unwrap();
        assert!(rec.seen.is_empty(), "{:?}", rec.seen);
        assert_eq!(std::fs::read(&path).unwrap(), b"one\ntwo\n");
        // The options hold for an existing file too: truncate empties it.
        let mut truncate = OpenOptions::new();
        truncate.create(true).write(true).truncate(true);
        open_durably(&path, &truncate).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"");
        // The mode given is the new file's.
        let private = base.path().join("lock");
        open_durably(
            &private,
            OpenOptions::new().create(true).write(true).mode(0o600),
        )
        .unwrap();
        let mode = std::fs::metadata(&private).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }

    #[test]
    fn a_failed_file_fsync_is_an_error_naming_the_path() {
        let base = tempfile::tempdir().unwrap();
        let path = base.path().join("new.jsonl");
        let mut create = OpenOptions::new();
        create.create(true).write(true);
        for fail in [1, 2] {
            let _ = std::fs::remove_file(&path);
            let mut rec = Recorder::new(base.path(), fail);
            let err = open_durably_with(&path, &create, &mut |p, f| rec.sync(p, f)).unwrap_err();
            let shown = if fail == 1 { &path } else { base.path() };
            assert!(
                err.to_string().contains(&shown.display().to_string()),
                "{err}"
            );
        }
        let err = open_durably(&base.path().join("missing/new"), &create).unwrap_err();
        assert!(err.is_not_found(), "{err}");
    }

    #[test]
    fn renames_durably_within_and_across_directories() {
        let base = tempfile::tempdir().unwrap();
        let from = base.path().join("j.jsonl");
        std::fs::write(&from, "x").unwrap();
        let done = base.path().join("j.jsonl.reverted");
        rename_durably(&from, &done).unwrap();
        assert_eq!(names(base.path()), ["j.jsonl.reverted"]);
        create_dir_all(&base.path().join("sub")).unwrap();
        let moved = base.path().join("sub/j");
        rename_durably(&done, &moved).unwrap();
        assert_eq!(std::fs::read(&moved).unwrap(), b"x");
        let err = rename_durably(&from, &done).unwrap_err();
        assert!(err.is_not_found(), "{err}");
        assert!(
            err.to_string().starts_with(&from.display().to_string()),
            "{err}"
        );
    }

    #[test]
    fn a_lock_is_held_once_and_released_when_closed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lock");
        let held = try_lock(&path, true).unwrap().expect("free at first");
        assert!(try_lock(&path, false).unwrap().is_none(), "held");
        drop(held);
        assert!(try_lock(&path, false).unwrap().is_some(), "released");
    }

    #[test]
    fn creates_and_overwrites_leaving_no_temporary_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.json");
        write_atomically(&path, b"{\"first\": true}").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"{\"first\": true}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        write_atomically(&path, b"{}").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"{}");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640);
        write_atomically(&path, b"").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"");
        assert_eq!(names(dir.path()), ["run.json"]);
    }

    #[test]
    fn falls_back_to_a_named_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.csv");
        let tmp = dir
            .path()
            .join(format!(".out.csv.rtlab-{}.tmp", std::process::id()));
        std::fs::write(&tmp, "stale leftover").unwrap();
        write_named(&tmp, &path, b"a,b\n", None).unwrap();
        std::fs::rename(&tmp, &path).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"a,b\n");
        // A stale hidden name left by a crash is replaced on the O_TMPFILE path too.
        std::fs::write(&tmp, "stale leftover").unwrap();
        write_atomically(&path, b"c,d\n").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"c,d\n");
        assert_eq!(names(dir.path()), ["out.csv"]);
    }

    #[test]
    fn errors_name_the_missing_directory() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("no-such-dir").join("run.json");
        let err = write_atomically(&path, b"{}").unwrap_err();
        assert!(err.is_not_found(), "{err}");
        assert!(err.to_string().contains("no-such-dir"), "{err}");
        let err = check_creatable(&path).unwrap_err();
        assert!(
            err.is_not_found() && err.to_string().contains("no-such-dir"),
            "{err}"
        );
        assert_eq!(names(dir.path()), Vec::<String>::new());
    }

    #[test]
    fn checks_creatable_paths_without_creating_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("later.json");
        check_creatable(&path).unwrap();
        assert!(!path.exists());
        let err = check_creatable(dir.path()).unwrap_err();
        assert!(err.to_string().contains("is a directory"), "{err}");
        std::fs::write(&path, "x").unwrap();
        let err = check_creatable(&path.join("inner.json")).unwrap_err();
        assert!(err.to_string().contains("is not a directory"), "{err}");
        let err = check_creatable(Path::new("/")).unwrap_err();
        assert!(err.to_string().contains("names no file"), "{err}");
    }

    #[test]
    fn readers_never_see_a_partial_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("live.json");
        let big = vec![b'x'; 1 << 20];
        write_atomically(&path, &big).unwrap();
        let reader = {
            let path = path.clone();
            std::thread::spawn(move || {
                for _ in 0..200 {
                    let len = std::fs::read(&path).unwrap().len();
                    assert!(len == 1 << 20 || len == 3, "saw {len} bytes");
                }
            })
        };
        for i in 0..50 {
            let content: &[u8] = if i % 2 == 0 { b"new" } else { &big };
            write_atomically(&path, content).unwrap();
        }
        reader.join().unwrap();
    }

    #[test]
    fn filesystem_of_dev_shm_is_in_memory() {
        let shm = filesystem(Path::new("/dev/shm")).unwrap();
        assert!(shm.in_memory, "{shm:?}");
        let here = filesystem(Path::new(env!("CARGO_MANIFEST_DIR"))).unwrap();
        assert!(here.available_bytes > 0, "{here:?}");
        assert!(
            filesystem(Path::new("/nonexistent/dir"))
                .unwrap_err()
                .is_not_found()
        );
    }
}

//! Writes that survive a crash and a power loss: [`write_atomically`] replaces a file so that a
//! reader never sees it half written and a crash leaves the old or the new content;
//! [`create_dir_all`], [`open_durably`] and [`rename_durably`] make new directories, new files
//! and renames survive a power loss on file systems without a journal (ext2, vfat), where
//! nothing reaches the disk unless fsynced: a new name needs its directory fsynced, a new
//! directory its parent; [`try_lock`] keeps a directory to one process at a time.

use std::ffi::{CString, OsString};
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::os::unix::io::AsRawFd;
use std::path::Path;

use crate::{Error, Result, io_error, parent_of, split};

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
/// file systems are not synced: a sync there would flush everything else dirty on them. Where the filesystem has no `O_TMPFILE`, or
/// the process may not link an unnamed file (`AT_EMPTY_PATH` needs CAP_DAC_READ_SEARCH: not
/// root), the hidden name is created directly instead. A replaced file keeps its permission bits; on any
/// error the hidden name is removed. The hidden name is per process: one writer per path at a
/// time (rtlab's checkpoints are written by one thread).
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    write_replacing(path, bytes, None)
}

/// [`write_atomically`] for a file only its owner may read (a queued run names its machine):
/// a new file gets mode 0600, a replaced one keeps its own.
pub fn write_private(path: &Path, bytes: &[u8]) -> Result<()> {
    write_replacing(path, bytes, Some(0o600))
}

/// [`write_atomically`], a new file with `new_mode` when given (else as the umask says). A
/// device, FIFO or socket (`-o /dev/null`, `/dev/stdout`, a named pipe) is written into as it
/// is: replacing it with a file would break the machine (rtlab runs as root). A symbolic link
/// is written through: the file it names is replaced, the link stays.
fn write_replacing(path: &Path, bytes: &[u8], new_mode: Option<u32>) -> Result<()> {
    if crate::is_special(path) {
        return write_into(path, bytes);
    }
    let target = crate::final_target(path)?;
    let path = target.as_path();
    let (dir, name) = split(path)?;
    let mut hidden = OsString::from(".");
    hidden.push(name);
    hidden.push(format!(".rtlab-{}.tmp", std::process::id()));
    let tmp = dir.join(hidden);
    let mode = std::fs::metadata(path)
        .ok()
        .filter(|m| m.is_file())
        .map(|m| m.permissions().mode() & 0o7777)
        .or(new_mode);
    let unjournalled = crate::disk::unjournalled(&dir);
    let result = write_unnamed(&dir, &tmp, path, bytes, mode)
        .and_then(|linked| match linked {
            true => Ok(()),
            false => write_named(&tmp, path, bytes, mode),
        })
        .and_then(|()| match unjournalled {
            true => crate::disk::sync_filesystem(&dir),
            false => Ok(()),
        })
        .and_then(|()| replace_with(&tmp, path, unjournalled, &mut real_sync));
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Writes `bytes` into the device, FIFO, socket or descriptor `path` (opened as it is, to
/// append: a shell's `>>` file keeps what it holds; nothing is created).
fn write_into(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut file = OpenOptions::new()
        .append(true)
        .open(path)
        .map_err(|e| io_error(path, e))?;
    file.write_all(bytes).map_err(|e| io_error(path, e))?;
    file.flush().map_err(|e| io_error(path, e))
}

/// Renames the written `tmp` over `path` and makes the rename durable, so that at no moment of a
/// power cut does `path`'s name on disk point at storage the file system marks free.
///
/// With `unjournalled` (the file system keeps no journal), freeing the replaced file's storage
/// and writing the name's new target are two writes nothing orders: vfat writes a renamed
/// file's directory entry only with that file's inode, while a directory fsync flushes the
/// FAT, the replaced file's freed clusters included. After a power cut the entry still named
/// the old, freed clusters and the kernel remounted the disk read-only (lab, issue #46). There
/// the replaced file is kept open across the rename, so its storage stays allocated; the
/// directory is synced (the temporary name gone), then the file at its new name (its entry),
/// and only then is the old file let go and the directory synced again (the free).
pub(crate) fn replace_with(
    tmp: &Path,
    path: &Path,
    unjournalled: bool,
    sync: Syncer<'_>,
) -> Result<()> {
    let (dir, _) = split(path)?;
    let held = match unjournalled {
        true => open_regular(path).ok(),
        false => None,
    };
    std::fs::rename(tmp, path).map_err(|e| io_error(tmp, e))?;
    sync(&dir, None).map_err(|e| io_error(&dir, e))?;
    if !unjournalled {
        return Ok(());
    }
    let file = open_regular(path).map_err(|e| io_error(path, e))?;
    sync(path, Some(&file)).map_err(|e| io_error(path, e))?;
    drop(held);
    sync(&dir, None).map_err(|e| io_error(&dir, e))
}

/// Opens `path` to read when it is a regular file, never following a link or waiting on a FIFO.
fn open_regular(path: &Path) -> io::Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?;
    match file.metadata()?.is_file() {
        true => Ok(file),
        false => Err(io::Error::from_raw_os_error(libc::EINVAL)),
    }
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
pub(crate) fn create_dir_all_with(dir: &Path, sync: Syncer<'_>) -> io::Result<()> {
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
pub(crate) fn open_durably_with(
    path: &Path,
    options: &OpenOptions,
    sync: Syncer<'_>,
) -> Result<File> {
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
    let c_tmp = CString::new(tmp.as_os_str().as_bytes()).map_err(|_| Error::Unsupported {
        what: format!("writing {}", target.display()),
        why: "the path contains a NUL byte".to_string(),
    })?;
    for attempt in 0..2 {
        // SAFETY: the descriptor is open for the call, the empty path and `c_tmp` are valid
        // NUL-terminated strings; linkat only reads them.
        let rc = unsafe {
            libc::linkat(
                file.as_raw_fd(),
                c"".as_ptr(),
                libc::AT_FDCWD,
                c_tmp.as_ptr(),
                libc::AT_EMPTY_PATH,
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
            // Not allowed to link an unnamed file (no CAP_DAC_READ_SEARCH): name the file the
            // plain way.
            Some(libc::ENOENT | libc::EPERM) => return Ok(false),
            _ => return Err(io_error(tmp, err)),
        }
    }
    Ok(false)
}

/// The fallback: create the hidden name itself and write into it.
pub(crate) fn write_named(
    tmp: &Path,
    target: &Path,
    bytes: &[u8],
    mode: Option<u32>,
) -> Result<()> {
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
pub(crate) type Syncer<'a> = &'a mut dyn FnMut(&Path, Option<&File>) -> io::Result<()>;

/// fsyncs `file`, or the directory `path`; a filesystem that cannot fsync a directory
/// (EINVAL) is let be.
pub(crate) fn real_sync(path: &Path, file: Option<&File>) -> io::Result<()> {
    if let Some(file) = file {
        return file.sync_all();
    }
    match File::open(path).and_then(|d| d.sync_all()) {
        Err(e) if e.raw_os_error() != Some(libc::EINVAL) => Err(e),
        _ => Ok(()),
    }
}

/// Removes the file `path` and fsyncs its directory, so that the removal survives a power loss.
/// `Ok(false)` when it was not there.
///
/// On a file system without a journal the file is kept open across the removal and the
/// directory synced before and after it is let go, so that the entry's removal reaches the disk
/// before its storage is marked free (see [`replace_with`]).
pub fn remove_durably(path: &Path) -> Result<bool> {
    let (dir, _) = split(path)?;
    let held = match crate::disk::unjournalled(&dir) {
        true => open_regular(path).ok(),
        false => None,
    };
    match std::fs::remove_file(path) {
        Ok(()) => {
            sync_dir(&dir)?;
            if held.is_some() {
                drop(held);
                sync_dir(&dir)?;
            }
            Ok(true)
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(io_error(path, e)),
    }
}

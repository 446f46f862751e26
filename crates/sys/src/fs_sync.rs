//! What makes a write durable on the file system it lands on: whether that file system keeps a
//! journal (statfs magic, and the mount's type for the ext family, from this process's
//! mountinfo through [`crate::Root`]) and the sync (`syncfs`) that puts a journal-less file
//! system's allocation bitmaps on disk. `fs::write_atomically` asks it before each rename.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::io::AsRawFd;
use std::path::Path;

use crate::{Error, Result};

/// Whether the file system holding `dir` keeps no journal, so that its allocation bitmaps reach
/// the disk only with a sync: FAT and exFAT by their statfs magic; the ext family (one magic)
/// when its mount says `ext2`. Unknown: `false`.
pub(crate) fn unjournalled(dir: &Path) -> bool {
    const EXT_MAGIC: i64 = 0xEF53;
    const MSDOS_MAGIC: i64 = 0x4d44;
    const EXFAT_MAGIC: i64 = 0x2011_BAB0;
    match statfs_magic(dir) {
        Some(MSDOS_MAGIC | EXFAT_MAGIC) => true,
        Some(EXT_MAGIC) => mount_fstype(dir).is_some_and(|t| t == "ext2"),
        _ => false,
    }
}

/// The file system type (`f_type`) statfs gives for `dir`.
fn statfs_magic(dir: &Path) -> Option<i64> {
    #[allow(clippy::unnecessary_cast)] // f_type's width differs between architectures
    statfs(dir).ok().map(|st| st.f_type as i64)
}

/// What statfs(2) says of the file system holding `dir` (also `fs::filesystem`'s source);
/// errors are the system's, for the caller to name (a path with a NUL byte: `InvalidInput`).
pub(crate) fn statfs(dir: &Path) -> io::Result<libc::statfs> {
    let c_dir = CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "the path contains a NUL byte"))?;
    // SAFETY: an all-zero statfs is valid storage for the kernel to fill.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c_dir` is a valid NUL-terminated path and `st` valid, writable storage.
    if unsafe { libc::statfs(c_dir.as_ptr(), &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(st)
}

/// The type of the mount holding `dir` (`ext2`, `ext4`), from this process's mountinfo (the
/// mount point nearest `dir`; `\040` escapes are read back as spaces).
fn mount_fstype(dir: &Path) -> Option<String> {
    let dir = std::fs::canonicalize(dir).ok()?;
    let text = crate::Root::host().read("/proc/self/mountinfo").ok()?;
    text.lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let point = left.split(' ').nth(4)?.replace("\\040", " ");
            let fstype = right.split(' ').next()?;
            dir.starts_with(&point)
                .then(|| (point.len(), fstype.to_string()))
        })
        .max_by_key(|(len, _)| *len)
        .map(|(_, fstype)| fstype)
}

/// Writes every dirty inode and block of the file system that holds `dir` to disk (`syncfs`),
/// allocation bitmaps included, which no fsync of a file or directory promises on ext2.
pub(crate) fn sync_filesystem(dir: &Path) -> Result<()> {
    let file = File::open(dir).map_err(|e| Error::from_io(dir, e))?;
    // SAFETY: syncfs takes a file descriptor we own for the duration of the call.
    let rc = unsafe { libc::syncfs(file.as_raw_fd()) };
    if rc != 0 {
        return Err(Error::from_io(dir, io::Error::last_os_error()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mount_of_a_directory_is_found_and_a_journalled_one_is_not_synced() {
        // `/` is mounted as something; /proc is proc (no statfs magic of a journal-less disk).
        assert!(mount_fstype(Path::new("/")).is_some());
        assert_eq!(mount_fstype(Path::new("/proc")).as_deref(), Some("proc"));
        assert!(!unjournalled(Path::new("/proc")));
        assert!(!unjournalled(Path::new("/no/such/dir")));
    }
}

//! The file system under a directory: how much room it has and whether it is RAM
//! ([`filesystem`], for an io load), and what makes a write durable on it: whether it keeps a
//! journal ([`unjournalled`]: its statfs magic; for the ext family, which shares one magic, the
//! probe the binary set with [`set_ext_journal_probe`]) and the sync (`syncfs`) that puts a
//! journal-less file system's allocation bitmaps on disk.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::io::AsRawFd;
use std::path::Path;
use std::sync::OnceLock;

use crate::{Error, Result, io_error};

/// How to tell whether an ext-family file system keeps no journal (ext2, or ext4 made without
/// one, both mounted by the ext4 driver): set once, by the binary, from the crate that reads
/// the mount table and the kernel's journals (`sys`).
static EXT_JOURNAL_PROBE: OnceLock<fn(&Path) -> bool> = OnceLock::new();

/// Sets how [`unjournalled`] tells whether the ext-family file system holding a directory keeps
/// no journal. The first call wins. Without one, the ext family counts as journalled.
pub fn set_ext_journal_probe(probe: fn(&Path) -> bool) {
    let _ = EXT_JOURNAL_PROBE.set(probe);
}

/// Whether the file system holding `dir` keeps no journal, so that its allocation bitmaps reach
/// the disk only with a sync: FAT and exFAT by their statfs magic; the ext family (one magic)
/// when the probe says it has no journal. Unknown: `false`.
pub fn unjournalled(dir: &Path) -> bool {
    const EXT_MAGIC: i64 = 0xEF53;
    const MSDOS_MAGIC: i64 = 0x4d44;
    const EXFAT_MAGIC: i64 = 0x2011_BAB0;
    match statfs_magic(dir) {
        Some(MSDOS_MAGIC | EXFAT_MAGIC) => true,
        Some(EXT_MAGIC) => EXT_JOURNAL_PROBE.get().is_some_and(|probe| probe(dir)),
        _ => false,
    }
}

/// The file system type (`f_type`) statfs gives for `dir`.
fn statfs_magic(dir: &Path) -> Option<i64> {
    #[allow(clippy::unnecessary_cast)] // f_type's width differs between architectures
    statfs(dir).ok().map(|st| st.f_type as i64)
}

/// What statfs(2) says of the file system holding `dir`; errors are the system's, for the
/// caller to name (a path with a NUL byte: `InvalidInput`).
fn statfs(dir: &Path) -> io::Result<libc::statfs> {
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
    let st = statfs(dir).map_err(|e| io_error(dir, e))?;
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

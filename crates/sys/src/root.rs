//! [`Root`]: where kernel files are read from and written to, and [`Error`]: what went wrong,
//! always with the path.

use std::collections::BTreeSet;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The empty file that keeps an otherwise empty directory of a fixture tree in git
/// (`/proc/irq/24/eth0/.keep`); [`Root::list_dir`] hides it under fixture roots.
pub const KEEP_MARKER: &str = ".keep";

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A failure at the kernel boundary. Every variant names the path (or the call) involved.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The file does not exist: the kernel lacks the feature, or it is not mounted.
    #[error("{path}: not found")]
    NotFound {
        /// The path that was missing.
        path: PathBuf,
    },
    /// The kernel refused access.
    #[error("{path}: permission denied; {fix}")]
    PermissionDenied {
        /// The path or call refused.
        path: PathBuf,
        /// What to do about it.
        fix: String,
    },
    /// The kernel does not support what was asked.
    #[error("{what}: not supported: {why}")]
    Unsupported {
        /// What was attempted.
        what: String,
        /// Why it cannot work here.
        why: String,
    },
    /// The kernel's text was not in the expected form.
    #[error("{path}:{line}: cannot parse {what}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line number (0 when not line-oriented).
        line: usize,
        /// What was expected.
        what: String,
    },
    /// Any other I/O or syscall failure.
    #[error("{path}: {source}")]
    Io {
        /// The path or call.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
}

impl Error {
    /// Classifies an I/O error on `path`.
    pub fn from_io(path: impl Into<PathBuf>, source: io::Error) -> Error {
        // One classification for the kernel's files and rtlab's own.
        files::Error::from_io(path, source).into()
    }

    /// Classifies the failure of the system call `call` (named with its arguments, e.g.
    /// `sched_setattr(SCHED_DEADLINE, ...)`). ENOSYS, a call this kernel or the C library
    /// does not implement, or that an emulator such as qemu-user does not pass on, becomes
    /// [`Error::Unsupported`] saying so and what to do; any other error is kept as it is.
    pub fn from_syscall(call: impl Into<String>, source: io::Error) -> Error {
        let call = call.into();
        if source.raw_os_error() != Some(libc::ENOSYS) {
            return Error::Io {
                path: PathBuf::from(call),
                source,
            };
        }
        let name = call.split('(').next().unwrap_or_default().trim();
        Error::Unsupported {
            why: format!(
                "this kernel does not implement the {name} system call (ENOSYS): it was built                  without it, or rtlab runs under an emulator such as qemu-user that does not                  pass it on; run rtlab natively on a kernel that has it"
            ),
            what: call,
        }
    }

    /// Whether this error means "the file is not there".
    pub fn is_not_found(&self) -> bool {
        matches!(self, Error::NotFound { .. })
    }
}

/// A failure with one of rtlab's own files, where a kernel-side error is expected (the same
/// variants, the same words).
impl From<files::Error> for Error {
    fn from(e: files::Error) -> Error {
        match e {
            files::Error::NotFound { path } => Error::NotFound { path },
            files::Error::PermissionDenied { path, fix } => Error::PermissionDenied { path, fix },
            files::Error::Unsupported { what, why } => Error::Unsupported { what, why },
            files::Error::Io { path, source } => Error::Io { path, source },
        }
    }
}

/// What a kernel path names, as [`Root::kind`] sees it (symbolic links followed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryKind {
    /// A directory.
    Dir,
    /// A regular file (procfs and sysfs files are regular files).
    File,
    /// Anything else: a device, a socket, a FIFO.
    Other,
}

/// The directory that stands for `/`: the live host, or a fixture tree in tests.
///
/// Paths given to its methods are absolute kernel paths (`/proc/cmdline`); they are joined
/// under the root's base.
///
/// A root can also keep a record of every kernel path read through it ([`Root::recording`]):
/// that is how `rtlab audit capture` knows exactly which files to copy.
#[derive(Clone, Debug)]
pub struct Root {
    base: PathBuf,
    record: Option<Arc<Mutex<BTreeSet<PathBuf>>>>,
}

impl PartialEq for Root {
    fn eq(&self, other: &Root) -> bool {
        self.base == other.base
    }
}

impl Eq for Root {}

impl Root {
    /// The live machine.
    pub fn host() -> Root {
        Root {
            base: PathBuf::from("/"),
            record: None,
        }
    }

    /// A tree rooted at `dir` (a captured fixture or a fake tree).
    pub fn at(dir: impl Into<PathBuf>) -> Root {
        Root {
            base: dir.into(),
            record: None,
        }
    }

    /// The same root, keeping a record of every kernel path read, listed or tested through it
    /// (clones share the record).
    pub fn recording(&self) -> Root {
        Root {
            base: self.base.clone(),
            record: Some(Arc::new(Mutex::new(BTreeSet::new()))),
        }
    }

    /// Notes that kernel path `path` was consulted (for readers that open files themselves).
    pub fn note(&self, path: impl AsRef<Path>) {
        if let Some(record) = &self.record {
            let p = path.as_ref();
            let abs = if p.is_absolute() {
                p.to_path_buf()
            } else {
                Path::new("/").join(p)
            };
            record.lock().unwrap_or_else(|e| e.into_inner()).insert(abs);
        }
    }

    /// The kernel paths consulted so far, sorted; empty unless this root is recording.
    pub fn recorded(&self) -> Vec<PathBuf> {
        self.record
            .as_ref()
            .map(|r| {
                r.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .iter()
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Whether this is the live machine.
    pub fn is_host(&self) -> bool {
        self.base == Path::new("/")
    }

    /// Whether there is a kernel to read under this root: `/proc/version` or the CPU list in
    /// sysfs. `Err` says what is missing, for a `--root` that names the wrong directory or a
    /// host without `/proc` and `/sys` mounted (every check would otherwise read absence).
    pub fn check_kernel_tree(&self) -> std::result::Result<(), String> {
        if !self.base.is_dir() {
            return Err(format!(
                "{} is not a directory; give a tree captured with `rtlab audit capture DIR`",
                self.base.display()
            ));
        }
        if self.path("/proc/version").exists()
            || self.path("/sys/devices/system/cpu/online").exists()
        {
            return Ok(());
        }
        Err(if self.is_host() {
            "neither /proc/version nor /sys/devices/system/cpu/online exists: mount /proc and /sys (in a container: give it the host's)".to_string()
        } else {
            format!(
                "{} holds no kernel tree (no proc/version, no sys/devices/system/cpu/online); give a tree captured with `rtlab audit capture DIR`",
                self.base.display()
            )
        })
    }

    /// The base directory.
    pub fn base(&self) -> &Path {
        &self.base
    }

    /// The real path of kernel path `path` under this root.
    pub fn path(&self, path: impl AsRef<Path>) -> PathBuf {
        let p = path.as_ref();
        self.base.join(p.strip_prefix("/").unwrap_or(p))
    }

    /// Reads a whole file as text, until EOF (pseudo-files can return short reads).
    pub fn read(&self, path: impl AsRef<Path>) -> Result<String> {
        self.note(&path);
        let full = self.path(&path);
        std::fs::File::open(&full)
            .and_then(|mut f| read_text(&mut f))
            .map_err(|e| Error::from_io(&full, e))
    }

    /// Reads a file, mapping "not found" to `None`.
    pub fn read_opt(&self, path: impl AsRef<Path>) -> Result<Option<String>> {
        match self.read(path) {
            Ok(text) => Ok(Some(text)),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Reads a one-line file and trims it; `None` when absent or unreadable.
    pub fn read_trimmed(&self, path: impl AsRef<Path>) -> Option<String> {
        self.read(path).ok().map(|s| s.trim().to_string())
    }

    /// Reads a one-value file and parses it; `None` when absent, unreadable or unparsable.
    pub fn read_value<T: std::str::FromStr>(&self, path: impl AsRef<Path>) -> Option<T> {
        self.read_trimmed(path)?.parse().ok()
    }

    /// Reads a whole file as bytes (a process's `environ`, a compressed config).
    pub fn read_bytes(&self, path: impl AsRef<Path>) -> Result<Vec<u8>> {
        self.note(&path);
        let full = self.path(&path);
        std::fs::read(&full).map_err(|e| Error::from_io(&full, e))
    }

    /// What the path names; `None` when it does not exist (or cannot be looked at).
    pub fn kind(&self, path: impl AsRef<Path>) -> Option<EntryKind> {
        self.note(&path);
        let meta = std::fs::metadata(self.path(path)).ok()?;
        Some(if meta.is_dir() {
            EntryKind::Dir
        } else if meta.is_file() {
            EntryKind::File
        } else {
            EntryKind::Other
        })
    }

    /// Names of the subdirectories of a directory (symbolic links to directories included),
    /// sorted.
    pub fn subdirs(&self, path: impl AsRef<Path>) -> Result<Vec<String>> {
        let dir = path.as_ref();
        Ok(self
            .list_dir(dir)?
            .into_iter()
            .filter(|name| self.path(dir.join(name)).is_dir())
            .collect())
    }

    /// Whether the path exists.
    pub fn exists(&self, path: impl AsRef<Path>) -> bool {
        self.note(&path);
        self.path(path).exists()
    }

    /// Writes `value` to a kernel file in one write (sysfs and procfs knobs take one write).
    pub fn write(&self, path: impl AsRef<Path>, value: &str) -> Result<()> {
        let full = self.path(&path);
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .create(!self.is_host())
            .open(&full)
            .map_err(|e| Error::from_io(&full, e))?;
        f.write_all(value.as_bytes())
            .map_err(|e| Error::from_io(&full, e))
    }

    /// Creates a directory (a cgroup: the kernel fills in its control files).
    pub fn create_dir(&self, path: impl AsRef<Path>) -> Result<()> {
        let full = self.path(&path);
        std::fs::create_dir(&full).map_err(|e| Error::from_io(&full, e))
    }

    /// Removes an empty directory (a cgroup without tasks).
    pub fn remove_dir(&self, path: impl AsRef<Path>) -> Result<()> {
        let full = self.path(&path);
        std::fs::remove_dir(&full).map_err(|e| Error::from_io(&full, e))
    }

    /// Removes a file (in a captured tree: a file a change created; kernel files cannot be).
    pub fn remove_file(&self, path: impl AsRef<Path>) -> Result<()> {
        let full = self.path(&path);
        std::fs::remove_file(&full).map_err(|e| Error::from_io(&full, e))
    }

    /// Names of the entries of a directory, sorted. Under a fixture tree the marker
    /// [`KEEP_MARKER`] (which keeps empty directories in git) is not an entry.
    pub fn list_dir(&self, path: impl AsRef<Path>) -> Result<Vec<String>> {
        self.note(&path);
        let full = self.path(&path);
        let host = self.is_host();
        let mut names: Vec<String> = std::fs::read_dir(&full)
            .map_err(|e| Error::from_io(&full, e))?
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| host || n != KEEP_MARKER)
            .collect();
        names.sort();
        Ok(names)
    }
}

/// The bytes a kernel pseudo-file gives, read until EOF in 16 KiB reads, as text.
///
/// `read_to_string` starts with a 32-byte probe and then reads into whatever the buffer has
/// left; some kernel files refuse a read whose buffer is not larger than their whole text
/// (`osnoise/cpus` answers EINVAL: `len >= count`), so every read here offers 16 KiB, and short
/// reads are taken until EOF. Invalid UTF-8 is an `InvalidData` error, as with
/// `read_to_string`.
pub(crate) fn read_text(file: &mut std::fs::File) -> std::io::Result<String> {
    use std::io::Read;
    let mut chunk = vec![0u8; 16 * 1024];
    let mut bytes = Vec::new();
    loop {
        match file.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => bytes.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    String::from_utf8(bytes).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_system_call_is_one_line_naming_the_call_and_the_fix() {
        let err = Error::from_syscall(
            "sched_setattr(SCHED_DEADLINE, runtime 100000 ns)",
            io::Error::from_raw_os_error(libc::ENOSYS),
        );
        assert!(matches!(err, Error::Unsupported { .. }), "{err:?}");
        let text = err.to_string();
        assert!(
            text.starts_with("sched_setattr(SCHED_DEADLINE, runtime 100000 ns): not supported: "),
            "{text}"
        );
        assert!(text.contains("does not implement the sched_setattr system call (ENOSYS)"));
        assert!(text.contains("qemu-user") && text.contains("run rtlab natively"));
        assert!(!text.contains('\n'), "{text}");
    }

    #[test]
    fn other_system_call_errors_keep_the_kernel_s_word() {
        let err = Error::from_syscall(
            "mmap(4096 bytes)",
            io::Error::from_raw_os_error(libc::ENOMEM),
        );
        assert!(matches!(err, Error::Io { .. }), "{err:?}");
        assert!(err.to_string().starts_with("mmap(4096 bytes): "), "{err}");
    }

    #[test]
    fn joins_kernel_paths_under_the_base() {
        let root = Root::at("/tmp/fixture");
        assert_eq!(
            root.path("/proc/cmdline"),
            PathBuf::from("/tmp/fixture/proc/cmdline")
        );
        assert_eq!(
            Root::host().path("/proc/cmdline"),
            PathBuf::from("/proc/cmdline")
        );
        assert!(Root::host().is_host());
    }

    #[test]
    fn missing_files_are_not_found_with_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::at(dir.path());
        let err = root.read("/proc/nothing").unwrap_err();
        assert!(err.is_not_found());
        assert!(err.to_string().contains("proc/nothing"), "{err}");
        assert_eq!(root.read_opt("/proc/nothing").unwrap(), None);
        root.write("/value", "42\n").unwrap();
        assert_eq!(root.read_value::<u32>("/value"), Some(42));
    }

    #[test]
    fn kinds_bytes_and_subdirectories() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::at(dir.path());
        std::fs::create_dir_all(dir.path().join("proc/9/task")).unwrap();
        std::fs::create_dir_all(dir.path().join("proc/irq")).unwrap();
        root.write("/proc/9/environ", "A=1\0B=2\0").unwrap();
        std::os::unix::fs::symlink("9", dir.path().join("proc/self")).unwrap();
        assert_eq!(root.kind("/proc"), Some(EntryKind::Dir));
        assert_eq!(root.kind("/proc/self/environ"), Some(EntryKind::File));
        assert_eq!(root.kind("/proc/nothing"), None);
        assert_eq!(
            root.read_bytes("/proc/self/environ").unwrap(),
            b"A=1\0B=2\0"
        );
        assert!(root.read_bytes("/proc/nothing").unwrap_err().is_not_found());
        assert_eq!(root.subdirs("/proc").unwrap(), ["9", "irq", "self"]);
        assert_eq!(root.subdirs("/proc/9").unwrap(), ["task"]);
    }

    #[test]
    fn a_recording_root_lists_what_was_consulted() {
        let dir = tempfile::tempdir().unwrap();
        let plain = Root::at(dir.path());
        std::fs::create_dir(dir.path().join("proc")).unwrap();
        plain.write("/proc/a", "1").unwrap();
        let _ = plain.read("/proc/a");
        assert!(plain.recorded().is_empty());
        let root = plain.recording();
        assert_eq!(root, plain);
        let _ = root.read("/proc/a");
        let _ = root.clone().read_opt("/proc/missing");
        let _ = root.list_dir("/proc");
        root.note("sys/x");
        assert_eq!(
            root.recorded(),
            ["/proc", "/proc/a", "/proc/missing", "/sys/x"]
                .map(PathBuf::from)
                .to_vec()
        );
    }
}

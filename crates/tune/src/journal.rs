//! The tuning journal: one JSON line per step of `tune apply`, appended and flushed to disk
//! (`fsync`) *before* the step changes the machine, so that after a crash or a power loss
//! mid-apply `tune revert` still knows every original value. A step the crash cut short is
//! recorded but not done; revert finds its file already holding the original and skips it.
//! The journal's directory and its name are made durable too (fsynced when created, and when
//! renamed done), so that on a filesystem without a journal (ext2, vfat, f2fs) a power loss
//! cannot lose the file whose lines were fsynced.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// One step.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Entry {
    /// A file write: the file's whole original text (none: it did not exist) and the value
    /// written.
    Write {
        /// Kernel path.
        path: String,
        /// The original contents, byte for byte.
        original: Option<String>,
        /// What to write back to restore it on a live kernel, where the original text is not
        /// always writable (`always [madvise] never` → `madvise`, a controller list → `-cpuset`).
        restore: Option<String>,
        /// The value written.
        new: String,
    },
    /// A directory created (a cgroup).
    Mkdir {
        /// Kernel path.
        path: String,
    },
    /// Tasks moved from the `from` procs file's cgroup into `to`'s.
    MoveTasks {
        /// Where they were.
        from: String,
        /// Where they went.
        to: String,
        /// The pids listed in `from` when the move began.
        pids: Vec<u32>,
        /// Their CPU affinity then (`Cpus_allowed_list`), which the move narrows and revert
        /// gives back.
        affinity: Vec<(u32, String)>,
    },
    /// A service restarted (to read a changed file); revert restarts it again at the end.
    Restart {
        /// The systemd unit.
        service: String,
    },
    /// A kernel thread's CPU affinity changed.
    Affinity {
        /// The thread.
        tid: u32,
        /// Its name then.
        comm: String,
        /// Its allowed CPUs then.
        original: String,
        /// Its allowed CPUs now.
        new: String,
    },
    /// A thread's scheduling policy changed.
    Policy {
        /// The thread.
        tid: u32,
        /// Its name then, so that a thread id reused by another thread is not touched.
        comm: String,
        /// How it was scheduled (`FIFO 50`, `OTHER`).
        original: String,
        /// How it is scheduled now.
        new: String,
    },
}

/// An append-only journal file.
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    file: File,
}

/// The journal's default place (`/var/lib/rtlab/tune-journal.jsonl`).
pub const DEFAULT_PATH: &str = "/var/lib/rtlab/tune-journal.jsonl";

impl Journal {
    /// Creates a new journal at `path` (its directory too); an existing journal with entries
    /// is an error: the machine is tuned already and must be reverted first.
    pub fn create(path: &Path) -> Result<Journal, String> {
        if read(path).is_ok_and(|e| !e.is_empty()) {
            return Err(format!(
                "{} records a tuning that has not been reverted; run `rtlab tune revert` first \
                 (or give another --journal)",
                path.display()
            ));
        }
        let file = open(path, OpenOptions::new().write(true).truncate(true))?;
        Ok(Journal {
            path: path.to_path_buf(),
            file,
        })
    }

    /// Opens the journal at `path` to add to it (`tune irqd` adds what it changes to the
    /// tuning's journal, so one revert takes everything back); creates it when absent.
    pub fn append(path: &Path) -> Result<Journal, String> {
        let file = open(path, OpenOptions::new().append(true))?;
        Ok(Journal {
            path: path.to_path_buf(),
            file,
        })
    }

    /// Takes the journal for itself until [`Journal::release`]: a `tune revert` running
    /// meanwhile waits (see [`hold`]).
    pub fn take(&self) -> Result<(), String> {
        self.file
            .lock()
            .map_err(|e| format!("locking {}: {e}", self.path.display()))
    }

    /// Lets a waiting `tune revert` go on.
    pub fn release(&self) {
        let _ = self.file.unlock();
    }

    /// Whether the journal is still the tuning's: `tune revert` renames it when done, and a
    /// writer holding it open must then stop adding to it.
    pub fn is_current(&self) -> bool {
        use std::os::unix::fs::MetadataExt;
        match (std::fs::metadata(&self.path), self.file.metadata()) {
            (Ok(on_disk), Ok(open)) => on_disk.ino() == open.ino() && on_disk.dev() == open.dev(),
            _ => false,
        }
    }

    /// Appends `entry` and waits until it is on disk.
    pub fn record(&mut self, entry: &Entry) -> Result<(), String> {
        let mut line = serde_json::to_string(entry).map_err(|e| e.to_string())?;
        line.push('\n');
        self.file
            .write_all(line.as_bytes())
            .and_then(|()| self.file.sync_all())
            .map_err(|e| format!("{}: {e}", self.path.display()))
    }
}

/// Opens the journal at `path` with `options`, creating it and its directory where absent,
/// durably (each directory and the file made are fsynced with the directory holding them).
fn open(path: &Path, options: &mut OpenOptions) -> Result<File, String> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        files::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    files::open_durably(path, options.create(true)).map_err(|e| e.to_string())
}

/// The journal at `path` held (an exclusive `flock`) until dropped, so that `tune revert` reads
/// and closes it while no `tune irqd` adds to it: otherwise a change irqd made after revert read
/// the journal would never be taken back.
#[derive(Debug)]
pub struct Held {
    _file: File,
}

/// Holds the journal at `path`, waiting for a writer's pass to end.
pub fn hold(path: &Path) -> Result<Held, String> {
    let file = File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    file.lock()
        .map_err(|e| format!("locking {}: {e}", path.display()))?;
    Ok(Held { _file: file })
}

/// The entries of the journal at `path`, in order. A last line cut short by a crash is
/// skipped (its step never started: the entry is written before the step).
pub fn read(path: &Path) -> Result<Vec<Entry>, String> {
    let mut text = String::new();
    File::open(path)
        .and_then(|mut file| file.read_to_string(&mut text))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    parse(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// The entries of a journal's text, in order: one JSON object a line, blank lines ignored, a
/// last line that does not read skipped (a crash cut it short). Errors name the 1-based line.
pub fn parse(text: &str) -> Result<Vec<Entry>, String> {
    let mut entries = Vec::new();
    let mut lines = text.lines().enumerate().peekable();
    while let Some((i, line)) = lines.next() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str(line) {
            Ok(e) => entries.push(e),
            Err(_) if lines.peek().is_none() => {}
            Err(e) => return Err(format!("line {}: {e}", i + 1)),
        }
    }
    Ok(entries)
}

/// Marks the journal done: renamed to `<path>.reverted` (durably: the directory fsynced), so a
/// new apply may start.
pub fn close(path: &Path) -> Result<PathBuf, String> {
    let done = path.with_extension("jsonl.reverted");
    files::rename_durably(path, &done).map_err(|e| e.to_string())?;
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_journal_is_made_with_its_directories_added_to_and_closed() {
        let base = tempfile::tempdir().unwrap();
        let path = base.path().join("var/lib/rtlab/tune-journal.jsonl");
        let mkdir = Entry::Mkdir {
            path: "/sys/fs/cgroup/rt".into(),
        };
        Journal::create(&path).unwrap().record(&mkdir).unwrap();
        assert!(
            Journal::create(&path)
                .unwrap_err()
                .contains("not been reverted")
        );
        let restart = Entry::Restart {
            service: "irqbalance".into(),
        };
        Journal::append(&path).unwrap().record(&restart).unwrap();
        assert_eq!(read(&path).unwrap(), [mkdir, restart]);
        let done = close(&path).unwrap();
        assert!(!path.exists() && done.exists());
        // Closed, a new one may start, where it was.
        assert!(Journal::create(&path).unwrap().is_current());
        assert_eq!(read(&path).unwrap(), []);
    }

    #[test]
    fn a_cut_last_line_is_skipped_and_a_bad_middle_line_named() {
        let good = r#"{"step":"mkdir","path":"/sys/fs/cgroup/rt"}"#;
        let cut = format!("{good}\n\n{{\"step\":\"wri");
        assert_eq!(parse(&cut).unwrap().len(), 1);
        let bad = format!("{good}\nnot json\n{good}\n");
        assert!(parse(&bad).unwrap_err().starts_with("line 2: "));
        assert_eq!(parse("").unwrap(), Vec::new());
    }
}

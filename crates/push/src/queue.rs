//! The push queue: a directory of runs that could not be sent yet, one file per run
//! ([`crate::queue_file`]), each written atomically (a temporary file, fsync, rename, fsync of
//! the directory), so a board that loses power mid-write keeps either the old file or the new
//! one. Draining sends them in the order they were queued and removes a file only after the
//! server acknowledged it (200/201); a run the server will never take moves to `refused/`.

use std::ffi::OsString;
use std::fs::{self, File};
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::client::Uploaded;
use crate::error::Class;
use crate::queue_file::{MAX_QUEUE_FILE, QueuedRun};
use crate::retry::Failed;
use crate::target::Target;

/// The folder refused runs are moved into, inside the queue.
pub const REFUSED_DIR: &str = "refused";

/// A queue directory.
#[derive(Clone, Debug)]
pub struct Queue {
    dir: PathBuf,
}

/// A queue file that could not be read: left where it is, and said.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Damaged {
    /// The file.
    pub path: PathBuf,
    /// Why, in one line.
    pub why: String,
}

/// A queued run and its file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The file.
    pub path: PathBuf,
    /// What it holds.
    pub run: QueuedRun,
}

/// The queue's content, oldest first.
#[derive(Clone, Debug, Default)]
pub struct Listing {
    /// Runs waiting, in the order they were queued.
    pub entries: Vec<Entry>,
    /// Files that could not be read.
    pub damaged: Vec<Damaged>,
    /// How many runs wait in `refused/`.
    pub refused: usize,
}

/// What a drain did.
#[derive(Debug, Default)]
pub struct Drained {
    /// Runs the server stored (or had), removed from the queue.
    pub sent: Vec<(Entry, Uploaded)>,
    /// Runs the server will never take, moved to `refused/`, with why.
    pub refused: Vec<(Entry, Failed)>,
    /// Runs still queued; the first failure that stopped the drain is `stopped`.
    pub kept: Vec<Entry>,
    /// Why the drain stopped before the end: the server cannot be reached, or refused the
    /// token or the URL.
    pub stopped: Option<Failed>,
    /// Files that could not be read, left as they are.
    pub damaged: Vec<Damaged>,
}

/// A queue operation that failed, naming the file.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {source}")]
pub struct QueueError {
    /// The file or directory.
    pub path: String,
    /// What failed.
    pub source: std::io::Error,
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> QueueError + '_ {
    move |source| QueueError {
        path: path.display().to_string(),
        source,
    }
}

/// The default queue directory: `RTLAB_PUSH_QUEUE` when set, else
/// `$XDG_STATE_HOME/rtlab/push-queue` (an absolute path, as the XDG spec requires), else
/// `$HOME/.local/state/rtlab/push-queue`. `env` looks a variable up.
pub fn default_dir(env: impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    let var = |key: &str| env(key).filter(|v| !v.is_empty());
    if let Some(dir) = var("RTLAB_PUSH_QUEUE") {
        return Some(PathBuf::from(dir));
    }
    let state = var("XDG_STATE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| var("HOME").map(|h| PathBuf::from(h).join(".local/state")))?;
    Some(state.join("rtlab").join("push-queue"))
}

impl Queue {
    /// The queue in `dir` (created when the first run is queued).
    pub fn at(dir: impl Into<PathBuf>) -> Queue {
        Queue { dir: dir.into() }
    }

    /// Its directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Queues `run`; the same run already queued for the same server keeps its place and
    /// first-queued time, and adds this try's attempts and error. Returns the file.
    pub fn enqueue(&self, mut run: QueuedRun) -> Result<PathBuf, QueueError> {
        files::create_dir_all(&self.dir).map_err(io_error(&self.dir))?;
        let path = self.dir.join(run.file_name());
        if let Ok(old) = read_file(&path) {
            run.queued_at = old.queued_at;
            run.attempts = run.attempts.saturating_add(old.attempts);
            run.last_error = run.last_error.or(old.last_error);
            run.run_id = run.run_id.or(old.run_id);
            run.host = run.host.or(old.host);
            run.started_at = run.started_at.or(old.started_at);
            run.label = run.label.or(old.label);
            run.session = run.session.or(old.session);
        }
        write_atomically(&path, run.to_json().as_bytes())?;
        Ok(path)
    }

    /// Every queued run, oldest first, and the files that could not be read.
    pub fn list(&self) -> Result<Listing, QueueError> {
        let mut listing = Listing::default();
        let names = match fs::read_dir(&self.dir) {
            Ok(names) => names,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(listing),
            Err(e) => return Err(io_error(&self.dir)(e)),
        };
        for item in names {
            let item = item.map_err(io_error(&self.dir))?;
            let path = item.path();
            let name = item.file_name().to_string_lossy().into_owned();
            // Hidden files are temporary files being written.
            if name.starts_with('.') {
                continue;
            }
            if name == REFUSED_DIR {
                listing.refused = fs::read_dir(&path).map_or(0, |d| d.count());
                continue;
            }
            match read_file(&path).and_then(|run| {
                if run.file_name() == name {
                    Ok(run)
                } else {
                    Err("its name does not match its content (copied or edited by hand?)".into())
                }
            }) {
                Ok(run) => listing.entries.push(Entry { path, run }),
                Err(why) => listing.damaged.push(Damaged { path, why }),
            }
        }
        listing
            .entries
            .sort_by(|a, b| (a.run.queued_time(), &a.path).cmp(&(b.run.queued_time(), &b.path)));
        listing.damaged.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(listing)
    }

    /// Records a failed try of a queued run in its file.
    pub fn record_failure(&self, entry: &mut Entry, failed: &Failed) -> Result<(), QueueError> {
        entry.run.failed(failed.attempts, &failed.error.to_string());
        write_atomically(&entry.path, entry.run.to_json().as_bytes())
    }

    /// Moves a run the server will never take to `refused/`, with why in its file.
    pub fn refuse(&self, entry: &mut Entry, failed: &Failed) -> Result<PathBuf, QueueError> {
        self.record_failure(entry, failed)?;
        let dir = self.dir.join(REFUSED_DIR);
        files::create_dir_all(&dir).map_err(io_error(&dir))?;
        let to = dir.join(entry.run.file_name());
        files::rename_durably(&entry.path, &to).map_err(file_error)?;
        Ok(to)
    }

    /// Removes a run the server acknowledged.
    pub fn remove(&self, entry: &Entry) -> Result<(), QueueError> {
        files::remove_durably(&entry.path)
            .map(|_| ())
            .map_err(file_error)
    }

    /// Sends every run queued for `target`, oldest first, with `send` (one run, retries
    /// included): a stored run is removed, a refused one moved to `refused/`; a failure that
    /// is not the run's own (the server is down, or refused the token or the URL) stops the
    /// drain, and it and every later run stay queued.
    pub fn drain(
        &self,
        target: &Target,
        send: &mut dyn FnMut(&QueuedRun) -> Result<Uploaded, Failed>,
    ) -> Result<Drained, QueueError> {
        let listing = self.list()?;
        let mut out = Drained {
            damaged: listing.damaged,
            ..Drained::default()
        };
        let mine = listing
            .entries
            .into_iter()
            .filter(|e| e.run.target == target.as_str());
        for mut entry in mine {
            if out.stopped.is_some() {
                out.kept.push(entry);
                continue;
            }
            match send(&entry.run) {
                Ok(uploaded) => {
                    self.remove(&entry)?;
                    out.sent.push((entry, uploaded));
                }
                Err(failed) if failed.error.class == Class::Refused => {
                    self.refuse(&mut entry, &failed)?;
                    out.refused.push((entry, failed));
                }
                Err(failed) => {
                    self.record_failure(&mut entry, &failed)?;
                    out.kept.push(entry);
                    out.stopped = Some(failed);
                }
            }
        }
        Ok(out)
    }
}

/// Reads and checks one queue file, bounded.
pub fn read_file(path: &Path) -> Result<QueuedRun, String> {
    let file = File::open(path).map_err(|e| e.to_string())?;
    let meta = file.metadata().map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a regular file".to_string());
    }
    if meta.len() > MAX_QUEUE_FILE {
        return Err(format!("larger than {} MiB", MAX_QUEUE_FILE >> 20));
    }
    let mut bytes = Vec::new();
    file.take(MAX_QUEUE_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > MAX_QUEUE_FILE {
        return Err(format!("larger than {} MiB", MAX_QUEUE_FILE >> 20));
    }
    let text = String::from_utf8(bytes).map_err(|_| "not UTF-8 text".to_string())?;
    QueuedRun::from_json(&text)
}

/// A failure of the file library on a queue file, as the queue reports it.
fn file_error(e: files::Error) -> QueueError {
    use std::io::{Error, ErrorKind};
    let (path, source) = match e {
        files::Error::NotFound { path } => (path, Error::from(ErrorKind::NotFound)),
        files::Error::PermissionDenied { path, fix } => (
            path,
            Error::new(
                ErrorKind::PermissionDenied,
                format!("permission denied; {fix}"),
            ),
        ),
        files::Error::Unsupported { what, why } => (PathBuf::from(what), Error::other(why)),
        files::Error::Io { path, source } => (path, source),
    };
    QueueError {
        path: path.display().to_string(),
        source,
    }
}

/// Writes `bytes` to `path` so that a crash leaves the old file or the new one, readable by
/// its owner only (a run names its machine).
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), QueueError> {
    files::write_private(path, bytes).map_err(file_error)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::PushError;
    use crate::queue_file::About;

    fn run(doc: &str, target: &str) -> QueuedRun {
        QueuedRun::new(
            &Target::parse(target).unwrap(),
            doc.to_string(),
            About::default(),
            None,
            None,
        )
    }

    fn failed(class: Class) -> Failed {
        Failed {
            error: PushError::new(class, "http://lab", "it failed"),
            attempts: 2,
        }
    }

    fn ok(id: &str) -> Result<Uploaded, Failed> {
        Ok(Uploaded {
            id: id.into(),
            new: true,
        })
    }

    #[test]
    fn the_default_dir_follows_xdg_state_home() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                vars.iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| OsString::from(v))
            }
        };
        assert_eq!(
            default_dir(env(&[("RTLAB_PUSH_QUEUE", "/q"), ("HOME", "/h")])),
            Some(PathBuf::from("/q"))
        );
        assert_eq!(
            default_dir(env(&[("XDG_STATE_HOME", "/s"), ("HOME", "/h")])),
            Some(PathBuf::from("/s/rtlab/push-queue"))
        );
        assert_eq!(
            default_dir(env(&[("XDG_STATE_HOME", "rel"), ("HOME", "/h")])),
            Some(PathBuf::from("/h/.local/state/rtlab/push-queue"))
        );
        assert_eq!(default_dir(env(&[])), None);
    }

    #[test]
    fn a_run_queued_twice_is_one_file_that_keeps_its_place() {
        let dir = tempfile::tempdir().unwrap();
        let q = Queue::at(dir.path().join("q"));
        let mut first = run("{\"a\":1}", "http://lab");
        first.failed(1, "down");
        let path = q.enqueue(first.clone()).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let mut again = run("{\"a\":1}", "http://lab");
        again.failed(2, "still down");
        assert_eq!(q.enqueue(again).unwrap(), path);
        let listing = q.list().unwrap();
        assert_eq!(listing.entries.len(), 1);
        let kept = &listing.entries[0].run;
        assert_eq!(kept.queued_at, first.queued_at);
        assert_eq!(kept.attempts, 3);
        assert_eq!(kept.last_error.as_deref(), Some("still down"));
        // Only the file: no temporary file left behind, owner-only permissions.
        let names: Vec<_> = fs::read_dir(q.dir())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1);
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }

    #[test]
    fn runs_are_listed_and_sent_in_the_order_they_were_queued() {
        let dir = tempfile::tempdir().unwrap();
        let q = Queue::at(dir.path());
        for i in 0..5 {
            q.enqueue(run(&format!("{{\"n\":{i}}}"), "http://lab"))
                .unwrap();
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        q.enqueue(run("{\"other\":1}", "http://elsewhere")).unwrap();
        let order: Vec<String> = q
            .list()
            .unwrap()
            .entries
            .iter()
            .map(|e| e.run.document.clone())
            .collect();
        assert_eq!(
            order[..5],
            [
                "{\"n\":0}",
                "{\"n\":1}",
                "{\"n\":2}",
                "{\"n\":3}",
                "{\"n\":4}"
            ]
        );
        let mut sent = Vec::new();
        let target = Target::parse("http://lab").unwrap();
        let drained = q
            .drain(&target, &mut |r| {
                sent.push(r.document.clone());
                ok("ab12")
            })
            .unwrap();
        assert_eq!(sent, order[..5]);
        assert_eq!(drained.sent.len(), 5);
        // The other server's run stays.
        let left = q.list().unwrap().entries;
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].run.target, "http://elsewhere");
    }

    #[test]
    fn a_refused_run_moves_aside_and_the_drain_goes_on() {
        let dir = tempfile::tempdir().unwrap();
        let q = Queue::at(dir.path());
        q.enqueue(run("{\"bad\":1}", "http://lab")).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(2));
        q.enqueue(run("{\"good\":1}", "http://lab")).unwrap();
        let target = Target::parse("http://lab").unwrap();
        let drained = q
            .drain(&target, &mut |r| {
                if r.document.contains("bad") {
                    Err(failed(Class::Refused))
                } else {
                    ok("cd34")
                }
            })
            .unwrap();
        assert_eq!((drained.refused.len(), drained.sent.len()), (1, 1));
        let listing = q.list().unwrap();
        assert!(listing.entries.is_empty());
        assert_eq!(listing.refused, 1);
        let moved = fs::read_dir(dir.path().join(REFUSED_DIR))
            .unwrap()
            .next()
            .unwrap()
            .unwrap();
        let kept = read_file(&moved.path()).unwrap();
        assert!(kept.last_error.unwrap().contains("it failed"));
    }

    #[test]
    fn an_unreachable_server_or_a_bad_token_stops_the_drain_and_keeps_everything() {
        for class in [Class::Retryable, Class::Credentials, Class::Target] {
            let dir = tempfile::tempdir().unwrap();
            let q = Queue::at(dir.path());
            for i in 0..3 {
                q.enqueue(run(&format!("{{\"n\":{i}}}"), "http://lab"))
                    .unwrap();
            }
            let target = Target::parse("http://lab").unwrap();
            let mut tries = 0;
            let drained = q
                .drain(&target, &mut |_| {
                    tries += 1;
                    Err(failed(class))
                })
                .unwrap();
            assert_eq!(tries, 1, "{class:?}");
            assert_eq!(drained.kept.len(), 3);
            assert!(drained.stopped.is_some());
            let listing = q.list().unwrap();
            assert_eq!(listing.entries.len(), 3);
            assert_eq!(
                listing.entries.iter().map(|e| e.run.attempts).sum::<u32>(),
                2
            );
        }
    }

    #[test]
    fn a_damaged_file_is_reported_and_left_and_does_not_stop_the_others() {
        let dir = tempfile::tempdir().unwrap();
        let q = Queue::at(dir.path());
        q.enqueue(run("{\"n\":1}", "http://lab")).unwrap();
        let good = q.list().unwrap().entries[0].path.clone();
        // A half-written file, a file from elsewhere, a renamed one, a temporary one.
        let text = fs::read_to_string(&good).unwrap();
        fs::write(
            dir.path().join(format!("{}.json", "0".repeat(64))),
            &text[..text.len() / 2],
        )
        .unwrap();
        fs::write(dir.path().join("notes.txt"), "hello").unwrap();
        fs::write(dir.path().join(format!("{}.json", "1".repeat(64))), &text).unwrap();
        fs::write(dir.path().join(".x.json.1.tmp"), "partial").unwrap();
        let listing = q.list().unwrap();
        assert_eq!(listing.entries.len(), 1);
        assert_eq!(listing.damaged.len(), 3, "{:?}", listing.damaged);
        assert!(
            listing
                .damaged
                .iter()
                .any(|d| d.why.contains("name does not match"))
        );
        let target = Target::parse("http://lab").unwrap();
        let drained = q.drain(&target, &mut |_| ok("ab")).unwrap();
        assert_eq!((drained.sent.len(), drained.damaged.len()), (1, 3));
        // Left, not deleted.
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 4);
    }

    #[test]
    fn an_oversized_file_is_not_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.json");
        let f = File::create(&path).unwrap();
        f.set_len(MAX_QUEUE_FILE + 10).unwrap();
        assert!(read_file(&path).unwrap_err().contains("larger than"));
    }

    #[test]
    fn an_empty_or_missing_queue_lists_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let listing = Queue::at(dir.path().join("none")).list().unwrap();
        assert!(listing.entries.is_empty() && listing.damaged.is_empty());
    }
}

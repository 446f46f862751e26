//! The file library's tests: atomic writes, durable directories and files (fsyncs seen
//! through a recording syncer), locks, creatable checks, private directories.

#[test]
fn an_atomic_write_replaces_the_file_and_syncs_its_file_system() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.json");
    write_atomically(&path, b"one").unwrap();
    write_atomically(&path, b"two").unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"two");
    // Nothing hidden is left beside it.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    let e = crate::disk::sync_filesystem(&dir.path().join("gone")).unwrap_err();
    assert!(e.to_string().contains("gone"), "{e}");
}

use super::*;
use crate::write::{create_dir_all_with, open_durably_with, write_named};
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};

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
    remove_tree(&first).unwrap();
    assert!(!first.exists());
    remove_tree(&first).expect("already gone counts as gone");
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

/// Whether this process holds open a file whose name `path` was replaced or removed.
fn holds_replaced(path: &Path) -> bool {
    let gone = format!("{} (deleted)", path.display());
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .any(|target| target.as_os_str() == gone.as_str())
}

#[test]
fn a_replaced_file_on_a_journal_less_disk_is_let_go_only_after_its_new_entry_is_synced() {
    let base = tempfile::tempdir().unwrap();
    let path = base.path().join("state.json");
    let tmp = base.path().join(".state.json.tmp");
    std::fs::write(&path, "old").unwrap();
    std::fs::write(&tmp, "new").unwrap();
    let mut rec = Recorder::new(base.path(), 0);
    let mut held_at = Vec::new();
    crate::write::replace_with(&tmp, &path, true, &mut |p, f| {
        held_at.push(holds_replaced(&path));
        rec.sync(p, f)
    })
    .unwrap();
    // The directory (the temporary name gone), the file at its new name (its entry), then the
    // directory again once the old file is let go (its storage freed).
    assert_eq!(rec.seen, ["d:", "f:state.json", "d:"]);
    assert_eq!(held_at, [true, true, false]);
    assert_eq!(std::fs::read(&path).unwrap(), b"new");
    assert_eq!(names(base.path()), ["state.json"]);

    // With a journal the rename is synced once and nothing is held.
    std::fs::write(&tmp, "newer").unwrap();
    let mut rec = Recorder::new(base.path(), 0);
    crate::write::replace_with(&tmp, &path, false, &mut |p, f| rec.sync(p, f)).unwrap();
    assert_eq!(rec.seen, ["d:"]);
    assert!(!holds_replaced(&path));
    // A first write (nothing to replace) on a journal-less disk still syncs the new entry.
    std::fs::remove_file(&path).unwrap();
    std::fs::write(&tmp, "first").unwrap();
    let mut rec = Recorder::new(base.path(), 0);
    crate::write::replace_with(&tmp, &path, true, &mut |p, f| rec.sync(p, f)).unwrap();
    assert_eq!(rec.seen, ["d:", "f:state.json", "d:"]);
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
    // The probe is gone.
    assert_eq!(names(dir.path()), ["later.json"]);
}

#[test]
fn a_directory_that_takes_no_files_is_refused_even_for_root() {
    // Root passes access(2) on /proc, where no file can be made: only creating one tells.
    let err = check_creatable(Path::new("/proc/rtlab-x.json")).unwrap_err();
    assert!(
        err.to_string().contains("/proc takes no new files"),
        "{err}"
    );
    let err = check_dir_creatable(Path::new("/proc/rtlab-traces/a")).unwrap_err();
    assert!(
        err.to_string().contains("/proc takes no new files"),
        "{err}"
    );
    // A read-only directory, for a user without root: refused by the file system's answer.
    let dir = tempfile::tempdir().unwrap();
    let ro = dir.path().join("ro");
    std::fs::create_dir(&ro).unwrap();
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).unwrap();
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    assert_eq!(check_creatable(&ro.join("x.json")).is_ok(), root);
    assert!(names(&ro).is_empty());
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

/// `-o /dev/null`, `-o /dev/stdout`, a named pipe and a link: written into or through, never
/// replaced by a plain file (rtlab runs as root; `-o /dev/full` once made /dev/full a JSON
/// file; issue #48).
#[test]
fn devices_fifos_and_links_are_written_into_not_replaced() {
    use std::os::unix::fs::FileTypeExt;
    let dir = tempfile::tempdir().unwrap();
    // A device: /dev/null stays a character device.
    write_atomically(Path::new("/dev/null"), b"x").unwrap();
    assert!(
        std::fs::metadata("/dev/null")
            .unwrap()
            .file_type()
            .is_char_device()
    );
    check_creatable(Path::new("/dev/null")).unwrap();
    // /dev/full: the device's own error, not a file in its place.
    if Path::new("/dev/full").exists() {
        let e = write_atomically(Path::new("/dev/full"), b"x").unwrap_err();
        assert!(e.to_string().contains("/dev/full"), "{e}");
        assert!(
            std::fs::metadata("/dev/full")
                .unwrap()
                .file_type()
                .is_char_device()
        );
    }
    // A FIFO: a reader gets the bytes, and it stays a FIFO.
    let fifo = dir.path().join("pipe");
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read(fifo).unwrap())
    };
    write_atomically(&fifo, b"through the pipe").unwrap();
    assert_eq!(reader.join().unwrap(), b"through the pipe");
    assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
    // A link to a file: the file gets the bytes, the link stays a link.
    let real = dir.path().join("real.json");
    std::fs::write(&real, b"old").unwrap();
    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink("real.json", &link).unwrap();
    check_creatable(&link).unwrap();
    write_atomically(&link, b"new").unwrap();
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(std::fs::read(&real).unwrap(), b"new");
    // A dangling link: the file it names is made.
    let dangling = dir.path().join("later.json");
    std::os::unix::fs::symlink("made.json", &dangling).unwrap();
    write_atomically(&dangling, b"made").unwrap();
    assert_eq!(
        std::fs::read(dir.path().join("made.json")).unwrap(),
        b"made"
    );
    // A loop of links is the kernel's ELOOP, named.
    let a = dir.path().join("a");
    std::os::unix::fs::symlink("b", &a).unwrap();
    std::os::unix::fs::symlink("a", dir.path().join("b")).unwrap();
    assert!(write_atomically(&a, b"x").is_err());
}

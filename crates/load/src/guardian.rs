//! The guardian: a small separate process that cleans up after a load if rtlab dies without
//! doing so itself (SIGKILL, OOM kill, a crash).
//!
//! rtlab starts it (`rtlab guardian`, a hidden command) in its own process group with a pipe
//! on its standard input, and tells it, one line at a time, what would be left behind: process
//! groups of external commands, the load's private directory, its cgroup; and what no longer
//! would. When the pipe reaches end of file, which the kernel guarantees however rtlab ends,
//! the guardian kills the groups still listed, removes the directories and cgroups still
//! listed, and exits. After a clean stop the list is empty and it exits at once.
//!
//! The protocol is `+KIND VALUE` / `-KIND VALUE` lines with KIND one of `group`, `dir`,
//! `cgroup` (a kernel path, removed through the guardian's [`Root`](sys::Root), the one rtlab
//! runs on). The guardian refuses anything not named like rtlab's own (`rtlab-load-*`), so a
//! stray line cannot make it delete something else.

use std::collections::BTreeSet;
use std::io::{BufRead, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use sys::process::StopSignal;

/// The name prefix of every directory and cgroup a load creates.
pub const NAME_PREFIX: &str = "rtlab-load-";

/// Something that must not outlive rtlab.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Watched {
    /// A process group (an external command and everything it started).
    Group(u32),
    /// A private directory, removed with its contents.
    Dir(PathBuf),
    /// A cgroup directory, removed once empty.
    Cgroup(PathBuf),
}

impl Watched {
    fn line(&self, sign: char) -> String {
        match self {
            Watched::Group(pgid) => format!("{sign}group {pgid}\n"),
            Watched::Dir(p) => format!("{sign}dir {}\n", p.display()),
            Watched::Cgroup(p) => format!("{sign}cgroup {}\n", p.display()),
        }
    }

    fn parse(line: &str) -> Option<(bool, Watched)> {
        let (add, rest) = match line.as_bytes().first()? {
            b'+' => (true, &line[1..]),
            b'-' => (false, &line[1..]),
            _ => return None,
        };
        let (kind, value) = rest.split_once(' ')?;
        let item = match kind {
            "group" => Watched::Group(value.parse().ok().filter(|&g: &u32| g > 1)?),
            "dir" => Watched::Dir(owned_path(value)?),
            "cgroup" => Watched::Cgroup(owned_path(value)?),
            _ => return None,
        };
        Some((add, item))
    }
}

/// `value` as an absolute path whose last component is one of rtlab's names.
fn owned_path(value: &str) -> Option<PathBuf> {
    let path = PathBuf::from(value);
    let name = path.file_name()?.to_str()?;
    (path.is_absolute() && name.starts_with(NAME_PREFIX) && !value.contains("/../")).then_some(path)
}

/// rtlab's side of the guardian: registers and releases what the guardian watches.
#[derive(Debug)]
pub struct Watcher {
    inner: Mutex<Option<(Child, ChildStdin)>>,
}

impl Watcher {
    /// A watcher without a guardian (tests of single generators): registrations are dropped.
    pub fn none() -> Watcher {
        Watcher {
            inner: Mutex::new(None),
        }
    }

    /// Starts the guardian: `program args...`, in its own process group, reading the protocol
    /// on its standard input.
    pub fn spawn(program: &Path, args: &[String]) -> std::io::Result<Watcher> {
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .process_group(0)
            .spawn()?;
        let stdin = child.stdin.take().expect("stdin was piped");
        Ok(Watcher {
            inner: Mutex::new(Some((child, stdin))),
        })
    }

    /// Whether a guardian process is watching.
    pub fn is_active(&self) -> bool {
        self.inner.lock().map(|g| g.is_some()).unwrap_or(false)
    }

    /// Asks the guardian to clean `item` up if rtlab dies.
    pub fn watch(&self, item: &Watched) {
        self.send(&item.line('+'));
    }

    /// Tells the guardian `item` was cleaned up.
    pub fn release(&self, item: &Watched) {
        self.send(&item.line('-'));
    }

    fn send(&self, line: &str) {
        if let Ok(mut guard) = self.inner.lock()
            && let Some((_, stdin)) = guard.as_mut()
        {
            // A guardian that died cannot be helped; rtlab still cleans up itself.
            let _ = stdin.write_all(line.as_bytes());
        }
    }

    /// Closes the pipe and waits (up to 5 s) for the guardian to exit; it cleans whatever is
    /// still registered.
    pub fn finish(&self) {
        let taken = self.inner.lock().ok().and_then(|mut g| g.take());
        if let Some((mut child, stdin)) = taken {
            drop(stdin);
            let deadline = Instant::now() + Duration::from_secs(5);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.finish();
    }
}

/// The guardian process's work: reads the protocol until end of file, then cleans up what is
/// still registered, cgroups and processes under `root`. Returns the problems it met, one line
/// each (empty when all went well).
pub fn run(input: impl BufRead, root: &sys::Root) -> Vec<String> {
    let mut watched = BTreeSet::new();
    for line in input.lines() {
        let Ok(line) = line else { break };
        match Watched::parse(line.trim_end()) {
            Some((true, item)) => {
                watched.insert(item);
            }
            Some((false, item)) => {
                watched.remove(&item);
            }
            None => {}
        }
    }
    clean_up(&watched, root)
}

fn clean_up(watched: &BTreeSet<Watched>, root: &sys::Root) -> Vec<String> {
    let mut problems = Vec::new();
    let groups: Vec<u32> = watched
        .iter()
        .filter_map(|w| match w {
            Watched::Group(g) => Some(*g),
            _ => None,
        })
        .collect();
    for &g in &groups {
        if let Err(e) = sys::process::signal_group(g, StopSignal::Kill) {
            problems.push(format!("process group {g}: {e}"));
        }
    }
    let deadline = Instant::now() + Duration::from_secs(2);
    while groups
        .iter()
        .any(|&g| sys::process::group_running(root, g) > 0)
        && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(5));
    }
    for item in watched {
        match item {
            Watched::Dir(dir) => {
                if let Err(e) = files::remove_tree(dir) {
                    problems.push(format!("{e} (the directory was left behind)"));
                }
            }
            Watched::Cgroup(dir) => {
                let patience = deadline.saturating_duration_since(Instant::now());
                if let Err(e) = sys::cgroup::remove(root, dir, patience) {
                    problems.push(e.to_string());
                }
            }
            Watched::Group(_) => {}
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocol_round_trip_and_refusals() {
        for item in [
            Watched::Group(4242),
            Watched::Dir("/var/tmp/rtlab-load-1-2".into()),
            Watched::Cgroup("/sys/fs/cgroup/cpuset/rtlab-load-7".into()),
        ] {
            let line = item.line('+');
            assert_eq!(Watched::parse(line.trim_end()), Some((true, item.clone())));
            assert_eq!(
                Watched::parse(item.line('-').trim_end()),
                Some((false, item))
            );
        }
        for bad in [
            "+dir /home/user",
            "+dir relative/rtlab-load-1",
            "+dir /tmp/rtlab-load-1/../../etc/rtlab-load-2",
            "+cgroup /sys/fs/cgroup/system.slice",
            "+group 1",
            "+group 0",
            "+group x",
            "group 5",
            "+pid 5",
            "",
        ] {
            assert_eq!(Watched::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn cleans_what_is_still_registered_at_end_of_file() {
        let base = tempfile::tempdir().unwrap();
        let kept = base.path().join("rtlab-load-kept");
        let gone = base.path().join("rtlab-load-gone");
        for d in [&kept, &gone] {
            std::fs::create_dir_all(d.join("sub")).unwrap();
            std::fs::write(d.join("sub/file"), b"x").unwrap();
        }
        let mut sleeper = std::process::Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap();
        let pgid = sleeper.id();
        let input = format!(
            "+dir {}\n+dir {}\n-dir {}\n+group {pgid}\nnonsense\n",
            kept.display(),
            gone.display(),
            kept.display()
        );
        let problems = run(input.as_bytes(), &sys::Root::host());
        assert!(problems.is_empty(), "{problems:?}");
        assert!(kept.exists(), "released directories are left alone");
        assert!(!gone.exists());
        assert!(!sleeper.wait().unwrap().success());
    }

    #[test]
    fn cgroups_are_removed_under_the_guardians_root() {
        let tree = tempfile::tempdir().unwrap();
        let root = sys::Root::at(tree.path());
        for d in [
            "/cg",
            "/cg/rtlab-load-kept",
            "/cg/rtlab-load-gone",
            "/cg/rtlab-load-busy",
        ] {
            root.create_dir(d).unwrap();
        }
        // A file inside stands for a task that never leaves: removal fails and says where.
        root.write("/cg/rtlab-load-busy/cgroup.procs", "77\n")
            .unwrap();
        let input = "+cgroup /cg/rtlab-load-kept\n-cgroup /cg/rtlab-load-kept\n\
                     +cgroup /cg/rtlab-load-gone\n+cgroup /cg/rtlab-load-busy\n\
                     +cgroup /cg/rtlab-load-never-made\n";
        let problems = run(input.as_bytes(), &root);
        assert!(
            root.exists("/cg/rtlab-load-kept"),
            "released cgroups are left alone"
        );
        assert!(!root.exists("/cg/rtlab-load-gone"));
        assert_eq!(problems.len(), 1, "{problems:?}");
        let busy = tree.path().join("cg/rtlab-load-busy");
        assert!(
            problems[0].starts_with(&busy.display().to_string()),
            "{problems:?}"
        );
    }

    #[test]
    fn a_watcher_without_a_guardian_accepts_everything() {
        let w = Watcher::none();
        assert!(!w.is_active());
        w.watch(&Watched::Group(5));
        w.release(&Watched::Group(5));
        w.finish();
    }
}

//! `rtlab audit capture DIR`: runs the whole audit through a recording [`Root`] and copies
//! exactly the files and directories it consulted into DIR, with a `MANIFEST.toml`, so a
//! user's machine becomes a fixture tree that `rtlab audit --root DIR` judges the same way.
//!
//! The kernel side is read through `source` ([`Root::kind`], [`Root::read_bytes`],
//! [`Root::subdirs`], `sys::kmsg`); what is written is the user's own output tree. A file
//! consulted only for being there (tracefs's write-only `trace_marker`) is copied empty.
//!
//! Privacy: the hostname is replaced by `rtlab-host` in every copied text file, and process
//! environments keep only the `IRQBALANCE_*` variables the audit looks at. The copy is made
//! in a temporary directory beside DIR and renamed into place, so a failed capture leaves
//! nothing half-written.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use sys::{EntryKind, Root};

use crate::{Options, Selection};

/// What replaces the hostname in captured files.
pub const SCRUBBED_HOSTNAME: &str = "rtlab-host";

/// What a capture copied.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CaptureSummary {
    /// Files copied.
    pub files: usize,
    /// Directories created (listed or tested by the audit).
    pub dirs: usize,
    /// Bytes written.
    pub bytes: u64,
    /// Paths the audit consulted that could not be copied, and why (absent ones are not
    /// listed: their absence is part of the capture).
    pub skipped: Vec<(String, String)>,
}

/// A capture that could not be made.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    /// The destination exists and is not an empty directory.
    #[error("{0}: already exists and is not empty; give a new directory")]
    NotEmpty(PathBuf),
    /// Writing the copy failed.
    #[error("{path}: {source}")]
    Write {
        /// Where.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// Captures the machine under `source` into `dest`.
pub fn capture(
    source: &Root,
    dest: &Path,
    options: &Options,
) -> Result<CaptureSummary, CaptureError> {
    if dest.exists() && !files::is_empty_dir(dest) {
        return Err(CaptureError::NotEmpty(dest.to_path_buf()));
    }
    let recording = source.recording();
    let report = record_audit(source, &recording, options);
    let hostname = source
        .read_trimmed("/proc/sys/kernel/hostname")
        .filter(|h| h.len() >= 2 && h != SCRUBBED_HOSTNAME);

    let parent = dest
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let staging = tempfile_dir(parent).map_err(write_err(parent))?;
    let mut summary = CaptureSummary::default();
    let mut listed: Vec<String> = Vec::new();
    for kernel_path in recording.recorded() {
        if copy_entry(
            source,
            &kernel_path,
            staging.path(),
            hostname.as_deref(),
            &mut summary,
        )? {
            listed.push(kernel_path.display().to_string());
        }
    }
    mark_empty_dirs(staging.path()).map_err(write_err(staging.path()))?;
    let manifest = manifest(dest, &report, hostname.is_some(), &listed);
    let manifest_path = staging.path().join("MANIFEST.toml");
    std::fs::write(&manifest_path, manifest).map_err(write_err(&manifest_path))?;
    move_into_place(staging, dest)?;
    Ok(summary)
}

/// The error-mapping step for a write to `path`.
fn write_err(path: &Path) -> impl FnOnce(std::io::Error) -> CaptureError {
    let path = path.to_path_buf();
    move |source| CaptureError::Write { path, source }
}

/// Runs the audit through `recording` (without a kernel config or dmesg file given by the
/// user, so those are read from the machine) and returns its report.
///
/// With no RT CPUs the placement checks stop before reading IRQs, workqueues and tasks;
/// a second pass with every CPU but the first as RT CPUs makes them read it all, so the
/// capture can be audited later with any --rt-cpus.
fn record_audit(source: &Root, recording: &Root, options: &Options) -> model::audit::AuditReport {
    let options = Options {
        kconfig: None,
        dmesg: None,
        ..options.clone()
    };
    let report = crate::run(recording, &options, &Selection::default())
        .expect("the default selection matches every check");
    let online = sys::cpu::online(source).unwrap_or_default();
    if report.rt_cpus.cpus.is_empty() && online.len() >= 2 {
        let mut rt = online.clone();
        if let Some(first) = online.first() {
            rt = rt.difference(&model::CpuSet::from_cpus([first]));
        }
        let probe = Options {
            rt_cpus: Some(rt),
            ..options.clone()
        };
        let _ = crate::run(recording, &probe, &Selection::default());
    }
    report
}

/// Copies one path the audit consulted into `staging`: a directory is created (with its
/// subdirectories), a file is read, scrubbed and written. Returns whether a file was copied
/// (for the manifest); what cannot be read goes to `summary.skipped`.
fn copy_entry(
    source: &Root,
    kernel_path: &Path,
    staging: &Path,
    hostname: Option<&str>,
    summary: &mut CaptureSummary,
) -> Result<bool, CaptureError> {
    let Some(kind) = source.kind(kernel_path) else {
        return Ok(false);
    };
    let rel = kernel_path.strip_prefix("/").unwrap_or(kernel_path);
    let out = staging.join(rel);
    if kind == EntryKind::Dir {
        copy_dir(source, kernel_path, &out)?;
        summary.dirs += 1;
        return Ok(false);
    }
    let read = match kind {
        EntryKind::File if presence_only(kernel_path) => Ok(Vec::new()),
        _ if kernel_path == Path::new(sys::kmsg::KMSG) => {
            sys::kmsg::read_all(source).map(String::into_bytes)
        }
        EntryKind::File => source.read_bytes(kernel_path),
        _ => {
            summary.skipped.push((
                kernel_path.display().to_string(),
                "not a regular file".to_string(),
            ));
            return Ok(false);
        }
    };
    let bytes = match read {
        Ok(b) => b,
        Err(e) => {
            summary
                .skipped
                .push((kernel_path.display().to_string(), e.to_string()));
            return Ok(false);
        }
    };
    let bytes = scrub(kernel_path, bytes, hostname);
    if let Some(dir) = out.parent() {
        std::fs::create_dir_all(dir).map_err(write_err(dir))?;
    }
    std::fs::write(&out, &bytes).map_err(write_err(&out))?;
    summary.files += 1;
    summary.bytes += bytes.len() as u64;
    Ok(true)
}

/// Creates the copy `out` of a directory the audit listed or tested. A listing sees the
/// subdirectories too (cpuN/node0, /proc/irq/N/eth0): make them, empty unless the audit
/// read inside them.
fn copy_dir(source: &Root, kernel_path: &Path, out: &Path) -> Result<(), CaptureError> {
    std::fs::create_dir_all(out).map_err(write_err(out))?;
    if !skip_subdir(kernel_path) {
        for name in source.subdirs(kernel_path).unwrap_or_default() {
            let sub = out.join(name);
            std::fs::create_dir_all(&sub).map_err(write_err(&sub))?;
        }
    }
    Ok(())
}

/// Whether a file is consulted only for being there and copied empty: tracefs's
/// `trace_marker`, which marks where tracefs is mounted and cannot be read (write-only).
fn presence_only(kernel_path: &Path) -> bool {
    kernel_path.file_name() == Some(std::ffi::OsStr::new("trace_marker"))
}

/// Renames the finished staging directory to `dest` (an empty `dest` is replaced); on
/// failure the staging copy is removed.
fn move_into_place(staging: TempDir, dest: &Path) -> Result<(), CaptureError> {
    if dest.exists() {
        std::fs::remove_dir(dest).map_err(write_err(dest))?;
    }
    let staged = staging.keep();
    std::fs::rename(&staged, dest).map_err(|e| {
        let _ = std::fs::remove_dir_all(&staged);
        CaptureError::Write {
            path: dest.to_path_buf(),
            source: e,
        }
    })
}

/// Whether the subdirectories of a listed directory are left out: those of `/proc` (process
/// directories the audit looked into are copied with their files; `/proc/self` would be the
/// capturing process).
fn skip_subdir(listed: &Path) -> bool {
    listed == Path::new("/proc")
}

/// Puts [`sys::KEEP_MARKER`] into every empty directory, so the tree survives a git commit.
fn mark_empty_dirs(dir: &Path) -> std::io::Result<()> {
    let mut empty = true;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        empty = false;
        if entry.file_type()?.is_dir() {
            mark_empty_dirs(&entry.path())?;
        }
    }
    if empty {
        std::fs::write(dir.join(sys::KEEP_MARKER), "")?;
    }
    Ok(())
}

/// A private directory beside the destination (same file system, so the rename is atomic).
fn tempfile_dir(parent: &Path) -> std::io::Result<TempDir> {
    for n in 0..1000u32 {
        let path = parent.join(format!(".rtlab-capture-{}-{n}", std::process::id()));
        match std::fs::create_dir(&path) {
            Ok(()) => return Ok(TempDir { path: Some(path) }),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other("no free temporary directory name"))
}

/// A directory removed on drop unless kept.
struct TempDir {
    path: Option<PathBuf>,
}

impl TempDir {
    fn path(&self) -> &Path {
        self.path.as_deref().expect("present until kept")
    }

    fn keep(mut self) -> PathBuf {
        self.path.take().expect("present until kept")
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if let Some(p) = &self.path {
            let _ = std::fs::remove_dir_all(p);
        }
    }
}

/// Removes what a fixture must not carry: the hostname, and environment variables other
/// than irqbalance's.
fn scrub(kernel_path: &Path, bytes: Vec<u8>, hostname: Option<&str>) -> Vec<u8> {
    let bytes = if kernel_path.file_name().is_some_and(|n| n == "environ") {
        bytes
            .split(|b| *b == 0)
            .filter(|var| var.starts_with(b"IRQBALANCE_"))
            .flat_map(|var| var.iter().copied().chain([0]))
            .collect()
    } else {
        bytes
    };
    match (hostname, String::from_utf8(bytes)) {
        (Some(host), Ok(text)) => replace_word(&text, host, SCRUBBED_HOSTNAME).into_bytes(),
        (_, Ok(text)) => text.into_bytes(),
        (_, Err(e)) => e.into_bytes(),
    }
}

/// Replaces `word` in `text` where it stands alone: not inside a longer name (a host `vm`
/// must not turn `kvm-clock` into something else).
fn replace_word(text: &str, word: &str, with: &str) -> String {
    let part_of_name = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(word) {
        let before = rest[..at].chars().next_back();
        let after = rest[at + word.len()..].chars().next();
        let alone = !before.is_some_and(part_of_name) && !after.is_some_and(part_of_name);
        out.push_str(&rest[..at]);
        out.push_str(if alone { with } else { word });
        rest = &rest[at + word.len()..];
    }
    out.push_str(rest);
    out
}

fn toml_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn manifest(
    dest: &Path,
    report: &model::audit::AuditReport,
    scrubbed: bool,
    files: &[String],
) -> String {
    let name = dest
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# A capture of the files `rtlab audit` reads, taken with `rtlab audit capture`."
    );
    let _ = writeln!(out, "name = {}", toml_string(&name));
    let _ = writeln!(out, "captured = {}", toml_string(&today()));
    let _ = writeln!(
        out,
        "captured_with = {}",
        toml_string(&format!("rtlab {}", report.rtlab_version))
    );
    let _ = writeln!(
        out,
        "kernel_release = {}",
        toml_string(&report.kernel_release)
    );
    let _ = writeln!(out, "arch = {}", toml_string(&report.arch));
    let _ = writeln!(
        out,
        "hostname = {}",
        toml_string(if scrubbed {
            "scrubbed: replaced by rtlab-host in every file"
        } else {
            "not scrubbed (none found)"
        })
    );
    let _ = writeln!(
        out,
        "environment = \"process environments keep only IRQBALANCE_* variables\""
    );
    let _ = writeln!(out, "files = [");
    for f in files {
        let _ = writeln!(out, "  {},", toml_string(f));
    }
    let _ = writeln!(out, "]");
    out
}

/// Today's date (UTC) as `YYYY-MM-DD`.
fn today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Days since 1970-01-01 to a (year, month, day) in the proleptic Gregorian calendar.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use testkit::FakeRoot;

    #[test]
    fn dates_are_civil() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_415), (2025, 11, 23));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }

    #[test]
    fn environments_and_hostnames_are_scrubbed() {
        let env = b"HOME=/root\0IRQBALANCE_BANNED_CPULIST=2-3\0SECRET=x\0".to_vec();
        assert_eq!(
            scrub(Path::new("/proc/9/environ"), env, Some("box")),
            b"IRQBALANCE_BANNED_CPULIST=2-3\0".to_vec()
        );
        assert_eq!(
            scrub(
                Path::new("/proc/sys/kernel/hostname"),
                b"robot7\n".to_vec(),
                Some("robot7")
            ),
            b"rtlab-host\n".to_vec()
        );
        assert_eq!(
            scrub(
                Path::new("/sys/x"),
                b"vm kvm-clock vm.local (vm) vmx\n".to_vec(),
                Some("vm")
            ),
            b"rtlab-host kvm-clock rtlab-host.local (rtlab-host) vmx\n".to_vec()
        );
        // Binary content passes through untouched.
        assert_eq!(
            scrub(
                Path::new("/proc/config.gz"),
                vec![0x1f, 0x8b, 0xff],
                Some("x")
            ),
            vec![0x1f, 0x8b, 0xff]
        );
    }

    #[test]
    fn a_capture_audits_like_its_source_and_refuses_a_full_directory() {
        let fake = FakeRoot::new()
            .cpus(4)
            .hostname("robot7")
            .kernel("6.1.0-rt", "#1 SMP PREEMPT_RT robot7")
            .realtime(true)
            .cmdline("isolcpus=managed_irq,3 rcu_nocbs=3 irqaffinity=0-2")
            .file("/proc/sys/kernel/timer_migration", "1\n")
            .file(
                "/sys/kernel/mm/transparent_hugepage/enabled",
                "[always] madvise never\n",
            )
            .file("/sys/kernel/tracing/trace_marker", "write-only\n")
            .file(
                "/sys/kernel/tracing/available_tracers",
                "timerlat osnoise nop\n",
            );
        let out = tempfile::tempdir().unwrap();
        let dest = out.path().join("robot7-tree");
        let summary = capture(&fake.root(), &dest, &Options::default()).unwrap();
        assert!(summary.files >= 5, "{summary:?}");
        let manifest = std::fs::read_to_string(dest.join("MANIFEST.toml")).unwrap();
        assert!(manifest.contains("name = \"robot7-tree\""));
        assert!(manifest.contains("\"/proc/cmdline\","));
        let version = std::fs::read_to_string(dest.join("proc/sys/kernel/version")).unwrap();
        assert!(!version.contains("robot7") && version.contains("rtlab-host"));
        // tracefs's write-only marker is copied empty: only its presence was consulted.
        let marker = std::fs::read(dest.join("sys/kernel/tracing/trace_marker")).unwrap();
        assert!(marker.is_empty());

        let a = crate::run(&fake.root(), &Options::default(), &Selection::default()).unwrap();
        let b = crate::run(&Root::at(&dest), &Options::default(), &Selection::default()).unwrap();
        let strip = |r: &model::audit::AuditReport| {
            r.findings
                .iter()
                .map(|f| {
                    (
                        f.id.clone(),
                        f.status,
                        f.summary.replace("robot7", "rtlab-host"),
                    )
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(strip(&a), strip(&b));

        let err = capture(&fake.root(), &dest, &Options::default()).unwrap_err();
        assert!(err.to_string().contains("not empty"), "{err}");
        // No staging directory is left behind.
        let names: Vec<_> = std::fs::read_dir(out.path()).unwrap().collect();
        assert_eq!(names.len(), 1);
    }
}

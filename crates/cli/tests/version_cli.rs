//! `rtlab --version` says which binary this is (version, commit, target triple, C library and
//! linkage, cargo profile; issue #15), and every result records the same facts in `build`:
//! a measurement, the run store's copy of it, an import and an audit.

mod common;

use std::path::{Path, PathBuf};

use model::audit::AuditReport;
use model::build::Build;
use model::measure::MeasureRun;

fn fixture() -> PathBuf {
    testkit::fixture_root("vm-x86_64-2cpu").base().to_path_buf()
}

/// Standard output of a successful `rtlab ARGS` with its store in `db`.
fn stdout_of(db: &Path, args: &[&str]) -> String {
    let out = common::rtlab_with_store(db).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "rtlab {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `rtlab --version`, read back into the facts it prints.
fn version_build() -> Build {
    let dir = tempfile::tempdir().unwrap();
    let text = stdout_of(&dir.path().join("rtlab.db"), &["--version"]);
    let mut lines = text.lines();
    let version = lines.next().unwrap().strip_prefix("rtlab ").unwrap();
    let mut field = |name: &str| {
        let line = lines
            .next()
            .unwrap_or_else(|| panic!("no {name} in {text}"));
        let value = line
            .strip_prefix(&format!("{name}:"))
            .unwrap_or_else(|| panic!("{line:?} is not the {name} line of {text}"));
        value.trim().to_string()
    };
    let commit = field("commit");
    let target = field("target");
    let (libc, linkage) = field("libc")
        .split_once(", ")
        .map(|(l, k)| (l.to_string(), k.to_string()))
        .unwrap();
    let profile = field("profile");
    assert_eq!(lines.next(), None, "{text}");
    Build {
        version: version.to_string(),
        commit: (commit != "unknown").then_some(commit),
        target,
        libc,
        linkage,
        profile,
    }
}

#[test]
fn version_names_the_target_this_test_was_built_for_and_the_commit() {
    let build = version_build();
    assert_eq!(build.version, env!("CARGO_PKG_VERSION"));
    // The triple the build script was given, which must agree with what the compiler says of
    // this test's own target.
    assert_eq!(build.target, env!("RTLAB_BUILD_TARGET"));
    let arch = build.target.split('-').next().unwrap();
    let arch_matches = match std::env::consts::ARCH {
        "arm" => arch.starts_with("arm"),
        other => arch == other,
    };
    assert!(
        arch_matches,
        "{} on {}",
        build.target,
        std::env::consts::ARCH
    );
    assert!(build.target.contains("-linux-"), "{}", build.target);
    if cfg!(target_env = "musl") {
        assert!(build.target.contains("-musl"), "{}", build.target);
        assert_eq!(build.libc, "musl");
    } else if cfg!(target_env = "gnu") {
        assert!(build.target.contains("-gnu"), "{}", build.target);
        assert_eq!(build.libc, "glibc");
    }
    let expected_linkage = if cfg!(target_feature = "crt-static") {
        "static"
    } else {
        "dynamic"
    };
    assert_eq!(build.linkage, expected_linkage);
    assert!(!build.profile.is_empty() && build.profile != "unknown");
    match &build.commit {
        Some(commit) => {
            assert_eq!(commit.len(), 12, "{commit}");
            assert!(commit.bytes().all(|b| b.is_ascii_hexdigit()), "{commit}");
        }
        None => assert_eq!(env!("RTLAB_BUILD_COMMIT"), ""),
    }
    if option_env!("RTLAB_COMMIT").is_none() {
        assert_eq!(build.commit, checked_out_commit());
    }
}

/// The commit checked out in this source tree, as the build script reads it (`None`
/// without `.git` or without git).
fn checked_out_commit() -> Option<String> {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    if !workspace.join(".git").exists() {
        return None;
    }
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(&workspace)
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8(out.stdout).unwrap().trim().to_string())
}

#[test]
fn short_version_is_the_version_alone() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(
        stdout_of(&dir.path().join("rtlab.db"), &["-V"]),
        format!("rtlab {}\n", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn a_measurement_records_the_build_version_names_and_the_store_keeps_it() {
    let expected = version_build();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("rtlab.db");
    let root = fixture();
    let printed = stdout_of(
        &db,
        &[
            "--root",
            root.to_str().unwrap(),
            "measure",
            "--quiet",
            "--format",
            "json",
            "--fake-clock",
            "5us,7us,900us",
            "--cycles",
            "30",
        ],
    );
    let run = MeasureRun::from_json(&printed).unwrap();
    assert_eq!(run.build.as_ref(), Some(&expected));
    assert!(printed.contains("\"build\": {"), "{printed}");
    let shown = MeasureRun::from_json(&stdout_of(&db, &["show", "last", "--format", "json"]));
    assert_eq!(shown.unwrap().build, Some(expected));
}

#[test]
fn an_import_records_the_rtlab_that_imported_it_and_an_audit_the_one_that_ran_it() {
    let expected = version_build();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("rtlab.db");
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/imports/local_cyclictest_2t_H100.json");
    stdout_of(&db, &["import", file.to_str().unwrap()]);
    let shown = MeasureRun::from_json(&stdout_of(&db, &["show", "last", "--format", "json"]));
    let shown = shown.unwrap();
    assert!(shown.import.is_some());
    assert_eq!(shown.build, Some(expected.clone()));

    let root = fixture();
    let out = common::rtlab_with_store(&db)
        .args([
            "--root",
            root.to_str().unwrap(),
            "audit",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    // Exit 1 is a failed finding: the document is written either way.
    assert!(matches!(out.status.code(), Some(0 | 1)), "{out:?}");
    let report: AuditReport = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report.build, Some(expected));
}

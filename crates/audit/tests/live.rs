//! The audit of this machine, for real: every check runs on the live kernel (as root in CI),
//! none errors, and a capture of the machine audits the same way as the machine itself.

use audit::{Options, Selection};
use model::audit::{AuditReport, Status};
use sys::Root;

fn live() -> AuditReport {
    audit::run(&Root::host(), &Options::default(), &Selection::default()).unwrap()
}

#[test]
fn this_machine_is_audited_by_every_check() {
    let report = live();
    assert!(
        report.findings.len() >= 40,
        "{} findings",
        report.findings.len()
    );
    for f in &report.findings {
        assert_ne!(f.status, Status::Error, "{} errored: {}", f.id, f.summary);
        if f.status == Status::Unknown {
            // An unknown names what it could not read.
            assert!(f.summary.len() > 10, "{}: {}", f.id, f.summary);
        }
    }
    // The kernel facts every Linux machine exposes are read, not unknown.
    for id in [
        "kernel.preempt_rt",
        "time.clocksource",
        "sched.timer_migration",
    ] {
        let f = report.findings.iter().find(|f| f.id == id).unwrap();
        assert_ne!(f.status, Status::Unknown, "{id}: {}", f.summary);
    }
    let running_as_root = std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"));
    if running_as_root {
        // Root reads the kernel log.
        let f = report
            .findings
            .iter()
            .find(|f| f.id == "log.soft_lockup")
            .unwrap();
        assert_ne!(f.status, Status::Unknown, "{}", f.summary);
    } else {
        testkit::live::skip("not root: the kernel log (log.soft_lockup) was not checked");
    }
}

#[test]
fn a_capture_of_this_machine_audits_like_the_machine() {
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("this-machine");
    let summary = audit::capture::capture(&Root::host(), &dest, &Options::default()).unwrap();
    assert!(summary.files > 20, "{summary:?}");
    let manifest = std::fs::read_to_string(dest.join("MANIFEST.toml")).unwrap();
    assert!(manifest.contains("\"/proc/cmdline\""));
    let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let captured_host = std::fs::read_to_string(dest.join("proc/sys/kernel/hostname")).unwrap();
    if hostname.trim().len() >= 2 {
        assert_eq!(captured_host.trim(), audit::capture::SCRUBBED_HOSTNAME);
    }

    let live = live();
    let replay = audit::run(&Root::at(&dest), &Options::default(), &Selection::default()).unwrap();
    assert_eq!(live.findings.len(), replay.findings.len());
    for (a, b) in live.findings.iter().zip(&replay.findings) {
        assert_eq!(a.id, b.id);
        // Threads come and go between the two audits; everything else is the same machine.
        if a.id.starts_with("tasks.") || a.id.starts_with("sched_prio.") {
            continue;
        }
        assert_eq!(
            a.status, b.status,
            "{}: live {:?} vs captured {:?}",
            a.id, a.summary, b.summary
        );
    }
}

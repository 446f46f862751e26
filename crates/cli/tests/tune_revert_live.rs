//! `tune revert` gives the machine back as it was (issue #45): a strict apply and revert on
//! this machine, every kernel thread's CPUs compared before and after (khugepaged, which the
//! strict profile ends and the revert starts again, included).

mod common;

use common::rtlab;

/// The kernel threads that are neither per-CPU nor workqueue workers, by name, with their
/// allowed CPUs (`Cpus_allowed_list`).
fn kernel_thread_affinities() -> std::collections::BTreeMap<String, String> {
    let mut out = std::collections::BTreeMap::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // Field 9 (after the name's closing parenthesis, the 7th) holds the PF_* flags.
        let Some((name, rest)) = stat.split_once(" (").and_then(|(_, r)| r.rsplit_once(") "))
        else {
            continue;
        };
        let flags: u64 = rest
            .split(' ')
            .nth(6)
            .and_then(|f| f.parse().ok())
            .unwrap_or(0);
        const PF_WQ_WORKER: u64 = 0x20;
        const PF_KTHREAD: u64 = 0x0020_0000;
        if flags & PF_KTHREAD == 0 || flags & PF_WQ_WORKER != 0 {
            continue;
        }
        let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
            continue;
        };
        let Some(cpus) = status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .map(|c| c.trim().to_string())
        else {
            continue;
        };
        // Per-CPU threads (ksoftirqd/1, migration/0) belong to their CPU.
        if !cpus.contains(['-', ',']) && name.contains('/') {
            continue;
        }
        out.insert(name.to_string(), cpus);
    }
    out
}

/// Issue #45: the strict profile turns transparent hugepages off, which ends khugepaged;
/// revert turned them back on before kthreadd had its CPUs back, so the new khugepaged was
/// born on the housekeeping CPUs only, and the old one was skipped without a word. After a
/// strict apply and revert every kernel thread has the CPUs it had, and the revert names
/// every step it skipped.
#[test]
fn live_a_strict_revert_gives_every_kernel_thread_its_cpus_back() {
    let _one = common::serial();
    let Some((_, last)) = common::tune_cpus() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("journal.jsonl");
    let before = kernel_thread_affinities();
    let apply = rtlab()
        .args([
            "tune",
            "apply",
            "--rt-cpus",
            &last,
            "--profile",
            "strict",
            "--yes",
        ])
        .arg("--journal")
        .arg(&journal)
        .output()
        .unwrap();
    let revert = rtlab()
        .args(["tune", "revert", "--journal"])
        .arg(&journal)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&revert.stdout).to_string();
    assert!(
        apply.status.success(),
        "apply: {}{}",
        String::from_utf8_lossy(&apply.stdout),
        String::from_utf8_lossy(&apply.stderr)
    );
    assert!(revert.status.success(), "revert: {said}");
    // A restarted thread (khugepaged) may take a moment to appear.
    std::thread::sleep(std::time::Duration::from_millis(300));
    let after = kernel_thread_affinities();
    for (name, cpus) in &before {
        if let Some(now) = after.get(name) {
            assert_eq!(now, cpus, "{name} after the revert: {said}");
        }
    }
    let skipped: usize = said
        .lines()
        .next()
        .and_then(|l| l.split(", ").nth(1))
        .and_then(|s| s.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert_eq!(
        said.lines()
            .filter(|l| l.starts_with("  skipped: ") || l.starts_with("  left: "))
            .count(),
        skipped,
        "every skipped step named: {said}"
    );
}

//! Apply, then revert, on copies of the fixture trees: every plan's changes land (read back),
//! `status` sees them applied, and after `revert` the copy is byte for byte the fixture again.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use model::tune::TuneProfile;
use sys::Root;
use testkit::{copy_tree, fixtures_dir, tree_contents};
use tune::{Request, apply, plan, revert, status};

fn tree(dir: &Path) -> BTreeMap<PathBuf, Option<Vec<u8>>> {
    tree_contents(dir)
}

fn copy(from: &Path, to: &Path) {
    copy_tree(from, to)
}

#[test]
fn apply_then_revert_leaves_every_tree_as_it_was() {
    for (name, rt) in [
        ("x86-8cpu-rt-untuned", "2-7"),
        ("arm64-8cpu-rt-tuned", "2-7"),
        ("rpi4-4cpu-isolcpu3", "3"),
        ("vm-x86_64-2cpu", "1"),
    ] {
        let original = fixtures_dir().join(name);
        let dir = tempfile::tempdir().unwrap();
        let copy_dir = dir.path().join("root");
        copy(&original, &copy_dir);
        let root = Root::at(&copy_dir);
        let journal = dir.path().join("journal.jsonl");
        let p = plan(
            &root,
            &Request {
                rt_cpus: rt.parse().unwrap(),
                housekeeping: None,
                profile: TuneProfile::Strict,
                rules: Vec::new(),
                siblings: tune::Siblings::Confine,
            },
        )
        .unwrap();
        let out = apply(&root, &p, &journal, None).unwrap();
        assert!(out.refused.is_empty(), "{name}: {:?}", out.refused);
        assert!(!out.done.is_empty(), "{name}: nothing applied");
        assert_ne!(
            tree(&copy_dir),
            tree(&original),
            "{name}: apply changed nothing"
        );
        if name == "x86-8cpu-rt-untuned" {
            // irqbalance is told, its file keeping every other line.
            let env = std::fs::read_to_string(copy_dir.join("etc/default/irqbalance")).unwrap();
            assert!(env.ends_with("#IRQBALANCE_ARGS=\nIRQBALANCE_BANNED_CPULIST=2-7\n"));
            assert!(
                out.skipped
                    .iter()
                    .any(|s| s.contains("restarting irqbalance.service"))
            );
        }
        // A second apply is refused while the first is not reverted.
        assert!(
            apply(&root, &p, &journal, None)
                .unwrap_err()
                .contains("has not been reverted")
        );
        let standing = status(&root, &journal).unwrap();
        assert!(
            standing
                .iter()
                .all(|s| s.state == "applied" || s.state == "created"),
            "{name}: {:?}",
            standing
                .iter()
                .filter(|s| s.state != "applied" && s.state != "created")
                .collect::<Vec<_>>()
        );
        let back = revert(&root, &journal).unwrap();
        assert!(back.refused.is_empty(), "{name}: {:?}", back.refused);
        assert_eq!(
            tree(&copy_dir),
            tree(&original),
            "{name}: revert left a difference"
        );
        assert!(!journal.exists() && journal.with_extension("jsonl.reverted").exists());
    }
}

#[test]
fn revert_skips_what_is_already_back_and_a_cut_last_line() {
    let original = fixtures_dir().join("vm-x86_64-2cpu");
    let dir = tempfile::tempdir().unwrap();
    let copy_dir = dir.path().join("root");
    copy(&original, &copy_dir);
    let root = Root::at(&copy_dir);
    let journal = dir.path().join("j.jsonl");
    let p = plan(
        &root,
        &Request {
            rt_cpus: "1".parse().unwrap(),
            housekeeping: None,
            profile: TuneProfile::Balanced,
            rules: Vec::new(),
            siblings: tune::Siblings::Confine,
        },
    )
    .unwrap();
    apply(&root, &p, &journal, None).unwrap();
    // Someone put one IRQ back by hand, and a crash cut the journal's last line.
    std::fs::copy(
        original.join("proc/irq/24/smp_affinity_list"),
        copy_dir.join("proc/irq/24/smp_affinity_list"),
    )
    .unwrap();
    let text = std::fs::read_to_string(&journal).unwrap();
    std::fs::write(&journal, format!("{text}{{\"step\":\"wri")).unwrap();
    let back = revert(&root, &journal).unwrap();
    assert!(
        back.skipped
            .iter()
            .any(|s| s == "/proc/irq/24/smp_affinity_list: already back"),
        "{:?}",
        back.skipped
    );
    assert_eq!(tree(&copy_dir), tree(&original));
}

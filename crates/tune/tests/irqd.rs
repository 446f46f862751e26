//! `tune irqd` on a copy of the arm64 board's tree: an IRQ that appears after tuning (a NIC
//! brought up) is moved to the housekeeping CPUs, or where its rule says, on the next pass; a
//! pass over unchanged IRQs does nothing; one revert takes back apply's and irqd's changes
//! together, after which irqd stops.

use std::path::Path;

use model::tune::TuneProfile;
use testkit::{copy_tree, tree_contents};
use tune::{Irqd, Pass, Request, apply, plan, revert};

fn request(rules: &[&str]) -> Request {
    Request {
        rt_cpus: "4-7".parse().unwrap(),
        housekeeping: None,
        profile: TuneProfile::Balanced,
        rules: rules.iter().map(|r| r.parse().unwrap()).collect(),
        siblings: tune::Siblings::Confine,
    }
}

/// Adds IRQ `n` named `name` to the tree as a driver would: its /proc/irq directory allowed on
/// every CPU and its /proc/interrupts row.
fn add_irq(tree: &Path, n: u32, name: &str) {
    let dir = tree.join(format!("proc/irq/{n}"));
    std::fs::create_dir_all(dir.join(name)).unwrap();
    for (file, value) in [
        ("smp_affinity_list", "0-7\n"),
        ("smp_affinity", "ff\n"),
        ("effective_affinity_list", "0\n"),
        ("effective_affinity", "01\n"),
        ("node", "0\n"),
    ] {
        std::fs::write(dir.join(file), value).unwrap();
    }
    let path = tree.join("proc/interrupts");
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str(&format!(
        "{n:>4}:          0          0          0          0          0          0          0          0     GICv3 {} Edge      {name}\n",
        n + 32
    ));
    std::fs::write(path, text).unwrap();
}

fn affinity(tree: &Path, n: u32) -> String {
    std::fs::read_to_string(tree.join(format!("proc/irq/{n}/smp_affinity_list")))
        .unwrap()
        .trim()
        .to_string()
}

#[test]
fn irqs_that_appear_later_are_placed_and_reverted_with_the_tuning() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("root");
    copy_tree(testkit::fixture_root("arm64-8cpu-rt-tuned").base(), &tree);
    let pristine = tree_contents(&tree);
    let root = sys::Root::at(&tree);
    let journal = dir.path().join("journal.jsonl");
    let req = request(&["eth1=@5"]);

    let p = plan(&root, &req).unwrap();
    apply(&root, &p, &journal, None).unwrap();
    let mut irqd = Irqd::new(req, &journal).unwrap();
    // Right after apply everything is in place.
    let Pass::Checked(first) = irqd.pass(&root, false).unwrap() else {
        panic!("the first pass must check");
    };
    assert!(first.done.is_empty(), "{first:?}");
    assert_eq!(irqd.pass(&root, false).unwrap(), Pass::Unchanged);

    add_irq(&tree, 140, "eth0");
    add_irq(&tree, 141, "eth1");
    let Pass::Checked(out) = irqd.pass(&root, false).unwrap() else {
        panic!("new IRQs must be checked");
    };
    assert_eq!(out.refused, Vec::<String>::new());
    assert_eq!(affinity(&tree, 140), "0-3", "housekeeping CPUs: {out:?}");
    assert_eq!(affinity(&tree, 141), "5", "the rule's CPU: {out:?}");
    assert_eq!(irqd.pass(&root, false).unwrap(), Pass::Unchanged);

    // Something (irqbalance, a person) moves it back: the recheck catches it.
    std::fs::write(tree.join("proc/irq/140/smp_affinity_list"), "0-7\n").unwrap();
    assert_eq!(irqd.pass(&root, false).unwrap(), Pass::Unchanged);
    let Pass::Checked(again) = irqd.pass(&root, true).unwrap() else {
        panic!("a recheck checks");
    };
    assert_eq!(again.done.len(), 1, "{again:?}");
    assert_eq!(affinity(&tree, 140), "0-3");

    // One revert: apply's changes and irqd's; the new IRQs get the affinity they came with.
    let back = revert(&root, &journal).unwrap();
    assert!(back.refused.is_empty(), "{back:?}");
    assert_eq!(affinity(&tree, 140), "0-7");
    assert_eq!(affinity(&tree, 141), "0-7");
    assert_eq!(irqd.pass(&root, true).unwrap(), Pass::Reverted);
    for n in [140, 141] {
        std::fs::remove_dir_all(tree.join(format!("proc/irq/{n}"))).unwrap();
    }
    let interrupts = tree.join("proc/interrupts");
    let text = std::fs::read_to_string(&interrupts).unwrap();
    let kept: String = text
        .lines()
        .filter(|l| !l.contains("eth0") && !l.contains("eth1"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&interrupts, kept).unwrap();
    assert_eq!(
        tree_contents(&tree),
        pristine,
        "the tree is not what it was"
    );
}

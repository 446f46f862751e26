//! The kernel readers of `sys` against every captured tree in `fixtures/roots/`: each file a
//! reader parses line by line (`/proc/interrupts`, mountinfo, the CPU lists) parses whole
//! there, so a parser made stricter cannot refuse what a real kernel printed.

use std::path::{Path, PathBuf};

use sys::Root;

fn roots() -> Vec<(String, Root)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/roots");
    let mut roots: Vec<(String, Root)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .map(|p: PathBuf| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                Root::at(p),
            )
        })
        .collect();
    roots.sort_by(|a, b| a.0.cmp(&b.0));
    assert!(roots.len() >= 4, "the fixture trees are missing: {roots:?}");
    roots
}

#[test]
fn interrupts_parse_whole_in_every_tree() {
    for (name, root) in roots() {
        let table = sys::irq::irq_table(&root).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(table.counted, "{name}: no /proc/interrupts");
        assert!(
            table.irqs.iter().any(|i| !i.counts.is_empty()),
            "{name}: no counts"
        );
    }
}

#[test]
fn cgroup_mounts_parse_whole_in_every_tree() {
    for (name, root) in roots() {
        let mounts = sys::cgroup::mounts(&root).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(!mounts.is_empty(), "{name}: no cgroup mount");
    }
}

#[test]
fn cpu_lists_parse_in_every_tree() {
    for (name, root) in roots() {
        let online = sys::cpu::online(&root).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(!online.is_empty(), "{name}");
        sys::cpu::isolated(&root).unwrap_or_else(|e| panic!("{name}: {e}"));
        sys::cpu::nohz_full(&root).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

/// A broken copy of a real tree: the reader names the file and the line.
#[test]
fn a_broken_line_in_a_copied_tree_is_named() {
    let (_, root) = roots().into_iter().next().unwrap();
    let text = root.read("/proc/interrupts").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let copy = Root::at(dir.path());
    std::fs::create_dir_all(dir.path().join("proc/irq")).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines.insert(3, "this is not an interrupt row");
    copy.write("/proc/interrupts", &lines.join("\n")).unwrap();
    let err = sys::irq::irq_table(&copy).unwrap_err().to_string();
    assert!(
        err.starts_with("/proc/interrupts:4: cannot parse an interrupt row"),
        "{err}"
    );
}

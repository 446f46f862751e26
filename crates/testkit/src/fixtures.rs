//! Captured kernel trees under `<workspace>/fixtures/roots/<name>/`, each with a
//! `MANIFEST.toml` saying where it came from. Found through this crate's manifest directory
//! (`crates/testkit`), so they work from any crate's tests.

use std::path::PathBuf;

use sys::Root;

/// `<workspace>/fixtures/roots`.
pub fn fixtures_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/roots")
}

/// The captured tree `name`, as a [`Root`]. Panics, naming the directory and the trees that
/// do exist, when there is no such fixture.
pub fn fixture_root(name: &str) -> Root {
    let dir = fixtures_dir().join(name);
    if !dir.is_dir() {
        panic!(
            "no fixture tree {name:?} at {}; available: {:?}",
            dir.display(),
            fixture_names()
        );
    }
    Root::at(dir)
}

/// The names of all captured trees, sorted.
pub fn fixture_names() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(fixtures_dir())
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .filter(|e| e.path().is_dir())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// Copies the tree `from` into `to` (symlinks as symlinks), for tests that change a tree.
pub fn copy_tree(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(e.file_name());
        let kind = e.file_type().unwrap();
        if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(e.path()).unwrap(), target).unwrap();
        } else if kind.is_dir() {
            copy_tree(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

/// Every entry under `dir`: relative path → file bytes (a symlink: its target; a directory:
/// `None`), to compare two trees byte for byte.
pub fn tree_contents(
    dir: &std::path::Path,
) -> std::collections::BTreeMap<PathBuf, Option<Vec<u8>>> {
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let rel = p.strip_prefix(dir).unwrap().to_path_buf();
            let kind = e.file_type().unwrap();
            if kind.is_symlink() {
                let target = std::fs::read_link(&p).unwrap();
                out.insert(rel, Some(target.into_os_string().into_encoded_bytes()));
            } else if kind.is_dir() {
                out.insert(rel, None);
                stack.push(p);
            } else {
                out.insert(rel, Some(std::fs::read(&p).unwrap()));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_fixture_has_a_manifest() {
        let names = fixture_names();
        assert!(names.contains(&"vm-x86_64-2cpu".to_string()), "{names:?}");
        for name in names {
            let root = fixture_root(&name);
            assert!(
                root.base().join("MANIFEST.toml").is_file(),
                "{name}: no MANIFEST.toml"
            );
        }
    }

    #[test]
    #[should_panic(expected = "no fixture tree \"no-such-tree\"")]
    fn missing_fixture_panics_with_its_name() {
        fixture_root("no-such-tree");
    }
}

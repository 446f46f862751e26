//! Captured kernel trees under `<workspace>/fixtures/roots/<name>/`, each with a
//! `MANIFEST.toml` saying where it came from. Found through this crate's manifest directory
//! (`crates/testkit`), so they work from any crate's tests.

use std::path::PathBuf;

use rtlab_sys::Root;

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

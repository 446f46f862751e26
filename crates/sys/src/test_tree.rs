//! For this crate's tests: a kernel tree of a few files in a temporary directory.

use crate::Root;

/// A temporary tree holding `files` (kernel path, text), and a [`Root`] at it; the directory
/// lives as long as the returned guard.
pub(crate) fn tree(files: &[(&str, &str)]) -> (tempfile::TempDir, Root) {
    let bytes: Vec<(&str, &[u8])> = files.iter().map(|(p, t)| (*p, t.as_bytes())).collect();
    tree_bytes(&bytes)
}

/// [`tree`] for files given as bytes.
pub(crate) fn tree_bytes(files: &[(&str, &[u8])]) -> (tempfile::TempDir, Root) {
    let dir = tempfile::tempdir().unwrap();
    for (path, bytes) in files {
        let p = dir.path().join(path.trim_start_matches('/'));
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }
    let root = Root::at(dir.path());
    (dir, root)
}

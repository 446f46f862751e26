//! Which mount holds a directory, from this process's mountinfo: its file system type (`ext2`,
//! `ext4`, `vfat`). The file library (`files`) asks [`mounted_as_ext2`] whether a write on
//! the ext family needs the whole file system synced (ext2 keeps no journal); the binary hands
//! it over once with `files::set_ext2_probe`.

use std::path::Path;

/// Whether the mount holding `dir` is ext2 (no journal). Unknown: `false`.
pub fn mounted_as_ext2(dir: &Path) -> bool {
    mount_type(dir).is_some_and(|t| t == "ext2")
}

/// The type of the mount holding `dir` (the mount point nearest it; `\040` escapes are read
/// back as spaces).
pub fn mount_type(dir: &Path) -> Option<String> {
    let dir = std::fs::canonicalize(dir).ok()?;
    let text = crate::Root::host().read("/proc/self/mountinfo").ok()?;
    text.lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let point = left.split(' ').nth(4)?.replace("\\040", " ");
            let fstype = right.split(' ').next()?;
            dir.starts_with(&point)
                .then(|| (point.len(), fstype.to_string()))
        })
        .max_by_key(|(len, _)| *len)
        .map(|(_, fstype)| fstype)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mount_of_a_directory_is_found() {
        // `/` is mounted as something; /proc is proc.
        assert!(mount_type(Path::new("/")).is_some());
        assert_eq!(mount_type(Path::new("/proc")).as_deref(), Some("proc"));
        assert!(!mounted_as_ext2(Path::new("/proc")));
        assert!(!mounted_as_ext2(Path::new("/no/such/dir")));
    }
}

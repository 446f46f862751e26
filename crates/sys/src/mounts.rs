//! Which mount holds a directory, from this process's mountinfo: its file system type (`ext2`,
//! `ext4`, `vfat`) and device, and whether an ext-family file system there keeps a journal. The
//! file library (`files`) asks [`ext_without_journal`] whether a write there needs the whole
//! file system synced; the binary hands it over once with `files::set_ext_journal_probe`.

use std::path::Path;

use crate::Root;

/// One mount as mountinfo gives it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mount {
    /// Where it is mounted (`\040` escapes read back as spaces).
    pub point: String,
    /// The block device's `major:minor` (`0:21` for a virtual file system).
    pub device: String,
    /// The file system type the mount names (`ext4` also for ext2 and journal-less ext4 that
    /// the ext4 driver mounts).
    pub fstype: String,
}

/// The mount holding `dir`: the mount point nearest it.
pub fn mount_of(dir: &Path) -> Option<Mount> {
    let dir = std::fs::canonicalize(dir).ok()?;
    let text = Root::host().read("/proc/self/mountinfo").ok()?;
    mount_in(&text, &dir)
}

/// The entry of mountinfo `text` that holds `dir` (canonical).
fn mount_in(text: &str, dir: &Path) -> Option<Mount> {
    text.lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let fields: Vec<&str> = left.split(' ').collect();
            let point = fields.get(4)?.replace("\\040", " ");
            let device = fields.get(2)?.to_string();
            let fstype = right.split(' ').next()?;
            dir.starts_with(&point).then(|| Mount {
                point,
                device,
                fstype: fstype.to_string(),
            })
        })
        .max_by_key(|m| m.point.len())
}

/// The type of the mount holding `dir`.
pub fn mount_type(dir: &Path) -> Option<String> {
    mount_of(dir).map(|m| m.fstype)
}

/// Whether the ext-family file system holding `dir` keeps no journal, decided by what it is,
/// not by what the mount is called: mounted as ext2; or mounted as ext3/ext4 (the ext4 driver
/// also mounts ext2 images and ext4 made without a journal, as boards' SD cards and eMMC often
/// are) with no jbd2 journal running for its device (`/proc/fs/jbd2/NAME-INODE`, NAME the
/// device's kernel name from `/sys/dev/block/MAJOR:MINOR`). Where that cannot be told (no
/// device name), it counts as journal-less: a sync too many costs time, a sync too few a
/// file system after a power cut.
pub fn ext_without_journal(dir: &Path) -> bool {
    let Some(mount) = mount_of(dir) else {
        return false;
    };
    match mount.fstype.as_str() {
        "ext2" => true,
        "ext3" | "ext4" => !has_jbd2_journal(&Root::host(), &mount.device),
        _ => false,
    }
}

/// Whether a jbd2 journal runs for the block device `major:minor` (see
/// [`ext_without_journal`]); false when the device's name cannot be read.
fn has_jbd2_journal(root: &Root, device: &str) -> bool {
    let Some(name) = std::fs::read_link(root.path(format!("/sys/dev/block/{device}")))
        .ok()
        .and_then(|target| Some(target.file_name()?.to_string_lossy().into_owned()))
    else {
        return false;
    };
    let prefix = format!("{name}-");
    root.list_dir("/proc/fs/jbd2").is_ok_and(|journals| {
        journals.iter().any(|j| {
            j.strip_prefix(&prefix)
                .is_some_and(|inode| !inode.is_empty() && inode.bytes().all(|b| b.is_ascii_digit()))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mount_of_a_directory_is_found() {
        // `/` is mounted as something; /proc is proc.
        assert!(mount_type(Path::new("/")).is_some());
        assert_eq!(mount_type(Path::new("/proc")).as_deref(), Some("proc"));
        assert!(!ext_without_journal(Path::new("/proc")));
        assert!(!ext_without_journal(Path::new("/no/such/dir")));
    }

    #[test]
    fn mountinfo_gives_the_nearest_mount_with_its_device() {
        let text = "27 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n\
                    60 27 179:2 / /var/lib/rtlab rw - ext4 /dev/mmcblk0p2 rw\n\
                    61 27 8:17 / /mnt/my\\040card rw - vfat /dev/sdb1 rw\n";
        let m = mount_in(text, Path::new("/var/lib/rtlab/state")).unwrap();
        assert_eq!(
            (m.point.as_str(), m.device.as_str()),
            ("/var/lib/rtlab", "179:2")
        );
        let m = mount_in(text, Path::new("/mnt/my card/x")).unwrap();
        assert_eq!(m.fstype, "vfat");
        assert_eq!(mount_in(text, Path::new("/etc")).unwrap().device, "254:0");
    }

    #[test]
    fn a_journal_is_one_jbd2_entry_of_the_device() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::at(dir.path());
        let block = dir.path().join("sys/dev/block");
        std::fs::create_dir_all(&block).unwrap();
        std::fs::create_dir_all(dir.path().join("proc/fs/jbd2/vda-8")).unwrap();
        std::os::unix::fs::symlink("../../devices/virtio1/block/vda", block.join("254:0")).unwrap();
        std::os::unix::fs::symlink(
            "../../devices/mmc/block/mmcblk0/mmcblk0p2",
            block.join("179:2"),
        )
        .unwrap();
        assert!(has_jbd2_journal(&root, "254:0"));
        // An ext4 without a journal (or ext2 mounted -t ext4): no entry for its device.
        assert!(!has_jbd2_journal(&root, "179:2"));
        // `vda1-8` is another device's journal, not vda's.
        std::fs::create_dir_all(dir.path().join("proc/fs/jbd2/mmcblk0p20-8")).unwrap();
        assert!(!has_jbd2_journal(&root, "179:2"));
        assert!(!has_jbd2_journal(&root, "8:1"));
    }
}

//! Where the cgroup hierarchies are (`/proc/self/mountinfo`) and where a process sits in them
//! (`/proc/PID/cgroup`).

/// A mounted cgroup hierarchy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CgroupMount {
    /// The mount point (`/sys/fs/cgroup/cpuset`).
    pub mount_point: String,
    /// `true` for cgroup v2 (`cgroup2`), `false` for a v1 hierarchy.
    pub unified: bool,
    /// For v1, the controllers bound to it (from the super options: `cpuset`, `cpu,cpuacct`).
    pub controllers: Vec<String>,
}

/// The cgroup mounts listed in mountinfo text, in file order. Mount points are unescaped
/// (`\040` is a space).
pub fn cgroup_mounts(mountinfo: &str) -> Vec<CgroupMount> {
    mountinfo
        .lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let mount_point = unescape(left.split(' ').nth(4)?);
            let mut right = right.split(' ');
            let fstype = right.next()?;
            let _source = right.next()?;
            let super_opts = right.next().unwrap_or("");
            let unified = match fstype {
                "cgroup2" => true,
                "cgroup" => false,
                _ => return None,
            };
            let controllers = if unified {
                Vec::new()
            } else {
                super_opts
                    .split(',')
                    .filter(|o| !matches!(*o, "rw" | "ro") && !o.contains('='))
                    .filter(|o| !o.starts_with("no") && *o != "xattr" && *o != "clone_children")
                    .map(str::to_string)
                    .collect()
            };
            Some(CgroupMount {
                mount_point,
                unified,
                controllers,
            })
        })
        .collect()
}

fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\'
            && i + 3 < bytes.len()
            && let Ok(v) = u8::from_str_radix(&field[i + 1..i + 4], 8)
        {
            out.push(v);
            i += 4;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The path of a process's cgroup in the hierarchy holding `controller` (v1), or in the
/// unified hierarchy when `controller` is `None`, from `/proc/PID/cgroup` text.
pub fn process_cgroup<'a>(text: &'a str, controller: Option<&str>) -> Option<&'a str> {
    text.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let _id = parts.next()?;
        let controllers = parts.next()?;
        let path = parts.next()?;
        let found = match controller {
            None => controllers.is_empty(),
            Some(c) => controllers.split(',').any(|x| x == c),
        };
        found.then_some(path)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
24 29 0:22 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw
30 24 0:26 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs ro,mode=755
31 30 0:27 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:10 - cgroup2 cgroup2 rw,nsdelegate
34 30 0:30 / /sys/fs/cgroup/cpuset rw,nosuid,nodev,noexec,relatime shared:14 - cgroup cgroup rw,cpuset
35 30 0:31 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid,nodev,noexec,relatime shared:15 - cgroup cgroup rw,cpu,cpuacct
36 30 0:32 / /sys/fs/cgroup/my\\040dir rw - cgroup cgroup rw,xattr,name=systemd
";

    #[test]
    fn finds_v1_and_v2_hierarchies() {
        let mounts = cgroup_mounts(MOUNTINFO);
        assert_eq!(mounts.len(), 4);
        assert_eq!(mounts[0].mount_point, "/sys/fs/cgroup/unified");
        assert!(mounts[0].unified);
        assert_eq!(mounts[1].controllers, ["cpuset"]);
        assert_eq!(mounts[2].controllers, ["cpu", "cpuacct"]);
        assert_eq!(mounts[3].mount_point, "/sys/fs/cgroup/my dir");
        assert!(mounts[3].controllers.is_empty());
        assert!(cgroup_mounts("garbage\n - \n").is_empty());
    }

    #[test]
    fn where_a_process_sits() {
        let text = "12:cpuset:/rt\n4:cpu,cpuacct:/user.slice\n0::/user.slice/session-1.scope\n";
        assert_eq!(process_cgroup(text, Some("cpuset")), Some("/rt"));
        assert_eq!(process_cgroup(text, Some("cpuacct")), Some("/user.slice"));
        assert_eq!(
            process_cgroup(text, None),
            Some("/user.slice/session-1.scope")
        );
        assert_eq!(process_cgroup(text, Some("memory")), None);
    }
}

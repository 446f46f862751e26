//! Where the cgroup hierarchies are (`/proc/self/mountinfo`) and where a process sits in them
//! (`/proc/PID/cgroup`).

use super::LineError;

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

/// What a mountinfo line must be.
const MOUNTINFO_LINE: &str =
    "a mountinfo line (`ID PARENT MAJ:MIN ROOT MOUNT_POINT OPTIONS ... - FSTYPE SOURCE OPTIONS`)";

/// The cgroup mounts listed in mountinfo text, in file order. Mount points are unescaped
/// (`\040` is a space). Mounts of other file systems are passed over; a line without the
/// mountinfo form is a [`LineError`].
pub fn cgroup_mounts(mountinfo: &str) -> Result<Vec<CgroupMount>, LineError> {
    let mut mounts = Vec::new();
    for (i, line) in mountinfo.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match mount_line(line) {
            Some(Some(m)) => mounts.push(m),
            Some(None) => {}
            None => return Err(LineError::at(i, MOUNTINFO_LINE)),
        }
    }
    Ok(mounts)
}

/// One mountinfo line: `None` when malformed, `Some(None)` when not a cgroup mount.
fn mount_line(line: &str) -> Option<Option<CgroupMount>> {
    let (left, right) = line.split_once(" - ")?;
    let mount_point = unescape(left.split(' ').nth(4)?);
    let mut right = right.split(' ');
    let fstype = right.next().filter(|t| !t.is_empty())?;
    let _source = right.next()?;
    let super_opts = right.next().unwrap_or("");
    let unified = match fstype {
        "cgroup2" => true,
        "cgroup" => false,
        _ => return Some(None),
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
    Some(Some(CgroupMount {
        mount_point,
        unified,
        controllers,
    }))
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

/// What a `/proc/PID/cgroup` line must be.
const CGROUP_LINE: &str = "a cgroup line (`ID:CONTROLLERS:PATH`)";

/// The path of a process's cgroup in the hierarchy holding `controller` (v1), or in the
/// unified hierarchy when `controller` is `None`, from `/proc/PID/cgroup` text; `Ok(None)` when
/// the process is in no such hierarchy. Every line up to the one found must have the
/// `ID:CONTROLLERS:PATH` form, else a [`LineError`].
pub fn process_cgroup<'a>(
    text: &'a str,
    controller: Option<&str>,
) -> Result<Option<&'a str>, LineError> {
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let mut parts = line.splitn(3, ':');
        let (Some(_id), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(LineError::at(i, CGROUP_LINE));
        };
        let found = match controller {
            None => controllers.is_empty(),
            Some(c) => controllers.split(',').any(|x| x == c),
        };
        if found {
            return Ok(Some(path));
        }
    }
    Ok(None)
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
        let mounts = cgroup_mounts(MOUNTINFO).unwrap();
        assert_eq!(mounts.len(), 4);
        assert_eq!(mounts[0].mount_point, "/sys/fs/cgroup/unified");
        assert!(mounts[0].unified);
        assert_eq!(mounts[1].controllers, ["cpuset"]);
        assert_eq!(mounts[2].controllers, ["cpu", "cpuacct"]);
        assert_eq!(mounts[3].mount_point, "/sys/fs/cgroup/my dir");
        assert!(mounts[3].controllers.is_empty());
        assert_eq!(cgroup_mounts("").unwrap(), []);
    }

    #[test]
    fn a_malformed_mountinfo_line_is_named() {
        let text = format!("{MOUNTINFO}garbage\n");
        assert_eq!(
            cgroup_mounts(&text).unwrap_err(),
            LineError {
                line: 7,
                what: MOUNTINFO_LINE
            }
        );
        assert_eq!(cgroup_mounts("1 2 3 4 /x rw - \n").unwrap_err().line, 1);
        assert_eq!(
            cgroup_mounts("1 2 3 /x - cgroup2 c rw\n").unwrap_err().line,
            1
        );
    }

    #[test]
    fn where_a_process_sits() {
        let text = "12:cpuset:/rt\n4:cpu,cpuacct:/user.slice\n0::/user.slice/session-1.scope\n";
        assert_eq!(process_cgroup(text, Some("cpuset")), Ok(Some("/rt")));
        assert_eq!(
            process_cgroup(text, Some("cpuacct")),
            Ok(Some("/user.slice"))
        );
        assert_eq!(
            process_cgroup(text, None),
            Ok(Some("/user.slice/session-1.scope"))
        );
        assert_eq!(process_cgroup(text, Some("memory")), Ok(None));
        let err = process_cgroup("12:cpuset:/rt\nbroken\n", None).unwrap_err();
        assert_eq!(err.line, 2);
    }
}

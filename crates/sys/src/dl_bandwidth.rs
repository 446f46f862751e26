//! What the machine grants SCHED_DEADLINE reservations, for `rtlab sched check`: the real-time
//! bandwidth limit (`kernel.sched_rt_runtime_us` / `sched_rt_period_us`), the online CPUs and
//! the root domains cpusets and `isolcpus=` split off, what each CPU's deadline server
//! (`fair_server`, Linux 6.12+) reserves, the deadline tasks already running, and the
//! kernel's period limits. Nothing is changed.

use model::CpuSet;
use model::measure::Policy;
use model::sched::{DeadlineBandwidth, bandwidth as to_ratio};

use crate::{Error, Result, Root, cpu, partition, tasks};

/// The fair server's runtime and period when nobody changed them (kernel/sched/fair.c,
/// `fair_server_init`): 50 ms every second.
const FAIR_SERVER_DEFAULT_NS: (u64, u64) = (50_000_000, 1_000_000_000);

/// Reads the machine's deadline bandwidth. Fails only when the real-time limits themselves
/// cannot be read; what else is missing is said in the result.
pub fn deadline_bandwidth(root: &Root) -> Result<DeadlineBandwidth> {
    let rt_runtime_us: i64 = number(root, "/proc/sys/kernel/sched_rt_runtime_us")?;
    let rt_period_us: u64 = number(root, "/proc/sys/kernel/sched_rt_period_us")?;
    let online = cpu::online(root)?;
    let (server_bw, server_source) = fair_server(root, &online);
    let (tasks_bw, tasks) = running_tasks(root);
    Ok(DeadlineBandwidth {
        rt_runtime_us,
        rt_period_us,
        domains: domains(root, &online),
        online,
        server_bw,
        server_source,
        tasks_bw,
        tasks,
        period_min_us: root.read_value("/proc/sys/kernel/sched_deadline_period_min_us"),
        period_max_us: root.read_value("/proc/sys/kernel/sched_deadline_period_max_us"),
    })
}

/// A sysctl that must be a number.
fn number<T: std::str::FromStr>(root: &Root, path: &str) -> Result<T> {
    root.read(path)?.trim().parse().map_err(|_| Error::Parse {
        path: path.into(),
        line: 1,
        what: "a number".into(),
    })
}

/// Valid cpuset partitions, then the `isolcpus=` CPUs left over (the kernel keeps those in
/// one default root domain of their own).
fn domains(root: &Root, online: &CpuSet) -> Vec<CpuSet> {
    let mut out: Vec<CpuSet> = partition::cpuset_partitions(root)
        .into_iter()
        .filter(|p| p.is_valid() && !p.cpus.is_empty())
        .map(|p| p.cpus)
        .collect();
    let isolated = cpu::isolated(root).unwrap_or_default();
    let rest = CpuSet::from_cpus(
        isolated
            .iter()
            .filter(|c| online.contains(*c) && !out.iter().any(|d| d.contains(*c))),
    );
    if !rest.is_empty() {
        out.push(rest);
    }
    out
}

/// The largest per-CPU deadline-server bandwidth, from debugfs where readable; else the
/// kernel's default on 6.12 and later, said as such; else none.
fn fair_server(root: &Root, online: &CpuSet) -> (u64, String) {
    let mut worst: Option<u64> = None;
    for c in online.iter() {
        let dir = format!("/sys/kernel/debug/sched/fair_server/cpu{c}");
        let runtime: Option<u64> = root.read_value(format!("{dir}/runtime"));
        let period: Option<u64> = root.read_value(format!("{dir}/period"));
        match (runtime, period) {
            (Some(r), Some(p)) => worst = Some(worst.unwrap_or(0).max(to_ratio(p, r))),
            _ => {
                worst = None;
                break;
            }
        }
    }
    if let Some(bw) = worst {
        return (bw, "fair_server, read from debugfs".into());
    }
    let release = root
        .read_trimmed("/proc/sys/kernel/osrelease")
        .unwrap_or_default();
    let mut numbers = release
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse::<u32>().ok());
    let version = (numbers.next().unwrap_or(0), numbers.next().unwrap_or(0));
    if version >= (6, 12) {
        let (r, p) = FAIR_SERVER_DEFAULT_NS;
        (
            to_ratio(p, r),
            "fair_server, the kernel's default 50ms/1s: debugfs was not readable".into(),
        )
    } else if version == (0, 0) {
        let (r, p) = FAIR_SERVER_DEFAULT_NS;
        (
            to_ratio(p, r),
            "fair_server assumed at the 6.12+ default 50ms/1s: the kernel release was not readable"
                .into(),
        )
    } else {
        (0, format!("none before Linux 6.12 (this is {release})"))
    }
}

/// Deadline threads already running and their total bandwidth. Their parameters come from
/// `sched_getattr`, so only on the live machine; in a captured tree they are listed without.
fn running_tasks(root: &Root) -> (u64, Vec<String>) {
    let Ok(all) = tasks::all_threads(root) else {
        return (0, Vec::new());
    };
    let mut total = 0u64;
    let mut lines = Vec::new();
    for t in all.iter().filter(|t| t.policy() == Some(Policy::Deadline)) {
        let params = if root.is_host() {
            crate::sched::thread_params(t.tid).ok()
        } else {
            None
        };
        match params.and_then(|p| Some((p.dl_runtime?, p.dl_period?))) {
            Some((runtime, period)) => {
                let bw = to_ratio(period.get(), runtime.get());
                total = total.saturating_add(bw);
                lines.push(format!(
                    "{} (tid {}): runtime {runtime} every {period}",
                    t.comm, t.tid
                ));
            }
            None => lines.push(format!(
                "{} (tid {}): a deadline task whose reservation could not be read",
                t.comm, t.tid
            )),
        }
    }
    (total, lines)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_tree::tree;

    #[test]
    fn reads_limits_servers_and_domains() {
        let (_d, root) = tree(&[
            ("/proc/sys/kernel/sched_rt_runtime_us", "950000\n"),
            ("/proc/sys/kernel/sched_rt_period_us", "1000000\n"),
            ("/proc/sys/kernel/sched_deadline_period_max_us", "4194304\n"),
            ("/proc/sys/kernel/osrelease", "6.18.0-rt\n"),
            ("/sys/devices/system/cpu/online", "0-3\n"),
            ("/sys/devices/system/cpu/isolated", "3\n"),
        ]);
        let bw = deadline_bandwidth(&root).unwrap();
        assert_eq!(bw.rt_runtime_us, 950_000);
        assert_eq!(bw.online.len(), 4);
        assert_eq!(bw.domains, vec![CpuSet::from_cpus([3])]);
        assert_eq!(bw.server_bw, 52_428);
        assert!(bw.server_source.contains("default"), "{}", bw.server_source);
        assert_eq!(bw.period_max_us, Some(4_194_304));
        assert_eq!(bw.period_min_us, None);
    }

    #[test]
    fn older_kernels_have_no_server_and_servers_are_read_when_visible() {
        let (_d, root) = tree(&[
            ("/proc/sys/kernel/sched_rt_runtime_us", "-1\n"),
            ("/proc/sys/kernel/sched_rt_period_us", "1000000\n"),
            ("/proc/sys/kernel/osrelease", "5.15.0-91-generic\n"),
            ("/sys/devices/system/cpu/online", "0-1\n"),
        ]);
        let bw = deadline_bandwidth(&root).unwrap();
        assert_eq!((bw.rt_runtime_us, bw.server_bw), (-1, 0));
        let (_d, root) = tree(&[
            ("/proc/sys/kernel/sched_rt_runtime_us", "950000\n"),
            ("/proc/sys/kernel/sched_rt_period_us", "1000000\n"),
            ("/sys/devices/system/cpu/online", "0\n"),
            ("/sys/kernel/debug/sched/fair_server/cpu0/runtime", "0\n"),
            (
                "/sys/kernel/debug/sched/fair_server/cpu0/period",
                "1000000000\n",
            ),
        ]);
        let bw = deadline_bandwidth(&root).unwrap();
        assert_eq!(bw.server_bw, 0);
        assert!(bw.server_source.contains("debugfs"));
    }

    #[test]
    fn missing_limits_are_an_error() {
        let (_d, root) = tree(&[("/sys/devices/system/cpu/online", "0\n")]);
        assert!(deadline_bandwidth(&root).is_err());
    }
}

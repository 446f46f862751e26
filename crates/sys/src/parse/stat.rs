//! `/proc/stat` CPU time lines and `/proc/PID/stat` CPU time fields.
//!
//! `/proc/stat` counts, per CPU, the clock ticks (USER_HZ) spent in each state since boot. A
//! CPU's busy share over a window is the growth of everything but `idle`, `iowait` and
//! `steal` divided by the growth of the total: how load generators are checked from outside.
//! Steal (a virtual machine's CPU wanted to run and the hypervisor ran something else) is
//! reported on its own: on a busy host it grows with the guest's busy time and would otherwise
//! read as load the guest did not do.

use super::LineError;

/// Ticks one CPU (or all of them, for the `cpu` line) spent in each state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuTimes {
    /// Normal processes in user mode.
    pub user: u64,
    /// Niced processes in user mode.
    pub nice: u64,
    /// Kernel mode.
    pub system: u64,
    /// Idle.
    pub idle: u64,
    /// Idle while I/O was outstanding.
    pub iowait: u64,
    /// Hard interrupts.
    pub irq: u64,
    /// Soft interrupts.
    pub softirq: u64,
    /// Stolen by the hypervisor.
    pub steal: u64,
}

impl CpuTimes {
    /// Every state's ticks together (guest time is already inside `user` and `nice`).
    /// [`per_cpu_times`] refuses lines whose ticks add up past 64 bits; for figures
    /// built otherwise the sum stops at `u64::MAX`.
    pub fn total(&self) -> u64 {
        [self.idle, self.iowait, self.steal]
            .into_iter()
            .fold(self.busy(), u64::saturating_add)
    }

    /// Ticks this system spent doing something: user, nice, system, irq and softirq. Neither
    /// idle nor iowait, nor steal (time a hypervisor ran something else while this CPU wanted
    /// to run, which [`steal_percent_since`](CpuTimes::steal_percent_since) reports).
    pub fn busy(&self) -> u64 {
        [self.nice, self.system, self.irq, self.softirq]
            .into_iter()
            .fold(self.user, u64::saturating_add)
    }

    /// Busy share in percent between `earlier` and `self`; `None` when no tick passed.
    pub fn busy_percent_since(&self, earlier: &CpuTimes) -> Option<f64> {
        let total = self.total().checked_sub(earlier.total())?;
        if total == 0 {
            return None;
        }
        let busy = self.busy().saturating_sub(earlier.busy());
        Some(busy as f64 * 100.0 / total as f64)
    }

    /// Stolen share in percent between `earlier` and `self`; `None` when no tick passed.
    pub fn steal_percent_since(&self, earlier: &CpuTimes) -> Option<f64> {
        let total = self.total().checked_sub(earlier.total())?;
        if total == 0 {
            return None;
        }
        let steal = self.steal.saturating_sub(earlier.steal);
        Some(steal as f64 * 100.0 / total as f64)
    }
}

/// What a per-CPU line must be.
const CPU_LINE: &str =
    "a per-CPU time line (`cpuN` and up to 8 tick counts adding up within 64 bits, N at most 8191)";

/// The per-CPU lines (`cpuN ...`) of `/proc/stat`, in file order. The all-CPU `cpu` line and
/// the other counters (`intr`, `ctxt`, ...) are passed over; missing trailing fields (old
/// kernels) read as zero and fields past the eighth (guest time, already inside `user` and
/// `nice`) are not read. A `cpuN` line with a field that is not a number, a CPU number beyond
/// [`model::cpuset::MAX_CPU`] or ticks adding up past 64 bits is a [`LineError`].
pub fn per_cpu_times(text: &str) -> Result<Vec<(u32, CpuTimes)>, LineError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let mut fields = line.split_ascii_whitespace();
        let Some(cpu) = fields.next().and_then(|f| f.strip_prefix("cpu")) else {
            continue;
        };
        if cpu.is_empty() {
            continue;
        }
        let times = cpu_line(cpu, fields).ok_or(LineError::at(i, CPU_LINE))?;
        out.push(times);
    }
    Ok(out)
}

/// One `cpuN` line after its `cpu` prefix: `N` and the tick fields.
fn cpu_line<'a>(cpu: &str, mut fields: impl Iterator<Item = &'a str>) -> Option<(u32, CpuTimes)> {
    let cpu: u32 = cpu.parse().ok()?;
    if cpu > model::cpuset::MAX_CPU {
        return None;
    }
    let mut v = [0u64; 8];
    for slot in &mut v {
        match fields.next() {
            Some(f) => *slot = f.parse().ok()?,
            None => break,
        }
    }
    // Every sum the figures are used in must fit.
    v.iter().try_fold(0u64, |sum, &t| sum.checked_add(t))?;
    let [user, nice, system, idle, iowait, irq, softirq, steal] = v;
    Some((
        cpu,
        CpuTimes {
            user,
            nice,
            system,
            idle,
            iowait,
            irq,
            softirq,
            steal,
        },
    ))
}

/// A named counter line of `/proc/stat` (`ctxt`, `intr` — its first number, the total —
/// `processes`, ...).
pub fn counter(text: &str, name: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let mut fields = line.split_ascii_whitespace();
        (fields.next()? == name).then(|| fields.next()?.parse().ok())?
    })
}

/// CPU ticks of a process from its `/proc/PID/stat` line: utime + stime of the process
/// itself plus cutime + cstime of the children it has waited for (fields 14 to 17). The
/// command name in parentheses may contain spaces and parentheses; the last `)` ends it.
pub fn process_ticks(line: &str) -> Option<u64> {
    let after_comm = &line[line.rfind(')')? + 1..];
    // Fields after the name start at field 3 (state); utime is field 14.
    let mut fields = after_comm.split_ascii_whitespace().skip(11);
    let mut sum = 0u64;
    for _ in 0..4 {
        let value: i64 = fields.next()?.parse().ok()?;
        sum = sum.checked_add(value.max(0) as u64)?;
    }
    Some(sum)
}

/// The state letter (field 3: `R`, `S`, `D`, `Z` for a zombie, ...) of a `/proc/PID/stat`
/// line.
pub fn process_state(line: &str) -> Option<char> {
    let after_comm = &line[line.rfind(')')? + 1..];
    after_comm.split_ascii_whitespace().next()?.chars().next()
}

/// The process group (field 5) of a `/proc/PID/stat` line.
pub fn process_group(line: &str) -> Option<u32> {
    let after_comm = &line[line.rfind(')')? + 1..];
    after_comm.split_ascii_whitespace().nth(2)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "\
cpu  10132153 290696 3084719 46828483 16683 0 25195 0 175628 0
cpu0 1393280 32966 572056 13343292 6130 0 17875 0 23933 0
cpu1 1335 0 4 90 1 2 3 4
cpu2 7 8
intr 1462898 39 9 0 0
ctxt 2742212
btime 1769000000
processes 26442
";

    #[test]
    fn per_cpu_lines_and_busy_share() {
        let cpus = per_cpu_times(STAT).unwrap();
        assert_eq!(cpus.len(), 3);
        assert_eq!(cpus[0].0, 0);
        assert_eq!(cpus[0].1.softirq, 17875);
        assert_eq!(cpus[1].1.busy(), 1335 + 4 + 2 + 3);
        assert_eq!(cpus[1].1.total(), 1335 + 4 + 2 + 3 + 90 + 1 + 4);
        assert_eq!(cpus[2].1.nice, 8);
        assert_eq!(cpus[2].1.idle, 0);
        let before = CpuTimes {
            user: 100,
            idle: 100,
            ..CpuTimes::default()
        };
        let after = CpuTimes {
            user: 160,
            system: 10,
            idle: 120,
            iowait: 10,
            ..CpuTimes::default()
        };
        assert_eq!(after.busy_percent_since(&before), Some(70.0));
        assert_eq!(after.steal_percent_since(&before), Some(0.0));
        let stolen = CpuTimes { steal: 20, ..after };
        assert_eq!(
            stolen.busy_percent_since(&before),
            Some(70.0 * 100.0 / 120.0)
        );
        assert_eq!(
            stolen.steal_percent_since(&before),
            Some(20.0 * 100.0 / 120.0)
        );
        assert_eq!(before.busy_percent_since(&before), None);
        assert_eq!(before.steal_percent_since(&before), None);
        assert_eq!(before.busy_percent_since(&after), None);
    }

    #[test]
    fn counters() {
        assert_eq!(counter(STAT, "ctxt"), Some(2742212));
        assert_eq!(counter(STAT, "intr"), Some(1462898));
        assert_eq!(counter(STAT, "softirq"), None);
        assert_eq!(counter("ctxt x", "ctxt"), None);
    }

    #[test]
    fn process_ticks_survive_odd_names() {
        let line = "4242 (a) b (c)) S 1 4242 4242 0 -1 4194560 1 0 0 0 30 12 5 3 20 0 1 0";
        assert_eq!(process_ticks(line), Some(50));
        assert_eq!(process_group(line), Some(4242));
        assert_eq!(process_state(line), Some('S'));
        assert_eq!(process_group("1 (x)"), None);
        assert_eq!(process_ticks("4242 (short) S 1 2"), None);
        assert_eq!(process_ticks("garbage"), None);
    }

    /// Found by fuzzing (target sys_proc): a `cpuN` line whose ticks add up past 2^64 made
    /// `busy()` overflow; such a line (and a CPU number beyond `MAX_CPU`) is refused as
    /// malformed, naming its line, and process ticks past 2^64 are `None`.
    #[test]
    fn ticks_past_64_bits_are_malformed() {
        let text = "cpu0 18446744073709551615 1 0 0 0 0 0 0\ncpu1 1 2 3 4\n";
        assert_eq!(per_cpu_times(text).unwrap_err().line, 1);
        let text = "cpu1 1 2 3 4\ncpu8192 1 2 3 4\n";
        assert_eq!(per_cpu_times(text).unwrap_err().line, 2);
        let cpus = per_cpu_times("cpu  5 5 5 5\ncpu1 1 2 3 4\nctxt 5\n").unwrap();
        assert_eq!(cpus.len(), 1);
        assert_eq!((cpus[0].0, cpus[0].1.total()), (1, 10));
        let huge = CpuTimes {
            user: u64::MAX,
            idle: 1,
            ..CpuTimes::default()
        };
        assert_eq!((huge.busy(), huge.total()), (u64::MAX, u64::MAX));
        let line = "1 (x) S 1 1 1 0 -1 0 0 0 0 0 9223372036854775807 9223372036854775807 2 0";
        assert_eq!(process_ticks(line), None);
    }

    #[test]
    fn a_malformed_cpu_line_is_named() {
        let err = per_cpu_times("cpu0 1 2 3\ncpux 1 2\n").unwrap_err();
        assert_eq!(err.line, 2);
        let err = per_cpu_times("intr 5\ncpu3 1 -2\n")
            .unwrap_err()
            .in_file("/proc/stat");
        assert!(
            err.to_string()
                .starts_with("/proc/stat:2: cannot parse a per-CPU time line"),
            "{err}"
        );
    }

    #[test]
    fn reads_this_host() {
        if let Ok(text) = std::fs::read_to_string("/proc/stat") {
            assert!(!per_cpu_times(&text).unwrap().is_empty());
            assert!(counter(&text, "ctxt").is_some());
        }
        if let Ok(line) = std::fs::read_to_string("/proc/self/stat") {
            assert!(process_ticks(&line).is_some());
        }
    }
}

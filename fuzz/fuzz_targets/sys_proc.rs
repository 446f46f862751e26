//! Fuzz target `sys_proc`: arbitrary UTF-8 text through every other pure parser of
//! `/proc`, `/sys` and debugfs text in `sys::parse`: `/proc/stat` CPU times and counters,
//! `/proc/PID/stat` fields, `/proc/cmdline` (and the audit's reading of its CPU lists),
//! `/proc/cpuinfo`, mountinfo's cgroup mounts and `/proc/PID/cgroup`, a task's `stat`,
//! `status`, `environ` and `cmdline`, and the preemption model from debugfs, the version
//! string and a release. Each parser gets the whole text, and the line parsers each line.
#![no_main]

use libfuzzer_sys::fuzz_target;
use model::CpuSet;
use sys::parse::{cgroup, cmdline, cpuinfo, preempt, stat, task};

fuzz_target!(|data: &[u8]| {
    let Some(text) = rtlab_fuzz::strict(data) else {
        return;
    };
    // /proc/stat
    // A malformed line is refused with its number, which must be a line of the text.
    let lines = text.lines().count();
    let named = |e: sys::parse::LineError| assert!(e.line >= 1 && e.line <= lines, "{e}");
    let times = stat::per_cpu_times(text).unwrap_or_else(|e| {
        named(e);
        Vec::new()
    });
    for pair in times.windows(2) {
        let (a, b) = (&pair[0].1, &pair[1].1);
        let _ = (a.total(), a.busy());
        let _ = b.busy_percent_since(a);
        let _ = b.steal_percent_since(a);
    }
    let _ = stat::counter(text, "ctxt");
    let _ = stat::counter(text, "btime");
    // One-line files, each line as one.
    for line in text.lines().take(64) {
        let _ = stat::process_ticks(line);
        let _ = stat::process_state(line);
        let _ = stat::process_group(line);
        let _ = task::parse_stat(line);
        let _ = preempt::boot_param_model(line);
        let _ = preempt::release_version(line);
        let _ = preempt::classify_version(line).model(line);
    }
    // /proc/cmdline and the CPU lists in it.
    let c = cmdline::parse(text);
    let possible = CpuSet::from_cpus(0..8);
    for key in [
        "isolcpus",
        "nohz_full",
        "rcu_nocbs",
        "irqaffinity",
        "preempt",
    ] {
        let _ = c.get(key);
        let _ = c.has(key);
        let _ = c.all(key).count();
        if let Some(value) = c.value(key) {
            let _ = audit::context::isolcpus_cpus(value, &possible);
            let _ = audit::context::kernel_cpu_list(value, &possible);
        }
    }
    for p in &c.params {
        let _ = cmdline::key_eq(p.key, "isolcpus");
    }
    // /proc/cpuinfo
    let info = cpuinfo::parse(text);
    for r in &info.processors {
        let _ = (r.processor(), r.model(), r.get("flags"));
    }
    let _ = info.processor(0);
    let _ = info.machine_get("Hardware");
    let _ = info.machine_model();
    // mountinfo and /proc/PID/cgroup
    if let Err(e) = cgroup::cgroup_mounts(text) {
        named(e);
    }
    for controller in [Some("cpuset"), None] {
        if let Err(e) = cgroup::process_cgroup(text, controller) {
            named(e);
        }
    }
    // status, environ, cmdline
    let _ = task::status_field(text, "Cpus_allowed_list");
    let _ = task::environ(text);
    let _ = task::cmdline_args(text);
    // debugfs sched/preempt, the version string
    let _ = preempt::parse_debugfs(text);
    let _ = preempt::classify_version(text);
});

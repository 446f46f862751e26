//! SCHED_DEADLINE admission: would `sched_setattr` accept these reservations on this machine?
//!
//! The kernel's rules (kernel/sched/deadline.c, `__checkparam_dl` and `sched_dl_overflow`;
//! Documentation/scheduler/sched-deadline.rst):
//! - per task: runtime at least 1024 ns (`1 << DL_SCALE`), runtime <= deadline <= period, and
//!   the period within `kernel.sched_deadline_period_{min,max}_us`;
//! - per root domain: the reserved bandwidth, each task's `(runtime << 20) / period`, plus what
//!   deadline servers and running deadline tasks already hold, must not pass
//!   `(rt_runtime << 20) / rt_period` times the domain's CPUs (no limit when
//!   `sched_rt_runtime_us` is -1);
//! - a task whose CPU affinity is narrower than its root domain is refused (EPERM): pinning a
//!   reservation to one CPU needs that CPU to be a root domain of its own (an exclusive cpuset
//!   partition).
//!
//! Admission only promises that the reservations fit; whether each task then meets its
//! deadline is the EDF analysis of the reservations (see `edf`).

use model::CpuSet;
use model::sched::{BW_SHIFT, DeadlineBandwidth, Task, Test, Verdict, bandwidth};

/// The shortest runtime the kernel accepts, ns (`1 << DL_SCALE`).
const MIN_RUNTIME_NS: u64 = 1 << 10;

/// The kernel's `to_ratio`.
pub(crate) fn to_ratio(period_ns: u64, runtime_ns: u64) -> u64 {
    bandwidth(period_ns, runtime_ns)
}

/// A bandwidth as a percentage of one CPU, for notes.
pub(crate) fn percent(bw: u64) -> f64 {
    bw as f64 * 100.0 / f64::from(1u32 << BW_SHIFT)
}

/// The admission tests for `tasks` (all of the set, every partition) on `bw`.
pub(crate) fn admission(tasks: &[Task], bw: &DeadlineBandwidth) -> Vec<Test> {
    let mut tests = vec![parameters(tasks, bw)];
    tests.extend(affinity(tasks, bw));
    tests.extend(domains(tasks, bw));
    tests
}

/// `__checkparam_dl`: each task's own numbers.
fn parameters(tasks: &[Task], bw: &DeadlineBandwidth) -> Test {
    let min = bw.period_min_us.map(|us| us.saturating_mul(1000));
    let max = bw.period_max_us.map(|us| us.saturating_mul(1000));
    let mut bad = Vec::new();
    for t in tasks {
        let p = t.period.get();
        if t.runtime.get() < MIN_RUNTIME_NS {
            bad.push(format!(
                "{}: runtime {} is below the kernel's 1024ns",
                t.name, t.runtime
            ));
        }
        if min.is_some_and(|m| p < m) || max.is_some_and(|m| p > m) {
            bad.push(format!(
                "{}: period {} is outside kernel.sched_deadline_period_min_us..max_us ({}..{} us)",
                t.name,
                t.period,
                bw.period_min_us.unwrap_or(0),
                bw.period_max_us.unwrap_or(u64::MAX)
            ));
        }
        if t.wcet > t.runtime {
            bad.push(format!(
                "{}: runtime {} is below the WCET {}: the kernel throttles each job before it ends",
                t.name, t.runtime, t.wcet
            ));
        }
    }
    if bad.is_empty() {
        Test {
            name: "parameters".into(),
            verdict: Verdict::Schedulable,
            note:
                "every runtime >= 1024ns and >= the WCET, every period within the kernel's limits"
                    .into(),
        }
    } else {
        Test {
            name: "parameters".into(),
            verdict: Verdict::NotSchedulable,
            note: bad.join("; "),
        }
    }
}

/// The root domain a CPU belongs to: a split-off domain, or the default one (online CPUs not
/// in any split-off domain).
fn domain_of(cpu: u32, bw: &DeadlineBandwidth) -> CpuSet {
    bw.domains
        .iter()
        .find(|d| d.contains(cpu))
        .cloned()
        .unwrap_or_else(|| default_domain(bw))
}

fn default_domain(bw: &DeadlineBandwidth) -> CpuSet {
    CpuSet::from_cpus(
        bw.online
            .iter()
            .filter(|c| !bw.domains.iter().any(|d| d.contains(*c))),
    )
}

/// Pinned reservations need a root domain of exactly their CPU.
fn affinity(tasks: &[Task], bw: &DeadlineBandwidth) -> Option<Test> {
    let pinned: Vec<&Task> = tasks.iter().filter(|t| t.cpu.is_some()).collect();
    if pinned.is_empty() {
        return None;
    }
    let mut refused = Vec::new();
    for t in &pinned {
        let cpu = t.cpu.unwrap_or_default();
        let domain = domain_of(cpu, bw);
        if !bw.online.contains(cpu) {
            refused.push(format!("{}: CPU {cpu} is not online", t.name));
        } else if domain.len() != 1 {
            refused.push(format!(
                "{}: CPU {cpu} shares its root domain with CPUs {domain}",
                t.name
            ));
        }
    }
    Some(if refused.is_empty() {
        Test {
            name: "affinity".into(),
            verdict: Verdict::Schedulable,
            note: "every pinned reservation's CPU is a root domain of its own".into(),
        }
    } else {
        Test {
            name: "affinity".into(),
            verdict: Verdict::NotSchedulable,
            note: format!(
                "sched_setattr refuses a reservation narrower than its root domain (EPERM): {}; \
                 make each such CPU an exclusive cpuset partition (cpuset.cpus.partition = \
                 isolated) or leave the tasks unpinned",
                refused.join("; ")
            ),
        }
    })
}

/// `sched_dl_overflow` per root domain the set uses.
fn domains(tasks: &[Task], bw: &DeadlineBandwidth) -> Vec<Test> {
    let default = default_domain(bw);
    let mut used: Vec<CpuSet> = Vec::new();
    for t in tasks {
        let d = t.cpu.map_or_else(|| default.clone(), |c| domain_of(c, bw));
        if !used.contains(&d) {
            used.push(d);
        }
    }
    used.iter()
        .map(|domain| domain_test(tasks, bw, domain, *domain == default))
        .collect()
}

fn domain_test(tasks: &[Task], bw: &DeadlineBandwidth, domain: &CpuSet, is_default: bool) -> Test {
    let name = format!("admission CPUs {domain}");
    let members: Vec<&Task> = tasks
        .iter()
        .filter(|t| t.cpu.map_or(is_default, |c| domain.contains(c)))
        .collect();
    let new: u64 = members
        .iter()
        .map(|t| to_ratio(t.period.get(), t.runtime.get()))
        .sum();
    if bw.rt_runtime_us < 0 {
        return Test {
            name,
            verdict: Verdict::Schedulable,
            note: format!(
                "kernel.sched_rt_runtime_us is -1: the kernel admits any bandwidth ({:.1}% asked)",
                percent(new)
            ),
        };
    }
    let cpus = domain.len() as u64;
    let per_cpu = to_ratio(
        bw.rt_period_us.saturating_mul(1000),
        (bw.rt_runtime_us as u64).saturating_mul(1000),
    );
    let capacity = per_cpu.saturating_mul(cpus);
    let servers = bw.server_bw.saturating_mul(cpus);
    // Running deadline tasks: counted against the default domain, where they are unless
    // cpusets moved them.
    let running = if is_default { bw.tasks_bw } else { 0 };
    let total = new.saturating_add(servers).saturating_add(running);
    let note = format!(
        "{:.1}% asked + {:.1}% deadline servers ({}) + {:.1}% running deadline tasks = {:.1}% \
         of {} CPU(s), against {:.1}% allowed ({} CPU(s) x sched_rt_runtime_us {} / \
         sched_rt_period_us {})",
        percent(new),
        percent(servers),
        bw.server_source,
        percent(running),
        percent(total),
        cpus,
        percent(capacity),
        cpus,
        bw.rt_runtime_us,
        bw.rt_period_us
    );
    Test {
        name,
        verdict: if total <= capacity {
            Verdict::Schedulable
        } else {
            Verdict::NotSchedulable
        },
        note,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::Nanos;

    fn task(name: &str, runtime_us: u64, period_us: u64, cpu: Option<u32>) -> Task {
        Task {
            name: name.into(),
            period: Nanos::from_us(period_us),
            wcet: Nanos::from_us(runtime_us),
            deadline: Nanos::from_us(period_us),
            priority: None,
            cpu,
            jitter: Nanos::ZERO,
            blocking: Nanos::ZERO,
            runtime: Nanos::from_us(runtime_us),
            jitter_source: None,
        }
    }

    /// This VM's figures: 2 CPUs, 950000/1000000, fair servers 50ms/1s each (6.12+).
    fn machine() -> DeadlineBandwidth {
        DeadlineBandwidth {
            rt_runtime_us: 950_000,
            rt_period_us: 1_000_000,
            online: CpuSet::from_cpus([0, 1]),
            domains: vec![],
            server_bw: to_ratio(1_000_000_000, 50_000_000),
            server_source: "kernel default".into(),
            tasks_bw: 0,
            tasks: vec![],
            period_min_us: Some(100),
            period_max_us: Some(4_194_304),
        }
    }

    #[test]
    fn the_kernels_fixed_point() {
        assert_eq!(to_ratio(1_000_000_000, 950_000_000), 996_147);
        assert_eq!(to_ratio(1_000_000_000, 50_000_000), 52_428);
        assert_eq!(to_ratio(10, 3), 314_572);
    }

    /// Talk 002's two programs held to 30 % and 20 % of a CPU fit easily.
    #[test]
    fn two_small_reservations_are_admitted() {
        let tests = admission(
            &[task("a", 3000, 10_000, None), task("b", 2000, 10_000, None)],
            &machine(),
        );
        assert!(
            tests.iter().all(|t| t.verdict == Verdict::Schedulable),
            "{tests:?}"
        );
    }

    /// 2 x (95 % - 5 %) = 180 %: 90 % + 90 % fit, 90 % + 91 % do not.
    #[test]
    fn the_servers_take_their_share() {
        let fits = [task("a", 9000, 10_000, None), task("b", 9000, 10_000, None)];
        assert!(
            admission(&fits, &machine())
                .iter()
                .all(|t| t.verdict == Verdict::Schedulable)
        );
        let over = [task("a", 9000, 10_000, None), task("b", 9100, 10_000, None)];
        let tests = admission(&over, &machine());
        let adm = tests
            .iter()
            .find(|t| t.name.starts_with("admission"))
            .unwrap();
        assert_eq!(adm.verdict, Verdict::NotSchedulable, "{}", adm.note);
        let unlimited = DeadlineBandwidth {
            rt_runtime_us: -1,
            ..machine()
        };
        assert!(
            admission(&over, &unlimited)
                .iter()
                .all(|t| t.verdict == Verdict::Schedulable)
        );
    }

    #[test]
    fn pinned_reservations_need_a_domain_of_their_own() {
        let set = [task("a", 1000, 10_000, Some(1))];
        let tests = admission(&set, &machine());
        let aff = tests.iter().find(|t| t.name == "affinity").unwrap();
        assert_eq!(aff.verdict, Verdict::NotSchedulable);
        assert!(
            aff.note.contains("EPERM") && aff.note.contains("CPUs 0-1"),
            "{}",
            aff.note
        );
        let split = DeadlineBandwidth {
            domains: vec![CpuSet::from_cpus([1])],
            ..machine()
        };
        let tests = admission(&set, &split);
        assert!(
            tests.iter().all(|t| t.verdict == Verdict::Schedulable),
            "{tests:?}"
        );
        // The single-CPU domain holds at most 95 % - 5 %.
        let tests = admission(&[task("a", 9100, 10_000, Some(1))], &split);
        assert!(tests.iter().any(|t| t.verdict == Verdict::NotSchedulable));
    }

    #[test]
    fn the_kernels_per_task_rules() {
        let mut t = task("a", 1, 50, None);
        t.runtime = Nanos(1000);
        let tests = admission(&[t], &machine());
        assert_eq!(tests[0].verdict, Verdict::NotSchedulable);
        assert!(
            tests[0].note.contains("1024ns") && tests[0].note.contains("period"),
            "{}",
            tests[0].note
        );
    }
}

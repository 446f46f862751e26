//! Building a [`TunePlan`] from the machine as it is: validate the CPU split, then walk each
//! area the talks tuned by hand and record, for every kernel file that is not already right,
//! its current value, the value it should get and why.
//!
//! Reading only, through [`Root`], so a plan can be made for a captured tree.

use model::CpuSet;
use model::tune::{Action, Change, IrqRule, SCHEMA, TunePlan, TuneProfile};
use sys::Root;
use sys::irq::to_mask;

use crate::{boot, rules};

mod cpusets;
pub(crate) mod irqbalance;
mod siblings;

pub use siblings::Siblings;

/// What to plan for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// The CPUs for real-time work.
    pub rt_cpus: CpuSet,
    /// The CPUs for everything else; `None`: every other online CPU.
    pub housekeeping: Option<CpuSet>,
    /// How far to go.
    pub profile: TuneProfile,
    /// IRQ rules, first match decides (`--irq-rule`).
    pub rules: Vec<IrqRule>,
    /// Cpuset groups beside rtlab's that overlap the RT CPUs (`--sibling-cpusets`).
    pub siblings: Siblings,
}

/// A split rtlab refuses, with the reason and the fix.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// An RT CPU is not online.
    #[error("--rt-cpus {0}: CPU {1} is not online (online: {2}); isolate online CPUs only")]
    Offline(CpuSet, u32, CpuSet),
    /// No CPU would be left for the rest of the system.
    #[error(
        "--rt-cpus {0} leaves no housekeeping CPU (online: {1}); keep at least one CPU for the kernel and the other tasks"
    )]
    NoHousekeeping(CpuSet, CpuSet),
    /// The two sets overlap.
    #[error("--housekeeping {0} overlaps --rt-cpus {1}; give disjoint sets")]
    Overlap(CpuSet, CpuSet),
    /// A housekeeping CPU is offline.
    #[error("--housekeeping {0}: CPU {1} is not online (online: {2})")]
    HousekeepingOffline(CpuSet, u32, CpuSet),
    /// The machine could not be read.
    #[error("{0}")]
    Read(String),
    /// An IRQ rule cannot be followed here.
    #[error("{0}")]
    Rule(String),
}

/// Idle states with an exit latency above this stay enabled on RT CPUs under `balanced`.
const BALANCED_IDLE_US: u64 = 10;

/// Makes the plan.
pub fn plan(root: &Root, req: &Request) -> Result<TunePlan, PlanError> {
    let (online, rt, hk) = split(root, req)?;
    let mut p = Planner::new(root, req, &rt, &hk, &online);
    p.irqs();
    p.irqbalance();
    p.kernel_threads();
    p.workqueues();
    p.cpufreq();
    p.cpuidle();
    p.sysctls();
    p.cpusets();
    let boot = boot::plan(root, &rt, &hk, req.profile, p.cpuset_v2_or_v1());
    let Planner { changes, notes, .. } = p;
    Ok(TunePlan {
        schema: SCHEMA.to_string(),
        profile: req.profile,
        rt_cpus: rt,
        housekeeping: hk,
        boot,
        rules: req.rules.clone(),
        changes,
        notes,
    })
}

/// The IRQ part of the plan alone — affinities, the default affinity, the rules' thread
/// policies — for `tune irqd` to check again and again; with its notes.
pub fn plan_irqs(root: &Root, req: &Request) -> Result<(Vec<Change>, Vec<String>), PlanError> {
    let (online, rt, hk) = split(root, req)?;
    let mut p = Planner::new(root, req, &rt, &hk, &online);
    p.irqs();
    Ok((p.changes, p.notes))
}

/// The housekeeping CPUs of the request: as given, or every online CPU that is not an RT one.
pub fn housekeeping(root: &Root, req: &Request) -> Result<CpuSet, PlanError> {
    Ok(split(root, req)?.2)
}

/// The online CPUs, the RT CPUs and the housekeeping CPUs of a split rtlab accepts.
fn split(root: &Root, req: &Request) -> Result<(CpuSet, CpuSet, CpuSet), PlanError> {
    let online = sys::cpu::online(root).map_err(|e| PlanError::Read(e.to_string()))?;
    let rt = req.rt_cpus.clone();
    let offline = rt.iter().find(|c| !online.contains(*c));
    if let Some(cpu) = offline {
        return Err(PlanError::Offline(rt, cpu, online));
    }
    let hk = match &req.housekeeping {
        Some(h) => {
            let offline = h.iter().find(|c| !online.contains(*c));
            if let Some(cpu) = offline {
                return Err(PlanError::HousekeepingOffline(h.clone(), cpu, online));
            }
            if !h.intersection(&rt).is_empty() {
                return Err(PlanError::Overlap(h.clone(), rt));
            }
            h.clone()
        }
        None => online.difference(&rt),
    };
    if hk.is_empty() {
        return Err(PlanError::NoHousekeeping(rt, online));
    }
    rules::check(&req.rules, &online).map_err(PlanError::Rule)?;
    Ok((online, rt, hk))
}

struct Planner<'a> {
    root: &'a Root,
    rt: &'a CpuSet,
    hk: &'a CpuSet,
    online: &'a CpuSet,
    profile: TuneProfile,
    rules: &'a [IrqRule],
    sibling_mode: Siblings,
    changes: Vec<Change>,
    notes: Vec<String>,
}

impl<'a> Planner<'a> {
    fn new(
        root: &'a Root,
        req: &'a Request,
        rt: &'a CpuSet,
        hk: &'a CpuSet,
        online: &'a CpuSet,
    ) -> Planner<'a> {
        Planner {
            root,
            rt,
            hk,
            online,
            profile: req.profile,
            rules: &req.rules,
            sibling_mode: req.siblings,
            changes: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// Plans writing `new` to `path` if it holds something else; `read` is how the file's
    /// value compares (a CPU list file is compared as a set).
    fn write(&mut self, group: &str, path: &str, new: &str, reason: &str) {
        let current = self.root.read_trimmed(path);
        if current.as_deref().is_some_and(|c| equivalent(path, c, new)) {
            return;
        }
        self.changes.push(Change {
            group: group.to_string(),
            action: Action::Write,
            path: path.to_string(),
            current,
            new: Some(new.to_string()),
            reason: reason.to_string(),
        });
    }

    /// Every movable IRQ allowed on an RT CPU goes to the housekeeping CPUs; the default
    /// affinity too, for IRQs that appear later.
    fn irqs(&mut self) {
        let table = match sys::irq::irq_table(self.root) {
            Ok(t) => t,
            Err(e) => {
                self.notes
                    .push(format!("IRQs: {e}; their affinity is not planned"));
                return;
            }
        };
        let hk_list = self.hk.to_string();
        let mut managed = Vec::new();
        let mut fixed = Vec::new();
        for irq in &table.irqs {
            let rule = rules::rule_for(self.rules, irq);
            let pinned = rule.and_then(|r| r.cpus.as_ref());
            let on_rt = irq
                .affinity
                .as_ref()
                .is_none_or(|a| !a.intersection(self.rt).is_empty());
            if !on_rt && pinned.is_none() {
                continue;
            }
            let path = format!("/proc/irq/{}/smp_affinity_list", irq.number);
            match (audit::classify_irq(irq, self.online), pinned, rule) {
                (audit::IrqKind::Movable, Some(cpus), Some(r)) => {
                    let reason = format!("IRQ {}: rule {r}", irq.label());
                    self.write("irq", &path, &cpus.to_string(), &reason);
                }
                (audit::IrqKind::Movable, _, _) => {
                    let reason = format!(
                        "IRQ {} may run its handler on RT {}",
                        irq.label(),
                        irq.affinity
                            .as_ref()
                            .map_or(self.rt.clone(), |a| a.intersection(self.rt))
                            .with_noun()
                    );
                    self.write("irq", &path, &hk_list, &reason);
                }
                (kind, Some(_), Some(r)) if kind != audit::IrqKind::Unused => {
                    self.notes.push(format!(
                        "--irq-rule {r}: IRQ {} cannot be moved ({}); its affinity is left",
                        irq.label(),
                        match kind {
                            audit::IrqKind::Fixed(why) => why.to_string(),
                            _ => "managed by the kernel".to_string(),
                        }
                    ));
                }
                (audit::IrqKind::Managed, _, _) => managed.push(irq.label()),
                (audit::IrqKind::Fixed(why), _, _) => fixed.push(format!("{}: {why}", irq.label())),
                (audit::IrqKind::Unused, _, _) => {}
            }
        }
        let (policies, notes) = rules::thread_changes(self.root, &table.irqs, self.rules);
        self.changes.extend(policies);
        self.notes.extend(notes);
        if !managed.is_empty() {
            self.notes.push(format!(
                "IRQs probably managed by the kernel (spread one queue per CPU; their affinity \
                 cannot be written), left as they are: {}; `isolcpus=managed_irq,...` on the boot \
                 line keeps them off the RT CPUs",
                managed.join(", ")
            ));
        }
        if !fixed.is_empty() {
            self.notes.push(format!(
                "per-CPU or fixed IRQs, which fire on every CPU by design: {}",
                fixed.join(", ")
            ));
        }
        self.write(
            "irq",
            sys::irq::DEFAULT_SMP_AFFINITY,
            &to_mask(self.hk),
            "IRQs set up later (a module loaded, a device plugged) start on these CPUs",
        );
    }

    /// Kernel threads that may run anywhere and that a cpuset does not move (kthreadd, whose
    /// affinity new kernel threads inherit, and the like) are allowed the housekeeping CPUs.
    /// Per-CPU threads, workqueue workers (placed by their workqueue's cpumask) and threads
    /// the kernel pins (`PF_NO_SETAFFINITY`: IRQ threads, rescuers) are left.
    fn kernel_threads(&mut self) {
        let Ok(tasks) = sys::tasks::all_threads(self.root) else {
            return;
        };
        for t in tasks.iter().filter(|t| {
            t.is_kernel_thread()
                && t.affinity_settable()
                && !t.is_per_cpu_kernel_thread()
                && !t.is_workqueue_worker()
                && !t.is_dead()
        }) {
            let Some(allowed) = &t.cpus_allowed else {
                continue;
            };
            let on_rt = allowed.intersection(self.rt);
            if on_rt.is_empty() {
                continue;
            }
            self.changes.push(Change {
                group: "kthread".to_string(),
                action: Action::SetAffinity,
                path: format!("/proc/{}", t.tid),
                current: Some(allowed.to_string()),
                new: Some(self.hk.to_string()),
                reason: format!(
                    "kernel thread {} may run on RT {}{}",
                    t.comm,
                    on_rt.with_noun(),
                    if t.comm == "kthreadd" {
                        "; kernel threads created later inherit its CPUs"
                    } else {
                        ""
                    }
                ),
            });
        }
    }

    /// Unbound workqueues run on the housekeeping CPUs.
    fn workqueues(&mut self) {
        let path = "/sys/devices/virtual/workqueue/cpumask";
        if self.root.exists(path) {
            self.write(
                "workqueue",
                path,
                &to_mask(self.hk),
                "unbound workqueue items (writeback, crypto, many drivers) run on these CPUs",
            );
        }
        // Workqueues with their own sysfs cpumask (WQ_SYSFS: writeback, blkcg_punt_bio, ...)
        // run where it and the global mask overlap; their own is narrowed too, so a later
        // change of the global mask does not bring them back.
        let Ok(names) = self.root.list_dir("/sys/devices/virtual/workqueue") else {
            return;
        };
        for name in names {
            let path = format!("/sys/devices/virtual/workqueue/{name}/cpumask");
            let Some(own) = self
                .root
                .read_trimmed(&path)
                .and_then(|m| CpuSet::parse_mask(&m).ok())
            else {
                continue;
            };
            let on_rt = own.intersection(self.rt);
            if on_rt.is_empty() {
                continue;
            }
            self.write(
                "workqueue",
                &path,
                &to_mask(self.hk),
                &format!(
                    "workqueue {name} may run its items on RT {}",
                    on_rt.with_noun()
                ),
            );
        }
    }

    /// The `performance` governor on RT CPUs.
    fn cpufreq(&mut self) {
        for cpu in self.rt.iter() {
            let dir = format!("/sys/devices/system/cpu/cpu{cpu}/cpufreq");
            let Some(available) = self
                .root
                .read_trimmed(format!("{dir}/scaling_available_governors"))
            else {
                continue;
            };
            if available.split_whitespace().any(|g| g == "performance") {
                self.write(
                    "cpufreq",
                    &format!("{dir}/scaling_governor"),
                    "performance",
                    &format!(
                        "CPU {cpu} at its highest frequency: no ramp-up after an idle stretch, \
                         no latency that follows the load"
                    ),
                );
            }
        }
    }

    /// Idle states too slow to leave are disabled on RT CPUs (all but polling under
    /// `strict`).
    fn cpuidle(&mut self) {
        let bound = match self.profile {
            TuneProfile::Balanced => BALANCED_IDLE_US,
            TuneProfile::Strict => 0,
        };
        for cpu in self.rt.iter() {
            let dir = format!("/sys/devices/system/cpu/cpu{cpu}/cpuidle");
            let Ok(states) = self.root.list_dir(&dir) else {
                continue;
            };
            for state in states.iter().filter(|s| s.starts_with("state")) {
                let name = self
                    .root
                    .read_trimmed(format!("{dir}/{state}/name"))
                    .unwrap_or_default();
                if name.eq_ignore_ascii_case("poll") {
                    continue;
                }
                let latency: u64 = self
                    .root
                    .read_value(format!("{dir}/{state}/latency"))
                    .unwrap_or(u64::MAX);
                if latency > bound {
                    self.write(
                        "cpuidle",
                        &format!("{dir}/{state}/disable"),
                        "1",
                        &format!(
                            "CPU {cpu}'s idle state {name} takes {} to leave",
                            if latency == u64::MAX {
                                "an unknown time".to_string()
                            } else {
                                format!("{latency} us")
                            }
                        ),
                    );
                }
            }
        }
    }

    /// Scheduler, memory and watchdog knobs.
    fn sysctls(&mut self) {
        if self.root.exists("/proc/sys/kernel/timer_migration") {
            self.write(
                "sched",
                "/proc/sys/kernel/timer_migration",
                "0",
                "timers stay on the CPU that armed them instead of moving to a busy one",
            );
        }
        let thp = "/sys/kernel/mm/transparent_hugepage/enabled";
        if let Some(current) = self.root.read_trimmed(thp) {
            let want = match self.profile {
                TuneProfile::Balanced => "madvise",
                TuneProfile::Strict => "never",
            };
            let selected = current
                .split_whitespace()
                .find_map(|w| w.strip_prefix('[')?.strip_suffix(']'));
            // `never` is stricter than `madvise`: balanced only moves off `always`.
            let worse = match self.profile {
                TuneProfile::Balanced => selected == Some("always"),
                TuneProfile::Strict => selected != Some("never"),
            };
            if worse && current.contains(want) {
                self.changes.push(Change {
                    group: "memory".to_string(),
                    action: Action::Write,
                    path: thp.to_string(),
                    current: selected.map(str::to_string).or(Some(current.clone())),
                    new: Some(want.to_string()),
                    reason: "khugepaged compacting memory behind an application's back adds \
                             unpredictable stalls"
                        .to_string(),
                });
            }
        }
        if self.profile == TuneProfile::Strict {
            for (path, reason) in [
                (
                    "/proc/sys/kernel/sched_rt_runtime_us",
                    "RT throttling stops every real-time task for 50 ms each second once they \
                     use 95 %: a runaway task then hangs its CPU, so have a watchdog of your own",
                ),
                (
                    "/proc/sys/kernel/watchdog",
                    "the soft and hard lockup detectors' timers and NMIs interrupt every CPU",
                ),
            ] {
                if self.root.exists(path) {
                    let new = if path.ends_with("runtime_us") {
                        "-1"
                    } else {
                        "0"
                    };
                    self.write(
                        if path.ends_with("watchdog") {
                            "watchdog"
                        } else {
                            "sched"
                        },
                        path,
                        new,
                        reason,
                    );
                }
            }
        } else if self
            .root
            .read_trimmed("/proc/sys/kernel/sched_rt_runtime_us")
            .as_deref()
            != Some("-1")
        {
            self.notes.push(
                "RT throttling stays on (balanced): a runaway real-time task cannot hang a CPU; \
                 `--profile strict` turns it off"
                    .to_string(),
            );
        }
    }
}

/// Whether the file at `path` holding `a` means the same as holding `b`: CPU lists compare as
/// sets, hex masks by value, THP's `always [madvise] never` by its selected word.
pub(crate) fn equivalent(path: &str, a: &str, b: &str) -> bool {
    let (a, b) = (a.trim(), b.trim());
    if a == b {
        return true;
    }
    if path.ends_with("_list") || path.ends_with("cpuset.cpus") {
        return a.parse::<CpuSet>().ok().is_some()
            && a.parse::<CpuSet>().ok() == b.parse::<CpuSet>().ok();
    }
    if path.ends_with("default_smp_affinity") || path.ends_with("cpumask") {
        return hex_mask(a) == hex_mask(b);
    }
    if path.ends_with("transparent_hugepage/enabled") {
        return selected(a) == selected(b);
    }
    if path.ends_with("cgroup.subtree_control") {
        return controls_match(a, b) || controls_match(b, a);
    }
    false
}

/// Whether the controllers a v2 `cgroup.subtree_control` reads (`cpuset cpu io`) are what a
/// write of `+ctl`/`-ctl` words asked for: the file never reads back the `+`/`-` written.
fn controls_match(read: &str, written: &str) -> bool {
    let enabled: Vec<&str> = read.split_whitespace().collect();
    let words: Vec<&str> = written.split_whitespace().collect();
    !words.is_empty()
        && words.iter().all(|w| {
            if let Some(c) = w.strip_prefix('+') {
                enabled.contains(&c)
            } else if let Some(c) = w.strip_prefix('-') {
                !enabled.contains(&c)
            } else {
                false
            }
        })
}

/// The bracketed word of a choice file (`always [madvise] never` → `madvise`), else the text.
pub(crate) fn selected(text: &str) -> &str {
    text.split_whitespace()
        .find_map(|w| w.strip_prefix('[')?.strip_suffix(']'))
        .unwrap_or(text.trim())
}

/// A hex CPU mask as the kernel prints it (`03`, `00000000,000000ff`) without separators and
/// leading zeros, for comparing.
fn hex_mask(text: &str) -> String {
    let digits: String = text.chars().filter(|c| *c != ',').collect();
    let trimmed = digits.trim_start_matches('0').to_ascii_lowercase();
    if trimmed.is_empty() {
        "0".to_string()
    } else {
        trimmed
    }
}

#[cfg(test)]
mod subtree_control_tests {
    use super::equivalent;

    const PATH: &str = "/sys/fs/cgroup/cgroup.subtree_control";

    // Seen on Debian's 6.1-rt and 6.12-rt kernels (cgroup v2): `+cpuset` written, `cpuset` read.
    #[test]
    fn an_enabled_controller_reads_back_without_its_plus() {
        assert!(equivalent(PATH, "cpuset", "+cpuset"));
        assert!(equivalent(PATH, "cpuset cpu io memory pids", "+cpuset"));
        assert!(!equivalent(PATH, "cpu io memory", "+cpuset"));
    }

    #[test]
    fn a_disabled_controller_is_absent_from_the_list() {
        assert!(equivalent(PATH, "", "-cpuset"));
        assert!(equivalent(PATH, "cpu memory", "-cpuset"));
        assert!(!equivalent(PATH, "cpuset", "-cpuset"));
        // Words without a sign are a list, compared as read.
        assert!(!equivalent(PATH, "cpu", "cpuset"));
    }
}

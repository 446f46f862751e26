//! Checks made before measuring: what would make the run fail (privileges, and which of them
//! is missing: the capability, the rlimit, or the cgroup's real-time budget in a container) and
//! what changes what its numbers mean (warnings recorded in the result).

use model::host::HostInfo;
use model::measure::{Policy, Warning};
use sys::Root;
use sys::container::{Container, RtGroup};
use sys::privilege::Privileges;

use crate::config::Config;

/// The conditions, visible from the host description and the configuration, that a reader
/// of the result must know about.
pub fn warnings(config: &Config, host: &HostInfo) -> Vec<Warning> {
    let mut out = Vec::new();
    if let (Some(runtime), period) = (host.sched_rt_runtime_us, host.sched_rt_period_us)
        && runtime >= 0
    {
        {
            let period = period.unwrap_or(1_000_000);
            out.push(Warning::new(
                "rt-throttling",
                format!(
                    "RT throttling is on (kernel.sched_rt_runtime_us={runtime} of {period}): real-time tasks are stopped for {} us of every {} us once they use their share; for RT workloads set `sysctl kernel.sched_rt_runtime_us=-1`",
                    (period - runtime).max(0),
                    period
                ),
            ));
        }
    }
    out.extend(workload_throttled(config, host));
    if !host.preempt_rt {
        // Which model the kernel runs and where that was read (debugfs, `preempt=`, the
        // config's default), so a PREEMPT_DYNAMIC kernel does not read "unknown".
        let model = match (&host.preempt_model, &host.preempt_model_source) {
            (Some(m), Some(source)) => format!("{m}, from {source}"),
            (Some(m), None) => m.clone(),
            (None, _) => {
                "unknown: neither debugfs, preempt= nor the kernel config names it".to_string()
            }
        };
        out.push(Warning::new(
            "not-preempt-rt",
            format!(
                "the kernel is not PREEMPT_RT (preemption model: {model}): worst-case latency is not bounded by design"
            ),
        ));
    }
    let isolated = host
        .isolated_cpus
        .union(&host.nohz_full_cpus)
        .union(&host.cpuset_isolated_cpus);
    let exposed = config.cpus.difference(&isolated);
    if !exposed.is_empty() {
        out.push(Warning::new(
            "cpu-not-isolated",
            format!(
                "measured {} {} not isolated (not in isolcpus=, nohz_full= or a cpuset partition): other tasks, IRQs and kernel work run there too; isolate them with `rtlab tune`, isolcpus=/nohz_full= on the kernel command line or a cpuset partition",
                exposed.with_noun(),
                if exposed.len() == 1 { "is" } else { "are" }
            ),
        ));
    }
    let slot = config.series_slot();
    if slot > model::Nanos::SECOND {
        out.push(Warning::new(
            "series-coarse",
            format!(
                "the run is planned for {}: the maximum-over-time series keeps one slot per {slot} (at most {} slots per CPU, so memory stays bounded); the histogram, percentiles and worst samples are exact as always",
                config.planned(),
                model::limits::MAX_SERIES_SLOTS
            ),
        ));
    }
    out.extend(choices(config));
    out
}

/// A `--workload` whose share of each interval reaches the RT throttling limit: a SCHED_FIFO
/// or SCHED_RR thread that runs that share is stopped for the rest of each throttling period,
/// and its jobs then miss their deadlines for the kernel's reason, not the machine's latency.
fn workload_throttled(config: &Config, host: &HostInfo) -> Option<Warning> {
    let workload = config.workload?;
    let runtime_us = host.sched_rt_runtime_us.filter(|r| *r >= 0)?;
    let period_us = host.sched_rt_period_us.unwrap_or(1_000_000).max(1);
    if !matches!(config.policy, Policy::Fifo | Policy::Rr) {
        return None;
    }
    let asked = workload.runtime.get() as f64 / config.interval.get().max(1) as f64;
    let allowed = runtime_us as f64 / period_us as f64;
    (asked >= allowed).then(|| {
        Warning::new(
            "workload-rt-throttling",
            format!(
                "--workload {} of every {} asks {:.1}% of each measured CPU and RT throttling (kernel.sched_rt_runtime_us {runtime_us} of {period_us}) stops real-time tasks past {:.1}%: the jobs will be stopped for up to {} us of every {} us and miss deadlines for it; give a workload below {:.0}% of --interval, or set `sysctl kernel.sched_rt_runtime_us=-1`",
                workload.runtime,
                config.interval,
                asked * 100.0,
                allowed * 100.0,
                period_us - runtime_us,
                period_us,
                allowed * 100.0,
            ),
        )
    })
}

/// The warnings the configuration's own choices earn (policy, memory, idle states,
/// priority 99, SCHED_DEADLINE).
fn choices(config: &Config) -> Vec<Warning> {
    let mut out = Vec::new();
    if !config.policy.is_realtime() {
        out.push(Warning::new(
            "policy-not-realtime",
            format!(
                "--policy {} is not a real-time policy: the figures show how a normal task is scheduled, not real-time latency",
                config.policy.as_str()
            ),
        ));
    }
    if !config.mlock {
        out.push(Warning::new(
            "no-mlock",
            "memory is not locked (--no-mlock): a page fault can land in a measurement",
        ));
    }
    if config.dma_latency_us.is_none() {
        out.push(Warning::new(
            "dma-latency-off",
            "/dev/cpu_dma_latency is not held (--dma-latency off): deep idle states add their exit latency to wake-ups",
        ));
    }
    if config.priority == 99 {
        out.push(Warning::new(
            "priority-99",
            "measuring at priority 99 (--allow-prio-99) starves kernel threads that run at 99 (migration, watchdogs, some IRQ threads) while a thread runs",
        ));
    }
    if config.policy == Policy::Deadline {
        out.push(Warning::new(
            "deadline-policy",
            "SCHED_DEADLINE threads are woken by the deadline scheduler's own timer as well as by the sleep; compare such results only with other deadline runs",
        ));
    }
    out
}

/// A warning when rtlab runs in a container (the `in-container` code): the host facts are the
/// container's view, and the CPUs may be shared with other containers. It is a warning, not a
/// host field, so that results stay readable by servers and tools of earlier versions.
fn container_warning(root: &Root) -> Option<Warning> {
    sys::container::detect(root).map(|c| container_warning_for(&c))
}

/// The warnings about where rtlab runs: in a container ([`container_warning`]) and in a
/// virtual machine, whose hypervisor may stop a virtual CPU at any moment, so its figures
/// include the host's scheduling and say little of bare metal.
pub fn placement_warnings(root: &Root) -> Vec<Warning> {
    let vm = sys::cpu::hypervisor(root).map(|h| {
        Warning::new(
            "virtual-machine",
            format!(
                "measured in a virtual machine ({h}): the hypervisor can stop a virtual CPU at any moment, so these figures hold for this guest, not for bare metal"
            ),
        )
    });
    container_warning(root).into_iter().chain(vm).collect()
}

fn container_warning_for(c: &Container) -> Warning {
    let exclusive = if c.is_kubernetes() {
        "the kubelet's static CPU manager gives a Guaranteed pod whole CPUs of its own"
    } else {
        "`--cpuset-cpus` for this container, and CPUs outside them for every other"
    };
    Warning::new(
        "in-container",
        format!(
            "rtlab ran in a container ({}: {}): the CPUs, isolation and tuning in this result are what the container sees, and other containers may run on the measured CPUs unless this one has them alone ({exclusive})",
            c.engine, c.evidence
        ),
    )
}

/// What decides whether this process may use a real-time policy, read once.
#[derive(Clone, Debug)]
pub struct RtAccess {
    /// The capabilities and limits in effect.
    pub privileges: Privileges,
    /// The container rtlab runs in, if any.
    pub container: Option<Container>,
    /// The real-time budget of its cgroup v1 cpu cgroup (CONFIG_RT_GROUP_SCHED only).
    pub rt_group: Option<RtGroup>,
    /// `kernel.sched_rt_runtime_us`: -1 turns RT bandwidth control off, and with it the
    /// cgroup budget check.
    pub sched_rt_runtime_us: Option<i64>,
}

impl RtAccess {
    /// Reads them: the process's privileges, and the rest under `root`.
    pub fn current(root: &Root) -> RtAccess {
        RtAccess {
            privileges: Privileges::current(),
            container: sys::container::detect(root),
            rt_group: sys::container::rt_group(root),
            sched_rt_runtime_us: root.read_value("/proc/sys/kernel/sched_rt_runtime_us"),
        }
    }

    /// Why `command` may not run threads of `policy` at `priority`, in one line naming the
    /// cause (no CAP_SYS_NICE and RLIMIT_RTPRIO too low, or a cgroup without real-time
    /// budget) and the fix (for the container engine when in one); `None` when allowed.
    pub fn refusal(&self, command: &str, policy: Policy, priority: u8) -> Option<String> {
        if !policy.is_realtime() {
            return None;
        }
        let p = &self.privileges;
        let allowed = if policy.takes_priority() {
            p.can_use_priority(priority)
        } else {
            p.euid == 0 || p.cap_sys_nice
        };
        let what = format!(
            "SCHED_{} threads{}",
            policy.as_str().to_uppercase(),
            if policy.takes_priority() {
                format!(" at priority {priority}")
            } else {
                String::new()
            }
        );
        if !allowed {
            let rtprio = p.rtprio_limit.map_or("unlimited".into(), |l| l.to_string());
            let cause = if p.euid == 0 {
                format!(
                    "it runs as root, but CAP_SYS_NICE is not in its effective capabilities (CapEff in /proc/self/status) and RLIMIT_RTPRIO is {rtprio}"
                )
            } else {
                format!("it has no CAP_SYS_NICE and RLIMIT_RTPRIO is {rtprio}")
            };
            let host_fix = if p.euid == 0 {
                "start rtlab with CAP_SYS_NICE kept (what dropped it: `capsh --print`, a systemd unit's CapabilityBoundingSet=, setpriv), or grant it to the binary (setcap cap_sys_nice,cap_ipc_lock+ep $(command -v rtlab))"
            } else {
                sys::privilege::rt_fix_hint()
            };
            return Some(format!(
                "{command} needs root or CAP_SYS_NICE to run {what}: {cause}; {}{host_fix}",
                self.container_fix("SYS_NICE"),
            ));
        }
        let group = self.rt_group.as_ref()?;
        let bandwidth_on = self.sched_rt_runtime_us.is_none_or(|r| r >= 0);
        if !policy.takes_priority() || group.rt_runtime_us != 0 || !bandwidth_on {
            return None;
        }
        let dir = group.dir.display();
        let engine_fix = match self.container.as_ref().map(|c| c.engine.as_str()) {
            Some("docker") => {
                "start the container with `docker run --cpu-rt-runtime=950000` (the daemon needs `--cpu-rt-runtime` too, and `--ulimit rtprio=99`), "
            }
            Some("podman") => "start the container with `podman run --cpu-rt-runtime=950000`, ",
            Some("kubernetes") => {
                "Kubernetes cannot give a pod a real-time budget: on the node, run the pod's container in a cgroup that has one, or "
            }
            _ => "",
        };
        Some(format!(
            "{command} cannot run {what}: its cpu cgroup {dir} grants real-time tasks no time (cpu.rt_runtime_us = 0 with CONFIG_RT_GROUP_SCHED), so the kernel refuses SCHED_FIFO and SCHED_RR with EPERM even to root; {engine_fix}give the cgroup a budget (`echo 950000 > {dir}/cpu.rt_runtime_us`, its parents first), move rtlab to the root cpu cgroup, or turn RT bandwidth control off with `sysctl kernel.sched_rt_runtime_us=-1`"
        ))
    }

    /// What to add to the container for a capability (`SYS_NICE`, `IPC_LOCK`), followed by
    /// "or: " when not in a container (then nothing).
    fn container_fix(&self, cap: &str) -> String {
        let Some(c) = &self.container else {
            return String::new();
        };
        let how = match c.engine.as_str() {
            "kubernetes" => {
                format!(" with `securityContext.capabilities.add: [{cap}]` in the pod's container")
            }
            engine @ ("docker" | "podman") => format!(" with `{engine} run --cap-add {cap}`"),
            _ => " in its engine's settings".to_string(),
        };
        format!(
            "in this {} container ({}), add CAP_{cap}{how}; otherwise ",
            c.engine, c.evidence
        )
    }

    /// The fix for a refused mlockall when the container is what withholds CAP_IPC_LOCK;
    /// `None` outside a container or with the capability.
    pub fn mlock_hint(&self) -> Option<String> {
        if self.privileges.cap_ipc_lock || self.container.is_none() {
            return None;
        }
        let fix = self.container_fix("IPC_LOCK");
        Some(format!(
            "{fix}raise RLIMIT_MEMLOCK (`--ulimit memlock=-1` for docker and podman), or pass --no-mlock"
        ))
    }

    /// Where a container keeps `/dev/cpu_dma_latency` from rtlab, and how to give it; `None`
    /// outside a container.
    pub fn dma_latency_hint(&self) -> Option<String> {
        let c = self.container.as_ref()?;
        Some(if c.is_kubernetes() {
            "in a Kubernetes pod, mount the host's /dev/cpu_dma_latency (a hostPath volume of type CharDevice) and run the container privileged, which lets it open devices".to_string()
        } else {
            format!(
                "in a {} container, give it the device (`--device /dev/cpu_dma_latency` for docker and podman) or run it privileged",
                c.engine
            )
        })
    }
}

/// Holds `/dev/cpu_dma_latency` at `--dma-latency` for a real run; a warning when it cannot.
pub(crate) fn hold_dma_latency(
    config: &Config,
    env: &crate::env::Environment,
    real: bool,
    warnings: &mut Vec<Warning>,
) -> Option<sys::pmqos::DmaLatencyRequest> {
    let (true, Some(us)) = (real, config.dma_latency_us) else {
        return None;
    };
    match sys::pmqos::DmaLatencyRequest::hold(&env.root, us) {
        Ok(guard) => Some(guard),
        Err(e) => {
            let hint = RtAccess::current(&env.root)
                .dma_latency_hint()
                .map_or(String::new(), |h| format!("; {h}"));
            warnings.push(Warning::new(
                "dma-latency-unavailable",
                format!("could not hold /dev/cpu_dma_latency at {us} us ({e}): deep idle states may add their exit latency{hint}"),
            ));
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Config, Request};
    use model::{CpuSet, Nanos};

    fn config(f: impl Fn(&mut Request)) -> Config {
        let mut r = Request {
            cpus: CpuSet::from_cpus([0, 1, 2, 3]),
            ..Request::default()
        };
        f(&mut r);
        Config::from_request(&r).unwrap()
    }

    fn codes(w: &[Warning]) -> Vec<&str> {
        w.iter().map(|w| w.code.as_str()).collect()
    }

    #[test]
    fn a_tuned_rt_host_gets_no_warning() {
        let host = HostInfo {
            preempt_rt: true,
            sched_rt_runtime_us: Some(-1),
            isolated_cpus: CpuSet::from_cpus([0, 1]),
            nohz_full_cpus: CpuSet::from_cpus([2, 3]),
            ..HostInfo::default()
        };
        assert!(warnings(&config(|_| {}), &host).is_empty());
    }

    #[test]
    fn cpus_a_cpuset_sets_apart_count_as_isolated() {
        let host = HostInfo {
            preempt_rt: true,
            sched_rt_runtime_us: Some(-1),
            isolated_cpus: CpuSet::from_cpus([0]),
            cpuset_isolated_cpus: CpuSet::from_cpus([1, 2, 3]),
            ..HostInfo::default()
        };
        assert!(warnings(&config(|_| {}), &host).is_empty());
        let host = HostInfo {
            cpuset_isolated_cpus: CpuSet::from_cpus([1, 2]),
            ..host
        };
        let w = warnings(&config(|_| {}), &host);
        assert_eq!(codes(&w), ["cpu-not-isolated"]);
        assert!(
            w[0].message.contains("measured CPU 3 is not"),
            "{}",
            w[0].message
        );
    }

    #[test]
    fn a_workload_at_the_rt_limit_is_warned_of_throttling() {
        let host = |runtime: i64| HostInfo {
            preempt_rt: true,
            sched_rt_runtime_us: Some(runtime),
            sched_rt_period_us: Some(1_000_000),
            isolated_cpus: CpuSet::from_cpus([0, 1, 2, 3]),
            ..HostInfo::default()
        };
        let with = |work_us: u64| {
            config(|r| {
                r.interval = Some(Nanos::from_us(1000));
                r.workload = Some(Nanos::from_us(work_us));
            })
        };
        // 960 of 1000 us against 95 %: warned, with the limit and the way out.
        let w = warnings(&with(960), &host(950_000));
        let found = codes(&w);
        assert!(found.contains(&"workload-rt-throttling"), "{found:?}");
        let m = &w
            .iter()
            .find(|w| w.code == "workload-rt-throttling")
            .unwrap()
            .message;
        assert!(m.contains("asks 96.0%") && m.contains("past 95.0%"), "{m}");
        assert!(m.contains("50000 us of every 1000000 us"), "{m}");
        // Below the limit, or without one: nothing.
        let w = warnings(&with(900), &host(950_000));
        assert!(!codes(&w).contains(&"workload-rt-throttling"));
        let w = warnings(&with(960), &host(-1));
        assert!(!codes(&w).contains(&"workload-rt-throttling"));
    }

    #[test]
    fn an_untuned_host_is_called_out() {
        let host = HostInfo {
            preempt_rt: false,
            preempt_model: Some("voluntary".into()),
            sched_rt_runtime_us: Some(950_000),
            sched_rt_period_us: Some(1_000_000),
            isolated_cpus: CpuSet::from_cpus([3]),
            ..HostInfo::default()
        };
        let w = warnings(
            &config(|r| {
                r.no_mlock = true;
                r.dma_latency_us = Some(None);
            }),
            &host,
        );
        assert_eq!(
            codes(&w),
            vec![
                "rt-throttling",
                "not-preempt-rt",
                "cpu-not-isolated",
                "no-mlock",
                "dma-latency-off"
            ]
        );
        assert!(
            w[0].message.contains("50000 us of every 1000000 us"),
            "{}",
            w[0].message
        );
        assert!(w[1].message.contains("voluntary"));
        assert!(w[2].message.contains("CPUs 0-2 "), "{}", w[2].message);
    }

    fn access(f: impl Fn(&mut RtAccess)) -> RtAccess {
        let mut a = RtAccess {
            privileges: Privileges {
                euid: 0,
                cap_sys_nice: true,
                cap_ipc_lock: true,
                rtprio_limit: Some(0),
                memlock_limit: Some(8 << 20),
            },
            container: None,
            rt_group: None,
            sched_rt_runtime_us: Some(950_000),
        };
        f(&mut a);
        a
    }

    fn docker() -> Option<Container> {
        Some(Container {
            engine: "docker".into(),
            evidence: "/.dockerenv exists".into(),
        })
    }

    fn pod() -> Option<Container> {
        Some(Container {
            engine: "kubernetes".into(),
            evidence: "kubepods in /proc/self/cgroup".into(),
        })
    }

    fn zero_budget() -> Option<RtGroup> {
        Some(RtGroup {
            dir: "/sys/fs/cgroup/cpu/docker/ab12".into(),
            rt_runtime_us: 0,
        })
    }

    #[test]
    fn a_capable_process_is_let_through() {
        let a = access(|_| {});
        assert_eq!(a.refusal("rtlab measure", Policy::Fifo, 95), None);
        assert_eq!(a.mlock_hint(), None);
        assert_eq!(a.dma_latency_hint(), None);
        // A budget, or RT bandwidth control off, lets the cgroup through too.
        let budget = access(|a| {
            a.rt_group = Some(RtGroup {
                dir: "/sys/fs/cgroup/cpu".into(),
                rt_runtime_us: 950_000,
            })
        });
        assert_eq!(budget.refusal("rtlab measure", Policy::Fifo, 95), None);
        let unthrottled = access(|a| {
            a.rt_group = zero_budget();
            a.sched_rt_runtime_us = Some(-1);
        });
        assert_eq!(unthrottled.refusal("rtlab measure", Policy::Fifo, 95), None);
        // Normal policies need nothing.
        let nobody = access(|a| {
            a.privileges.euid = 1000;
            a.privileges.cap_sys_nice = false;
            a.rt_group = zero_budget();
        });
        assert_eq!(nobody.refusal("rtlab measure", Policy::Other, 0), None);
    }

    #[test]
    fn root_without_sys_nice_in_a_pod_is_told_the_security_context() {
        let a = access(|a| {
            a.privileges.cap_sys_nice = false;
            a.container = pod();
        });
        let msg = a.refusal("rtlab measure", Policy::Fifo, 95).unwrap();
        assert!(msg.starts_with("rtlab measure needs root or CAP_SYS_NICE to run SCHED_FIFO threads at priority 95: it runs as root, but CAP_SYS_NICE is not in its effective capabilities (CapEff"), "{msg}");
        assert!(msg.contains("RLIMIT_RTPRIO is 0"), "{msg}");
        assert!(msg.contains("kubepods in /proc/self/cgroup"), "{msg}");
        assert!(
            msg.contains("securityContext.capabilities.add: [SYS_NICE]"),
            "{msg}"
        );
        assert!(msg.contains("setcap"), "{msg}");
        assert!(!msg.contains('\n'));
    }

    #[test]
    fn a_user_with_a_low_rtprio_limit_is_told_the_limit() {
        let a = access(|a| {
            a.privileges.euid = 1000;
            a.privileges.cap_sys_nice = false;
            a.privileges.rtprio_limit = Some(50);
            a.container = docker();
        });
        assert_eq!(a.refusal("rtlab measure", Policy::Fifo, 50), None);
        let msg = a.refusal("rtlab measure", Policy::Rr, 51).unwrap();
        assert!(
            msg.contains("no CAP_SYS_NICE and RLIMIT_RTPRIO is 50"),
            "{msg}"
        );
        assert!(msg.contains("`docker run --cap-add SYS_NICE`"), "{msg}");
        assert!(msg.contains("ulimit -r 99"), "{msg}");
        // Outside a container only the host's fixes are named.
        let host = access(|a| {
            a.privileges.euid = 1000;
            a.privileges.cap_sys_nice = false;
        });
        let msg = host.refusal("rtlab measure", Policy::Fifo, 1).unwrap();
        assert!(!msg.contains("container"), "{msg}");
        // SCHED_DEADLINE takes no rlimit.
        let msg = host.refusal("rtlab measure", Policy::Deadline, 0).unwrap();
        assert!(msg.contains("SCHED_DEADLINE threads:"), "{msg}");
    }

    #[test]
    fn a_cgroup_without_rt_budget_is_named_with_its_fixes() {
        let a = access(|a| {
            a.rt_group = zero_budget();
            a.container = docker();
        });
        let msg = a.refusal("rtlab measure", Policy::Fifo, 95).unwrap();
        assert!(
            msg.contains("cpu cgroup /sys/fs/cgroup/cpu/docker/ab12 grants real-time tasks no time (cpu.rt_runtime_us = 0"),
            "{msg}"
        );
        assert!(msg.contains("--cpu-rt-runtime=950000"), "{msg}");
        assert!(
            msg.contains("echo 950000 > /sys/fs/cgroup/cpu/docker/ab12/cpu.rt_runtime_us"),
            "{msg}"
        );
        assert!(
            msg.contains("sysctl kernel.sched_rt_runtime_us=-1"),
            "{msg}"
        );
        // The cgroup budget does not govern SCHED_DEADLINE.
        assert_eq!(a.refusal("rtlab measure", Policy::Deadline, 0), None);
        // A missing capability is named first: it is checked first by the kernel too.
        let both = access(|a| {
            a.rt_group = zero_budget();
            a.privileges.cap_sys_nice = false;
        });
        let msg = both.refusal("rtlab measure", Policy::Fifo, 95).unwrap();
        assert!(msg.contains("CAP_SYS_NICE is not in"), "{msg}");
    }

    #[test]
    fn a_container_without_ipc_lock_or_the_device_gets_its_fix() {
        let a = access(|a| {
            a.privileges.cap_ipc_lock = false;
            a.container = pod();
        });
        let msg = a.mlock_hint().unwrap();
        assert!(
            msg.contains("securityContext.capabilities.add: [IPC_LOCK]"),
            "{msg}"
        );
        assert!(a.dma_latency_hint().unwrap().contains("hostPath"));
        let d = access(|a| {
            a.privileges.cap_ipc_lock = false;
            a.container = docker();
        });
        assert!(
            d.mlock_hint()
                .unwrap()
                .contains("docker run --cap-add IPC_LOCK")
        );
        assert!(
            d.dma_latency_hint()
                .unwrap()
                .contains("--device /dev/cpu_dma_latency")
        );
        // Outside a container the host's own error says enough.
        let host = access(|a| a.privileges.cap_ipc_lock = false);
        assert_eq!(host.mlock_hint(), None);
    }

    #[test]
    fn a_run_in_a_container_is_marked_with_how_to_own_its_cpus() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::at(dir.path());
        assert_eq!(container_warning(&root), None, "the bare host");
        std::fs::write(root.path("/.dockerenv"), "").unwrap();
        let w = container_warning(&root).unwrap();
        assert_eq!(w.code, "in-container");
        assert!(
            w.message
                .contains("in a container (docker: /.dockerenv exists)")
        );
        assert!(w.message.contains("--cpuset-cpus"), "{}", w.message);
        std::fs::create_dir_all(root.path("/proc/self")).unwrap();
        std::fs::write(
            root.path("/proc/self/cgroup"),
            "0::/kubepods.slice/kubepods-pod1.slice/cri-containerd-ab.scope\n",
        )
        .unwrap();
        let w = container_warning(&root).unwrap();
        assert!(
            w.message.contains("in a container (kubernetes: kubepods"),
            "{}",
            w.message
        );
        assert!(w.message.contains("static CPU manager"), "{}", w.message);
    }

    #[test]
    fn a_run_in_a_virtual_machine_is_marked_with_its_hypervisor() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::at(dir.path());
        let codes = |root: &Root| -> Vec<String> {
            placement_warnings(root)
                .into_iter()
                .map(|w| w.code)
                .collect()
        };
        std::fs::create_dir_all(root.path("/proc")).unwrap();
        std::fs::write(
            root.path("/proc/cpuinfo"),
            "processor\t: 0\nflags\t\t: fpu sse2\n",
        )
        .unwrap();
        assert!(codes(&root).is_empty(), "bare metal");
        std::fs::write(
            root.path("/proc/cpuinfo"),
            "processor\t: 0\nflags\t\t: fpu sse2 hypervisor\n",
        )
        .unwrap();
        std::fs::create_dir_all(root.path("/sys/class/dmi/id")).unwrap();
        std::fs::write(root.path("/sys/class/dmi/id/sys_vendor"), "QEMU\n").unwrap();
        let w = placement_warnings(&root);
        assert_eq!(codes(&root), ["virtual-machine"]);
        assert!(
            w[0].message.contains("virtual machine (QEMU)"),
            "{}",
            w[0].message
        );
    }
}

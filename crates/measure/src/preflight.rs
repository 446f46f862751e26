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
mod tests;

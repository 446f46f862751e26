//! What rtlab records about the machine a result came from: kernel, preemption model, boot
//! command line, clock source, and per-CPU topology detailed enough to group heterogeneous
//! (big.LITTLE, hybrid) cores into clusters, as the Linaro 2023 talk's tables do.
//!
//! Every field that a kernel may lack is optional: absent means "the kernel did not say".

use serde::{Deserialize, Serialize};

use crate::cpuset::CpuSet;

/// The host a result was measured on.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostInfo {
    /// `/proc/sys/kernel/hostname`.
    pub hostname: String,
    /// Kernel release, `/proc/sys/kernel/osrelease` (e.g. `6.1.0-50-rt-arm64`).
    pub kernel_release: String,
    /// Kernel version string, `/proc/sys/kernel/version` (e.g. `#1 SMP PREEMPT_RT ...`).
    pub kernel_version: String,
    /// Machine architecture (`x86_64`, `aarch64`, ...).
    pub arch: String,
    /// Whether the kernel is PREEMPT_RT (`/sys/kernel/realtime` is 1, or the version string
    /// says PREEMPT_RT).
    pub preempt_rt: bool,
    /// The preemption model in effect: `none`, `voluntary`, `full`, `lazy` or `rt`, when known.
    pub preempt_model: Option<String>,
    /// Whether the model can be changed at boot or run time (PREEMPT_DYNAMIC).
    pub preempt_dynamic: bool,
    /// Where the preemption model was read from (`/sys/kernel/debug/sched/preempt`, the kernel
    /// version string, or the kernel config).
    pub preempt_model_source: Option<String>,
    /// Boot command line, `/proc/cmdline`.
    pub cmdline: String,
    /// CPU model name (x86 `model name`, ARM `Hardware`/`Model` or the implementer and part).
    pub cpu_model: Option<String>,
    /// Current clock source.
    pub clocksource: Option<String>,
    /// Clock sources the kernel offers.
    pub available_clocksources: Vec<String>,
    /// CPUs the kernel could bring up (`/sys/devices/system/cpu/possible`).
    pub possible_cpus: CpuSet,
    /// CPUs online now.
    pub online_cpus: CpuSet,
    /// CPUs isolated from the scheduler (`/sys/devices/system/cpu/isolated`).
    pub isolated_cpus: CpuSet,
    /// CPUs running without the periodic tick (`/sys/devices/system/cpu/nohz_full`).
    pub nohz_full_cpus: CpuSet,
    /// CPUs that cpusets set apart (a valid cgroup v2 partition, v1 exclusive cpusets without
    /// load balancing at the root, as `rtlab tune apply` makes them). Absent in results
    /// written before rtlab recorded it.
    #[serde(default, skip_serializing_if = "CpuSet::is_empty")]
    pub cpuset_isolated_cpus: CpuSet,
    /// `/proc/sys/kernel/sched_rt_runtime_us`; -1 means RT throttling is off.
    pub sched_rt_runtime_us: Option<i64>,
    /// `/proc/sys/kernel/sched_rt_period_us`.
    pub sched_rt_period_us: Option<i64>,
    /// One entry per online CPU.
    pub cpus: Vec<CpuInfo>,
}

/// Topology and capability of one CPU.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CpuInfo {
    /// CPU number.
    pub cpu: u32,
    /// `topology/physical_package_id`.
    pub package: Option<u32>,
    /// `topology/die_id`.
    pub die: Option<u32>,
    /// `topology/cluster_id` (ARM clusters; shared L2 on x86).
    pub cluster: Option<u32>,
    /// `topology/core_id`.
    pub core: Option<u32>,
    /// SMT siblings, this CPU included (`topology/thread_siblings_list`).
    pub siblings: Option<CpuSet>,
    /// Relative capacity, 1024 for the biggest core (`cpu_capacity`, ARM/RISC-V).
    pub capacity: Option<u32>,
    /// Hybrid core type: `performance` or `efficiency` (Intel `cpu_core` / `cpu_atom`).
    pub core_type: Option<String>,
    /// Highest frequency in kHz (`cpufreq/cpuinfo_max_freq`).
    pub max_freq_khz: Option<u64>,
    /// Per-CPU model as `/proc/cpuinfo` gives it (x86 model name; ARM implementer:part,
    /// e.g. `0x41:0xd05`).
    pub model: Option<String>,
    /// NUMA node.
    pub node: Option<u32>,
}

impl CpuInfo {
    /// A key that is equal for CPUs of the same kind: capacity, core type, model and maximum
    /// frequency. CPUs with the same key belong in one column group of a comparison table.
    pub fn kind_key(&self) -> (Option<u32>, Option<String>, Option<String>, Option<u64>) {
        (
            self.capacity,
            self.core_type.clone(),
            self.model.clone(),
            self.max_freq_khz,
        )
    }
}

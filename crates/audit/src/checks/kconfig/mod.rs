//! The `kconfig.*` checks: the kernel build configuration (`--kconfig FILE`,
//! `/proc/config.gz` or `/boot/config-<release>`), judged for real time and for the profile.
//! Every check reports `unknown`, with the context's reason, when no config can be read.
//!
//! - [`realtime`]: the preemption model, timer frequency and tick, high-resolution timers, IRQ
//!   threading, and whether the config is the running kernel's.
//! - [`isolation`]: cpusets, CPU isolation, RCU offloading and boosting, RT group scheduling.
//! - [`debug`]: latency tracers and the debug options the profile wants or refuses.
//! - [`tuning`]: boot defaults of frequency scaling, I/O latency control, NUMA balancing and
//!   transparent huge pages.
//!
//! Which options matter and why is the table in [`crate::kconfig_diff::options`] and
//! [`crate::kconfig_diff::choices`], shared with
//! `rtlab kconfig diff`. Evidence quotes the config line as written (`CONFIG_HZ=250`,
//! `# CONFIG_NO_HZ_FULL is not set`, `CONFIG_X absent`).

use model::audit::{Group, Severity};

use crate::check::Check;

mod debug;
mod isolation;
mod judged;
mod realtime;
mod tuning;

/// The checks of this group.
pub(crate) const CHECKS: &[Check] = &[
    Check {
        id: "kconfig.preempt_rt",
        title: "PREEMPT_RT in the config",
        group: Group::Kernel,
        severity: Severity::Fail,
        why: "Only a PREEMPT_RT kernel bounds scheduling latency: spinlocks sleep, IRQ handlers run in threads and nearly all kernel code is preemptible",
        run: realtime::preempt_rt,
    },
    Check {
        id: "kconfig.hz",
        title: "Timer frequency (HZ)",
        group: Group::Kernel,
        severity: Severity::Warn,
        why: "The tick period is the granularity of jiffy timeouts and tick-based scheduler accounting; RT kernels are commonly built with CONFIG_HZ_1000=y",
        run: realtime::hz,
    },
    Check {
        id: "kconfig.no_hz_full",
        title: "Tickless RT CPUs (NO_HZ_FULL)",
        group: Group::Kernel,
        severity: Severity::Warn,
        why: "Without NO_HZ_FULL the scheduler tick interrupts every busy CPU, RT CPUs included, HZ times a second",
        run: realtime::no_hz_full,
    },
    Check {
        id: "kconfig.high_res_timers",
        title: "High-resolution timers",
        group: Group::Kernel,
        severity: Severity::Fail,
        why: "Without high-resolution timers, sleeps and timer wakeups are rounded up to the next tick: milliseconds of latency",
        run: realtime::high_res_timers,
    },
    Check {
        id: "kconfig.irq_forced_threading",
        title: "Threaded IRQ handlers",
        group: Group::Kernel,
        severity: Severity::Warn,
        why: "Forced IRQ threading runs handlers in threads whose priority can be set below the RT application's; PREEMPT_RT relies on it",
        run: realtime::irq_forced_threading,
    },
    Check {
        id: "kconfig.matches_running",
        title: "Config of the running kernel",
        group: Group::Kernel,
        severity: Severity::Info,
        why: "The kconfig findings describe the running kernel only if the config judged is its own; configs drift across upgrades",
        run: realtime::matches_running,
    },
    Check {
        id: "kconfig.cpusets",
        title: "Cpusets",
        group: Group::Kernel,
        severity: Severity::Warn,
        why: "Cpusets and cgroup v2 cpuset partitions set RT CPUs apart from the rest of the system",
        run: isolation::cpusets,
    },
    Check {
        id: "kconfig.cpu_isolation",
        title: "CPU isolation support",
        group: Group::Kernel,
        severity: Severity::Warn,
        why: "Without CPU_ISOLATION the kernel ignores isolcpus= and the nohz_full= housekeeping split: nothing keeps kernel work off RT CPUs",
        run: isolation::cpu_isolation,
    },
    Check {
        id: "kconfig.rcu_nocb_cpu",
        title: "RCU callback offloading",
        group: Group::Kernel,
        severity: Severity::Warn,
        why: "RCU_NOCB_CPU lets rcu_nocbs= move RCU callback processing off RT CPUs into kthreads that run on housekeeping CPUs",
        run: isolation::rcu_nocb_cpu,
    },
    Check {
        id: "kconfig.rcu_boost",
        title: "RCU priority boosting",
        group: Group::Kernel,
        severity: Severity::Info,
        why: "An RCU reader preempted by busy RT tasks stalls grace periods, and freed memory piles up, unless RCU boosting raises its priority",
        run: isolation::rcu_boost,
    },
    Check {
        id: "kconfig.rt_group_sched",
        title: "RT group scheduling",
        group: Group::Kernel,
        severity: Severity::Warn,
        why: "With RT_GROUP_SCHED, SCHED_FIFO and SCHED_RR fail with EPERM in any cgroup that has no RT runtime budget",
        run: isolation::rt_group_sched,
    },
    Check {
        id: "kconfig.latency_tracers",
        title: "Latency tracers",
        group: Group::Kernel,
        severity: Severity::Info,
        why: "Explaining a latency spike takes the timerlat, osnoise, hwlat, wakeup and function_graph tracers; rtla timerlat and rtlab measure --engine timerlat need TIMERLAT_TRACER; kernel.tracers says whether the running kernel offers them now",
        run: debug::latency_tracers,
    },
    Check {
        id: "kconfig.debug",
        title: "Debug options for the profile",
        group: Group::Kernel,
        severity: Severity::Warn,
        why: "Lock and memory debugging catches PREEMPT_RT bugs in a validation kernel but adds latency to every lock and allocation in production",
        run: debug::debug_options,
    },
    Check {
        id: "kconfig.cpufreq_default_governor",
        title: "Default cpufreq governor",
        group: Group::Kernel,
        severity: Severity::Info,
        why: "CPUs boot under the default governor; any but performance changes the clock under RT tasks until it is switched at run time",
        run: tuning::cpufreq_default_governor,
    },
    Check {
        id: "kconfig.blk_cgroup_iolatency",
        title: "I/O latency cgroup control",
        group: Group::Kernel,
        severity: Severity::Info,
        why: "BLK_CGROUP_IOLATENCY lets io.latency protect an RT cgroup's block I/O from bulk writers; RT builds commonly enable it",
        run: tuning::blk_cgroup_iolatency,
    },
    Check {
        id: "kconfig.numa_balancing",
        title: "NUMA balancing default",
        group: Group::Kernel,
        severity: Severity::Info,
        why: "Automatic NUMA balancing unmaps pages to sample accesses and migrates them, so RT tasks take page faults at random",
        run: tuning::numa_balancing,
    },
    Check {
        id: "kconfig.transparent_hugepage",
        title: "Transparent huge page default",
        group: Group::Kernel,
        severity: Severity::Info,
        why: "With THP always on, page faults may stall in compaction and khugepaged rewrites page tables under running tasks",
        run: tuning::transparent_hugepage,
    },
];

#[cfg(test)]
pub(super) mod testing {
    //! Contexts over the fixture configs of `fixtures/kconfig/` and over inline text.

    use model::audit::Profile;
    use testkit::FakeRoot;

    use crate::context::{Ctx, Options};
    use crate::outcome::Outcome;

    /// fixtures/kconfig/config-6.1.0-50-rt-arm64 (Debian 12 PREEMPT_RT arm64, 6.1.176).
    pub(crate) const RT_ARM64: &str =
        include_str!("../../../../../fixtures/kconfig/config-6.1.0-50-rt-arm64");
    /// fixtures/kconfig/config-6.1.0-56-amd64 (Debian 12 generic amd64, 6.1.192).
    pub(crate) const AMD64: &str =
        include_str!("../../../../../fixtures/kconfig/config-6.1.0-56-amd64");

    /// A machine running `release` whose `/boot/config-<release>` is `text`; the FakeRoot
    /// must outlive the context.
    pub(crate) fn machine(release: &str, version: &str, text: &str) -> FakeRoot {
        FakeRoot::new()
            .cpus(2)
            .kernel(release, version)
            .file(&format!("/boot/config-{release}"), text)
    }

    /// Runs `check` on a machine whose config is `text`, in `profile`.
    pub(crate) fn run_on(text: &str, profile: Profile, check: fn(&Ctx) -> Outcome) -> Outcome {
        let fake = machine("6.1.0-test", "#1 SMP", text);
        let ctx = Ctx::new(
            fake.root(),
            Options {
                profile,
                ..Options::default()
            },
        );
        check(&ctx)
    }

    /// The finding of check `id` on a machine whose config is `text`, in `profile`.
    pub(crate) fn finding(text: &str, profile: Profile, id: &str) -> model::audit::Finding {
        let check = super::CHECKS
            .iter()
            .find(|c| c.id == id)
            .unwrap_or_else(|| panic!("no check {id}"));
        check.finding(run_on(text, profile, check.run))
    }

    /// [`run_on`] in the production profile.
    pub(crate) fn run(text: &str, check: fn(&Ctx) -> Outcome) -> Outcome {
        run_on(text, Profile::Production, check)
    }
}

#[cfg(test)]
mod tests {
    use super::judged::{config, list};
    use super::testing::*;
    use super::*;
    use crate::context::Ctx;
    use model::audit::{Profile, Status};

    /// The machines the corpus configs came from, each booted with its own config.
    const RT_MACHINE: (&str, &str) = ("6.1.0-50-rt-arm64", "#1 SMP PREEMPT_RT Debian 6.1.176-1");
    const AMD64_MACHINE: (&str, &str) =
        ("6.1.0-56-amd64", "#1 SMP PREEMPT_DYNAMIC Debian 6.1.192-2");

    fn status(machine_of: (&str, &str), text: &str, profile: Profile, check: &Check) -> Status {
        let fake = machine(machine_of.0, machine_of.1, text);
        let ctx = Ctx::new(
            fake.root(),
            crate::context::Options {
                profile,
                ..Default::default()
            },
        );
        check.finding((check.run)(&ctx)).status
    }

    /// Every check's status on both corpus configs, in both profiles.
    #[test]
    fn corpus_configs_are_judged() {
        use Status::{Fail, Info, Pass, Warn};
        let expected: &[(&str, [Status; 4])] = &[
            // id: RT arm64 production, RT arm64 debug, amd64 production, amd64 debug
            ("kconfig.preempt_rt", [Pass, Pass, Fail, Fail]),
            ("kconfig.hz", [Warn, Warn, Warn, Warn]),
            ("kconfig.no_hz_full", [Pass, Pass, Pass, Pass]),
            ("kconfig.high_res_timers", [Pass, Pass, Pass, Pass]),
            ("kconfig.irq_forced_threading", [Pass, Pass, Pass, Pass]),
            ("kconfig.matches_running", [Pass, Pass, Pass, Pass]),
            ("kconfig.cpusets", [Pass, Pass, Pass, Pass]),
            ("kconfig.cpu_isolation", [Pass, Pass, Pass, Pass]),
            ("kconfig.rcu_nocb_cpu", [Pass, Pass, Pass, Pass]),
            ("kconfig.rcu_boost", [Pass, Pass, Info, Info]),
            ("kconfig.rt_group_sched", [Pass, Pass, Pass, Pass]),
            ("kconfig.latency_tracers", [Pass, Warn, Info, Warn]),
            ("kconfig.debug", [Pass, Warn, Pass, Warn]),
            ("kconfig.cpufreq_default_governor", [Info, Info, Info, Info]),
            ("kconfig.blk_cgroup_iolatency", [Info, Info, Info, Info]),
            ("kconfig.numa_balancing", [Pass, Pass, Info, Info]),
            ("kconfig.transparent_hugepage", [Pass, Pass, Info, Info]),
        ];
        assert_eq!(expected.len(), CHECKS.len());
        for (check, (id, want)) in CHECKS.iter().zip(expected) {
            assert_eq!(check.id, *id);
            let got = [
                status(RT_MACHINE, RT_ARM64, Profile::Production, check),
                status(RT_MACHINE, RT_ARM64, Profile::Debug, check),
                status(AMD64_MACHINE, AMD64, Profile::Production, check),
                status(AMD64_MACHINE, AMD64, Profile::Debug, check),
            ];
            assert_eq!(&got, want, "{id}");
        }
    }

    #[test]
    fn no_config_is_unknown_with_the_reason() {
        let fake = testkit::FakeRoot::new().cpus(1).kernel("6.1.0-x", "#1 SMP");
        let ctx = Ctx::new(fake.root(), Default::default());
        for check in CHECKS {
            let f = check.finding((check.run)(&ctx));
            assert_eq!(f.status, Status::Unknown, "{}", check.id);
            assert!(f.summary.contains("/boot/config-6.1.0-x"), "{}", f.summary);
        }
    }

    #[test]
    fn malformed_configs_do_not_panic() {
        for text in [
            "",
            "\u{0}\u{ff}",
            "CONFIG_HZ=\nCONFIG_HZ_1000\n# is not set\n=",
            "CONFIG_HZ=abc\n",
        ] {
            for check in CHECKS {
                let _ = run(text, check.run);
                let _ = run_on(text, Profile::Debug, check.run);
            }
        }
    }

    #[test]
    fn lines_are_quoted_as_written() {
        let fake = machine(
            "6.1.0-test",
            "#1 SMP",
            "CONFIG_A=y\n# CONFIG_B is not set\nCONFIG_C=m\n",
        );
        let ctx = Ctx::new(fake.root(), Default::default());
        let c = config(&ctx).unwrap();
        assert_eq!(c.path, "/boot/config-6.1.0-test");
        assert_eq!(c.line("CONFIG_A"), "CONFIG_A=y");
        assert_eq!(c.line("CONFIG_B"), "# CONFIG_B is not set");
        assert_eq!(c.line("CONFIG_C"), "CONFIG_C=m");
        assert_eq!(c.line("CONFIG_D"), "CONFIG_D absent");
        assert!(c.on("CONFIG_C") && !c.on("CONFIG_B") && c.mentions("CONFIG_B"));
        let names: Vec<String> = (0..10).map(|i| format!("X{i}")).collect();
        assert_eq!(list(&names[..2]), "X0, X1");
        assert!(
            list(&names).ends_with("X7 ... and 2 more"),
            "{}",
            list(&names)
        );
    }
}

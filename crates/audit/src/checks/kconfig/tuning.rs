//! Boot defaults the config sets for the rest of the system: the cpufreq governor, I/O
//! latency control, automatic NUMA balancing and transparent huge pages. Each can be changed
//! at run time too; the `power` and `sched` checks judge the values in effect.

use super::judged::{config, unset};
use crate::context::Ctx;
use crate::kconfig_diff::choices::{CPUFREQ_GOVERNOR, THP_DEFAULT};
use crate::outcome::Outcome;

/// `kconfig.cpufreq_default_governor`.
pub(super) fn cpufreq_default_governor(ctx: &Ctx) -> Outcome {
    let config = match config(ctx) {
        Ok(c) => c,
        Err(unknown) => return unknown,
    };
    if !config.on("CONFIG_CPU_FREQ") {
        return config.cite(
            Outcome::pass(format!(
                "{}: no frequency scaling, the clock is left as firmware set it",
                unset(&config, "CONFIG_CPU_FREQ")
            )),
            "CONFIG_CPU_FREQ",
        );
    }
    let performance_built = config.on("CONFIG_CPU_FREQ_GOV_PERFORMANCE");
    let Some(governor) = CPUFREQ_GOVERNOR.selected(|n| config.value(n)) else {
        return Outcome::unknown(format!(
            "CONFIG_CPU_FREQ=y but {} sets no CONFIG_CPU_FREQ_DEFAULT_GOV_* option",
            config.path
        ));
    };
    if governor.label == "performance" {
        return config.cite(
            Outcome::pass(format!("{}=y: {}", governor.name, governor.what)),
            governor.name,
        );
    }
    let mut outcome = config.cite(
        Outcome::problem(format!(
            "the default governor is {}: {}{}",
            governor.label,
            governor.what,
            if performance_built {
                "; switch to performance at boot or at run time"
            } else {
                "; and the performance governor is not built"
            }
        )),
        governor.name,
    );
    if !performance_built {
        outcome = config
            .cite(outcome, "CONFIG_CPU_FREQ_GOV_PERFORMANCE")
            .fix_config("CONFIG_CPU_FREQ_GOV_PERFORMANCE=y");
    }
    outcome
        .fix_config("CONFIG_CPU_FREQ_DEFAULT_GOV_PERFORMANCE=y")
        .fix_command("cpupower frequency-set -g performance")
}

/// `kconfig.blk_cgroup_iolatency`.
pub(super) fn blk_cgroup_iolatency(ctx: &Ctx) -> Outcome {
    match config(ctx) {
        Ok(config) => config.want(
            "CONFIG_BLK_CGROUP_IOLATENCY",
            "io.latency can protect an RT cgroup's block I/O",
            "io.latency is unavailable, so bulk writers can delay an RT cgroup's block I/O",
        ),
        Err(unknown) => unknown,
    }
}

/// `kconfig.numa_balancing`.
pub(super) fn numa_balancing(ctx: &Ctx) -> Outcome {
    let config = match config(ctx) {
        Ok(c) => c,
        Err(unknown) => return unknown,
    };
    const NAME: &str = "CONFIG_NUMA_BALANCING";
    const DEFAULT: &str = "CONFIG_NUMA_BALANCING_DEFAULT_ENABLED";
    if !config.on(NAME) {
        return config.cite(
            Outcome::pass(format!(
                "{}: no automatic NUMA balancing",
                unset(&config, NAME)
            )),
            NAME,
        );
    }
    if !config.on(DEFAULT) {
        return config.cite(
            config.cite(
                Outcome::pass(
                    "automatic NUMA balancing is built but off unless /proc/sys/kernel/numa_balancing enables it",
                ),
                NAME,
            ),
            DEFAULT,
        );
    }
    config
        .cite(
            config.cite(
                Outcome::problem(
                    "automatic NUMA balancing is on from boot on multi-node machines: hinting faults and page migration hit RT tasks",
                ),
                NAME,
            ),
            DEFAULT,
        )
        .fix_boot("numa_balancing=disable")
        .fix_write("/proc/sys/kernel/numa_balancing", "0")
        .fix_config(format!("# {DEFAULT} is not set"))
}

/// `kconfig.transparent_hugepage`.
pub(super) fn transparent_hugepage(ctx: &Ctx) -> Outcome {
    let config = match config(ctx) {
        Ok(c) => c,
        Err(unknown) => return unknown,
    };
    const NAME: &str = "CONFIG_TRANSPARENT_HUGEPAGE";
    if !config.on(NAME) {
        return config.cite(
            Outcome::pass(format!(
                "{}: no transparent huge pages",
                unset(&config, NAME)
            )),
            NAME,
        );
    }
    match THP_DEFAULT.selected(|n| config.value(n)) {
        Some(m) if m.label == "always" => config
            .cite(
                Outcome::problem(format!("the THP default is always: {}", m.what)),
                m.name,
            )
            .fix_boot("transparent_hugepage=never")
            .fix_write("/sys/kernel/mm/transparent_hugepage/enabled", "never")
            .fix_config("CONFIG_TRANSPARENT_HUGEPAGE_MADVISE=y"),
        Some(m) => config.cite(
            Outcome::pass(format!("the THP default is {}: {}", m.label, m.what)),
            m.name,
        ),
        None => Outcome::unknown(format!(
            "CONFIG_TRANSPARENT_HUGEPAGE=y but {} sets no CONFIG_TRANSPARENT_HUGEPAGE_<default> option",
            config.path
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;
    use model::audit::Profile;

    #[test]
    fn governor_default() {
        let f = finding(
            AMD64,
            Profile::Production,
            "kconfig.cpufreq_default_governor",
        );
        assert!(
            f.summary.starts_with("the default governor is schedutil"),
            "{}",
            f.summary
        );
        assert_eq!(
            f.evidence[0].value,
            "CONFIG_CPU_FREQ_DEFAULT_GOV_SCHEDUTIL=y"
        );
        assert!(
            run(
                "CONFIG_CPU_FREQ=y\nCONFIG_CPU_FREQ_DEFAULT_GOV_PERFORMANCE=y\n",
                cpufreq_default_governor
            )
            .passed()
        );
        assert!(run("# CONFIG_CPU_FREQ is not set\n", cpufreq_default_governor).passed());
        let o = run(
            "CONFIG_CPU_FREQ=y\nCONFIG_CPU_FREQ_DEFAULT_GOV_POWERSAVE=y\n",
            cpufreq_default_governor,
        );
        assert!(
            o.summary().contains("performance governor is not built"),
            "{}",
            o.summary()
        );
    }

    #[test]
    fn memory_defaults() {
        let f = finding(AMD64, Profile::Production, "kconfig.transparent_hugepage");
        assert_eq!(
            f.summary,
            "the THP default is always: huge pages for every anonymous mapping, with compaction and khugepaged stalls"
        );
        assert!(
            run(
                "CONFIG_TRANSPARENT_HUGEPAGE=y\nCONFIG_TRANSPARENT_HUGEPAGE_MADVISE=y\n",
                transparent_hugepage
            )
            .passed()
        );
        let f = finding(AMD64, Profile::Production, "kconfig.numa_balancing");
        assert_eq!(
            f.evidence[1].value,
            "CONFIG_NUMA_BALANCING_DEFAULT_ENABLED=y"
        );
        assert!(
            run(
                "CONFIG_NUMA_BALANCING=y\n# CONFIG_NUMA_BALANCING_DEFAULT_ENABLED is not set\n",
                numa_balancing
            )
            .passed()
        );
        // Neither exists on Debian's arm64 RT kernel.
        assert!(
            run(RT_ARM64, numa_balancing)
                .summary()
                .starts_with("CONFIG_NUMA_BALANCING is absent")
        );
    }
}

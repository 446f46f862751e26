//! The options that set RT CPUs apart: cpusets, CPU isolation, RCU callback offloading and
//! priority boosting, and RT group scheduling (which can refuse SCHED_FIFO outright).

use super::judged::{config, unset};
use crate::context::Ctx;
use crate::outcome::Outcome;

/// `kconfig.cpusets`.
pub(super) fn cpusets(ctx: &Ctx) -> Outcome {
    match config(ctx) {
        Ok(config) => config.want(
            "CONFIG_CPUSETS",
            "cpuset cgroups and partitions can set RT CPUs apart",
            "no cpuset cgroups: RT CPUs can be set apart only with isolcpus= and affinity masks",
        ),
        Err(unknown) => unknown,
    }
}

/// `kconfig.cpu_isolation`.
pub(super) fn cpu_isolation(ctx: &Ctx) -> Outcome {
    match config(ctx) {
        Ok(config) => config.want(
            "CONFIG_CPU_ISOLATION",
            "isolcpus= and nohz_full= set housekeeping CPUs apart from RT CPUs",
            "isolcpus= and the nohz_full= housekeeping split are ignored",
        ),
        Err(unknown) => unknown,
    }
}

/// `kconfig.rcu_nocb_cpu`.
pub(super) fn rcu_nocb_cpu(ctx: &Ctx) -> Outcome {
    match config(ctx) {
        Ok(config) => config.want(
            "CONFIG_RCU_NOCB_CPU",
            "rcu_nocbs= can move RCU callbacks off RT CPUs",
            "RCU callbacks always run on the CPU that queued them, RT CPUs included; rcu_nocbs= is ignored",
        ),
        Err(unknown) => unknown,
    }
}

/// `kconfig.rcu_boost`.
pub(super) fn rcu_boost(ctx: &Ctx) -> Outcome {
    let config = match config(ctx) {
        Ok(c) => c,
        Err(unknown) => return unknown,
    };
    if !config.on("CONFIG_PREEMPT_RCU") {
        return config.cite(
            Outcome::pass(format!(
                "{}: RCU readers are not preemptible, so there is nothing to boost",
                unset(&config, "CONFIG_PREEMPT_RCU")
            )),
            "CONFIG_PREEMPT_RCU",
        );
    }
    if config.on("CONFIG_RCU_BOOST") {
        let delay = config
            .value("CONFIG_RCU_BOOST_DELAY")
            .map_or(String::new(), |ms| format!(" after {ms} ms"));
        let outcome = config.cite(
            Outcome::pass(format!(
                "CONFIG_RCU_BOOST=y: preempted RCU readers that block a grace period are boosted{delay}"
            )),
            "CONFIG_RCU_BOOST",
        );
        return if config.mentions("CONFIG_RCU_BOOST_DELAY") {
            config.cite(outcome, "CONFIG_RCU_BOOST_DELAY")
        } else {
            outcome
        };
    }
    let mut outcome = config.cite(
        Outcome::problem(format!(
            "{} with preemptible RCU: a reader preempted by busy RT tasks holds up every grace period",
            unset(&config, "CONFIG_RCU_BOOST")
        )),
        "CONFIG_RCU_BOOST",
    );
    outcome = config.cite(outcome, "CONFIG_PREEMPT_RCU");
    if !config.on("CONFIG_RCU_EXPERT") && !config.on("CONFIG_PREEMPT_RT") {
        outcome = config
            .cite(outcome, "CONFIG_RCU_EXPERT")
            .fix_config("CONFIG_RCU_EXPERT=y");
    }
    outcome.fix_config("CONFIG_RCU_BOOST=y")
}

/// `kconfig.rt_group_sched`.
pub(super) fn rt_group_sched(ctx: &Ctx) -> Outcome {
    let config = match config(ctx) {
        Ok(c) => c,
        Err(unknown) => return unknown,
    };
    const NAME: &str = "CONFIG_RT_GROUP_SCHED";
    const DEFAULT_OFF: &str = "CONFIG_RT_GROUP_SCHED_DEFAULT_DISABLED";
    if !config.on(NAME) {
        return config.cite(
            Outcome::pass(format!(
                "{}: RT tasks may run in any cgroup with no RT budget to set",
                unset(&config, NAME)
            )),
            NAME,
        );
    }
    // Since 6.16 the rt_group_sched= boot parameter turns it on or off, defaulting to
    // CONFIG_RT_GROUP_SCHED_DEFAULT_DISABLED; the parameter exists where that option does.
    let switchable = config.mentions(DEFAULT_OFF);
    let boot = if switchable && ctx.has_cmdline() {
        ctx.cmdline().value("rt_group_sched").map(str::to_string)
    } else {
        None
    };
    let mut outcome = match (config.on(DEFAULT_OFF), boot.as_deref()) {
        (_, Some("0")) => Outcome::pass(
            "CONFIG_RT_GROUP_SCHED=y, turned off at boot with rt_group_sched=0: RT tasks may run in any cgroup",
        ),
        (true, b) if b != Some("1") => Outcome::pass(
            "CONFIG_RT_GROUP_SCHED=y but off by default (CONFIG_RT_GROUP_SCHED_DEFAULT_DISABLED=y) and not turned on with rt_group_sched=1",
        ),
        _ => Outcome::problem(
            "CONFIG_RT_GROUP_SCHED=y: sched_setscheduler(SCHED_FIFO) fails with EPERM for tasks in cgroups without an RT budget (systemd services, containers)",
        ),
    };
    outcome = config.cite(outcome, NAME);
    if switchable {
        outcome = config.cite(outcome, DEFAULT_OFF);
    }
    if let Some(value) = &boot {
        outcome = outcome.evidence("/proc/cmdline", format!("rt_group_sched={value}"));
    }
    if switchable {
        outcome = outcome.fix_boot("rt_group_sched=0");
    }
    outcome
        .fix_config("# CONFIG_RT_GROUP_SCHED is not set")
        .fix_advice(
            "or give each cgroup that runs RT tasks a budget in cpu.rt_runtime_us (cgroup v1 cpu controller); on cgroup v2 keep RT tasks in cgroups without the cpu controller",
        )
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;
    use crate::context::Options;
    use testkit::FakeRoot;

    #[test]
    fn rt_group_sched_follows_the_boot_switch() {
        // Lines of this repository's firecracker VM config (6.18, fixtures/roots/vm-x86_64-2cpu).
        let fc = "CONFIG_RT_GROUP_SCHED=y\n# CONFIG_RT_GROUP_SCHED_DEFAULT_DISABLED is not set\n";
        let with = |cmdline: &str, text: &str| {
            let fake = FakeRoot::new()
                .cpus(1)
                .kernel("6.18.44", "#1 SMP PREEMPT_DYNAMIC")
                .cmdline(cmdline)
                .file("/boot/config-6.18.44", text);
            let ctx = Ctx::new(fake.root(), Options::default());
            rt_group_sched(&ctx)
        };
        let o = with("quiet", fc);
        assert!(
            !o.passed() && o.summary().contains("EPERM"),
            "{}",
            o.summary()
        );
        assert!(with("quiet rt_group_sched=0", fc).passed());
        let off = "CONFIG_RT_GROUP_SCHED=y\nCONFIG_RT_GROUP_SCHED_DEFAULT_DISABLED=y\n";
        assert!(with("quiet", off).passed());
        assert!(!with("rt_group_sched=1", off).passed());
        // Before 6.16 there is no switch: rt_group_sched= is not a parameter.
        assert!(!with("rt_group_sched=0", "CONFIG_RT_GROUP_SCHED=y\n").passed());
        assert!(with("", "# CONFIG_RT_GROUP_SCHED is not set\n").passed());
    }

    #[test]
    fn rcu_boost_matters_only_with_preemptible_rcu() {
        assert!(run("# CONFIG_PREEMPT_RCU is not set\n", rcu_boost).passed());
        let amd64 = run(AMD64, rcu_boost);
        assert!(
            amd64.summary().starts_with("CONFIG_RCU_BOOST is absent"),
            "{}",
            amd64.summary()
        );
        let rt = run(RT_ARM64, rcu_boost);
        assert!(
            rt.passed() && rt.summary().contains("after 500 ms"),
            "{}",
            rt.summary()
        );
    }

    #[test]
    fn isolation_options_are_wanted() {
        let o = run("# CONFIG_CPU_ISOLATION is not set\n", cpu_isolation);
        assert!(!o.passed());
        assert!(
            o.summary()
                .starts_with("CONFIG_CPU_ISOLATION is not set: isolcpus="),
            "{}",
            o.summary()
        );
        assert!(!run("", rcu_nocb_cpu).summary().is_empty());
        assert!(run("CONFIG_CPUSETS=y\n", cpusets).passed());
    }
}

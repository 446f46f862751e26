//! The options a latency investigation and a validation kernel need: the latency tracers,
//! and the debug options the profile wants (debug) or refuses (production), after the Linaro 2023 talk.

use model::audit::{Profile, Severity};

use super::judged::{config, list};
use crate::context::Ctx;
use crate::kconfig_diff::options::{DEBUG_COST, LATENCY_TRACERS, VALIDATION};
use crate::outcome::Outcome;

/// `kconfig.latency_tracers`: info in production, warn in the debug profile.
pub(super) fn latency_tracers(ctx: &Ctx) -> Outcome {
    let config = match config(ctx) {
        Ok(c) => c,
        Err(unknown) => return unknown,
    };
    let debug = ctx.profile() == Profile::Debug;
    let wanted: Vec<&str> = LATENCY_TRACERS
        .iter()
        .filter(|(_, production)| *production || debug)
        .map(|(name, _)| *name)
        .collect();
    let missing: Vec<&str> = wanted.iter().copied().filter(|n| !config.on(n)).collect();
    let outcome = if missing.is_empty() {
        let scope = if debug {
            ""
        } else {
            " (irqsoff and preemptoff tracers are left to a debug kernel)"
        };
        Outcome::pass(format!(
            "all {} latency tracers are built{scope}",
            wanted.len()
        ))
        .evidence(
            config.path,
            list(&wanted.iter().map(|n| config.line(n)).collect::<Vec<_>>()),
        )
    } else {
        let mut needs = Vec::new();
        if missing.contains(&"CONFIG_FTRACE") {
            needs.push("no ftrace at all");
        }
        if missing.contains(&"CONFIG_TIMERLAT_TRACER") {
            needs.push("rtla timerlat needs TIMERLAT_TRACER");
        }
        if missing.contains(&"CONFIG_OSNOISE_TRACER") {
            needs.push("rtla osnoise needs OSNOISE_TRACER");
        }
        let needs = if needs.is_empty() {
            String::new()
        } else {
            format!(" ({})", needs.join("; "))
        };
        let names: Vec<String> = missing.iter().map(|n| n.to_string()).collect();
        let mut outcome = Outcome::problem(format!(
            "{} of {} latency tracers missing: {}{needs}",
            missing.len(),
            wanted.len(),
            list(&names)
        ))
        .evidence(
            config.path,
            list(&missing.iter().map(|n| config.line(n)).collect::<Vec<_>>()),
        );
        // Without ftrace nothing else can be chosen: that one fix first.
        let fixes: Vec<&str> = if missing.contains(&"CONFIG_FTRACE") {
            vec!["CONFIG_FTRACE"]
        } else {
            missing.clone()
        };
        for name in fixes {
            outcome = outcome.fix_config(format!("{name}=y"));
        }
        outcome
    };
    if debug {
        outcome.with_severity(Severity::Warn)
    } else {
        outcome
    }
}

/// `kconfig.debug`: in production, the debug options that cost latency; in the debug
/// profile, the validation options the Linaro 2023 talk asks for.
pub(super) fn debug_options(ctx: &Ctx) -> Outcome {
    let config = match config(ctx) {
        Ok(c) => c,
        Err(unknown) => return unknown,
    };
    if ctx.profile() == Profile::Debug {
        let missing: Vec<&str> = VALIDATION
            .iter()
            .copied()
            .filter(|n| !config.on(n))
            .collect();
        if missing.is_empty() {
            return Outcome::pass(format!(
                "all {} validation options are set (debug kernel build)",
                VALIDATION.len()
            ))
            .evidence(
                config.path,
                list(
                    &VALIDATION
                        .iter()
                        .map(|n| config.line(n))
                        .collect::<Vec<_>>(),
                ),
            );
        }
        let names: Vec<String> = missing.iter().map(|n| n.to_string()).collect();
        let mut outcome = Outcome::problem(format!(
            "{} of {} validation options missing for a debug kernel: {}",
            missing.len(),
            VALIDATION.len(),
            list(&names)
        ))
        .evidence(
            config.path,
            list(&missing.iter().map(|n| config.line(n)).collect::<Vec<_>>()),
        );
        for name in missing {
            outcome = outcome.fix_config(format!("{name}=y"));
        }
        return outcome;
    }
    let present: Vec<&str> = DEBUG_COST
        .iter()
        .copied()
        .filter(|n| config.on(n))
        .collect();
    if present.is_empty() {
        return Outcome::pass(format!(
            "none of the {} latency-costly debug options is set (production profile)",
            DEBUG_COST.len()
        ))
        .evidence(
            config.path,
            format!("{} options checked, none set", DEBUG_COST.len()),
        );
    }
    let lines: Vec<String> = present.iter().map(|n| config.line(n)).collect();
    let mut outcome = Outcome::problem(format!(
        "{} debug option{} that cost latency in production: {}",
        present.len(),
        if present.len() == 1 { "" } else { "s" },
        list(&lines)
    ))
    .evidence(config.path, list(&lines));
    for name in &present {
        outcome = outcome.fix_config(format!("# {name} is not set"));
    }
    outcome.fix_advice("if this is a validation kernel, audit it with --kernel-build debug instead")
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;
    use model::audit::Status;

    #[test]
    fn tracers_by_profile() {
        // Debian's generic kernel lacks the RT tracers.
        let f = finding(AMD64, Profile::Production, "kconfig.latency_tracers");
        assert_eq!((f.status, f.severity), (Status::Info, Severity::Info));
        assert_eq!(
            f.summary,
            "4 of 7 latency tracers missing: CONFIG_TIMERLAT_TRACER, CONFIG_OSNOISE_TRACER, CONFIG_HWLAT_TRACER, CONFIG_SCHED_TRACER (rtla timerlat needs TIMERLAT_TRACER; rtla osnoise needs OSNOISE_TRACER)"
        );
        assert_eq!(
            f.evidence[0].value,
            "# CONFIG_TIMERLAT_TRACER is not set, # CONFIG_OSNOISE_TRACER is not set, # CONFIG_HWLAT_TRACER is not set, # CONFIG_SCHED_TRACER is not set"
        );
        assert_eq!(f.fix.len(), 4);
        // Debian's RT kernel has them all, except irqsoff and preemptoff, which only the
        // debug profile asks for.
        let f = finding(RT_ARM64, Profile::Production, "kconfig.latency_tracers");
        assert_eq!(f.status, Status::Pass, "{}", f.summary);
        let f = finding(RT_ARM64, Profile::Debug, "kconfig.latency_tracers");
        assert_eq!((f.status, f.severity), (Status::Warn, Severity::Warn));
        assert!(
            f.summary.starts_with(
                "2 of 9 latency tracers missing: CONFIG_IRQSOFF_TRACER, CONFIG_PREEMPT_TRACER"
            ),
            "{}",
            f.summary
        );
        // No ftrace: one fix, the framework.
        let f = finding(
            "# CONFIG_FTRACE is not set\n",
            Profile::Production,
            "kconfig.latency_tracers",
        );
        assert!(f.summary.contains("no ftrace at all"), "{}", f.summary);
        assert_eq!(f.fix.len(), 1);
    }

    #[test]
    fn debug_options_flip_with_the_profile() {
        let validation = "CONFIG_PROVE_LOCKING=y\nCONFIG_LOCKDEP=y\nCONFIG_DEBUG_LOCK_ALLOC=y\nCONFIG_DEBUG_ATOMIC_SLEEP=y\nCONFIG_KASAN=y\nCONFIG_DEBUG_SHIRQ=y\nCONFIG_SOFTLOCKUP_DETECTOR=y\nCONFIG_DETECT_HUNG_TASK=y\nCONFIG_WQ_WATCHDOG=y\nCONFIG_DEBUG_PREEMPT=y\nCONFIG_DEBUG_IRQFLAGS=y\nCONFIG_PROVE_RAW_LOCK_NESTING=y\n";
        let f = finding(validation, Profile::Debug, "kconfig.debug");
        assert_eq!(f.status, Status::Pass, "{}", f.summary);
        let f = finding(validation, Profile::Production, "kconfig.debug");
        assert_eq!(f.status, Status::Warn);
        assert!(f.summary.starts_with("9 debug options that cost latency in production: CONFIG_KASAN=y, CONFIG_PROVE_LOCKING=y"), "{}", f.summary);
        assert!(f.summary.ends_with("... and 1 more"), "{}", f.summary);
        assert_eq!(f.fix.len(), 10, "one per option, then the profile advice");

        // Distro production kernels pass in production and miss most of the validation set.
        assert_eq!(
            finding(RT_ARM64, Profile::Production, "kconfig.debug").status,
            Status::Pass
        );
        let f = finding(RT_ARM64, Profile::Debug, "kconfig.debug");
        assert!(
            f.summary.starts_with("8 of 10 validation options missing"),
            "{}",
            f.summary
        );
        // =m counts as set.
        let f = finding("CONFIG_KASAN=m\n", Profile::Production, "kconfig.debug");
        assert!(f.summary.contains("CONFIG_KASAN=m"), "{}", f.summary);
    }
}

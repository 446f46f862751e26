//! The boot switches: `skew_tick=`, the lockup detectors (`nosoftlockup`, `nowatchdog` and
//! their equivalents), `tsc=`, idle-state limits and `threadirqs`.

use model::audit::{Profile, Severity};
use sys::parse::cmdline::Cmdline;

use super::common::{CMDLINE, seen, unreadable};
use crate::checks::time::is_x86;
use crate::context::Ctx;
use crate::outcome::Outcome;

/// A kernel integer option (`get_option()`: decimal, or `0x` hex).
fn int_value(value: &str) -> Option<i64> {
    let v = value.trim();
    match v.strip_prefix("0x") {
        Some(hex) => i64::from_str_radix(hex, 16).ok(),
        None => v.parse().ok(),
    }
}

/// Whether `watchdog_thresh=0` turns both lockup detectors off.
fn thresh_zero(cmdline: &Cmdline<'_>) -> bool {
    cmdline
        .value("watchdog_thresh")
        .and_then(int_value)
        .is_some_and(|n| n == 0)
}

/// In the debug profile a lockup detector is wanted: a finding becomes information only.
fn for_profile(ctx: &Ctx, outcome: Outcome) -> Outcome {
    match ctx.profile() {
        Profile::Debug => outcome.with_severity(Severity::Info),
        Profile::Production => outcome,
    }
}

pub(super) fn skew_tick(ctx: &Ctx) -> Outcome {
    if let Some(o) = unreadable(ctx) {
        return o;
    }
    let outcome = match ctx.cmdline().value("skew_tick") {
        Some(v) if int_value(v).is_some_and(|n| n != 0) => {
            Outcome::pass(format!("skew_tick={v}: each CPU's tick is offset from the others"))
        }
        Some(v) => Outcome::problem(format!(
            "skew_tick={v} keeps every CPU's tick at the same instant"
        ))
        .fix_boot("skew_tick=1"),
        None => Outcome::problem(
            "no skew_tick=1: every CPU's tick fires at the same instant, and the CPUs contend for jiffies_lock and the timer locks",
        )
        .fix_boot("skew_tick=1"),
    };
    outcome.evidence(CMDLINE, seen(ctx, &["skew_tick"]))
}

pub(super) fn nosoftlockup(ctx: &Ctx) -> Outcome {
    if let Some(o) = unreadable(ctx) {
        return o;
    }
    let cmdline = ctx.cmdline();
    let evidence = seen(ctx, &["nosoftlockup", "nowatchdog", "watchdog_thresh"]);
    let off = ["nosoftlockup", "nowatchdog"]
        .iter()
        .find(|k| cmdline.has(k))
        .map(|k| k.to_string())
        .or_else(|| thresh_zero(&cmdline).then(|| "watchdog_thresh=0".to_string()));
    if let Some(by) = off {
        return Outcome::pass(format!("the soft lockup detector is off at boot ({by})"))
            .evidence(CMDLINE, evidence);
    }
    let mut summary = "the soft lockup detector runs: a timer on every CPU, RT CPUs included, wakes the stopper thread every few seconds (no nosoftlockup)".to_string();
    if ctx.profile() == Profile::Debug {
        summary.push_str(
            "; kept as information in the debug profile, where it helps find kernel loops",
        );
    }
    for_profile(
        ctx,
        Outcome::problem(summary)
            .evidence(CMDLINE, evidence)
            .fix_boot("nosoftlockup")
            .fix_write("/proc/sys/kernel/soft_watchdog", "0"),
    )
}

pub(super) fn nowatchdog(ctx: &Ctx) -> Outcome {
    if let Some(o) = unreadable(ctx) {
        return o;
    }
    let cmdline = ctx.cmdline();
    let evidence = seen(ctx, &["nowatchdog", "nmi_watchdog", "watchdog_thresh"]);
    let nmi_off = cmdline
        .value("nmi_watchdog")
        .is_some_and(|v| v.split(',').any(|t| t.trim() == "0"));
    let off = if cmdline.has("nowatchdog") {
        Some("nowatchdog")
    } else if nmi_off {
        Some("nmi_watchdog=0")
    } else if thresh_zero(&cmdline) {
        Some("watchdog_thresh=0")
    } else {
        None
    };
    if let Some(by) = off {
        return Outcome::pass(format!("the hard lockup detector is off at boot ({by})"))
            .evidence(CMDLINE, evidence);
    }
    // Without the boot parameter the detector may still not run: the kernel has none, or it
    // was switched off at run time.
    const NMI: &str = "/proc/sys/kernel/nmi_watchdog";
    match ctx.root().read_trimmed(NMI).as_deref() {
        None => {
            return Outcome::pass(format!(
                "no hard lockup detector in this kernel ({NMI} is absent)"
            ))
            .evidence(CMDLINE, evidence);
        }
        Some("0") => {
            return Outcome::pass(format!(
                "the hard lockup detector is off at run time ({NMI} = 0), though not by a boot parameter"
            ))
            .evidence(CMDLINE, evidence)
            .evidence(NMI, "0");
        }
        Some(_) => {}
    }
    let mut summary = "the hard lockup detector (NMI watchdog) runs: it interrupts every CPU, RT CPUs included, periodically and holds a perf counter (no nowatchdog)".to_string();
    if ctx.profile() == Profile::Debug {
        summary.push_str(
            "; kept as information in the debug profile, where it helps find IRQs-off hangs",
        );
    }
    for_profile(
        ctx,
        Outcome::problem(summary)
            .evidence(CMDLINE, evidence)
            .fix_boot("nowatchdog")
            .fix_write("/proc/sys/kernel/nmi_watchdog", "0"),
    )
}

pub(super) fn tsc(ctx: &Ctx) -> Outcome {
    if let Some(o) = unreadable(ctx) {
        return o;
    }
    match is_x86(ctx) {
        Some(false) => {
            return Outcome::pass(format!(
                "not x86 ({}): there is no TSC to watch",
                ctx.host().arch
            ));
        }
        None => {
            return Outcome::unknown(
                "cannot tell whether this is x86: /proc/sys/kernel/arch is absent and no TSC clock source is listed",
            );
        }
        Some(true) => {}
    }
    let cmdline = ctx.cmdline();
    let values: Vec<&str> = cmdline.all("tsc").filter_map(|p| p.value).collect();
    let evidence = seen(ctx, &["tsc"]);
    if let Some(v) = values
        .iter()
        .find(|v| matches!(**v, "reliable" | "nowatchdog"))
    {
        return Outcome::pass(format!(
            "tsc={v}: the clocksource watchdog leaves the TSC alone"
        ))
        .evidence(CMDLINE, evidence);
    }
    if values.contains(&"unstable") {
        return Outcome::problem(
            "tsc=unstable: the kernel never uses the TSC and falls back to a slower clock source",
        )
        .evidence(CMDLINE, evidence)
        .fix_advice(
            "remove tsc=unstable from the boot command line unless this TSC is really broken",
        );
    }
    Outcome::problem(
        "no tsc=nowatchdog or tsc=reliable: the clocksource watchdog may read hpet/acpi_pm against the TSC every half second, and can mark a good TSC unstable under load",
    )
    .evidence(CMDLINE, evidence)
    .fix_boot("tsc=nowatchdog")
    .fix_advice("only when the TSC is known good (constant_tsc and nonstop_tsc in /proc/cpuinfo); tsc=reliable also skips the boot-time TSC checks; recent kernels skip the watchdog by themselves on machines with constant_tsc, nonstop_tsc, TSC_ADJUST and at most two sockets")
}

pub(super) fn idle(ctx: &Ctx) -> Outcome {
    if let Some(o) = unreadable(ctx) {
        return o;
    }
    let cmdline = ctx.cmdline();
    let evidence = seen(
        ctx,
        &[
            "idle",
            "cpuidle.off",
            "processor.max_cstate",
            "intel_idle.max_cstate",
        ],
    );
    let mut limits = Vec::new();
    let mut notes = Vec::new();
    match cmdline.value("idle") {
        Some("poll") => limits.push(
            "idle=poll: CPUs spin instead of idling, the lowest wake-up latency at full power and heat (an SMT sibling runs slower)"
                .to_string(),
        ),
        Some("halt") => limits.push("idle=halt: only HLT (C1)".to_string()),
        _ => {}
    }
    if cmdline
        .value("cpuidle.off")
        .and_then(int_value)
        .is_some_and(|n| n != 0)
    {
        limits.push(
            "cpuidle.off=1: no cpuidle driver, only the architecture's default idle (WFI/HLT)"
                .to_string(),
        );
    }
    if let Some(n) = cmdline.value("processor.max_cstate").and_then(int_value) {
        limits.push(format!("processor.max_cstate={n}: acpi_idle stops at C{n}"));
    }
    match cmdline.value("intel_idle.max_cstate").and_then(int_value) {
        Some(0) => notes.push(
            "intel_idle.max_cstate=0 only disables intel_idle: acpi_idle then picks the states unless processor.max_cstate limits it",
        ),
        Some(n) => limits.push(format!("intel_idle.max_cstate={n}: intel_idle stops at C-state {n}")),
        None => {}
    }
    let mut parts = limits.clone();
    parts.extend(notes.iter().map(|n| n.to_string()));
    if !limits.is_empty() {
        return Outcome::pass(parts.join("; ")).evidence(CMDLINE, evidence);
    }
    let mut summary = "no boot parameter limits idle states: CPUs may enter their deepest C-states unless limited at run time".to_string();
    for n in &notes {
        summary.push_str("; ");
        summary.push_str(n);
    }
    let outcome = Outcome::problem(summary)
        .evidence(CMDLINE, evidence)
        .fix_advice("at run time, per CPU and reversibly: hold /dev/cpu_dma_latency open with 0 written to it (as cyclictest does), or `cpupower idle-set -D 10` to disable states with exit latency above 10 us (`cpupower idle-set -d N` disables one state)");
    if is_x86(ctx) == Some(true) {
        outcome
            .fix_boot("intel_idle.max_cstate=1")
            .fix_boot("processor.max_cstate=1")
    } else {
        outcome.fix_boot("cpuidle.off=1")
    }
}

pub(super) fn threadirqs(ctx: &Ctx) -> Outcome {
    if let Some(o) = unreadable(ctx) {
        return o;
    }
    let host = ctx.host();
    let evidence = seen(ctx, &["threadirqs"]);
    if host.preempt_rt {
        let source = host
            .preempt_model_source
            .clone()
            .unwrap_or_else(|| "/proc/sys/kernel/version".to_string());
        return Outcome::pass("PREEMPT_RT forces threaded IRQ handlers: threadirqs is implied")
            .evidence(source, "PREEMPT_RT");
    }
    if ctx.cmdline().has("threadirqs") {
        return Outcome::pass(
            "threadirqs: IRQ handlers run in threads (irq/N-name) whose priority you can set",
        )
        .evidence(CMDLINE, evidence);
    }
    Outcome::problem(
        "IRQ handlers run in hard IRQ context, ahead of every task, real-time ones included (no threadirqs)",
    )
    .evidence(CMDLINE, evidence)
    .fix_boot("threadirqs")
    .fix_advice("then give the IRQ threads of the devices your real-time tasks depend on a SCHED_FIFO priority with chrt, and the others a lower one; needs CONFIG_IRQ_FORCED_THREADING")
}

#[cfg(test)]
#[path = "flags_tests.rs"]
mod tests;

//! The final per-CPU table of `rtlab measure`: one line that says what was run where, an
//! aligned table of statistics (one row per CPU and an `all` row), the `--break` event and the
//! run's warnings.
//!
//! Latencies are printed in microseconds with one decimal, rounded half up from the exact
//! nanoseconds; a figure the run does not have (a CPU without samples) is `-`. Output is pure
//! ASCII apart from what the host or a warning message itself contains. This module only
//! builds text; the caller decides where it goes.

use std::fmt::Write as _;

use model::host::HostInfo;
use model::imported::Quantity;
use model::measure::{BreakEvent, MeasureParams, MeasureRun, Policy};
use model::stats::LatencyStats;

/// Microseconds with one decimal, rounded half up: `12345` ns is `12.3`, `12350` is `12.4`.
pub fn format_us(ns: u64) -> String {
    let tenths = ns / 100 + u64::from(ns % 100 >= 50);
    format!("{}.{}", tenths / 10, tenths % 10)
}

/// [`format_us`] of a value that may be missing (`-`).
pub(crate) fn format_opt_us(ns: Option<u64>) -> String {
    ns.map_or_else(|| "-".to_string(), format_us)
}

/// [`format_us`] of a fractional figure (a mean or a standard deviation), rounded to whole
/// nanoseconds first so it rounds exactly like the integer figures beside it.
pub(crate) fn format_opt_us_f64(ns: Option<f64>) -> String {
    // `as` saturates: a negative or NaN figure (which the model never produces) prints as 0.0.
    format_opt_us(ns.map(|v| v.round() as u64))
}

/// The table printed at the end of `rtlab measure`: header line, unit line, column header,
/// one row per CPU, the `all` row, then the break event and warnings. Ends with a newline.
pub fn measure_table(run: &MeasureRun) -> String {
    let mut out = String::new();
    out.push_str(&header_line(run));
    out.push('\n');
    match &run.import {
        Some(i) => {
            let _ = writeln!(out, "imported from {} output: {}", i.tool, i.file);
            match i.quantity {
                Quantity::OsNoise => out.push_str(
                    "OS noise in us (time taken from a busy loop; not wake-up latency)\n",
                ),
                Quantity::WakeupLatency => out.push_str("latencies in us\n"),
                Quantity::ResponseTime => out.push_str("response times in us\n"),
            }
        }
        None if run.workload.is_some() => out.push_str(
            "response times in us (release to the end of each job: wake-up latency + execution)\n",
        ),
        None if run.timerlat.is_some() => out.push_str(
            "thread latencies in us, from the kernel's timerlat tracer (timer expiry to its thread running)\n",
        ),
        None => out.push_str("latencies in us\n"),
    }

    let mut rows = vec![COLUMNS.iter().map(|c| c.to_string()).collect::<Vec<_>>()];
    for c in &run.cpus {
        rows.push(stats_row(c.cpu.to_string(), &c.stats));
    }
    rows.push(stats_row("all".to_string(), &run.all.stats));
    for line in crate::columns::align_right(&rows) {
        out.push_str(&line);
        out.push('\n');
    }

    if let Some(w) = &run.workload {
        out.push_str(&crate::workload::table(w));
    }
    if let Some(t) = &run.timerlat {
        out.push_str(&crate::timerlat::timerlat_text(t, &run.cpus));
    }
    if let Some(event) = &run.break_event {
        out.push_str(&break_line(event, &run.params));
        out.push('\n');
    }
    for w in &run.warnings {
        let _ = writeln!(out, "warning: {}", w.message);
    }
    out
}

/// The table's columns, in order.
pub(crate) const COLUMNS: [&str; 13] = [
    "CPU", "samples", "min", "avg", "stddev", "p50", "p90", "p99", "p99.9", "p99.99", "p99.999",
    "max", "overruns",
];

pub(crate) fn stats_row(label: String, s: &LatencyStats) -> Vec<String> {
    vec![
        label,
        s.count.to_string(),
        format_opt_us(s.min_ns),
        format_opt_us_f64(s.mean_ns),
        format_opt_us_f64(s.stddev_ns),
        format_opt_us(s.p50_ns),
        format_opt_us(s.p90_ns),
        format_opt_us(s.p99_ns),
        format_opt_us(s.p99_9_ns),
        format_opt_us(s.p99_99_ns),
        format_opt_us(s.p99_999_ns),
        format_opt_us(s.max_ns),
        s.overruns.to_string(),
    ]
}

/// `rtlab measure: complete on HOST, kernel RELEASE (PREEMPT_RT), fifo:95, interval 1ms,
/// planned 60s, elapsed 60.0s, dma latency 0us, mlock on`.
fn header_line(run: &MeasureRun) -> String {
    let p = &run.params;
    let host = &run.host;
    let preempt = preempt_text(host);
    let s = Settings::of(run);
    let mut line = format!(
        "rtlab measure: {status} on {host}, kernel {kernel} ({preempt}), {policy}, \
         interval {interval}, planned {planned}, elapsed {elapsed}, dma latency {dma}, \
         mlock {mlock}",
        status = run.status.as_str(),
        host = or_unknown(&host.hostname),
        kernel = or_unknown(&host.kernel_release),
        policy = s.policy,
        interval = s.interval,
        planned = planned_text(p),
        elapsed = format_secs(run.elapsed_ns.get()),
        dma = s.dma_latency,
        mlock = s.mlock,
    );
    if p.clock != "monotonic" {
        let _ = write!(line, ", clock {} (not a measurement)", p.clock);
    }
    line
}

/// A run's settings in words, each "not stated" where an imported source does not state it
/// (its value in `params` is a placeholder): `fifo:95`, `1ms`, `0us`, `on`.
pub(crate) struct Settings {
    pub policy: String,
    pub interval: String,
    pub dma_latency: String,
    pub mlock: String,
}

impl Settings {
    pub(crate) fn of(run: &MeasureRun) -> Settings {
        use model::imported::Setting;
        let p = &run.params;
        let or_not = |setting: Setting, said: String| {
            if run.states(setting) {
                said
            } else {
                "not stated".to_string()
            }
        };
        Settings {
            policy: match p.engine {
                model::measure::Engine::Timerlat => "timerlat tracer".to_string(),
                model::measure::Engine::User if !run.states(Setting::Policy) => {
                    "policy not stated".to_string()
                }
                model::measure::Engine::User => policy_text(p),
            },
            interval: or_not(Setting::Interval, p.interval_ns.to_string()),
            dma_latency: or_not(
                Setting::DmaLatency,
                p.dma_latency_us
                    .map_or_else(|| "off".to_string(), |us| format!("{us}us")),
            ),
            mlock: or_not(
                Setting::Mlock,
                if p.mlock { "on" } else { "off" }.to_string(),
            ),
        }
    }
}

/// `PREEMPT_RT`, `preempt full, dynamic`, `preempt voluntary`, `preempt model unknown`.
pub(crate) fn preempt_text(host: &HostInfo) -> String {
    if host.preempt_rt {
        "PREEMPT_RT".to_string()
    } else {
        match (&host.preempt_model, host.preempt_dynamic) {
            (Some(m), true) => format!("preempt {m}, dynamic"),
            (Some(m), false) => format!("preempt {m}"),
            (None, _) => "preempt model unknown".to_string(),
        }
    }
}

pub(crate) fn or_unknown(text: &str) -> &str {
    if text.is_empty() { "(unknown)" } else { text }
}

/// `fifo:95`, `other`, `deadline 200us/1ms`.
pub(crate) fn policy_text(p: &MeasureParams) -> String {
    match (p.policy, p.dl_runtime_ns, p.dl_period_ns) {
        (policy, _, _) if policy.takes_priority() => format!("{}:{}", policy.as_str(), p.priority),
        (Policy::Deadline, Some(runtime), Some(period)) => format!("deadline {runtime}/{period}"),
        (policy, _, _) => policy.as_str().to_string(),
    }
}

/// `60s`, `100000 cycles`, or the planned periods when neither was given.
pub(crate) fn planned_text(p: &MeasureParams) -> String {
    match (p.duration_ns, p.cycles) {
        (Some(d), _) => d.to_string(),
        (None, Some(c)) => format!("{c} cycles"),
        (None, None) => format!("{} periods", p.periods),
    }
}

/// Seconds with one decimal, rounded half up: `60.0s`, `0.5s`.
pub(crate) fn format_secs(ns: u64) -> String {
    let tenths = ns / 100_000_000 + u64::from(ns % 100_000_000 >= 50_000_000);
    format!("{}.{}s", tenths / 10, tenths % 10)
}

pub(crate) fn break_line(event: &BreakEvent, params: &MeasureParams) -> String {
    let threshold = params
        .break_ns
        .map(|t| format!(" (threshold {t})"))
        .unwrap_or_default();
    let mut line = format!(
        "break: CPU {} woke {} us late{threshold} at cycle {}; ",
        event.cpu,
        format_us(event.latency_ns),
        event.cycle
    );
    match (&event.tracefs, event.trace_frozen) {
        (Some(dir), true) => {
            let dir = dir.trim_end_matches('/');
            let _ = write!(
                line,
                "trace frozen: cat {dir}/trace (re-enable with: echo 1 > {dir}/tracing_on)"
            );
        }
        (None, true) => line.push_str("trace frozen"),
        (_, false) => line.push_str("trace not frozen"),
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata;

    #[test]
    fn format_us_rounds_half_up() {
        assert_eq!(format_us(0), "0.0");
        assert_eq!(format_us(49), "0.0");
        assert_eq!(format_us(50), "0.1");
        assert_eq!(format_us(12_345), "12.3");
        assert_eq!(format_us(12_350), "12.4");
        assert_eq!(format_us(999_960), "1000.0");
        assert_eq!(format_us(u64::MAX), "18446744073709551.6");
        assert_eq!(format_opt_us(None), "-");
        assert_eq!(format_opt_us_f64(Some(26_861.25)), "26.9");
    }

    #[test]
    fn two_cpu_table_exactly() {
        let expected = "\
rtlab measure: complete on rt-box, kernel 6.1.0-50-rt-amd64 (PREEMPT_RT), fifo:95, interval 1ms, planned 1m, elapsed 60.0s, dma latency 0us, mlock on
latencies in us
CPU  samples   min   avg  stddev   p50    p90    p99  p99.9  p99.99  p99.999    max  overruns
  0        4  12.3  26.9    22.6  14.1   66.0   66.0   66.0    66.0     66.0   66.0         0
  1        3  13.0  92.3   111.5  14.0  250.0  250.0  250.0   250.0    250.0  250.0         1
all        7  12.3  54.9    81.7  14.1  250.0  250.0  250.0   250.0    250.0  250.0         1
";
        assert_eq!(measure_table(&testdata::two_cpus()), expected);
    }

    #[test]
    fn break_event_and_warnings_follow_the_table() {
        let text = measure_table(&testdata::two_cpus_broken());
        let tail: Vec<&str> = text.lines().skip(6).collect();
        assert_eq!(
            tail,
            [
                "break: CPU 1 woke 250.0 us late (threshold 200us) at cycle 2; trace frozen: \
                 cat /sys/kernel/tracing/trace (re-enable with: echo 1 > \
                 /sys/kernel/tracing/tracing_on)",
                "warning: RT throttling is on; set kernel.sched_rt_runtime_us=-1",
                "warning: CPU 1 is not isolated",
            ]
        );
        assert!(text.starts_with("rtlab measure: broke-threshold on rt-box"));
        assert!(text.is_ascii());
    }

    #[test]
    fn empty_cpu_prints_dashes() {
        let text = measure_table(&testdata::one_empty_cpu());
        let row = text.lines().nth(4).unwrap();
        assert_eq!(
            row,
            "  1        0    -    -       -    -    -    -      -       -        -    -         0"
        );
        let all = text.lines().nth(5).unwrap();
        assert!(
            all.starts_with("all        2  2.0  2.5     0.5  2.0"),
            "{all}"
        );
    }

    #[test]
    fn header_describes_other_setups() {
        let mut run = testdata::two_cpus();
        run.host.preempt_rt = false;
        run.host.preempt_model = Some("full".to_string());
        run.host.preempt_dynamic = true;
        run.params.policy = Policy::Other;
        run.params.duration_ns = None;
        run.params.cycles = Some(500);
        run.params.dma_latency_us = None;
        run.params.mlock = false;
        run.params.clock = "fake".to_string();
        run.elapsed_ns = model::Nanos(499_950_000);
        let header = measure_table(&run).lines().next().unwrap().to_string();
        assert_eq!(
            header,
            "rtlab measure: complete on rt-box, kernel 6.1.0-50-rt-amd64 (preempt full, \
             dynamic), other, interval 1ms, planned 500 cycles, elapsed 0.5s, dma latency off, \
             mlock off, clock fake (not a measurement)"
        );
    }

    #[test]
    fn unfrozen_break() {
        let mut run = testdata::two_cpus_broken();
        let event = run.break_event.as_mut().unwrap();
        event.trace_frozen = false;
        run.params.break_ns = None;
        let text = measure_table(&run);
        assert!(
            text.contains("break: CPU 1 woke 250.0 us late at cycle 2; trace not frozen\n"),
            "{text}"
        );
    }
}

//! How `rtlab inspect PID` reads on a terminal: what was inspected and against what, one row
//! per thread with what it did in the window, then the findings with evidence and fixes as
//! the audit prints them, and the counts.
//!
//! Times are microseconds (run delays) and milliseconds (CPU time) with one decimal; a figure
//! the kernel did not give is `-`. Colour is the caller's, as in [`crate::audit`].

use std::fmt::Write as _;

use model::audit::{Finding, Status};
use model::inspect::{Inspection, KernelThreads, RunDelaySource, ThreadReport};

use crate::audit::status_label;
use crate::columns::align;
use crate::table::format_us;

fn opt(v: Option<u64>) -> String {
    v.map_or_else(|| "-".to_string(), |v| v.to_string())
}

fn kernel_threads(k: Option<&KernelThreads>, none: &str) -> String {
    match k {
        None => none.to_string(),
        Some(k) => {
            let span = match (k.lowest, k.highest) {
                (0, 0) => "OTHER".to_string(),
                (0, h) => format!("OTHER..FIFO {h}"),
                (l, h) if l == h => format!("FIFO {l}"),
                (l, h) => format!("FIFO {l}-{h}"),
            };
            format!("{span} ×{}", k.count)
        }
    }
}

/// A window's length: `2.0 s`, or `50 ms` under a second.
fn window(ns: u64) -> String {
    if ns < 1_000_000_000 {
        format!("{} ms", ns / 1_000_000)
    } else {
        format!("{:.1} s", ns as f64 / 1e9)
    }
}

/// The lines above the table: the process, the window, the machine it is judged against.
fn header(i: &Inspection) -> String {
    let command = if i.command.is_empty() {
        String::new()
    } else {
        format!(" `{}`", i.command.join(" "))
    };
    let rt = if i.rt_cpus.cpus.is_empty() {
        "none set apart".to_string()
    } else {
        format!("{} (from {})", i.rt_cpus.cpus, i.rt_cpus.source)
    };
    let memory = match (i.locked_kb, i.rss_kb) {
        (Some(l), Some(r)) => format!("VmLck {l} kB of VmRSS {r} kB"),
        _ => "no user memory".to_string(),
    };
    let early = if i.interrupted {
        " (interrupted: ended early by a signal)"
    } else {
        ""
    };
    let delay = match i.run_delay_source {
        RunDelaySource::Schedstat => "most per interval (schedstat)",
        RunDelaySource::Trace => "longest wait (traced)",
    };
    format!(
        "rtlab inspect: process {} ({}){command}, kernel {}\n\
         window {}{early}, sampled every {} ms ({} samples); run delay max: {delay}\n\
         CPUs online {}, real-time {rt}; IRQ threads {}; softirq threads {}; memory {memory}\n",
        i.pid,
        i.name,
        i.kernel_release,
        window(i.window_ns),
        i.interval_ns / 1_000_000,
        i.samples,
        i.online_cpus,
        kernel_threads(i.irq_threads.as_ref(), "none (not threaded)"),
        kernel_threads(i.softirq_threads.as_ref(), "none"),
    )
}

/// The futex column: the waits seen, `PI` marking those with inheritance.
fn futex(t: &ThreadReport) -> String {
    if t.futex_waits.is_empty() {
        return "-".to_string();
    }
    t.futex_waits
        .iter()
        .map(|f| {
            let op = f.op.trim_end_matches("|FUTEX_PRIVATE_FLAG");
            format!(
                "{op}{}",
                if f.priority_inheritance {
                    ""
                } else {
                    " (no PI)"
                }
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// One thread's cells, name first (the futex column is added after alignment).
fn thread_row(t: &ThreadReport) -> Vec<String> {
    let mut name = t.name.clone();
    if t.started_during {
        name.push_str(" (new)");
    }
    if t.ended_during {
        name.push_str(" (ended)");
    }
    vec![
        name,
        t.tid.to_string(),
        t.sched.clone(),
        t.cpus_allowed
            .as_ref()
            .map_or_else(|| "-".to_string(), |c| c.to_string()),
        t.minor_faults.to_string(),
        t.major_faults.to_string(),
        opt(t.voluntary_switches),
        opt(t.involuntary_switches),
        format!("{:.1}", t.cpu_ns as f64 / 1e6),
        t.run_delay_ns.map_or_else(|| "-".into(), format_us),
        t.max_run_delay_ns.map_or_else(|| "-".into(), format_us),
        opt(t.migrations),
    ]
}

/// The per-thread table: aligned figures, then the futex waits seen, left as they come.
fn threads(i: &Inspection) -> Vec<String> {
    let mut rows = vec![
        [
            "NAME", "TID", "SCHED", "CPUS", "MINFLT", "MAJFLT", "VCSW", "ICSW", "CPU ms",
            "DELAY us", "MAX us", "MIGR",
        ]
        .map(String::from)
        .to_vec(),
    ];
    rows.extend(i.threads.iter().map(thread_row));
    let futexes = std::iter::once("FUTEX".to_string()).chain(i.threads.iter().map(futex));
    align(&rows, true)
        .into_iter()
        .zip(futexes)
        .map(|(line, f)| format!("{line}  {f}"))
        .collect()
}

fn finding_lines(
    out: &mut String,
    f: &Finding,
    id_width: usize,
    paint: &dyn Fn(Status, &str) -> String,
) {
    let label = paint(f.status, status_label(f));
    let _ = writeln!(out, "  {label}  {:<id_width$}  {}", f.id, f.summary);
    let indent = " ".repeat(2 + 4 + 2 + id_width + 2);
    if f.status != Status::Pass {
        for e in f.evidence.iter().take(3) {
            let _ = writeln!(out, "{indent}seen: {} = {}", e.source, e.value);
        }
    }
    for fix in &f.fix {
        let _ = writeln!(out, "{indent}fix: {}", fix.render());
    }
}

/// The terminal form of an inspection. `paint` decorates a status label (identity for plain
/// text). Ends with a newline.
pub fn inspect_table(i: &Inspection, paint: &dyn Fn(Status, &str) -> String) -> String {
    let mut out = header(i);
    out.push('\n');
    for line in threads(i) {
        let _ = writeln!(out, "{}", line.trim_end());
    }
    out.push('\n');
    let id_width = i.findings.iter().map(|f| f.id.len()).max().unwrap_or(0);
    for f in &i.findings {
        finding_lines(&mut out, f, id_width, paint);
    }
    let c = i.counts;
    let mut parts = vec![format!("{} fail", c.fail), format!("{} warn", c.warn)];
    parts.push(format!("{} pass", c.pass));
    if c.unknown > 0 {
        parts.push(format!("{} unknown", c.unknown));
    }
    let _ = writeln!(out, "\n{}", parts.join(", "));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::CpuSet;
    use model::audit::{Counts, Evidence, Fix, Group, RtCpus, Severity};
    use model::inspect::{FutexSeen, SCHEMA};

    fn sample() -> Inspection {
        let thread = ThreadReport {
            tid: 4243,
            name: "loop".into(),
            sched: "FIFO 99".into(),
            realtime: true,
            rt_priority: 99,
            cpus_allowed: Some(CpuSet::parse_list("0-1").unwrap()),
            last_cpu: Some(1),
            minor_faults: 2000,
            major_faults: 0,
            voluntary_switches: Some(1000),
            involuntary_switches: Some(2),
            cpu_ns: 12_340_000,
            run_delay_ns: Some(45_678),
            max_run_delay_ns: Some(9_876),
            wakeups: None,
            migrations: None,
            futex_waits: vec![FutexSeen {
                op: "FUTEX_WAIT_BITSET|FUTEX_PRIVATE_FLAG".into(),
                priority_inheritance: false,
                uaddr: "0x10".into(),
                samples: 3,
            }],
            syscall_readable: true,
            started_during: false,
            ended_during: false,
        };
        let findings = vec![Finding {
            id: "inspect.priority".into(),
            title: "t".into(),
            group: Group::Placement,
            severity: Severity::Fail,
            status: Status::Fail,
            summary: "1 thread at priority 99: loop:4243 FIFO 99".into(),
            evidence: vec![Evidence {
                source: "/proc/4242/task/4243/stat".into(),
                value: "FIFO 99".into(),
            }],
            why: "w".into(),
            fix: vec![Fix::Command {
                command: "chrt -f -p 49 4243".into(),
            }],
        }];
        Inspection {
            schema: SCHEMA.into(),
            rtlab_version: "0".into(),
            build: None,
            kernel_release: "6.18.0".into(),
            pid: 4242,
            name: "app".into(),
            command: vec!["./app".into(), "-x".into()],
            window_ns: 2_000_000_000,
            interval_ns: 10_000_000,
            samples: 201,
            interrupted: false,
            run_delay_source: RunDelaySource::Schedstat,
            online_cpus: CpuSet::parse_list("0-1").unwrap(),
            rt_cpus: RtCpus {
                cpus: CpuSet::new(),
                source: "none".into(),
            },
            irq_threads: None,
            softirq_threads: Some(KernelThreads {
                count: 2,
                lowest: 0,
                highest: 0,
            }),
            locked_kb: Some(0),
            rss_kb: Some(1500),
            threads: vec![thread],
            counts: Counts::of(&findings),
            findings,
        }
    }

    #[test]
    fn the_table_reads_as_expected() {
        let text = inspect_table(&sample(), &|_, l| l.to_string());
        let expected = "\
rtlab inspect: process 4242 (app) `./app -x`, kernel 6.18.0
window 2.0 s, sampled every 10 ms (201 samples); run delay max: most per interval (schedstat)
CPUs online 0-1, real-time none set apart; IRQ threads none (not threaded); softirq threads OTHER ×2; memory VmLck 0 kB of VmRSS 1500 kB

NAME   TID    SCHED  CPUS  MINFLT  MAJFLT  VCSW  ICSW  CPU ms  DELAY us  MAX us  MIGR  FUTEX
loop  4243  FIFO 99   0-1    2000       0  1000     2    12.3      45.7     9.9     -  FUTEX_WAIT_BITSET (no PI)

  FAIL  inspect.priority  1 thread at priority 99: loop:4243 FIFO 99
                          seen: /proc/4242/task/4243/stat = FIFO 99
                          fix: chrt -f -p 49 4243

1 fail, 0 warn, 0 pass
";
        assert_eq!(text, expected);
        assert_eq!(window(50_000_000), "50 ms");
        let mut cut = sample();
        cut.interrupted = true;
        let text = inspect_table(&cut, &|_, l| l.to_string());
        assert!(
            text.contains("window 2.0 s (interrupted: ended early by a signal), sampled"),
            "{text}"
        );
    }
}

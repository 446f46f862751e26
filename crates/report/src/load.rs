//! How an achieved load reads: the table printed after `rtlab load` and under a measurement
//! made with `--load`, and the one-line live summary.
//!
//! Rates are per second with SI suffixes (`180.3k wakeup/s`), throughput in binary units
//! (`15.2 MiB/s`), CPU shares in percent of the generator's own CPUs. Text only; the caller
//! decides where it goes.

use std::fmt::Write as _;

use model::Nanos;
use model::load::LoadReport;
use model::load::spec::format_bytes;
use model::measure::RunStatus;

/// `1234.5` as `1.2k`, `2_500_000` as `2.50M`; below 1000 with one decimal.
pub fn format_rate(per_sec: f64) -> String {
    if per_sec >= 1e6 {
        format!("{:.2}M", per_sec / 1e6)
    } else if per_sec >= 1e3 {
        format!("{:.1}k", per_sec / 1e3)
    } else {
        format!("{per_sec:.1}")
    }
}

/// Bytes per second in the largest binary unit below the value (`15.2 MiB/s`).
pub fn format_throughput(bytes_per_sec: f64) -> String {
    format!("{}/s", format_bytes(bytes_per_sec))
}

fn seconds(ns: Nanos) -> String {
    format!("{:.1} s", ns.get() as f64 / 1e9)
}

/// Steal below this share (percent of the window) on every CPU is not shown.
pub(crate) const STEAL_WORTH_SHOWING: f64 = 0.5;

/// The achieved-load table: a header line, one row per generator, the per-CPU busy line (and
/// the stolen share, where a hypervisor took a noticeable one), then each generator's notes.
/// Ends with a newline.
pub fn load_table(report: &LoadReport) -> String {
    let mut out = load_header(report);
    out.push('\n');
    let rows = load_rows(report);
    for line in crate::columns::align(&rows, true) {
        out.push_str(line.trim_end());
        out.push('\n');
    }
    if !report.cpu_busy.is_empty() {
        out.push_str("busy per CPU (/proc/stat):");
        for b in &report.cpu_busy {
            let _ = write!(out, " cpu{} {:.1}%", b.cpu, b.busy_percent);
        }
        out.push('\n');
        // Steal matters only in virtual machines on a busy host; say so only then.
        if report
            .cpu_busy
            .iter()
            .any(|b| b.steal_percent >= STEAL_WORTH_SHOWING)
        {
            out.push_str("stolen by the hypervisor:");
            for b in &report.cpu_busy {
                let _ = write!(out, " cpu{} {:.1}%", b.cpu, b.steal_percent);
            }
            out.push('\n');
        }
    }
    for g in &report.generators {
        for note in &g.notes {
            let _ = writeln!(out, "note: {}: {note}", g.spec);
        }
    }
    out
}

/// The achieved-load table of a load that ran under a measurement which ended with
/// `run_status`: as [`load_table`], but a load the run stopped early does not read
/// `(complete)` (see [`status_in_run`]).
pub fn run_load_table(report: &LoadReport, run_status: RunStatus) -> String {
    let table = load_table(report);
    let own = load_header(report);
    match table.strip_prefix(own.as_str()) {
        Some(rest) => load_header_of_run(report, run_status) + rest,
        None => table,
    }
}

/// How a load that ran under a measurement ended, in the light of the measurement: the load
/// process reports `complete` whenever it was stopped in order, also when the measurement it
/// served was interrupted or stopped at `--break`; then the load covered only part of what
/// was planned, and the status says so.
pub fn status_in_run(report: &LoadReport, run_status: RunStatus) -> String {
    if report.status != "complete" {
        return report.status.clone();
    }
    match run_status {
        RunStatus::Complete => report.status.clone(),
        RunStatus::Interrupted => "stopped early with the interrupted run".to_string(),
        RunStatus::BrokeThreshold => "stopped early at the run's --break".to_string(),
        RunStatus::Running => "stopped early: the run did not finish".to_string(),
    }
}

/// The table's first line: `load SPEC (STATUS): 10.0 s after 2.0 s warm-up, in cgroup CG`.
pub(crate) fn load_header(report: &LoadReport) -> String {
    header_with_status(report, &report.status)
}

/// [`load_header`] with the status of [`status_in_run`].
pub(crate) fn load_header_of_run(report: &LoadReport, run_status: RunStatus) -> String {
    header_with_status(report, &status_in_run(report, run_status))
}

fn header_with_status(report: &LoadReport, status: &str) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "load {} ({status}): {}",
        report.spec,
        seconds(report.window_ns)
    );
    if report.warmup_ns.get() >= 50_000_000 {
        let _ = write!(out, " after {} warm-up", seconds(report.warmup_ns));
    }
    if let Some(cg) = &report.cgroup {
        let _ = write!(out, ", in cgroup {cg}");
    }
    out
}

/// The generator table's cells: a header row, then one row per generator.
pub(crate) fn load_rows(report: &LoadReport) -> Vec<Vec<String>> {
    let mut rows = vec![vec![
        "generator".to_string(),
        "cpus".to_string(),
        "tasks".to_string(),
        "cpu share".to_string(),
        "rate".to_string(),
        "throughput".to_string(),
    ]];
    for g in &report.generators {
        rows.push(vec![
            g.spec.clone(),
            g.cpus.to_string(),
            g.tasks.to_string(),
            format!("{:.1}%", g.cpu_share_percent),
            if g.ops > 0 || g.unit != "n/a" {
                format!("{} {}/s", format_rate(g.ops_per_sec), g.unit)
            } else {
                "-".to_string()
            },
            if g.bytes > 0 {
                format_throughput(g.bytes_per_sec)
            } else {
                "-".to_string()
            },
        ]);
    }
    rows
}

/// One line for a live view: each generator's CPU share and rate, then the busy share per CPU.
pub fn load_live_line(report: &LoadReport) -> String {
    let mut parts: Vec<String> = report
        .generators
        .iter()
        .map(|g| {
            let rate = if g.unit == "n/a" {
                String::new()
            } else {
                format!(" {} {}/s", format_rate(g.ops_per_sec), g.unit)
            };
            format!("{} {:.0}% cpu{rate}", g.spec, g.cpu_share_percent)
        })
        .collect();
    if !report.cpu_busy.is_empty() {
        let busy: Vec<String> = report
            .cpu_busy
            .iter()
            .map(|b| format!("{}:{:.0}%", b.cpu, b.busy_percent))
            .collect();
        parts.push(format!("busy {}", busy.join(" ")));
    }
    parts.join(" | ")
}

#[cfg(test)]
mod tests {
    use model::CpuSet;
    use model::load::GeneratorReport;
    use model::load::report::{CpuBusy, LOAD_SCHEMA};

    use super::*;

    fn report() -> LoadReport {
        let g =
            |spec: &str, unit: &str, ops: u64, rate: f64, bytes: f64, share: f64| GeneratorReport {
                spec: spec.into(),
                description: String::new(),
                cpus: CpuSet::from_cpus([0, 1]),
                tasks: 2,
                unit: unit.into(),
                ops,
                ops_per_sec: rate,
                bytes: bytes as u64,
                bytes_per_sec: bytes / 10.0,
                cpu_ns: Nanos::ZERO,
                cpu_share_percent: share,
                notes: vec![],
                ended_ns: None,
            };
        let mut cmd = g("cmd:\"make -j2\"", "n/a", 0, 0.0, 0.0, 97.25);
        cmd.notes.push("the command ended by itself".into());
        LoadReport {
            schema: LOAD_SCHEMA.into(),
            build: None,
            spec: "cpu:60%,io:64M:1,cmd:\"make -j2\"".into(),
            window_ns: Nanos::from_secs(10),
            warmup_ns: Nanos::from_secs(2),
            status: "complete".into(),
            cgroup: None,
            generators: vec![
                g("cpu:60%", "loop", 2000, 200.0, 0.0, 60.04),
                g("io:64M:1", "fsync", 152, 15.2, 159_383_552.0, 3.1),
                cmd,
            ],
            cpu_busy: vec![
                CpuBusy {
                    cpu: 0,
                    busy_percent: 61.23,
                    steal_percent: 0.2,
                },
                CpuBusy {
                    cpu: 1,
                    busy_percent: 14.0,
                    steal_percent: 0.0,
                },
            ],
        }
    }

    #[test]
    fn table_layout() {
        let expected = "\
load cpu:60%,io:64M:1,cmd:\"make -j2\" (complete): 10.0 s after 2.0 s warm-up
generator       cpus  tasks  cpu share          rate  throughput
cpu:60%          0-1      2      60.0%  200.0 loop/s           -
io:64M:1         0-1      2       3.1%  15.2 fsync/s  15.2 MiB/s
cmd:\"make -j2\"   0-1      2      97.2%             -           -
busy per CPU (/proc/stat): cpu0 61.2% cpu1 14.0%
note: cmd:\"make -j2\": the command ended by itself
";
        assert_eq!(load_table(&report()), expected);
    }

    #[test]
    fn steal_is_shown_once_a_hypervisor_takes_a_noticeable_share() {
        let mut r = report();
        r.cpu_busy[1].steal_percent = 3.04;
        let table = load_table(&r);
        assert!(
            table.contains(
                "busy per CPU (/proc/stat): cpu0 61.2% cpu1 14.0%\n\
                 stolen by the hypervisor: cpu0 0.2% cpu1 3.0%\n"
            ),
            "{table}"
        );
    }

    #[test]
    fn a_load_the_run_stopped_early_does_not_read_complete() {
        let r = report();
        assert_eq!(run_load_table(&r, RunStatus::Complete), load_table(&r));
        let interrupted = run_load_table(&r, RunStatus::Interrupted);
        assert!(
            interrupted.starts_with(
                "load cpu:60%,io:64M:1,cmd:\"make -j2\" (stopped early with the interrupted run): 10.0 s"
            ),
            "{interrupted}"
        );
        assert!(!interrupted.contains("(complete)"));
        assert_eq!(
            interrupted.lines().skip(1).collect::<Vec<_>>(),
            load_table(&r).lines().skip(1).collect::<Vec<_>>()
        );
        assert!(
            run_load_table(&r, RunStatus::BrokeThreshold)
                .contains("(stopped early at the run's --break)")
        );
        // A status of the load's own (lost, interrupted) is kept as it is.
        let lost = LoadReport {
            status: "lost".into(),
            ..report()
        };
        assert!(run_load_table(&lost, RunStatus::Interrupted).contains("(lost)"));
    }

    #[test]
    fn live_line() {
        assert_eq!(
            load_live_line(&report()),
            "cpu:60% 60% cpu 200.0 loop/s | io:64M:1 3% cpu 15.2 fsync/s | cmd:\"make -j2\" 97% cpu | busy 0:61% 1:14%"
        );
    }

    #[test]
    fn units() {
        assert_eq!(format_rate(999.94), "999.9");
        assert_eq!(format_rate(180_300.0), "180.3k");
        assert_eq!(format_rate(2_500_000.0), "2.50M");
        assert_eq!(format_throughput(100.0), "100 B/s");
        assert_eq!(format_throughput(1536.0), "1.5 KiB/s");
        assert_eq!(
            format_throughput(3.0 * 1024.0 * 1024.0 * 1024.0 * 1024.0),
            "3.0 TiB/s"
        );
    }
}

//! The live per-CPU view redrawn about once a second while `rtlab measure` runs: a title with
//! the progress, a header, one line per CPU and an `all` line.
//!
//! Columns have fixed widths so the frame does not jitter from one refresh to the next, and
//! every line fits [`MAX_WIDTH`] columns (a line that would not, because of an absurd value or a
//! long title, is cut there, since a wrapped line would break the caller's cursor movement).
//! Lines carry no ANSI escapes and no newline: the caller moves the cursor and prints them.

use model::measure::{CpuProgress, Progress};

use crate::table::{format_opt_us, format_opt_us_f64};

/// The widest line [`live_frame`] returns, in columns.
pub const MAX_WIDTH: usize = 100;

/// The lines of one frame: title, header, one line per CPU, `all`.
pub fn live_frame(progress: &Progress, title: &str) -> Vec<String> {
    let mut lines = vec![title_line(progress, title), header()];
    for c in &progress.cpus {
        lines.push(cpu_line(c));
    }
    lines.push(cpu_line(&progress.all));
    for line in &mut lines {
        if let Some((cut, _)) = line.char_indices().nth(MAX_WIDTH) {
            line.truncate(cut);
        }
    }
    lines
}

/// `rtlab measure  12s / 60s  (20%)`, or without the plan when it is unknown (zero).
fn title_line(progress: &Progress, title: &str) -> String {
    let elapsed = progress.elapsed_ns.get();
    let planned = progress.planned_ns.get();
    if planned == 0 {
        return format!("{title}  {}", clock(elapsed));
    }
    let percent = (u128::from(elapsed) * 100 / u128::from(planned)).min(100);
    format!(
        "{title}  {} / {}  ({percent}%)  {} left",
        clock(elapsed),
        clock(planned),
        clock(planned.saturating_sub(elapsed))
    )
}

/// Whole seconds, rounded to the nearest: `12s`, `99s`, then `2m05s`, `1h00m00s`.
fn clock(ns: u64) -> String {
    let s = ns.saturating_add(500_000_000) / 1_000_000_000;
    match s {
        0..100 => format!("{s}s"),
        100..3_600 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m{:02}s", s / 3_600, s / 60 % 60, s % 60),
    }
}

fn header() -> String {
    format!(
        "{:>4} {:>12} {:>10} {:>10} {:>10} {:>10} {:>10} {:>9}",
        "CPU", "samples", "min us", "avg us", "p99 us", "max us", "last us", "overruns"
    )
}

fn cpu_line(c: &CpuProgress) -> String {
    let s = &c.stats;
    let label = c
        .cpu
        .map_or_else(|| "all".to_string(), |cpu| cpu.to_string());
    let last = (s.count > 0).then_some(c.last_ns);
    format!(
        "{:>4} {:>12} {:>10} {:>10} {:>10} {:>10} {:>10} {:>9}",
        label,
        s.count,
        format_opt_us(s.min_ns),
        format_opt_us_f64(s.mean_ns),
        format_opt_us(s.p99_ns),
        format_opt_us(s.max_ns),
        format_opt_us(last),
        s.overruns,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata;
    use model::Nanos;
    use model::measure::MeasureRun;

    /// A progress view of a finished run, as the measure room would publish it.
    fn progress_of(run: &MeasureRun, elapsed: Nanos, planned: Nanos) -> Progress {
        Progress {
            elapsed_ns: elapsed,
            planned_ns: planned,
            cpus: run
                .cpus
                .iter()
                .map(|c| CpuProgress {
                    cpu: Some(c.cpu),
                    stats: c.stats.clone(),
                    last_ns: c.raw.last_ns,
                })
                .collect(),
            all: CpuProgress {
                cpu: None,
                stats: run.all.stats.clone(),
                last_ns: run.all.raw.last_ns,
            },
        }
    }

    #[test]
    fn two_cpu_frame_exactly() {
        let run = testdata::two_cpus();
        let p = progress_of(&run, Nanos(12_400_000_000), Nanos::from_secs(60));
        assert_eq!(
            live_frame(&p, "rtlab measure"),
            [
                "rtlab measure  12s / 60s  (20%)  48s left",
                " CPU      samples     min us     avg us     p99 us     max us    last us  overruns",
                "   0            4       12.3       26.9       66.0       66.0       66.0         0",
                "   1            3       13.0       92.3      250.0      250.0      250.0         1",
                " all            7       12.3       54.9      250.0      250.0      250.0         1",
            ]
        );
    }

    #[test]
    fn empty_cpu_and_unknown_plan() {
        let run = testdata::one_empty_cpu();
        let frame = live_frame(&progress_of(&run, Nanos(500_000_000), Nanos::ZERO), "t");
        assert_eq!(frame[0], "t  1s", "rounded to the nearest second");
        assert_eq!(
            frame[3],
            "   1            0          -          -          -          -          -         0"
        );
    }

    #[test]
    fn long_runs_and_huge_values_fit() {
        let run = testdata::above_range();
        let mut p = progress_of(&run, Nanos::from_secs(3_725), Nanos::from_secs(7_200));
        p.cpus[0].stats.count = u64::MAX;
        p.cpus[0].stats.max_ns = Some(u64::MAX);
        let frame = live_frame(&p, "rtlab measure");
        assert_eq!(
            frame[0],
            "rtlab measure  1h02m05s / 2h00m00s  (51%)  57m55s left"
        );
        for line in &frame {
            assert!(line.len() <= MAX_WIDTH, "{line}");
            assert!(line.is_ascii() && !line.contains('\x1b'), "{line}");
        }
        assert_eq!(clock(Nanos::from_secs(125).get()), "2m05s");
        let overdue = Progress {
            elapsed_ns: Nanos::from_secs(70),
            ..progress_of(&run, Nanos::ZERO, Nanos::from_secs(60))
        };
        assert!(live_frame(&overdue, "x")[0].ends_with("(100%)  0s left"));
        let long_title = "é".repeat(150);
        assert_eq!(live_frame(&p, &long_title)[0].chars().count(), MAX_WIDTH);
    }
}

//! cyclictest's `-b` (`--breaktrace`) ending, in any of its text outputs: when a thread's
//! latency passed the threshold, cyclictest stops every thread and, after its figures, prints
//! `# Thread Ids: TID TID ...` and then `# Break thread: TID` and `# Break value: N` (in the
//! run's unit, microseconds unless `--nsecs`).
//!
//! Such a run measured up to its first spike, not its whole length: it is imported as stopped
//! at its threshold (status `broke-threshold`, with the break event), which no gate passes, as
//! for `rtlab measure --break`. Without those lines the run is left as it was read.

use model::measure::{BreakEvent, MeasureRun, RunStatus};

/// The break cyclictest recorded in `text`: the thread's id and the value in the run's unit.
/// The last of each line counts; a line whose number does not read is no break.
fn find(text: &str) -> Option<(u32, u64, Vec<u32>)> {
    let mut thread = None;
    let mut value = None;
    let mut ids = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if let Some(t) = line.strip_prefix("# Break thread:") {
            thread = t.trim().parse::<u32>().ok();
        } else if let Some(v) = line.strip_prefix("# Break value:") {
            value = v.trim().parse::<u64>().ok();
        } else if let Some(list) = line.strip_prefix("# Thread Ids:") {
            ids = list
                .split_whitespace()
                .map_while(|t| t.parse::<u32>().ok())
                .collect();
        }
    }
    Some((thread?, value?, ids))
}

/// Marks `run` (read from `text`) as stopped at cyclictest's `-b` threshold when `text` says
/// it was, naming the CPU of the thread that passed it: by its thread id in the per-thread
/// figures, else by its place in `# Thread Ids:`, else (said in a note) the CPU with the
/// largest maximum.
pub(crate) fn apply(text: &str, run: &mut MeasureRun) {
    let Some((tid, value, ids)) = find(text) else {
        return;
    };
    let resolution = run
        .import
        .as_ref()
        .map_or(1_000, |i| i.resolution_ns.max(1));
    let latency_ns = value.saturating_mul(resolution);
    let by_tid = run.cpus.iter().find(|c| c.tid == Some(tid)).map(|c| c.cpu);
    let by_place = ids
        .iter()
        .position(|&t| t == tid)
        .and_then(|i| run.cpus.get(i))
        .map(|c| c.cpu);
    let (cpu, guessed) = match by_tid.or(by_place) {
        Some(cpu) => (cpu, false),
        None => match run.cpus.iter().max_by_key(|c| c.raw.max_ns) {
            Some(c) => (c.cpu, true),
            None => return,
        },
    };
    // cyclictest stops the thread at the sample that passed the threshold: its last cycle.
    let cycle = run
        .cpus
        .iter()
        .find(|c| c.cpu == cpu)
        .map_or(0, |c| c.raw.count.saturating_sub(1));
    run.status = RunStatus::BrokeThreshold;
    run.break_event = Some(BreakEvent {
        cpu,
        latency_ns,
        cycle,
        trace_frozen: false,
        tracefs: None,
    });
    if let Some(import) = run.import.as_mut() {
        import.notes.push(format!(
            "cyclictest stopped at its -b threshold: thread {tid} reached {}{}; the run \
             measured up to that spike, not its whole length",
            model::Nanos(latency_ns),
            if guessed {
                format!(
                    ", on CPU {cpu} (the file does not say which CPU that thread ran on: the \
                     one with the largest maximum)"
                )
            } else {
                format!(" on CPU {cpu}")
            }
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_lines_count_and_bad_numbers_are_no_break() {
        let text = "# Thread Ids: 10 11 12\n# Break thread: 11\n# Break value: 151\n";
        assert_eq!(find(text), Some((11, 151, vec![10, 11, 12])));
        assert_eq!(find("# Break thread: 11\n"), None);
        assert_eq!(find("# Break thread: x\n# Break value: 1\n"), None);
        assert_eq!(
            find("# Break thread: 9\n# Break value: 99999999999999999999999\n"),
            None
        );
    }
}

#[cfg(test)]
mod files {
    use crate::tests::{figures, read};
    use model::measure::RunStatus;

    /// cyclictest's `-b 30` output, histogram and summary forms, made on the development VM:
    /// the run stopped at thread 0's 52 us (37 us in the summary run), on CPU 0, at its last
    /// cycle.
    #[test]
    fn a_break_in_cyclictests_output_is_a_run_stopped_at_its_threshold() {
        for (file, latency_ns, cycle) in [
            ("local_cyclictest_b30_h100.txt", 52_000, 0),
            ("local_cyclictest_b30_q.txt", 37_000, 3),
        ] {
            let run = read(file);
            assert_eq!(run.status, RunStatus::BrokeThreshold, "{file}");
            let b = run.break_event.as_ref().expect(file);
            assert_eq!(
                (b.cpu, b.latency_ns, b.cycle),
                (0, latency_ns, cycle),
                "{file}"
            );
            assert_eq!(
                figures(&run)[0].3,
                latency_ns,
                "{file}: the break is CPU 0's maximum"
            );
            let notes = &run.import.as_ref().unwrap().notes;
            assert!(
                notes
                    .iter()
                    .any(|n| n.contains("stopped at its -b threshold")),
                "{file}: {notes:?}"
            );
            assert!(run.unjudgeable().is_some(), "{file}");
        }
        // Without the lines, a run is as it was read.
        for file in [
            "local_cyclictest_h200_stdout.txt",
            "local_cyclictest_summary_q.txt",
        ] {
            let run = read(file);
            assert_eq!(run.status, RunStatus::Complete, "{file}");
            assert!(run.break_event.is_none(), "{file}");
        }
    }
}

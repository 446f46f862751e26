//! The end of a `measure --trace` run: the trace stopped and read back (the snapshot buffer
//! set aside at the last new maximum, then the recording buffer), the worst spikes chosen and
//! explained from the buffer that holds each, and the instance removed.

use model::explain::{Explanation, TraceCapture};
use model::measure::MeasureRun;
use trace::explain::{self, LOOKBACK_NS, Spike, WindowSpec};

use super::Session;

/// Whether the trace showed anything of the spike (its timer, wake-up or switch-in): an
/// explanation without them only restates the latency.
fn grounded(x: &Explanation) -> bool {
    let m = &x.milestones;
    m.timer_fired_ns.is_some() || m.woken_ns.is_some() || m.switched_in_ns.is_some()
}

fn window_spec(s: &Spike) -> WindowSpec {
    WindowSpec {
        cpu: s.cpu,
        from_ts: s.deadline_ts.saturating_sub(LOOKBACK_NS),
        to_ts: s.end_ts.unwrap_or(s.deadline_ts) + 20_000,
    }
}

/// The lines of `w` from shortly before the spike's deadline, under a heading.
fn kept_lines(spike: &Spike, w: &explain::Window) -> String {
    let from = spike.deadline_ts.saturating_sub(LOOKBACK_NS / 4);
    let mut out = format!(
        "# rtlab: CPU {} cycle {} deadline {}.{:09}\n",
        spike.cpu,
        spike.cycle.unwrap_or(0),
        spike.deadline_ts / 1_000_000_000,
        spike.deadline_ts % 1_000_000_000
    );
    for (line, e) in w.text.lines().zip(&w.events) {
        if e.ts_ns >= from {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// Stops the trace, explains the worst spikes of `run` (the breach first; those captured
/// during the run as they came) and removes the instance.
pub(crate) fn finish(session: Session, run: &MeasureRun) -> TraceCapture {
    let Session {
        instance,
        root,
        options,
        clock,
        events,
        missing,
        worst,
    } = session;
    let _ = instance.set_on(false);
    // What each CPU's buffer still holds, before reading it empties it.
    let oldest: Vec<(u32, Option<u64>)> = instance
        .buffer_cpus()
        .into_iter()
        .map(|c| (c, instance.cpu_stats(c).ok().and_then(|s| s.oldest_ns)))
        .collect();
    let frozen_by = if run.break_event.as_ref().is_some_and(|b| b.trace_frozen) {
        "break"
    } else {
        "end"
    };
    let mut capture = TraceCapture {
        instance: instance.name().to_string(),
        clock,
        buffer_kb: options.buffer_kb,
        events,
        missing,
        frozen_by: frozen_by.to_string(),
        ..TraceCapture::default()
    };
    // At a break only: a run that did not break has nothing to explain.
    let explain = match options.at_break_only && run.break_event.is_none() {
        true => 0,
        false => options.explain,
    };
    // The spikes up to the last snapshot are in the snapshot buffer, the later ones in the
    // recording buffer.
    let (kept, later): (Vec<Spike>, Vec<Spike>) = chosen(run, explain).into_iter().partition(|s| {
        worst
            .at_ns
            .is_some_and(|at| s.end_ts.unwrap_or(s.deadline_ts) <= at)
    });
    let mut done = if kept.is_empty() {
        Vec::new()
    } else {
        from_snapshot(&instance, &root, &options, &worst, run, kept, &mut capture)
    };
    if let Some(why) = &worst.failed {
        capture.notes.push(format!(
            "the trace buffer could not be set aside at a new maximum ({why}): the worst spike \
             is explained only if the buffer still held it at the end"
        ));
    }
    let fill = explain.saturating_sub(done.len());
    // Nothing to explain and nothing to keep: the buffer is not read (a monitor's segment
    // without a breach).
    if explain > 0 || options.keep_dir.is_some() {
        done.extend(from_recording(
            &instance,
            &root,
            &options,
            &oldest,
            run,
            (later, fill),
            &mut capture,
        ));
    }
    keep_grounded(done, explain, &mut capture);
    let name = instance.name().to_string();
    if let Err(e) = instance.remove() {
        capture.notes.push(format!(
            "the tracefs instance {name} could not be removed ({e})"
        ));
    }
    capture
}

/// The explanations of the `kept` spikes (those up to the last new maximum) from the snapshot
/// buffer, with notes saying so and naming those it no longer held.
fn from_snapshot(
    instance: &sys::trace_instance::Instance,
    root: &sys::Root,
    options: &crate::config::TraceOptions,
    worst: &super::WorstKept,
    run: &MeasureRun,
    kept: Vec<Spike>,
    capture: &mut TraceCapture,
) -> Vec<Explained> {
    let Some(snapshot) = crate::capture::read_snapshot(instance, root, options.buffer_kb, capture)
    else {
        return Vec::new();
    };
    capture.notes.push(format!(
        "the worst spikes up to the last new maximum ({}) were kept in a snapshot of the trace \
         buffer, set aside at each new maximum ({} times), and are explained from it",
        format_us(worst.max_ns),
        worst.times
    ));
    let (held, gone): (Vec<_>, Vec<_>) = explain_spikes(&snapshot, None, run, kept, 0, capture)
        .into_iter()
        .partition(|(_, x, ..)| grounded(x));
    if !gone.is_empty() {
        let names: Vec<String> = gone
            .iter()
            .map(|(s, ..)| format!("CPU {} cycle {}", s.cpu, s.cycle.unwrap_or(0)))
            .collect();
        capture.notes.push(format!(
            "not explained: {} of the worst spikes ({}) came before the last new maximum and \
             are older than the buffer set aside then (raise --trace-buffer)",
            names.len(),
            names.join(", ")
        ));
    }
    held
}

/// The explanations of the `later` spikes (after the last new maximum, or all of them) from
/// the recording buffer as it is at the end, with `fill` more of the measuring threads' worst
/// wake-ups it holds where too few are left; the whole trace kept where `--trace-dir` asks.
fn from_recording(
    instance: &sys::trace_instance::Instance,
    root: &sys::Root,
    options: &crate::config::TraceOptions,
    oldest: &[(u32, Option<u64>)],
    run: &MeasureRun,
    (later, fill): (Vec<Spike>, usize),
    capture: &mut TraceCapture,
) -> Vec<Explained> {
    let trace = crate::capture::read_trace(instance, root, options.buffer_kb, capture);
    if let Some(dir) = &options.keep_dir {
        match crate::capture::keep(&trace, dir, run) {
            Ok(path) => capture
                .notes
                .push(format!("the whole trace is in {}", path.display())),
            Err(e) => capture
                .notes
                .push(format!("--trace-dir: could not keep the trace ({e})")),
        }
    }
    let notes_before = capture.notes.len();
    let done = explain_spikes(&trace, Some(oldest), run, later, fill, capture);
    drop(trace);
    let lost_old = capture.notes[notes_before..]
        .iter()
        .any(|n| n.contains("older than the trace buffer"));
    if lost_old && !instance.has_snapshot() && run.break_event.is_none() {
        capture.notes.push(
            "this kernel keeps no trace snapshot buffer (CONFIG_TRACER_SNAPSHOT), in which the \
             buffer is set aside at each new maximum so that the worst spike stays explainable"
                .to_string(),
        );
    }
    done
}

/// The explanations the trace grounds (a note for each it does not), worst first, one per
/// spike, at most `n`, into `capture`.
fn keep_grounded(mut done: Vec<Explained>, n: usize, capture: &mut TraceCapture) {
    done.retain(|(s, x, ..)| {
        let ok = grounded(x);
        if !ok {
            capture.notes.push(format!(
                "not explained: CPU {} cycle {}: the trace holds no event of this spike \
                 (events were lost or not recorded)",
                s.cpu,
                s.cycle.unwrap_or(0)
            ));
        }
        ok
    });
    done.sort_by_key(|(s, ..)| std::cmp::Reverse(s.end_ts.unwrap_or(0) - s.deadline_ts));
    done.dedup_by_key(|(s, ..)| (s.cpu, s.cycle));
    done.truncate(n);
    for (_, x, window, lost) in done {
        capture.explanations.push(x);
        capture.window.push_str(&window);
        capture.lost_events += lost;
    }
}

/// A spike, its explanation, the trace lines kept around it and the lost-events markers met.
type Explained = (Spike, Explanation, String, u64);

/// A latency in microseconds, as the notes give it.
fn format_us(ns: u64) -> String {
    format!("{}.{} us", ns / 1_000, (ns % 1_000) / 100)
}

/// The spikes to explain: the breach first, then each CPU's worst, then the next worst, at
/// most `n`.
fn chosen(run: &MeasureRun, n: usize) -> Vec<Spike> {
    let mut all: Vec<(u64, Spike)> = Vec::new();
    for c in &run.cpus {
        for s in &c.spikes {
            all.push((
                s.latency_ns,
                Spike {
                    cpu: c.cpu,
                    pid: c.tid,
                    comm: None,
                    deadline_ts: s.monotonic_ns.saturating_sub(s.latency_ns),
                    end_ts: Some(s.monotonic_ns),
                    cycle: Some(s.cycle),
                },
            ));
        }
    }
    all.sort_by_key(|(l, _)| std::cmp::Reverse(*l));
    let mut out: Vec<Spike> = Vec::new();
    if let Some(b) = &run.break_event
        && let Some(i) = all
            .iter()
            .position(|(_, s)| s.cpu == b.cpu && s.cycle == Some(b.cycle))
    {
        out.push(all.remove(i).1);
    }
    for c in &run.cpus {
        if out.len() < n
            && !out.iter().any(|s| s.cpu == c.cpu)
            && let Some(i) = all.iter().position(|(_, s)| s.cpu == c.cpu)
        {
            out.push(all.remove(i).1);
        }
    }
    out.extend(
        all.into_iter()
            .map(|(_, s)| s)
            .take(n.saturating_sub(out.len())),
    );
    out
}

/// Explains `spikes` from `trace` (the snapshot, or the recording buffer at the end, whose
/// CPUs' `oldest` events say which spikes it no longer holds); with fewer than `n` left, the
/// worst wake-ups of the measuring threads the trace holds are added.
fn explain_spikes(
    trace: &crate::capture::Trace<'_>,
    oldest: Option<&[(u32, Option<u64>)]>,
    run: &MeasureRun,
    mut spikes: Vec<Spike>,
    n: usize,
    capture: &mut TraceCapture,
) -> Vec<Explained> {
    // Spikes older than what a CPU's buffer still holds cannot be explained.
    let mut old: Vec<String> = Vec::new();
    spikes.retain(|s| {
        let oldest = oldest
            .unwrap_or_default()
            .iter()
            .find(|(c, _)| *c == s.cpu)
            .and_then(|(_, o)| *o);
        let kept = oldest.is_none_or(|o| o + LOOKBACK_NS / 4 <= s.deadline_ts);
        if !kept {
            old.push(format!("CPU {} cycle {}", s.cpu, s.cycle.unwrap_or(0)));
        }
        kept
    });
    if !old.is_empty() {
        capture.notes.push(format!(
            "not explained: {} of the worst spikes ({}) are older than the trace buffer held at \
             the end: without --break the buffer keeps only the last stretch of the run (raise \
             --trace-buffer), with --break TIME it is frozen at the first spike over TIME",
            old.len(),
            old.join(", ")
        ));
    }
    let need_scan = capture.clock != "mono" || spikes.len() < n;
    let scan = if need_scan {
        match trace.scan() {
            Ok(s) => Some(s),
            Err(e) => {
                capture.notes.push(format!("reading the trace failed: {e}"));
                return Vec::new();
            }
        }
    } else {
        None
    };
    let offset = match (&scan, capture.clock.as_str()) {
        (Some(s), c) if c != "mono" => s.clock_offset_ns,
        _ => 0,
    };
    // Too few of the run's worst spikes left in the buffer: add the worst wake-ups of the
    // measuring threads it still holds, so the end of the run is explained at least.
    if let Some(scan) = &scan
        && spikes.len() < n
    {
        let added = add_last_wakeups(scan, run, &mut spikes, n, offset);
        if added > 0 && !old.is_empty() {
            capture.notes.push(format!(
                "explained instead: the {added} worst wake-ups of the measuring threads the \
                 buffer still held (the run's last stretch), measured from the trace: deadline \
                 to switch-in"
            ));
        }
    }
    if spikes.is_empty() {
        return Vec::new();
    }
    let specs: Vec<WindowSpec> = spikes.iter().map(window_spec).collect();
    let windows = match trace.collect(&specs) {
        Ok(w) => w,
        Err(e) => {
            capture.notes.push(format!("reading the trace failed: {e}"));
            return Vec::new();
        }
    };
    spikes
        .into_iter()
        .zip(&windows)
        .map(|(spike, window)| {
            let x = explain::explain(window, &spike, offset);
            let text = kept_lines(&spike, window);
            (spike, x, text, window.lost_markers)
        })
        .collect()
}

/// Adds to `spikes`, up to `n`, the worst wake-ups of the run's measuring threads that the
/// trace still holds and no spike already covers; how many were added.
fn add_last_wakeups(
    scan: &explain::Scan,
    run: &MeasureRun,
    spikes: &mut Vec<Spike>,
    n: usize,
    offset: i64,
) -> usize {
    let tids: Vec<(u32, u32)> = run
        .cpus
        .iter()
        .filter_map(|c| Some((c.cpu, c.tid?)))
        .collect();
    let mut extra: Vec<&explain::Wakeup> = scan
        .wakeups
        .iter()
        .filter(|w| tids.contains(&(w.cpu, w.pid)))
        .filter(|w| {
            !spikes
                .iter()
                .any(|s| s.cpu == w.cpu && s.deadline_ts.abs_diff(w.deadline_ts(offset)) < 1_000)
        })
        .collect();
    extra.sort_by_key(|w| std::cmp::Reverse(w.latency_ns(offset)));
    let added = extra.len().min(n - spikes.len());
    spikes.extend(extra.into_iter().take(added).map(|w| Spike {
        cpu: w.cpu,
        pid: Some(w.pid),
        comm: None,
        deadline_ts: w.deadline_ts(offset),
        // The trace's switch-in stands for the clock read it does not show.
        end_ts: Some(w.switched_ts),
        cycle: None,
    }));
    added
}

//! A latency tracer's report (`trace::latency::LatencyReport`: irqsoff, preemptoff,
//! preemptirqsoff, wakeup, wakeup_rt, wakeup_dl) in words: what was off (or who waited) for how
//! long and where, the longest steps, who ran meanwhile, how complete the trace is and the top
//! of the recorded stack.

use trace::latency::{LatencyReport, LatencyTask};

/// One plain-English paragraph of `r`.
pub fn tell(r: &LatencyReport) -> String {
    let mut s = format!("{}: {}.", r.tracer, opening(r));
    steps(&mut s, r);
    let mut tasks: Vec<String> = Vec::new();
    for t in r.entries.iter().map(|e| format!("{}-{}", e.comm, e.pid)) {
        if !tasks.contains(&t) {
            tasks.push(t);
        }
    }
    if tasks.len() > 1 {
        s += &format!(" Tasks on the CPU meanwhile: {}.", tasks.join(", "));
    }
    completeness(&mut s, r);
    if !r.stack.is_empty() {
        let top: Vec<&str> = r.stack.iter().take(3).map(String::as_str).collect();
        let frames = match r.stack.len() {
            1 => "1 frame".to_string(),
            n => format!("{n} frames"),
        };
        s += &format!(
            " Top of the recorded stack ({frames}): {}.",
            top.join(" <- ")
        );
    }
    s
}

/// `71 us`, `0.378 us`: the exact value, as the tracer printed it.
pub fn exact_us(ns: u64) -> String {
    let frac = format!("{:03}", ns % 1000);
    let frac = frac.trim_end_matches('0');
    let dot = if frac.is_empty() { "" } else { "." };
    format!("{}{dot}{frac} us", ns / 1000)
}

/// The three longest steps of 2 us or more, or that there is none.
fn steps(s: &mut String, r: &LatencyReport) {
    let steps: Vec<String> = (r.longest_steps(3).into_iter())
        .filter(|&(_, ns)| ns >= 2000)
        .filter_map(|(i, ns)| {
            let e = r.entries.get(i)?;
            let text = match e.sched() {
                Some(step) if step.switch => format!("the switch to pid {}", step.pid),
                Some(step) => format!("the wake-up of pid {}", step.pid),
                None => e.text.split_whitespace().collect::<Vec<_>>().join(" "),
            };
            let (took, at) = (exact_us(ns), exact_us(e.offset_ns));
            Some(format!("{text} took {took} (at {at})"))
        })
        .collect();
    if !steps.is_empty() {
        *s += &format!(" Longest steps: {}.", steps.join("; "));
    } else if r.entries.len() > 2 {
        *s += " No step between entries took 2 us or more: the time is spread out.";
    }
}

/// How many entries the header counts, how many were lost and how many the text holds.
fn completeness(s: &mut String, r: &LatencyReport) {
    let (Some(shown), Some(total)) = (r.entries_shown, r.entries_total) else {
        return;
    };
    *s += &format!(" The header counts {shown} of {total} entries");
    if shown < total {
        *s += &format!(" ({} lost to a full buffer)", total - shown);
    }
    let held = r.entries.len();
    if r.elided {
        *s += &format!("; the text holds {held}, some were elided");
    } else if (held as u64) < shown {
        *s += &format!("; the text holds only {held}");
    }
    *s += ".";
}

/// The first sentence, without its tracer and full stop.
fn opening(r: &LatencyReport) -> String {
    let lat = exact_us(r.latency_ns);
    let cpu = r.cpu.map(|c| format!(" on CPU {c}")).unwrap_or_default();
    if !r.tracer.starts_with("wakeup") {
        return section_off(r, &lat, &cpu);
    }
    let who = |t: &LatencyTask| format!("{} (pid {}, {})", t.comm, t.pid, policy_words(t));
    let who = r.task.as_ref().map_or("the woken task".to_string(), who);
    let mut s = format!("{who} took {lat} from its wake-up to running{cpu}");
    let pid = r.task.as_ref().map(|t| t.pid);
    let sched = |switch: bool| {
        let mut lines = r.entries.iter();
        let e = lines.find(|e| {
            e.sched()
                .is_some_and(|st| st.switch == switch && pid.is_none_or(|x| x == st.pid))
        })?;
        Some(format!(
            "at {} {} {} (pid {})",
            exact_us(e.offset_ns),
            ["by", "in place of"][usize::from(switch)],
            e.comm,
            e.pid
        ))
    };
    if let Some(woken) = sched(false) {
        s += &format!(". It was woken {woken}");
        if let Some(switched) = sched(true) {
            s += &format!(" and switched in {switched}");
        }
    }
    s
}

/// The irqs/preempt tracers' opening: what was off, how long, in whom, from where to where.
fn section_off(r: &LatencyReport, lat: &str, cpu: &str) -> String {
    let what = match r.tracer.as_str() {
        "irqsoff" => "interrupts were off",
        "preemptoff" => "preemption was off",
        "preemptirqsoff" => "interrupts or preemption were off (nothing could run)",
        _ => "the recorded latency lasted",
    };
    let mut s = format!("{what} for {lat}{cpu}");
    if let Some(t) = &r.task {
        s += &format!(" while {} (pid {}) was running", t.comm, t.pid);
    }
    s + &match (&r.started_at, &r.ended_at) {
        (Some(a), Some(b)) => format!(", from {a} to {b}"),
        (Some(a), None) => format!(", from {a}"),
        (None, Some(b)) => format!(", until {b}"),
        (None, None) => String::new(),
    }
}

/// `SCHED_FIFO prio 94`, `SCHED_OTHER nice 0`.
fn policy_words(t: &LatencyTask) -> String {
    let prio = t.rt_prio.map(|p| format!(" prio {p}")).unwrap_or_default();
    let nice = t.nice.map(|n| format!(" nice {n}")).unwrap_or_default();
    match t.policy {
        Some(0) | None => format!("SCHED_OTHER{nice}"),
        Some(1) => format!("SCHED_FIFO{prio}"),
        Some(2) => format!("SCHED_RR{prio}"),
        Some(3) => format!("SCHED_BATCH{nice}"),
        Some(5) => "SCHED_IDLE".to_string(),
        Some(6) => "SCHED_DEADLINE".to_string(),
        Some(p) => format!("policy {p}"),
    }
}

//! One spike's explanation told in sentences: who woke how late, whether the timer fired on
//! time and what kept it, what held the CPU after the wake-up, the largest part, and the
//! patterns the handlers' work fits. Written for the engineer reading a report, with the
//! numbers that back each claim.

use std::fmt::Write as _;

use model::explain::{Agent, Cause, Explanation, Milestones, PartKind};

use super::us;

/// A timer interrupt this late or less is "on time".
const ON_TIME_NS: u64 = 10_000;

/// Causes under this are not named.
const NAMED_NS: u64 = 1_000;

/// Causes named per phase, at most.
const NAMED: usize = 3;

// The share of the delay a handler's part must have for its pattern to be named (explain sets
// no pattern below it; documents written before it did may hold one).
use model::explain::PATTERN_SHARE;

/// The story of `x`. A document written before explanations kept their phases is told as it
/// was then.
pub fn tell(x: &Explanation) -> String {
    if x.phases.is_none()
        && let Some(old) = &x.old_story
    {
        return old.clone();
    }
    let phases = x.phases.clone().unwrap_or_default();
    let mut s = opening(x);
    let m = &x.milestones;
    armed(&mut s, x, m, &phases.unarmed);
    timer(&mut s, x, m, &phases.before_fire);
    wake_up(&mut s, x, m, &phases.waiting);
    if let Some(sw) = m.switched_in_ns
        && x.latency_ns > sw
    {
        // Only a run's spike ends after the switch-in: at the thread's own clock read.
        let _ = write!(
            s,
            " It read its clock {} after the switch-in.",
            us(x.latency_ns - sw)
        );
    }
    largest(&mut s, x);
    patterns(&mut s, x);
    throttling(&mut s, x);
    s
}

/// `CPU 1: rtlab/1 (pid 812) woke 412 us late at cycle 3.`
fn opening(x: &Explanation) -> String {
    let who = match (&x.comm, x.pid) {
        (Some(c), Some(p)) => format!("{c} (pid {p})"),
        (None, Some(p)) => format!("pid {p}"),
        (Some(c), None) => c.clone(),
        (None, None) => "the thread".to_string(),
    };
    let cycle = x.cycle.map_or(String::new(), |c| format!(" at cycle {c}"));
    format!(
        "CPU {}: {who} woke {} late{cycle}.",
        x.cpu,
        us(x.latency_ns)
    )
}

/// Where the thread armed its timer past the deadline: that it had not gone back to sleep,
/// and what held the CPU until it did.
fn armed(s: &mut String, x: &Explanation, m: &Milestones, unarmed: &[Cause]) {
    if let Some(a) = m.timer_armed_ns {
        let why = if unarmed.iter().any(|c| c.kind == PartKind::Blocked) {
            "it slept on something else than its timer since its previous wake-up"
        } else {
            "it had not gone back to sleep since its previous wake-up"
        };
        let _ = write!(
            s,
            " The thread armed this timer only at +{}, past its deadline: {why}",
            us(a)
        );
        end_with(s, x, unarmed, "; meanwhile ");
    }
}

/// Whether the timer fired on time (from its arming, where that came past the deadline), and
/// if not what the CPU did meanwhile.
fn timer(s: &mut String, x: &Explanation, m: &Milestones, before_fire: &[Cause]) {
    let Some(f) = m.timer_fired_ns else {
        return;
    };
    match m.timer_armed_ns {
        Some(a) if f.saturating_sub(a) <= ON_TIME_NS => {
            let _ = write!(s, " It fired at once (+{}).", us(f));
        }
        Some(a) => {
            let late = us(f.saturating_sub(a));
            let _ = write!(s, " The timer interrupt came {late} after the arming");
            end_with_before_fire(s, x, before_fire);
        }
        None if f <= ON_TIME_NS => {
            let _ = write!(s, " The timer fired on time (+{}).", us(f));
        }
        None => {
            let _ = write!(s, " The timer interrupt came {} late", us(f));
            end_with_before_fire(s, x, before_fire);
        }
    }
}

/// When the thread was woken and switched in, and what held the CPU between.
fn wake_up(s: &mut String, x: &Explanation, m: &Milestones, waiting: &[Cause]) {
    if let Some(w) = m.woken_ns {
        let _ = write!(s, " The thread was woken at +{}", us(w));
        match m.switched_in_ns {
            Some(sw) if sw.saturating_sub(w) > ON_TIME_NS => {
                let _ = write!(s, " and switched in at +{}", us(sw));
                end_with(s, x, waiting, "; meanwhile ");
            }
            // Woken in its own context: its timer fired before it went to sleep.
            Some(_) if m.woken_running => {
                s.push_str(", while it still ran: it never left the CPU.");
            }
            Some(sw) => {
                let _ = write!(s, " and switched in at +{}.", us(sw));
            }
            None => s.push('.'),
        }
    } else if let Some(sw) = m.switched_in_ns {
        let _ = write!(s, " It was switched in at +{}", us(sw));
        end_with(s, x, waiting, "; before that ");
    }
}

/// Ends the sentence: with the largest `causes` after `lead`, or at once when none is worth
/// naming.
fn end_with(s: &mut String, x: &Explanation, causes: &[Cause], lead: &str) {
    let named: Vec<String> = causes
        .iter()
        .filter(|c| c.duration_ns >= NAMED_NS)
        .take(NAMED)
        .map(|c| cause(x, c))
        .collect();
    if named.is_empty() {
        s.push('.');
    } else {
        let _ = write!(s, "{lead}{}.", named.join("; "));
    }
}

/// Ends the sentence on what held the timer interrupt back: a non-preemptible section there is
/// one the trace shows with interrupts off (`irq_disable` with no `irq_enable` before the
/// interrupt), which delays the interrupt itself.
fn end_with_before_fire(s: &mut String, x: &Explanation, causes: &[Cause]) {
    let named: Vec<String> = causes
        .iter()
        .filter(|c| c.duration_ns >= NAMED_NS)
        .take(NAMED)
        .map(|c| match c.kind {
            PartKind::NonPreemptible => format!(
                "{} kept interrupts off for {} (the trace shows them turned off, and not back \
                 on until the interrupt)",
                super::agent::name(&c.what),
                us(c.duration_ns)
            ),
            _ => cause(x, c),
        })
        .collect();
    if named.is_empty() {
        s.push('.');
    } else {
        let _ = write!(s, ": {}.", named.join("; "));
    }
}

/// One cause in words: `hog (pid 812, ...), of higher priority, held the CPU for 3018 us`.
fn cause(x: &Explanation, c: &Cause) -> String {
    let (w, d) = (super::agent::name(&c.what), us(c.duration_ns));
    match c.kind {
        PartKind::Irq => {
            let inside = x
                .parts
                .iter()
                .find(|p| p.kind == PartKind::Irq && p.what == c.what)
                .and_then(|p| p.inside.as_ref());
            match inside {
                Some(i) => format!("{w} ran {d}: {}", super::inside::describe(i)),
                None => format!("{w} ran {d}"),
            }
        }
        PartKind::Softirq => format!("{w} ran {d}"),
        PartKind::TimerDelay => format!("{d} with {w}"),
        PartKind::HigherPriorityTask => format!("{w}, of higher priority, held the CPU for {d}"),
        PartKind::SamePriorityTask => format!(
            "{w}, of the same priority, held the CPU for {d} (FIFO does not preempt its equal)"
        ),
        PartKind::NonPreemptible => format!(
            "{w}, of lower priority as far as the trace shows, kept the CPU for {d}: it could \
             not be preempted (preemption or interrupts off), or its priority was raised while \
             it ran (sched_setscheduler leaves no event)"
        ),
        PartKind::IrqThread => format!("the IRQ thread {w} held the CPU for {d}"),
        PartKind::Blocked => format!("{w} for {d}"),
        PartKind::RtThrottling => match c.what {
            Agent::FromIdle | Agent::Idle => format!("RT throttling left the CPU idle for {d}"),
            _ => format!("RT throttling gave {w} the CPU for {d}"),
        },
        _ => format!("{w}: {d}"),
    }
}

/// `Largest part: higher-priority task (hog ...), 3018 us or 98 %.`
fn largest(s: &mut String, x: &Explanation) {
    if let Some(p) = x.parts.first() {
        let _ = write!(
            s,
            " Largest part: {} ({}), {} or {:.0} %.",
            super::agent::kind(p.kind),
            super::agent::name(&p.what),
            us(p.duration_ns),
            p.share * 100.0
        );
    }
}

/// What RT throttling is and how it is set, once, where it took a real part of the delay.
fn throttling(s: &mut String, x: &Explanation) {
    let throttled: u64 = x
        .parts
        .iter()
        .filter(|p| p.kind == PartKind::RtThrottling)
        .map(|p| p.duration_ns)
        .sum();
    if throttled > 0 && throttled as f64 >= PATTERN_SHARE * x.latency_ns as f64 {
        s.push_str(
            " RT throttling: once real-time tasks have used kernel.sched_rt_runtime_us of a \
             period (950000 of every 1000000 us by default), the kernel runs ordinary tasks \
             over them for the rest of it (since Linux 6.12, the fair server's time); a \
             real-time task that never sleeps causes it. Fix: let the busy real-time task sleep, \
             or set kernel.sched_rt_runtime_us to -1 (then nothing keeps it from starving the \
             CPU).",
        );
    }
}

/// The patterns the handlers' work fits, each named once with its fix: only those of a
/// handler with at least [`PATTERN_SHARE`] of the delay, the evidence that it is a cause.
fn patterns(s: &mut String, x: &Explanation) {
    let mut named = Vec::new();
    for p in x.parts.iter().filter(|p| p.share >= PATTERN_SHARE) {
        if let Some(pattern) = p.inside.as_ref().and_then(|i| i.pattern)
            && !named.contains(&pattern)
        {
            named.push(pattern);
            let _ = write!(
                s,
                " Pattern: {} ({}). Fix: {}.",
                super::fix::pattern(pattern),
                super::agent::name(&p.what),
                super::fix::pattern_fix(pattern)
            );
        }
    }
}

/// How much of the delay the explanation accounts for from what the trace shows, in the words
/// every rendering uses (`rtlab explain`, the report, the server): `the trace shows what took
/// all of the delay`, or its share and what the rest is.
pub fn seen(x: &Explanation) -> String {
    let unseen = x.unseen_ns().min(x.latency_ns);
    let pct = |ns: u64| ns as f64 * 100.0 / x.latency_ns as f64;
    let mut s = if x.latency_ns == 0 || unseen == 0 {
        "accounted for: the trace shows what took all of the delay".to_string()
    } else {
        format!(
            "accounted for: the trace shows what took {:.1} % of the delay; {:.1} % ({}) is time \
             it cannot see into (no event while a task ran or the CPU idled: interrupts off \
             without a tracepoint, an idle exit, or a stalled CPU), told from what came before \
             and after",
            pct(x.latency_ns - unseen),
            pct(unseen),
            us(unseen)
        )
    };
    let blind: Vec<String> = x
        .caveats
        .iter()
        .filter(|c| super::caveat::in_confidence(c))
        .map(super::caveat::say)
        .collect();
    if !blind.is_empty() {
        s.push_str("; not seen: ");
        s.push_str(&blind.join("; "));
    }
    s
}

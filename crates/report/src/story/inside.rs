//! What an interrupt handler did inside its time, in words: the hrtimers it expired, the tasks
//! they woke and the softirqs it raised (`model::explain::HandlerInside`).

use model::explain::HandlerInside;

use super::plural;

/// The handler's work in words: `it expired 17 hrtimers (hrtimer_wakeup 17), woke 17 tasks
/// (rtlab-timer390 3, rtlab-timer391 2, ..., and 9 more, none of them real-time), raised
/// softirq TIMER`.
pub fn describe(inside: &HandlerInside) -> String {
    let mut parts = Vec::new();
    if inside.timer_expiries > 0 {
        let callbacks: Vec<String> = inside
            .timer_callbacks
            .iter()
            .take(3)
            .map(|(f, n)| format!("{f} {n}"))
            .collect();
        parts.push(format!(
            "expired {} ({})",
            plural(inside.timer_expiries.into(), "hrtimer", "hrtimers"),
            callbacks.join(", ")
        ));
    }
    if !inside.woken.is_empty() {
        parts.push(woken(inside));
    }
    if !inside.softirqs_raised.is_empty() {
        parts.push(format!(
            "raised softirq {}",
            inside.softirqs_raised.join(", ")
        ));
    }
    format!("it {}", parts.join(", "))
}

/// `woke 17 tasks (a 3, b 2, c, d, and 5 more, none of them real-time)`.
fn woken(inside: &HandlerInside) -> String {
    let total = inside
        .woken
        .iter()
        .map(|w| w.times)
        .fold(0u32, u32::saturating_add);
    let names: Vec<String> = inside
        .woken
        .iter()
        .take(4)
        .map(|w| {
            if w.times > 1 {
                format!("{} {}", w.comm, w.times)
            } else {
                w.comm.clone()
            }
        })
        .collect();
    let more = inside.woken.len().saturating_sub(4);
    let rt = inside.woken.iter().filter(|w| w.prio < 100).count();
    let priority = match rt {
        0 => ", none of them real-time".to_string(),
        n if n == inside.woken.len() => ", all real-time".to_string(),
        n => format!(", {n} of them real-time"),
    };
    format!(
        "woke {} ({}{}{priority})",
        plural(total.into(), "task", "tasks"),
        names.join(", "),
        if more > 0 {
            format!(", and {more} more")
        } else {
            String::new()
        }
    )
}

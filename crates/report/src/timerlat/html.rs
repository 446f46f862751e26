//! The report's "Inside the kernel (timerlat)" section as an HTML fragment: per CPU the IRQ
//! and thread latency maxima (and the return to user space), where the tracer stopped, the
//! worst activation's parts as a stacked bar with a legend table, its stack and what to do,
//! then every other CPU's analysis collapsed in `<details>`.
//!
//! Plain HTML with inline `style` attributes (the page's Content-Security-Policy allows
//! inline styles and nothing fetched), no script. Every string from outside — names of
//! threads, IRQs and softirqs, stack frames, and the sentences that quote them — is escaped
//! here.

use std::fmt::Write as _;

use model::measure::CpuResult;
use model::timerlat::{Analysis, TimerlatInfo};

use super::{Kind, Part, cpus_of, heading, main_part, max_of, parts, stop_sentence, who};
use crate::format_us;

/// Text made safe for element content and quoted attributes.
fn esc(text: &str) -> String {
    crate::compare::html::escape(text)
}

/// A part's colour in the bar and its legend (the page's palette where it has one).
fn colour(kind: Kind) -> &'static str {
    match kind {
        Kind::Delay => "#9a6700",
        Kind::TimerIrq => "#5b6573",
        Kind::Blocking => "#b42318",
        Kind::Nmi => "#6f42c1",
        Kind::Irq => "#1f6feb",
        Kind::Softirq => "#0b7285",
        Kind::Thread => "#e8590c",
        Kind::Rest => "#c9ced6",
    }
}

/// The section: per-CPU maxima, the stop, the worst activation's breakdown and advice, the
/// other CPUs' analyses collapsed. `thread` is the run's per-CPU thread latency
/// (`MeasureRun::cpus`).
pub fn analyses_html(info: &TimerlatInfo, thread: &[CpuResult]) -> String {
    let mut out =
        String::from("<section class=\"timerlat\">\n<h3>Inside the kernel (timerlat)</h3>\n");
    out.push_str(
        "<p>The kernel's timerlat tracer armed a timer per CPU each period and recorded two \
         latencies: timer expiry to its IRQ handler (IRQ latency: interrupts off, idle \
         states, the hardware) and to the tracer's thread running (thread latency: what \
         cyclictest measures). Its noise events say what the worst activations were made \
         of.</p>\n",
    );
    cpu_table(&mut out, info, thread);
    if let Some(s) = stop_sentence(info) {
        let _ = writeln!(out, "<p class=\"break\">{}</p>", esc(&s));
    }
    if info.lost_events > 0 {
        let _ = writeln!(
            out,
            "<p class=\"note\">{} events were lost: activations are missing from these \
             figures.</p>",
            info.lost_events
        );
    }
    let Some((worst, others)) = info.analyses.split_first() else {
        out.push_str(
            "<p class=\"missing\">No activation was analysed (the trace held no timerlat \
             samples).</p>\n</section>\n",
        );
        return out;
    };
    let _ = writeln!(out, "<h4>The worst: {}</h4>", esc(&heading(worst)));
    breakdown(&mut out, worst);
    for a in others {
        let parts = parts(a);
        let main = main_part(&parts).map_or(String::new(), |p| {
            format!(", mostly {} ({:.1} %)", p.label, a.share(p.ns.unwrap_or(0)))
        });
        let _ = writeln!(
            out,
            "<details class=\"timerlat-analysis\"><summary>{}{}</summary>",
            esc(&heading(a)),
            esc(&main)
        );
        breakdown(&mut out, a);
        out.push_str("</details>\n");
    }
    out.push_str("</section>\n");
    out
}

/// Per CPU: IRQ, thread (and user) maxima, and the main part of its analysed worst.
fn cpu_table(out: &mut String, info: &TimerlatInfo, thread: &[CpuResult]) {
    let user = !info.user.is_empty();
    out.push_str(
        "<div class=\"scroll\"><table class=\"timerlat-cpus\">\n<thead><tr><th>CPU</th>\
         <th>IRQ max (us)</th><th>thread max (us)</th>",
    );
    if user {
        out.push_str("<th>return to user max (us)</th>");
    }
    out.push_str("<th>main part of its worst</th></tr></thead>\n<tbody>\n");
    for cpu in cpus_of(info, thread) {
        let _ = write!(
            out,
            "<tr><td>{cpu}</td><td>{}</td><td>{}</td>",
            max_of(&info.irq, cpu),
            max_of(thread, cpu)
        );
        if user {
            let _ = write!(out, "<td>{}</td>", max_of(&info.user, cpu));
        }
        let main = info
            .analyses
            .iter()
            .find(|a| a.cpu == cpu)
            .and_then(|a| {
                let parts = parts(a);
                main_part(&parts)
                    .map(|p| format!("{} ({:.1} %)", p.label, a.share(p.ns.unwrap_or(0))))
            })
            .unwrap_or_else(|| "-".to_string());
        let _ = writeln!(out, "<td>{}</td></tr>", esc(&main));
    }
    out.push_str("</tbody></table></div>\n");
}

/// One analysis: the stacked bar, the parts with their items, the stack, the advice.
fn breakdown(out: &mut String, a: &Analysis) {
    let parts = parts(a);
    bar(out, a, &parts);
    out.push_str(
        "<div class=\"scroll\"><table class=\"timerlat-parts\">\n<thead><tr><th>part</th>\
         <th>who</th><th>time (us)</th><th>share</th></tr></thead>\n<tbody>\n",
    );
    for p in &parts {
        let note = if p.note.is_empty() {
            String::new()
        } else {
            format!(" <span class=\"note\">({})</span>", esc(p.note))
        };
        let _ = writeln!(
            out,
            "<tr><td>{}{}{note}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            swatch(p.kind),
            esc(p.label),
            esc(&p.who),
            p.ns.map_or_else(|| "-".to_string(), format_us),
            p.ns.map_or(String::new(), |n| format!("{:.1} %", a.share(n)))
        );
        for i in p.items {
            let _ = writeln!(
                out,
                "<tr><td></td><td>{}</td><td>{}</td><td>{:.1} %</td></tr>",
                esc(&who(i)),
                format_us(i.duration_ns),
                a.share(i.duration_ns)
            );
        }
    }
    let _ = writeln!(
        out,
        "</tbody>\n<tfoot><tr><td>{}</td><td></td><td>{}</td><td>100 %</td></tr></tfoot>\
         </table></div>",
        esc(a.context.describe()),
        format_us(a.total_ns)
    );
    if let Some(p) = &a.previous_irq {
        let _ = writeln!(
            out,
            "<p class=\"note\">The IRQ {} ({} us) was running when the timer expired and may \
             account for part of the handler's delay.</p>",
            esc(&who(p)),
            format_us(p.duration_ns)
        );
    }
    if !a.stack.is_empty() {
        out.push_str("<details><summary>Stack in the timer's IRQ (innermost first)</summary><pre>");
        for f in &a.stack {
            let _ = writeln!(out, "{}", esc(f));
        }
        out.push_str("</pre></details>\n");
    }
    let _ = writeln!(
        out,
        "<p class=\"advice\"><strong>What to do:</strong> {}</p>",
        esc(&super::advice(a))
    );
}

fn swatch(kind: Kind) -> String {
    format!(
        "<span style=\"display:inline-block;width:.8em;height:.8em;margin-right:.4em;\
         background:{}\"></span>",
        colour(kind)
    )
}

/// The parts side by side, each as wide as its share (shrunk together should they pass
/// 100 %: the IRQ's and the trace's clocks differ).
fn bar(out: &mut String, a: &Analysis, parts: &[Part<'_>]) {
    let _ = write!(
        out,
        "<div class=\"timerlat-bar\" role=\"img\" aria-label=\"{}\" style=\"display:flex;\
         height:1.5rem;margin:.5rem 0;border:1px solid #d9dde3;background:#fff\">",
        esc(&format!(
            "parts of the {} of {} us",
            a.context.describe(),
            format_us(a.total_ns)
        ))
    );
    for p in parts {
        let ns = p.ns.unwrap_or(0);
        let share = a.share(ns).clamp(0.0, 100.0);
        if share < 0.05 {
            continue;
        }
        let title = format!(
            "{}{}: {} us ({share:.1} %)",
            p.label,
            if p.who.is_empty() {
                String::new()
            } else {
                format!(" {}", p.who)
            },
            format_us(ns)
        );
        let _ = write!(
            out,
            "<span style=\"flex:0 1 {share:.2}%;background:{}\" title=\"{}\"></span>",
            colour(p.kind),
            esc(&title)
        );
    }
    out.push_str("</div>\n");
}

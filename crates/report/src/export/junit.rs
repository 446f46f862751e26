//! A measurement as JUnit XML for CI systems (Jenkins, GitLab, GitHub test reporters): one test
//! case per measured CPU, checked against a latency budget.
//!
//! The form is the widely read Ant/Surefire one: `<testsuites>` holding one `<testsuite>` named
//! `rtlab measure HOST` (`rtlab measure HOST: LABEL` for a labelled run), with `<properties>`
//! describing the run (its label and load among them, when it has them), one `<testcase>` per CPU
//! (`classname="rtlab.measure.HOST"`, `name="cpu3 max latency <= 100us"`) and the run's
//! warnings and `--break` event in the suite's `<system-out>`.
//!
//! The first test case, `run complete with samples`, judges the run as a whole: an
//! `<error type="unjudgeable">` when the run cannot pass any gate (it did not finish, stopped
//! at `--break`, or measured nothing on some CPU: [`MeasureRun::unjudgeable`]), so an empty
//! or unfinished result is never a green `tests="0"` suite.
//!
//! Verdict per CPU, in this order:
//! * no samples at all: an `<error type="no-samples">` (the budget could not be checked, which
//!   a gate must not read as a pass);
//! * maximum above the budget: a `<failure type="latency">`, message `max 412.3us > budget
//!   100us`; a maximum equal to the budget passes. This is the gate's rule ([`model::gate`]),
//!   the same as `rtlab measure --budget`'s: overruns (missed periods) fail no test case of
//!   their own, their late samples are in the maximum (issue #27; before it, a CPU with
//!   overruns failed with type `overrun` even within the budget).
//!
//! The failure's text gives the CPU's sample count, overruns and its tail (p99, p99.9,
//! p99.99, max). Latencies are printed in microseconds with one decimal, as `rtlab measure`
//! prints them. Times are seconds with three decimals: the suite's is the run's elapsed time,
//! and each test case's is the same, because all CPUs were measured at once. `timestamp` is
//! the run's start in the schema's form (`2026-01-12T11:52:32`, no zone; the value is UTC,
//! and the exact `started_at` is among the properties). In the classname the host's dots
//! become `_`, since report viewers split a classname into packages at dots; names and
//! properties keep the hostname as it is.
//!
//! Written with quick-xml's writer, so attribute and text escaping is the library's. Characters
//! XML 1.0 cannot carry at all (C0 controls other than tab, LF and CR) are replaced by U+FFFD
//! first: a hostname may hold anything.

use std::io;

use model::Nanos;
use model::gate::{Gate, Reason};
use model::measure::{CpuResult, MeasureRun};
use model::noise::NoiseCpu;
use quick_xml::Writer;
use quick_xml::events::{BytesDecl, BytesText, Event};

use crate::table::{format_opt_us, format_us};

/// The run as a JUnit XML document (UTF-8, with an XML declaration, two-space indentation,
/// ending with a newline): one test case per CPU, failing where the gate ([`model::gate`])
/// fails the CPU against `budget` (its maximum latency is over it),
/// erroring when it has no samples.
pub fn junit(run: &MeasureRun, budget: Nanos) -> String {
    junit_labelled(run, budget, None)
}

/// [`junit`] of a run with a `label` (a stored run's): the suite is named by it too.
pub fn junit_labelled(run: &MeasureRun, budget: Nanos, label: Option<&str>) -> String {
    let whole = match run.unjudgeable() {
        None => Verdict::Pass,
        Some(message) => Verdict::Error {
            kind: "unjudgeable",
            message,
        },
    };
    let gate = Gate::new(Some(budget));
    let verdicts: Vec<Verdict> = std::iter::once(whole)
        .chain(
            run.cpus
                .iter()
                .map(|c| verdict(c, noise_cpu(run, c.cpu), &gate)),
        )
        .collect();
    let failures = verdicts
        .iter()
        .filter(|v| matches!(v, Verdict::Failure { .. }))
        .count();
    let errors = verdicts
        .iter()
        .filter(|v| matches!(v, Verdict::Error { .. }))
        .count();
    let doc = Doc {
        run,
        budget,
        label: label.map(xml_safe),
        host: xml_safe(if run.host.hostname.is_empty() {
            "(unknown)"
        } else {
            &run.host.hostname
        }),
        tests: verdicts.len().to_string(),
        failures: failures.to_string(),
        errors: errors.to_string(),
        time: format_secs(run.elapsed_ns.get()),
    };
    let mut writer = Writer::new_with_indent(Vec::new(), b' ', 2);
    doc.write(&mut writer, &verdicts)
        .expect("writing XML into memory cannot fail");
    let mut bytes = writer.into_inner();
    bytes.push(b'\n');
    String::from_utf8(bytes).expect("every piece written is a str")
}

/// A failure's message: `max 412.3us > budget 100us`, and the CPU's missed periods when it had
/// any (`; 2 overruns (missed periods)`).
fn failure_message(max: u64, budget: Nanos, overruns: u64) -> String {
    let mut message = format!("max {}us > budget {budget}", format_us(max));
    if overruns > 0 {
        let plural = if overruns == 1 { "" } else { "s" };
        message.push_str(&format!(
            "; {} (missed period{plural})",
            counted(overruns, "overrun")
        ));
    }
    message
}

/// What a CPU's test case reports.
enum Verdict {
    Pass,
    Failure {
        kind: &'static str,
        message: String,
        details: String,
    },
    Error {
        kind: &'static str,
        message: String,
    },
}

/// A noise run's figures of `cpu`, which the gate holds it to.
fn noise_cpu(run: &MeasureRun, cpu: u32) -> Option<&NoiseCpu> {
    run.noise.as_ref()?.cpus.iter().find(|n| n.cpu == cpu)
}

/// A CPU's test case: the gate's verdict on its maximum (a noise run's CPU: its longest
/// interruption, `noise`).
fn verdict(c: &CpuResult, noise: Option<&NoiseCpu>, gate: &Gate) -> Verdict {
    let s = &c.stats;
    let Some(max) = s.max_ns.filter(|_| s.count > 0) else {
        return Verdict::Error {
            kind: "no-samples",
            message: format!("no samples measured on CPU {}", c.cpu),
        };
    };
    let reason = match noise {
        Some(n) => gate.judge_noise_cpu(n),
        None => gate.judge_cpu(c),
    };
    let Some(Reason::OverBudget { ns, budget, .. }) = reason else {
        return Verdict::Pass;
    };
    Verdict::Failure {
        kind: "latency",
        message: failure_message(ns, budget, s.overruns),
        details: format!(
            "CPU {cpu}: {count}, {overruns}\n\
             p99 {p99}us, p99.9 {p99_9}us, p99.99 {p99_99}us, max {max}us (budget {budget})",
            cpu = c.cpu,
            count = counted(s.count, "sample"),
            overruns = counted(s.overruns, "overrun"),
            p99 = format_opt_us(s.p99_ns),
            p99_9 = format_opt_us(s.p99_9_ns),
            p99_99 = format_opt_us(s.p99_99_ns),
            max = format_us(max),
        ),
    }
}

/// The figures every element needs, computed once.
struct Doc<'a> {
    run: &'a MeasureRun,
    budget: Nanos,
    label: Option<String>,
    host: String,
    tests: String,
    failures: String,
    errors: String,
    time: String,
}

impl Doc<'_> {
    fn write(&self, w: &mut Writer<Vec<u8>>, verdicts: &[Verdict]) -> io::Result<()> {
        w.write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)))?;
        w.create_element("testsuites")
            .with_attributes([
                ("name", "rtlab measure"),
                ("tests", self.tests.as_str()),
                ("failures", self.failures.as_str()),
                ("errors", self.errors.as_str()),
                ("time", self.time.as_str()),
            ])
            .write_inner_content(|w| self.write_suite(w, verdicts))?;
        Ok(())
    }

    fn write_suite(&self, w: &mut Writer<Vec<u8>>, verdicts: &[Verdict]) -> io::Result<()> {
        let name = match &self.label {
            Some(label) => format!("rtlab measure {}: {label}", self.host),
            None => format!("rtlab measure {}", self.host),
        };
        let timestamp = super::parse_utc(&self.run.started_at)
            .map(|t| {
                let text = humantime::format_rfc3339_seconds(t).to_string();
                text.trim_end_matches('Z').to_string()
            })
            .unwrap_or_default();
        let mut suite = w.create_element("testsuite").with_attributes([
            ("name", name.as_str()),
            ("tests", self.tests.as_str()),
            ("failures", self.failures.as_str()),
            ("errors", self.errors.as_str()),
            ("skipped", "0"),
            ("time", self.time.as_str()),
        ]);
        if !timestamp.is_empty() {
            suite = suite.with_attribute(("timestamp", timestamp.as_str()));
        }
        suite
            .with_attribute(("hostname", self.host.as_str()))
            .write_inner_content(|w| {
                self.write_properties(w)?;
                let (whole, per_cpu) = verdicts.split_first().expect("the run's own case");
                self.write_case(w, "run complete with samples", whole)?;
                for (c, v) in self.run.cpus.iter().zip(per_cpu) {
                    let what = if self.run.noise.is_some() {
                        "longest interruption"
                    } else {
                        "max latency"
                    };
                    let name = format!("cpu{} {what} <= {}", c.cpu, self.budget);
                    self.write_case(w, &name, v)?;
                }
                let out = self.system_out();
                if !out.is_empty() {
                    w.create_element("system-out")
                        .write_text_content(BytesText::new(&out))?;
                }
                Ok(())
            })?;
        Ok(())
    }

    fn write_properties(&self, w: &mut Writer<Vec<u8>>) -> io::Result<()> {
        let run = self.run;
        let p = &run.params;
        let mut props = vec![
            ("rtlab.version", run.rtlab_version.clone()),
            ("host", run.host.hostname.clone()),
            ("kernel.release", run.host.kernel_release.clone()),
            ("kernel.version", run.host.kernel_version.clone()),
            ("kernel.preempt_rt", run.host.preempt_rt.to_string()),
            ("status", run.status.as_str().to_string()),
            ("started_at", run.started_at.clone()),
            ("ended_at", run.ended_at.clone()),
            ("elapsed", run.elapsed_ns.to_string()),
            ("cpus", p.cpus.to_string()),
            ("policy", p.policy.as_str().to_string()),
            ("priority", p.priority.to_string()),
            ("interval", p.interval_ns.to_string()),
            ("clock", p.clock.clone()),
            ("budget", self.budget.to_string()),
        ];
        props.extend(self.label.clone().map(|l| ("label", l)));
        props.extend(run.load.as_ref().map(|l| ("load", l.spec.clone())));
        w.create_element("properties").write_inner_content(|w| {
            for (name, value) in &props {
                w.create_element("property")
                    .with_attributes([("name", *name), ("value", xml_safe(value).as_str())])
                    .write_empty()?;
            }
            Ok(())
        })?;
        Ok(())
    }

    fn write_case(&self, w: &mut Writer<Vec<u8>>, name: &str, v: &Verdict) -> io::Result<()> {
        let classname = format!("rtlab.measure.{}", self.host.replace('.', "_"));
        let case = w.create_element("testcase").with_attributes([
            ("classname", classname.as_str()),
            ("name", name),
            ("time", self.time.as_str()),
        ]);
        match v {
            Verdict::Pass => {
                case.write_empty()?;
            }
            Verdict::Failure {
                kind,
                message,
                details,
            } => {
                case.write_inner_content(|w| {
                    w.create_element("failure")
                        .with_attributes([("message", message.as_str()), ("type", *kind)])
                        .write_text_content(BytesText::new(details))?;
                    Ok(())
                })?;
            }
            Verdict::Error { kind, message } => {
                case.write_inner_content(|w| {
                    w.create_element("error")
                        .with_attributes([("message", message.as_str()), ("type", *kind)])
                        .write_empty()?;
                    Ok(())
                })?;
            }
        }
        Ok(())
    }

    /// The `--break` event and the warnings, one line each.
    fn system_out(&self) -> String {
        let mut lines = Vec::new();
        if let Some(e) = &self.run.break_event {
            lines.push(format!(
                "break: CPU {} woke {}us late at cycle {}",
                e.cpu,
                format_us(e.latency_ns),
                e.cycle
            ));
        }
        for warning in &self.run.warnings {
            lines.push(format!("warning: {}", warning.message));
        }
        xml_safe(&lines.join("\n"))
    }
}

/// `1 sample`, `3 samples`.
fn counted(n: u64, noun: &str) -> String {
    format!("{n} {noun}{}", if n == 1 { "" } else { "s" })
}

/// Seconds with three decimals, rounded half up: `60.000`, `0.500`.
fn format_secs(ns: u64) -> String {
    let ms = ns / 1_000_000 + u64::from(ns % 1_000_000 >= 500_000);
    format!("{}.{:03}", ms / 1000, ms % 1000)
}

/// `text` with every character XML 1.0 cannot represent (C0 controls other than tab, LF, CR;
/// U+FFFE, U+FFFF) replaced by U+FFFD. Escaping is left to the writer.
fn xml_safe(text: &str) -> String {
    text.chars()
        .map(|ch| match ch {
            '\t' | '\n' | '\r' => ch,
            '\u{0}'..='\u{1f}' | '\u{fffe}' | '\u{ffff}' => '\u{fffd}',
            _ => ch,
        })
        .collect()
}

#[cfg(test)]
mod tests;

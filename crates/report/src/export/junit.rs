//! A measurement as JUnit XML for CI systems (Jenkins, GitLab, GitHub test reporters): one test
//! case per measured CPU, checked against a latency budget.
//!
//! The form is the widely read Ant/Surefire one: `<testsuites>` holding one `<testsuite>` named
//! `rtlab measure HOST` (`rtlab measure HOST: LABEL` for a labelled run), with `<properties>`
//! describing the run (its label and load among them, when it has them), one `<testcase>` per CPU
//! (`classname="rtlab.measure.HOST"`, `name="cpu3 max latency <= 100us"`) and the run's
//! warnings and `--break` event in the suite's `<system-out>`.
//!
//! The document renders the gate's one verdict on the run ([`model::gate::judge`]): the run's
//! own criteria (the budget it was measured with), or a budget given now, which the
//! `rtlab.criteria` property says in words; the `rtlab.verdict` property is the verdict's word
//! (`pass`, `fail`, `unjudgeable`), and the document fails exactly when the verdict does.
//!
//! The first test case, `run complete with samples`, judges the run as a whole: an
//! `<error type="unjudgeable">` when the run cannot pass any gate (it did not finish, stopped
//! at `--break`, or measured nothing on some CPU: [`MeasureRun::unjudgeable`]), so an empty
//! or unfinished result is never a green `tests="0"` suite.
//!
//! Then one test case per CPU the gate checked (a noise run's: its longest interruption):
//! * no samples at all: an `<error type="no-samples">` (the budget could not be checked, which
//!   a gate must not read as a pass);
//! * its worst figure above the budget: a `<failure type="latency">`, message `max 412.3us >
//!   budget 100us`; a maximum equal to the budget passes. Overruns (missed periods) fail no
//!   test case of their own, their late samples are in the maximum (issue #27). A run held to
//!   no budget has the cases too (`cpu1 max latency`), failing only without samples.
//!
//! Then, for a `--workload` run, one test case per CPU's jobs (`cpu1 jobs within the 500us
//! deadline`): a `<failure type="deadline">` when a job missed it.
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
use model::gate::{CpuCheck, Reason, Verdict as GateVerdict, Worst};
use model::measure::MeasureRun;
use quick_xml::Writer;
use quick_xml::events::{BytesDecl, BytesText, Event};

use crate::table::{format_opt_us, format_us};

/// The run as a JUnit XML document (UTF-8, with an XML declaration, two-space indentation,
/// ending with a newline), judged against its own criteria or a budget `given` now.
pub fn junit(run: &MeasureRun, given: Option<Nanos>) -> String {
    junit_labelled(run, &model::gate::judge(run, given), None)
}

/// The run as a JUnit document rendering `verdict` (the gate's on it), with a `label` (a stored
/// run's): the suite is named by it too.
pub fn junit_labelled(run: &MeasureRun, verdict: &GateVerdict, label: Option<&str>) -> String {
    let whole = match verdict.unjudgeable() {
        None => Verdict::Pass,
        Some(message) => Verdict::Error {
            kind: "unjudgeable",
            message: message.to_string(),
        },
    };
    let budget = verdict.criteria.budget;
    let mut cases: Vec<(String, Verdict)> = vec![("run complete with samples".to_string(), whole)];
    for check in &verdict.cpus {
        let what = match check.worst {
            Worst::Maximum => "max latency",
            Worst::Interruption => "longest interruption",
        };
        let name = match budget {
            Some(b) => format!("cpu{} {what} <= {b}", check.cpu),
            None => format!("cpu{} {what}", check.cpu),
        };
        cases.push((name, cpu_case(run, check, budget)));
    }
    if let Some(w) = &run.workload {
        for c in &w.cpus {
            let name = format!("cpu{} jobs within the {} deadline", c.cpu, w.deadline_ns);
            cases.push((name, deadline_case(verdict, c.cpu)));
        }
    }
    let failures = cases
        .iter()
        .filter(|(_, v)| matches!(v, Verdict::Failure { .. }))
        .count();
    let errors = cases
        .iter()
        .filter(|(_, v)| matches!(v, Verdict::Error { .. }))
        .count();
    let doc = Doc {
        run,
        verdict,
        label: label.map(xml_safe),
        host: xml_safe(if run.host.hostname.is_empty() {
            "(unknown)"
        } else {
            &run.host.hostname
        }),
        tests: cases.len().to_string(),
        failures: failures.to_string(),
        errors: errors.to_string(),
        time: format_secs(run.elapsed_ns.get()),
    };
    let mut writer = Writer::new_with_indent(Vec::new(), b' ', 2);
    doc.write(&mut writer, &cases)
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

/// A CPU's test case: the gate's check of its worst figure, with the CPU's tail as details.
fn cpu_case(run: &MeasureRun, check: &CpuCheck, budget: Option<Nanos>) -> Verdict {
    let Some(worst) = check.ns else {
        return Verdict::Error {
            kind: "no-samples",
            message: format!("no samples measured on CPU {}", check.cpu),
        };
    };
    let (true, Some(budget)) = (check.over, budget) else {
        return Verdict::Pass;
    };
    let details = match run.cpus.iter().find(|c| c.cpu == check.cpu) {
        Some(c) if check.worst == Worst::Maximum => {
            let s = &c.stats;
            format!(
                "CPU {cpu}: {count}, {overruns}\n\
                 p99 {p99}us, p99.9 {p99_9}us, p99.99 {p99_99}us, max {max}us (budget {budget})",
                cpu = c.cpu,
                count = counted(s.count, "sample"),
                overruns = counted(s.overruns, "overrun"),
                p99 = format_opt_us(s.p99_ns),
                p99_9 = format_opt_us(s.p99_9_ns),
                p99_99 = format_opt_us(s.p99_99_ns),
                max = format_us(worst),
            )
        }
        _ => format!(
            "CPU {}: longest interruption {}us (budget {budget})",
            check.cpu,
            format_us(worst)
        ),
    };
    let overruns = run
        .cpus
        .iter()
        .find(|c| c.cpu == check.cpu)
        .map_or(0, |c| c.stats.overruns);
    Verdict::Failure {
        kind: "latency",
        message: failure_message(worst, budget, overruns),
        details,
    }
}

/// A CPU's jobs' test case: failed when the gate found a missed deadline there.
fn deadline_case(verdict: &GateVerdict, cpu: u32) -> Verdict {
    verdict
        .failures()
        .find(|r| matches!(r, Reason::DeadlineMissed { cpu: c, .. } if *c == cpu))
        .map_or(Verdict::Pass, |r| Verdict::Failure {
            kind: "deadline",
            message: crate::story::verdict::words(r),
            details: crate::story::verdict::words(r),
        })
}

/// The figures every element needs, computed once.
struct Doc<'a> {
    run: &'a MeasureRun,
    verdict: &'a GateVerdict,
    label: Option<String>,
    host: String,
    tests: String,
    failures: String,
    errors: String,
    time: String,
}

impl Doc<'_> {
    fn write(&self, w: &mut Writer<Vec<u8>>, verdicts: &[(String, Verdict)]) -> io::Result<()> {
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

    fn write_suite(&self, w: &mut Writer<Vec<u8>>, cases: &[(String, Verdict)]) -> io::Result<()> {
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
                for (name, v) in cases {
                    self.write_case(w, name, v)?;
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
        ];
        props.extend(
            self.verdict
                .criteria
                .budget
                .map(|b| ("budget", b.to_string())),
        );
        props.push(("rtlab.verdict", self.verdict.outcome().as_str().to_string()));
        props.push(("rtlab.criteria", self.verdict.criteria.describe()));
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

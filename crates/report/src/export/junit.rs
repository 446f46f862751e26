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
//!   100us`; a maximum equal to the budget passes;
//! * overruns (missed periods: the thread woke after its next deadline, so at least one period
//!   had no sample and the maximum alone understates what happened): a failure of type
//!   `overrun`, message `2 overruns (missed periods)`. When the maximum failed too, the one
//!   `<failure>` (the schema allows one per test case) keeps type `latency` and its message
//!   names both.
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

use quick_xml::Writer;
use quick_xml::events::{BytesDecl, BytesText, Event};
use rtlab_model::Nanos;
use rtlab_model::measure::{CpuResult, MeasureRun};

use crate::table::{format_opt_us, format_us};

/// The run as a JUnit XML document (UTF-8, with an XML declaration, two-space indentation,
/// ending with a newline): one test case per CPU, failing when the CPU's maximum latency
/// exceeds `budget` or it had overruns, erroring when it has no samples.
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
    let verdicts: Vec<Verdict> = std::iter::once(whole)
        .chain(run.cpus.iter().map(|c| verdict(c, budget)))
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

/// Whether the JUnit document for `run` against `budget` would have no failure and no error:
/// the verdict a CI system reads from it, for the exit status of the command that wrote it.
pub fn junit_passes(run: &MeasureRun, budget: Nanos) -> bool {
    run.unjudgeable().is_none()
        && run
            .cpus
            .iter()
            .all(|c| matches!(verdict(c, budget), Verdict::Pass))
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

fn verdict(c: &CpuResult, budget: Nanos) -> Verdict {
    let s = &c.stats;
    let Some(max) = s.max_ns.filter(|_| s.count > 0) else {
        return Verdict::Error {
            kind: "no-samples",
            message: format!("no samples measured on CPU {}", c.cpu),
        };
    };
    let over_budget = max > budget.get();
    let mut reasons = Vec::new();
    if over_budget {
        reasons.push(format!("max {}us > budget {budget}", format_us(max)));
    }
    if s.overruns > 0 {
        let plural = if s.overruns == 1 { "" } else { "s" };
        reasons.push(format!(
            "{} (missed period{plural})",
            counted(s.overruns, "overrun")
        ));
    }
    if reasons.is_empty() {
        return Verdict::Pass;
    }
    Verdict::Failure {
        kind: if over_budget { "latency" } else { "overrun" },
        message: reasons.join("; "),
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
                    let name = format!("cpu{} max latency <= {}", c.cpu, self.budget);
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
mod tests {
    use super::*;
    use crate::testdata;
    use quick_xml::events::BytesStart;
    use quick_xml::{Reader, XmlVersion};
    use std::collections::BTreeMap;

    /// One element as read back: name, attributes (unescaped) and text content.
    #[derive(Debug, Default)]
    struct Element {
        name: String,
        attrs: BTreeMap<String, String>,
        text: String,
    }

    fn element(e: &BytesStart) -> Element {
        let attrs = e
            .attributes()
            .map(|a| {
                let a = a.expect("well-formed attribute");
                let key = a.key.as_ref().to_string();
                let value = a.normalized_value(XmlVersion::Explicit1_0);
                (key, value.expect("valid escape").into_owned())
            })
            .collect();
        Element {
            name: e.name().as_ref().to_string(),
            attrs,
            text: String::new(),
        }
    }

    /// Parses the document with quick-xml's reader, checking that tags balance, and returns
    /// every element in document order.
    fn parse(xml: &str) -> Vec<Element> {
        let mut reader = Reader::from_str(xml);
        let mut elements: Vec<Element> = Vec::new();
        let mut open: Vec<usize> = Vec::new();
        loop {
            match reader.read_event().expect("well-formed XML") {
                Event::Start(e) => {
                    open.push(elements.len());
                    elements.push(element(&e));
                }
                Event::Empty(e) => elements.push(element(&e)),
                Event::End(e) => {
                    let i = open.pop().expect("an open element");
                    assert_eq!(e.name().as_ref(), elements[i].name);
                }
                Event::Text(t) => {
                    if let Some(&i) = open.last() {
                        elements[i].text.push_str(&t.xml10_content());
                    }
                }
                Event::GeneralRef(r) => {
                    let text = match r.as_ref() {
                        "lt" => "<".to_string(),
                        "gt" => ">".to_string(),
                        "amp" => "&".to_string(),
                        "quot" => "\"".to_string(),
                        "apos" => "'".to_string(),
                        other => panic!("unexpected entity {other}"),
                    };
                    if let Some(&i) = open.last() {
                        elements[i].text.push_str(&text);
                    }
                }
                Event::Eof => break,
                _ => {}
            }
        }
        assert!(open.is_empty(), "unclosed elements");
        elements
    }

    fn named<'a>(elements: &'a [Element], name: &str) -> Vec<&'a Element> {
        elements.iter().filter(|e| e.name == name).collect()
    }

    #[test]
    fn two_cpus_exactly() {
        let expected = r##"<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="rtlab measure" tests="3" failures="1" errors="0" time="60.000">
  <testsuite name="rtlab measure rt-box" tests="3" failures="1" errors="0" skipped="0" time="60.000" timestamp="2026-01-12T11:52:32" hostname="rt-box">
    <properties>
      <property name="rtlab.version" value="0.1.0"/>
      <property name="host" value="rt-box"/>
      <property name="kernel.release" value="6.1.0-50-rt-amd64"/>
      <property name="kernel.version" value="#1 SMP PREEMPT_RT Debian 6.1.137-1"/>
      <property name="kernel.preempt_rt" value="true"/>
      <property name="status" value="complete"/>
      <property name="started_at" value="2026-01-12T11:52:32Z"/>
      <property name="ended_at" value="2026-01-12T11:53:32Z"/>
      <property name="elapsed" value="1m"/>
      <property name="cpus" value="0-1"/>
      <property name="policy" value="fifo"/>
      <property name="priority" value="95"/>
      <property name="interval" value="1ms"/>
      <property name="clock" value="monotonic"/>
      <property name="budget" value="100us"/>
    </properties>
    <testcase classname="rtlab.measure.rt-box" name="run complete with samples" time="60.000"/>
    <testcase classname="rtlab.measure.rt-box" name="cpu0 max latency &lt;= 100us" time="60.000"/>
    <testcase classname="rtlab.measure.rt-box" name="cpu1 max latency &lt;= 100us" time="60.000">
      <failure message="max 250.0us &gt; budget 100us; 1 overrun (missed period)" type="latency">CPU 1: 3 samples, 1 overrun
p99 250.0us, p99.9 250.0us, p99.99 250.0us, max 250.0us (budget 100us)</failure>
    </testcase>
  </testsuite>
</testsuites>
"##;
        assert_eq!(junit(&testdata::two_cpus(), Nanos::from_us(100)), expected);
    }

    #[test]
    fn parses_back_and_counts_match() {
        let run = testdata::two_cpus_broken();
        for (budget, failures) in [(Nanos::from_us(10), 2), (Nanos::from_us(300), 1)] {
            let xml = junit(&run, budget);
            let elements = parse(&xml);
            let suites = named(&elements, "testsuite");
            assert_eq!(suites.len(), 1);
            let cases = named(&elements, "testcase");
            let failed = named(&elements, "failure");
            assert_eq!(cases.len(), run.cpus.len() + 1);
            assert_eq!(failed.len(), failures);
            // The run stopped at --break: the run's own case is an error.
            let errors = named(&elements, "error");
            assert_eq!(errors.len(), 1);
            assert_eq!(errors[0].attrs["type"], "unjudgeable");
            assert!(errors[0].attrs["message"].contains("broke-threshold"));
            for e in [suites[0], named(&elements, "testsuites")[0]] {
                assert_eq!(e.attrs["tests"], cases.len().to_string());
                assert_eq!(e.attrs["failures"], failures.to_string());
                assert_eq!(e.attrs["errors"], "1");
            }
            let out = named(&elements, "system-out")[0];
            assert!(
                out.text
                    .starts_with("break: CPU 1 woke 250.0us late at cycle 2\n")
            );
            assert!(out.text.ends_with("warning: CPU 1 is not isolated"));
        }
    }

    #[test]
    fn verdicts() {
        let run = testdata::two_cpus();
        let cpu1 = &run.cpus[1];
        // CPU 1 is within a 300us budget but had an overrun.
        let Verdict::Failure { kind, message, .. } = verdict(cpu1, Nanos::from_us(300)) else {
            panic!("an overrun fails");
        };
        assert_eq!(
            (kind, message.as_str()),
            ("overrun", "1 overrun (missed period)")
        );
        // A maximum equal to the budget passes.
        assert!(matches!(
            verdict(&run.cpus[0], Nanos::from_us(66)),
            Verdict::Pass
        ));
        let Verdict::Failure { kind, message, .. } = verdict(&run.cpus[0], Nanos(65_999)) else {
            panic!("over budget fails");
        };
        assert_eq!(
            (kind, message.as_str()),
            ("latency", "max 66.0us > budget 65999ns")
        );
    }

    #[test]
    fn cpu_without_samples_is_an_error() {
        let xml = junit(&testdata::one_empty_cpu(), Nanos::from_us(100));
        let elements = parse(&xml);
        let errors = named(&elements, "error");
        assert_eq!(errors.len(), 2);
        assert_eq!(errors[0].attrs["type"], "unjudgeable");
        assert_eq!(errors[0].attrs["message"], "CPU 1 has no samples");
        assert_eq!(errors[1].attrs["type"], "no-samples");
        assert_eq!(errors[1].attrs["message"], "no samples measured on CPU 1");
        let suite = named(&elements, "testsuite")[0];
        assert_eq!(suite.attrs["errors"], "2");
        assert_eq!(suite.attrs["failures"], "0");
        assert!(named(&elements, "system-out").is_empty());
    }

    /// Issue 13: the checkpoint of a killed run, with no CPU measured yet, was a green
    /// `tests="0" failures="0"` suite. It is an error now.
    #[test]
    fn an_unfinished_run_without_samples_is_an_error_not_an_empty_suite() {
        let mut run = testdata::two_cpus();
        run.status = rtlab_model::measure::RunStatus::Running;
        run.cpus.clear();
        let xml = junit(&run, Nanos::from_us(100));
        let elements = parse(&xml);
        let suite = named(&elements, "testsuite")[0];
        assert_eq!(
            (
                suite.attrs["tests"].as_str(),
                suite.attrs["errors"].as_str()
            ),
            ("1", "1")
        );
        let error = named(&elements, "error")[0];
        assert!(error.attrs["message"].contains("did not finish"), "{xml}");
    }

    #[test]
    fn hostile_hostname_is_escaped() {
        let mut run = testdata::two_cpus_broken();
        let host = "<evil&host\"name'>.lab";
        run.host.hostname = host.to_string();
        run.warnings[0].message = "look <here> & \"there\"".to_string();
        let xml = junit(&run, Nanos::from_us(100));
        assert!(!xml.contains(host));
        assert!(
            xml.contains("&lt;evil&amp;host&quot;name&apos;&gt;.lab"),
            "{xml}"
        );
        let elements = parse(&xml);
        let suite = named(&elements, "testsuite")[0];
        assert_eq!(suite.attrs["name"], format!("rtlab measure {host}"));
        assert_eq!(suite.attrs["hostname"], host);
        let case = named(&elements, "testcase")[0];
        assert_eq!(
            case.attrs["classname"],
            "rtlab.measure.<evil&host\"name'>_lab"
        );
        let host_prop = named(&elements, "property")
            .into_iter()
            .find(|p| p.attrs["name"] == "host")
            .unwrap();
        assert_eq!(host_prop.attrs["value"], host);
        let out = named(&elements, "system-out")[0];
        assert!(
            out.text.contains("warning: look <here> & \"there\"\n"),
            "{}",
            out.text
        );
    }

    #[test]
    fn control_characters_do_not_break_the_document() {
        let mut run = testdata::two_cpus();
        run.host.hostname = "bell\u{7}box\u{0}".to_string();
        run.host.kernel_version = "tab\there".to_string();
        let xml = junit(&run, Nanos::from_us(100));
        let elements = parse(&xml);
        assert_eq!(
            named(&elements, "testsuite")[0].attrs["hostname"],
            "bell\u{fffd}box\u{fffd}"
        );
        assert!(!xml.contains('\u{7}') && !xml.contains('\u{0}'));
    }

    #[test]
    fn unreadable_start_leaves_timestamp_out() {
        let mut run = testdata::two_cpus();
        run.started_at = "yesterday".to_string();
        run.host.hostname.clear();
        let elements = parse(&junit(&run, Nanos::from_us(100)));
        let suite = named(&elements, "testsuite")[0];
        assert!(!suite.attrs.contains_key("timestamp"));
        assert_eq!(suite.attrs["name"], "rtlab measure (unknown)");
    }

    #[test]
    fn seconds_round_half_up() {
        assert_eq!(format_secs(0), "0.000");
        assert_eq!(format_secs(499_999), "0.000");
        assert_eq!(format_secs(500_000), "0.001");
        assert_eq!(format_secs(60_000_000_000), "60.000");
        assert_eq!(format_secs(1_234_567_890), "1.235");
    }
}

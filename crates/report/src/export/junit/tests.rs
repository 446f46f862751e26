//! Tests of the JUnit export: exact documents, verdicts, escaping, and the counts read back.
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
      <property name="rtlab.verdict" value="fail"/>
      <property name="rtlab.criteria" value="judged against 100us given now; measured without a budget"/>
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
    assert_eq!(
        junit(&testdata::two_cpus(), Some(Nanos::from_us(100))),
        expected
    );
}

#[test]
fn parses_back_and_counts_match() {
    let run = testdata::two_cpus_broken();
    for (budget, failures) in [(Nanos::from_us(10), 2), (Nanos::from_us(300), 0)] {
        let xml = junit(&run, Some(budget));
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

/// The test case of CPU `cpu` in the document judged against `budget`: its failure
/// message, or None when it passed.
fn cpu_failure(run: &MeasureRun, budget: Nanos, cpu: u32) -> Option<String> {
    let elements = parse(&junit(run, Some(budget)));
    let at = elements
        .iter()
        .position(|e| e.name == "testcase" && e.attrs["name"].starts_with(&format!("cpu{cpu} ")))
        .expect("the CPU's case");
    elements
        .get(at + 1)
        .filter(|e| e.name == "failure")
        .map(|e| e.attrs["message"].clone())
}

#[test]
fn verdicts() {
    let run = testdata::two_cpus();
    // CPU 1 is within a 300us budget and had an overrun: the gate passes it (issue #27),
    // as `rtlab measure --budget 300us` does.
    assert_eq!(cpu_failure(&run, Nanos::from_us(300), 1), None);
    // A maximum equal to the budget passes.
    assert_eq!(cpu_failure(&run, Nanos::from_us(66), 0), None);
    assert_eq!(
        cpu_failure(&run, Nanos(65_999), 0).as_deref(),
        Some("max 66.0us > budget 65999ns")
    );
}

#[test]
fn the_run_is_judged_by_its_own_budget_and_deadline_misses_fail_it() {
    let mut run = testdata::two_cpus();
    run.params.budget_ns = Some(Nanos::from_us(300));
    let own = parse(&junit(&run, None));
    assert_eq!(named(&own, "failure").len(), 0);
    let props: BTreeMap<_, _> = named(&own, "property")
        .iter()
        .map(|p| (p.attrs["name"].clone(), p.attrs["value"].clone()))
        .collect();
    assert_eq!(props["budget"], "300us");
    assert_eq!(props["rtlab.verdict"], "pass");
    assert_eq!(props["rtlab.criteria"], "budget 300us, as measured");

    run.workload = Some(testdata::missed_deadlines(1, 10));
    let missed = parse(&junit(&run, None));
    let failures = named(&missed, "failure");
    assert_eq!(failures.len(), 1);
    assert_eq!(failures[0].attrs["type"], "deadline");
    assert!(failures[0].attrs["message"].contains("10 of 10 jobs missed"));
    assert_eq!(named(&missed, "testsuite")[0].attrs["failures"], "1");
}

#[test]
fn cpu_without_samples_is_an_error() {
    let xml = junit(&testdata::one_empty_cpu(), Some(Nanos::from_us(100)));
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
    run.status = model::measure::RunStatus::Running;
    run.cpus.clear();
    let xml = junit(&run, Some(Nanos::from_us(100)));
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
    let xml = junit(&run, Some(Nanos::from_us(100)));
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
    let xml = junit(&run, Some(Nanos::from_us(100)));
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
    let elements = parse(&junit(&run, Some(Nanos::from_us(100))));
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

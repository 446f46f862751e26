//! Tests of the OpenMetrics export: every sample parsed back and checked against the run, the
//! verdict gauge, hostile labels, and what the textfile collector accepts.
use super::*;
use crate::testdata;
use std::collections::{BTreeMap, BTreeSet};

/// The run's text, judged against its own criteria.
fn om(run: &MeasureRun) -> String {
    openmetrics(run, &model::gate::judge(run, None))
}

/// One sample line, parsed.
#[derive(Debug, PartialEq)]
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

fn is_label_name(s: &str) -> bool {
    is_name(s) && !s.contains(':')
}

/// Parses `name{label="value",...} value`, with the text format's escapes (`\\`, `\"`,
/// `\n`) in label values; panics with the line on anything malformed.
fn parse_sample(line: &str) -> Sample {
    let end = line
        .find(['{', ' '])
        .unwrap_or_else(|| panic!("no value: {line}"));
    let name = &line[..end];
    assert!(is_name(name), "bad metric name: {line}");
    let mut labels = BTreeMap::new();
    let mut rest = &line[end..];
    if let Some(mut body) = rest.strip_prefix('{') {
        loop {
            if let Some(after) = body.strip_prefix('}') {
                rest = after;
                break;
            }
            let eq = body.find('=').unwrap_or_else(|| panic!("no '=': {line}"));
            let key = &body[..eq];
            assert!(is_label_name(key), "bad label name {key:?}: {line}");
            let mut chars = body[eq + 1..].char_indices();
            assert_eq!(chars.next().map(|c| c.1), Some('"'), "unquoted: {line}");
            let mut value = String::new();
            let close = loop {
                match chars.next() {
                    Some((_, '\\')) => match chars.next() {
                        Some((_, '\\')) => value.push('\\'),
                        Some((_, '"')) => value.push('"'),
                        Some((_, 'n')) => value.push('\n'),
                        other => panic!("bad escape {other:?}: {line}"),
                    },
                    Some((i, '"')) => break i,
                    Some((_, '\n')) | None => panic!("unterminated value: {line}"),
                    Some((_, c)) => value.push(c),
                }
            };
            assert!(
                labels.insert(key.to_string(), value).is_none(),
                "dup: {line}"
            );
            body = &body[eq + 1 + close + 1..];
            body = body.strip_prefix(',').unwrap_or(body);
        }
    }
    let value = rest
        .strip_prefix(' ')
        .unwrap_or_else(|| panic!("no space before value: {line}"));
    assert!(
        !value.contains(' '),
        "timestamp or junk after value: {line}"
    );
    let value: f64 = value
        .parse()
        .unwrap_or_else(|_| panic!("value is not a float: {line}"));
    Sample {
        name: name.to_string(),
        labels,
        value,
    }
}

/// Checks the whole exposition and returns its samples: every line is `# HELP`, `# TYPE`,
/// `# UNIT`, the final `# EOF`, or a sample; every sample's name has a TYPE line before it
/// (the name itself, as the Prometheus text parser requires); no blank lines.
fn validate(text: &str) -> Vec<Sample> {
    assert!(text.ends_with("# EOF\n"), "no final # EOF");
    let lines: Vec<&str> = text.lines().collect();
    let mut typed = BTreeSet::new();
    let mut helped = BTreeSet::new();
    let mut samples = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if *line == "# EOF" {
            assert_eq!(i, lines.len() - 1, "# EOF before the end");
        } else if let Some(comment) = line.strip_prefix("# ") {
            let mut parts = comment.splitn(3, ' ');
            let (kind, name, rest) = (parts.next(), parts.next(), parts.next());
            let name = name.unwrap_or_else(|| panic!("bare comment: {line}"));
            assert!(is_name(name), "bad name: {line}");
            let rest = rest.unwrap_or_else(|| panic!("empty: {line}"));
            match kind {
                Some("TYPE") => {
                    assert_eq!(rest, "gauge", "{line}");
                    assert!(typed.insert(name.to_string()), "second TYPE: {line}");
                }
                Some("HELP") => assert!(helped.insert(name.to_string()), "{line}"),
                Some("UNIT") => {
                    assert!(
                        name.ends_with(&format!("_{rest}")),
                        "unit not in name: {line}"
                    )
                }
                _ => panic!("unknown comment: {line}"),
            }
        } else {
            assert!(!line.is_empty(), "blank line {i}");
            let sample = parse_sample(line);
            assert!(typed.contains(&sample.name), "no TYPE before: {line}");
            assert!(helped.contains(&sample.name), "no HELP before: {line}");
            samples.push(sample);
        }
    }
    samples
}

fn value(samples: &[Sample], name: &str, cpu: &str) -> Option<f64> {
    samples
        .iter()
        .find(|s| s.name == name && s.labels.get("cpu").map(String::as_str) == Some(cpu))
        .map(|s| s.value)
}

#[test]
fn the_verdict_is_a_gauge_labelled_with_its_word() {
    let run = testdata::two_cpus();
    for (budget, value, word) in [(None, 1.0, "pass"), (Some(100), 0.0, "fail")] {
        let verdict = model::gate::judge(&run, budget.map(model::Nanos::from_us));
        let samples = validate(&openmetrics(&run, &verdict));
        let passed = samples
            .iter()
            .find(|s| s.name == "rtlab_run_passed")
            .unwrap();
        assert_eq!(
            (passed.value, passed.labels["verdict"].as_str()),
            (value, word)
        );
    }
}

#[test]
fn well_formed_and_figures_match() {
    let run = testdata::two_cpus();
    let samples = validate(&om(&run));
    for c in &run.cpus {
        let cpu = c.cpu.to_string();
        let s = &c.stats;
        let secs = |ns: Option<u64>| ns.map(|v| v as f64 / 1e9);
        assert_eq!(
            value(&samples, "rtlab_latency_max_seconds", &cpu),
            secs(s.max_ns)
        );
        assert_eq!(
            value(&samples, "rtlab_latency_min_seconds", &cpu),
            secs(s.min_ns)
        );
        assert_eq!(
            value(&samples, "rtlab_latency_p99_seconds", &cpu),
            secs(s.p99_ns)
        );
        assert_eq!(
            value(&samples, "rtlab_latency_p99_9_seconds", &cpu),
            secs(s.p99_9_ns)
        );
        assert_eq!(
            value(&samples, "rtlab_latency_mean_seconds", &cpu),
            s.mean_ns.map(|v| v / 1e9)
        );
        assert_eq!(value(&samples, "rtlab_samples", &cpu), Some(s.count as f64));
        assert_eq!(
            value(&samples, "rtlab_overruns", &cpu),
            Some(s.overruns as f64)
        );
    }
    assert_eq!(
        value(&samples, "rtlab_latency_max_seconds", "0"),
        Some(66e-6)
    );
    assert_eq!(value(&samples, "rtlab_overruns", "1"), Some(1.0));
    assert!(samples.iter().all(|s| s.labels["host"] == "rt-box"));
    assert!(
        samples
            .iter()
            .all(|s| s.labels.get("cpu").map(String::as_str) != Some("all"))
    );
    // 5 run families with one sample, 12 per-CPU families with two.
    assert_eq!(samples.len(), 5 + 12 * 2);
    assert_eq!(
        samples
            .iter()
            .find(|s| s.name == "rtlab_run_judgeable")
            .unwrap()
            .value,
        1.0
    );
    let unfinished = om(&testdata::one_empty_cpu());
    assert!(
        unfinished.contains("rtlab_run_judgeable{host=\"rt-box\"} 0"),
        "{unfinished}"
    );

    let info = samples.iter().find(|s| s.name == "rtlab_run_info").unwrap();
    assert_eq!(info.value, 1.0);
    let labels: Vec<(&str, &str)> = info
        .labels
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    assert_eq!(
        labels,
        [
            ("host", "rt-box"),
            ("kernel", "6.1.0-50-rt-amd64"),
            ("rtlab_version", "0.1.0"),
            ("status", "complete"),
        ]
    );
    let at = |name: &str| samples.iter().find(|s| s.name == name).unwrap().value;
    assert_eq!(at("rtlab_run_timestamp_seconds"), 1_768_218_752.0);
    assert_eq!(at("rtlab_run_duration_seconds"), 60.0);
}

#[test]
fn layout_of_one_family() {
    let text = om(&testdata::two_cpus());
    let expected = "\
# HELP rtlab_latency_max_seconds Largest wake-up latency
# TYPE rtlab_latency_max_seconds gauge
# UNIT rtlab_latency_max_seconds seconds
rtlab_latency_max_seconds{host=\"rt-box\",cpu=\"0\"} 0.000066
rtlab_latency_max_seconds{host=\"rt-box\",cpu=\"1\"} 0.00025
# EOF
";
    assert!(text.ends_with(expected), "{text}");
    assert!(text.starts_with(
        "# HELP rtlab_run_info The measurement this file describes; always 1\n\
         # TYPE rtlab_run_info gauge\n\
         rtlab_run_info{host=\"rt-box\",rtlab_version=\"0.1.0\",kernel=\"6.1.0-50-rt-amd64\",status=\"complete\"} 1\n"
    ));
    assert_eq!(text, om(&testdata::two_cpus()), "deterministic");
}

#[test]
fn empty_cpu_has_counts_but_no_latencies() {
    let samples = validate(&om(&testdata::one_empty_cpu()));
    assert_eq!(value(&samples, "rtlab_samples", "1"), Some(0.0));
    assert_eq!(value(&samples, "rtlab_overruns", "1"), Some(0.0));
    assert_eq!(value(&samples, "rtlab_latency_max_seconds", "1"), None);
    assert_eq!(
        value(&samples, "rtlab_latency_max_seconds", "0"),
        Some(3e-6)
    );
    assert!(samples.iter().all(|s| s.value.is_finite()));
}

#[test]
fn hostile_label_values_are_escaped() {
    let mut run = testdata::two_cpus_broken();
    let host = "a\"b\\c\nd} e{x=\"1\"";
    run.host.hostname = host.to_string();
    run.host.kernel_release = "6.1 \"rt\"".to_string();
    let samples = validate(&om(&run));
    assert!(samples.iter().all(|s| s.labels["host"] == host));
    let info = samples.iter().find(|s| s.name == "rtlab_run_info").unwrap();
    assert_eq!(info.labels["kernel"], "6.1 \"rt\"");
    assert_eq!(info.labels["status"], "broke-threshold");
}

#[test]
fn unreadable_start_leaves_timestamp_out() {
    let mut run = testdata::above_range();
    run.started_at = "soon".to_string();
    let samples = validate(&om(&run));
    assert!(
        samples
            .iter()
            .all(|s| s.name != "rtlab_run_timestamp_seconds")
    );
    assert_eq!(
        value(&samples, "rtlab_latency_max_seconds", "0"),
        Some(run.cpus[0].raw.max_ns as f64 / 1e9)
    );
}

#[test]
fn validator_rejects_malformed_lines() {
    let bad = [
        "# TYPE x gauge\nx{a=\"1\"} \n# EOF\n",
        "# TYPE x gauge\nx{a=1} 2\n# EOF\n",
        "# HELP x h\nx 2\n# EOF\n",
        "# TYPE x gauge\n# HELP x h\nx 2 1700000000\n# EOF\n",
        "# TYPE x gauge\n# HELP x h\n9x 2\n# EOF\n",
        "# TYPE x gauge\n# HELP x h\nx{a=\"b\\q\"} 2\n# EOF\n",
        "# TYPE x gauge\n# HELP x h\nx 2\n",
        "# TYPE x gauge\n# HELP x h\nx 2\n# EOF\n\n",
    ];
    for text in bad {
        assert!(
            std::panic::catch_unwind(|| validate(text)).is_err(),
            "accepted: {text:?}"
        );
    }
    let good = "# HELP x h\n# TYPE x gauge\nx{a=\"b\\\"\"} 2.5e-3\n# EOF\n";
    assert_eq!(validate(good)[0].value, 2.5e-3);
}

#[test]
fn a_noise_run_exports_its_osnoise_columns_not_latencies() {
    use model::noise::{Engine, NOISE_SCHEMA, NoiseCpu, NoiseInfo, PerSource};
    let mut run = testdata::two_cpus();
    run.schema = NOISE_SCHEMA.into();
    run.noise = Some(NoiseInfo {
        engine: Engine::User,
        counter: "tsc".into(),
        threshold_ns: model::Nanos::from_us(1),
        runtime_ns: model::Nanos::SECOND,
        period_ns: model::Nanos::SECOND,
        attribution: "trace".into(),
        cpus: vec![NoiseCpu {
            cpu: 0,
            runtime_ns: 2_000_000_000,
            noise_ns: 20_000_000,
            interruptions: 7,
            counts: Some(PerSource {
                irq: 5,
                hw: 2,
                ..PerSource::default()
            }),
            ..NoiseCpu::default()
        }],
        ..NoiseInfo::default()
    });
    let text = om(&run);
    assert!(!text.contains("rtlab_latency_"), "{text}");
    assert!(
        text.contains("rtlab_noise_available_ratio{host=\"rt-box\",cpu=\"0\"} 0.99"),
        "{text}"
    );
    assert!(
        text.contains(
            "rtlab_noise_interruptions_by_source{host=\"rt-box\",cpu=\"0\",source=\"irq\"} 5"
        ),
        "{text}"
    );
    assert!(
        text.contains("rtlab_noise_seconds{host=\"rt-box\",cpu=\"0\"} 0.02"),
        "{text}"
    );
    assert!(text.trim_end().ends_with("# EOF"));
}

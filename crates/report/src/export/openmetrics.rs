//! A measurement as OpenMetrics text, for the Prometheus node-exporter textfile collector
//! (write it to `<dir>/rtlab.prom.tmp`, then rename to `rtlab.prom`).
//!
//! Metric families, all gauges, encoded by prometheus-client's text encoder:
//!
//! | family | labels | value |
//! | --- | --- | --- |
//! | `rtlab_run_info` | host, rtlab_version, kernel, status | 1 |
//! | `rtlab_run_judgeable` | host | 1 when the figures may pass a gate, 0 when no gate may pass on them (unfinished, stopped at `--break`, a CPU without samples) |
//! | `rtlab_run_passed` | host, verdict | 1 when the run passed, 0 when not; `verdict` is the gate's word (`pass`, `fail`, `unjudgeable`) against the budget the run was measured with or one given to `export`, the verdict every surface shows |
//! | `rtlab_run_timestamp_seconds` | host | the run's start, Unix time |
//! | `rtlab_run_duration_seconds` | host | measured time |
//! | `rtlab_samples` | host, cpu | samples measured |
//! | `rtlab_overruns` | host, cpu | periods missed |
//! | `rtlab_latency_{min,mean,stddev,p50,p90,p99,p99_9,p99_99,p99_999,max}_seconds` | host, cpu | the CPU's statistic |
//!
//! Latencies are in seconds, the base unit Prometheus and OpenMetrics ask for (with a
//! `# UNIT` line), converted from the exact nanoseconds. Only measured CPUs get a `cpu` label:
//! there is no `cpu="all"` series, so `sum by (host)` of the counts stays right; `max by
//! (host)` of a percentile is an upper bound of the all-CPU percentile. A CPU without samples
//! has `rtlab_samples 0` and no latency series (rather than NaN). `rtlab_run_timestamp_seconds`
//! is left out when `started_at` is not a UTC RFC 3339 timestamp.
//!
//! What the textfile collector accepts (node_exporter `collector/textfile.go`, checked against
//! its source and issues): it parses each `*.prom` file with the Prometheus *text* format parser
//! (`expfmt.TextParser` from prometheus/common), not an OpenMetrics parser; OpenMetrics
//! support is an open request (prometheus/node_exporter#1988). In that parser any `#` line
//! other than `# HELP` and `# TYPE` is a comment, so `# UNIT` and the final `# EOF` are
//! harmless. Two OpenMetrics habits are not:
//! * the `info` type: `# TYPE x info` is "unknown metric type" and the whole file is dropped
//!   (seen with a prometheus-client exporter in phyber/jail_exporter#287). So `rtlab_run_info`
//!   is a gauge with value 1, the classic Prometheus info-metric pattern (`node_uname_info`).
//! * counters: OpenMetrics writes `# TYPE x counter` and samples named `x_total`; the text
//!   parser sees `x_total` as a different, untyped family and loses its HELP. Samples and
//!   overruns of one finished run are snapshot figures that a newer run replaces, which is a
//!   gauge's meaning anyway, so they are gauges named without `_total`.
//!
//! With these choices every sample's name equals a family with `# HELP` and `# TYPE`, so the
//! file reads the same as OpenMetrics and as Prometheus text. Samples carry no timestamps (the
//! textfile collector refuses files that have them). Checked once by hand, outside the tests:
//! the test runs' output (a hostile hostname included) parses without error with expfmt's
//! `TextParser` (prometheus/common 0.73, every family a gauge with its HELP) and with the
//! Python client's strict OpenMetrics parser.

use model::gate::Verdict;
use model::measure::MeasureRun;
use model::stats::LatencyStats;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};

use super::{ns_to_secs, parse_utc, unix_secs};

/// The prefix of every metric name.
pub const PREFIX: &str = "rtlab";

/// The run as OpenMetrics text rendering `verdict` (the gate's on it), ending with `# EOF`.
pub fn openmetrics(run: &MeasureRun, verdict: &Verdict) -> String {
    let mut registry = Registry::with_prefix(PREFIX);
    let mut families = families(run);
    families.insert(2, passed_family(run, verdict));
    registry.register_collector(Box::new(Families(families)));
    let mut out = String::new();
    encode(&mut out, &registry).expect("encoding into a String cannot fail");
    out
}

/// Whether the run passed, with the verdict's word as a label.
fn passed_family(run: &MeasureRun, verdict: &Verdict) -> Family {
    Family {
        name: "run_passed",
        help: "1 when the run passed its criteria (the budget it was measured with, or one given to export); 0 when it failed or cannot be judged, the verdict label saying which",
        unit: None,
        samples: vec![(
            vec![
                ("host", run.host.hostname.clone()),
                ("verdict", verdict.outcome().as_str().to_string()),
            ],
            Value::Int(u64::from(verdict.passed())),
        )],
    }
}

/// A sample's label set.
pub(crate) type Labels = Vec<(&'static str, String)>;

/// A sample's value.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Value {
    Int(u64),
    Float(f64),
}

/// One gauge family and its samples, in output order.
#[derive(Debug)]
pub(crate) struct Family {
    pub(crate) name: &'static str,
    pub(crate) help: &'static str,
    pub(crate) unit: Option<Unit>,
    pub(crate) samples: Vec<(Labels, Value)>,
}

/// Every family of a run, encoded in order (a registry's own families live in a hash map and
/// would come out in a different order each time).
#[derive(Debug)]
pub(crate) struct Families(pub(crate) Vec<Family>);

impl Collector for Families {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        for f in self.0.iter().filter(|f| !f.samples.is_empty()) {
            let mut family =
                encoder.encode_descriptor(f.name, f.help, f.unit.as_ref(), MetricType::Gauge)?;
            for (labels, value) in &f.samples {
                let mut sample = family.encode_family(labels)?;
                match *value {
                    Value::Int(v) => sample.encode_gauge(&v)?,
                    Value::Float(v) => sample.encode_gauge(&v)?,
                }
            }
        }
        Ok(())
    }
}

/// The latency statistics exported per CPU: name (before `_seconds`), help, figure in ns.
type Statistic = (&'static str, &'static str, fn(&LatencyStats) -> Option<f64>);

const LATENCIES: [Statistic; 10] = [
    ("latency_min", "Smallest wake-up latency", |s| {
        s.min_ns.map(|v| v as f64)
    }),
    ("latency_mean", "Mean wake-up latency", |s| s.mean_ns),
    (
        "latency_stddev",
        "Population standard deviation of the wake-up latency",
        |s| s.stddev_ns,
    ),
    ("latency_p50", "Median wake-up latency", |s| {
        s.p50_ns.map(|v| v as f64)
    }),
    (
        "latency_p90",
        "90th percentile of the wake-up latency",
        |s| s.p90_ns.map(|v| v as f64),
    ),
    (
        "latency_p99",
        "99th percentile of the wake-up latency",
        |s| s.p99_ns.map(|v| v as f64),
    ),
    (
        "latency_p99_9",
        "99.9th percentile of the wake-up latency",
        |s| s.p99_9_ns.map(|v| v as f64),
    ),
    (
        "latency_p99_99",
        "99.99th percentile of the wake-up latency",
        |s| s.p99_99_ns.map(|v| v as f64),
    ),
    (
        "latency_p99_999",
        "99.999th percentile of the wake-up latency",
        |s| s.p99_999_ns.map(|v| v as f64),
    ),
    ("latency_max", "Largest wake-up latency", |s| {
        s.max_ns.map(|v| v as f64)
    }),
];

fn families(run: &MeasureRun) -> Vec<Family> {
    let host = || ("host", run.host.hostname.clone());
    let cpu_labels = |cpu: u32| vec![host(), ("cpu", cpu.to_string())];
    let mut out = run_families(run);
    out.extend(count_families(run, &cpu_labels));
    if let Some(noise) = &run.noise {
        out.extend(noise_families(noise, &cpu_labels));
        return out;
    }
    for (name, help, figure) in LATENCIES {
        out.push(Family {
            name,
            help,
            unit: Some(Unit::Seconds),
            samples: run
                .cpus
                .iter()
                .filter_map(|c| {
                    let ns = figure(&c.stats)?;
                    Some((cpu_labels(c.cpu), Value::Float(ns_to_secs(ns))))
                })
                .collect(),
        });
    }
    out
}

/// What the run is: its info, whether it can be judged, when it started, how long it ran.
fn run_families(run: &MeasureRun) -> Vec<Family> {
    let host = || ("host", run.host.hostname.clone());
    vec![
        Family {
            name: "run_info",
            help: "The measurement this file describes; always 1",
            unit: None,
            samples: vec![(
                vec![
                    host(),
                    ("rtlab_version", run.rtlab_version.clone()),
                    ("kernel", run.host.kernel_release.clone()),
                    ("status", run.status.as_str().to_string()),
                ],
                Value::Int(1),
            )],
        },
        Family {
            name: "run_judgeable",
            help: "1 when the run's figures can be judged; 0 when it did not finish, stopped at --break or has a CPU without samples, and no gate may pass on it",
            unit: None,
            samples: vec![(
                vec![host()],
                Value::Int(u64::from(run.unjudgeable().is_none())),
            )],
        },
        Family {
            name: "run_timestamp",
            help: "When the measurement started, in Unix time",
            unit: Some(Unit::Seconds),
            samples: parse_utc(&run.started_at)
                .map(|t| (vec![host()], Value::Float(unix_secs(t))))
                .into_iter()
                .collect(),
        },
        Family {
            name: "run_duration",
            help: "Time measured",
            unit: Some(Unit::Seconds),
            samples: vec![(
                vec![host()],
                Value::Float(ns_to_secs(run.elapsed_ns.get() as f64)),
            )],
        },
    ]
}

/// Per CPU: the samples measured and the periods missed.
fn count_families(run: &MeasureRun, cpu_labels: &dyn Fn(u32) -> Labels) -> Vec<Family> {
    vec![
        Family {
            name: "samples",
            help: if run.noise.is_some() {
                "Gaps between two counter reads measured on the CPU (a noise run)"
            } else {
                "Wake-ups measured on the CPU"
            },
            unit: None,
            samples: run
                .cpus
                .iter()
                .map(|c| (cpu_labels(c.cpu), Value::Int(c.stats.count)))
                .collect(),
        },
        Family {
            name: "overruns",
            help: "Periods the CPU's thread missed because it woke after its next deadline",
            unit: None,
            samples: run
                .cpus
                .iter()
                .map(|c| (cpu_labels(c.cpu), Value::Int(c.stats.overruns)))
                .collect(),
        },
    ]
}

/// A noise run's figures in place of the latency families: rtla osnoise's columns per CPU,
/// interruptions by main cause (a `source` label), steal time.
fn noise_families(
    noise: &model::noise::NoiseInfo,
    cpu_labels: &dyn Fn(u32) -> Labels,
) -> Vec<Family> {
    use model::noise::{NoiseCpu, Source};
    let seconds = |name, help, f: fn(&NoiseCpu) -> Option<u64>| Family {
        name,
        help,
        unit: Some(Unit::Seconds),
        samples: noise
            .cpus
            .iter()
            .filter_map(|c| Some((cpu_labels(c.cpu), Value::Float(ns_to_secs(f(c)? as f64)))))
            .collect(),
    };
    vec![
        seconds(
            "noise_runtime",
            "Time the noise detector polled the CPU",
            |c| Some(c.runtime_ns),
        ),
        seconds("noise", "Time interruptions took from the detector", |c| {
            Some(c.noise_ns)
        }),
        seconds("noise_max_single", "The longest single interruption", |c| {
            Some(c.max_single_ns)
        }),
        seconds(
            "noise_max_period",
            "The most noise within one period of the duty cycle",
            |c| Some(c.max_period_noise_ns),
        ),
        seconds(
            "noise_steal",
            "Steal time the hypervisor reported for the CPU during the run",
            |c| c.steal_ns,
        ),
        Family {
            name: "noise_available_ratio",
            help: "Share of the runtime left to the detector (rtla osnoise's % CPU available / 100)",
            unit: None,
            samples: noise
                .cpus
                .iter()
                .filter_map(|c| Some((cpu_labels(c.cpu), Value::Float(c.available_pct()? / 100.0))))
                .collect(),
        },
        Family {
            name: "noise_interruptions",
            help: "Interruptions at or above the threshold",
            unit: None,
            samples: noise
                .cpus
                .iter()
                .map(|c| (cpu_labels(c.cpu), Value::Int(c.interruptions)))
                .collect(),
        },
        Family {
            name: "noise_interruptions_by_source",
            help: "Interruptions by main cause: hw (nothing the kernel saw), nmi, irq, softirq, thread",
            unit: None,
            samples: noise
                .cpus
                .iter()
                .flat_map(|c| {
                    c.counts.into_iter().flat_map(move |k| {
                        Source::ALL.into_iter().map(move |s| {
                            let mut labels = cpu_labels(c.cpu);
                            labels.push(("source", format!("{s:?}").to_lowercase()));
                            (labels, Value::Int(k.get(s)))
                        })
                    })
                })
                .collect(),
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The run's text, judged against its own criteria.
    fn om(run: &MeasureRun) -> String {
        openmetrics(run, &model::gate::judge(run, None))
    }
    use crate::testdata;
    use std::collections::{BTreeMap, BTreeSet};

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
}

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
mod tests;

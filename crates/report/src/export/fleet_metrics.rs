//! A fleet as OpenMetrics text, for Prometheus scraping `rtlab serve`'s `/metrics`: per host
//! the runs stored, those that did not complete, the newest latency run's maximum and 99.99th
//! percentile, the worst maximum ever stored and whether the newest run regressed against the
//! host's baseline. Gauges only, named and encoded as [`super::openmetrics`] explains (the
//! same text reads as OpenMetrics and as Prometheus text).

use prometheus_client::encoding::text::encode;
use prometheus_client::registry::{Registry, Unit};

use super::ns_to_secs;
use super::openmetrics::{Families, Family, Labels, PREFIX, Value};

/// One host's figures.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FleetFigures {
    /// The hostname.
    pub host: String,
    /// Runs stored.
    pub runs: u64,
    /// Runs that did not complete.
    pub not_complete: u64,
    /// The newest latency run's maximum, ns.
    pub last_max_ns: Option<u64>,
    /// The newest latency run's 99.99th percentile, ns.
    pub last_p99_99_ns: Option<u64>,
    /// The worst maximum of all its latency runs, ns.
    pub worst_max_ns: Option<u64>,
    /// Whether the newest latency run regressed against the baseline.
    pub regressed: bool,
}

/// The fleet as OpenMetrics text, ending with `# EOF`.
pub fn fleet_openmetrics(hosts: &[FleetFigures]) -> String {
    let label = |h: &FleetFigures| -> Labels { vec![("host", h.host.clone())] };
    let ints = |f: fn(&FleetFigures) -> u64| -> Vec<(Labels, Value)> {
        hosts.iter().map(|h| (label(h), Value::Int(f(h)))).collect()
    };
    let secs = |f: fn(&FleetFigures) -> Option<u64>| -> Vec<(Labels, Value)> {
        hosts
            .iter()
            .filter_map(|h| f(h).map(|ns| (label(h), Value::Float(ns_to_secs(ns as f64)))))
            .collect()
    };
    let families = vec![
        Family {
            name: "fleet_runs",
            help: "Runs stored for the host",
            unit: None,
            samples: ints(|h| h.runs),
        },
        Family {
            name: "fleet_runs_not_complete",
            help: "Runs of the host that did not complete (interrupted, stopped at --break, still running)",
            unit: None,
            samples: ints(|h| h.not_complete),
        },
        Family {
            name: "fleet_last_latency_max",
            help: "Largest wake-up latency of the host's newest latency run",
            unit: Some(Unit::Seconds),
            samples: secs(|h| h.last_max_ns),
        },
        Family {
            name: "fleet_last_latency_p99_99",
            help: "99.99th percentile of the wake-up latency of the host's newest latency run",
            unit: Some(Unit::Seconds),
            samples: secs(|h| h.last_p99_99_ns),
        },
        Family {
            name: "fleet_worst_latency_max",
            help: "Largest wake-up latency of all the host's stored latency runs",
            unit: Some(Unit::Seconds),
            samples: secs(|h| h.worst_max_ns),
        },
        Family {
            name: "fleet_regressed",
            help: "1 when the host's newest latency run is worse than its baseline by more than the server's threshold",
            unit: None,
            samples: ints(|h| u64::from(h.regressed)),
        },
    ];
    let mut registry = Registry::with_prefix(PREFIX);
    registry.register_collector(Box::new(Families(families)));
    let mut out = String::new();
    encode(&mut out, &registry).expect("encoding into a String cannot fail");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_host_has_its_figures_and_hostile_names_are_escaped() {
        let text = fleet_openmetrics(&[
            FleetFigures {
                host: "pi".into(),
                runs: 3,
                not_complete: 1,
                last_max_ns: Some(42_000),
                last_p99_99_ns: Some(20_000),
                worst_max_ns: Some(90_000),
                regressed: true,
            },
            FleetFigures {
                host: "evil\"}\nrtlab_fleet_runs 9".into(),
                runs: 1,
                ..FleetFigures::default()
            },
        ]);
        assert!(text.contains("rtlab_fleet_runs{host=\"pi\"} 3"), "{text}");
        assert!(
            text.contains("rtlab_fleet_last_latency_max_seconds{host=\"pi\"} 0.000042"),
            "{text}"
        );
        assert!(
            text.contains("rtlab_fleet_regressed{host=\"pi\"} 1"),
            "{text}"
        );
        assert!(text.ends_with("# EOF\n"));
        // The hostile name stays inside its quotes: no line starts with the injected sample.
        assert!(
            !text.lines().any(|l| l.starts_with("rtlab_fleet_runs 9")),
            "{text}"
        );
    }
}

//! `rtlab worst` for machines: OpenMetrics gauges (return levels with their bounds, the shape,
//! whether the fit is trusted, the budget's risk per hour), LAVA test cases (a figure each, a
//! verdict per CPU) and JUnit XML (a test case per CPU: fails when no fit is trusted or the
//! budget's risk is not bounded below the target).
//!
//! CPUs are named `all` and `cpuN`; with several groups of runs, each name is prefixed by the
//! group's number (`g2-cpu0`).

use std::io;

use model::worst::{Method, TailFit, WorstCpu, WorstDoc};
use prometheus_client::encoding::text::encode;
use prometheus_client::registry::{Registry, Unit};
use quick_xml::Writer;
use quick_xml::events::{BytesDecl, BytesText, Event};

use crate::export::lava::{Case, Outcome};
use crate::export::openmetrics::{Families, Family, Labels, PREFIX, Value};

fn who(doc: &WorstDoc, group: usize, c: &WorstCpu) -> String {
    let cpu = c
        .cpu
        .map_or_else(|| "all".to_string(), |n| format!("cpu{n}"));
    if doc.groups.len() > 1 {
        format!("g{}-{cpu}", group + 1)
    } else {
        cpu
    }
}

/// The fit the figures come from: the verdict's, else peaks over threshold, else block maxima.
fn headline(c: &WorstCpu) -> Option<&TailFit> {
    let by = |m: Method| match m {
        Method::BlockMaxima => c.block_maxima.as_ref(),
        Method::PeaksOverThreshold => c.peaks_over_threshold.as_ref(),
    };
    c.verdict
        .method
        .and_then(by)
        .or(c.peaks_over_threshold.as_ref())
        .or(c.block_maxima.as_ref())
}

fn passed(c: &WorstCpu) -> bool {
    c.verdict.passed()
}

/// Every CPU with its name.
fn entries(doc: &WorstDoc) -> impl Iterator<Item = (String, &WorstCpu)> {
    doc.groups
        .iter()
        .enumerate()
        .flat_map(move |(g, grp)| grp.cpus.iter().map(move |c| (who(doc, g, c), c)))
}

/// The samples of each gauge family, per CPU.
#[derive(Default)]
struct Gauges {
    levels: Vec<(Labels, Value)>,
    shape: Vec<(Labels, Value)>,
    trusted: Vec<(Labels, Value)>,
    verdicts: Vec<(Labels, Value)>,
    risk: Vec<(Labels, Value)>,
}

/// Every CPU's gauges: its verdict and trust, then its headline fit's figures.
fn gauges(doc: &WorstDoc) -> Gauges {
    let mut g = Gauges::default();
    for (name, c) in entries(doc) {
        g.verdicts.push((
            vec![("cpu", name.clone())],
            Value::Int(u64::from(passed(c))),
        ));
        g.trusted.push((
            vec![("cpu", name.clone())],
            Value::Int(u64::from(c.verdict.trusted)),
        ));
        let Some(f) = headline(c) else { continue };
        let method = match f.method {
            Method::BlockMaxima => "block_maxima",
            Method::PeaksOverThreshold => "peaks_over_threshold",
        };
        let base = |extra: Vec<(&'static str, String)>| -> Labels {
            let mut l: Labels = vec![("cpu", name.clone()), ("method", method.into())];
            l.extend(extra);
            l
        };
        g.shape.push((base(vec![]), Value::Float(f.shape.value)));
        for r in &f.return_levels {
            // A level the data do not support is no figure to export.
            let Some(e) = r.supported().copied() else {
                continue;
            };
            for (bound, v) in [
                ("estimate", Some(e.value)),
                ("lower", e.lower),
                ("upper", e.upper),
            ] {
                if let Some(v) = v {
                    let l = base(vec![("period", r.per.clone()), ("bound", bound.into())]);
                    g.levels.push((l, Value::Float(v / 1e9)));
                }
            }
        }
        if let Some(b) = f.budget {
            for (bound, v) in [
                ("estimate", b.per_hour),
                ("lower", b.lower),
                ("upper", b.upper),
            ] {
                g.risk
                    .push((base(vec![("bound", bound.into())]), Value::Float(v)));
            }
        }
    }
    g
}

/// OpenMetrics text.
pub fn openmetrics(doc: &WorstDoc) -> String {
    let Gauges {
        levels,
        shape,
        trusted,
        verdicts,
        risk,
    } = gauges(doc);
    let families = vec![
        Family {
            name: "worst_return_level",
            help: "Latency exceeded once per period of operation (extreme-value fit, 95% interval bounds)",
            unit: Some(Unit::Seconds),
            samples: levels,
        },
        Family {
            name: "worst_shape",
            help: "Extreme-value shape (xi > 0: no upper bound)",
            unit: None,
            samples: shape,
        },
        Family {
            name: "worst_trusted",
            help: "1 when a fit passed every check",
            unit: None,
            samples: trusted,
        },
        Family {
            name: "worst_passed",
            help: "1 when the estimate passed: a fit trusted and the budget's risk within its target (the exit status's verdict)",
            unit: None,
            samples: verdicts,
        },
        Family {
            name: "worst_budget_risk_per_hour",
            help: "Probability per hour of operation of exceeding the budget",
            unit: None,
            samples: risk,
        },
    ];
    let mut registry = Registry::with_prefix(PREFIX);
    registry.register_collector(Box::new(Families(families)));
    let mut out = String::new();
    encode(&mut out, &registry).expect("encoding into a String cannot fail");
    out
}

/// LAVA test cases: per CPU a verdict (`worst-all`) and its figures (`worst-all-day-level`,
/// `worst-all-shape`, `worst-all-budget-risk`).
pub fn lava_cases(doc: &WorstDoc) -> Vec<Case> {
    let mut out = Vec::new();
    for (name, c) in entries(doc) {
        let outcome = if passed(c) {
            Outcome::Pass
        } else {
            Outcome::Fail
        };
        out.push(Case {
            name: format!("worst-{name}"),
            outcome,
            measurement: None,
        });
        let Some(f) = headline(c) else { continue };
        let figure = if c.verdict.trusted {
            Outcome::Pass
        } else {
            Outcome::Unknown
        };
        for r in &f.return_levels {
            if let Some(e) = r.supported() {
                out.push(Case {
                    name: format!("worst-{name}-{}-level", r.per),
                    outcome: figure,
                    measurement: Some((format!("{:.3}", e.value / 1e3), "us")),
                });
            }
        }
        out.push(Case {
            name: format!("worst-{name}-shape"),
            outcome: figure,
            measurement: Some((format!("{:.4}", f.shape.value), "xi")),
        });
        if let (Some(b), Some(met)) = (f.budget, c.verdict.budget_met) {
            out.push(Case {
                name: format!("worst-{name}-budget-risk"),
                outcome: if met { Outcome::Pass } else { Outcome::Fail },
                measurement: Some((format!("{:.3e}", b.upper), "per-hour")),
            });
        }
    }
    out
}

/// JUnit XML: one suite, a test case per CPU.
pub fn junit(doc: &WorstDoc) -> String {
    let mut writer = Writer::new_with_indent(Vec::new(), b' ', 2);
    write_junit(&mut writer, doc).expect("writing XML into memory cannot fail");
    let mut bytes = writer.into_inner();
    bytes.push(b'\n');
    String::from_utf8(bytes).expect("every piece written is a str")
}

fn write_junit(w: &mut Writer<Vec<u8>>, doc: &WorstDoc) -> io::Result<()> {
    let all: Vec<(String, &WorstCpu)> = entries(doc).collect();
    let failures = all.iter().filter(|(_, c)| !passed(c)).count();
    w.write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)))?;
    w.create_element("testsuite")
        .with_attributes([
            ("name", "rtlab worst"),
            ("tests", all.len().to_string().as_str()),
            ("failures", failures.to_string().as_str()),
            ("errors", "0"),
        ])
        .write_inner_content(|w| {
            for (name, c) in &all {
                let case = w
                    .create_element("testcase")
                    .with_attributes([("classname", "rtlab.worst"), ("name", name.as_str())]);
                if passed(c) {
                    case.write_empty()?;
                } else {
                    let message = c.verdict.says.join("; ");
                    case.write_inner_content(|w| {
                        w.create_element("failure")
                            .with_attribute(("message", message.as_str()))
                            .write_text_content(BytesText::new(&message))?;
                        Ok(())
                    })?;
                }
            }
            Ok(())
        })?;
    Ok(())
}

//! The HTML report over canned runs: which plots and sections appear, that every plot draws a
//! line per CPU with its axis labels, that hostile names are escaped, and that the page asks
//! for nothing outside itself.

use model::audit::{AuditSummary, Counts, Profile, RtCpus, SCHEMA as AUDIT_SCHEMA};
use model::audit::{Status, SummaryItem};
use model::host::CpuInfo;
use model::load::report::{CpuBusy, LOAD_SCHEMA};
use model::load::{GeneratorReport, LoadReport};
use model::measure::{MeasureRun, Series, Warning, aggregate};
use model::{CpuSet, Nanos};

use super::*;
use crate::testdata;

/// The data series of a chart, one path each (legend swatches and grid lines are other
/// elements).
pub(super) fn data_lines(svg: &str) -> Vec<&str> {
    svg.lines()
        .filter(|l| l.starts_with("<path") && l.contains("stroke-width=\"2\""))
        .collect()
}

fn stroke(line: &str) -> &str {
    line.split("stroke=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
}

/// Whether an SVG holds `text` as a text element of its own (axis label, legend entry).
pub(super) fn has_text(svg: &str, text: &str) -> bool {
    svg.contains(&format!(">\n{text}\n</text>"))
}

/// [`testdata::two_cpus`] with three seconds of per-second series (CPU 1 silent in the
/// second one), a load, an audit summary and a warning.
pub(super) fn full_run() -> MeasureRun {
    let mut run = testdata::two_cpus();
    run.cpus[0].series = Series {
        slot_ns: Nanos::from_secs(1),
        max_ns: vec![15_000, 66_000, 14_100],
        count: vec![2, 1, 1],
    };
    run.cpus[1].series = Series {
        slot_ns: Nanos::from_secs(1),
        max_ns: vec![13_999, 0, 250_000],
        count: vec![2, 0, 1],
    };
    run.all = aggregate(&run.cpus);
    run.host.cmdline = "BOOT_IMAGE=/vmlinuz isolcpus=1 nohz_full=1".into();
    run.host.clocksource = Some("tsc".into());
    run.host.available_clocksources = vec!["tsc".into(), "hpet".into()];
    run.host.cpu_model = Some("Intel(R) Xeon(R) CPU".into());
    run.host.cpus = (0..2)
        .map(|cpu| CpuInfo {
            cpu,
            package: Some(0),
            core: Some(cpu),
            model: Some("Intel(R) Xeon(R) CPU".into()),
            ..CpuInfo::default()
        })
        .collect();
    run.load = Some(LoadReport {
        schema: LOAD_SCHEMA.into(),
        build: None,
        spec: "cpu:60%".into(),
        window_ns: Nanos::from_secs(3),
        warmup_ns: Nanos::ZERO,
        status: "complete".into(),
        cgroup: None,
        generators: vec![GeneratorReport {
            spec: "cpu:60%@0-1".into(),
            description: "2 workers at 60% duty".into(),
            cpus: CpuSet::from_cpus([0, 1]),
            tasks: 2,
            unit: "loop".into(),
            ops: 600,
            ops_per_sec: 200.0,
            bytes: 0,
            bytes_per_sec: 0.0,
            cpu_ns: Nanos::from_ms(3600),
            cpu_share_percent: 60.04,
            notes: vec!["warm-up skipped".into()],
            ended_ns: None,
        }],
        cpu_busy: vec![CpuBusy {
            cpu: 0,
            busy_percent: 61.25,
            steal_percent: 0.0,
        }],
    });
    run.audit = Some(AuditSummary {
        schema: AUDIT_SCHEMA.into(),
        profile: Profile::Production,
        rt_cpus: RtCpus {
            cpus: CpuSet::from_cpus([1]),
            source: "isolcpus".into(),
        },
        counts: Counts {
            pass: 30,
            warn: 2,
            info: 7,
            fail: 1,
            unknown: 3,
            error: 0,
        },
        top: vec![SummaryItem {
            id: "sched.rt_throttling".into(),
            status: Status::Fail,
            summary: "RT throttling is on".into(),
            fix: Some("echo -1 > /proc/sys/kernel/sched_rt_runtime_us".into()),
        }],
    });
    run.warnings = vec![Warning::new("cpu-not-isolated", "CPU 0 is not isolated")];
    run
}

pub(super) fn one(run: &MeasureRun, name: &str) -> HtmlReport {
    html_report(
        &[ReportRun {
            run,
            name,
            source: "stored run 0123456789ab",
            key: "0123456789ab",
        }],
        &ReportOptions::default(),
    )
}

pub(super) fn file<'a>(report: &'a HtmlReport, name: &str) -> &'a str {
    &report
        .svg_files
        .iter()
        .find(|f| f.name == name)
        .unwrap_or_else(|| panic!("no {name} in {:?}", names(report)))
        .svg
}

pub(super) fn names(report: &HtmlReport) -> Vec<&str> {
    report.svg_files.iter().map(|f| f.name.as_str()).collect()
}

#[test]
fn every_plot_draws_one_line_per_cpu_with_its_axes() {
    let run = full_run();
    let report = one(&run, "RT-#1");
    assert_eq!(
        names(&report),
        [
            "0123456789ab-histogram.svg",
            "0123456789ab-exceedance.svg",
            "0123456789ab-max-over-time.svg"
        ]
    );

    let histogram = file(&report, "0123456789ab-histogram.svg");
    let lines = data_lines(histogram);
    assert_eq!(lines.len(), 2, "{histogram}");
    assert_ne!(stroke(lines[0]), stroke(lines[1]));
    for text in [
        "latency (log scale)",
        "samples per 1 us bin",
        "CPU 0",
        "CPU 1",
        "Latency histogram: RT-#1",
    ] {
        assert!(has_text(histogram, text), "{text}: {histogram}");
    }
    // Both axes logarithmic: count decades, latency decades with their unit.
    for tick in ["1", "10", "10 us", "100 us"] {
        assert!(has_text(histogram, tick), "{tick}: {histogram}");
    }
    // 1 us bins, empty ones left out: CPU 0 has 12 | 14 15 | 66 us, so a lone bin (a ring),
    // a line of two, a ring; CPU 1 has 13 (two samples) and 250 us, two rings.
    let d = |line: &str| -> String {
        line.split("d=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap()
            .to_string()
    };
    let (cpu0, cpu1) = (d(lines[0]), d(lines[1]));
    assert_eq!(cpu0.matches('M').count(), 3, "{cpu0}");
    assert_eq!(cpu0.matches('L').count(), 1, "{cpu0}");
    assert_eq!(cpu1.matches('M').count(), 2, "{cpu1}");
    assert_eq!(cpu1.matches('L').count(), 0, "{cpu1}");

    let exceedance = file(&report, "0123456789ab-exceedance.svg");
    assert_eq!(data_lines(exceedance).len(), 2, "{exceedance}");
    for text in [
        "latency (log scale)",
        "fraction of samples at or above",
        "CPU 1",
    ] {
        assert!(has_text(exceedance, text), "{text}");
    }
    assert!(has_text(exceedance, "1") && has_text(exceedance, "0.1"));

    let over_time = file(&report, "0123456789ab-max-over-time.svg");
    let lines = data_lines(over_time);
    // One path per CPU; CPU 1 had no sample in the second slot: its line breaks there.
    assert_eq!(lines.len(), 2, "{over_time}");
    assert_ne!(stroke(lines[0]), stroke(lines[1]));
    let d1 = lines[1].split("d=\"").nth(1).unwrap();
    assert_eq!(d1.matches('M').count(), 2, "{d1}");
    for text in [
        "time since start (s)",
        "largest latency per 1s (log scale)",
        "CPU 0",
    ] {
        assert!(has_text(over_time, text), "{text}: {over_time}");
    }

    // The page holds the same SVG, in order, each in its figure.
    let page = &report.page;
    let at = |s: &str| page.find(s).unwrap_or_else(|| panic!("{s} not in page"));
    assert!(at("data-kind=\"histogram\"") < at("data-kind=\"exceedance\""));
    assert!(at("data-kind=\"exceedance\"") < at("data-kind=\"max-over-time\""));
    assert_eq!(page.matches("<svg ").count(), 3);
    assert!(page.contains(histogram.trim_end()));
}

#[test]
fn all_sections_of_a_full_run() {
    let run = full_run();
    let page = one(&run, "RT-#1").page;
    for expected in [
        "<title>rtlab report: RT-#1 on rt-box, kernel ",
        "stored run 0123456789ab",
        "6.1.0-50-rt-amd64 (PREEMPT_RT)",
        "2026-01-12T11:52:32Z to 2026-01-12T11:53:32Z (60.0s measured)",
        "fifo:95 on CPUs 0-1, interval 1ms, planned 1m, mlock on",
        "250.0 us on CPU 1, p99.9 250.0 us over all CPUs",
        "<th>p99.999</th>",
        "<td>all</td>",
        "<td>92.3</td>",
        "Load achieved",
        "<td>cpu:60%@0-1</td><td>0-1</td><td>2</td><td>60.0%</td><td>200.0 loop&#x2f;s</td>",
        "<td>61.2%</td>",
        "cpu:60%@0-1: warm-up skipped",
        "Profile production; real-time CPUs 1 (from isolcpus).",
        "1 fail",
        "7 info",
        "<code>sched.rt_throttling</code>",
        "<code>echo -1 &gt; &#x2f;proc&#x2f;sys&#x2f;kernel&#x2f;sched_rt_runtime_us</code>",
        "<code>cpu-not-isolated</code> CPU 0 is not isolated",
        "<code>BOOT_IMAGE=&#x2f;vmlinuz isolcpus=1 nohz_full=1</code>",
        "tsc (available: tsc, hpet)",
        "<h4>Topology</h4>",
    ] {
        assert!(page.contains(expected), "{expected} not in page:\n{page}");
    }
    assert!(!page.contains("class=\"missing\""), "{page}");
    assert!(page.contains("load cpu:60% (complete): 3.0 s"), "{page}");
    // A homogeneous host needs no kind column.
    assert!(!page.contains("<th>kind</th>"));
}

#[test]
fn a_run_without_series_load_or_audit_leaves_those_sections_out() {
    let run = testdata::two_cpus();
    let report = one(&run, "0123456789ab");
    let page = &report.page;
    assert_eq!(report.svg_files.len(), 2);
    assert!(page.contains("data-kind=\"histogram\""));
    assert!(!page.contains("data-kind=\"max-over-time\""));
    assert!(page.contains("No maximum-over-time plot: this result carries no per-second series."));
    for absent in [
        "Load achieved",
        "class=\"audit\"",
        "Warnings",
        "Topology",
        "Runs compared",
        "<nav>",
    ] {
        assert!(!page.contains(absent), "{absent} in page");
    }
}

#[test]
fn the_rtlab_fact_names_the_build_when_the_run_records_it() {
    let mut run = testdata::two_cpus();
    assert!(one(&run, "r").page.contains("<dt>rtlab</dt><dd>0.1.0</dd>"));
    run.build = Some(model::build::Build {
        version: "0.1.0".into(),
        commit: None,
        target: "armv7-unknown-linux-musleabihf".into(),
        libc: "musl".into(),
        linkage: "static".into(),
        profile: "dist".into(),
    });
    let page = one(&run, "r").page;
    assert!(
        page.contains(
            "<dt>rtlab</dt><dd>0.1.0, commit unknown, armv7-unknown-linux-musleabihf, \
             musl static, profile dist</dd>"
        ),
        "{page}"
    );
}

#[test]
fn a_run_without_samples_has_no_plots_but_a_table() {
    let run = testdata::run_of(vec![testdata::cpu(0, None, &[], 0)]);
    let report = one(&run, "empty");
    assert!(report.svg_files.is_empty());
    assert!(
        report
            .page
            .contains("No latency plots: this run holds no samples.")
    );
    assert!(report.page.contains("<td>0</td><td>0</td><td>-</td>"));
    assert!(!report.page.contains("Worst latency"));
}

#[test]
fn an_empty_cpu_gets_no_line_and_above_range_samples_are_named() {
    let run = testdata::one_empty_cpu();
    let report = one(&run, "x");
    assert_eq!(
        data_lines(file(&report, "0123456789ab-histogram.svg")).len(),
        1
    );

    let run = testdata::above_range();
    let report = one(&run, "x");
    assert!(
        report
            .page
            .contains("1 sample above the histogram&#x27;s range (about 17.2 s) is not drawn."),
        "{}",
        report.page
    );
    let exceedance = file(&report, "0123456789ab-exceedance.svg");
    assert_eq!(data_lines(exceedance).len(), 2);
}

#[test]
fn hostile_names_and_hosts_are_escaped() {
    let mut run = full_run();
    run.host.hostname = "\"><img src=x onerror=alert(1)>".into();
    run.host.cmdline = "</code><script>alert(2)</script>".into();
    run.warnings = vec![Warning::new("x", "<b>bold</b> & 'quoted'")];
    let name = "<script>alert(3)</script>";
    let other = testdata::two_cpus();
    let report = html_report(
        &[
            ReportRun {
                run: &run,
                name,
                source: "file <evil>.json",
                key: "../../etc/passwd",
            },
            ReportRun {
                run: &other,
                name: "plain",
                source: "stored run abc",
                key: "../../etc/passwd",
            },
        ],
        &ReportOptions::default(),
    );
    let page = &report.page;
    for forbidden in ["<script", "<img", "<b>", "onerror=alert(1)>"] {
        assert!(!page.contains(forbidden), "{forbidden} in page");
    }
    assert!(page.contains("&lt;script&gt;alert(3)&lt;&#x2f;script&gt;"));
    assert!(page.contains("&lt;b&gt;bold&lt;&#x2f;b&gt; &amp; &#x27;quoted&#x27;"));
    // plotters escapes its own text: the legend of the chart over runs names the run.
    let overlay = file(&report, "runs-exceedance.svg");
    assert!(
        overlay.contains("&lt;script&gt;alert(3)&lt;/script&gt;"),
        "{overlay}"
    );
    for f in &report.svg_files {
        assert!(!f.svg.contains("<script"), "{}", f.name);
        assert!(
            !f.name.contains('/') && !f.name.starts_with('.'),
            "{}",
            f.name
        );
    }
    assert_eq!(
        names(&report),
        [
            "runs-exceedance.svg",
            "etc-passwd-histogram.svg",
            "etc-passwd-exceedance.svg",
            "etc-passwd-max-over-time.svg",
            "etc-passwd-2-histogram.svg",
            "etc-passwd-2-exceedance.svg",
        ]
    );
}

#[test]
fn several_runs_are_compared_at_the_top_then_reported_in_turn() {
    let a = full_run();
    let b = testdata::two_cpus_broken();
    let c = testdata::run_of(vec![testdata::cpu(0, None, &[], 0)]);
    let runs = [
        ReportRun {
            run: &a,
            name: "Van-#1",
            source: "stored run aaaa",
            key: "aaaa",
        },
        ReportRun {
            run: &b,
            name: "RT-#1",
            source: "stored run bbbb",
            key: "bbbb",
        },
        ReportRun {
            run: &c,
            name: "empty",
            source: "file empty.json",
            key: "runs",
        },
    ];
    let report = html_report(&runs, &ReportOptions::default());
    let page = &report.page;
    let overlay = file(&report, "runs-exceedance.svg");
    // The run without samples has no curve.
    let lines = data_lines(overlay);
    assert_eq!(lines.len(), 2, "{overlay}");
    // A run that ran under a load is named with it.
    assert!(has_text(overlay, "Van-#1, load cpu:60%") && has_text(overlay, "RT-#1"));
    assert!(!has_text(overlay, "empty"));
    // The title says where, as far as the runs share it.
    assert!(page.contains("<title>rtlab report: 3 runs on "), "{page}");
    assert!(page.contains("<a href=\"#run-aaaa\">Van-#1</a>"));
    assert!(page.contains("<a href=\"#run-runs-2\">empty</a>"));
    let at = |s: &str| page.find(s).unwrap_or_else(|| panic!("{s} not in page"));
    assert!(at("id=\"overlay\"") < at("id=\"run-aaaa\""));
    assert!(at("id=\"run-aaaa\"") < at("id=\"run-bbbb\""));
    assert!(page.contains("<span class=\"status bad\">broke-threshold</span>"));
    assert!(page.contains("break: CPU 1 woke 250.0 us late (threshold 200us) at cycle 2"));
    assert_eq!(page.matches("<svg ").count(), 1 + 3 + 2);
    // One run alone has nothing to compare.
    assert!(
        !one(&a, "a")
            .svg_files
            .iter()
            .any(|f| f.name.starts_with("runs"))
    );
}

#[test]
fn the_page_fetches_nothing() {
    let run = full_run();
    let page = one(&run, "RT-#1").page;
    assert!(page.starts_with("<!DOCTYPE html>"), "{}", &page[..200]);
    assert!(page.contains(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         style-src 'unsafe-inline'; img-src data:\">"
    ));
    // The only URL is the SVG namespace, which is a name, not a fetch.
    let without_ns = page.replace("xmlns=\"http://www.w3.org/2000/svg\"", "");
    for forbidden in [
        "http:", "https:", "src=", "<link", "<script", "@import", "url(",
    ] {
        assert!(!without_ns.contains(forbidden), "{forbidden} in page");
    }
    for href in without_ns.split("href=\"").skip(1) {
        assert!(href.starts_with('#'), "external link: {href}");
    }
}

#[test]
fn a_heterogeneous_host_gets_a_kind_column() {
    let mut run = full_run();
    run.host.cpus = vec![
        CpuInfo {
            cpu: 0,
            capacity: Some(446),
            model: Some("0x41:0xd05".into()),
            max_freq_khz: Some(1_800_000),
            ..CpuInfo::default()
        },
        CpuInfo {
            cpu: 1,
            capacity: Some(1024),
            model: Some("0x41:0xd0d".into()),
            max_freq_khz: Some(2_400_000),
            ..CpuInfo::default()
        },
    ];
    let page = one(&run, "RT-#1").page;
    assert!(page.contains("<th>CPU</th><th>kind</th><th>samples</th>"));
    assert!(page.contains("<td>1</td><td>B</td><td>3</td>"));
    assert!(page.contains("A: CPUs 0 (capacity 446, 0x41:0xd05, up to 1.80 GHz)"));
}

#[test]
fn sixty_four_cpus_get_sixty_four_lines_and_a_legend_in_columns() {
    let cpus = (0..64)
        .map(|cpu| testdata::cpu(cpu, None, &[5_000 + u64::from(cpu) * 1_000, 9_000], 0))
        .collect();
    let run = testdata::run_of(cpus);
    let report = one(&run, "big");
    let histogram = file(&report, "0123456789ab-histogram.svg");
    let lines = data_lines(histogram);
    assert_eq!(lines.len(), 64);
    let colours: std::collections::HashSet<&str> = lines.iter().map(|l| stroke(l)).collect();
    assert_eq!(colours.len(), 64);
    assert!(has_text(histogram, "CPU 0") && has_text(histogram, "CPU 63"));
}

#[test]
fn a_traced_run_tells_why_its_spikes_happened() {
    use model::explain::{
        Cause, Caveat, Explanation, Milestones, Part, PartKind, Phases, TraceCapture,
    };
    let mut run = full_run();
    let page = one(&run, "plain").page;
    assert!(!page.contains("Why the spikes happened"));
    run.trace = Some(TraceCapture {
        instance: "rtlab-4242".into(),
        clock: "mono".into(),
        buffer_kb: 4096,
        frozen_by: "break".into(),
        missing: vec!["preemptirq/*: sections are seen only as gaps".into()],
        explanations: vec![Explanation {
            cpu: 1,
            pid: Some(7),
            comm: Some("rtlab/1".into()),
            prio: Some(4),
            latency_ns: 5_762_000,
            deadline_ns: 1,
            cycle: Some(1499),
            milestones: Milestones {
                timer_armed_ns: None,
                timer_fired_ns: Some(2_000),
                woken_ns: Some(3_000),
                switched_in_ns: Some(5_750_000),
                woken_running: false,
            },
            parts: vec![Part {
                kind: PartKind::HigherPriorityTask,
                what: model::explain::Agent::Task(model::explain::Task::new("<hog>", 12050, 0)),
                duration_ns: 5_697_000,
                start_ns: 24_000,
                times: 2,
                share: 0.989,
                inside: None,
                functions: None,
            }],
            culprit: PartKind::HigherPriorityTask,
            phases: Some(Phases {
                unarmed: Vec::new(),
                before_fire: Vec::new(),
                waiting: vec![Cause {
                    kind: PartKind::HigherPriorityTask,
                    what: model::explain::Agent::Task(model::explain::Task::new("<hog>", 12050, 0)),
                    duration_ns: 5_697_000,
                }],
            }),
            old_story: None,
            caveats: vec![Caveat::InferredSwitches { cpu: 1, count: 3 }],
        }],
        ..TraceCapture::default()
    });
    let page = one(&run, "traced").page;
    assert!(page.contains("<h3>Why the spikes happened</h3>"));
    assert!(page.contains("frozen at the breach"));
    assert!(page.contains("CPU 1, cycle 1499: 5762.0 us late, main cause higher-priority task"));
    assert!(
        page.contains("&lt;hog&gt; (pid 12050, real-time priority 99), of higher priority, held the CPU for 5697 us."),
        "stories are escaped"
    );
    assert!(!page.contains("<hog>"));
    assert!(page.contains("<td class=\"num\">98.9 %</td>"));
    assert!(page.contains("3 switches on CPU 1 are not in the trace and were inferred"));
    assert!(
        page.contains("not traced: preemptirq&#x2f;*"),
        "escaped like every text"
    );
}

#[test]
fn a_noise_run_has_its_osnoise_columns_and_culprits_escaped() {
    use model::noise::{Culprit, Engine, NOISE_SCHEMA, NoiseCpu, NoiseInfo, PerSource, Source};
    let mut run = testdata::two_cpus();
    run.schema = NOISE_SCHEMA.into();
    run.noise = Some(NoiseInfo {
        engine: Engine::User,
        counter: "tsc".into(),
        counter_hz: Some(2_994_000_000),
        threshold_ns: Nanos::from_us(1),
        runtime_ns: Nanos::SECOND,
        period_ns: Nanos::SECOND,
        attribution: "trace".into(),
        attribution_note: Some("nmi/nmi_handler: NMIs are not seen".into()),
        hypervisor: Some("KVM".into()),
        cpus: vec![NoiseCpu {
            cpu: 1,
            runtime_ns: 10_000_000_000,
            noise_ns: 42_000_000,
            interruptions: 300,
            max_single_ns: 412_000,
            max_period_noise_ns: 5_000_000,
            iterations: Some(200_000_000),
            counts: Some(PerSource {
                thread: 290,
                irq: 10,
                ..PerSource::default()
            }),
            time_ns: None,
            culprits: vec![Culprit {
                source: Source::Thread,
                name: "<inject> (pid 600, real-time priority 50)".into(),
                count: 290,
                total_ns: 40_000_000,
                max_ns: 412_000,
            }],
            unexplained: 2,
            steal_ns: Some(3_000_000),
        }],
    });
    let html = one(&run, "noise").page;
    assert!(html.contains("<h3>OS noise</h3>"), "no noise section");
    assert!(html.contains("99.5800"), "% available");
    assert!(html.contains("&lt;inject&gt; (pid 600, real-time priority 50)"));
    assert!(!html.contains("<inject>"));
    assert!(html.contains("2 interruptions fell outside the trace"));
    assert!(html.contains("under KVM"));
}

#[test]
fn a_timerlat_run_has_its_kernel_section() {
    use model::timerlat::{Context, TimerlatInfo, TimerlatStop};
    let mut run = full_run();
    run.params.engine = model::measure::Engine::Timerlat;
    run.timerlat = Some(TimerlatInfo {
        period_ns: model::Nanos::MILLISECOND,
        in_instance: true,
        user_threads: false,
        stop_ns: Some(model::Nanos::from_us(200)),
        stack_ns: Some(model::Nanos::from_us(200)),
        trace_clock: "local".into(),
        irq: run.cpus.clone(),
        user: vec![],
        lost_events: 0,
        stop: Some(TimerlatStop {
            cpu: 1,
            context: Context::Thread,
            activation: 3,
            latency_ns: 250_000,
            stack: vec!["timerlat_irq".into(), "<evil>".into()],
            window: String::new(),
        }),
        analyses: vec![],
    });
    let page = one(&run, "RT-#1").page;
    assert!(page.contains("Inside the kernel (timerlat)"), "{page}");
    assert!(!page.contains("<evil>"));
}

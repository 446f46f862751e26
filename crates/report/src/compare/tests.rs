//! Snapshot tests of the comparison over the Linaro 2023 talk's fixture set (see `rb5_example`), the verdict's
//! edges, escaping and the JSON round trip.

use super::*;
use crate::testdata;

/// the Linaro 2023 talk's four runs side by side.
fn talk() -> Comparison {
    let runs = rb5_example::runs();
    let refs: Vec<(String, &MeasureRun)> = runs.iter().map(|(l, r)| (l.clone(), r)).collect();
    Comparison::new(&refs)
}

/// Two labelled runs compared.
fn pair(a: &MeasureRun, b: &MeasureRun) -> Comparison {
    Comparison::new(&[("base".to_string(), a), ("new".to_string(), b)])
}

#[test]
fn talk_000_in_a_terminal_exactly() {
    let expected = "\
rtlab compare: 4 runs, latencies in us, changes against Van-#1
  Van-#1  rb5  6.1.7      2023-01-23 09:00:00
  RT-#1   rb5  6.1.7-rt5  2023-01-23 10:00:00
  RT-#2   rb5  6.1.7-rt5  2023-01-24 10:00:00
  RT-#3   rb5  6.1.7-rt5  2023-01-25 10:00:00

Min          4x Cortex-A55               |  3x Cortex-A77 (2.42 GHz)  |  1x Cortex-A77 (2.84 GHz)
CPU              0      1      2      3  |         4       5       6  |                         7
Van-#1         5.0    5.0    5.0    5.0  |       2.0     2.0     2.0  |                       2.0
RT-#1          5.0    5.0    5.0    5.0  |       2.0     2.0     2.0  |                       2.0
  vs Van-#1     0%     0%     0%     0%  |        0%      0%      0%  |                        0%
RT-#2          5.0    5.0    4.0    5.0  |       1.0     1.0     2.0  |                       1.0
  vs Van-#1     0%     0%   -20%     0%  |      -50%    -50%      0%  |                      -50%
RT-#3            -      -    5.0    5.0  |       2.0     2.0     2.0  |                       1.0
  vs Van-#1      -      -     0%     0%  |        0%      0%      0%  |                      -50%

Avg          4x Cortex-A55               |  3x Cortex-A77 (2.42 GHz)  |  1x Cortex-A77 (2.84 GHz)
CPU              0      1      2      3  |         4       5       6  |                         7
Van-#1        16.0   16.0   16.0   18.0  |      14.0     4.0     6.0  |                       4.0
RT-#1         21.0   20.0   17.0   19.0  |       8.0     6.0     6.0  |                       7.0
  vs Van-#1   +31%   +25%    +6%    +6%  |      -43%    +50%      0%  |                      +75%
RT-#2          6.0    6.0    5.0    5.1  |       2.0     2.0     2.0  |                       2.0
  vs Van-#1   -63%   -63%   -69%   -72%  |      -86%    -50%    -66%  |                      -50%
RT-#3            -      -    6.0    6.0  |       2.0     2.0     2.0  |                       2.0
  vs Van-#1      -      -   -63%   -67%  |      -86%    -50%    -67%  |                      -50%

p99.9        4x Cortex-A55               |  3x Cortex-A77 (2.42 GHz)  |  1x Cortex-A77 (2.84 GHz)
CPU              0      1      2      3  |         4       5       6  |                         7
Van-#1       161.5  179.6  287.2  114.0  |      17.5    51.0    33.0  |                      16.0
RT-#1        116.5  283.6  469.2  336.1  |      34.5    37.5    39.0  |                      25.0
  vs Van-#1   -28%   +58%   +63%  +195%  |      +97%    -26%    +18%  |                      +56%
RT-#2         52.5   43.0   13.0   24.5  |      44.0    17.5     8.5  |                      43.0
  vs Van-#1   -67%   -76%   -95%   -79%  |     +152%    -66%    -74%  |                     +169%
RT-#3            -      -   10.0    8.0  |       5.0     3.0     3.0  |                       3.0
  vs Van-#1      -      -   -97%   -93%  |      -71%    -94%    -91%  |                      -81%

Max          4x Cortex-A55               |  3x Cortex-A77 (2.42 GHz)  |  1x Cortex-A77 (2.84 GHz)
CPU              0      1      2      3  |         4       5       6  |                         7
Van-#1       307.0  343.0  558.0  210.0  |      21.0    98.0    60.0  |                      28.0
RT-#1        212.0  547.0  921.0  653.0  |      61.0    69.0    72.0  |                      43.0
  vs Van-#1   -31%   +59%   +65%  +211%  |     +190%    -30%    +20%  |                      +54%
RT-#2         99.0   80.0   21.0   44.0  |      86.0    33.0    15.0  |                      84.0
  vs Van-#1   -68%   -77%   -96%   -79%  |     +310%    -66%    -75%  |                     +200%
RT-#3            -      -   14.0   10.0  |       8.0     4.0     4.0  |                       4.0
  vs Van-#1      -      -   -97%   -95%  |      -62%    -96%    -93%  |                      -86%
";
    assert_eq!(compare_text(&talk()), expected);
}

#[test]
fn talk_000_in_markdown_exactly() {
    let expected = "\
## Latency comparison

Latencies in us. Rows in italics give a run's change against Van-#1.

| run | host | kernel | started (UTC) |
| --- | --- | --- | --- |
| Van-#1 | rb5 | 6.1.7 | 2023-01-23 09:00:00 |
| RT-#1 | rb5 | 6.1.7-rt5 | 2023-01-23 10:00:00 |
| RT-#2 | rb5 | 6.1.7-rt5 | 2023-01-24 10:00:00 |
| RT-#3 | rb5 | 6.1.7-rt5 | 2023-01-25 10:00:00 |

|  | Min |  |  |  |  |  |  |  | Avg |  |  |  |  |  |  |  | p99.9 |  |  |  |  |  |  |  | Max |  |  |  |  |  |  |  |
| :-- | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: |
| **Cluster** | **4x Cortex-A55** |  |  |  | **3x Cortex-A77 (2.42 GHz)** |  |  | **1x Cortex-A77 (2.84 GHz)** | **4x Cortex-A55** |  |  |  | **3x Cortex-A77 (2.42 GHz)** |  |  | **1x Cortex-A77 (2.84 GHz)** | **4x Cortex-A55** |  |  |  | **3x Cortex-A77 (2.42 GHz)** |  |  | **1x Cortex-A77 (2.84 GHz)** | **4x Cortex-A55** |  |  |  | **3x Cortex-A77 (2.42 GHz)** |  |  | **1x Cortex-A77 (2.84 GHz)** |
| **CPU** | **0** | **1** | **2** | **3** | **4** | **5** | **6** | **7** | **0** | **1** | **2** | **3** | **4** | **5** | **6** | **7** | **0** | **1** | **2** | **3** | **4** | **5** | **6** | **7** | **0** | **1** | **2** | **3** | **4** | **5** | **6** | **7** |
| Van-#1 | 5.0 | 5.0 | 5.0 | 5.0 | 2.0 | 2.0 | 2.0 | 2.0 | 16.0 | 16.0 | 16.0 | 18.0 | 14.0 | 4.0 | 6.0 | 4.0 | 161.5 | 179.6 | 287.2 | 114.0 | 17.5 | 51.0 | 33.0 | 16.0 | 307.0 | 343.0 | 558.0 | 210.0 | 21.0 | 98.0 | 60.0 | 28.0 |
| RT-#1 | 5.0 | 5.0 | 5.0 | 5.0 | 2.0 | 2.0 | 2.0 | 2.0 | 21.0 | 20.0 | 17.0 | 19.0 | 8.0 | 6.0 | 6.0 | 7.0 | 116.5 | 283.6 | 469.2 | 336.1 | 34.5 | 37.5 | 39.0 | 25.0 | 212.0 | 547.0 | 921.0 | 653.0 | 61.0 | 69.0 | 72.0 | 43.0 |
| *vs Van-#1* | *0%* | *0%* | *0%* | *0%* | *0%* | *0%* | *0%* | *0%* | *+31%* | *+25%* | *+6%* | *+6%* | *-43%* | *+50%* | *0%* | *+75%* | *-28%* | *+58%* | *+63%* | *+195%* | *+97%* | *-26%* | *+18%* | *+56%* | *-31%* | *+59%* | *+65%* | *+211%* | *+190%* | *-30%* | *+20%* | *+54%* |
| RT-#2 | 5.0 | 5.0 | 4.0 | 5.0 | 1.0 | 1.0 | 2.0 | 1.0 | 6.0 | 6.0 | 5.0 | 5.1 | 2.0 | 2.0 | 2.0 | 2.0 | 52.5 | 43.0 | 13.0 | 24.5 | 44.0 | 17.5 | 8.5 | 43.0 | 99.0 | 80.0 | 21.0 | 44.0 | 86.0 | 33.0 | 15.0 | 84.0 |
| *vs Van-#1* | *0%* | *0%* | *-20%* | *0%* | *-50%* | *-50%* | *0%* | *-50%* | *-63%* | *-63%* | *-69%* | *-72%* | *-86%* | *-50%* | *-66%* | *-50%* | *-67%* | *-76%* | *-95%* | *-79%* | *+152%* | *-66%* | *-74%* | *+169%* | *-68%* | *-77%* | *-96%* | *-79%* | *+310%* | *-66%* | *-75%* | *+200%* |
| RT-#3 | - | - | 5.0 | 5.0 | 2.0 | 2.0 | 2.0 | 1.0 | - | - | 6.0 | 6.0 | 2.0 | 2.0 | 2.0 | 2.0 | - | - | 10.0 | 8.0 | 5.0 | 3.0 | 3.0 | 3.0 | - | - | 14.0 | 10.0 | 8.0 | 4.0 | 4.0 | 4.0 |
| *vs Van-#1* | - | - | *0%* | *0%* | *0%* | *0%* | *0%* | *-50%* | - | - | *-63%* | *-67%* | *-86%* | *-50%* | *-67%* | *-50%* | - | - | *-97%* | *-93%* | *-71%* | *-94%* | *-91%* | *-81%* | - | - | *-97%* | *-95%* | *-62%* | *-96%* | *-93%* | *-86%* |
";
    assert_eq!(compare_markdown(&talk()), expected);
}

#[test]
fn the_layout_follows_the_clusters_and_the_measured_cpus() {
    let c = talk();
    assert!(c.heterogeneous);
    let clusters: Vec<(Option<&str>, &[u32])> = c
        .clusters
        .iter()
        .map(|g| (g.name.as_deref(), g.cpus.as_slice()))
        .collect();
    assert_eq!(
        clusters,
        [
            (Some("4x Cortex-A55"), &[0, 1, 2, 3][..]),
            (Some("3x Cortex-A77 (2.42 GHz)"), &[4, 5, 6][..]),
            (Some("1x Cortex-A77 (2.84 GHz)"), &[7][..]),
        ]
    );
    // RT-#3 measured CPUs 2-7: CPUs 0 and 1 are there, empty.
    let rt3 = &c.runs[3];
    assert_eq!(rt3.cpus.len(), 8);
    assert_eq!((rt3.cpus[0].cpu, rt3.cpus[0].samples), (0, 0));
    assert_eq!(rt3.cpus[0].cell(Figure::Max), "-");
    assert_eq!(rt3.cpus[2].max_ns, Some(14_000));
    // The fixture's statistics are the model's own, derived from the samples.
    assert_eq!(c.runs[1].cpus[2].max_ns, Some(921_000));
    assert_eq!(c.runs[1].cpus[2].min_ns, Some(5_000));
    assert_eq!(c.runs[1].cpus[2].mean_ns, Some(17_000.0));
    assert_eq!(c.runs[1].cpus[2].samples, 1000);
}

#[test]
fn one_kind_of_cpu_has_no_cluster_header() {
    let a = testdata::two_cpus();
    let mut b = testdata::run_of(vec![
        testdata::cpu(0, None, &[11_000, 70_000], 0),
        testdata::cpu(2, None, &[9_000], 0),
    ]);
    b.host.kernel_release = "6.12.0-rt".to_string();
    let c = pair(&a, &b);
    assert!(!c.heterogeneous);
    let expected = "\
rtlab compare: 2 runs, latencies in us, changes against base
  base  rt-box  6.1.0-50-rt-amd64  2026-01-12 11:52:32
  new   rt-box  6.12.0-rt          2026-01-12 11:52:32

Min
CPU           0      1    2
base       12.3   13.0    -
new        11.0      -  9.0
  vs base  -11%      -    -

Avg
CPU           0      1    2
base       26.9   92.3    -
new        40.5      -  9.0
  vs base  +51%      -    -

p99.9
CPU           0      1    2
base       66.0  250.0    -
new        70.0      -  9.0
  vs base   +6%      -    -

Max
CPU           0      1    2
base       66.0  250.0    -
new        70.0      -  9.0
  vs base   +6%      -    -
";
    assert_eq!(compare_text(&c), expected);
}

/// A run whose CPU 1 has the given p99.9 and maximum (1000 samples: 998 at 500 ns, one at
/// `p99_9`, one at `max`; below 2048 ns buckets are 1 ns wide, so p99.9 is exact) and whose
/// CPU 0 never changes.
fn judged(p99_9: u64, max: u64) -> MeasureRun {
    let mut samples = vec![500; 998];
    samples.extend([p99_9, max]);
    testdata::run_of(vec![
        testdata::cpu(0, None, &[700, 800], 0),
        testdata::cpu(1, None, &samples, 0),
    ])
}

#[test]
fn a_max_worse_by_more_than_the_limit_fails() {
    let base = judged(1_000, 100_000);
    assert_eq!(base.cpus[1].stats.p99_9_ns, Some(1_000));
    // 10% worse: fails a 9.5% limit, not a 10% one (exactly the limit is not more than it).
    let mut c = pair(&base, &judged(1_000, 110_000));
    let v = c.judge(9.5).clone();
    assert!(!v.passed);
    assert_eq!(
        v.regressions,
        [Regression {
            run: "new".to_string(),
            cpu: 1,
            figure: Figure::Max,
            baseline_ns: 100_000,
            value_ns: 110_000,
            worse_pct: Some(10.0),
        }]
    );
    assert_eq!(
        v.messages(),
        ["new CPU 1: max 110.0 us is 10.0% worse than base's 100.0 us (limit 9.5%)"]
    );
    assert_eq!(
        v.summary(),
        "verdict: FAIL: 1 figure is more than 9.5% worse than base's"
    );
    assert!(c.judge(10.0).passed);
    // 9% worse passes 9.5%; 11% worse fails 10%.
    assert!(pair(&base, &judged(1_000, 109_000)).judge(9.5).passed);
    assert!(!pair(&base, &judged(1_000, 111_000)).judge(10.0).passed);
    // Better is never worse, even against a zero limit.
    assert!(pair(&base, &judged(900, 50_000)).judge(0.0).passed);
}

#[test]
fn a_p99_9_worse_by_more_than_the_limit_fails() {
    let base = judged(1_000, 100_000);
    let mut c = pair(&base, &judged(1_100, 100_000));
    let v = c.judge(9.5).clone();
    assert_eq!(v.regressions.len(), 1, "{v:?}");
    assert_eq!(v.regressions[0].figure, Figure::P99_9);
    assert_eq!(
        (v.regressions[0].cpu, v.regressions[0].value_ns),
        (1, 1_100)
    );
    assert!(pair(&base, &judged(1_090, 100_000)).judge(9.5).passed);
    assert!(pair(&base, &judged(1_100, 100_000)).judge(10.0).passed);
}

#[test]
fn the_verdict_reads_in_every_form() {
    let mut c = talk();
    c.judge(400.0);
    let pass = "verdict: PASS: no later run's p99.9 or max is more than 400% worse than \
                Van-#1's on any CPU";
    assert!(compare_text(&c).ends_with(&format!("\n\n{pass}\n")));
    assert!(compare_markdown(&c).ends_with(&format!("\n\n**{pass}**\n")));
    assert!(compare_html_page(&c).contains("<p class=\"pass\">verdict: PASS"));
    // the Linaro 2023 talk's own lesson: RT-#1 untuned is worse than vanilla on most CPUs.
    let v = c.judge(10.0).clone();
    assert_eq!(v.regressions.len(), 16);
    assert!(v.messages().contains(
        &"RT-#1 CPU 2: max 921.0 us is 65.1% worse than Van-#1's 558.0 us (limit 10%)".to_string()
    ));
    // CPUs RT-#3 did not measure are not judged; RT-#2's CPU 4 and 7 are.
    assert!(v.regressions.iter().all(|r| r.run != "RT-#3"));
    assert!(v.regressions.iter().any(|r| r.run == "RT-#2" && r.cpu == 7));
    let md = compare_markdown(&c);
    assert!(md.contains(
        "**verdict: FAIL: 16 figures are more than 10% worse than Van-#1's**\n\n- RT-#1 CPU 1: \
         p99.9 283.6 us"
    ));
}

#[test]
fn json_round_trips_and_refuses_strangers() {
    let mut c = talk();
    c.judge(10.0);
    let json = c.to_json();
    assert!(
        json.starts_with("{\n  \"schema\": \"rtlab.compare/1\",\n"),
        "{json}"
    );
    assert!(json.contains("\"figure\": \"p99.9\""));
    assert!(json.ends_with("}\n"));
    assert_eq!(Comparison::from_json(&json).unwrap(), c);
    // Without a verdict the field is left out, and still reads back.
    let plain = talk();
    let json = plain.to_json();
    assert!(!json.contains("verdict"));
    assert_eq!(Comparison::from_json(&json).unwrap(), plain);
    let other = json.replace("rtlab.compare/1", "rtlab.compare/2");
    assert!(
        Comparison::from_json(&other)
            .unwrap_err()
            .contains("rtlab.compare/2")
    );
    let extra = json.replacen('{', "{\"bogus\": 1,", 1);
    assert!(Comparison::from_json(&extra).is_err());
}

#[test]
fn html_and_markdown_escape_what_runs_bring() {
    let mut a = rb5_example::runs().remove(0).1;
    a.host.hostname = "<b>host</b>".to_string();
    for info in &mut a.host.cpus {
        if info.cpu == 7 {
            info.model = Some("Evil <CPU> & \"Co\"".to_string());
        }
    }
    let label = "<script>alert('x')</script> | R&D";
    let c = Comparison::new(&[(label.to_string(), &a), ("b".to_string(), &a)]);
    let page = compare_html_page(&c);
    assert!(!page.contains("<script>"), "{page}");
    assert!(!page.contains("<b>"));
    assert!(page.contains(
        "<th scope=\"row\">&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; | R&amp;D</th>"
    ));
    assert!(page.contains("<td>&lt;b&gt;host&lt;/b&gt;</td>"));
    assert!(page.contains(">1x Evil &lt;CPU&gt; &amp; &quot;Co&quot;</th>"));
    assert!(page.contains("<title>rtlab compare: &lt;script&gt;"));
    let fragment = compare_html(&c);
    assert!(fragment.starts_with("<table class=\"rtlab-compare\">\n<thead>\n"));
    assert!(fragment.ends_with("</tbody>\n</table>\n"));
    assert!(page.contains(&fragment));
    let md = compare_markdown(&c);
    assert!(
        md.contains("| \\<script>alert('x')\\</script> \\| R&D | 5.0 |"),
        "{md}"
    );
    assert!(md.contains("*vs \\<script>alert('x')\\</script> \\| R&D*"));
    assert!(md.match_indices('<').all(|(i, _)| md[..i].ends_with('\\')));
}

#[test]
fn deltas_round_to_whole_percent() {
    assert_eq!(format_delta(100.0, 112.4), "+12%");
    assert_eq!(format_delta(100.0, 87.6), "-12%");
    assert_eq!(format_delta(100.0, 100.4), "0%");
    assert_eq!(format_delta(100.0, 99.6), "0%");
    assert_eq!(format_delta(0.0, 0.0), "0%");
    assert_eq!(format_delta(0.0, 5.0), "-");
}

#[test]
fn a_noise_run_gets_no_change_row_against_latency_and_runs_say_their_load() {
    use model::imported::{ImportInfo, Quantity};
    use model::load::LoadReport;
    let latency = testdata::two_cpus();
    let mut loaded = testdata::two_cpus();
    loaded.load = Some(LoadReport {
        schema: model::load::report::LOAD_SCHEMA.into(),
        build: None,
        spec: "cpu:100%".into(),
        window_ns: model::Nanos::from_secs(60),
        warmup_ns: model::Nanos::ZERO,
        status: "complete".into(),
        cgroup: None,
        generators: Vec::new(),
        cpu_busy: Vec::new(),
    });
    let mut noise = testdata::two_cpus();
    noise.import = Some(ImportInfo {
        tool: "oslat".into(),
        format: "oslat-text".into(),
        file: "oslat.txt".into(),
        resolution_ns: 1_000,
        command: None,
        quantity: Quantity::OsNoise,
        notes: Vec::new(),
        not_given: Vec::new(),
        not_stated: Vec::new(),
    });
    let c = Comparison::new(&[
        ("idle".to_string(), &latency),
        ("full load".to_string(), &loaded),
        ("oslat".to_string(), &noise),
    ]);
    assert!(c.comparable(1) && !c.comparable(2));
    let text = compare_text(&c);
    // Each section: a change row for the loaded run only.
    assert_eq!(text.matches("  vs idle").count(), 4, "{text}");
    assert!(text.contains("load cpu:100%"), "{text}");
    assert!(text.contains("OS noise (not latency)"), "{text}");
    let markdown = compare_markdown(&c);
    assert_eq!(markdown.matches("| *vs idle* |").count(), 1, "{markdown}");
    assert!(
        markdown.contains("| started (UTC) | measured under |"),
        "{markdown}"
    );
    let page = compare_html_page(&c);
    assert_eq!(page.matches("<tr class=\"delta\">").count(), 1, "{page}");
    assert!(page.contains("<td>load cpu:100%</td>"), "{page}");
    let back = Comparison::from_json(&c.to_json()).unwrap();
    assert_eq!(back.runs[1].load.as_deref(), Some("cpu:100%"));
    // Runs without load or noise keep the table as it was: no extra column.
    assert!(!compare_markdown(&talk()).contains("measured under"));
}

/// Runs from different machines are said to be so above every rendering, and a run that did
/// not complete is marked wherever its row is.
#[test]
fn other_machines_and_unfinished_runs_are_said() {
    let a = testdata::two_cpus();
    let mut b = testdata::two_cpus();
    b.host.hostname = "imx8-board".to_string();
    b.status = model::measure::RunStatus::Interrupted;
    let c = pair(&a, &b);
    assert_eq!(c.runs[1].label, "new (interrupted)");
    let warnings = c.warnings();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("different machines")
            && warnings[0].contains("imx8-board: new (interrupted)"),
        "{warnings:?}"
    );
    assert!(compare_text(&c).contains("warning: these runs come from different machines"));
    assert!(compare_markdown(&c).contains("**Warning:** these runs come from different machines"));
    assert!(compare_html_page(&c).contains("different machines"));
    // One machine: no warning.
    assert!(pair(&a, &a).warnings().is_empty());
    // A run whose file named no machine is not called another machine: it is said unknown.
    b.host.hostname = "unknown".to_string();
    let warnings = pair(&a, &b).warnings();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].starts_with("new (interrupted) names no machine")
            && warnings[0].contains("--host NAME"),
        "{warnings:?}"
    );
}

#[test]
fn a_timerlat_run_against_a_user_space_run_is_labelled() {
    let user = crate::testdata::two_cpus();
    let mut kernel = crate::testdata::two_cpus();
    kernel.params.engine = model::measure::Engine::Timerlat;
    let c = pair(&user, &kernel);
    let warnings = c.warnings();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].starts_with("new measured by the kernel's timerlat tracer")
            && warnings[0].contains("base by rtlab's threads"),
        "{warnings:?}"
    );
    assert!(compare_text(&c).contains("timerlat tracer"));
    // Timerlat against timerlat: nothing to say.
    assert!(pair(&kernel, &kernel).warnings().is_empty());
}

/// Issue #43: runs measured at another interval are not compared as if a change: no change
/// row, a warning saying why, and a regression verdict that fails rather than judge them.
#[test]
fn a_run_at_another_interval_is_not_compared_and_fails_a_regression_verdict() {
    let base = judged(900, 1_000);
    let mut other = judged(30_000, 31_150);
    other.params.interval_ns = model::Nanos::from_us(200);
    let mut c = pair(&base, &other);
    assert!(!c.comparable(1));
    let warnings = c.warnings();
    assert!(
        warnings.iter().any(|w| w
            == "new is not compared with base: interval 200us against 1ms; its changes are not shown, and no regression is judged on it"),
        "{warnings:?}"
    );
    let text = compare_text(&c);
    assert!(!text.contains("vs base"), "{text}");
    let v = c.judge(10.0).clone();
    assert!(!v.passed && v.regressions.is_empty(), "{v:?}");
    assert_eq!(v.not_compared, ["new"]);
    assert_eq!(
        v.summary(),
        "verdict: FAIL: new measured otherwise than base and not compared"
    );
    // The same interval: compared, and its change is a regression.
    other.params.interval_ns = model::Nanos::MILLISECOND;
    let mut c = pair(&base, &other);
    assert!(c.comparable(1) && !c.judge(10.0).passed && c.warnings().is_empty());
}

//! The monitor pages against histories whose figures are known: a planted kernel change shown
//! with its drift, text from a board escaped, a trace linked only where the server holds it.

use super::*;

const MIN5: u64 = 300_000_000_000;

fn point(n: i64, max_us: u64, kernel: &str) -> HistoryPoint {
    HistoryPoint {
        start_ns: 1_764_460_800_000_000_000 + n * MIN5 as i64,
        length_ns: MIN5,
        max_ns: Some(max_us * 1_000),
        samples: 300_000,
        breaches: u64::from(max_us > 100),
        kernel_release: kernel.into(),
        engine: "timerlat".into(),
        cpus: "2-3".into(),
        budget_ns: Some(100_000),
    }
}

fn incident(host: &str, start: i64, cause: &str, run: &str) -> Incident {
    Incident {
        id: model::monitor::incident_id(host, start),
        host: host.into(),
        start_ns: start,
        end_ns: start + 2_500_000,
        cpu: 3,
        worst_ns: 412_000,
        breaches: 7,
        budget_ns: 100_000,
        engine: "timerlat".into(),
        kernel_release: "6.12.74-rt".into(),
        cause: cause.into(),
        run_id: Some(run.into()),
        run_bytes: Some(1),
    }
}

#[test]
fn a_host_page_shows_the_planted_change_its_drift_and_its_incidents() {
    // 20 intervals at 20 us on one kernel, 20 at 40 us on the next: the median doubles.
    let points: Vec<HistoryPoint> = (0..40)
        .map(|n| {
            if n < 20 {
                point(n, 20, "6.12.57-rt")
            } else {
                point(n, 40, "6.12.74-rt")
            }
        })
        .chain([point(40, 412, "6.12.74-rt")])
        .collect();
    let start = points[40].start_ns + 1_000;
    let incidents = [
        incident(
            "pi<b>",
            start,
            "higher-priority task (98 %): <script>x</script>",
            "0123456789ab",
        ),
        incident("pi<b>", start - 10, "thread interference", "ba9876543210"),
    ];
    let kept: HashSet<String> = ["0123456789ab".to_string()].into();
    let html = host_monitor_page(&HostHistory {
        host: "pi<b>",
        last: "30d",
        points: &points,
        incidents: &incidents,
        runs_kept: &kept,
    });
    assert!(
        html.contains("41 intervals in the last 30d: worst 412.0 us"),
        "{html}"
    );
    assert!(html.contains("kernel 6.12.57-rt → 6.12.74-rt"), "{html}");
    assert!(html.contains("<td class=\"worse\">+100 %</td>"), "{html}");
    assert!(html.contains("<svg"), "no plot");
    assert!(html.contains("budget 100.0 us"), "no budget rule");
    // Text from the board is text.
    assert!(!html.contains("<script>x"), "{html}");
    assert!(html.contains("&lt;script&gt;x&lt;&#x2f;script&gt;"));
    assert!(html.contains("rtlab monitor: pi&lt;b&gt;"));
    // The first incident's trace is on the server, the second's is not.
    assert!(
        html.contains("href=\"&#x2f;runs&#x2f;0123456789ab\""),
        "{html}"
    );
    assert!(!html.contains("ba9876543210"), "{html}");
    assert!(html.contains("not kept"));
    assert!(html.contains("2.5 ms"), "the burst's length: {html}");
    // The range links keep the host's name encoded.
    assert!(
        html.contains("&#x2f;hosts&#x2f;pi%3Cb%3E&#x2f;monitor?last=365d"),
        "{html}"
    );
}

#[test]
fn an_empty_history_says_how_to_fill_it() {
    let html = host_monitor_page(&HostHistory {
        host: "pi",
        last: "1d",
        points: &[],
        incidents: &[],
        runs_kept: &HashSet::new(),
    });
    assert!(
        html.contains("No interval measured in the last 1d"),
        "{html}"
    );
    assert!(html.contains("No incident in this time."));
    assert!(!html.contains("<svg"));
}

#[test]
fn the_fleet_page_marks_a_silent_host_and_lists_every_incident_with_its_host() {
    let hosts = [
        MonitorHost {
            host: "a".into(),
            last_ns: 1_000,
            intervals: 288,
            worst_ns: Some(55_000),
            breaches: 0,
            incidents: 0,
        },
        MonitorHost {
            host: "b".into(),
            last_ns: 10_000,
            intervals: 12,
            worst_ns: Some(412_000),
            breaches: 7,
            incidents: 1,
        },
    ];
    let incidents = [incident("b", 9_000, "thread interference", "0123456789ab")];
    let html = fleet_monitor_page(&FleetHistory {
        last: "1d",
        hosts: &hosts,
        silent_after_ns: 5_000,
        incidents: &incidents,
        runs_kept: &HashSet::new(),
    });
    assert!(
        html.contains("2 hosts with intervals in the last 1d"),
        "{html}"
    );
    assert_eq!(html.matches("(silent)").count(), 1, "{html}");
    assert!(
        html.contains(
            "<tr class=\"silent\"><td><a href=\"&#x2f;hosts&#x2f;a&#x2f;monitor?last=1d\">a</a>"
        ),
        "{html}"
    );
    assert!(
        html.contains("<td><a href=\"&#x2f;hosts&#x2f;b&#x2f;monitor\">b</a></td>"),
        "{html}"
    );
    assert!(html.contains("1 incident, newest first"));
}

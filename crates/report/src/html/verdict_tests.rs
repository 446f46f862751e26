//! The report's first screen: the verdict in words, per run with what it was held to and its
//! reasons, against each run's own budget or one given to the report.

use model::Nanos;

use super::tests::full_run;
use super::*;
use crate::testdata;

/// The first screen says the verdict in words (not colour alone), per run with its reasons,
/// before anything else; then the runs compared.
#[test]
fn the_verdict_comes_first_in_words_per_run_with_its_reasons() {
    let a = full_run();
    let c = testdata::run_of(vec![testdata::cpu(0, None, &[], 0)]);
    let runs = [
        ReportRun {
            run: &a,
            name: "idle",
            source: "stored run aaaa",
            key: "aaaa",
        },
        ReportRun {
            run: &c,
            name: "empty",
            source: "file empty.json",
            key: "cccc",
        },
    ];
    let budget = |us| ReportOptions {
        budget: Some(Nanos::from_us(us)),
        timeline: false,
    };
    let page = html_report(&runs, &budget(10)).page;
    let at = |s: &str| page.find(s).unwrap_or_else(|| panic!("{s} not in page"));
    assert!(at("id=\"verdict\"") < at("id=\"overlay\""));
    assert!(at("id=\"verdict\"") < at("id=\"run-aaaa\""));
    assert!(page.contains("<h2>FAIL: 1 of 2 runs failed</h2>"), "{page}");
    assert!(page.contains("exceeds --budget 10us"), "{page}");
    assert!(page.contains("<td class=\"word\">FAIL</td>"));
    assert!(page.contains("<td class=\"word\">CANNOT JUDGE</td>"));
    assert!(page.contains("the run cannot be judged"));
    assert!(
        page.contains("Every run judged against 10us given now"),
        "{page}"
    );
    assert!(page.contains("<td>judged against 10us given now; measured without a budget</td>"));
    // The runs compared, with the change against the first.
    assert!(at("id=\"verdict\"") < at("class=\"rtlab-compare\""));
    assert!(at("class=\"rtlab-compare\"") < at("id=\"overlay\""));
    // One run within its budget: a pass, and nothing to compare.
    let page = html_report(&runs[..1], &budget(100_000)).page;
    assert!(
        page.contains("<h2>PASS: every CPU within --budget 100ms (judged against 100ms given now; measured without a budget)</h2>"),
        "{page}"
    );
    assert!(page.contains("<td class=\"word\">PASS</td>"));
    assert!(!page.contains("<table class=\"rtlab-compare\""));
    // Without a budget the page says so.
    let page = html_report(&runs[..1], &ReportOptions::default()).page;
    assert!(
        page.contains("<h2>PASS: measured without a budget: judged on completeness only</h2>"),
        "{page}"
    );
    // Measured with a budget, the run is held to it with none given (issue #43: the page
    // said "PASS: the run passed" of a run over its own budget).
    let mut own = full_run();
    own.params.budget_ns = Some(Nanos::from_us(10));
    let runs = [ReportRun {
        run: &own,
        name: "idle",
        source: "stored run aaaa",
        key: "aaaa",
    }];
    let page = html_report(&runs, &ReportOptions::default()).page;
    assert!(page.contains("<h2>FAIL: CPU "), "{page}");
    assert!(
        page.contains("Held to: budget 10us, as measured."),
        "{page}"
    );
}

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
    // The worst column has the figure; the why column says which CPUs, once.
    assert!(page.contains(" over the 10us budget"), "{page}");
    assert!(page.contains("<td class=\"word\">FAIL</td>"));
    assert!(page.contains("<td class=\"word\">CANNOT JUDGE</td>"));
    assert!(page.contains("the run cannot be judged"));
    assert!(
        page.contains("Every run judged against a budget of 10us, given when this report was made"),
        "{page}"
    );
    assert!(page.contains("<td>judged against 10us given now; measured without a budget</td>"));
    // The runs compared, with the change against the first.
    assert!(at("id=\"verdict\"") < at("class=\"rtlab-compare\""));
    assert!(at("class=\"rtlab-compare\"") < at("id=\"overlay\""));
    // One run within its budget: a pass, and nothing to compare.
    let page = html_report(&runs[..1], &budget(100_000)).page;
    assert!(
        page.contains("<h2>PASS: every CPU within the budget of 100ms (judged against 100ms given now; measured without a budget)</h2>"),
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

/// The first screen says what stands in the way (the audit's failures with their fixes and the
/// runs' warnings, each once), the CPUs over budget once per run without the flag's name, and
/// remarks an idle run that was worse than every loaded one.
#[test]
fn the_first_screen_says_the_causes_and_an_idle_run_worse_than_load() {
    let loaded = full_run();
    let mut idle = full_run();
    idle.load = None;
    let p = loaded.all.stats.p99_9_ns.unwrap();
    let m = loaded.all.stats.max_ns.unwrap();
    idle.all.stats.p99_9_ns = Some(p * 10);
    idle.all.stats.max_ns = Some(m * 10);
    let runs = [
        ReportRun {
            run: &idle,
            name: "idle",
            source: "stored run aaaa",
            key: "aaaa",
        },
        ReportRun {
            run: &loaded,
            name: "full load",
            source: "stored run bbbb",
            key: "bbbb",
        },
    ];
    let options = ReportOptions {
        budget: Some(Nanos::from_us(10)),
        timeline: false,
    };
    let page = html_report(&runs, &options).page;
    let at = |s: &str| {
        page.find(s)
            .unwrap_or_else(|| panic!("{s} not in page:\n{page}"))
    };
    assert!(at("<h3>What stands in the way</h3>") < at("id=\"overlay\""));
    assert!(
        page.contains("RT throttling is on <span class=\"fix\">Fix: <code>"),
        "{page}"
    );
    // The audit's failure once, though both runs carry it.
    assert_eq!(page.matches("RT throttling is on <span").count(), 1);
    // The runs' own warning restating it is not listed again in the causes.
    let causes = &page[at("<h3>What stands in the way</h3>")..at("id=\"overlay\"")];
    assert_eq!(causes.matches("RT throttling is on").count(), 1, "{causes}");
    assert!(page.contains("CPUs 0, 1 over the 10us budget"), "{page}");
    assert!(!page.contains("--budget"), "{page}");
    assert!(
        page.contains("idle was worse than every run under load: p99.9"),
        "{page}"
    );
    // No remark when the loaded run is the worse one.
    let runs = [
        ReportRun {
            run: &loaded,
            name: "full load",
            source: "stored run bbbb",
            key: "bbbb",
        },
        ReportRun {
            run: &loaded,
            name: "again",
            source: "stored run cccc",
            key: "cccc",
        },
    ];
    let page = html_report(&runs, &options).page;
    assert!(!page.contains("worse than every run under load"), "{page}");
}

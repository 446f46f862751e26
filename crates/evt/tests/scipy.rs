//! rtlab-evt against SciPy: fits, densities and return levels of the committed golden cases
//! (`golden/cases.json`, made by `golden/make.py`) and, when `RTLAB_EVT_GOLDEN` names a file,
//! of fresh samples made by the same script (CI's `.ci/evt-scipy` does that every run).

use evt::dist::{Gev, Gpd};
use serde::Deserialize;

#[derive(Deserialize)]
struct File {
    scipy: String,
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Fit {
    xi: f64,
    mu: Option<f64>,
    sigma: f64,
    nll: f64,
}

#[derive(Deserialize)]
struct Case {
    kind: String,
    data: Vec<f64>,
    fit: Fit,
    probe: Vec<f64>,
    ln_pdf: Vec<f64>,
    cdf: Vec<f64>,
    levels: std::collections::BTreeMap<String, f64>,
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs().max(1e-12)
}

fn check_file(path: &str) {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let file: File = serde_json::from_str(&text).unwrap();
    assert!(!file.cases.is_empty());
    for (i, c) in file.cases.iter().enumerate() {
        let at = format!("{path} case {i} ({}, SciPy {})", c.kind, file.scipy);
        match c.kind.as_str() {
            "gev" => check_gev(c, &at),
            "gpd" => check_gpd(c, &at),
            other => panic!("{at}: unknown kind {other}"),
        }
    }
}

fn check_gev(c: &Case, at: &str) {
    let f = &c.fit;
    let s = Gev {
        mu: f.mu.unwrap(),
        sigma: f.sigma,
        xi: f.xi,
    };
    for (k, x) in c.probe.iter().enumerate() {
        assert!(close(s.ln_pdf(*x), c.ln_pdf[k], 1e-9), "{at}: ln_pdf");
        assert!(close(s.cdf(*x), c.cdf[k], 1e-9), "{at}: cdf");
    }
    for (q, v) in &c.levels {
        assert!(
            close(s.level_exceeded(q.parse().unwrap()), *v, 1e-9),
            "{at}: level {q}"
        );
    }
    let ours = evt::gev::fit(&c.data).unwrap();
    assert!(
        ours.nll <= f.nll + 1e-6 * f.nll.abs().max(1.0),
        "{at}: nll {} > {}",
        ours.nll,
        f.nll
    );
    let o = ours.dist;
    assert!((o.xi - f.xi).abs() < 2e-3, "{at}: xi {} vs {}", o.xi, f.xi);
    assert!(
        (o.mu - s.mu).abs() < 2e-3 * f.sigma,
        "{at}: mu {} vs {}",
        o.mu,
        s.mu
    );
    assert!(
        close(o.sigma, f.sigma, 2e-3),
        "{at}: sigma {} vs {}",
        o.sigma,
        f.sigma
    );
    for (q, v) in &c.levels {
        let q: f64 = q.parse().unwrap();
        assert!(
            close(o.level_exceeded(q), *v, 5e-3),
            "{at}: fitted level {q}"
        );
    }
}

fn check_gpd(c: &Case, at: &str) {
    let f = &c.fit;
    let s = Gpd {
        sigma: f.sigma,
        xi: f.xi,
    };
    for (k, x) in c.probe.iter().enumerate() {
        assert!(close(s.ln_pdf(*x), c.ln_pdf[k], 1e-9), "{at}: ln_pdf");
        assert!(close(s.cdf(*x), c.cdf[k], 1e-9), "{at}: cdf");
    }
    for (q, v) in &c.levels {
        assert!(
            close(s.level_in(1.0 / q.parse::<f64>().unwrap()), *v, 1e-9),
            "{at}: level {q}"
        );
    }
    let ours = evt::gpd::fit(&c.data).unwrap();
    assert!(
        ours.nll <= f.nll + 1e-6 * f.nll.abs().max(1.0),
        "{at}: nll {} > {}",
        ours.nll,
        f.nll
    );
    let o = ours.dist;
    assert!((o.xi - f.xi).abs() < 2e-3, "{at}: xi {} vs {}", o.xi, f.xi);
    assert!(
        close(o.sigma, f.sigma, 2e-3),
        "{at}: sigma {} vs {}",
        o.sigma,
        f.sigma
    );
    for (q, v) in &c.levels {
        let q: f64 = q.parse().unwrap();
        assert!(
            close(o.level_in(1.0 / q), *v, 5e-3),
            "{at}: fitted level {q}"
        );
    }
}

#[test]
fn committed_golden_cases_agree_with_scipy() {
    check_file(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/golden/cases.json"
    ));
}

#[test]
fn fresh_samples_agree_with_scipy_when_given() {
    // CI sets RTLAB_EVT_GOLDEN (`.ci/evt-scipy`); elsewhere the committed cases above stand.
    if let Ok(path) = std::env::var("RTLAB_EVT_GOLDEN") {
        check_file(&path);
    }
}

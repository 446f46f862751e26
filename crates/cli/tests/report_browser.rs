//! `rtlab report` rendered in a real headless browser (issue #5): the page loads without a
//! script or resource error, fetches nothing, and every plot has visible content — a laid-out
//! SVG with a non-empty bounding box and drawn lines (a path of non-zero length, or a polyline
//! of more than two points), one per CPU (or per run on the comparison chart).
//!
//! How: the test measures two runs with the scripted clock into its own store, writes the
//! report, and adds a probe script to a copy of the page (the page has no script of its own;
//! its Content-Security-Policy is widened for inline scripts only, so it still blocks every
//! fetch, and each blocked fetch is reported as a violation). Chromium loads the copy with
//! `--dump-dom`; the probe writes its verdict as JSON into the DOM, which the test reads.
//! A second test feeds the probe a broken page, to show it can fail.
//!
//! Chromium must be installed (`apt-get install chromium`; .ci/run installs it). Without it
//! the test fails and says so: it is never skipped.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The probe, run in the page when it has loaded. Writes `<pre id="rtlab-verdict">{json}</pre>`.
const PROBE: &str = r#"<script>
window.__rtlabErrors = [];
window.addEventListener('error', function (e) {
  var what = e.message || (e.target && (e.target.src || e.target.href || e.target.tagName)) || 'unknown';
  window.__rtlabErrors.push('error: ' + what);
}, true);
document.addEventListener('securitypolicyviolation', function (e) {
  window.__rtlabErrors.push('blocked: ' + e.violatedDirective + ' ' + e.blockedURI);
});
window.addEventListener('load', function () {
  var problems = [];
  var plots = [];
  var svgs = Array.prototype.slice.call(document.querySelectorAll('svg'));
  if (svgs.length === 0) problems.push('no svg in the page');
  svgs.forEach(function (svg, i) {
    var figure = svg.closest('figure');
    var name = figure ? figure.id : 'svg #' + i;
    var box = svg.getBBox();
    if (!(box.width > 0 && box.height > 0)) problems.push(name + ': empty bounding box');
    var rect = svg.getBoundingClientRect();
    if (!(rect.width > 0 && rect.height > 0)) problems.push(name + ': not laid out');
    var width = svg.viewBox.baseVal.width, height = svg.viewBox.baseVal.height;
    var drawn = 0;
    svg.querySelectorAll('polyline, path').forEach(function (line) {
      var points = line.tagName === 'polyline' ? line.points.numberOfItems
        : (line.getTotalLength() > 0 ? 3 : 0);
      var b = line.getBBox();
      var style = getComputedStyle(line);
      var visible = style.display !== 'none' && style.visibility !== 'hidden'
        && style.stroke !== 'none' && parseFloat(style.opacity) > 0
        && parseFloat(style.strokeOpacity) > 0 && parseFloat(style.strokeWidth) > 0;
      var inside = b.x < width && b.y < height && b.x + b.width > 0 && b.y + b.height > 0;
      if (points > 2 && visible && inside && (b.width > 0 || b.height > 0)) drawn += 1;
    });
    if (drawn === 0) problems.push(name + ': no drawn line of more than 2 points');
    plots.push({ name: name, lines: drawn, width: box.width, height: box.height });
  });
  // Read in ten seconds: the verdict is whole on a 1366x768 laptop's first screen.
  var verdict = document.querySelector('section.verdict h2');
  var verdictBottom = verdict ? verdict.getBoundingClientRect().bottom + window.scrollY : -1;
  if (!verdict) problems.push('no verdict heading');
  else if (verdictBottom > 768) problems.push('the verdict is below the first screen: ' + verdictBottom);
  // Plot text at body size: no tick label, axis title or legend entry under 12 px as shown.
  var smallest = 1000;
  svgs.forEach(function (svg) {
    var scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
    svg.querySelectorAll('text').forEach(function (t) {
      var px = parseFloat(getComputedStyle(t).fontSize) * scale;
      if (t.textContent.trim() && px < smallest) smallest = px;
    });
  });
  if (smallest < 12) problems.push('plot text as small as ' + smallest.toFixed(1) + ' px');
  // A check id is one word: one line box, never broken inside.
  var checks = document.querySelectorAll('table.findings td.check code');
  checks.forEach(function (c) {
    if (c.getClientRects().length !== 1) problems.push('check id wraps: ' + c.textContent);
  });
  performance.getEntriesByType('resource').forEach(function (r) {
    problems.push('fetched: ' + r.name);
  });
  problems = problems.concat(window.__rtlabErrors);
  var out = document.createElement('pre');
  out.id = 'rtlab-verdict';
  out.textContent = JSON.stringify({ ok: problems.length === 0, problems: problems, plots: plots,
    verdict_bottom: verdictBottom, smallest_text: smallest, checks: checks.length });
  document.body.appendChild(out);
});
</script>
"#;

/// The page's policy, which the probe copy widens for inline scripts only.
const POLICY: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src data:";

fn fixture() -> PathBuf {
    testkit::fixture_root("vm-x86_64-2cpu").base().to_path_buf()
}

fn rtlab(db: &Path) -> Command {
    let mut cmd = common::rtlab();
    cmd.env("RTLAB_DB", db);
    cmd
}

/// A scripted two-CPU run of `cycles` 1 ms periods saved in `db`; returns its id.
fn measure(db: &Path, script: &str, cycles: u32, label: Option<&str>) -> String {
    let mut cmd = rtlab(db);
    cmd.arg("--root").arg(fixture()).args([
        "measure",
        "--fake-clock",
        script,
        "--cycles",
        &cycles.to_string(),
    ]);
    if let Some(l) = label {
        cmd.args(["--label", l]);
    }
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    stderr
        .split("saved as run ")
        .nth(1)
        .and_then(|rest| rest.split(';').next())
        .unwrap_or_else(|| panic!("no saved line: {stderr}"))
        .to_string()
}

/// The browser: $RTLAB_CHROMIUM, else the first of the usual names on PATH.
fn chromium() -> PathBuf {
    if let Some(path) = std::env::var_os("RTLAB_CHROMIUM") {
        return PathBuf::from(path);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for name in [
        "chromium",
        "chromium-browser",
        "google-chrome",
        "google-chrome-stable",
    ] {
        for dir in std::env::split_paths(&path) {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return candidate;
            }
        }
    }
    panic!(
        "the HTML report's browser test needs Chromium: install it (`apt-get install chromium`; \
         .ci/run does this in CI) or point RTLAB_CHROMIUM at a Chrome binary"
    );
}

/// Loads `page` in headless Chromium and returns the probe's verdict.
fn browse(page: &Path, work: &Path) -> serde_json::Value {
    let profile = work.join("chromium-profile");
    // Output goes to files: a page's DOM fills a pipe nobody reads while we wait.
    let (dom_path, log_path) = (work.join("dom.html"), work.join("chromium.log"));
    let mut child = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--disable-extensions",
            "--virtual-time-budget=5000",
            "--window-size=1366,4000",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&dom_path).unwrap())
        .stderr(std::fs::File::create(&log_path).unwrap())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {}: {e}", chromium().display()));
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "chromium did not finish within 120 s; its log:\n{}",
                std::fs::read_to_string(&log_path).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let dom = std::fs::read_to_string(&dom_path).unwrap();
    let verdict = dom
        .split("<pre id=\"rtlab-verdict\">")
        .nth(1)
        .and_then(|rest| rest.split("</pre>").next())
        .unwrap_or_else(|| {
            panic!(
                "no verdict in the dumped DOM (status {status}); chromium's log:\n{}",
                std::fs::read_to_string(&log_path).unwrap_or_default()
            )
        });
    // The DOM is serialized as HTML: the JSON's text comes back with these escaped.
    let json = verdict
        .replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    serde_json::from_str(&json).unwrap_or_else(|e| panic!("verdict {json}: {e}"))
}

/// A copy of `html` with the probe in its head, scripts allowed inline and nothing else.
fn probed(html: &str) -> String {
    assert!(
        html.contains(&format!(
            "<meta http-equiv=\"Content-Security-Policy\" content=\"{POLICY}\">"
        )),
        "the page lost its Content-Security-Policy"
    );
    let widened = POLICY.replace(
        "default-src 'none';",
        "default-src 'none'; script-src 'unsafe-inline';",
    );
    html.replacen(POLICY, &widened, 1)
        .replacen("</head>", &format!("{PROBE}</head>"), 1)
}

/// `rtlab report` over two stored runs, `--svg` included; returns the page's path.
fn report(dir: &Path) -> PathBuf {
    let db = dir.join("rtlab.db");
    // Three seconds of scripted periods each, so every CPU has a per-second series.
    let first = measure(
        &db,
        "5us,7us,12us,9us,40us;1=6us,8us,300us,11us",
        3_000,
        Some("RT-#1"),
    );
    measure(&db, "15us,17us,20us,2ms", 3_200, None);
    let page = dir.join("page.html");
    let svgs = dir.join("svgs");
    let out = rtlab(&db)
        .args(["report", &first[..6], "last", "-o"])
        .arg(&page)
        .arg("--svg")
        .arg(&svgs)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("report on 2 runs written to") && stderr.contains("7 SVG files in"),
        "{stderr}"
    );
    let html = std::fs::read_to_string(&page).unwrap();
    let mut files: Vec<String> = std::fs::read_dir(&svgs)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(files.len(), 7, "{files:?}");
    assert!(
        files.contains(&format!("{first}-histogram.svg")),
        "{files:?}"
    );
    assert!(files.contains(&"runs-exceedance.svg".to_string()));
    for f in &files {
        let svg = std::fs::read_to_string(svgs.join(f)).unwrap();
        assert!(svg.starts_with("<svg "), "{f}");
        assert!(html.contains(svg.trim_end()), "{f} is not the page's plot");
    }
    page
}

#[test]
fn the_report_renders_in_a_real_browser_with_every_plot_drawn() {
    let dir = tempfile::tempdir().unwrap();
    let page = report(dir.path());
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(!html.contains("<script"), "the report itself has no script");
    let probe = dir.path().join("probe.html");
    std::fs::write(&probe, probed(&html)).unwrap();

    let verdict = browse(&probe, dir.path());
    assert_eq!(verdict["ok"], true, "{verdict:#}");
    let plots = verdict["plots"].as_array().unwrap();
    // The comparison chart, then three plots per run.
    assert_eq!(plots.len(), 7, "{verdict:#}");
    assert_eq!(plots[0]["name"], "runs-exceedance");
    for plot in plots {
        // Two CPUs measured (or two runs compared): two drawn lines on every chart.
        assert_eq!(plot["lines"], 2, "{plot}");
        assert!(plot["width"].as_f64().unwrap() > 100.0, "{plot}");
        assert!(plot["height"].as_f64().unwrap() > 100.0, "{plot}");
    }
    let names: Vec<&str> = plots.iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert!(names[1].ends_with("-histogram"), "{names:?}");
    // The readability checks had something to look at.
    assert!(
        verdict["verdict_bottom"].as_f64().unwrap() > 0.0,
        "{verdict:#}"
    );
    assert!(
        verdict["smallest_text"].as_f64().unwrap() >= 12.0,
        "{verdict:#}"
    );
    assert!(verdict["checks"].as_u64().unwrap() > 0, "{verdict:#}");
    assert!(names[3].ends_with("-max-over-time"), "{names:?}");
}

#[test]
fn the_browser_probe_fails_a_broken_page() {
    let dir = tempfile::tempdir().unwrap();
    let page = report(dir.path());
    let html = std::fs::read_to_string(&page).unwrap();
    // A fetch the policy must block, and a first plot whose lines are gone.
    let first_svg_end = html.find("</svg>").unwrap();
    let head: String = html[..first_svg_end]
        .lines()
        .filter(|l| !l.starts_with("<polyline") && !l.starts_with("<path"))
        .collect::<Vec<_>>()
        .join("\n");
    // And the old faults of readability: a plot shrunk until its labels are 6 px, a check id
    // broken inside, the
    // verdict pushed below the first screen.
    let broken = format!("{head}\n{}", &html[first_svg_end..])
        .replacen(
            "<main>",
            "<main><img alt=\"\" src=\"https://example.invalid/tracker.png\">\
             <div style=\"height:900px\"></div>",
            1,
        )
        .replacen("<svg ", "<svg style=\"width:400px\" ", 1)
        .replace(
            "<td class=\"check\"><code>",
            "<td class=\"check\" style=\"width:3em\"><code style=\"white-space:normal;overflow-wrap:anywhere\">",
        );
    let probe = dir.path().join("broken.html");
    std::fs::write(&probe, probed(&broken)).unwrap();

    let verdict = browse(&probe, dir.path());
    assert_eq!(verdict["ok"], false, "{verdict:#}");
    let problems: Vec<&str> = verdict["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    assert!(
        problems
            .iter()
            .any(|p| p.contains("runs-exceedance: no drawn line")),
        "{problems:?}"
    );
    assert!(
        problems
            .iter()
            .any(|p| p.starts_with("blocked: img-src") && p.contains("example.invalid")),
        "{problems:?}"
    );
    for fault in [
        "the verdict is below the first screen",
        "plot text as small as 6.",
        "check id wraps",
    ] {
        assert!(
            problems.iter().any(|p| p.starts_with(fault)),
            "{fault}: {problems:?}"
        );
    }
}

//! One run, one verdict (issue #43): every kind of run, looked at through every surface that
//! judges one, gives the same verdict word and the same exit status.
//!
//! The kinds are made whose right verdict is known by construction: real runs measured on a
//! scripted clock (within and over the budget they were measured with, without a budget, with
//! missed periods, with missed `--workload` deadlines, stopped at `--break`), those runs
//! changed field by field where no command makes them on demand (interrupted, unfinished, a
//! CPU without samples, noise and timerlat runs over their budgets, a timerlat run whose
//! tracer lost events), and other tools' files imported with and
//! without a budget (cyclictest's JSON and its `-b` output, rtla osnoise's histogram, rtla hwnoise's table). The surfaces are the commands (`measure`
//! as it ends, `show`, `report`, every `export` format, `runs` over the store) and the server's
//! run, host and fleet pages and its API's run summary. Each cell
//! reads the verdict the surface shows (a `verdict:` line, a JUnit property checked against the
//! document's counts, a LAVA case checked against the others, a CSV column, an OpenMetrics
//! label checked against its value, a page heading) and its exit status, and asserts both
//! against the kind's. The JSON export is the run's own document: its verdict is the exit
//! status.
//!
//! Adding an export format, a run status or a surface without a row or column here fails this
//! test: the formats are read from `rtlab export --help`, the statuses matched exhaustively.

mod common;
#[path = "verdict_matrix/read.rs"]
mod read;

use std::path::{Path, PathBuf};

use common::server::{Api, Server, add_token};
use model::measure::RunStatus;
use serde_json::Value;

use read::{
    Word, csv_word, junit_word, lava_word, metrics_word, page_word, row_word, runs_word,
    verdict_line, word_of,
};

/// Every surface that shows a run's verdict. `Measure` is the command that made the run (for
/// the kinds a command makes); the `export` formats are checked against `rtlab export --help`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Surface {
    Measure,
    Show,
    Report,
    Export(&'static str),
    /// `rtlab runs` over the server's store: the listing's verdict column.
    Runs,
    ServeRunPage,
    /// The run's summary in `/api/v1/runs`.
    ServeApi,
    /// The run's row on its host's page.
    ServeHostPage,
    /// Its host's row on the fleet page (each kind is uploaded as a host of its own, so the
    /// run is its host's newest).
    ServeFleetPage,
}

const EXPORT_FORMATS: [&str; 6] = [
    "json",
    "csv",
    "junit",
    "openmetrics",
    "lava",
    "lava-results",
];

fn surfaces() -> Vec<Surface> {
    let mut all = vec![Surface::Measure, Surface::Show, Surface::Report];
    all.extend(EXPORT_FORMATS.iter().map(|f| Surface::Export(f)));
    all.extend([
        Surface::Runs,
        Surface::ServeRunPage,
        Surface::ServeApi,
        Surface::ServeHostPage,
        Surface::ServeFleetPage,
    ]);
    all
}

/// A kind of run: how it is made, and its verdict.
struct Kind {
    name: &'static str,
    expect: Word,
    /// The `rtlab measure` arguments that make it (on the captured 2-CPU tree, a scripted
    /// clock), or with `import`, the `rtlab import` arguments after the file.
    measure: &'static [&'static str],
    /// What is changed in the measured document afterwards (none: the run as measured).
    change: Option<fn(&mut Value)>,
    /// Another tool's file to import instead of measuring (under `fixtures/imports`).
    import: Option<&'static str>,
}

const TWO_CPUS: &[&str] = &["--cpus", "0,1", "--interval", "1ms", "--cycles", "20"];

fn kinds() -> Vec<Kind> {
    let mut all = measured_kinds();
    all.extend(changed_kinds());
    all.extend(imported_kinds());
    all
}

/// Other tools' files imported, with the budget they are to be held to or without one.
fn imported_kinds() -> Vec<Kind> {
    // cyclictest --json from an H200 machine: 8888 us at worst.
    const CYCLICTEST: &str = "local_cyclictest_h200.json";
    // rtla hwnoise -q on CPUs 1-5: Max Single 2-4 us, no CPU without samples.
    const HWNOISE: &str = "lkml_hwnoise_top_5cpu.txt";
    vec![
        Kind {
            name: "imported cyclictest, no budget",
            expect: Word::Pass,
            measure: &[],
            change: None,
            import: Some(CYCLICTEST),
        },
        Kind {
            name: "imported cyclictest, over the budget it was imported with",
            expect: Word::Fail,
            measure: &["--budget", "100us"],
            change: None,
            import: Some(CYCLICTEST),
        },
        Kind {
            name: "imported cyclictest, within the budget it was imported with",
            expect: Word::Pass,
            measure: &["--budget", "10ms"],
            change: None,
            import: Some(CYCLICTEST),
        },
        Kind {
            name: "imported cyclictest stopped at -b",
            expect: Word::CannotJudge,
            measure: &[],
            change: None,
            import: Some("local_cyclictest_b30_h100.txt"),
        },
        Kind {
            name: "imported cyclictest stopped at -b, over the budget it was imported with",
            expect: Word::Fail,
            measure: &["--budget", "30us"],
            change: None,
            import: Some("local_cyclictest_b30_q.txt"),
        },
        Kind {
            name: "imported rtla osnoise hist, within its budget",
            expect: Word::Pass,
            measure: &["--budget", "100us"],
            change: None,
            import: Some("kdoc_osnoise_hist_9cpu.txt"),
        },
        Kind {
            name: "imported rtla hwnoise top, no budget",
            expect: Word::Pass,
            measure: &[],
            change: None,
            import: Some(HWNOISE),
        },
        Kind {
            // CPU 4's longest interruption is 4 us.
            name: "imported rtla hwnoise top, over the budget it was imported with",
            expect: Word::Fail,
            measure: &["--budget", "3us"],
            change: None,
            import: Some(HWNOISE),
        },
    ]
}

/// The kind's run document in `file`, as its command made it: (exit status, standard output)
/// of `rtlab measure`, or none for an import (no measuring command made it).
fn make(kind: &Kind, dir: &Path, file: &Path) -> Option<(i32, String)> {
    if let Some(name) = kind.import {
        let db = dir.join(format!(
            "{}.db",
            file.file_stem().unwrap().to_string_lossy()
        ));
        let source = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/imports")
            .join(name);
        let (code, _, err) = output(
            rtlab(dir)
                .arg("import")
                .arg(&source)
                .args(kind.measure)
                .arg("--db")
                .arg(&db),
        );
        assert_eq!(code, 0, "{}: {err}", kind.name);
        let (code, json, err) = output(
            rtlab(dir)
                .args(["show", "last", "--format", "json", "--db"])
                .arg(&db),
        );
        assert!(matches!(code, 0 | 1), "{}: {err}", kind.name);
        std::fs::write(file, json).unwrap();
        return None;
    }
    let (code, stdout, stderr) = output(
        rtlab(dir)
            .args(["measure", "--quiet", "--no-store", "-o"])
            .arg(file)
            .args(TWO_CPUS)
            .args(kind.measure),
    );
    assert!(
        file.exists(),
        "{}: measure wrote nothing: {stderr}",
        kind.name
    );
    let Some(change) = kind.change else {
        return Some((code, stdout));
    };
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    change(&mut doc);
    std::fs::write(file, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    None
}

/// The kinds a command makes as they are.
fn measured_kinds() -> Vec<Kind> {
    vec![
        Kind {
            name: "within the budget it was measured with",
            expect: Word::Pass,
            measure: &["--fake-clock", "5us,40us", "--budget", "50us"],
            change: None,
            import: None,
        },
        Kind {
            name: "over the budget it was measured with",
            expect: Word::Fail,
            measure: &["--fake-clock", "5us,40us", "--budget", "30us"],
            change: None,
            import: None,
        },
        Kind {
            name: "measured without a budget",
            expect: Word::Pass,
            measure: &["--fake-clock", "5us,40us"],
            change: None,
            import: None,
        },
        Kind {
            name: "missed periods within the budget",
            expect: Word::Pass,
            measure: &["--fake-clock", "5us,1500us,9us", "--budget", "2ms"],
            change: None,
            import: None,
        },
        Kind {
            name: "missed --workload deadlines, no budget",
            expect: Word::Fail,
            measure: &[
                "--fake-clock",
                "5us,9us,900us",
                "--workload",
                "200us",
                "--workload-deadline",
                "1ms",
            ],
            change: None,
            import: None,
        },
        Kind {
            name: "stopped at --break",
            expect: Word::CannotJudge,
            measure: &["--fake-clock", "5us,5us,300us", "--break", "100us"],
            change: None,
            import: None,
        },
    ]
}

/// The kinds no command makes on demand: a measured run, changed.
fn changed_kinds() -> Vec<Kind> {
    vec![
        // A signal cut it short: it did not measure what it was planned for (a CI job's
        // timeout must not leave a passing run; issue #48).
        Kind {
            name: "interrupted, within its budget",
            expect: Word::CannotJudge,
            measure: &["--fake-clock", "5us,40us", "--budget", "50us"],
            change: Some(|doc| doc["status"] = "interrupted".into()),
            import: None,
        },
        Kind {
            name: "interrupted, over its budget",
            expect: Word::Fail,
            measure: &["--fake-clock", "5us,90us", "--budget", "50us"],
            change: Some(|doc| doc["status"] = "interrupted".into()),
            import: None,
        },
        Kind {
            name: "unfinished (its last checkpoint)",
            expect: Word::CannotJudge,
            measure: &["--fake-clock", "5us,40us", "--budget", "50us"],
            change: Some(|doc| doc["status"] = "running".into()),
            import: None,
        },
        Kind {
            name: "a CPU without samples",
            expect: Word::CannotJudge,
            measure: &["--fake-clock", "5us,40us", "--budget", "50us"],
            change: Some(|doc| empty_cpu(&mut doc["cpus"][1])),
            import: None,
        },
        Kind {
            name: "a CPU without samples, another over the budget",
            expect: Word::Fail,
            measure: &["--fake-clock", "5us,40us", "--budget", "30us"],
            change: Some(|doc| empty_cpu(&mut doc["cpus"][1])),
            import: None,
        },
        Kind {
            name: "a noise run over its budget",
            expect: Word::Fail,
            measure: &["--fake-clock", "5us,40us", "--budget", "50us"],
            change: Some(|doc| noise(doc, 60_000)),
            import: None,
        },
        Kind {
            name: "a noise run within its budget",
            expect: Word::Pass,
            measure: &["--fake-clock", "5us,40us", "--budget", "50us"],
            change: Some(|doc| noise(doc, 20_000)),
            import: None,
        },
        Kind {
            name: "a timerlat run over its budget",
            expect: Word::Fail,
            measure: &["--fake-clock", "5us,40us", "--budget", "30us"],
            change: Some(|doc| timerlat(doc, 0)),
            import: None,
        },
        Kind {
            name: "a timerlat run within its budget",
            expect: Word::Pass,
            measure: &["--fake-clock", "5us,40us", "--budget", "50us"],
            change: Some(|doc| timerlat(doc, 0)),
            import: None,
        },
        Kind {
            name: "a timerlat run within its budget whose tracer lost events",
            expect: Word::CannotJudge,
            measure: &["--fake-clock", "5us,40us", "--budget", "50us"],
            change: Some(|doc| timerlat(doc, 7)),
            import: None,
        },
    ]
}

/// The run as one the kernel's timerlat tracer measured (its thread latency the run's CPUs,
/// its IRQ latency the same), whose ring buffer lost `lost` events.
fn timerlat(doc: &mut Value, lost: u64) {
    doc["params"]["engine"] = "timerlat".into();
    doc["timerlat"] = serde_json::json!({
        "period_ns": 1_000_000, "in_instance": true, "user_threads": false,
        "trace_clock": "local", "irq": doc["cpus"].clone(), "lost_events": lost,
        "analyses": []
    });
}

/// A CPU that measured nothing: its raw figures, histogram, spikes and series emptied (the
/// statistics are derived from them when the document is read).
fn empty_cpu(cpu: &mut Value) {
    cpu["raw"] = serde_json::json!({"count": 0, "min_ns": 0, "max_ns": 0, "sum_ns": 0,
        "sum_sq_ns2": 0, "overruns": 0, "last_ns": 0});
    cpu["histogram"]["buckets"] = serde_json::json!([]);
    cpu["histogram"]["above_range"] = 0.into();
    cpu["spikes"] = serde_json::json!([]);
    cpu["series"]["max_ns"] = serde_json::json!([]);
    cpu["series"]["count"] = serde_json::json!([]);
}

/// The run as a noise run whose CPU 1's longest interruption is `longest_ns` (CPU 0's 10 us).
fn noise(doc: &mut Value, longest_ns: u64) {
    let cpu = |cpu: u32, max_single_ns: u64| {
        serde_json::json!({"cpu": cpu, "runtime_ns": 20_000_000, "noise_ns": 90_000,
            "interruptions": 3, "max_single_ns": max_single_ns, "max_period_noise_ns": 90_000})
    };
    doc["schema"] = "rtlab.noise/1".into();
    doc["noise"] = serde_json::json!({
        "engine": "user", "counter": "tsc", "threshold_ns": 1000, "runtime_ns": 1_000_000,
        "period_ns": 1_000_000, "attribution": "none",
        "cpus": [cpu(0, 10_000), cpu(1, longest_ns)]
    });
}

fn fixture() -> PathBuf {
    testkit::fixture_root("vm-x86_64-2cpu").base().to_path_buf()
}

/// An rtlab command on the captured tree, its store in `dir`.
fn rtlab(dir: &Path) -> std::process::Command {
    let mut cmd = common::rtlab();
    cmd.arg("--root")
        .arg(fixture())
        .env("RTLAB_DB", dir.join("runs.db"));
    cmd
}

/// Output of a command: (exit status, stdout, stderr).
fn output(cmd: &mut std::process::Command) -> (i32, String, String) {
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Where the run is on the server: its store, its id, its host.
struct Stored<'a> {
    server: &'a Server,
    db: &'a str,
    id: String,
    host: String,
}

/// What one surface shows of the run in `file` (stored on the server as `stored`): the word,
/// and the exit status where the surface is a command.
fn look(
    surface: Surface,
    dir: &Path,
    file: &Path,
    made: &Option<(i32, String)>,
    stored: &Stored<'_>,
) -> (Option<Word>, Option<i32>) {
    let file_arg = file.to_str().unwrap();
    match surface {
        Surface::Measure => {
            let (code, stdout) = made.as_ref().expect("a measured kind");
            (verdict_line(stdout), Some(*code))
        }
        Surface::Show => {
            let (code, out, _) = output(rtlab(dir).args(["show", file_arg]));
            (verdict_line(&out), Some(code))
        }
        Surface::Report => {
            let page = dir.join("report.html");
            let (code, _, err) = output(rtlab(dir).args(["report", file_arg, "-o"]).arg(&page));
            let html = std::fs::read_to_string(&page).unwrap_or_else(|e| panic!("{e}: {err}"));
            (page_word(&html), Some(code))
        }
        Surface::Export(format) => {
            let (code, out, _) = output(rtlab(dir).args(["export", file_arg, "--format", format]));
            let word = match format {
                "junit" => junit_word(&out),
                "lava" | "lava-results" => lava_word(&out),
                "csv" => csv_word(&out),
                "openmetrics" => metrics_word(&out),
                // The run's own document, as stored: its verdict is the exit status.
                _ => None,
            };
            (word, Some(code))
        }
        Surface::Runs => {
            let (code, out, err) =
                output(rtlab(dir).args(["runs", "--db", stored.db, "--host", &stored.host]));
            assert_eq!(code, 0, "{err}");
            (runs_word(&out, &stored.id), None)
        }
        Surface::ServeRunPage => {
            let answer = stored.server.get(&format!("/runs/{}", stored.id));
            assert_eq!(answer.status, 200, "{}", answer.body);
            (page_word(&answer.body), None)
        }
        Surface::ServeApi => {
            let answer = stored
                .server
                .get(&format!("/api/v1/runs?host={}", stored.host));
            assert_eq!(answer.status, 200, "{}", answer.body);
            let json = answer.json();
            let run = json["runs"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["id"] == stored.id.as_str())
                .cloned()
                .unwrap_or_default();
            (run["verdict"].as_str().and_then(word_of), None)
        }
        Surface::ServeHostPage => {
            let answer = stored.server.get(&format!("/hosts/{}", stored.host));
            assert_eq!(answer.status, 200, "{}", answer.body);
            (
                row_word(&answer.body, &format!("value=\"{}\"", stored.id)),
                None,
            )
        }
        Surface::ServeFleetPage => {
            let answer = stored.server.get("/");
            assert_eq!(answer.status, 200, "{}", answer.body);
            // minijinja writes the link's slashes as &#x2f;: the id ends it.
            (row_word(&answer.body, &format!("{}\"", stored.id)), None)
        }
    }
}

/// The kinds cover every status a run can have.
fn status_is_covered(status: RunStatus) -> &'static str {
    match status {
        RunStatus::Complete => "within the budget it was measured with",
        RunStatus::Interrupted => "interrupted, within its budget",
        RunStatus::Running => "unfinished (its last checkpoint)",
        RunStatus::BrokeThreshold => "stopped at --break",
    }
}

#[test]
fn every_kind_of_run_gets_one_verdict_on_every_surface() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let db = dir.join("server.db");
    let db = db.to_str().unwrap();
    let token = add_token(db, "matrix");
    let server = Server::start(db, "127.0.0.1:0", &[]);
    let kinds = kinds();
    for status in [
        RunStatus::Complete,
        RunStatus::Interrupted,
        RunStatus::Running,
        RunStatus::BrokeThreshold,
    ] {
        let name = status_is_covered(status);
        assert!(
            kinds.iter().any(|k| k.name == name),
            "no kind for {status:?}"
        );
    }
    let mut wrong = Vec::new();
    for (i, kind) in kinds.iter().enumerate() {
        let file = dir.join(format!("kind-{i}.json"));
        let made = make(kind, dir, &file);
        // Uploaded as a host of its own, so that its host's and the fleet's pages show it.
        let host = format!("matrix-{i}");
        let mut doc: Value =
            serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        doc["host"]["hostname"] = Value::from(host.as_str());
        let uploaded = server.upload(&token, serde_json::to_string(&doc).unwrap().as_bytes());
        assert!(
            matches!(uploaded.status, 200 | 201),
            "{}: upload: {}",
            kind.name,
            uploaded.body
        );
        let stored = Stored {
            server: &server,
            db,
            id: uploaded.json()["id"].as_str().unwrap().to_string(),
            host,
        };
        for surface in surfaces() {
            if surface == Surface::Measure && made.is_none() {
                continue; // no measuring command made this kind
            }
            let (word, exit) = look(surface, dir, &file, &made, &stored);
            let word_ok = word.is_none_or(|w| w == kind.expect);
            let exit_ok = exit.is_none_or(|e| e == kind.expect.exit());
            let shown = word.is_some() || exit.is_some();
            if !(word_ok && exit_ok && shown) {
                wrong.push(format!(
                    "{}: {surface:?} shows {word:?}, exit {exit:?}; expected {:?}, exit {}",
                    kind.name,
                    kind.expect,
                    kind.expect.exit()
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "surfaces that disagree:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn every_export_format_has_a_column() {
    let help = common::run_ok(&["export", "--help"]);
    let values = help
        .split("Possible values:")
        .nth(1)
        .expect("the formats listed in export --help");
    let listed: Vec<&str> = values
        .lines()
        .skip_while(|l| l.trim().is_empty())
        .map_while(|l| l.trim().strip_prefix("- "))
        .map(|l| l.split(':').next().unwrap().trim())
        .collect();
    assert!(!listed.is_empty(), "{help}");
    for format in &listed {
        assert!(
            EXPORT_FORMATS.contains(format),
            "export --format {format} has no column in the verdict matrix"
        );
    }
}

/// Hardware-latency runs (`rtlab.hwlat/1`: `rtlab hwlat`, and `rtlab show` of its result file):
/// over, within and without their `--budget`, the verdict line and the exit status agree in
/// every output format (the JSON and hwlatdetect forms carry no line: their exit status is the
/// verdict).
#[test]
fn a_hardware_latency_run_gets_one_verdict_in_every_format() {
    let trace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/imports/kdoc_hwlat_tracer_trace.txt");
    let dir = tempfile::tempdir().unwrap();
    // The trace's worst sample is 18 us (outer), four reach 15 us.
    for (limit, expect) in [
        (Some("15us"), Word::Fail),
        (Some("18us"), Word::Fail),
        (Some("19us"), Word::Pass),
        (None, Word::Pass),
    ] {
        for format in ["text", "json", "hwlatdetect"] {
            let mut cmd = rtlab(dir.path());
            cmd.arg("hwlat")
                .arg("--from")
                .arg(&trace)
                .args(["--format", format]);
            if let Some(limit) = limit {
                cmd.args(["--budget", limit]);
            }
            let file = dir.path().join("hwlat.json");
            cmd.arg("-o").arg(&file);
            let (code, out, err) = output(&mut cmd);
            assert_eq!(code, expect.exit(), "{limit:?} {format}: {err}");
            if format == "text" {
                assert_eq!(verdict_line(&out), Some(expect), "{limit:?}: {out}");
            }
            // The result file read back.
            let (code, out, err) = output(rtlab(dir.path()).arg("show").arg(&file));
            assert_eq!(code, expect.exit(), "show, {limit:?}: {err}");
            assert_eq!(verdict_line(&out), Some(expect), "show, {limit:?}: {out}");
        }
    }
}

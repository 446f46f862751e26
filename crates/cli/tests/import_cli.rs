//! `rtlab import` end to end: each cyclictest format stored and shown with the file's figures,
//! the i.MX8MP JSON and its histogram file agreeing, a damaged file refused with one line and
//! nothing stored, oslat and rtla osnoise runs stored as OS noise and never judged against
//! wake-up latency.

mod common;

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use model::imported::Quantity;
use model::measure::MeasureRun;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/imports")
        .join(name)
}

/// `rtlab` with its own store in `db`.
fn rtlab(db: &Path) -> Command {
    common::rtlab_with_store(db)
}

/// Imports `files`; returns the ids printed, in order.
fn import(db: &Path, files: &[PathBuf], label: Option<&str>) -> Vec<String> {
    let mut cmd = rtlab(db);
    cmd.arg("import").args(files);
    if let Some(l) = label {
        cmd.args(["--label", l]);
    }
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
        .lines()
        // Indented lines say more of the run above them (its label, skipped lines).
        .filter(|l| !l.starts_with(' '))
        .map(|l| {
            l.split(" as run ")
                .nth(1)
                .and_then(|r| r.split(' ').next())
                .unwrap_or_else(|| panic!("no id in {l}"))
                .to_string()
        })
        .collect()
}

fn show(db: &Path, id: &str) -> MeasureRun {
    let out = rtlab(db)
        .args(["show", id, "--format", "json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    MeasureRun::from_json(&String::from_utf8_lossy(&out.stdout)).unwrap()
}

/// (cpu, count, max_ns) per CPU as `show` gives them.
fn per_cpu(run: &MeasureRun) -> Vec<(u32, u64, Option<u64>)> {
    run.cpus
        .iter()
        .map(|c| (c.cpu, c.stats.count, c.stats.max_ns))
        .collect()
}

#[test]
fn every_format_is_stored_labelled_and_shown() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("rtlab.db");
    let files = [
        fixture("local_cyclictest_2t_H100.json"),
        fixture("local_cyclictest_2t_H100.hist"),
        fixture("local_cyclictest_summary_live.txt"),
    ];
    let out = rtlab(&db)
        .arg("import")
        .args(&files)
        .args(["--label", "VM"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("imported"))
        .collect();
    assert_eq!(lines.len(), 3, "{stdout}");
    // A label names one run: several files get it numbered.
    for n in 1..=3 {
        assert!(
            stdout.contains(&format!("  labelled \"VM-{n}\"\n")),
            "{stdout}"
        );
    }
    assert!(
        lines[0].ends_with("(cyclictest JSON, 2 CPUs, 6000 samples)"),
        "{stdout}"
    );
    assert!(
        lines[1].ends_with("(cyclictest histogram, 2 CPUs, 6000 samples)"),
        "{stdout}"
    );
    assert!(
        lines[2].ends_with("(cyclictest summary, 2 CPUs, 2497 samples)"),
        "{stdout}"
    );
    let ids: Vec<&str> = lines.iter().map(|l| l.split(' ').nth(4).unwrap()).collect();

    let json = show(&db, ids[0]);
    let expected = vec![(0, 3000, Some(3_382_000)), (1, 3000, Some(4_735_000))];
    assert_eq!(per_cpu(&json), expected);
    assert_eq!(json.import.as_ref().unwrap().format, "cyclictest-json");
    assert_eq!(json.cpus[1].histogram.above_range(), 167);
    assert_eq!(per_cpu(&show(&db, ids[1])), expected);
    let live = show(&db, ids[2]);
    assert_eq!(
        per_cpu(&live),
        vec![(0, 1500, Some(3_088_000)), (1, 997, Some(7_938_000))]
    );
    assert_eq!(live.import.as_ref().unwrap().format, "cyclictest-summary");

    let runs = rtlab(&db)
        .args(["runs", "--label", "VM-2"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&runs.stdout).contains("1 run"));
    // ... so the labels name the runs to compare.
    rtlab(&db)
        .args(["compare", "VM-1", "VM-3"])
        .assert()
        .success();
    // An imported run reads in the other commands too.
    rtlab(&db)
        .args(["compare", ids[0], ids[1]])
        .assert()
        .success();
    rtlab(&db)
        .args(["export", ids[0], "--format", "csv"])
        .assert()
        .success();
}

#[test]
fn the_imx8mp_json_and_its_histfile_agree() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("rtlab.db");
    let ids = import(
        &db,
        &[
            fixture("analisi_imx8mp_baseline.json"),
            fixture("analisi_imx8mp_baseline.hist"),
            fixture("machinekit792_rpi2_3.18.9-rt5.txt"),
        ],
        Some("baseline"),
    );
    let (json, hist) = (show(&db, &ids[0]), show(&db, &ids[1]));
    let figures = |r: &MeasureRun| -> Vec<_> {
        r.cpus
            .iter()
            .map(|c| (c.cpu, c.stats.count, c.stats.min_ns, c.stats.max_ns))
            .collect()
    };
    assert_eq!(figures(&json), figures(&hist));
    assert_eq!(
        figures(&json),
        vec![
            (0, 30_000, Some(5_000), Some(33_000)),
            (1, 30_000, Some(5_000), Some(19_000)),
            (2, 29_998, Some(5_000), Some(19_000)),
            (3, 29_996, Some(5_000), Some(18_000)),
        ]
    );
    assert_eq!(json.host.hostname, "sm2s-imx8mp");
    let rpi = show(&db, &ids[2]);
    assert_eq!(per_cpu(&rpi), vec![(0, 10_000, Some(66_000))]);
}

#[test]
fn a_damaged_file_is_one_line_exit_2_and_nothing_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("rtlab.db");
    let text = std::fs::read_to_string(fixture("local_cyclictest_2t_H100.hist")).unwrap();
    let damaged = dir.path().join("cut.hist");
    let lines: Vec<&str> = text.lines().collect();
    std::fs::write(&damaged, lines[..50].join("\n")).unwrap();
    let out = rtlab(&db)
        .arg("import")
        .arg(fixture("analisi_imx8mp_baseline.json"))
        .arg(&damaged)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("cut.hist: line 51: expected a `# Total:` footer line"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());
    assert!(!db.exists(), "nothing may be stored");

    let unknown = dir.path().join("notes.txt");
    std::fs::write(&unknown, "just some text\n").unwrap();
    let out = rtlab(&db).arg("import").arg(&unknown).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("notes.txt: not a format rtlab import reads"),
        "{stderr}"
    );
    assert!(!db.exists());
}

#[test]
fn rtla_timerlat_hist_is_imported() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("rtlab.db");
    let out = rtlab(&db)
        .arg("import")
        .arg(fixture("kdoc_timerlat_hist_5cpu_deadline.txt"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut lines = stdout.lines();
    assert!(
        lines
            .next()
            .unwrap()
            .ends_with("(rtla timerlat histogram, 5 CPUs, 3000010 samples)"),
        "{stdout}"
    );
    // A histogram has no time order, and says which measurement keeps one.
    assert!(
        lines.next().unwrap().contains("--engine timerlat"),
        "{stdout}"
    );
    let id = stdout.split(' ').nth(4).unwrap();
    let run = show(&db, id);
    assert_eq!(
        per_cpu(&run),
        vec![
            (0, 600_002, Some(36_000)),
            (1, 600_002, Some(58_000)),
            (2, 600_002, Some(44_000)),
            (3, 600_002, Some(46_000)),
            (4, 600_002, Some(50_000)),
        ]
    );
    assert_eq!(run.import.unwrap().format, "rtla-timerlat-hist");
    rtlab(&db).args(["show", id]).assert().success();
}

#[test]
fn os_noise_imports_are_stored_as_noise_and_never_judged_against_latency() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("rtlab.db");
    let ids = import(
        &db,
        &[
            fixture("local_oslat_2cpu.txt"),
            fixture("local_oslat_2cpu.json"),
            fixture("kdoc_osnoise_hist_9cpu.txt"),
            fixture("local_cyclictest_2t_H100.json"),
        ],
        None,
    );
    let text = show(&db, &ids[0]);
    let json = show(&db, &ids[1]);
    for run in [&text, &json] {
        assert_eq!(
            per_cpu(run),
            vec![
                (0, 126_849_768, Some(4_033_000)),
                (1, 127_357_943, Some(297_000))
            ]
        );
        assert_eq!(run.import.as_ref().unwrap().quantity, Quantity::OsNoise);
    }
    let osnoise = show(&db, &ids[2]);
    assert_eq!(osnoise.import.as_ref().unwrap().format, "rtla-osnoise-hist");
    assert_eq!(osnoise.cpus.len(), 9);

    // The table says what the figures are.
    let out = rtlab(&db).args(["show", &ids[0]]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("imported from oslat 2.40 output: "),
        "{stdout}"
    );
    assert!(stdout.contains("OS noise in us (time taken from a busy loop; not wake-up latency)"));
    // So does the list of runs.
    let out = rtlab(&db).arg("runs").output().unwrap();
    let listed = String::from_utf8_lossy(&out.stdout);
    let noise_rows = listed
        .lines()
        .filter(|l| l.ends_with("(OS noise, not latency)"));
    assert_eq!(noise_rows.count(), 3, "{listed}");

    // Noise against noise compares and judges; noise against latency is flagged, never judged.
    let out = rtlab(&db)
        .args(["compare", &ids[0], &ids[1], "--fail-if-worse", "10"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("OS noise figures in us"));
    let out = rtlab(&db)
        .args(["compare", &ids[3], &ids[0]])
        .output()
        .unwrap();
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("warning: these runs measured different things"),
        "{stdout}"
    );
    let out = rtlab(&db)
        .args(["compare", &ids[3], &ids[0], "--fail-if-worse", "10"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("--fail-if-worse cannot judge these runs"),
        "{stderr}"
    );
}

/// Runs `rtlab import FILE` expecting a refusal: exit 2, one line, nothing stored; the line.
fn refused(file: &Path) -> String {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("rtlab.db");
    let out = rtlab(&db).arg("import").arg(file).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(out.stdout.is_empty());
    assert!(!db.exists(), "nothing may be stored");
    stderr
}

#[test]
fn errors_name_the_real_problem() {
    let dir = tempfile::tempdir().unwrap();
    let missing = refused(&dir.path().join("nowhere.json"));
    assert!(missing.contains("nowhere.json: no such file"), "{missing}");
    assert!(!missing.contains("os error"), "{missing}");

    // rtlab's own result: already a result, use it as it is.
    let db = dir.path().join("rtlab.db");
    let id = import(&db, &[fixture("local_cyclictest_2t_H100.json")], None);
    let out = rtlab(&db)
        .args(["show", &id[0], "--format", "json"])
        .output()
        .unwrap();
    let result = dir.path().join("result.json");
    std::fs::write(&result, &out.stdout).unwrap();
    let own = refused(&result);
    assert!(own.contains("already an rtlab result"), "{own}");
    assert!(own.contains("rtlab show"), "{own}");
    // ... and `show` does read it as the message says.
    let shown = rtlab(&db).arg("show").arg(&result).output().unwrap();
    assert!(shown.status.success());
    // The same result cut short: nothing reads it, and nothing suggests a command that would
    // fail; `show` and `worst` say what is wrong with it in words, not the parser's.
    let text = std::fs::read_to_string(&result).unwrap();
    let cut = dir.path().join("cut.json");
    std::fs::write(&cut, &text[..text.len() / 2]).unwrap();
    let own = refused(&cut);
    assert!(own.contains("not whole: it ends early, at line"), "{own}");
    assert!(!own.contains("rtlab show"), "{own}");
    let empty = dir.path().join("empty.json");
    std::fs::write(&empty, "").unwrap();
    for (file, says) in [
        (&cut, "the file was cut short"),
        (&empty, "the file is empty"),
    ] {
        for command in ["show", "worst"] {
            let out = rtlab(&db).arg(command).arg(file).output().unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{command}: {stderr}");
            assert!(
                stderr.contains(says) && !stderr.contains("EOF"),
                "{command}: {stderr}"
            );
        }
    }

    let dat = dir.path().join("trace.dat");
    let mut bytes = b"\x17\x08\x44tracing6\0".to_vec();
    bytes.extend([0u8; 64]);
    std::fs::write(&dat, bytes).unwrap();
    let trace = refused(&dat);
    assert!(trace.contains("trace-cmd report"), "{trace}");
    assert!(trace.contains("rtlab explain"), "{trace}");
}

#[test]
fn compressed_files_import_as_their_text_whatever_their_name() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("rtlab.db");
    // `gzip -9`, `xz`, `zstd -19` of fixtures beside them; the gzip one has no `.gz` in its
    // name: the magic bytes decide.
    for (packed, plain) in [
        (
            "compressed/summary_q_gzip.bin",
            "local_cyclictest_summary_q.txt",
        ),
        ("compressed/local_oslat_2cpu.txt.xz", "local_oslat_2cpu.txt"),
        (
            "compressed/local_cyclictest_2t_H100.hist.zst",
            "local_cyclictest_2t_H100.hist",
        ),
    ] {
        let ids = import(&db, &[fixture(plain), fixture(packed)], None);
        let (a, b) = (show(&db, &ids[0]), show(&db, &ids[1]));
        assert_eq!(a.cpus, b.cpus, "{packed}");
        assert_eq!(a.all, b.all, "{packed}");
    }
}

#[test]
fn a_skipped_line_is_printed_under_its_run_and_kept_in_the_notes() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("rtlab.db");
    let text = std::fs::read_to_string(fixture("releases/cyclictest_2.7_hist.txt")).unwrap();
    let file = dir.path().join("new.hist");
    std::fs::write(
        &file,
        text.replace(
            "# Min Latencies:",
            "A line of a later cyclictest\n# Min Latencies:",
        ),
    )
    .unwrap();
    let out = rtlab(&db).arg("import").arg(&file).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    // The run, the line skipped, and that a histogram keeps no time order.
    assert_eq!(lines.len(), 3, "{stdout}");
    assert!(
        lines[2].starts_with("  no time order in this format"),
        "{stdout}"
    );
    assert!(
        lines[1].starts_with("  note: skipped line 11, ")
            && lines[1].ends_with("`A line of a later cyclictest`"),
        "{stdout}"
    );
    let id = lines[0].split(' ').nth(4).unwrap();
    let run = show(&db, id);
    assert!(
        run.import
            .unwrap()
            .notes
            .iter()
            .any(|n| n.starts_with("skipped line 11"))
    );
}

#[test]
fn a_gzipped_verbose_stream_imports_every_sample() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("rtlab.db");
    let ids = import(&db, &[fixture("releases/cyclictest_verbose.txt.gz")], None);
    let run = show(&db, &ids[0]);
    assert_eq!(run.import.as_ref().unwrap().format, "cyclictest-verbose");
    assert_eq!(
        per_cpu(&run),
        vec![(0, 90, Some(15_000)), (1, 90, Some(11_000))]
    );
}

#[test]
fn a_summary_import_shows_no_percentiles_or_stddev() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("rtlab.db");
    let ids = import(&db, &[fixture("local_cyclictest_summary_q.txt")], None);
    // Read back from the store, the figures the lines do not give stay absent.
    let run = show(&db, &ids[0]);
    for s in run.cpus.iter().map(|c| &c.stats).chain([&run.all.stats]) {
        assert_eq!((s.p50_ns, s.p99_9_ns, s.stddev_ns), (None, None, None));
        assert!(s.max_ns.is_some() && s.mean_ns.is_some());
    }
    let out = rtlab(&db).args(["show", &ids[0]]).output().unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    let row = table
        .lines()
        .find(|l| l.trim_start().starts_with("0 "))
        .unwrap();
    let cells: Vec<&str> = row.split_whitespace().collect();
    // CPU samples min avg stddev p50 p90 p99 p99.9 p99.99 p99.999 max overruns
    assert_eq!(&cells[4..11], &["-"; 7], "{table}");
    assert_eq!(cells[11], "2165.0", "{table}");
}

#[test]
fn a_file_imported_twice_is_stored_once_and_keeps_its_label() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("rtlab.db");
    let file = fixture("machinekit792_rpi2_3.18.9-rt5.txt");
    let first = import(&db, std::slice::from_ref(&file), Some("rpi2"));
    assert_eq!(first.len(), 1);
    let again = rtlab(&db)
        .arg("import")
        .arg(&file)
        .args(["--label", "other"])
        .assert()
        .success();
    let text = String::from_utf8(again.get_output().stdout.clone()).unwrap();
    assert!(
        text.contains(&format!("already stored as run {}", first[0])),
        "{text}"
    );
    let runs = rtlab(&db)
        .args(["runs", "--format", "json"])
        .assert()
        .success();
    let runs: serde_json::Value = serde_json::from_slice(&runs.get_output().stdout).unwrap();
    let runs = runs.as_array().unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["label"], "rpi2");
}

/// A file that names no machine gets the one `--host`/`--kernel` name; one that names its own
/// keeps it. Imported runs are listed as measured under a load "not recorded", not "no load".
#[test]
fn host_and_kernel_name_the_machine_a_file_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("rtlab.db");
    let out = rtlab(&db)
        .arg("import")
        .arg(fixture("analisi_imx8mp_baseline.hist"))
        .arg(fixture("analisi_imx8mp_baseline.json"))
        .args([
            "--host",
            "imx8-lab",
            "--kernel",
            "6.6.23-rt28",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let ids: Vec<&str> = said
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    let hist = show(&db, ids[0]);
    assert_eq!(hist.host.hostname, "imx8-lab");
    assert_eq!(hist.host.kernel_release, "6.6.23-rt28");
    let json = show(&db, ids[1]);
    assert_eq!(
        json.host.hostname, "sm2s-imx8mp",
        "the file's own name stays"
    );
    let runs = rtlab(&db).arg("runs").output().unwrap();
    let listing = String::from_utf8_lossy(&runs.stdout);
    assert_eq!(listing.matches("not recorded").count(), 2, "{listing}");
    assert!(!listing.contains("no load"), "{listing}");
    // Without --host the file's silence is said, with the fix.
    let out = rtlab(&dir.path().join("other.db"))
        .arg("import")
        .arg(fixture("analisi_imx8mp_baseline.hist"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("the file names no machine; `--host NAME` names it"),
        "{stderr}"
    );
    let bad = rtlab(&db)
        .arg("import")
        .arg(fixture("analisi_imx8mp_baseline.hist"))
        .args(["--host", "two words"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
}

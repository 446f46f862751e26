//! The LAVA test definition (`integrations/lava/`) run as LAVA runs it: its `run: steps:` in one
//! POSIX shell script, after its `params:` as shell variables (the defaults, then the job's
//! values), in a checkout of the definition, with stand-ins for LAVA's helpers
//! (`lava-test-case`, `lava-test-set`, `lava-test-raise`) on PATH that record their arguments.
//! rtlab is this build, installed from the checkout's `dist/bin/` or found on PATH; its
//! measurements run under the scripted clock (`--fake-clock` through MEASURE_ARGS), so the
//! figures are known and a job takes seconds. Pushes go to a real `rtlab serve`, or to a port
//! where nothing listens (the runs wait in the push queue). Then `rtlab export --format lava`
//! itself: bad input.
//!
//! rtlab.yaml is read by a reader of the subset the file uses (a block mapping of scalars under
//! `params:`, a list of plain scalars under `run: steps:`): the workspace has no YAML library
//! (the project's dependency advice rules YAML crates out), and the reader fails on anything
//! else in those sections.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::rtlab;
use common::server::{Server, add_token, free_port};

fn definition_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../integrations/lava")
}

/// What LAVA takes from rtlab.yaml: the metadata keys, the params with their defaults, and
/// the run steps.
struct Definition {
    metadata: Vec<String>,
    params: Vec<(String, String)>,
    steps: Vec<String>,
}

/// A plain or double-quoted YAML scalar as the file writes them (no escapes inside quotes).
fn scalar(text: &str) -> String {
    let t = text.trim();
    match t.strip_prefix('"').and_then(|t| t.strip_suffix('"')) {
        Some(inner) => {
            assert!(!inner.contains(['"', '\\']), "escapes in {text}");
            inner.to_string()
        }
        None => {
            assert!(
                !t.starts_with(['\'', '{', '[', '&', '*', '!', '|', '>']),
                "{text}"
            );
            assert!(
                !t.contains(" #") && !t.contains(": "),
                "not a plain scalar: {text}"
            );
            t.to_string()
        }
    }
}

fn read_definition() -> Definition {
    let text = std::fs::read_to_string(definition_dir().join("rtlab.yaml")).unwrap();
    let mut section = String::new();
    let mut def = Definition {
        metadata: Vec::new(),
        params: Vec::new(),
        steps: Vec::new(),
    };
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let indent = line.len() - trimmed.len();
        if indent == 0 {
            section = trimmed
                .strip_suffix(':')
                .expect("a top-level key")
                .to_string();
            continue;
        }
        match section.as_str() {
            "metadata" if indent == 4 => {
                let (key, _) = trimmed.split_once(':').expect("a metadata key");
                def.metadata.push(key.to_string());
            }
            "params" => {
                assert_eq!(indent, 4, "{line}");
                let (key, value) = trimmed.split_once(": ").expect("KEY: value");
                assert!(key.bytes().all(|b| b.is_ascii_uppercase() || b == b'_'));
                def.params.push((key.to_string(), scalar(value)));
            }
            "run" if indent == 4 => assert_eq!(trimmed, "steps:"),
            "run" => {
                assert_eq!(indent, 8, "{line}");
                let step = trimmed.strip_prefix("- ").expect("a list item");
                def.steps.push(scalar(step));
            }
            _ => {}
        }
    }
    def
}

#[test]
fn the_definition_has_the_metadata_params_and_steps_lava_wants() {
    let def = read_definition();
    for key in [
        "name",
        "format",
        "description",
        "maintainer",
        "os",
        "scope",
        "environment",
        "devices",
    ] {
        assert!(
            def.metadata.iter().any(|k| k == key),
            "metadata lacks {key}"
        );
    }
    let params: BTreeMap<&str, &str> = def
        .params
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    for key in [
        "DURATION",
        "LOAD",
        "BUDGET",
        "RT_CPUS",
        "ITERATIONS",
        "PUSH_URL",
        "BINARY",
        "SKIP_INSTALL",
    ] {
        assert!(params.contains_key(key), "params lack {key}");
    }
    assert_eq!(params["ITERATIONS"], "1");
    // Every param reaches the script.
    let steps = def.steps.join("\n");
    for key in params.keys() {
        assert!(
            steps.contains(&format!("\"${{{key}}}\"")),
            "{key} is not passed on"
        );
    }
}

/// A finished job: the shell's output and status, and every helper call, in order.
struct Job {
    out: Output,
    calls: Vec<Vec<String>>,
    checkout: tempfile::TempDir,
}

impl Job {
    fn log(&self) -> String {
        format!(
            "{}\n{}",
            String::from_utf8_lossy(&self.out.stdout),
            String::from_utf8_lossy(&self.out.stderr)
        )
    }

    /// The test cases as `NAME RESULT [MEASUREMENT UNITS]`, from the recorded
    /// `lava-test-case` calls.
    fn cases(&self) -> Vec<String> {
        self.calls
            .iter()
            .filter(|c| c[0] == "lava-test-case")
            .map(|c| {
                let mut line = vec![c[1].clone()];
                let mut rest = c[2..].iter();
                while let Some(flag) = rest.next() {
                    assert!(
                        matches!(flag.as_str(), "--result" | "--measurement" | "--units"),
                        "{c:?}"
                    );
                    line.push(rest.next().unwrap().clone());
                }
                line.join(" ")
            })
            .collect()
    }

    fn case(&self, name: &str) -> Option<String> {
        self.cases()
            .into_iter()
            .find(|c| c.split(' ').next() == Some(name))
    }

    fn output(&self) -> PathBuf {
        self.checkout.path().join("integrations/lava/output")
    }
}

/// Stand-ins for LAVA's helpers in `dir`: each appends its name and arguments, one per line
/// after a tab, to $LAVA_RECORD.
fn stand_ins(dir: &Path) {
    for name in [
        "lava-test-case",
        "lava-test-set",
        "lava-test-raise",
        "lava-test-reference",
    ] {
        let path = dir.join(name);
        std::fs::write(
            &path,
            "#!/bin/sh\n{ printf '%s' \"$(basename \"$0\")\"; for a in \"$@\"; do printf '\\t%s' \"$a\"; done; echo; } >>\"$LAVA_RECORD\"\n",
        )
        .unwrap();
        make_executable(&path);
    }
}

fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn shell_quote(value: &str) -> String {
    format!("'{}'", value.replace('\'', r"'\''"))
}

/// How rtlab reaches the job.
enum Install {
    /// The checkout's `dist/bin/rtlab-ARCH`, as for a board.
    Dist,
    /// `rtlab` on PATH, with SKIP_INSTALL=true.
    OnPath,
    /// As `OnPath`, but the measurement labelled with this iteration's label is refused
    /// (exit 2, no result), as one that cannot start on a board.
    RefusingIteration(u32),
}

/// Runs the definition's steps with `values` as the job's parameters, with extra
/// environment `env`.
fn run_job(values: &[(&str, &str)], install: Install, env: &[(&str, &Path)]) -> Job {
    let def = read_definition();
    let checkout = tempfile::tempdir().unwrap();
    let lava = checkout.path().join("integrations/lava");
    std::fs::create_dir_all(&lava).unwrap();
    for file in ["rtlab.yaml", "rtlab.sh"] {
        std::fs::copy(definition_dir().join(file), lava.join(file)).unwrap();
    }
    let bin = checkout.path().join("lava-bin");
    std::fs::create_dir(&bin).unwrap();
    stand_ins(&bin);
    let mut values: Vec<(&str, &str)> = values.to_vec();
    if install_rtlab(install, checkout.path(), &bin) {
        values.push(("SKIP_INSTALL", "true"));
    }
    let script = run_script(&def, &values, checkout.path());
    let record = checkout.path().join("record");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(&script)
        .env("PATH", path)
        .env("LAVA_RECORD", &record)
        .env("NO_COLOR", "1")
        .env("HOME", checkout.path())
        .env_remove("RTLAB_DB")
        .env_remove("RTLAB_TOKEN")
        .env_remove("RTLAB_PUSH_URL")
        .stdin(Stdio::null());
    for (key, value) in env {
        cmd.env(key, value);
    }
    let out = cmd.output().unwrap();
    let calls = std::fs::read_to_string(&record)
        .unwrap_or_default()
        .lines()
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect();
    Job {
        out,
        calls,
        checkout,
    }
}

/// Puts this build where `install` says: the checkout's `dist/bin/`, or (a wrapper of it)
/// on PATH in `bin`. Returns whether the job must skip the install (SKIP_INSTALL=true).
fn install_rtlab(install: Install, checkout: &Path, bin: &Path) -> bool {
    let rtlab_bin = assert_cmd::cargo::cargo_bin("rtlab");
    match install {
        Install::Dist => {
            let arch = match std::env::consts::ARCH {
                "arm" => "armv7",
                other => other,
            };
            let dist = checkout.join("dist/bin");
            std::fs::create_dir_all(&dist).unwrap();
            std::os::unix::fs::symlink(&rtlab_bin, dist.join(format!("rtlab-{arch}"))).unwrap();
            false
        }
        Install::OnPath => {
            std::os::unix::fs::symlink(&rtlab_bin, bin.join("rtlab")).unwrap();
            true
        }
        Install::RefusingIteration(i) => {
            let wrapper = bin.join("rtlab");
            std::fs::write(
                &wrapper,
                format!(
                    "#!/bin/sh\nfor a in \"$@\"; do [ \"$a\" = lava-iteration-{i} ] && {{ echo 'rtlab: error: refused' >&2; exit 2; }}; done\nexec {} \"$@\"\n",
                    shell_quote(&rtlab_bin.to_string_lossy())
                ),
            )
            .unwrap();
            make_executable(&wrapper);
            true
        }
    }
}

/// The run script as LAVA writes it: the defaults, the job's `values` (each one the
/// definition has), `cd` into the checkout, then the steps.
fn run_script(def: &Definition, values: &[(&str, &str)], checkout: &Path) -> String {
    let mut script = String::from("set -e\n");
    for (key, value) in def.params.iter().map(|(k, v)| (k.as_str(), v.as_str())) {
        script.push_str(&format!("{key}={}\n", shell_quote(value)));
    }
    for (key, value) in values {
        assert!(
            def.params.iter().any(|(k, _)| k == key),
            "the job sets {key}, which the definition does not have"
        );
        script.push_str(&format!("{key}={}\n", shell_quote(value)));
    }
    script.push_str(&format!(
        "cd {}\n",
        shell_quote(&checkout.to_string_lossy())
    ));
    for step in &def.steps {
        script.push_str(step);
        script.push('\n');
    }
    script
}

/// Every measurement under the scripted clock: CPU 0 wakes 5, 9, 40 us late, in turn (300
/// samples in the 300ms the jobs measure, one each 1ms).
const FAKE: &str = "--fake-clock 5us,9us,40us";

/// What `rtlab audit` says here, as the definition reports it.
fn audit_result(rt_cpus: &str) -> &'static str {
    let out = rtlab()
        .args(["audit", "--rt-cpus", rt_cpus])
        .output()
        .unwrap();
    match out.status.code() {
        Some(0) => "pass",
        Some(1) => "fail",
        _ => "unknown",
    }
}

#[test]
fn one_run_reports_every_figure_and_the_audit() {
    let job = run_job(
        &[
            ("DURATION", "300ms"),
            ("RT_CPUS", "0"),
            ("MEASURE_ARGS", FAKE),
        ],
        Install::Dist,
        &[],
    );
    let log = job.log();
    assert!(job.out.status.success(), "{log}");
    let cases = job.cases();
    assert_eq!(
        job.case("audit"),
        Some(format!("audit {}", audit_result("0"))),
        "{log}"
    );
    for expected in [
        "run-status pass",
        "cpu0-min-latency pass 5.000 us",
        "cpu0-avg-latency pass 18.000 us",
        "cpu0-max-latency pass 40.000 us",
        "cpu0-samples pass 300 count",
        "cpu0-overruns pass 0 count",
        "all-max-latency pass 40.000 us",
        "all-samples pass 300 count",
    ] {
        assert!(
            cases.iter().any(|c| c == expected),
            "no {expected}: {cases:#?}"
        );
    }
    assert!(!cases.iter().any(|c| c.contains("baseline")), "{cases:#?}");
    assert!(!cases.iter().any(|c| c.starts_with("cpu1-")), "{cases:#?}");
    // Every case is named as LAVA wants, and the result file holds the same cases.
    for c in &cases {
        let name = c.split(' ').next().unwrap();
        assert!(
            name.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b)),
            "{name}"
        );
    }
    let file = std::fs::read_to_string(job.output().join("result.txt")).unwrap();
    assert_eq!(file.lines().collect::<Vec<_>>(), cases);
    // The installed binary is the checkout's static one.
    assert!(job.output().join("bin/rtlab").is_file());
}

#[test]
fn a_budget_fails_the_maxima_over_it_and_three_runs_get_the_baseline() {
    let job = run_job(
        &[
            ("DURATION", "300ms"),
            ("RT_CPUS", "0"),
            ("ITERATIONS", "3"),
            ("BUDGET", "20us"),
            ("MEASURE_ARGS", FAKE),
        ],
        Install::OnPath,
        &[],
    );
    let log = job.log();
    assert!(job.out.status.success(), "{log}");
    for i in 1..=3 {
        assert_eq!(
            job.case(&format!("iteration-{i}-cpu0-max-latency")),
            Some(format!("iteration-{i}-cpu0-max-latency fail 40.000 us")),
            "{log}"
        );
        assert_eq!(
            job.case(&format!("iteration-{i}-cpu0-min-latency")),
            Some(format!("iteration-{i}-cpu0-min-latency pass 5.000 us"))
        );
    }
    // Three equal maxima: none over the lowest, so the baseline verdict passes.
    assert_eq!(
        job.case("baseline-max-latency").as_deref(),
        Some("baseline-max-latency pass 40.000 us")
    );
    assert_eq!(
        job.case("runs-over-baseline").as_deref(),
        Some("runs-over-baseline pass 0 runs")
    );
    assert!(
        job.output()
            .join("bin")
            .read_dir()
            .unwrap()
            .next()
            .is_none()
    );
}

#[test]
fn a_given_baseline_every_run_exceeds_fails_the_verdict() {
    let job = run_job(
        &[
            ("DURATION", "300ms"),
            ("RT_CPUS", "0"),
            ("ITERATIONS", "3"),
            ("BASELINE", "39us"),
            ("BUDGET", "100us"),
            ("MEASURE_ARGS", FAKE),
        ],
        Install::OnPath,
        &[],
    );
    assert!(job.out.status.success(), "{}", job.log());
    assert_eq!(
        job.case("iteration-2-cpu0-max-latency").as_deref(),
        Some("iteration-2-cpu0-max-latency pass 40.000 us")
    );
    assert_eq!(
        job.case("baseline-max-latency").as_deref(),
        Some("baseline-max-latency pass 39.000 us")
    );
    assert_eq!(
        job.case("runs-over-baseline").as_deref(),
        Some("runs-over-baseline fail 3 runs")
    );
}

#[test]
fn the_runs_are_pushed_to_a_real_server() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("server.db");
    let db_arg = db.to_str().unwrap();
    let token = add_token(db_arg, "board");
    let server = Server::start(db_arg, "127.0.0.1:0", &[]);
    let queue = dir.path().join("queue");
    let url = server.url();
    let job = run_job(
        &[
            ("DURATION", "300ms"),
            ("RT_CPUS", "0"),
            ("ITERATIONS", "2"),
            ("PUSH_URL", &url),
            ("PUSH_TOKEN", &token),
            ("MEASURE_ARGS", FAKE),
        ],
        Install::OnPath,
        &[("RTLAB_PUSH_QUEUE", &queue)],
    );
    let log = job.log();
    assert!(job.out.status.success(), "{log}");
    assert_eq!(job.case("push").as_deref(), Some("push pass"), "{log}");
    let runs = common::stored_runs(&db);
    assert_eq!(runs.len(), 2, "{runs:?}");
    // Two runs are reported by iteration, with no baseline (it needs three).
    assert!(job.case("iteration-2-run-status").is_some(), "{log}");
    assert!(job.case("runs-over-baseline").is_none());
}

#[test]
fn with_no_server_the_push_fails_and_the_runs_wait_in_the_queue() {
    let dir = tempfile::tempdir().unwrap();
    let queue = dir.path().join("queue");
    let url = format!("http://127.0.0.1:{}", free_port());
    let job = run_job(
        &[
            ("DURATION", "300ms"),
            ("RT_CPUS", "0"),
            ("PUSH_URL", &url),
            ("PUSH_TOKEN", "a-token-no-server-checks"),
            ("PUSH_RETRY", "1s"),
            ("MEASURE_ARGS", FAKE),
        ],
        Install::OnPath,
        &[("RTLAB_PUSH_QUEUE", &queue)],
    );
    let log = job.log();
    assert!(job.out.status.success(), "{log}");
    assert_eq!(job.case("push").as_deref(), Some("push fail"), "{log}");
    let status = rtlab()
        .args(["push", "--queue", "--format", "json"])
        .env("RTLAB_PUSH_QUEUE", &queue)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(text.contains(&url), "{text}");
}

#[test]
fn a_job_that_cannot_run_raises_instead_of_passing() {
    for (values, why) in [
        (vec![("ITERATIONS", "0")], "ITERATIONS"),
        (vec![("BINARY", "/nonexistent/rtlab")], "/nonexistent/rtlab"),
    ] {
        let mut values = values;
        values.push(("DURATION", "300ms"));
        let job = run_job(&values, Install::Dist, &[]);
        assert!(!job.out.status.success(), "{}", job.log());
        let raised: Vec<&Vec<String>> = job
            .calls
            .iter()
            .filter(|c| c[0] == "lava-test-raise")
            .collect();
        assert_eq!(raised.len(), 1, "{:?}", job.calls);
        assert!(raised[0][1].contains(why), "{raised:?}");
        assert!(job.cases().is_empty(), "{:?}", job.cases());
    }
}

#[test]
fn a_measurement_that_cannot_start_is_a_failed_case() {
    let job = run_job(
        &[
            ("DURATION", "300ms"),
            ("MEASURE_ARGS", "--fake-clock 5us --no-such-option"),
        ],
        Install::OnPath,
        &[],
    );
    assert!(job.out.status.success(), "{}", job.log());
    assert_eq!(
        job.case("iteration-1-measure").as_deref(),
        Some("iteration-1-measure fail 2 exit-status")
    );
    assert!(job.case("run-status").is_none());
}

#[test]
fn a_run_missing_among_several_keeps_the_others_names_and_fails_the_baseline() {
    let job = run_job(
        &[
            ("DURATION", "300ms"),
            ("RT_CPUS", "0"),
            ("ITERATIONS", "3"),
            ("MEASURE_ARGS", FAKE),
        ],
        Install::RefusingIteration(2),
        &[],
    );
    assert!(job.out.status.success(), "{}", job.log());
    assert_eq!(
        job.case("iteration-2-measure").as_deref(),
        Some("iteration-2-measure fail 2 exit-status")
    );
    assert!(job.case("iteration-2-run-status").is_none());
    for i in [1, 3] {
        assert_eq!(
            job.case(&format!("iteration-{i}-cpu0-max-latency")),
            Some(format!("iteration-{i}-cpu0-max-latency pass 40.000 us"))
        );
    }
    assert_eq!(
        job.case("runs-over-baseline").as_deref(),
        Some("runs-over-baseline fail")
    );
    assert!(job.case("baseline-max-latency").is_none());
}

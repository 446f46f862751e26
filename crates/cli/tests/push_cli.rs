//! `rtlab push` and `--push URL` from the command line: bad input refused with one line (exit
//! 2) before anything is sent, a server that cannot be reached leaves the runs queued (exit
//! 1, `--status` lists them, each queue file complete JSON), `--push` leaves the command's own
//! exit status alone, and a queue is sent first, oldest first, when a server answers.
//!
//! The "server" that answers here is a scripted HTTP responder on 127.0.0.1 — a test double
//! for the network, not `rtlab serve`; the end-to-end tests against the real server live with
//! `rtlab serve`.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use tempfile::TempDir;

/// A test's own queue, store and result file.
struct Setup {
    dir: TempDir,
}

impl Setup {
    fn new() -> Setup {
        Setup {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn queue(&self) -> PathBuf {
        self.dir.path().join("queue")
    }

    fn rtlab(&self) -> assert_cmd::Command {
        let mut cmd = common::rtlab_with_store(&self.dir.path().join("runs.db"));
        cmd.env("RTLAB_PUSH_QUEUE", self.queue())
            .env_remove("RTLAB_TOKEN")
            .env_remove("RTLAB_PUSH_URL")
            .env_remove("http_proxy")
            .env_remove("HTTP_PROXY")
            .env_remove("all_proxy")
            .env_remove("ALL_PROXY")
            .current_dir(self.dir.path());
        cmd
    }

    /// A result file made with the scripted clock (saved in the test's store too).
    fn result(&self, name: &str, cycles: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        self.rtlab()
            .args([
                "measure",
                "--fake-clock",
                "5us,9us,40us",
                "--cycles",
                cycles,
                "-q",
                "-o",
            ])
            .arg(&path)
            .assert()
            .success();
        path
    }

    fn queue_files(&self) -> Vec<PathBuf> {
        let Ok(dir) = std::fs::read_dir(self.queue()) else {
            return Vec::new();
        };
        dir.map(|e| e.unwrap().path())
            .filter(|p| p.is_file())
            .collect()
    }
}

/// A port nothing listens on (bound a moment ago, then closed).
fn dead_url() -> String {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    format!("http://127.0.0.1:{port}")
}

/// Exit 2 and exactly one line on standard error containing `want`.
fn refused(out: &std::process::Output, want: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(want), "wanted {want:?}: {err}");
}

#[test]
fn bad_input_is_refused_with_one_line_before_anything_is_sent() {
    let s = Setup::new();
    let run = s.result("run.json", "200");
    let run = run.to_str().unwrap();
    let with_token = |args: &[&str]| {
        s.rtlab()
            .env("RTLAB_TOKEN", "rtlab_t")
            .args(args)
            .output()
            .unwrap()
    };
    refused(
        &with_token(&["push", run, "--to", "lab:8080"]),
        "is not a URL",
    );
    refused(
        &with_token(&["push", run, "--to", "http://lab:99999"]),
        "port '99999'",
    );
    refused(
        &with_token(&["push", run, "--to", "https://lab:8443"]),
        "plain HTTP",
    );
    refused(&with_token(&["push", run]), "--to URL");
    let no_token = s
        .rtlab()
        .args(["push", run, "--to", "http://127.0.0.1:9"])
        .output()
        .unwrap();
    refused(&no_token, "RTLAB_TOKEN");
    let token = s.dir.path().join("token");
    std::fs::write(&token, "rtlab_t\n").unwrap();
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o644)).unwrap();
    let open = s
        .rtlab()
        .args(["push", run, "--to", "http://127.0.0.1:9", "--token-file"])
        .arg(&token)
        .output()
        .unwrap();
    refused(&open, "chmod 600");
    let not_a_run = s.dir.path().join("notes.json");
    std::fs::write(&not_a_run, "{\"hello\": 1}").unwrap();
    let out = with_token(&[
        "push",
        run,
        not_a_run.to_str().unwrap(),
        "--to",
        "http://127.0.0.1:9",
    ]);
    refused(&out, "notes.json");
    // Nothing was sent or queued.
    assert!(s.queue_files().is_empty());
    // --push is checked before the command does anything.
    let out = s
        .rtlab()
        .args([
            "measure",
            "--fake-clock",
            "5us",
            "--cycles",
            "10",
            "--push",
            "https://lab",
        ])
        .output()
        .unwrap();
    refused(&out, "plain HTTP");
}

#[test]
fn a_server_that_cannot_be_reached_leaves_the_run_queued() {
    let s = Setup::new();
    let run = s.result("run.json", "300");
    let url = dead_url();
    let out = s
        .rtlab()
        .env("RTLAB_TOKEN", "rtlab_t")
        .args([
            "push",
            "last",
            "--to",
            &url,
            "--retry-for",
            "0",
            "--label",
            "nightly",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("connection refused") && err.contains("queued"),
        "{err}"
    );

    let files = s.queue_files();
    assert_eq!(files.len(), 1, "{files:?}");
    let text = std::fs::read_to_string(&files[0]).unwrap();
    let q: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(q["schema"], "rtlab.push-queue/1");
    assert_eq!(q["target"], url.as_str());
    assert_eq!(q["label"], "nightly");
    assert_eq!(q["attempts"], 1);
    assert!(
        q["last_error"]
            .as_str()
            .unwrap()
            .contains("connection refused")
    );
    // The queued document is the run, whole.
    let doc: serde_json::Value = serde_json::from_str(q["document"].as_str().unwrap()).unwrap();
    let file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&run).unwrap()).unwrap();
    assert_eq!(doc["started_at"], file["started_at"]);
    assert_eq!(doc["all"]["raw"]["count"], file["all"]["raw"]["count"]);

    let status = s.rtlab().args(["push", "--queue"]).output().unwrap();
    let table = String::from_utf8_lossy(&status.stdout);
    assert!(status.status.success());
    assert!(
        table.contains(&url) && table.contains("connection refused"),
        "{table}"
    );
    let json = s
        .rtlab()
        .args(["push", "--queue", "--format", "json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["runs"].as_array().unwrap().len(), 1);
    assert_eq!(v["runs"][0]["attempts"], 1);
    assert!(v["runs"][0]["run_id"].as_str().unwrap().len() >= 4);

    // Pushed again while still down: the same run is one file, its tries counted.
    let again = s
        .rtlab()
        .env("RTLAB_TOKEN", "rtlab_t")
        .args([
            "push",
            run.to_str().unwrap(),
            "--to",
            &url,
            "--retry-for",
            "0",
        ])
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(1));
    assert_eq!(s.queue_files().len(), 1);
}

#[test]
fn push_on_import_keeps_imports_exit_status_and_queues_the_run() {
    let s = Setup::new();
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/imports/kdoc_osnoise_hist_9cpu.txt");
    let out = s
        .rtlab()
        .env("RTLAB_TOKEN", "rtlab_t")
        .arg("import")
        .arg(&file)
        .args(["--push", &dead_url(), "--retry-for", "0"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("imported"));
    assert!(
        err.contains("was not pushed") && err.contains("queued"),
        "{err}"
    );
    assert_eq!(s.queue_files().len(), 1);
}

/// A scripted responder (a test double for the network, not `rtlab serve`): answers one
/// upload per entry of `statuses` — `201` with the id `id{i}`, anything else with an error
/// body and `Retry-After: 1` — and returns the documents it got, in order.
fn responder(statuses: Vec<u16>) -> (String, std::thread::JoinHandle<Vec<String>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let handle = std::thread::spawn(move || {
        let mut got = Vec::new();
        for (i, status) in statuses.into_iter().enumerate() {
            let (stream, _) = listener.accept().unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut len = 0;
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                let lower = line.to_ascii_lowercase();
                if let Some(v) = lower.strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap();
                }
                if line.trim().is_empty() {
                    break;
                }
            }
            let mut body = vec![0; len];
            reader.read_exact(&mut body).unwrap();
            got.push(String::from_utf8(body).unwrap());
            let answer = if status == 201 {
                format!("{{\"id\":\"id{i}\",\"new\":true}}")
            } else {
                "{\"error\":\"the database cannot be reached\"}".to_string()
            };
            let mut stream = stream;
            write!(
                stream,
                "HTTP/1.1 {status} X\r\nRetry-After: 1\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}",
                answer.len()
            )
            .unwrap();
        }
        got
    });
    (url, handle)
}

#[test]
fn the_queue_goes_first_then_the_runs_given() {
    let s = Setup::new();
    let old = s.result("old.json", "100");
    let new = s.result("new.json", "200");
    let (url, server) = responder(vec![503, 201, 201]);
    let push = |run: &Path| {
        s.rtlab()
            .env("RTLAB_TOKEN", "rtlab_t")
            .args([
                "push",
                run.to_str().unwrap(),
                "--to",
                &url,
                "--retry-for",
                "0",
            ])
            .output()
            .unwrap()
    };
    // The database is down: the old run is queued.
    let first = push(&old);
    let err = String::from_utf8_lossy(&first.stderr);
    assert_eq!(first.status.code(), Some(1), "{err}");
    assert!(err.contains("database cannot be reached"), "{err}");
    assert_eq!(s.queue_files().len(), 1);
    // Back: the queued run goes first, then the one given.
    let out = push(&new);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("stored as id1") && stdout.contains("stored as id2"),
        "{stdout}"
    );
    let got = server.join().unwrap();
    let started =
        |text: &str| serde_json::from_str::<serde_json::Value>(text).unwrap()["started_at"].clone();
    let file_started = |p: &Path| started(&std::fs::read_to_string(p).unwrap());
    assert_eq!(started(&got[0]), file_started(&old));
    assert_eq!(started(&got[1]), file_started(&old));
    assert_eq!(started(&got[2]), file_started(&new));
    assert!(s.queue_files().is_empty());
}

//! A monitor's history on a fleet server, end to end with no test double: a real `rtlab serve`
//! takes monitor histories, refuses bad ones whole, keeps a document sent twice once, and draws
//! a planted kernel change on the host's page; a real `rtlab monitor --push` sends what it
//! keeps, and the server then holds exactly the board's intervals and incidents, the incident's
//! trace included; with the server gone, the monitor still measures and its pushes wait in the
//! queue until `rtlab push` sends them.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::server::{Api, Server, add_token, free_port, http};
use common::{rtlab, serial};

const MIN5: i64 = 300_000_000_000;

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn post(server: &Server, token: &str, body: &str) -> common::server::Answer {
    http(
        server.addr(),
        "POST",
        "/api/v1/monitor",
        &[
            ("Authorization", &format!("Bearer {token}")),
            ("Content-Type", "application/json"),
        ],
        body.as_bytes(),
    )
}

/// An interval of `host` as a board keeps it, `k` intervals into a day a week ago.
fn interval(host: &str, k: i64, max_us: u64, kernel: &str) -> serde_json::Value {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64;
    let start = (now - 7 * 86_400 * 1_000_000_000) / MIN5 * MIN5 + k * MIN5;
    let mut buckets = vec![0u64; 17];
    buckets[4] = 1_000;
    serde_json::json!({
        "host": host, "start_ns": start, "length_ns": MIN5, "measured_ns": MIN5,
        "engine": "timerlat", "cpus": "2-3", "kernel_release": kernel, "budget_ns": 100_000,
        "samples": 1_000, "overruns": 0, "max_ns": max_us * 1_000, "sum_ns": 9_000_000,
        "breaches": 0, "incidents": 0,
        "buckets": buckets, "per_cpu": []
    })
}

fn doc(intervals: Vec<serde_json::Value>, incidents: Vec<serde_json::Value>) -> String {
    serde_json::json!({
        "schema": "rtlab.monitor/1", "host": "rig-7",
        "intervals": intervals, "incidents": incidents
    })
    .to_string()
}

/// Uploads, refusals, the same document twice, and the pages over a planted kernel change.
#[test]
fn a_server_keeps_pushed_histories_once_and_draws_a_planted_change() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("server.db");
    let db = db.to_str().unwrap();
    let token = add_token(db, "rig");
    let server = Server::start(db, "127.0.0.1:0", &[]);
    // 24 intervals at 20 us on one kernel, then 24 at 60 us on the next.
    let intervals: Vec<serde_json::Value> = (0..48)
        .map(|k| {
            if k < 24 {
                interval("rig-7", k, 20, "6.12.57-rt")
            } else {
                interval("rig-7", k, 60, "6.12.74-rt")
            }
        })
        .collect();
    let body = doc(intervals.clone(), Vec::new());
    let first = post(&server, &token, &body);
    assert_eq!(first.status, 201, "{}", first.body);
    assert_eq!(first.json()["intervals"], 48);
    let again = post(&server, &token, &body);
    assert_eq!(
        (again.status, again.json()["new"].as_bool()),
        (200, Some(false)),
        "{}",
        again.body
    );
    assert_eq!(again.json()["id"], first.json()["id"]);
    // Refused whole: a bad row among good ones, another schema, no token, not JSON.
    let mut bad = intervals[..2].to_vec();
    bad.push(serde_json::json!({"host": "rig-7"}));
    for (body, token, status) in [
        (doc(bad, Vec::new()), token.as_str(), 400),
        (
            body.replace("rtlab.monitor/1", "rtlab.result/1"),
            &token,
            400,
        ),
        (body.clone(), "rtlab_wrong", 401),
        ("{".to_string(), &token, 400),
    ] {
        let a = post(&server, token, &body);
        assert_eq!(a.status, status, "{}", a.body);
    }
    let back = server
        .get("/api/v1/monitor/intervals?host=rig-7&last=30d")
        .json();
    assert_eq!(
        back["intervals"].as_array().unwrap().len(),
        48,
        "nothing of a refused one kept"
    );
    assert_eq!(back["intervals"][0], intervals[0]);
    let page = server.get("/hosts/rig-7/monitor?last=30d");
    assert_eq!(page.status, 200);
    assert!(
        page.body.contains("kernel 6.12.57-rt → 6.12.74-rt"),
        "{}",
        page.body
    );
    assert!(
        page.body.contains("<td class=\"worse\">+200 %</td>"),
        "{}",
        page.body
    );
    assert!(page.body.contains("<svg"));
    let fleet = server.get("/monitor?last=30d");
    assert!(
        fleet.body.contains("&#x2f;hosts&#x2f;rig-7&#x2f;monitor"),
        "{}",
        fleet.body
    );
    assert_eq!(server.get("/monitor?last=forever").status, 400);
}

/// A server keeps each interval's figures for the whole history and its document for
/// `--keep-detail`: what is older is dropped after an upload and at start, and the pages and
/// `/points` still read it.
#[test]
fn the_figures_outlive_the_documents_dropped_after_keep_detail() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("server.db");
    let db = db.to_str().unwrap();
    let token = add_token(db, "rig");
    // Ten intervals a week ago (one a breach of 300 us), ten a day ago.
    let old: Vec<_> = (0..10)
        .map(|k| interval("rig-7", k, if k == 4 { 300 } else { 20 }, "6.12.57-rt"))
        .collect();
    let recent: Vec<_> = (0..10)
        .map(|k| interval("rig-7", 6 * 288 + k, 30, "6.12.57-rt"))
        .collect();
    let server = Server::start(db, "127.0.0.1:0", &["--keep-detail", "2d"]);
    let up = post(
        &server,
        &token,
        &doc([old.clone(), recent].concat(), Vec::new()),
    );
    assert_eq!(up.status, 201, "{}", up.body);
    let docs = |server: &Server| {
        server
            .get("/api/v1/monitor/intervals?host=rig-7&last=30d")
            .json()["intervals"]
            .as_array()
            .unwrap()
            .len()
    };
    assert_eq!(docs(&server), 10, "the week-old documents are dropped");
    let points = server
        .get("/api/v1/monitor/points?host=rig-7&last=30d")
        .json();
    let points = points["points"].as_array().unwrap();
    assert_eq!(points.len(), 20, "every interval's figures stay");
    assert_eq!(points[0]["start_ns"], old[0]["start_ns"]);
    assert_eq!(points[4]["max_ns"], 300_000);
    assert_eq!(points[4]["kernel_release"], "6.12.57-rt");
    let page = server.get("/hosts/rig-7/monitor?last=30d");
    assert!(page.body.contains("300"), "{}", page.body);
    drop(server);
    // At start, a shorter window drops the rest of the documents, never the figures.
    let server = Server::start(db, "127.0.0.1:0", &["--keep-detail", "1h"]);
    assert_eq!(docs(&server), 0);
    let points = server
        .get("/api/v1/monitor/points?host=rig-7&last=30d")
        .json();
    assert_eq!(points["points"].as_array().unwrap().len(), 20);
    assert_eq!(
        server.get("/api/v1/monitor/points?last=30d").status,
        400,
        "no host"
    );
    drop(server);
    let bad = rtlab()
        .args(["serve", "--db", db, "--keep-detail", "10m"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        text(&bad.stderr).contains("'10m' is shorter than an hour"),
        "{}",
        text(&bad.stderr)
    );
}

/// An incident list longer than an answer holds gives the newest and says it was cut.
#[test]
fn an_incident_list_cut_at_its_limit_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("server.db");
    let db = db.to_str().unwrap();
    let token = add_token(db, "rig");
    let server = Server::start(db, "127.0.0.1:0", &["--max-upload", "128M"]);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64;
    let incidents: Vec<serde_json::Value> = (0..100_001i64)
        .map(|k| {
            let start = now - 86_400_000_000_000 + k * 1_000_000;
            serde_json::json!({
                "id": model::monitor::incident_id("rig-7", start), "host": "rig-7",
                "start_ns": start, "end_ns": start, "cpu": 2, "worst_ns": 200_000,
                "breaches": 1, "budget_ns": 100_000, "engine": "timerlat",
                "kernel_release": "6.12.57-rt", "cause": "thread interference"
            })
        })
        .collect();
    let up = post(&server, &token, &doc(Vec::new(), incidents));
    assert_eq!(up.status, 201, "{}", up.body);
    let all = server.get("/api/v1/monitor/incidents?last=7d");
    assert!(
        all.head
            .to_ascii_lowercase()
            .contains("rtlab-truncated: newest 100000"),
        "{}",
        all.head
    );
    let list = all.json();
    let list = list["incidents"].as_array().unwrap();
    assert_eq!(list.len(), 100_000);
    assert!(
        list[0]["start_ns"].as_i64() > list[1]["start_ns"].as_i64(),
        "newest first"
    );
    let day = server.get("/api/v1/monitor/incidents?last=1h");
    assert!(
        !day.head.to_ascii_lowercase().contains("rtlab-truncated"),
        "{}",
        day.head
    );
}

/// `rtlab` with a board's token and push queue.
fn board(token: &str, queue: &Path) -> Command {
    let mut cmd = rtlab();
    cmd.env("RTLAB_TOKEN", token).env("RTLAB_PUSH_QUEUE", queue);
    cmd
}

/// A monitor over `duration` in intervals of `every`, with a budget every wake-up breaches and
/// a burst gap longer than the run: one incident that grows in every interval.
fn monitor(token: &str, queue: &Path, db: &Path, url: &str, every: &str, duration: &str) -> Output {
    board(token, queue)
        .args([
            "monitor", "--cpus", "0", "-D", duration, "--every", every, "--budget", "1us",
        ])
        .args([
            "--burst-gap",
            "10s",
            "--retry-for",
            "1s",
            "--push",
            url,
            "--db",
        ])
        .arg(db)
        .output()
        .unwrap()
}

/// Each interval the board at `board_db` kept is on the server, the same, but the newest
/// `but_newest`; at least one is checked. Returns the board's host name.
fn server_holds_the_intervals(server: &Server, board_db: &Path, but_newest: usize) -> String {
    let kept = common::monitor_kept(board_db, "history");
    let host = kept["host"].as_str().unwrap().to_string();
    let on_server = server
        .get(&format!("/api/v1/monitor/intervals?host={host}&last=1h"))
        .json();
    let board = kept["intervals"].as_array().unwrap();
    assert!(board.len() > but_newest, "{kept}");
    for i in &board[..board.len() - but_newest] {
        let same = on_server["intervals"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["start_ns"] == i["start_ns"]);
        assert_eq!(
            same,
            Some(i),
            "the interval of {} on the server",
            i["start_ns"]
        );
    }
    host
}

/// A server's store with a push token, and a board's push queue, in `dir`.
fn server_and_queue(dir: &Path) -> (String, String, std::path::PathBuf) {
    let server_db = dir.join("server.db").to_str().unwrap().to_string();
    let token = add_token(&server_db, "board");
    (server_db, token, dir.join("queue"))
}

/// The server holds what the board holds, exactly: each of its intervals, each of its
/// incidents, and each incident's run. (Both boards of the test are this machine: the server's
/// history of the host holds both.)
fn server_holds_the_board(server: &Server, board_db: &Path) {
    let host = server_holds_the_intervals(server, board_db, 0);
    let incidents = common::monitor_kept(board_db, "incidents");
    let on_server = server
        .get(&format!("/api/v1/monitor/incidents?host={host}&last=1h"))
        .json();
    let list = incidents["incidents"].as_array().unwrap();
    assert!(!list.is_empty(), "{incidents}");
    for x in list {
        let same = on_server["incidents"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["id"] == x["id"]);
        assert_eq!(same, Some(x), "incident {} on the server", x["id"]);
        let run = x["run_id"].as_str().expect("the incident's run kept");
        let got = server.get(&format!("/api/v1/runs/{run}"));
        assert_eq!(got.status, 200, "incident {}'s run {run}", x["id"]);
    }
    let page = server.get(&format!("/hosts/{host}/monitor?last=1d"));
    let run = list[0]["run_id"].as_str().unwrap();
    assert!(
        page.body.contains(&format!("&#x2f;runs&#x2f;{run}")),
        "{}",
        page.body
    );
}

#[test]
fn a_monitor_pushes_what_it_keeps_and_queues_it_while_the_server_is_gone() {
    if !common::monitor_live() {
        return;
    }
    let _one = serial();
    let dir = tempfile::tempdir().unwrap();
    let (server_db, token, queue) = server_and_queue(dir.path());
    let server_db = server_db.as_str();
    let listen = format!("127.0.0.1:{}", free_port());
    let url = format!("http://{listen}");

    // The server is not there yet: the monitor measures all the same, and queues.
    let gone = dir.path().join("gone.db");
    let out = monitor(&token, &queue, &gone, &url, "1m", "3s");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("queued in"),
        "{}",
        text(&out.stderr)
    );
    let server = Server::start(server_db, &listen, &[]);
    let sent = board(&token, &queue)
        .args(["push", "--to", &url])
        .output()
        .unwrap();
    assert!(sent.status.success(), "{}", text(&sent.stderr));
    server_holds_the_board(&server, &gone);

    // With the server there, a second board's pushes arrive as it runs; its one incident
    // grows across four 1-second intervals, and the server has its last figures.
    let live_db = dir.path().join("live.db");
    let out = monitor(&token, &queue, &live_db, &url, "1s", "4s");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        !text(&out.stderr).contains("queued in"),
        "{}",
        text(&out.stderr)
    );
    server_holds_the_board(&server, &live_db);
}

/// The push queue is the monitor's outbox: killed (SIGKILL) while its pushes hang on a server
/// that never answers, the monitor leaves what it kept queued, and `rtlab push` sends it.
#[test]
fn a_monitor_killed_while_its_pushes_hang_leaves_them_queued() {
    if !common::monitor_live() {
        return;
    }
    let _one = serial();
    let dir = tempfile::tempdir().unwrap();
    let (server_db, token, queue) = server_and_queue(dir.path());
    let server_db = server_db.as_str();
    // Takes connections (the kernel's backlog) and never answers.
    let hang = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let listen = hang.local_addr().unwrap().to_string();
    let url = format!("http://{listen}");
    let board_db = dir.path().join("board.db");
    let mut child = board(&token, &queue)
        .args(["monitor", "--cpus", "0", "--every", "1s", "--budget", "1us"])
        .args([
            "--burst-gap",
            "10s",
            "--retry-for",
            "1s",
            "--push",
            &url,
            "--db",
        ])
        .arg(&board_db)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let queued = || {
        std::fs::read_dir(&queue).map_or(0, |d| {
            d.filter(|e| {
                e.as_ref()
                    .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "json"))
            })
            .count()
        })
    };
    let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while queued() < 4 && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(queued() >= 4, "the pushes wait in the queue: {}", queued());
    drop(hang);
    let server = Server::start(server_db, &listen, &[]);
    let sent = board(&token, &queue)
        .args(["push", "--to", &url])
        .output()
        .unwrap();
    assert!(sent.status.success(), "{}", text(&sent.stderr));
    // Every interval the board kept is on the server but perhaps the newest: the kill may
    // fall between keeping it and queueing it (the monitor's next start sends it again).
    let host = server_holds_the_intervals(&server, &board_db, 1);
    let incidents = server
        .get(&format!("/api/v1/monitor/incidents?host={host}&last=1h"))
        .json();
    assert!(
        !incidents["incidents"].as_array().unwrap().is_empty(),
        "{incidents}"
    );
}

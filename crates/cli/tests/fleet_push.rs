//! Boards and a server, end to end, with no test double: a real `rtlab serve` (SQLite, and
//! PostgreSQL when the test server is there) and real `rtlab push` processes. Many boards push
//! the same real imports at once and each run is stored once, under the id it has on the
//! board; a board whose server is gone queues its run (`import --push` still succeeds) and
//! sends it when the server is back; a file that is not a result is refused with exit 2; a
//! revoked token keeps the runs queued.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use common::rtlab;
use common::server::{Server, add_token, free_port};

const IMPORTS: [&str; 5] = [
    "analisi_imx8mp_baseline.json",
    "machinekit792_rpi2_3.18.9-rt5.txt",
    "local_cyclictest_2t_H100.json",
    "kdoc_timerlat_hist_5cpu_deadline.txt",
    "local_oslat_2cpu.txt",
];

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/imports")
        .join(name)
}

/// The ids a server stores, read with `rtlab runs` straight from its database.
fn stored(db: &str) -> BTreeSet<String> {
    ids_in(db).into_iter().collect()
}

/// The ids a store holds, newest first.
fn ids_in(db: impl AsRef<std::ffi::OsStr>) -> Vec<String> {
    common::stored_runs(db)
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect()
}

/// One board (its store and push queue) pushing to a server's database `db` at a fixed
/// address, shared by the steps of [`boards_and_server`].
struct Fleet<'a> {
    dir: tempfile::TempDir,
    board: PathBuf,
    db: &'a str,
    token: String,
    listen: String,
    url: String,
    queue: PathBuf,
}

impl Fleet<'_> {
    /// `rtlab` with the board's token and its push queue.
    fn rtlab(&self) -> Command {
        let mut cmd = rtlab();
        cmd.env("RTLAB_TOKEN", &self.token)
            .env("RTLAB_PUSH_QUEUE", &self.queue);
        cmd
    }

    /// What `rtlab push --queue --json` says about the queue.
    fn queue_status(&self) -> String {
        let out = self
            .rtlab()
            .args(["push", "--queue", "--format", "json"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

/// Fails unless `out` exited 0, showing its standard error.
fn assert_ok(out: &Output) {
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn boards_and_server(db: &str) {
    let dir = tempfile::tempdir().unwrap();
    let board = dir.path().join("board.db");
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let fleet = Fleet {
        queue: dir.path().join("queue"),
        board,
        db,
        token: add_token(db, "board"),
        url: format!("http://{listen}"),
        listen,
        dir,
    };
    let ids = import_on_the_board(&fleet);
    let server = Server::start(db, &fleet.listen, &[]);
    let want = each_run_stored_once(&fleet, &ids);
    drop(server);
    let late = queued_while_the_server_is_gone(&fleet, &want);
    let server = Server::start(db, &fleet.listen, &[]);
    queue_drains_when_it_is_back(&fleet, &late);
    not_a_result_is_exit_2(&fleet);
    revoked_token_keeps_the_run_queued(&fleet);
    drop(server);
}

/// The board imports the fixtures into its own store; their ids.
fn import_on_the_board(fleet: &Fleet) -> Vec<String> {
    for file in IMPORTS {
        let out = rtlab()
            .arg("import")
            .arg(fixture(file))
            .arg("--db")
            .arg(&fleet.board)
            .output()
            .unwrap();
        assert!(out.status.success());
    }
    let ids = ids_in(&fleet.board);
    assert_eq!(ids.len(), IMPORTS.len());
    ids
}

/// Eight boards push the same runs at once, each from its own process and queue: each run
/// is stored once, under the board's id. Returns the ids stored.
fn each_run_stored_once(fleet: &Fleet, ids: &[String]) -> BTreeSet<String> {
    let pushes: Vec<Child> = (0..8)
        .map(|i| {
            rtlab()
                .arg("push")
                .args(ids)
                .args(["--to", &fleet.url, "--db"])
                .arg(&fleet.board)
                .env("RTLAB_TOKEN", &fleet.token)
                .env(
                    "RTLAB_PUSH_QUEUE",
                    fleet.dir.path().join(format!("queue-{i}")),
                )
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for p in pushes {
        assert_ok(&p.wait_with_output().unwrap());
    }
    let want: BTreeSet<String> = ids.iter().cloned().collect();
    assert_eq!(
        stored(fleet.db),
        want,
        "each run once, under the board's id"
    );
    want
}

/// The server is gone: the board's import still succeeds and its run is queued. Returns
/// the queued run's id.
fn queued_while_the_server_is_gone(fleet: &Fleet, pushed: &BTreeSet<String>) -> String {
    let out = fleet
        .rtlab()
        .arg("import")
        .arg(fixture("local_cyclictest_h200.json"))
        .arg("--db")
        .arg(&fleet.board)
        .args(["--push", &fleet.url, "--retry-for", "1s"])
        .output()
        .unwrap();
    assert_ok(&out);
    let late = ids_in(&fleet.board)
        .into_iter()
        .find(|id| !pushed.contains(id))
        .unwrap();
    let status = fleet.queue_status();
    assert!(status.contains(&late), "{status}");
    late
}

/// Back on the same port: the queue goes up with the next push.
fn queue_drains_when_it_is_back(fleet: &Fleet, late: &str) {
    let out = fleet
        .rtlab()
        .args(["push", "--to", &fleet.url])
        .output()
        .unwrap();
    assert_ok(&out);
    assert!(stored(fleet.db).contains(late));
    assert_eq!(stored(fleet.db).len(), IMPORTS.len() + 1);
}

/// A file that is not a result: exit 2, naming it.
fn not_a_result_is_exit_2(fleet: &Fleet) {
    let junk = fleet.dir.path().join("notes.txt");
    std::fs::write(&junk, "not a result").unwrap();
    let out = fleet
        .rtlab()
        .arg("push")
        .arg(&junk)
        .args(["--to", &fleet.url])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("notes.txt"));
}

/// A revoked token: nothing stored, the run stays queued, and the queue says why.
fn revoked_token_keeps_the_run_queued(fleet: &Fleet) {
    assert!(
        rtlab()
            .args(["serve", "token", "revoke", "board", "--db", fleet.db])
            .status()
            .unwrap()
            .success()
    );
    let out = fleet
        .rtlab()
        .arg("import")
        .arg(fixture("local_oslat_z_fifo_bias.txt"))
        .arg("--db")
        .arg(&fleet.board)
        .args(["--push", &fleet.url])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stored(fleet.db).len(), IMPORTS.len() + 1);
    let text = fleet.queue_status();
    assert!(text.contains("401") || text.contains("token"), "{text}");
}

#[test]
fn boards_push_to_a_real_server_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    boards_and_server(dir.path().join("fleet.db").to_str().unwrap());
}

#[test]
fn boards_push_to_a_real_server_on_postgresql() {
    let Some(pg) = common::PostgresDb::create("rtlab_push") else {
        return;
    };
    boards_and_server(&pg.url);
}

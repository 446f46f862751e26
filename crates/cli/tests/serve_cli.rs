//! `rtlab serve` end to end, on SQLite and on PostgreSQL: the real binary on a free loopback
//! port, real documents (imports of other tools' files from other machines), many writers at
//! once uploading everything twice with hostile uploads among them, tokens made, checked and
//! revoked, pages that show hostile text as text, a server killed after it acknowledged, and
//! (PostgreSQL) a database that goes away mid-run.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use common::server::{Api, Server, http};
use common::{rtlab, wait_for};

/// Real files from other machines and tools (fixtures/imports/README.md says where from).
const IMPORTS: [&str; 7] = [
    "analisi_imx8mp_baseline.json",
    "machinekit792_rpi2_3.18.9-rt5.txt",
    "local_cyclictest_h200.json",
    "local_cyclictest_2t_H100.json",
    "kdoc_timerlat_hist_5cpu_deadline.txt",
    "local_oslat_2cpu.txt",
    "kdoc_osnoise_hist_9cpu.txt",
];

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/imports")
        .join(name)
}

/// The DOM headless Chromium builds from `url` (`apt-get install chromium`; .ci/run installs
/// it; without it the test fails, as report_browser.rs does).
fn dump_dom(url: &str) -> String {
    let profile = tempfile::tempdir().unwrap();
    let out = std::process::Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(url)
        .stderr(Stdio::null())
        .output()
        .expect("chromium runs (apt-get install chromium)");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `rtlab serve token add NAME --role ROLE` on `db`: the secret.
fn token(db: &str, name: &str, role: &str) -> String {
    let out = rtlab()
        .args(["serve", "token", "add", name, "--role", role, "--db", db])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// The result documents of the real files, imported into a board's own store and written
/// out as `rtlab show --format json` writes them, with the id each has on the board.
fn documents(dir: &Path) -> Vec<(String, String)> {
    let board = dir.join("board.db");
    for file in IMPORTS {
        let out = rtlab()
            .arg("import")
            .arg(fixture(file))
            .arg("--db")
            .arg(&board)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{file}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let list = rtlab()
        .args(["runs", "--format", "json", "--db"])
        .arg(&board)
        .output()
        .unwrap();
    let runs: serde_json::Value = serde_json::from_slice(&list.stdout).unwrap();
    let runs = runs.as_array().unwrap();
    assert_eq!(runs.len(), IMPORTS.len());
    runs.iter()
        .map(|r| {
            let id = r["id"].as_str().unwrap().to_string();
            let doc = rtlab()
                .args(["show", &id, "--format", "json", "--db"])
                .arg(&board)
                .output()
                .unwrap();
            assert!(doc.status.success());
            (id, String::from_utf8(doc.stdout).unwrap())
        })
        .collect()
}

/// `doc` with its hostname replaced.
fn with_hostname(doc: &str, hostname: &str) -> String {
    let mut v: serde_json::Value = serde_json::from_str(doc).unwrap();
    v["host"]["hostname"] = serde_json::Value::String(hostname.to_string());
    v.to_string()
}

/// An upload that must be refused: (what, token, content type, body, status).
type Hostile = (&'static str, String, &'static str, Vec<u8>, u16);

/// Uploads that must be refused, each with the status it must get: bad bodies with the
/// `push` token, then good bodies with bad tokens (`read` one that may only read).
fn hostile(doc: &str, push: &str, read: &str) -> Vec<Hostile> {
    let mut all = hostile_bodies(doc, push);
    all.extend(hostile_tokens(doc, read));
    all
}

/// Bodies that must be refused though the token may push: not JSON, empty, another
/// schema, a CPU no kernel has, a NUL in the hostname, not UTF-8, too large, the wrong type.
fn hostile_bodies(doc: &str, push: &str) -> Vec<Hostile> {
    let mut v: serde_json::Value = serde_json::from_str(doc).unwrap();
    v["cpus"][0]["cpu"] = serde_json::json!(1_000_000);
    let huge_cpu = v.to_string();
    let mut v: serde_json::Value = serde_json::from_str(doc).unwrap();
    v["schema"] = serde_json::json!("rtlab.measure/9");
    let other_schema = v.to_string();
    let json = |what, body, status| (what, push.to_string(), "application/json", body, status);
    vec![
        json("not JSON", b"{\"schema\": ".to_vec(), 400),
        json("an empty body", Vec::new(), 400),
        json("another schema", other_schema.into_bytes(), 400),
        json("a CPU no kernel has", huge_cpu.into_bytes(), 400),
        json(
            "a NUL in the hostname",
            with_hostname(doc, "evil\0host").into_bytes(),
            400,
        ),
        json("not UTF-8", vec![0xff, 0xfe, b'{'], 400),
        json("too large", vec![b' '; 3 << 20], 413),
        (
            "not JSON by type",
            push.to_string(),
            "text/plain",
            doc.as_bytes().to_vec(),
            415,
        ),
    ]
}

/// A good document sent with a token that may not push: none, a wrong one, a read token.
fn hostile_tokens(doc: &str, read: &str) -> Vec<Hostile> {
    let with = |what, token: String, status| {
        (
            what,
            token,
            "application/json",
            doc.as_bytes().to_vec(),
            status,
        )
    };
    vec![
        with("no token", String::new(), 401),
        with(
            "a wrong token",
            "rtlab_0000000000000000000000000000000000000000000000000000000000000000".into(),
            401,
        ),
        with("a read token", read.to_string(), 403),
    ]
}

/// What one writer got for each good upload: (document, status, id or error body).
type Uploaded = Vec<(usize, u16, String)>;

/// The whole acceptance on one store: many writers, everything twice, hostile uploads among
/// them; then reading, pages, metrics, revocation, and a kill after acknowledgement.
fn fleet_on(db: &str, dir: &Path, browser: bool) {
    let docs = documents(dir);
    let push = token(db, "board-1", "push");
    let read = token(db, "grafana", "read");
    let server = Server::start(db, "127.0.0.1:0", &["--max-upload", "2M", "--rate", "1000"]);
    let bad = hostile(&docs[0].1, &push, &read);
    let results = eight_writers(&server, &docs, &bad, &push);
    each_document_stored_once(&server, &docs, &results);
    hostile_hostname_is_text(&server, &docs, &push, browser);
    paths_filters_metrics_and_compare(&server, &docs);
    revoked_token_uploads_nothing(&server, db, &push, &docs);
    a_kill_loses_nothing_acknowledged(server, db, &docs);
}

/// Eight writers upload every document twice, in different orders, each also sending
/// every hostile upload once (each refused as it must be).
fn eight_writers(
    server: &Server,
    docs: &[(String, String)],
    bad: &[Hostile],
    push: &str,
) -> Vec<Uploaded> {
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|w| s.spawn(move || writer(server.addr(), w, docs, bad, push)))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

/// Writer `w`: two rounds, each every document in its own order then one hostile upload.
fn writer(
    addr: &str,
    w: usize,
    docs: &[(String, String)],
    bad: &[Hostile],
    push: &str,
) -> Uploaded {
    let mut got = Vec::new();
    for round in 0..2 {
        for k in 0..docs.len() {
            let i = (k * 3 + w + round) % docs.len();
            let a = http(
                addr,
                "POST",
                "/api/v1/runs?label=fleet",
                &[
                    ("Authorization", &format!("Bearer {push}")),
                    ("Content-Type", "application/json"),
                ],
                docs[i].1.as_bytes(),
            );
            let id = if a.status < 300 {
                a.json()["id"].as_str().unwrap().to_string()
            } else {
                a.body.clone()
            };
            got.push((i, a.status, id));
        }
        // 8 writers x 2 rounds cover every hostile upload.
        let (what, token, kind, body, want) = &bad[(w * 2 + round) % bad.len()];
        let mut headers = vec![("Content-Type", *kind)];
        let auth = format!("Bearer {token}");
        if !token.is_empty() {
            headers.push(("Authorization", &auth));
        }
        let a = http(addr, "POST", "/api/v1/runs", &headers, body);
        assert_eq!(a.status, *want, "{what}: {}", a.body);
        if *want != 413 {
            assert!(a.json()["error"].is_string(), "{what}: {}", a.body);
        }
    }
    got
}

/// Every good upload was stored or found stored, under the id the board gave it; each
/// document was stored (201) exactly once, is listed, and comes back as the board has it.
fn each_document_stored_once(server: &Server, docs: &[(String, String)], results: &[Uploaded]) {
    let mut created: BTreeMap<usize, usize> = BTreeMap::new();
    for (i, status, id) in results.iter().flatten() {
        assert!(
            *status == 200 || *status == 201,
            "document {i}: {status} {id}"
        );
        assert_eq!(
            id, &docs[*i].0,
            "document {i} got another id than on the board"
        );
        if *status == 201 {
            *created.entry(*i).or_default() += 1;
        }
    }
    assert_eq!(created.len(), docs.len());
    assert!(created.values().all(|&n| n == 1), "{created:?}");
    let listed = server.get("/api/v1/runs?limit=10000").json();
    let ids: BTreeSet<&str> = listed["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, docs.iter().map(|(id, _)| id.as_str()).collect());
    // A stored run comes back as the document the board has.
    for (id, doc) in docs {
        let back = server.get(&format!("/api/v1/runs/{id}"));
        assert_eq!(back.status, 200);
        let (a, b): (serde_json::Value, serde_json::Value) =
            (back.json(), serde_json::from_str(doc).unwrap());
        assert_eq!(a["host"], b["host"]);
        assert_eq!(a["all"]["raw"], b["all"]["raw"]);
    }
}

/// A hostile hostname is stored and shown as text on every page; in a real browser
/// (`browser`) the pages hold no script element at all.
fn hostile_hostname_is_text(server: &Server, docs: &[(String, String)], push: &str, browser: bool) {
    let script = with_hostname(&docs[0].1, "<script>alert(1)</script>");
    let stored = server.upload(push, script.as_bytes());
    assert_eq!(stored.status, 201, "{}", stored.body);
    let script_id = stored.json()["id"].as_str().unwrap().to_string();
    for path in [
        "/".to_string(),
        format!("/hosts/{}", "%3Cscript%3Ealert%281%29%3C%2Fscript%3E"),
        format!("/hosts/{}/worst", "%3Cscript%3Ealert%281%29%3C%2Fscript%3E"),
        format!("/runs/{script_id}"),
        format!("/compare?run={script_id}&run={}", docs[1].0),
    ] {
        let page = server.get(&path);
        assert_eq!(page.status, 200, "{path}: {}", page.body);
        assert!(
            page.head.to_lowercase().contains("content-security-policy"),
            "{path}"
        );
        assert!(
            !page.body.contains("<script>alert"),
            "{path} shows the hostname as HTML"
        );
        assert!(
            page.body.contains("&lt;script&gt;alert(1)"),
            "{path} lost the hostname"
        );
    }
    if browser {
        for path in [
            "/".to_string(),
            "/hosts/%3Cscript%3Ealert%281%29%3C%2Fscript%3E".to_string(),
            format!("/runs/{script_id}"),
        ] {
            let dom = dump_dom(&format!("http://{}{path}", server.addr()));
            assert!(dom.contains("</html>"), "{path}: {dom}");
            assert!(
                !dom.to_lowercase().contains("<script"),
                "{path} has a script element"
            );
            assert!(dom.contains("&lt;script&gt;alert(1)"), "{path}: {dom}");
        }
    }
}

/// Paths that try to leave the API get 404 (or 400), never a file; a bad filter is 400;
/// metrics, comparison and the host list answer.
fn paths_filters_metrics_and_compare(server: &Server, docs: &[(String, String)]) {
    for path in [
        "/runs/..%2F..%2Fetc%2Fpasswd",
        "/api/v1/runs/../../etc/passwd",
        "/etc/passwd",
    ] {
        let a = server.get(path);
        assert!(a.status == 404 || a.status == 400, "{path}: {}", a.status);
        assert!(!a.body.contains("root:x:0:0"), "{path}");
    }
    let bad_filter = server.get("/api/v1/runs?since=yesterday");
    assert_eq!(bad_filter.status, 400, "{}", bad_filter.body);
    let metrics = server.get("/metrics");
    assert_eq!(metrics.status, 200);
    assert!(
        metrics.body.contains("rtlab_fleet_runs{host="),
        "{}",
        metrics.body
    );
    assert!(metrics.body.trim_end().ends_with("# EOF"));
    let compared = server.get(&format!(
        "/api/v1/compare?run={}&run={}",
        docs[0].0, docs[1].0
    ));
    assert_eq!(compared.status, 200, "{}", compared.body);
    assert_eq!(compared.json()["schema"], "rtlab.compare/1");
    assert_eq!(compared.json()["runs"].as_array().unwrap().len(), 2);
    let fleet = server.get("/api/v1/hosts").json();
    assert!(fleet["hosts"].as_array().unwrap().len() >= 2);
}

/// A revoked token uploads nothing.
fn revoked_token_uploads_nothing(server: &Server, db: &str, push: &str, docs: &[(String, String)]) {
    let out = rtlab()
        .args(["serve", "token", "revoke", "board-1", "--db", db])
        .output()
        .unwrap();
    assert!(out.status.success());
    let late = server.upload(push, with_hostname(&docs[0].1, "late").as_bytes());
    assert_eq!(late.status, 401, "{}", late.body);
}

/// Killing the server loses nothing it acknowledged: a server started again on the same
/// store has the acknowledged run, and every run before it.
fn a_kill_loses_nothing_acknowledged(server: Server, db: &str, docs: &[(String, String)]) {
    let push2 = token(db, "board-2", "push");
    let acked = server.upload(&push2, with_hostname(&docs[2].1, "acked").as_bytes());
    assert_eq!(acked.status, 201);
    let acked_id = acked.json()["id"].as_str().unwrap().to_string();
    drop(server);
    let again = Server::start(db, "127.0.0.1:0", &[]);
    assert_eq!(again.get(&format!("/api/v1/runs/{acked_id}")).status, 200);
    let total = again.get("/api/v1/runs?limit=10000").json()["runs"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(total, docs.len() + 2);
}

#[test]
fn a_fleet_on_sqlite_stores_every_good_run_once_and_refuses_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("fleet.db");
    fleet_on(db.to_str().unwrap(), dir.path(), true);
}

/// A fresh database on the test PostgreSQL server, dropped afterwards.
struct PgDatabase {
    admin: String,
    name: String,
}

impl PgDatabase {
    fn create(admin: &str) -> PgDatabase {
        let name = format!("rtlab_serve_{}", std::process::id());
        psql(
            admin,
            &format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
        );
        psql(admin, &format!("CREATE DATABASE {name}"));
        PgDatabase {
            admin: admin.to_string(),
            name,
        }
    }

    fn url(&self) -> String {
        let base = self.admin.rsplit_once('/').unwrap().0;
        format!("{base}/{}", self.name)
    }
}

impl Drop for PgDatabase {
    fn drop(&mut self) {
        psql(
            &self.admin,
            &format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name),
        );
    }
}

fn psql(url: &str, sql: &str) -> String {
    let out = std::process::Command::new("psql")
        .args([url, "-v", "ON_ERROR_STOP=1", "-Atc", sql])
        .output()
        .expect("psql runs (Debian's postgresql-client)");
    assert!(
        out.status.success(),
        "{sql}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn a_fleet_on_postgresql_stores_every_good_run_once_and_refuses_the_rest() {
    let Some(admin) = testkit::live::postgres_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = PgDatabase::create(&admin);
    fleet_on(&db.url(), dir.path(), false);
}

/// The PostgreSQL server goes away under `rtlab serve` and comes back: uploads meanwhile get
/// 503 with Retry-After and store nothing; afterwards they succeed, and nothing is half
/// stored. The test runs its own server (`.ci/postgres`), since it stops it.
#[test]
fn a_database_that_goes_away_gives_retryable_errors_and_loses_nothing() {
    if testkit::live::postgres_or_skip().is_none() {
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let script = root.join(".ci/postgres");
    // Durable: the server is crashed below, and acknowledged commits must survive that.
    let started = std::process::Command::new("bash")
        .arg(&script)
        .arg("start")
        .env("RTLAB_PG_DURABLE", "1")
        .output()
        .unwrap();
    assert!(
        started.status.success(),
        "{}",
        String::from_utf8_lossy(&started.stderr)
    );
    let vars: BTreeMap<String, String> = String::from_utf8(started.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_prefix("export "))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let pg_dir = vars["RTLAB_PG_DIR"].clone();
    struct Cluster(PathBuf, String);
    impl Drop for Cluster {
        fn drop(&mut self) {
            let _ = std::process::Command::new("bash")
                .arg(&self.0)
                .args(["stop", &self.1])
                .status();
        }
    }
    let _cluster = Cluster(script.clone(), pg_dir.clone());
    let url = vars["RTLAB_TEST_POSTGRES"].clone();
    let dir = tempfile::tempdir().unwrap();
    let docs = documents(dir.path());
    let push = token(&url, "board", "push");
    let server = Server::start(&url, "127.0.0.1:0", &["--rate", "1000"]);
    assert_eq!(server.upload(&push, docs[0].1.as_bytes()).status, 201);

    let halt = std::process::Command::new("bash")
        .arg(&script)
        .args(["halt", &pg_dir])
        .status()
        .unwrap();
    assert!(halt.success());
    for (_, doc) in &docs[1..3] {
        let a = server.upload(&push, doc.as_bytes());
        assert_eq!(a.status, 503, "{}", a.body);
        assert!(a.head.to_lowercase().contains("retry-after"), "{}", a.head);
    }
    let resume = std::process::Command::new("bash")
        .arg(&script)
        .args(["resume", &pg_dir])
        .status()
        .unwrap();
    assert!(resume.success());
    // The pool's broken connections are dropped; the next uploads open fresh ones.
    for (id, doc) in &docs[1..] {
        let a = server.upload(&push, doc.as_bytes());
        assert_eq!(a.status, 201, "{}", a.body);
        assert_eq!(a.json()["id"], id.as_str());
    }
    let runs = psql(&url, "SELECT count(*) FROM runs");
    let cpu_rows = psql(&url, "SELECT count(DISTINCT run_id) FROM run_cpus");
    assert_eq!(runs.trim(), docs.len().to_string());
    assert_eq!(cpu_rows.trim(), docs.len().to_string());
    let mut server = server;
    let _ = wait_for_exit(&mut server);
}

/// SIGTERM: the server finishes and exits 0.
fn wait_for_exit(server: &mut Server) -> Option<i32> {
    // SAFETY: kill with a valid pid and signal number has no memory effects.
    unsafe { libc::kill(server.child().id() as i32, libc::SIGTERM) };
    wait_for(server.child(), Duration::from_secs(30)).code()
}

#[test]
fn sigterm_stops_the_server_cleanly_and_bad_options_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let mut server = Server::start(db.to_str().unwrap(), "127.0.0.1:0", &[]);
    assert_eq!(server.get("/").status, 200);
    assert_eq!(wait_for_exit(&mut server), Some(0));
    for (args, says) in [
        (vec!["--rate", "0"], "--rate"),
        (vec!["--max-upload", "10"], "--max-upload"),
        (vec!["--listen", "nowhere"], "--listen"),
    ] {
        let out = rtlab()
            .arg("serve")
            .args(&args)
            .arg("--db")
            .arg(&db)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
    }
    // A taken address is one line and exit 2.
    let holder = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let taken = holder.local_addr().unwrap().to_string();
    let out = rtlab()
        .args(["serve", "--listen", &taken, "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot listen"));
    // A bad token name and an unknown token to revoke.
    for args in [
        vec!["serve", "token", "add", "a b"],
        vec!["serve", "token", "revoke", "nobody"],
    ] {
        let out = rtlab().args(&args).arg("--db").arg(&db).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
}

//! The client against a scripted HTTP responder on 127.0.0.1 — a test double for the network,
//! not `rtlab serve`: it answers fixed statuses, headers and bodies, and hands back the
//! request it read, so the client's own side of the contract (docs/api.md) is checked here.
//! The end-to-end tests against the real server live with `rtlab serve`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::mpsc;
use std::time::Duration;

use push::{Class, Client, Target, Token, Uploaded};

/// What the responder read: the request line, the headers (lower-case names) and the body.
#[derive(Debug)]
struct Seen {
    line: String,
    headers: Vec<(String, String)>,
    body: String,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Starts a responder that answers one request with `answer` (the raw status line, headers and
/// body); returns the base URL and a receiver for what it read.
fn respond_once(answer: String) -> (String, mpsc::Receiver<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let mut headers = Vec::new();
        loop {
            let mut h = String::new();
            reader.read_line(&mut h).unwrap();
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            let (n, v) = h.split_once(':').unwrap();
            headers.push((n.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
        let len: usize = headers
            .iter()
            .find(|(n, _)| n == "content-length")
            .map_or(0, |(_, v)| v.parse().unwrap());
        let mut body = vec![0; len];
        reader.read_exact(&mut body).unwrap();
        let mut stream = stream;
        stream.write_all(answer.as_bytes()).unwrap();
        let _ = stream.flush();
        tx.send(Seen {
            line: line.trim_end().to_string(),
            headers,
            body: String::from_utf8(body).unwrap(),
        })
        .unwrap();
    });
    (url, rx)
}

fn http(status: &str, headers: &[&str], body: &str) -> String {
    let mut out = format!(
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for h in headers {
        out.push_str(h);
        out.push_str("\r\n");
    }
    out + "\r\n" + body
}

fn client(url: &str) -> Client {
    Client::new(
        Target::parse(url).unwrap(),
        Token::new("rtlab_secret\n", "test").unwrap(),
    )
}

#[test]
fn an_upload_sends_what_the_contract_asks_and_reads_the_id() {
    let (url, seen) = respond_once(http(
        "201 Created",
        &[
            "Location: /api/v1/runs/0a1b2c3d",
            "Content-Type: application/json",
        ],
        r#"{"id":"0a1b2c3d","new":true}"#,
    ));
    let doc = "{\"schema\": \"rtlab.measure/1\"}\n";
    let got = client(&url)
        .upload(doc, Some("RT #2"), Some("run-1"))
        .unwrap();
    assert_eq!(
        got,
        Uploaded {
            id: "0a1b2c3d".into(),
            new: true
        }
    );
    let seen = seen.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(
        seen.line,
        "POST /api/v1/runs?label=RT%20%232&session=run-1 HTTP/1.1"
    );
    assert_eq!(seen.header("authorization"), Some("Bearer rtlab_secret"));
    assert_eq!(seen.header("content-type"), Some("application/json"));
    assert_eq!(
        seen.header("user-agent").unwrap(),
        format!("rtlab/{}", env!("CARGO_PKG_VERSION"))
    );
    assert_eq!(seen.body, doc);
}

#[test]
fn an_upload_under_a_prefix_goes_below_it_and_an_empty_label_is_left_out() {
    let (url, seen) = respond_once(http("200 OK", &[], r#"{"id":"ffff0000","new":false}"#));
    let got = client(&format!("{url}/rtlab/"))
        .upload("{}", Some(""), None)
        .unwrap();
    assert!(!got.new);
    let seen = seen.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(seen.line, "POST /rtlab/api/v1/runs HTTP/1.1");
}

#[test]
fn refusals_are_classed_with_the_servers_words() {
    for (status, class) in [
        ("400 Bad Request", Class::Refused),
        ("401 Unauthorized", Class::Credentials),
        ("403 Forbidden", Class::Credentials),
        ("413 Payload Too Large", Class::Refused),
        ("415 Unsupported Media Type", Class::Refused),
        ("404 Not Found", Class::Target),
        ("500 Internal Server Error", Class::Retryable),
    ] {
        let (url, _seen) = respond_once(http(status, &[], r#"{"error":"because\nreasons"}"#));
        let e = client(&url).upload("{}", None, None).unwrap_err();
        assert_eq!(e.class, class, "{status}");
        let text = e.to_string();
        assert!(text.starts_with(&url), "{text}");
        assert!(!text.contains('\n'), "{text}");
        if status != "404 Not Found" {
            assert!(text.contains("because reasons"), "{status}: {text}");
        }
    }
}

#[test]
fn a_busy_server_says_when_to_come_back() {
    for status in ["429 Too Many Requests", "503 Service Unavailable"] {
        let (url, _seen) = respond_once(http(status, &["Retry-After: 4"], r#"{"error":"busy"}"#));
        let e = client(&url).upload("{}", None, None).unwrap_err();
        assert_eq!(
            (e.class, e.retry_after),
            (Class::Retryable, Some(Duration::from_secs(4)))
        );
    }
}

#[test]
fn an_answer_over_64_kib_is_refused() {
    let big = format!(
        r#"{{"id":"ab","new":true,"pad":"{}"}}"#,
        "x".repeat(70 * 1024)
    );
    let (url, _seen) = respond_once(http("201 Created", &[], &big));
    let e = client(&url).upload("{}", None, None).unwrap_err();
    assert_eq!(e.class, Class::Target);
    assert!(e.to_string().contains("64 KiB"), "{e}");
}

#[test]
fn a_redirect_is_not_followed() {
    let (url, _seen) = respond_once(http(
        "308 Permanent Redirect",
        &["Location: http://other/api/v1/runs"],
        "",
    ));
    let e = client(&url).upload("{}", None, None).unwrap_err();
    assert_eq!(e.class, Class::Target);
    assert!(e.to_string().contains("http://other/api/v1/runs"), "{e}");
}

#[test]
fn nothing_listening_is_retryable() {
    // A port that was free a moment ago: bind, note it, close.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let e = client(&format!("http://127.0.0.1:{port}"))
        .upload("{}", None, None)
        .unwrap_err();
    assert_eq!(e.class, Class::Retryable, "{e}");
    assert!(e.to_string().contains("connection refused"), "{e}");
}

#[test]
fn a_connection_cut_before_the_answer_is_retryable() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut buf = [0u8; 64];
        let _ = stream.read(&mut buf);
        // Closed without an answer.
    });
    let e = client(&url).upload("{}", None, None).unwrap_err();
    assert_eq!(e.class, Class::Retryable, "{e}");
}

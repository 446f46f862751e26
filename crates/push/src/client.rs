//! One upload: `POST /api/v1/runs` with the token, the document as the body, and the answer
//! read (bounded) and classed ([`crate::error`]). No retry here: [`crate::retry`] does that.

use std::io::Read;
use std::time::Duration;

use serde::Deserialize;

use crate::error::{Class, PushError};
use crate::target::Target;

/// The longest answer read from the server.
pub const MAX_ANSWER: u64 = 64 * 1024;

/// How long connecting may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The longest token accepted.
pub const MAX_TOKEN: usize = 512;

/// The path uploads go to, under the server's base URL.
pub const RUNS_PATH: &str = "/api/v1/runs";

/// The path monitor histories (`rtlab.monitor/1`: intervals and incidents) go to.
pub const MONITOR_PATH: &str = "/api/v1/monitor";

/// Where `document` is uploaded: a monitor history to [`MONITOR_PATH`], anything else (a
/// result document) to [`RUNS_PATH`]. Read from the document's own `schema`, so a queued
/// history goes where it belongs without the queue recording it.
pub fn upload_path(document: &str) -> &'static str {
    #[derive(Deserialize)]
    struct Head {
        #[serde(default)]
        schema: Option<String>,
    }
    match serde_json::from_str::<Head>(document) {
        Ok(Head { schema: Some(s) }) if s == model::monitor::MONITOR_SCHEMA => MONITOR_PATH,
        _ => RUNS_PATH,
    }
}

/// A bearer token, checked to be something a header can carry. Its `Debug` does not show it.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(…)")
    }
}

impl Token {
    /// Checks a token as read from a file or the environment: surrounding whitespace (a
    /// trailing newline) is dropped; what is left must be 1 to [`MAX_TOKEN`] visible ASCII
    /// characters. `from` names where it came from, for the message.
    pub fn new(text: &str, from: &str) -> Result<Token, String> {
        let t = text.trim();
        if t.is_empty() {
            return Err(format!(
                "{from} is empty; give the token `rtlab serve token add NAME` printed"
            ));
        }
        if t.len() > MAX_TOKEN || !t.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(format!(
                "{from} does not hold a token (visible ASCII, at most {MAX_TOKEN} characters, one line); give the token `rtlab serve token add NAME` printed"
            ));
        }
        Ok(Token(t.to_string()))
    }
}

/// What the server said about a stored run.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct Uploaded {
    /// The run's id on the server (the same as in the board's own store).
    pub id: String,
    /// False when the server had the run already.
    pub new: bool,
}

/// A client for one server.
#[derive(Debug)]
pub struct Client {
    target: Target,
    token: Token,
    agent: ureq::Agent,
}

impl Client {
    /// A client pushing to `target` with `token`.
    pub fn new(target: Target, token: Token) -> Client {
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(CONNECT_TIMEOUT))
            // A redirect is answered as an error naming where it leads, never followed: a
            // POST body must not be sent on to another address silently.
            .max_redirects(0)
            .max_redirects_will_error(false)
            .user_agent(format!("rtlab/{}", env!("CARGO_PKG_VERSION")))
            .build();
        Client {
            target,
            token,
            agent: config.new_agent(),
        }
    }

    /// The server.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// Uploads one result document (as rtlab writes it) with an optional label and session;
    /// one try. The whole request is bounded by [`request_timeout`] of the document's size.
    pub fn upload(
        &self,
        document: &str,
        label: Option<&str>,
        session: Option<&str>,
    ) -> Result<Uploaded, PushError> {
        let server = self.target.as_str();
        let mut request = self
            .agent
            .post(self.target.url(upload_path(document)))
            .header("Authorization", format!("Bearer {}", self.token.0))
            .header("Accept", "application/json")
            .content_type("application/json");
        for (key, value) in [("label", label), ("session", session)] {
            if let Some(v) = value.filter(|v| !v.is_empty()) {
                request = request.query(key, v);
            }
        }
        let response = request
            .config()
            .timeout_global(Some(request_timeout(document.len())))
            .build()
            .send(document)
            .map_err(|e| PushError::from_transport(server, &e))?;
        let status = response.status().as_u16();
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let (retry_after, location) = (header("retry-after"), header("location"));
        let body = read_bounded(response.into_body(), server)?;
        answer(
            server,
            status,
            &body,
            retry_after.as_deref(),
            location.as_deref(),
        )
    }
}

/// How long one upload of `bytes` may take in all: 30 s, plus 1 s per 256 KiB (a slow
/// board link), so a large run is not cut off and a stalled server does not hold a board.
pub fn request_timeout(bytes: usize) -> Duration {
    Duration::from_secs(30 + (bytes as u64 >> 18))
}

/// The answer's body, at most [`MAX_ANSWER`] bytes.
fn read_bounded(body: ureq::Body, server: &str) -> Result<Vec<u8>, PushError> {
    let mut out = Vec::new();
    body.into_reader()
        .take(MAX_ANSWER + 1)
        .read_to_end(&mut out)
        .map_err(|e| PushError::from_transport(server, &ureq::Error::from(e)))?;
    if out.len() as u64 > MAX_ANSWER {
        return Err(PushError::new(
            Class::Target,
            server,
            format!(
                "the answer is over {} KiB, which `rtlab serve` never sends; is --to the right address?",
                MAX_ANSWER / 1024
            ),
        ));
    }
    Ok(out)
}

/// What an answer means: the stored run for 200/201 with the contract's body, else the
/// classed error.
pub(crate) fn answer(
    server: &str,
    status: u16,
    body: &[u8],
    retry_after: Option<&str>,
    location: Option<&str>,
) -> Result<Uploaded, PushError> {
    if status == 200 || status == 201 {
        return parse_stored(body).ok_or_else(|| {
            PushError::new(
                Class::Target,
                server,
                format!(
                    "the server answered {status} without the run's id as `rtlab serve` gives it; is --to the right address? The run is kept"
                ),
            )
        });
    }
    #[derive(Deserialize)]
    struct ErrorBody {
        error: String,
    }
    let message = serde_json::from_slice::<ErrorBody>(body)
        .ok()
        .map(|b| b.error);
    Err(PushError::from_status(
        server,
        status,
        message.as_deref(),
        retry_after,
        location,
    ))
}

/// `{"id": ID, "new": BOOL}` with an id of 1 to 64 letters and digits.
fn parse_stored(body: &[u8]) -> Option<Uploaded> {
    let stored: Uploaded = serde_json::from_slice(body).ok()?;
    let good = !stored.id.is_empty()
        && stored.id.len() <= 64
        && stored.id.bytes().all(|b| b.is_ascii_alphanumeric());
    good.then_some(stored)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_checked_and_trimmed() {
        assert_eq!(Token::new("rtlab_ab12\n", "t").unwrap().0, "rtlab_ab12");
        assert!(
            Token::new("\n", "--token-file x")
                .unwrap_err()
                .contains("--token-file x is empty")
        );
        assert!(Token::new("a b", "t").is_err());
        assert!(Token::new("a\u{7f}", "t").is_err());
        assert!(Token::new(&"a".repeat(MAX_TOKEN + 1), "t").is_err());
        assert_eq!(
            format!("{:?}", Token::new("secret", "t").unwrap()),
            "Token(…)"
        );
    }

    #[test]
    fn a_monitor_history_goes_to_its_own_path_and_everything_else_to_the_runs() {
        let history = model::monitor::HistoryDoc::new("pi", Vec::new(), Vec::new()).to_json();
        assert_eq!(upload_path(&history), MONITOR_PATH);
        assert_eq!(
            upload_path(r#"{"schema":"rtlab.result/3","host":{}}"#),
            RUNS_PATH
        );
        // Not JSON, or a schema that is not a string: the runs path, whose parser refuses it.
        assert_eq!(upload_path("not json"), RUNS_PATH);
        assert_eq!(upload_path(r#"{"schema":1}"#), RUNS_PATH);
        // The monitor's answer, with its counts, reads as the contract's.
        assert_eq!(
            answer(
                "http://h",
                201,
                br#"{"id":"0a1b2c3d4e5f","new":true,"intervals":2,"incidents":0}"#,
                None,
                None
            )
            .unwrap()
            .id,
            "0a1b2c3d4e5f"
        );
    }

    #[test]
    fn answers_are_read_as_the_contract_says() {
        let s = "http://h";
        assert_eq!(
            answer(s, 201, br#"{"id":"0a1b2c3d4e5f","new":true}"#, None, None),
            Ok(Uploaded {
                id: "0a1b2c3d4e5f".into(),
                new: true
            })
        );
        assert!(
            !answer(s, 200, br#"{"id":"0a1b","new":false}"#, None, None)
                .unwrap()
                .new
        );
        // A 200 that is not the API's answer (a proxy's page) is not taken as stored.
        for body in [
            &b"<html>"[..],
            br#"{"id":"../x","new":true}"#,
            br#"{"id":"","new":true}"#,
        ] {
            assert_eq!(
                answer(s, 200, body, None, None).unwrap_err().class,
                Class::Target
            );
        }
        let e = answer(s, 400, br#"{"error":"not JSON at line 1"}"#, None, None).unwrap_err();
        assert_eq!(e.class, Class::Refused);
        assert!(e.to_string().contains("not JSON at line 1"));
        let e = answer(s, 503, b"", Some("5"), None).unwrap_err();
        assert_eq!(
            (e.class, e.retry_after),
            (Class::Retryable, Some(Duration::from_secs(5)))
        );
    }

    #[test]
    fn the_request_timeout_grows_with_the_document() {
        assert_eq!(request_timeout(0), Duration::from_secs(30));
        assert_eq!(request_timeout(64 << 20), Duration::from_secs(30 + 256));
    }
}

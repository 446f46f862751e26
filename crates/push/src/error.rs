//! What can go wrong with an upload, sorted by what the client should do about it, as the
//! contract says (docs/api.md, "Uploading a run"): try again later, give this run up, or stop
//! and let a person fix the token or the URL.

use std::time::Duration;

/// The kinds of failure, by what follows from them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// Worth trying again: the network or the server is down, busy, or over the token's rate
    /// (connection refused, reset or timed out, a name that does not resolve, 429, 5xx).
    Retryable,
    /// The server will never take this run (400 not a result, 413 too large, 415): give it
    /// up, and keep sending the others.
    Refused,
    /// The server refused the token (401 unknown or revoked, 403 a read token): nothing for
    /// this server goes until a person fixes it; the runs stay queued.
    Credentials,
    /// The URL does not lead to an upload API that answers as the contract says (404, a
    /// redirect, an answer that is not HTTP or not the API's): fix the URL; the runs stay
    /// queued.
    Target,
}

/// One failed upload: the server, what happened and what to do, in one line.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{server}: {what}")]
pub struct PushError {
    /// What follows from it.
    pub class: Class,
    /// The server's base URL.
    pub server: String,
    /// The HTTP status, when the server answered.
    pub status: Option<u16>,
    /// How long the server asked the client to wait (429, 503), already bounded.
    pub retry_after: Option<Duration>,
    /// What happened and what to do.
    pub what: String,
}

/// The longest wait a `Retry-After` header may impose.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(600);

/// The longest message taken from a server's answer.
const MAX_SERVER_MESSAGE: usize = 300;

impl PushError {
    /// A failure of `class` at `server`.
    pub fn new(class: Class, server: &str, what: impl Into<String>) -> PushError {
        PushError {
            class,
            server: server.to_string(),
            status: None,
            retry_after: None,
            what: what.into(),
        }
    }

    /// The error for an answer with status `status` (not 200 or 201), the server's own words
    /// `message` (from its `{"error": …}` body, if any), and its `Retry-After` header.
    pub fn from_status(
        server: &str,
        status: u16,
        message: Option<&str>,
        retry_after: Option<&str>,
        location: Option<&str>,
    ) -> PushError {
        let said = message
            .map(one_line)
            .filter(|m| !m.is_empty())
            .map_or(String::new(), |m| format!(" (\"{m}\")"));
        let wait = retry_after.and_then(parse_retry_after);
        let (class, what) = match status {
            400 => (
                Class::Refused,
                format!(
                    "the server refused the run as not a result it reads{said}; it is not sent again"
                ),
            ),
            401 => (
                Class::Credentials,
                format!(
                    "the server does not know the token, or it was revoked{said}; make one on the server with `rtlab serve token add NAME` and give it with RTLAB_TOKEN or --token-file"
                ),
            ),
            403 => (
                Class::Credentials,
                format!(
                    "the token may not upload (a read token){said}; make a push token on the server with `rtlab serve token add NAME --role push`"
                ),
            ),
            413 => (
                Class::Refused,
                format!(
                    "the run is larger than the server takes{said}; raise `rtlab serve --max-upload` there to send it"
                ),
            ),
            415 => (
                Class::Refused,
                format!("the server did not take the run as JSON{said}; it is not sent again"),
            ),
            429 => (
                Class::Retryable,
                format!(
                    "over the token's upload rate (rtlab serve --rate){said}; tried again later"
                ),
            ),
            503 => (
                Class::Retryable,
                format!(
                    "the server cannot reach its database{said}; nothing was stored, tried again later"
                ),
            ),
            408 | 500..=599 => (
                Class::Retryable,
                format!("the server answered {status}{said}; tried again later"),
            ),
            300..=399 => (
                Class::Target,
                format!(
                    "the server redirects the upload to '{}'; give the address it should go to with --to",
                    location.map(one_line).unwrap_or_default()
                ),
            ),
            404 | 405 => (
                Class::Target,
                format!(
                    "no rtlab upload API there (HTTP {status}); give `rtlab serve`'s address (with its prefix when behind a proxy) with --to"
                ),
            ),
            _ => (
                Class::Target,
                format!(
                    "the server answered {status}{said}, which the rtlab API does not; is this `rtlab serve`?"
                ),
            ),
        };
        PushError {
            class,
            server: server.to_string(),
            status: Some(status),
            retry_after: wait,
            what,
        }
    }

    /// The error for a request that got no answer (or no HTTP answer).
    pub fn from_transport(server: &str, error: &ureq::Error) -> PushError {
        use std::io::ErrorKind as K;
        let retry = |what: String| PushError::new(Class::Retryable, server, what);
        let target = |what: String| PushError::new(Class::Target, server, what);
        let later = "; tried again later";
        match error {
            ureq::Error::Io(e) => match e.kind() {
                K::ConnectionRefused => retry(format!(
                    "connection refused: nothing listens there (is `rtlab serve` running, on that port?){later}"
                )),
                K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe | K::UnexpectedEof => {
                    retry(format!(
                        "the connection was cut before the answer ({e}){later}"
                    ))
                }
                K::TimedOut | K::WouldBlock => retry(format!("no answer in time{later}")),
                _ => retry(format!("the server cannot be reached ({e}){later}")),
            },
            ureq::Error::Timeout(t) => retry(format!("no answer in time ({t}){later}")),
            ureq::Error::HostNotFound => retry(format!(
                "the host name does not resolve (DNS); check the name in --to{later}"
            )),
            ureq::Error::ConnectionFailed | ureq::Error::ConnectProxyFailed(_) => {
                retry(format!("the connection failed ({error}){later}"))
            }
            ureq::Error::Protocol(_) | ureq::Error::LargeResponseHeader(..) => target(format!(
                "the answer is not HTTP/1.1 as `rtlab serve` speaks it ({error}); is --to the right port?"
            )),
            ureq::Error::TooManyRedirects | ureq::Error::RedirectFailed => target(
                "the server redirects the upload; give the address it should go to with --to"
                    .to_string(),
            ),
            other => target(format!("the upload failed ({other})")),
        }
    }
}

/// A `Retry-After` value in seconds (the contract's form; an HTTP date is not used by
/// `rtlab serve` and is ignored), bounded by [`MAX_RETRY_AFTER`].
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    let v = value.trim();
    if v.is_empty() || v.len() > 12 || !v.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let secs: u64 = v.parse().ok()?;
    Some(Duration::from_secs(secs).min(MAX_RETRY_AFTER))
}

/// Text from outside (a server's message, a header) as one short line: control characters
/// replaced, whitespace runs made one space, at most [`MAX_SERVER_MESSAGE`] characters.
pub fn one_line(text: &str) -> String {
    let mut out = String::new();
    let mut count = 0;
    for word in text.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        for c in word.chars() {
            if count == MAX_SERVER_MESSAGE {
                out.push('…');
                return out;
            }
            out.push(if c.is_control() { '?' } else { c });
            count += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: &str = "http://lab:8080";

    fn class(status: u16) -> Class {
        PushError::from_status(S, status, None, None, None).class
    }

    #[test]
    fn statuses_are_classed_as_the_contract_says() {
        assert_eq!(class(400), Class::Refused);
        assert_eq!(class(413), Class::Refused);
        assert_eq!(class(415), Class::Refused);
        assert_eq!(class(401), Class::Credentials);
        assert_eq!(class(403), Class::Credentials);
        assert_eq!(class(429), Class::Retryable);
        assert_eq!(class(503), Class::Retryable);
        assert_eq!(class(500), Class::Retryable);
        assert_eq!(class(502), Class::Retryable);
        assert_eq!(class(408), Class::Retryable);
        assert_eq!(class(404), Class::Target);
        assert_eq!(class(301), Class::Target);
        assert_eq!(class(418), Class::Target);
        assert_eq!(class(204), Class::Target);
    }

    #[test]
    fn every_message_is_one_line_naming_the_server_and_what_to_do() {
        for status in [400, 401, 403, 404, 413, 415, 429, 500, 503, 302, 418] {
            let e = PushError::from_status(S, status, Some("bad\nthing\u{1b}[2J"), None, None)
                .to_string();
            assert!(e.starts_with("http://lab:8080: "), "{e}");
            assert!(!e.contains('\n') && !e.contains('\u{1b}'), "{e}");
        }
        let e = PushError::from_status(S, 401, None, None, None).to_string();
        assert!(e.contains("rtlab serve token add"), "{e}");
        let e = PushError::from_status(S, 403, None, None, None).to_string();
        assert!(e.contains("--role push"), "{e}");
        let e = PushError::from_status(S, 400, Some("CPU 5000 is beyond"), None, None);
        assert!(e.to_string().contains("CPU 5000 is beyond"), "{e}");
    }

    #[test]
    fn retry_after_is_read_in_seconds_and_bounded() {
        assert_eq!(parse_retry_after("7"), Some(Duration::from_secs(7)));
        assert_eq!(parse_retry_after(" 0 "), Some(Duration::ZERO));
        assert_eq!(parse_retry_after("99999999"), Some(MAX_RETRY_AFTER));
        assert_eq!(parse_retry_after("999999999999999999999"), None);
        assert_eq!(parse_retry_after("-1"), None);
        assert_eq!(parse_retry_after("Wed, 21 Oct 2026 07:28:00 GMT"), None);
        let e = PushError::from_status(S, 429, None, Some("3"), None);
        assert_eq!(e.retry_after, Some(Duration::from_secs(3)));
    }

    #[test]
    fn transport_failures_are_retryable() {
        let io = |k| ureq::Error::Io(std::io::Error::new(k, "x"));
        use std::io::ErrorKind as K;
        for e in [
            io(K::ConnectionRefused),
            io(K::ConnectionReset),
            io(K::TimedOut),
            io(K::UnexpectedEof),
            ureq::Error::HostNotFound,
            ureq::Error::ConnectionFailed,
        ] {
            let p = PushError::from_transport(S, &e);
            assert_eq!(p.class, Class::Retryable, "{e}");
            assert!(!p.to_string().contains('\n'));
        }
        assert_eq!(
            PushError::from_transport(S, &ureq::Error::TooManyRedirects).class,
            Class::Target
        );
    }

    #[test]
    fn server_text_is_cut_to_one_short_line() {
        let long = "x".repeat(1000);
        let s = one_line(&long);
        assert_eq!(s.chars().count(), MAX_SERVER_MESSAGE + 1);
        assert_eq!(one_line("a\n\n b\tc"), "a b c");
    }
}

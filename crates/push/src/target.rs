//! Where runs go: the server's base URL, `http://HOST[:PORT][/PREFIX]`, checked and written
//! in one normal form (the queue matches targets by it).
//!
//! Only plain HTTP is spoken (docs/decisions/0021): an `https://` URL is refused with what to
//! do instead, not sent in the clear.

use std::fmt;

/// The longest URL accepted.
pub const MAX_URL: usize = 2048;

/// The form a target URL is written in, for messages.
pub const URL_FORM: &str = "http://HOST[:PORT][/PREFIX], e.g. http://lab-server:8080";

/// A server's base URL, checked: plain HTTP, a host, an optional port and path prefix.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Target {
    /// `http://host[:port][/prefix]`, host in lower case, no trailing slash.
    base: String,
}

/// Why a URL is not a target.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TargetError(String);

impl Target {
    /// Checks `url` and puts it in normal form.
    pub fn parse(url: &str) -> Result<Target, TargetError> {
        let shown = shown(url);
        let bad = |why: &str| TargetError(format!("'{shown}' {why}; write {URL_FORM}"));
        if url.len() > MAX_URL {
            return Err(bad(&format!("is longer than {MAX_URL} characters")));
        }
        let Some((scheme, rest)) = url.split_once("://") else {
            return Err(bad("is not a URL"));
        };
        match scheme.to_ascii_lowercase().as_str() {
            "http" => {}
            "https" => {
                return Err(TargetError(format!(
                    "'{shown}': this rtlab pushes over plain HTTP only (TLS is not built in); reach a TLS server through a tunnel to it (ssh -L 8080:localhost:8080 HOST, then --to http://localhost:8080) or push over a private lab network"
                )));
            }
            other => {
                return Err(bad(&format!(
                    "has the scheme '{}', not http",
                    shown_part(other)
                )));
            }
        }
        let (authority, path) = match rest.find('/') {
            Some(i) => rest.split_at(i),
            None => (rest, ""),
        };
        if path.contains(['?', '#']) || authority.contains(['?', '#']) {
            return Err(bad("has a query or fragment"));
        }
        if authority.contains('@') {
            return Err(TargetError(format!(
                "the URL has a user or password in it (not shown here); give the token with RTLAB_TOKEN or --token-file instead, and write {URL_FORM}"
            )));
        }
        let host_port = check_authority(authority).map_err(|why| bad(&why))?;
        let prefix = check_prefix(path).map_err(|why| bad(&why))?;
        Ok(Target {
            base: format!("http://{host_port}{prefix}"),
        })
    }

    /// The base URL in normal form.
    pub fn as_str(&self) -> &str {
        &self.base
    }

    /// The URL of `path` (starting with `/`) under this server.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.base)
    }
}

/// `host[:port]` in normal form: a DNS name or IPv4 address (letters, digits, `-`, `.`), or
/// an IPv6 address in brackets; a port from 1 to 65535.
fn check_authority(authority: &str) -> Result<String, String> {
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (addr, after) = v6
            .split_once(']')
            .ok_or("has an IPv6 address without its closing ']'")?;
        if addr.is_empty()
            || !addr
                .chars()
                .all(|c| c.is_ascii_hexdigit() || c == ':' || c == '.')
        {
            return Err("has a malformed IPv6 address".to_string());
        }
        let port = match after {
            "" => None,
            p => Some(
                p.strip_prefix(':')
                    .ok_or("has text after the IPv6 address")?,
            ),
        };
        (format!("[{}]", addr.to_ascii_lowercase()), port)
    } else {
        let (host, port) = match authority.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        };
        if host.is_empty() {
            return Err("has no host".to_string());
        }
        let good_label = |l: &str| {
            !l.is_empty()
                && l.len() <= 63
                && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        };
        let name = host.strip_suffix('.').unwrap_or(host);
        if host.len() > 253 || !name.split('.').all(good_label) {
            return Err(format!(
                "has the host '{}', not a host name or address",
                shown_part(host)
            ));
        }
        (host.to_ascii_lowercase(), port)
    };
    match port {
        None => Ok(host),
        Some(p) => match p.parse::<u16>() {
            Ok(n) if n > 0 && p.bytes().all(|b| b.is_ascii_digit()) => Ok(format!("{host}:{n}")),
            _ => Err(format!(
                "has the port '{}', not a number from 1 to 65535",
                shown_part(p)
            )),
        },
    }
}

/// The path prefix (where `rtlab serve` is mounted behind a proxy): `/`-separated segments
/// of unreserved characters or percent escapes, without a trailing `/`; not the API's own
/// path.
fn check_prefix(path: &str) -> Result<String, String> {
    let trimmed = path.trim_end_matches('/');
    let allowed = |c: char| c.is_ascii_alphanumeric() || "-._~/%!$&'()*+,;=:".contains(c);
    if !trimmed.chars().all(allowed) {
        return Err(format!(
            "has the path '{}' with characters a URL cannot hold",
            shown_part(trimmed)
        ));
    }
    if trimmed.contains("//") {
        return Err("has an empty path segment ('//')".to_string());
    }
    let lower = trimmed.to_ascii_lowercase();
    if lower.ends_with("/api/v1") || lower.ends_with("/api/v1/runs") {
        return Err("names the API's path; give the server's address without /api/v1".to_string());
    }
    Ok(trimmed.to_string())
}

/// A URL as messages show it: control characters replaced, at most 200 characters.
fn shown(url: &str) -> String {
    let mut out: String = url
        .chars()
        .take(200)
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    if url.chars().count() > 200 {
        out.push('…');
    }
    out
}

/// A part of a URL as messages show it.
fn shown_part(part: &str) -> String {
    shown(part)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(url: &str) -> String {
        Target::parse(url)
            .unwrap_or_else(|e| panic!("{url}: {e}"))
            .to_string()
    }

    fn err(url: &str) -> String {
        Target::parse(url).expect_err(url).to_string()
    }

    #[test]
    fn plain_http_urls_are_put_in_normal_form() {
        assert_eq!(ok("http://lab:8080"), "http://lab:8080");
        assert_eq!(
            ok("HTTP://Lab.Example.org:8080/"),
            "http://lab.example.org:8080"
        );
        assert_eq!(ok("http://10.0.0.5"), "http://10.0.0.5");
        assert_eq!(ok("http://[::1]:8080/rtlab//"), "http://[::1]:8080/rtlab");
        assert_eq!(ok("http://h/a/b"), "http://h/a/b");
        assert_eq!(
            Target::parse("http://h:80/x").unwrap().url("/api/v1/runs"),
            "http://h:80/x/api/v1/runs"
        );
    }

    #[test]
    fn https_is_refused_with_what_to_do_instead() {
        let e = err("https://lab:8443");
        assert!(e.contains("plain HTTP"), "{e}");
        assert!(e.contains("tunnel"), "{e}");
        assert!(!e.contains('\n'));
    }

    #[test]
    fn malformed_urls_name_themselves_and_the_form() {
        for (url, why) in [
            ("lab:8080", "is not a URL"),
            ("ftp://lab", "scheme 'ftp'"),
            ("http://", "has no host"),
            ("http://:8080", "has no host"),
            ("http://lab:0", "port '0'"),
            ("http://lab:99999", "port '99999'"),
            ("http://lab:+80", "port '+80'"),
            ("http://lab:80x", "port '80x'"),
            ("http://la b", "host 'la b'"),
            ("http://-lab", "host '-lab'"),
            ("http://lab/x?y=1", "query"),
            ("http://lab/x#y", "fragment"),
            ("http://lab/a b", "path"),
            ("http://[::1", "closing"),
            ("http://[zz]", "IPv6"),
            ("http://lab/api/v1/runs", "without /api/v1"),
            ("http://lab/a//b", "'//'"),
        ] {
            let e = err(url);
            assert!(e.contains(why), "{url}: {e}");
            assert!(!e.contains('\n'), "{url}: {e}");
        }
        assert!(err("http://lab:8080/\u{1b}[2J").contains('?'));
        assert!(err(&format!("http://{}", "a".repeat(3000))).contains("longer"));
        let e = err("http://user:secret@lab");
        assert!(e.contains("RTLAB_TOKEN"), "{e}");
        assert!(err("gopher://lab").contains(URL_FORM));
    }
}

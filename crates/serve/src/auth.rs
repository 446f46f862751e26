//! Who may do what: the bearer token of a request checked against the store's tokens (push
//! tokens upload; reading is open unless the server protects it), and each push token's
//! upload rate kept to a token bucket.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::http::{HeaderMap, StatusCode, header};
use store::Role;

use crate::AppState;
use crate::error::ApiError;

/// The longest `Authorization` value looked at; a token is 70 characters.
const MAX_AUTHORIZATION: usize = 256;

/// What a request wants to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Need {
    /// Upload: a push token.
    Push,
    /// Read: a read or push token where reading is protected, nothing otherwise.
    Read,
}

/// The token of `Authorization: Bearer TOKEN`, if the header is there and well formed.
fn bearer(headers: &HeaderMap) -> Result<Option<&str>, ApiError> {
    let Some(value) = headers.get(header::AUTHORIZATION) else {
        return Ok(None);
    };
    let text = value
        .to_str()
        .ok()
        .filter(|t| t.len() <= MAX_AUTHORIZATION)
        .ok_or_else(|| unauthorized("the Authorization header is not a bearer token"))?;
    let (scheme, token) = text
        .split_once(' ')
        .ok_or_else(|| unauthorized("the Authorization header is not `Bearer TOKEN`"))?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(unauthorized(
            "the Authorization header is not `Bearer TOKEN`",
        ));
    }
    Ok(Some(token.trim()))
}

fn unauthorized(message: &str) -> ApiError {
    ApiError::new(StatusCode::UNAUTHORIZED, message)
}

/// Checks that the request may do `need`; returns the token's name when one was given and
/// valid.
pub(crate) async fn authorize(
    state: &Arc<AppState>,
    headers: &HeaderMap,
    need: Need,
) -> Result<Option<String>, ApiError> {
    let token = bearer(headers)?;
    if need == Need::Read && !state.config.read_token {
        return Ok(None);
    }
    let Some(token) = token else {
        return Err(unauthorized(match need {
            Need::Push => {
                "uploading needs a push token: `Authorization: Bearer TOKEN` \
                           (`rtlab serve token add NAME` makes one)"
            }
            Need::Read => "this server needs a token to read: `Authorization: Bearer TOKEN`",
        }));
    };
    let secret = token.to_string();
    let found = state.pool.with(move |s| s.check_token(&secret)).await?;
    let Some((name, role)) = found else {
        return Err(unauthorized(
            "the token is not known or was revoked; ask for a new one \
             (`rtlab serve token add NAME` on the server)",
        ));
    };
    if need == Need::Push && role != Role::Push {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            format!("token '{name}' may read but not upload; use a push token"),
        ));
    }
    Ok(Some(name))
}

/// A token bucket per push token: `rate` uploads a second on average, bursts of ten times
/// that (at least 10).
pub(crate) struct RateLimiter {
    rate: f64,
    burst: f64,
    buckets: Mutex<HashMap<String, (f64, Instant)>>,
}

impl RateLimiter {
    pub(crate) fn new(rate: f64) -> RateLimiter {
        RateLimiter {
            rate,
            burst: (rate * 10.0).max(10.0),
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// Takes one upload from `name`'s bucket at `now`; `Err(seconds)` to wait when empty.
    pub(crate) fn take(&self, name: &str, now: Instant) -> Result<(), u64> {
        let mut buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        let (tokens, last) = buckets.entry(name.to_string()).or_insert((self.burst, now));
        let elapsed = now.saturating_duration_since(*last).as_secs_f64();
        *tokens = (*tokens + elapsed * self.rate).min(self.burst);
        *last = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            return Ok(());
        }
        let wait = ((1.0 - *tokens) / self.rate).ceil();
        Err(if wait.is_finite() && wait >= 1.0 {
            wait.min(3600.0) as u64
        } else {
            1
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn bearer_tokens_are_read_and_other_schemes_refused() {
        let mut h = HeaderMap::new();
        assert_eq!(bearer(&h).unwrap(), None);
        h.insert(header::AUTHORIZATION, "Bearer rtlab_abc".parse().unwrap());
        assert_eq!(bearer(&h).unwrap(), Some("rtlab_abc"));
        h.insert(header::AUTHORIZATION, "bearer  rtlab_abc ".parse().unwrap());
        assert_eq!(bearer(&h).unwrap(), Some("rtlab_abc"));
        h.insert(header::AUTHORIZATION, "Basic dXNlcjpwdw==".parse().unwrap());
        assert_eq!(bearer(&h).unwrap_err().status, StatusCode::UNAUTHORIZED);
        h.insert(header::AUTHORIZATION, "x".repeat(300).parse().unwrap());
        assert!(bearer(&h).is_err());
    }

    #[test]
    fn the_bucket_allows_bursts_then_the_rate() {
        let limiter = RateLimiter::new(2.0);
        let t0 = Instant::now();
        for _ in 0..20 {
            limiter.take("pi", t0).unwrap();
        }
        assert_eq!(limiter.take("pi", t0), Err(1));
        // Another token has its own bucket.
        limiter.take("x86", t0).unwrap();
        // Half a second later one more is allowed (2 per second).
        limiter.take("pi", t0 + Duration::from_millis(500)).unwrap();
        assert!(limiter.take("pi", t0 + Duration::from_millis(500)).is_err());
    }
}

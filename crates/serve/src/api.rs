//! The HTTP API, version 1 (docs/api.md): uploading a run, listing and fetching runs, the
//! fleet's hosts. Every upload is read by the same bounded parser `rtlab show FILE` uses before
//! anything is stored, and stored in one transaction under its digest, so the same run
//! uploaded twice is kept once.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use axum::Json;
use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use model::measure::MeasureRun;
use serde::Serialize;
use store::{Filter, RunId};

use crate::AppState;
use crate::auth::{Need, authorize};
use crate::error::ApiError;

/// The longest label or session accepted with an upload.
pub(crate) const MAX_NAME: usize = 200;

/// The most runs one list answer holds.
pub(crate) const MAX_LIST: usize = 10_000;

/// The schema of a list answer.
pub const RUNS_SCHEMA: &str = "rtlab.runs/1";

/// The schema of the fleet answer.
pub const FLEET_SCHEMA: &str = "rtlab.fleet/1";

/// What an upload answers.
#[derive(Debug, Serialize)]
struct Uploaded {
    id: String,
    new: bool,
}

/// `POST /api/v1/runs`.
pub(crate) async fn upload(
    State(state): State<Arc<AppState>>,
    Query(params): Query<HashMap<String, String>>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    authorize_upload(&state, &headers).await?;
    let (label, session) = upload_params(&params)?;
    check_json(&headers)?;
    let text = read_body(&state, &headers, body).await?;
    let run = MeasureRun::from_json(&text)
        .map_err(|e| ApiError::bad_request(format!("not stored: {e}")))?;
    let saved = state
        .pool
        .with(move |s| s.save(&run, label.as_deref(), session.as_deref()))
        .await?;
    let status = if saved.new {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    let location = format!("/api/v1/runs/{}", saved.id);
    let mut response = (
        status,
        Json(Uploaded {
            id: saved.id.to_string(),
            new: saved.new,
        }),
    )
        .into_response();
    if let Ok(v) = HeaderValue::from_str(&location) {
        response.headers_mut().insert(header::LOCATION, v);
    }
    Ok(response)
}

/// An upload's push token checked, and its rate: `429` with `Retry-After` past it.
pub(crate) async fn authorize_upload(
    state: &Arc<AppState>,
    headers: &HeaderMap,
) -> Result<(), ApiError> {
    let name = authorize(state, headers, Need::Push)
        .await?
        .unwrap_or_default();
    if let Err(wait) = state.limiter.take(&name, Instant::now()) {
        let mut e = ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            format!("token '{name}' is over its upload rate; retry in {wait} s"),
        );
        e.retry_after = Some(wait);
        return Err(e);
    }
    Ok(())
}

/// The `label` and `session` of an upload, checked; other parameters are refused.
fn upload_params(
    params: &HashMap<String, String>,
) -> Result<(Option<String>, Option<String>), ApiError> {
    for key in params.keys() {
        if key != "label" && key != "session" {
            return Err(ApiError::bad_request(format!(
                "unknown parameter '{}'; an upload takes label and session",
                clip(key)
            )));
        }
    }
    let take = |key: &str| -> Result<Option<String>, ApiError> {
        let Some(value) = params.get(key) else {
            return Ok(None);
        };
        if value.chars().count() > MAX_NAME || value.chars().any(char::is_control) {
            return Err(ApiError::bad_request(format!(
                "{key} must be at most {MAX_NAME} characters without control characters"
            )));
        }
        Ok(Some(value.clone()))
    };
    Ok((take("label")?, take("session")?))
}

/// Refuses a body that does not say it is JSON.
pub(crate) fn check_json(headers: &HeaderMap) -> Result<(), ApiError> {
    let kind = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let essence = kind.split(';').next().unwrap_or("").trim();
    if essence.eq_ignore_ascii_case("application/json") {
        return Ok(());
    }
    Err(ApiError::new(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "an upload is a result document sent as Content-Type: application/json",
    ))
}

/// The body as text, refused past the upload limit before it is read whole.
pub(crate) async fn read_body(
    state: &AppState,
    headers: &HeaderMap,
    body: Body,
) -> Result<String, ApiError> {
    let limit = state.config.max_upload;
    let too_large = || {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "the upload is larger than this server's limit of {limit} bytes (--max-upload)"
            ),
        )
    };
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(too_large());
    }
    let bytes = axum::body::to_bytes(body, limit)
        .await
        .map_err(|_| too_large())?;
    String::from_utf8(bytes.to_vec())
        .map_err(|e| ApiError::bad_request(format!("not stored: the body is not UTF-8 text ({e})")))
}

/// At most 60 characters of `text`, for messages.
pub(crate) fn clip(text: &str) -> String {
    text.chars().take(60).collect()
}

/// The list filter of a query string, as `rtlab runs` takes it.
pub(crate) fn filter_of(params: &HashMap<String, String>) -> Result<Filter, ApiError> {
    let mut filter = Filter {
        limit: Some(1_000),
        ..Filter::default()
    };
    for (key, value) in params {
        if value.chars().count() > MAX_NAME {
            return Err(ApiError::bad_request(format!("{} is too long", clip(key))));
        }
        let v = Some(value.clone());
        match key.as_str() {
            "host" => filter.host = v,
            "kernel" => filter.kernel = v,
            "label" => filter.label = v,
            "status" => filter.status = v,
            "session" => filter.session = v,
            "since" => filter.since = v,
            "until" => filter.until = v,
            "limit" => {
                let n = value
                    .parse::<usize>()
                    .ok()
                    .filter(|n| (1..=MAX_LIST).contains(n))
                    .ok_or_else(|| {
                        ApiError::bad_request(format!(
                            "limit '{}' is not a number from 1 to {MAX_LIST}",
                            clip(value)
                        ))
                    })?;
                filter.limit = Some(n);
            }
            _ => {
                return Err(ApiError::bad_request(format!(
                    "unknown parameter '{}'; filters are host, kernel, label, status, session, \
                     since, until and limit",
                    clip(key)
                )));
            }
        }
    }
    Ok(filter)
}

/// `GET /api/v1/runs`.
pub(crate) async fn list(
    State(state): State<Arc<AppState>>,
    Query(params): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    authorize(&state, &headers, Need::Read).await?;
    let filter = filter_of(&params)?;
    let runs = state.pool.with(move |s| s.list(&filter)).await?;
    Ok(Json(serde_json::json!({ "schema": RUNS_SCHEMA, "runs": runs })).into_response())
}

/// A run id from a path, checked before it reaches the store.
pub(crate) fn run_id(text: &str) -> Result<RunId, ApiError> {
    RunId::parse(text).ok_or_else(|| {
        ApiError::not_found(format!(
            "'{}' is not a run id (12 lowercase hexadecimal digits)",
            clip(text)
        ))
    })
}

/// `GET /api/v1/runs/{id}`: the run's document.
pub(crate) async fn fetch(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    authorize(&state, &headers, Need::Read).await?;
    let id = run_id(&id)?;
    let run = state.pool.with(move |s| s.load_measure(&id)).await?;
    let mut response = run.to_json().into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    Ok(response)
}

/// `GET /api/v1/hosts`.
pub(crate) async fn hosts(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let fleet = crate::fleet::for_request(&state, &headers).await?;
    Ok(Json(serde_json::json!({ "schema": FLEET_SCHEMA, "hosts": fleet })).into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn filters_are_read_and_strangers_refused() {
        let f = filter_of(&params(&[("host", "pi"), ("limit", "5")])).unwrap();
        assert_eq!((f.host.as_deref(), f.limit), (Some("pi"), Some(5)));
        assert_eq!(filter_of(&params(&[])).unwrap().limit, Some(1_000));
        for bad in [
            ("limit", "0"),
            ("limit", "x"),
            ("limit", "10001"),
            ("path", "/etc"),
        ] {
            assert_eq!(
                filter_of(&params(&[bad])).unwrap_err().status,
                StatusCode::BAD_REQUEST
            );
        }
    }

    #[test]
    fn upload_names_are_bounded() {
        assert_eq!(
            upload_params(&params(&[("label", "RT-#2")])).unwrap(),
            (Some("RT-#2".into()), None)
        );
        assert!(upload_params(&params(&[("label", "a\nb")])).is_err());
        assert!(upload_params(&params(&[("label", &"x".repeat(201))])).is_err());
        assert!(upload_params(&params(&[("file", "/etc/passwd")])).is_err());
    }

    #[test]
    fn only_json_is_taken() {
        let mut h = HeaderMap::new();
        assert!(check_json(&h).is_err());
        h.insert(
            header::CONTENT_TYPE,
            "application/json; charset=utf-8".parse().unwrap(),
        );
        assert!(check_json(&h).is_ok());
        h.insert(header::CONTENT_TYPE, "text/plain".parse().unwrap());
        assert_eq!(
            check_json(&h).unwrap_err().status,
            StatusCode::UNSUPPORTED_MEDIA_TYPE
        );
    }

    #[test]
    fn run_ids_are_checked_before_the_store() {
        assert!(run_id("0123456789ab").is_ok());
        assert_eq!(
            run_id("../../etc").unwrap_err().status,
            StatusCode::NOT_FOUND
        );
    }
}

//! Monitor histories on the server (issue #49): boards push their intervals and incidents
//! (`POST /api/v1/monitor`, the `rtlab.monitor/1` document `rtlab monitor --push` sends and
//! `rtlab monitor history --format json` writes), programs read them back
//! (`GET /api/v1/monitor/intervals`, `/points`, `/incidents`), and people read a host's
//! long-term view (`/hosts/NAME/monitor`) and the fleet's (`/monitor`).
//!
//! An upload is read by the model's bounded parser, every interval and incident checked, and
//! kept in one transaction; each interval replaces the one of its host and start (a board
//! pushes its whole interval), so a push sent twice is kept once.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use axum::Json;
use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use model::monitor::{HistoryDoc, Incident};
use report::html::monitor::{FleetHistory, HostHistory, RANGES};
use store::RunId;

use crate::AppState;
use crate::api::{authorize_upload, check_json, clip, read_body};
use crate::auth::{Need, authorize};
use crate::error::ApiError;
use crate::pages::html;

/// The longest time a page or list reaches back: ten years.
const MAX_LAST_NS: u64 = 3_660 * 86_400 * 1_000_000_000;
/// Most incidents a page lists (the newest).
const PAGE_INCIDENTS: usize = 500;
/// Most incidents an API answer holds (the header [`TRUNCATED`] says when there were more).
const API_INCIDENTS: usize = 100_000;
/// The header of an incident list cut at [`API_INCIDENTS`].
const TRUNCATED: &str = "rtlab-truncated";

/// Now, Unix ns.
fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// The start before which a monitor interval's document is no longer kept.
pub(crate) fn detail_cut(keep_detail_ns: u64) -> i64 {
    now_ns().saturating_sub(i64::try_from(keep_detail_ns).unwrap_or(i64::MAX))
}

/// The `host` and `last` of a query (`last` defaulting to `default`); anything else refused.
fn query(
    params: &HashMap<String, String>,
    default: &str,
    takes_host: bool,
) -> Result<(Option<String>, String, i64), ApiError> {
    let mut host = None;
    let mut last = default.to_string();
    for (key, value) in params {
        match key.as_str() {
            "host" if takes_host => {
                if value.is_empty() || value.chars().count() > 256 {
                    return Err(ApiError::bad_request("host must be 1 to 256 characters"));
                }
                host = Some(value.clone());
            }
            "last" => last = value.clone(),
            other => {
                return Err(ApiError::bad_request(format!(
                    "unknown parameter '{}'; this takes {}last=TIME",
                    clip(other),
                    if takes_host { "host=NAME and " } else { "" }
                )));
            }
        }
    }
    let ns = model::nanos::parse_nanos(&last)
        .ok()
        .map(|n| n.get())
        .filter(|n| (60_000_000_000..=MAX_LAST_NS).contains(n))
        .ok_or_else(|| {
            ApiError::bad_request(format!(
                "last '{}' is not a time from 1m to 3660d (such as {})",
                clip(&last),
                RANGES.join(", ")
            ))
        })?;
    let from = now_ns().saturating_sub(i64::try_from(ns).unwrap_or(i64::MAX));
    Ok((host, last, from))
}

/// What an upload answers: an id (the document's digest, so the same push is named the same)
/// and whether anything was new, with the counts.
#[derive(serde::Serialize)]
struct Kept {
    id: String,
    new: bool,
    intervals: u64,
    incidents: u64,
}

/// `POST /api/v1/monitor`.
pub(crate) async fn upload(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    authorize_upload(&state, &headers).await?;
    check_json(&headers)?;
    let text = read_body(&state, &headers, body).await?;
    let doc = HistoryDoc::from_json(&text)
        .map_err(|e| ApiError::bad_request(format!("not stored: {e}")))?;
    let id = store::document_id(text.as_bytes());
    let cut = detail_cut(state.config.keep_detail_ns);
    let (intervals, incidents) = state
        .pool
        .with(move |s| {
            let changed = s.put_history(&doc)?;
            let hosts: HashSet<&str> = doc.intervals.iter().map(|i| i.host.as_str()).collect();
            for host in hosts {
                s.prune_detail(Some(host), cut)?;
            }
            Ok(changed)
        })
        .await?;
    let new = intervals + incidents > 0;
    let status = if new {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((
        status,
        Json(Kept {
            id,
            new,
            intervals,
            incidents,
        }),
    )
        .into_response())
}

/// `GET /api/v1/monitor/intervals?host=NAME&last=TIME`: a host's intervals, oldest first (the
/// whole documents, kept for `--keep-detail`).
pub(crate) async fn intervals(
    State(state): State<Arc<AppState>>,
    Query(params): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    authorize(&state, &headers, Need::Read).await?;
    let (host, _, from) = query(&params, "1d", true)?;
    let host = host.ok_or_else(|| ApiError::bad_request("intervals need host=NAME"))?;
    let key = host.clone();
    let rows = state
        .pool
        .with(move |s| s.intervals(&key, from, i64::MAX))
        .await?;
    Ok(Json(HistoryDoc::new(&host, rows, Vec::new())).into_response())
}

/// What `GET /api/v1/monitor/points` answers: a host's long-term figures.
#[derive(serde::Serialize)]
struct Points {
    host: String,
    points: Vec<model::monitor::HistoryPoint>,
}

/// `GET /api/v1/monitor/points?host=NAME&last=TIME`: a host's interval figures (maximum,
/// wake-ups, setup), oldest first, for as long as the history goes back.
pub(crate) async fn points(
    State(state): State<Arc<AppState>>,
    Query(params): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    authorize(&state, &headers, Need::Read).await?;
    let (host, _, from) = query(&params, "30d", true)?;
    let host = host.ok_or_else(|| ApiError::bad_request("points need host=NAME"))?;
    let key = host.clone();
    let points = state
        .pool
        .with(move |s| s.history_points(&key, from, i64::MAX))
        .await?;
    Ok(Json(Points { host, points }).into_response())
}

/// `GET /api/v1/monitor/incidents?host=NAME&last=TIME`: incidents (every host's without
/// `host`), newest first.
pub(crate) async fn incidents(
    State(state): State<Arc<AppState>>,
    Query(params): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    authorize(&state, &headers, Need::Read).await?;
    let (host, _, from) = query(&params, "7d", true)?;
    let key = host.clone();
    let mut rows = state
        .pool
        .with(move |s| s.incidents(key.as_deref(), from, i64::MAX, API_INCIDENTS + 1))
        .await?;
    // More than an answer holds: the newest, and a header saying so (never a silent cut).
    let cut = rows.len() > API_INCIDENTS;
    rows.truncate(API_INCIDENTS);
    let mut doc = HistoryDoc::new("", Vec::new(), rows);
    doc.host = host;
    let mut answer = Json(doc).into_response();
    if cut {
        answer.headers_mut().insert(
            TRUNCATED,
            axum::http::HeaderValue::from_static("newest 100000"),
        );
    }
    Ok(answer)
}

/// The incidents' runs this server holds.
fn runs_kept(s: &store::Store, incidents: &[Incident]) -> HashSet<String> {
    incidents
        .iter()
        .filter_map(|x| x.run_id.as_deref())
        .filter(|id| RunId::parse(id).is_some_and(|id| s.names(&id).is_ok()))
        .map(str::to_string)
        .collect()
}

/// `/hosts/{name}/monitor?last=TIME`: a host's long-term view.
pub(crate) async fn host_page(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    Query(params): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    authorize(&state, &headers, Need::Read).await?;
    let (_, last, from) = query(&params, "30d", false)?;
    let host = name.clone();
    let (points, incidents, kept) = state
        .pool
        .with(move |s| {
            let points = s.history_points(&host, from, i64::MAX)?;
            let incidents = s.incidents(Some(&host), from, i64::MAX, PAGE_INCIDENTS)?;
            let kept = runs_kept(s, &incidents);
            Ok((points, incidents, kept))
        })
        .await?;
    Ok(html(
        StatusCode::OK,
        report::html::monitor::host_monitor_page(&HostHistory {
            host: &name,
            last: &last,
            points: &points,
            incidents: &incidents,
            runs_kept: &kept,
        }),
    ))
}

/// `/monitor?last=TIME`: the fleet's monitored hosts and incidents.
pub(crate) async fn fleet_page(
    State(state): State<Arc<AppState>>,
    Query(params): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    authorize(&state, &headers, Need::Read).await?;
    let (_, last, from) = query(&params, "1d", false)?;
    let (hosts, incidents, kept) = state
        .pool
        .with(move |s| {
            let hosts = s.monitor_overview(from)?;
            let incidents = s.incidents(None, from, i64::MAX, PAGE_INCIDENTS)?;
            let kept = runs_kept(s, &incidents);
            Ok((hosts, incidents, kept))
        })
        .await?;
    // Silent: no interval in the last hour, when the history is at most hourly (the
    // default is 5 minutes); the page says so for each.
    let silent_after_ns = now_ns().saturating_sub(2 * 3_600 * 1_000_000_000);
    Ok(html(
        StatusCode::OK,
        report::html::monitor::fleet_monitor_page(&FleetHistory {
            last: &last,
            hosts: &hosts,
            silent_after_ns,
            incidents: &incidents,
            runs_kept: &kept,
        }),
    ))
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
    fn a_query_takes_a_bounded_time_and_a_host_where_it_may() {
        let (host, last, from) =
            query(&params(&[("host", "pi"), ("last", "7d")]), "1d", true).unwrap();
        assert_eq!((host.as_deref(), last.as_str()), (Some("pi"), "7d"));
        let week = 7 * 86_400 * 1_000_000_000i64;
        assert!((now_ns() - week - from).abs() < 60_000_000_000);
        for bad in [
            ("last", "0s"),
            ("last", "30s"),
            ("last", "4000d"),
            ("last", "x"),
            ("path", "/etc"),
        ] {
            assert_eq!(
                query(&params(&[bad]), "1d", true).unwrap_err().status,
                StatusCode::BAD_REQUEST,
                "{bad:?}"
            );
        }
        assert!(query(&params(&[("host", "pi")]), "1d", false).is_err());
    }
}

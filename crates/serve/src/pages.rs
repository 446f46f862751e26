//! The pages people read, rendered on the server with the report's renderers and needing no
//! network: the fleet (`/`), a host (`/hosts/NAME`), a run (`/runs/ID`, the report page), runs
//! side by side (`/compare?run=ID&run=ID`), and `/metrics` for Prometheus. Every page is sent
//! with a Content-Security-Policy that forbids fetching anything and with `nosniff`.

use std::sync::Arc;

use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use model::measure::MeasureRun;
use report::export::{FleetFigures, fleet_openmetrics};
use report::html::fleet::{FleetRow, HostRun};
use report::html::{ReportOptions, ReportRun, html_report};
use store::{Filter, RunId, RunSummary};

use crate::AppState;
use crate::api::{MAX_LIST, clip, run_id};
use crate::auth::{Need, authorize};
use crate::error::ApiError;
use crate::fleet::{FleetHost, audit_drift, for_request};

/// Most runs shown side by side.
const MAX_COMPARE: usize = 12;

/// An HTML answer with the headers every page carries.
pub(crate) fn html(status: StatusCode, body: String) -> Response {
    let mut response = (status, body).into_response();
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'",
        ),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}

/// `/`.
pub(crate) async fn fleet_page(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let hosts = for_request(&state, &headers).await?;
    let rows: Vec<FleetRow> = hosts.iter().map(fleet_row).collect();
    Ok(html(
        StatusCode::OK,
        report::html::fleet::fleet_page(&rows, state.config.regression_percent),
    ))
}

fn fleet_row(h: &FleetHost) -> FleetRow {
    FleetRow {
        hostname: h.hostname.clone(),
        kernel: h.last.as_ref().map(|r| r.kernel_release.clone()),
        rt_cpus: h.audit.as_ref().map(|a| {
            if a.rt_cpus.is_empty() {
                "none".to_string()
            } else {
                a.rt_cpus.clone()
            }
        }),
        last: h
            .last
            .as_ref()
            .map(|r| (r.id.to_string(), r.started_at.clone())),
        last_verdict: h.last.as_ref().map(|r| r.verdict),
        last_max_ns: h.last_latency.as_ref().and_then(|r| r.max_ns),
        worst_max_ns: h.worst_max_ns,
        runs: h.runs,
        not_complete: h.not_complete,
        audit: h.audit.as_ref().map(|a| {
            format!(
                "{} fail, {} warn, {} pass ({})",
                a.fail,
                a.warn,
                a.pass,
                a.started_at.chars().take(10).collect::<String>()
            )
        }),
        regressions: h.regressions.clone(),
        not_compared: h.not_compared.clone(),
    }
}

fn host_run(r: &RunSummary) -> HostRun {
    HostRun {
        id: r.id.to_string(),
        started_at: r.started_at.clone(),
        kernel: r.kernel_release.clone(),
        label: r.label.clone(),
        status: r.status.clone(),
        verdict: r.verdict,
        max_ns: r.max_ns,
        p99_ns: r.p99_ns,
        p9999_ns: r.p9999_ns,
        under: if r.os_noise {
            "OS noise".into()
        } else {
            r.load.clone().unwrap_or_else(|| {
                if r.imported {
                    "not recorded"
                } else {
                    "no load"
                }
                .into()
            })
        },
        os_noise: r.os_noise,
    }
}

/// `/hosts/{name}`.
pub(crate) async fn host_page(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    authorize(&state, &headers, Need::Read).await?;
    let host = name.clone();
    let (runs, audits) = state
        .pool
        .with(move |s| {
            let runs = s.list(&Filter {
                host: Some(host),
                limit: Some(MAX_LIST),
                ..Filter::default()
            })?;
            let ids: Vec<RunId> = runs.iter().map(|r| r.id.clone()).collect();
            Ok((runs, s.audits(&ids)?))
        })
        .await?;
    if runs.is_empty() {
        return Err(ApiError::not_found(format!(
            "no runs of host '{}'",
            clip(&name)
        )));
    }
    let audits = audit_drift(audits);
    let mut facts = vec![
        (
            "kernel (newest run)".to_string(),
            runs[0].kernel_release.clone(),
        ),
        ("runs".to_string(), runs.len().to_string()),
    ];
    if let Some(a) = audits.first() {
        facts.push((
            "newest audit".to_string(),
            format!(
                "{} fail, {} warn, {} pass; RT CPUs {}, with the run of {}",
                a.fail,
                a.warn,
                a.pass,
                if a.rt_cpus.is_empty() {
                    "none"
                } else {
                    &a.rt_cpus
                },
                a.started_at
            ),
        ));
    }
    let rows: Vec<HostRun> = runs.iter().map(host_run).collect();
    Ok(html(
        StatusCode::OK,
        report::html::fleet::host_page(&name, &facts, &audits, &rows),
    ))
}

/// Runs the worst-case page reads: the newest of a host's, each loaded whole.
const MAX_WORST: usize = 50;

/// `/hosts/{name}/worst`: `rtlab worst` over the host's newest runs (all CPUs together), runs
/// of one set of conditions joined. The fits run on a blocking thread, off the runtime.
pub(crate) async fn host_worst_page(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    authorize(&state, &headers, Need::Read).await?;
    let host = name.clone();
    let runs: Vec<(String, MeasureRun)> = state
        .pool
        .with(move |s| {
            let list = s.list(&Filter {
                host: Some(host),
                limit: Some(MAX_WORST),
                ..Filter::default()
            })?;
            list.iter()
                .map(|r| {
                    let name = r.label.clone().unwrap_or_else(|| r.id.to_string());
                    Ok((name, s.load_measure(&r.id)?))
                })
                .collect()
        })
        .await?;
    if runs.is_empty() {
        return Err(ApiError::not_found(format!(
            "no runs of host '{}'",
            clip(&name)
        )));
    }
    let doc = tokio::task::spawn_blocking(move || {
        let pairs: Vec<(String, &MeasureRun)> = runs.iter().map(|(n, r)| (n.clone(), r)).collect();
        let settings = evt::Settings::all_cpus();
        evt::analyse(&pairs, &settings)
    })
    .await
    .map_err(|_| ApiError::unavailable("the worst-case analysis stopped"))?;
    Ok(html(
        StatusCode::OK,
        report::worst::html::worst_html_page(&doc),
    ))
}

/// `/runs/{id}`: the report page of one run.
pub(crate) async fn run_page(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    authorize(&state, &headers, Need::Read).await?;
    let id = run_id(&id)?;
    let key = id.clone();
    let (run, label) = state.pool.with(move |s| load_named(s, &key)).await?;
    let name = label.unwrap_or_else(|| id.to_string());
    let source = format!("stored run {id}");
    let page = html_report(
        &[ReportRun {
            run: &run,
            name: &name,
            source: &source,
            key: id.as_str(),
        }],
        &ReportOptions::default(),
    )
    .page;
    Ok(html(StatusCode::OK, page))
}

/// A stored run and its label.
fn load_named(
    s: &mut store::Store,
    id: &RunId,
) -> Result<(MeasureRun, Option<String>), store::StoreError> {
    Ok((s.load_measure(id)?, s.names(id)?.0))
}

/// `/compare?run=ID&run=ID` (or `runs=ID,ID`): the comparison table, the first run the
/// baseline.
pub(crate) async fn compare_page(
    State(state): State<Arc<AppState>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let comparison = comparison(&state, query.as_deref(), &headers).await?;
    Ok(html(
        StatusCode::OK,
        report::compare::compare_html_page(&comparison),
    ))
}

/// `GET /api/v1/compare?run=ID&run=ID`: the comparison as `rtlab compare --format json`
/// writes it (rtlab.compare/1).
pub(crate) async fn compare_json(
    State(state): State<Arc<AppState>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let comparison = comparison(&state, query.as_deref(), &headers).await?;
    Ok(axum::Json(comparison).into_response())
}

/// The runs a compare query names, side by side.
async fn comparison(
    state: &Arc<AppState>,
    query: Option<&str>,
    headers: &HeaderMap,
) -> Result<report::compare::Comparison, ApiError> {
    authorize(state, headers, Need::Read).await?;
    let ids = compare_ids(query.unwrap_or(""))?;
    let loaded = state
        .pool
        .with(move |s| {
            ids.iter()
                .map(|id| load_named(s, id).map(|(run, label)| (id.clone(), run, label)))
                .collect::<Result<Vec<_>, _>>()
        })
        .await?;
    let pairs: Vec<(String, &MeasureRun)> = loaded
        .iter()
        .map(|(id, run, label)| (label.clone().unwrap_or_else(|| id.to_string()), run))
        .collect();
    Ok(report::compare::Comparison::new(&pairs))
}

/// The run ids of a compare query: `run=ID` repeated, or `runs=ID,ID`; two to
/// [`MAX_COMPARE`].
fn compare_ids(query: &str) -> Result<Vec<RunId>, ApiError> {
    let mut ids = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        match key {
            "run" => ids.push(run_id(value)?),
            "runs" => {
                for v in value
                    .split(',')
                    .flat_map(|v| v.split("%2C"))
                    .filter(|v| !v.is_empty())
                {
                    ids.push(run_id(v)?);
                }
            }
            other => {
                return Err(ApiError::bad_request(format!(
                    "unknown parameter '{}'; compare takes run=ID (repeated) or runs=ID,ID",
                    clip(other)
                )));
            }
        }
        if ids.len() > MAX_COMPARE {
            return Err(ApiError::bad_request(format!(
                "compare takes at most {MAX_COMPARE} runs"
            )));
        }
    }
    if ids.len() < 2 {
        return Err(ApiError::bad_request(
            "compare needs at least two runs, the first being the baseline: \
             /compare?run=ID&run=ID",
        ));
    }
    Ok(ids)
}

/// `/metrics`: the fleet in OpenMetrics text.
pub(crate) async fn metrics(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let hosts = for_request(&state, &headers).await?;
    let figures: Vec<FleetFigures> = hosts
        .iter()
        .map(|h| FleetFigures {
            host: h.hostname.clone(),
            runs: h.runs,
            not_complete: h.not_complete,
            last_max_ns: h.last_latency.as_ref().and_then(|r| r.max_ns),
            last_p99_99_ns: h.last_latency.as_ref().and_then(|r| r.p9999_ns),
            worst_max_ns: h.worst_max_ns,
            regressed: !h.regressions.is_empty(),
        })
        .collect();
    let mut response = fleet_openmetrics(&figures).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/openmetrics-text; version=1.0.0; charset=utf-8"),
    );
    Ok(response)
}

/// Anything else: 404, as JSON under `/api/`, as a page elsewhere.
pub(crate) async fn not_found(uri: axum::http::Uri) -> Response {
    let path = uri.path();
    if path.starts_with("/api/") {
        return ApiError::not_found("no such API path; docs/api.md lists them").into_response();
    }
    html(
        StatusCode::NOT_FOUND,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>not found</title>\
         </head><body><p>No such page. <a href=\"/\">The fleet</a>.</p></body></html>"
            .to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compare_takes_two_to_twelve_checked_ids() {
        assert_eq!(
            compare_ids("run=0123456789ab&run=0123456789ac")
                .unwrap()
                .len(),
            2
        );
        assert_eq!(
            compare_ids("runs=0123456789ab,0123456789ac").unwrap().len(),
            2
        );
        assert!(compare_ids("run=0123456789ab").is_err());
        assert!(compare_ids("run=..%2F..%2Fetc&run=0123456789ab").is_err());
        assert!(compare_ids("file=x").is_err());
        let many = vec!["run=0123456789ab"; 13].join("&");
        assert!(compare_ids(&many).is_err());
    }
}

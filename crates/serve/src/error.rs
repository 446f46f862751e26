//! What a request can be answered with when it does not succeed: a status, one line saying why
//! (JSON `{"error": …}`), and for the answers a client should retry, `Retry-After`.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// A refused or failed request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ApiError {
    pub(crate) status: StatusCode,
    pub(crate) message: String,
    /// Seconds after which a retry may succeed (429, 503).
    pub(crate) retry_after: Option<u64>,
}

impl ApiError {
    pub(crate) fn new(status: StatusCode, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            message: message.into(),
            retry_after: None,
        }
    }

    pub(crate) fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, message)
    }

    pub(crate) fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, message)
    }

    /// The database cannot be used now; nothing was stored. Retry in a few seconds.
    pub(crate) fn unavailable(message: impl Into<String>) -> ApiError {
        ApiError {
            status: StatusCode::SERVICE_UNAVAILABLE,
            message: message.into(),
            retry_after: Some(2),
        }
    }

    /// A store error as an answer: a missing run is 404, a bad filter 400, anything the
    /// database said 503 (retry), a run no engine can hold 400.
    pub(crate) fn from_store(e: store::StoreError) -> ApiError {
        use store::StoreError as E;
        match e {
            E::NotFound { spec, .. } => ApiError::not_found(format!("no run '{spec}'")),
            E::Empty { .. } => ApiError::not_found("no runs are stored yet"),
            E::Ambiguous { .. } | E::TooShort { .. } | E::BadFilter { .. } | E::Token { .. } => {
                ApiError::bad_request(e.to_string())
            }
            E::Encode { .. } => ApiError::bad_request(e.to_string()),
            E::WrongKind { .. } => ApiError::not_found(e.to_string()),
            other => ApiError::unavailable(format!("the store cannot be used now: {other}")),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::json!({ "error": self.message });
        let mut response = (self.status, axum::Json(body)).into_response();
        if let Some(secs) = self.retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        if self.status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"rtlab\""),
            );
        }
        response
    }
}

//! The JSON error body of every API answer that is not a success: `{error: code, message: text}`.
//!
//! Below the HTTP handlers and the session helpers that return it. A failure of ours carries its
//! cause, which is logged once, where the response is built (zero2prod's `SubscribeError`,
//! realworld-axum-sqlx's `http/error.rs`), and never sent to the client.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};
use serde::Serialize;

#[derive(Debug, Serialize)]
struct ErrorBody<'a> {
    error: &'a str,
    message: &'a str,
}

/// An API error with its status, a stable machine code and the text a person reads.
#[derive(Debug, thiserror::Error)]
#[error("{code}: {message}")]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    /// What went wrong on our side (`internal`): logged with the response, never answered.
    cause: Option<String>,
    /// Seconds for the `Retry-After` header (`busy`).
    retry_after: Option<u32>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            cause: None,
            retry_after: None,
        }
    }

    /// The server is too busy for this request just now: 503 with `Retry-After`, at once, rather
    /// than a queue that grows without end.
    pub fn busy() -> Self {
        Self {
            retry_after: Some(1),
            ..Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "busy",
                "We are very busy right now. Please try again in a moment.",
            )
        }
    }

    pub fn not_found() -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", "Not found")
    }

    pub fn bad_request(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, message)
    }

    /// Keeps what went wrong on our side for the log (never answered).
    pub fn with_cause(mut self, cause: impl Into<String>) -> Self {
        self.cause = Some(cause.into());
        self
    }

    /// A failure of ours: answered without internals; `context` and `error` are logged when the
    /// response is built.
    pub fn internal(context: &str, error: impl std::fmt::Display) -> Self {
        Self {
            cause: Some(format!("{context}: {error}")),
            ..Self::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                "Something went wrong on our side. Please try again.",
            )
        }
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        self.status
    }

    fn error_response(&self) -> HttpResponse {
        if let Some(cause) = &self.cause {
            tracing::error!(code = self.code, "{cause}");
        }
        let mut response = HttpResponse::build(self.status);
        if let Some(seconds) = self.retry_after {
            response.insert_header((actix_web::http::header::RETRY_AFTER, seconds.to_string()));
        }
        response.json(ErrorBody {
            error: self.code,
            message: &self.message,
        })
    }
}

/// `.context("cannot read a checkout")`: a failure of ours as an [`ApiError::internal`] with what
/// was being done, logged once when the response is built.
pub trait Context<T> {
    fn context(self, doing: &str) -> Result<T, ApiError>;
}

impl<T, E: std::fmt::Display> Context<T> for Result<T, E> {
    fn context(self, doing: &str) -> Result<T, ApiError> {
        self.map_err(|error| ApiError::internal(doing, error))
    }
}

/// Turns a malformed JSON body into the same error shape (instead of actix's plain text).
pub fn json_error_handler(
    err: actix_web::error::JsonPayloadError,
    _req: &actix_web::HttpRequest,
) -> actix_web::Error {
    use actix_web::error::JsonPayloadError;
    let api_error = match &err {
        JsonPayloadError::OverflowKnownLength { .. } | JsonPayloadError::Overflow { .. } => {
            ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "payload_too_large",
                "The request is too large.",
            )
        }
        JsonPayloadError::ContentType => ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "Send the request as JSON (Content-Type: application/json).",
        ),
        _ => ApiError::bad_request(
            "invalid_json",
            format!("The request is not valid JSON: {err}"),
        ),
    };
    api_error.into()
}

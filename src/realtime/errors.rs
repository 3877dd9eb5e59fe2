//! The answers to refused requests at `/socket.io/`: the Engine.IO errors with the reference
//! implementation's codes and texts, and this server's own refusals.

use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use actix_web::http::header;

/// The Engine.IO errors, with the reference implementation's codes and texts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EngineError {
    UnknownTransport,
    UnknownSid,
    BadHandshakeMethod,
    BadRequest,
    Forbidden,
    UnsupportedProtocolVersion,
    PayloadTooLarge,
}

impl EngineError {
    pub fn response(self) -> HttpResponse {
        let (status, code, message) = match self {
            Self::UnknownTransport => (StatusCode::BAD_REQUEST, 0, "Transport unknown"),
            Self::UnknownSid => (StatusCode::BAD_REQUEST, 1, "Session ID unknown"),
            Self::BadHandshakeMethod => (StatusCode::BAD_REQUEST, 2, "Bad handshake method"),
            Self::BadRequest => (StatusCode::BAD_REQUEST, 3, "Bad request"),
            Self::Forbidden => (StatusCode::FORBIDDEN, 4, "Forbidden"),
            Self::UnsupportedProtocolVersion => {
                (StatusCode::BAD_REQUEST, 5, "Unsupported protocol version")
            }
            Self::PayloadTooLarge => {
                return HttpResponse::PayloadTooLarge().finish();
            }
        };
        HttpResponse::build(status).json(serde_json::json!({"code": code, "message": message}))
    }
}

/// Why a request to `/socket.io/` is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    Engine(EngineError),
    /// The server is stopping: no new connections.
    Stopping,
    /// A new connection past `max_connections`.
    AtCapacity,
    /// A WebSocket asked for off `/socket.io/`.
    NotFound,
}

impl From<EngineError> for Refusal {
    fn from(error: EngineError) -> Self {
        Self::Engine(error)
    }
}

impl Refusal {
    pub fn response(self) -> HttpResponse {
        match self {
            Self::Engine(error) => error.response(),
            Self::Stopping => HttpResponse::ServiceUnavailable().finish(),
            Self::AtCapacity => HttpResponse::ServiceUnavailable()
                .insert_header((header::RETRY_AFTER, "5"))
                .json(serde_json::json!({
                    "code": "at_capacity",
                    "message": "The server is busy. Please try again in a moment.",
                })),
            Self::NotFound => HttpResponse::NotFound().finish(),
        }
    }
}

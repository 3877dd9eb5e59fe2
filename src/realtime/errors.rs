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
    /// The reference's code and text.
    fn code_and_message(self) -> (u8, &'static str) {
        match self {
            Self::UnknownTransport => (0, "Transport unknown"),
            Self::UnknownSid => (1, "Session ID unknown"),
            Self::BadHandshakeMethod => (2, "Bad handshake method"),
            Self::BadRequest | Self::PayloadTooLarge => (3, "Bad request"),
            Self::Forbidden => (4, "Forbidden"),
            Self::UnsupportedProtocolVersion => (5, "Unsupported protocol version"),
        }
    }

    /// The answer to an HTTP request: JSON `{code, message}`, as engine.io's `abortRequest`.
    pub fn response(self) -> HttpResponse {
        let status = match self {
            Self::Forbidden => StatusCode::FORBIDDEN,
            Self::PayloadTooLarge => return HttpResponse::PayloadTooLarge().finish(),
            _ => StatusCode::BAD_REQUEST,
        };
        let (code, message) = self.code_and_message();
        HttpResponse::build(status).json(serde_json::json!({"code": code, "message": message}))
    }

    /// The answer to a WebSocket upgrade request: 400 with the message as `text/html`, as
    /// engine.io's `abortUpgrade` writes it whatever the error.
    pub fn upgrade_response(self) -> HttpResponse {
        HttpResponse::BadRequest()
            .content_type("text/html")
            .body(self.code_and_message().1)
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
    /// A new connection from an address that holds `max_connections_per_address` already.
    TooManyFromAddress,
    /// A WebSocket asked for off `/socket.io/`.
    NotFound,
}

impl From<EngineError> for Refusal {
    fn from(error: EngineError) -> Self {
        Self::Engine(error)
    }
}

impl Refusal {
    /// The answer to a WebSocket upgrade request (engine.io's form for its own errors).
    pub fn upgrade_response(self) -> HttpResponse {
        match self {
            Self::Engine(error) => error.upgrade_response(),
            other => other.response(),
        }
    }

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
            Self::TooManyFromAddress => HttpResponse::TooManyRequests()
                .insert_header((header::RETRY_AFTER, "5"))
                .json(serde_json::json!({
                    "code": "too_many_connections",
                    "message": "Too many connections from your network. Please close a few tabs and try again.",
                })),
            Self::NotFound => HttpResponse::NotFound().finish(),
        }
    }
}

//! The HTTP entry point at `/socket.io/`: each request checked in the reference's order and
//! dispatched: a new polling session, a GET or POST for an existing one (found in the session
//! table). WebSocket upgrades arrive through [`super::upgrade`], which checks them here too.

use std::net::SocketAddr;
use std::sync::Arc;

use actix_web::http::Method;
use actix_web::http::header::{self, ContentType, HeaderValue};
use actix_web::{HttpRequest, HttpResponse, web};

use super::RealtimeServer;
use super::connection::Connection;
use super::engineio::{self, Packet};
use super::errors::{EngineError, Refusal};
use super::payload::DisconnectReason;
use super::polling;
use super::session_messages::{Deliver, Fail, Poll, PollingHandle};
use super::state::AddressPlace;

impl RealtimeServer {
    /// The `/socket.io/` resource, to add to an actix-web `App`.
    pub fn service(&self) -> actix_web::Resource {
        web::resource("/socket.io/")
            .app_data(web::Data::new(self.clone()))
            .default_service(web::to(endpoint))
    }
}

#[derive(Debug, Default)]
struct EngineQuery {
    eio: Option<String>,
    transport: Option<String>,
    sid: Option<String>,
}

impl EngineQuery {
    fn parse(query: &str) -> Self {
        let mut parsed = Self::default();
        for (key, value) in url::form_urlencoded::parse(query.as_bytes()) {
            match &*key {
                "EIO" => parsed.eio = Some(value.into_owned()),
                "transport" => parsed.transport = Some(value.into_owned()),
                "sid" => parsed.sid = Some(value.into_owned()),
                _ => {}
            }
        }
        parsed
    }
}

/// What a request to `/socket.io/` asks for, once it passed the reference's checks.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Admitted {
    /// A new connection, with its place among its address's.
    OpenWebSocket(AddressPlace),
    /// A WebSocket that takes over the polling session `sid`.
    UpgradeWebSocket(String),
    OpenPolling(AddressPlace),
    Poll(String),
    Post(String),
    /// Another method for the polling session `sid` (PUT, DELETE...).
    OtherMethod(String),
}

impl RealtimeServer {
    /// Checks a request to `/socket.io/` from an allowed origin in the reference's order: its
    /// transport, sid, method and protocol version, and whether a new connection is welcome now
    /// (from this client too: `headers` and `peer` give its address). The error is the answer to
    /// give instead.
    pub(crate) fn admit(
        &self,
        method: &Method,
        query: &str,
        headers: &header::HeaderMap,
        peer: Option<SocketAddr>,
    ) -> Result<Admitted, Refusal> {
        let query = EngineQuery::parse(query);
        let websocket = match query.transport.as_deref() {
            Some("polling") => false,
            Some("websocket") => true,
            _ => return Err(EngineError::UnknownTransport.into()),
        };
        match query.sid {
            None => {
                if method != Method::GET {
                    return Err(EngineError::BadHandshakeMethod.into());
                }
                if query.eio.as_deref() != Some("4") {
                    return Err(EngineError::UnsupportedProtocolVersion.into());
                }
                if self.state().is_stopping() {
                    // Clients retry, and reach another process or this one restarted.
                    return Err(Refusal::Stopping);
                }
                if self
                    .config()
                    .max_connections
                    .is_some_and(|max| self.connection_count() >= max)
                {
                    // Refused at once while the server can still answer, rather than left
                    // waiting unaccepted once it runs out of open files; clients retry later.
                    return Err(Refusal::AtCapacity);
                }
                let place = self
                    .state()
                    .take_address_place(self.state().client_address(headers, peer))
                    .ok_or(Refusal::TooManyFromAddress)?;
                Ok(if websocket {
                    Admitted::OpenWebSocket(place)
                } else {
                    Admitted::OpenPolling(place)
                })
            }
            Some(sid) if websocket => Ok(Admitted::UpgradeWebSocket(sid)),
            Some(sid) => match *method {
                Method::GET => Ok(Admitted::Poll(sid)),
                Method::POST => Ok(Admitted::Post(sid)),
                _ => Ok(Admitted::OtherMethod(sid)),
            },
        }
    }
}

/// Every HTTP request to `/socket.io/`. WebSocket upgrades never reach it: the HTTP layer hands
/// them to [`super::upgrade`] before routing, so a WebSocket request here is a bad one.
async fn endpoint(
    req: HttpRequest,
    body: web::Payload,
    server: web::Data<RealtimeServer>,
) -> HttpResponse {
    let origin = req
        .headers()
        .get(header::ORIGIN)
        .and_then(|value| value.to_str().ok());
    if !server.config().origins.allows(origin) {
        return EngineError::Forbidden.response();
    }
    let mut response = if req.method() == Method::OPTIONS {
        HttpResponse::NoContent()
            .insert_header((header::ACCESS_CONTROL_ALLOW_METHODS, "GET, POST"))
            .insert_header((header::ACCESS_CONTROL_ALLOW_HEADERS, "content-type"))
            .finish()
    } else {
        match server.admit(
            req.method(),
            req.query_string(),
            req.headers(),
            req.peer_addr(),
        ) {
            Err(refused) => refused.response(),
            Ok(Admitted::OpenPolling(place)) => open_polling(&server, &req, place),
            Ok(Admitted::Poll(sid)) => poll(&server, &sid).await,
            Ok(Admitted::Post(sid)) => post(&server, &sid, body, req.headers()).await,
            // The reference's polling transport answers other methods 500, the session going on.
            Ok(Admitted::OtherMethod(sid)) => match session(&server, &sid) {
                Ok(_) => HttpResponse::InternalServerError().finish(),
                Err(error) => error.response(),
            },
            Ok(Admitted::OpenWebSocket(_) | Admitted::UpgradeWebSocket(_)) => {
                EngineError::BadRequest.response()
            }
        }
    };
    // Browsers on an allowed origin other than ours may read the answers.
    if let Some(origin) = origin.and_then(|o| HeaderValue::from_str(o).ok()) {
        let headers = response.headers_mut();
        headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        headers.insert(
            header::ACCESS_CONTROL_ALLOW_CREDENTIALS,
            HeaderValue::from_static("true"),
        );
        headers.insert(header::VARY, HeaderValue::from_static("Origin"));
    }
    response
}

fn payload_response(payload: String) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/plain; charset=UTF-8")
        .body(payload)
}

/// The handshake GET: a new session, answered with its open packet.
fn open_polling(server: &RealtimeServer, req: &HttpRequest, place: AddressPlace) -> HttpResponse {
    let state = server.state();
    let conn = Connection::new(
        state.clone(),
        state.handshake(req.headers(), req.peer_addr()),
        place,
    );
    let sid = conn.sid.clone();
    let open = conn.open_packet(&["websocket"]).encode_text();
    let sessions = server.sessions();
    let limit = server.config().max_buffered_bytes;
    sessions.register(sid, polling::start(sessions.clone(), conn, limit));
    payload_response(open)
}

/// The polling session `sid`, or the error for a sid that has none.
fn session(server: &RealtimeServer, sid: &str) -> Result<Arc<PollingHandle>, EngineError> {
    server
        .sessions()
        .get(sid)
        .ok_or(if server.state().is_live(sid) {
            // The connection moved to a WebSocket.
            EngineError::BadRequest
        } else {
            EngineError::UnknownSid
        })
}

async fn poll(server: &RealtimeServer, sid: &str) -> HttpResponse {
    let transport = match session(server, sid) {
        Ok(transport) => transport,
        Err(error) => return error.response(),
    };
    match transport.poll.send(Poll).await {
        Ok(Ok(receiver)) => match receiver.await {
            Ok(payload) => payload_response(payload),
            // The session ended without a word.
            Err(_) => payload_response(Packet::Close.encode_text()),
        },
        Ok(Err(error)) => error.response(),
        Err(_) => EngineError::UnknownSid.response(),
    }
}

async fn post(
    server: &RealtimeServer,
    sid: &str,
    body: web::Payload,
    headers: &header::HeaderMap,
) -> HttpResponse {
    let transport = match session(server, sid) {
        Ok(transport) => transport,
        Err(error) => return error.response(),
    };
    // Engine.IO v4 sends binary as base64 text: a binary body ends the session, as in the
    // reference ("invalid content").
    if headers
        .get(header::CONTENT_TYPE)
        .is_some_and(|value| value.as_bytes() == b"application/octet-stream")
    {
        transport
            .fail
            .do_send(Fail(DisconnectReason::TransportError));
        return HttpResponse::BadRequest().finish();
    }
    let limit = server.config().max_payload;
    let bytes = match body.to_bytes_limited(limit).await {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(_)) => {
            transport
                .fail
                .do_send(Fail(DisconnectReason::TransportError));
            return EngineError::BadRequest.response();
        }
        // Refused, but the session goes on (as in the reference).
        Err(_) => return EngineError::PayloadTooLarge.response(),
    };
    let packets = std::str::from_utf8(&bytes)
        .ok()
        .and_then(|text| engineio::decode_client_payload(text).ok());
    let Some(packets) = packets else {
        transport.fail.do_send(Fail(DisconnectReason::ParseError));
        return EngineError::BadRequest.response();
    };
    match transport.deliver.send(Deliver(packets)).await {
        Ok(()) => HttpResponse::Ok()
            .insert_header(ContentType::html())
            .body("ok"),
        Err(_) => EngineError::UnknownSid.response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::realtime::RealtimeConfig;

    #[test]
    fn an_address_place_is_counted_as_it_is_checked() {
        let server = RealtimeServer::builder(RealtimeConfig {
            max_connections_per_address: Some(3),
            ..RealtimeConfig::default()
        })
        .build();
        let peer: SocketAddr = "192.0.2.7:4000".parse().expect("address");
        let handshake = "EIO=4&transport=websocket";
        let admit = || {
            server.admit(
                &Method::GET,
                handshake,
                &header::HeaderMap::new(),
                Some(peer),
            )
        };
        // A burst: each handshake admitted before any of them has opened its connection.
        let admitted: Vec<Admitted> = (0..10).filter_map(|_| admit().ok()).collect();
        assert_eq!(admitted.len(), 3, "{admitted:?}");
        assert!(matches!(admit(), Err(Refusal::TooManyFromAddress)));
        // A handshake that never became a connection gives its place back.
        drop(admitted);
        assert!(admit().is_ok());
        let other: SocketAddr = "192.0.2.8:4000".parse().expect("address");
        let admit_other = server.admit(
            &Method::GET,
            handshake,
            &header::HeaderMap::new(),
            Some(other),
        );
        assert!(admit_other.is_ok(), "another address has its own places");
    }

    #[test]
    fn the_query_gives_version_transport_and_sid() {
        let query = EngineQuery::parse("EIO=4&transport=polling&t=Nx1&sid=a%2Bb");
        assert_eq!(query.eio.as_deref(), Some("4"));
        assert_eq!(query.transport.as_deref(), Some("polling"));
        assert_eq!(query.sid.as_deref(), Some("a+b"));
    }
}

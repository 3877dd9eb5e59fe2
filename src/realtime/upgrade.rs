//! WebSocket upgrades, taken off actix-http's HTTP/1 dispatcher.
//!
//! actix-http hands every request that asks for `Upgrade: websocket` to the service
//! [`RealtimeServer::upgrade_service`] gives, with the socket, before any routing
//! ([`RealtimeServer::http_server`] builds an HTTP server that does). Here the request
//! gets the same checks as at the HTTP endpoint; an accepted one gets its `101` and its connection
//! actor, which reads and writes the socket itself ([`super::wire`]). The dispatcher and its two
//! 8 KiB buffers are gone from then on, and so is the dispatcher's task: the socket is written by
//! a task of its own, the size of what it does. As the HTTP server no longer counts these
//! connections, a stopping application waits for them itself
//! ([`RealtimeServer::wait_for_websockets`]).

use std::convert::Infallible;
use std::fmt;
use std::io;
use std::net::TcpListener;
use std::time::Duration;

use actix_codec::{Framed, FramedParts};
use actix_http::body::{BodySize, MessageBody};
use actix_http::h1::{self, Message};
use actix_http::{ConnectionType, Extensions, HttpService, Request, Response, ws};
use actix_server::ServerBuilder;
use actix_service::{
    IntoServiceFactory, Service, ServiceFactory, ServiceFactoryExt, fn_service, map_config,
};
use actix_web::HttpResponse;
use actix_web::dev::AppConfig;
use actix_web::http::header;
use bytes::Bytes;
use futures_util::SinkExt;
use tokio::net::TcpStream;

use super::RealtimeServer;
use super::endpoint::Admitted;
use super::errors::{EngineError, Refusal};
use super::websocket;
use super::wire::{FrameReader, frame_writer};

/// Where Engine.IO is served.
const PATH: &str = "/socket.io/";

/// How long a closed WebSocket's last frames may take to reach a client that stopped reading.
const CLOSE_LINGER: Duration = Duration::from_secs(5);

/// The socket of an upgrade request, as actix-http hands it over.
pub type UpgradeRequest = (Request, Framed<TcpStream, h1::Codec>);

impl RealtimeServer {
    /// actix-web's `HttpServer` with its default settings but TCP_NODELAY, assembled from its
    /// parts with one more: WebSocket upgrades are handed to this server with their socket.
    /// `app` makes the application for each worker (as `HttpServer::new` takes it); `on_connect`
    /// sees each new connection's extensions. Set the builder's shutdown and signals, then run it.
    pub fn http_server<F, I, S, B>(
        &self,
        listener: TcpListener,
        app: F,
        on_connect: impl Fn(&mut Extensions) + Clone + Send + 'static,
    ) -> io::Result<ServerBuilder>
    where
        F: Fn() -> I + Send + Clone + 'static,
        I: IntoServiceFactory<S, Request>,
        S: ServiceFactory<Request, Config = AppConfig> + 'static,
        S::Error: Into<actix_web::Error> + 'static,
        S::InitError: fmt::Debug,
        S::Response: Into<Response<B>> + 'static,
        <S::Service as Service<Request>>::Future: 'static,
        S::Service: 'static,
        B: MessageBody + 'static,
    {
        let local_addr = listener.local_addr()?;
        let builder = ServerBuilder::default();
        let graceful = builder.graceful_shutdown_signal();
        let upgrades = self.clone();
        builder.listen("http", listener, move || {
            let graceful = graceful.clone();
            let on_connect = on_connect.clone();
            // Nothing here reads the app config's host or address (`url_for`,
            // `connection_info`), so the default does.
            let app = map_config(
                app()
                    .into_factory()
                    .map_err(|error| error.into().error_response()),
                |()| AppConfig::default(),
            );
            HttpService::build()
                .graceful_shutdown_signal(move || {
                    let graceful = graceful.clone();
                    async move { graceful.notified().await }
                })
                .client_request_timeout(Duration::from_secs(5))
                .client_disconnect_timeout(Duration::from_secs(1))
                // Real-time frames are small writes, often two in a row (an acknowledgement,
                // then an event): with Nagle's algorithm on (actix-web's default leaves it), the
                // second waits for the client's delayed ACK.
                .tcp_nodelay(true)
                .local_addr(local_addr)
                .on_connect_ext(move |_: &TcpStream, extensions| on_connect(extensions))
                .upgrade(upgrades.upgrade_service())
                .finish(app)
                .tcp()
        })
    }

    /// The service to give actix-http's `HttpServiceBuilder::upgrade`: it answers every WebSocket
    /// upgrade request, on any path.
    pub fn upgrade_service(
        &self,
    ) -> impl ServiceFactory<
        UpgradeRequest,
        Config = (),
        Response = (),
        Error = Infallible,
        InitError = (),
    > + use<> {
        let server = self.clone();
        fn_service(move |(req, framed): UpgradeRequest| {
            let server = server.clone();
            async move {
                if let Err(error) = accept(server, req, framed).await {
                    tracing::debug!(%error, "WebSocket upgrade not answered");
                }
                Ok::<(), Infallible>(())
            }
        })
    }
}

async fn accept(
    server: RealtimeServer,
    mut req: Request,
    mut framed: Framed<TcpStream, h1::Codec>,
) -> io::Result<()> {
    let transport = match admit(&server, &req) {
        Ok(transport) => transport,
        Err(refused) => return answer(&mut framed, refused.upgrade_response()).await,
    };
    let switching = ws::handshake_response(req.head())
        .message_body(())
        .map_err(|error| io::Error::other(error.to_string()))?;
    // The connection's extensions (its place in the open-connections count) live as long as the
    // WebSocket; the rest of the request goes now.
    let connection_data = req.take_conn_data();
    drop(req);
    framed
        .send(Message::Item((switching, BodySize::None)))
        .await?;
    let FramedParts { io, read_buf, .. } = framed.into_parts();
    let (read, write) = io.into_split();
    let (writer, flush) = frame_writer(write, server.config().max_buffered_bytes);
    let reader = FrameReader::new(read, read_buf, transport.max_payload()).returning_to(&flush);
    let open = server.state().websocket_opened();
    transport.run(reader, writer);
    // The dispatcher's task ends here; the one writing the socket is a few hundred bytes.
    actix::spawn(async move {
        flush.run(CLOSE_LINGER).await;
        drop((open, connection_data));
    });
    Ok(())
}

/// The connection actor for an acceptable WebSocket request, or the answer that refuses it.
fn admit(server: &RealtimeServer, req: &Request) -> Result<websocket::WebSocketTransport, Refusal> {
    if req.path() != PATH {
        return Err(Refusal::NotFound);
    }
    let origin = req
        .head()
        .headers
        .get(header::ORIGIN)
        .and_then(|value| value.to_str().ok());
    if !server.config().origins.allows(origin) {
        return Err(EngineError::Forbidden.into());
    }
    let admitted = server.admit(
        req.method(),
        req.uri().query().unwrap_or_default(),
        &req.head().headers,
        req.peer_addr(),
    )?;
    if ws::verify_handshake(req.head()).is_err() {
        return Err(EngineError::BadRequest.into());
    }
    match admitted {
        Admitted::OpenWebSocket(place) => Ok(websocket::open(
            server,
            server
                .state()
                .handshake(&req.head().headers, req.peer_addr()),
            place,
        )),
        Admitted::UpgradeWebSocket(sid) => match websocket::upgrade(server, &sid) {
            Ok(transport) => Ok(transport),
            // A session that upgraded already (or started on a WebSocket), or is upgrading now:
            // the reference accepts the WebSocket and closes it at once (engine.io's
            // onWebSocket), and the session goes on.
            Err(EngineError::UnknownSid | EngineError::BadRequest)
                if server.state().is_live(&sid) =>
            {
                Ok(websocket::closed_at_once())
            }
            Err(error) => Err(error.into()),
        },
        // A WebSocket asked for with `transport=polling`: the reference accepts it and closes it
        // at once (polling does not take upgraded requests), once the sid checks passed.
        Admitted::Poll(sid) | Admitted::Post(sid) | Admitted::OtherMethod(sid)
            if !server.state().is_live(&sid) =>
        {
            Err(EngineError::UnknownSid.into())
        }
        Admitted::OpenPolling(_)
        | Admitted::Poll(_)
        | Admitted::Post(_)
        | Admitted::OtherMethod(_) => Ok(websocket::closed_at_once()),
    }
}

/// Writes `response` and ends the connection.
async fn answer(
    framed: &mut Framed<TcpStream, h1::Codec>,
    response: HttpResponse,
) -> io::Result<()> {
    let (mut head, body) = Response::from(response).into_parts();
    let body = body.try_into_bytes().unwrap_or_else(|_| Bytes::new());
    head.head_mut().set_connection_type(ConnectionType::Close);
    framed
        .send(Message::Item((head, BodySize::Sized(body.len() as u64))))
        .await?;
    if !body.is_empty() {
        framed.send(Message::Chunk(Some(body))).await?;
    }
    framed.send(Message::Chunk(None)).await?;
    Ok(())
}

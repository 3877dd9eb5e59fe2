//! A Socket.IO client over WebSocket, as small as a load generator needs: tokio-tungstenite's
//! client on a TCP socket bound to a chosen local address (so thousands of connections spread
//! over 127.0.0.x and never run out of source ports), and the product's own Engine.IO and
//! Socket.IO codecs. Pings are answered as they come.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use tokio::net::{TcpSocket, TcpStream};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{self, Message, http};

use crate::realtime::{engineio, socketio};

/// Largest frame accepted from the server (its own `max_payload` default).
const MAX_FRAME: usize = 1024 * 1024;
/// Each connection's read buffer. tungstenite allocates it up front (128 KiB by default), and
/// the generator holds up to 19,000 connections; the frames it reads are a few hundred bytes.
const READ_BUFFER: usize = 4 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("connect: {0}")]
    Connect(std::io::Error),
    #[error("the upgrade was refused: {0}")]
    Upgrade(String),
    #[error("the namespace was refused: {0}")]
    Refused(String),
    #[error("the connection closed")]
    Closed,
    #[error("protocol: {0}")]
    Protocol(String),
    #[error("timed out waiting for {0}")]
    Timeout(&'static str),
    #[error("the reply failed: {0}")]
    Reply(String),
}

impl ClientError {
    /// A short name for the error report.
    pub fn kind(&self) -> &'static str {
        match self {
            ClientError::Connect(_) => "connect",
            ClientError::Upgrade(_) => "upgrade",
            ClientError::Refused(_) => "refused",
            ClientError::Closed => "closed",
            ClientError::Protocol(_) => "protocol",
            ClientError::Timeout(_) => "timeout",
            ClientError::Reply(_) => "reply_error",
        }
    }
}

/// How long a closing client waits for the server to close the connection.
const CLOSE_WAIT: Duration = Duration::from_secs(2);

/// Where to connect: the server's address and the `Host` header.
#[derive(Debug, Clone)]
pub struct Target {
    pub address: SocketAddr,
    pub host: String,
}

/// A Socket.IO socket of one namespace.
pub struct Client {
    socket: WebSocketStream<TcpStream>,
    namespace: String,
    next_ack: u64,
    /// Which process the balancer chose (its `helpnow_server` cookie), when one did.
    server: Option<String>,
}

impl Client {
    /// Opens a WebSocket from `local`, then joins `namespace` with `auth`. `cookie` goes with the
    /// upgrade request (the member scenario's session).
    pub async fn connect(
        target: &Target,
        local: IpAddr,
        namespace: &str,
        auth: &Value,
        cookie: Option<&str>,
        patience: Duration,
    ) -> Result<Self, ClientError> {
        let (socket, server) = tokio::time::timeout(patience, open(target, local, cookie))
            .await
            .map_err(|_| ClientError::Timeout("the upgrade"))??;
        let mut client = Self {
            socket,
            namespace: namespace.to_owned(),
            next_ack: 0,
            server,
        };
        let open = tokio::time::timeout(patience, client.next_engine_message())
            .await
            .map_err(|_| ClientError::Timeout("the open packet"))??;
        if !matches!(open, EngineEvent::Open) {
            return Err(ClientError::Protocol("no open packet".into()));
        }
        let connect = socketio::Packet {
            kind: socketio::PacketType::Connect,
            namespace: namespace.to_owned(),
            ack_id: None,
            data: Some(auth.clone()),
            attachments: 0,
        };
        client.send_packet(&connect).await?;
        let joined = tokio::time::timeout(patience, async {
            loop {
                let packet = client.next_packet().await?;
                match packet.kind {
                    socketio::PacketType::Connect => return Ok(()),
                    socketio::PacketType::ConnectError => {
                        let data = packet.data.unwrap_or(Value::Null);
                        let reason = data
                            .get("data")
                            .and_then(|d| d.get("code"))
                            .or_else(|| data.get("message"))
                            .map(Value::to_string)
                            .unwrap_or_else(|| data.to_string());
                        return Err(ClientError::Refused(reason));
                    }
                    _ => {}
                }
            }
        })
        .await
        .map_err(|_| ClientError::Timeout("the namespace"))?;
        joined.map(|()| client)
    }

    /// The process the balancer sent this connection to (its `helpnow_server` cookie).
    pub fn server(&self) -> Option<&str> {
        self.server.as_deref()
    }

    async fn send_packet(&mut self, packet: &socketio::Packet) -> Result<(), ClientError> {
        let text =
            engineio::Packet::Message(engineio::Message::Text(packet.encode())).encode_text();
        self.send_text(text).await
    }

    async fn send_text(&mut self, text: String) -> Result<(), ClientError> {
        self.socket
            .send(Message::text(text))
            .await
            .map_err(|error| ClientError::Protocol(error.to_string()))
    }

    /// Emits `event` with `data`, asking for an acknowledgement; returns its id.
    pub async fn emit_with_ack(&mut self, event: &str, data: Value) -> Result<u64, ClientError> {
        let id = self.next_ack;
        self.next_ack += 1;
        let packet = socketio::Packet::event(&self.namespace, event, vec![data], Some(id), 0);
        self.send_packet(&packet).await?;
        Ok(id)
    }

    /// The next Socket.IO packet of this namespace (pings are answered on the way).
    pub async fn next_packet(&mut self) -> Result<socketio::Packet, ClientError> {
        loop {
            if let EngineEvent::Message(text) = self.next_engine_message().await? {
                let packet = socketio::Packet::decode(&text)
                    .map_err(|error| ClientError::Protocol(error.to_string()))?;
                if packet.namespace == self.namespace {
                    return Ok(packet);
                }
            }
        }
    }

    /// Reads until the connection closes, answering pings: what an idle client does.
    pub async fn hold(&mut self) -> ClientError {
        loop {
            if let Err(error) = self.next_engine_message().await {
                return error;
            }
        }
    }

    /// Closes the WebSocket politely, as a browser does: sends a close frame and waits (at most
    /// [`CLOSE_WAIT`]) for the server to close the connection. A client that opens its next
    /// connection at once races the server's cleanup of the last one, and a server at its
    /// connection cap refuses the new one (the 19,000-conversation runs lost about 50 joins so).
    pub async fn close(mut self) {
        if self.socket.close(None).await.is_err() {
            return;
        }
        let _ = tokio::time::timeout(CLOSE_WAIT, async {
            while let Some(Ok(_)) = self.socket.next().await {}
        })
        .await;
    }

    async fn next_engine_message(&mut self) -> Result<EngineEvent, ClientError> {
        loop {
            // tungstenite answers a WebSocket ping itself, on the next read or write.
            let message = match self.socket.next().await.ok_or(ClientError::Closed)? {
                Ok(message) => message,
                Err(tungstenite::Error::ConnectionClosed | tungstenite::Error::Io(_)) => {
                    return Err(ClientError::Closed);
                }
                Err(error) => return Err(ClientError::Protocol(error.to_string())),
            };
            let text = match message {
                Message::Text(text) => text,
                Message::Close(_) => return Err(ClientError::Closed),
                _ => continue,
            };
            match engineio::Packet::decode_text(&text)
                .map_err(|error| ClientError::Protocol(error.to_string()))?
            {
                engineio::Packet::Open(_) => return Ok(EngineEvent::Open),
                engineio::Packet::Ping(data) => {
                    self.send_text(engineio::Packet::Pong(data).encode_text())
                        .await?;
                }
                engineio::Packet::Message(engineio::Message::Text(text)) => {
                    return Ok(EngineEvent::Message(text));
                }
                engineio::Packet::Close => return Err(ClientError::Closed),
                _ => {}
            }
        }
    }
}

enum EngineEvent {
    Open,
    Message(String),
}

/// The event name and first argument of an EVENT packet.
pub fn event_of(packet: &socketio::Packet) -> Option<(&str, &Value)> {
    if packet.kind != socketio::PacketType::Event {
        return None;
    }
    let items = packet.data.as_ref()?.as_array()?;
    let name = items.first()?.as_str()?;
    Some((name, items.get(1).unwrap_or(&Value::Null)))
}

/// The first argument of an ACK packet with id `id`.
pub fn ack_of(packet: &socketio::Packet, id: u64) -> Option<&Value> {
    if packet.kind != socketio::PacketType::Ack || packet.ack_id != Some(id) {
        return None;
    }
    packet.data.as_ref()?.as_array()?.first()
}

/// The WebSocket to `/socket.io/?EIO=4&transport=websocket`, from `local`, and the process a
/// balancer in front chose, by its cookie.
async fn open(
    target: &Target,
    local: IpAddr,
    cookie: Option<&str>,
) -> Result<(WebSocketStream<TcpStream>, Option<String>), ClientError> {
    let socket = match target.address {
        SocketAddr::V4(_) => TcpSocket::new_v4(),
        SocketAddr::V6(_) => TcpSocket::new_v6(),
    }
    .map_err(ClientError::Connect)?;
    socket
        .bind(SocketAddr::new(local, 0))
        .map_err(ClientError::Connect)?;
    let stream = socket
        .connect(target.address)
        .await
        .map_err(ClientError::Connect)?;
    stream.set_nodelay(true).map_err(ClientError::Connect)?;
    let mut request = format!(
        "ws://{host}/socket.io/?EIO=4&transport=websocket",
        host = target.host
    )
    .into_client_request()
    .map_err(|error| ClientError::Upgrade(error.to_string()))?;
    if let Some(cookie) = cookie {
        let cookie = http::HeaderValue::from_str(cookie)
            .map_err(|_| ClientError::Upgrade("the cookie is not a header value".into()))?;
        request.headers_mut().insert(http::header::COOKIE, cookie);
    }
    let config = WebSocketConfig::default()
        .read_buffer_size(READ_BUFFER)
        .max_frame_size(Some(MAX_FRAME))
        .max_message_size(Some(MAX_FRAME));
    match tokio_tungstenite::client_async_with_config(request, stream, Some(config)).await {
        Ok((socket, answer)) => {
            let server = answer
                .headers()
                .get_all(http::header::SET_COOKIE)
                .iter()
                .filter_map(|value| value.to_str().ok())
                .find_map(|value| value.strip_prefix("helpnow_server="))
                .map(|value| value.split(';').next().unwrap_or(value).to_owned());
            Ok((socket, server))
        }
        Err(tungstenite::Error::Http(answer)) => {
            Err(ClientError::Upgrade(answer.status().to_string()))
        }
        Err(tungstenite::Error::Io(_) | tungstenite::Error::ConnectionClosed) => {
            Err(ClientError::Closed)
        }
        Err(error) => Err(ClientError::Upgrade(error.to_string())),
    }
}

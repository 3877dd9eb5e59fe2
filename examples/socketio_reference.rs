//! A protocol test server for the real-time channel, behaving like the Socket.IO project's
//! reference test server, so that any client (the official one, a load generator) can be checked
//! against it:
//!
//! - namespaces `/` and `/custom`; on connection it emits `auth` with the handshake's auth;
//! - `message` is answered by `message-back` with the same arguments;
//! - `message-with-ack` is acknowledged with its arguments;
//! - `server-ack` makes the server emit `server-ack-request` with the same arguments and wait for
//!   the client's acknowledgement, which it sends back as `server-ack-response`;
//! - any Origin is allowed; every other namespace is refused.
//!
//! ```sh
//! cargo run --example socketio_reference -- --port 3000 --ping-interval 300 --ping-timeout 200
//! ```
//!
//! Flags (times in milliseconds): `--port` (3000), `--ping-interval` (25000), `--ping-timeout`
//! (20000), `--connect-timeout` (45000), `--upgrade-timeout` (10000), `--max-payload` (1000000
//! bytes), `--recovery-window` (0: connection state recovery off).

use std::io::Write;
use std::time::Duration;

use actix::{Actor, ActorContext, AsyncContext, Context, Handler, Recipient, WrapFuture};
use actix_web::App;
use futures_util::future::BoxFuture;
use helpnow::realtime::{
    ConnectError, ConnectRequest, Namespace, RealtimeConfig, RealtimeServer, SocketEvent, SocketRef,
};
use serde_json::Value;

/// How long the server waits for a client to acknowledge `server-ack-request`.
const CLIENT_ACK_TIMEOUT: Duration = Duration::from_secs(10);

/// Accepts everyone, greets with `auth`, and gives each socket its own echo actor.
struct Reference;

impl Namespace for Reference {
    fn connect(
        &self,
        request: ConnectRequest,
        socket: SocketRef,
    ) -> BoxFuture<'static, Result<Recipient<SocketEvent>, ConnectError>> {
        Box::pin(async move {
            socket.emit("auth", &Value::Object(request.auth));
            Ok(Echo.start().recipient())
        })
    }
}

struct Echo;

impl Actor for Echo {
    type Context = Context<Self>;
}

impl Handler<SocketEvent> for Echo {
    type Result = ();

    fn handle(&mut self, event: SocketEvent, ctx: &mut Self::Context) {
        match event {
            SocketEvent::Event {
                socket,
                name,
                payload,
                ack,
            } => match name.as_str() {
                "message" => socket.emit_payload("message-back", payload),
                "message-with-ack" => {
                    if let Some(ack) = ack {
                        ack.send(payload);
                    }
                }
                "server-ack" => {
                    let ask = async move {
                        let answer = socket
                            .emit_with_ack("server-ack-request", payload, CLIENT_ACK_TIMEOUT)
                            .await;
                        if let Ok(answer) = answer {
                            socket.emit_payload("server-ack-response", answer);
                        }
                    };
                    ctx.spawn(ask.into_actor(self));
                }
                _ => {}
            },
            SocketEvent::Disconnected { .. } => ctx.stop(),
        }
    }
}

struct Flags {
    port: u16,
    config: RealtimeConfig,
}

fn parse_flags() -> Result<Flags, String> {
    let mut flags = Flags {
        port: 3000,
        config: RealtimeConfig::default(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let number = value
            .parse::<u64>()
            .map_err(|_| format!("{flag}: '{value}' is not a whole number"))?;
        let millis = Duration::from_millis(number);
        match flag.as_str() {
            "--port" => {
                flags.port = u16::try_from(number).map_err(|_| format!("--port: {number}"))?
            }
            "--ping-interval" => flags.config.ping_interval = millis,
            "--ping-timeout" => flags.config.ping_timeout = millis,
            "--connect-timeout" => flags.config.connect_timeout = millis,
            "--upgrade-timeout" => flags.config.upgrade_timeout = millis,
            "--max-payload" => flags.config.max_payload = number as usize,
            "--recovery-window" => flags.config.recovery_window = (number > 0).then_some(millis),
            other => return Err(format!("unknown flag {other}")),
        }
    }
    Ok(flags)
}

#[actix_web::main]
async fn main() -> std::io::Result<()> {
    let flags = match parse_flags() {
        Ok(flags) => flags,
        Err(message) => {
            eprintln!("socketio_reference: {message}");
            std::process::exit(2);
        }
    };
    let server = RealtimeServer::builder(flags.config)
        .namespace("/", Reference)
        .namespace("/custom", Reference)
        .build();
    let listener = std::net::TcpListener::bind(("127.0.0.1", flags.port))?;
    let port = listener.local_addr()?.port();
    let service = server.clone();
    let http = server.http_server(
        listener,
        move || App::new().service(service.service()),
        |_| {},
    )?;
    println!("listening on http://127.0.0.1:{port}");
    std::io::stdout().flush()?;
    http.run().await
}

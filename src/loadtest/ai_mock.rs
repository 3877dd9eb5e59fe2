//! The load generator's own OpenAI-compatible chat-completion server, for the member scenario:
//! point the server's `ai.base_url` at it (`http://ADDR/v1`). It answers
//! `POST .../chat/completions` after `latency`, streamed (`"stream": true`, server-sent events of
//! `chat.completion.chunk`s over chunked HTTP/1.1, as OpenAI sends them) at `tokens_per_second`, or
//! whole. It runs on actix-web (its own two workers); connections are kept alive, as a provider's
//! are.
//!
//! Each token is `w<microseconds since the Unix epoch> `: the moment it was written. A client on
//! the same machine that receives it in a `chat:delta` knows how long the server took to pass it
//! on (the token forwarding overhead), whichever generator process wrote it.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use actix_web::dev::ServerHandle;
use actix_web::{App, HttpResponse, HttpServer, web};
use bytes::Bytes;
use serde_json::{Value, json};

/// The longest request accepted (the server sends at most 20 messages of context).
const MAX_BODY: usize = 4 * 1024 * 1024;

/// How the mock answers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MockAiSettings {
    /// Before the first token (or the whole answer).
    pub latency: Duration,
    pub tokens_per_second: f64,
    /// Tokens in each answer.
    pub reply_tokens: u32,
}

/// Microseconds since the Unix epoch: the stamp in each token.
pub fn now_micros() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_micros() as u64)
}

/// The stamps of the tokens in `text` (a `chat:delta` piece).
pub fn stamps(text: &str) -> impl Iterator<Item = u64> + '_ {
    text.split_whitespace()
        .filter_map(|word| word.strip_prefix('w')?.parse().ok())
}

/// The running mock: `abort` stops it.
pub struct MockServer(ServerHandle);

impl MockServer {
    /// Stops serving (the connections open now end).
    pub fn abort(&self) {
        let handle = self.0.clone();
        tokio::spawn(async move { handle.stop(false).await });
    }
}

/// Listens on `address` (actix-web, two workers of its own) and serves until aborted.
pub async fn start(
    address: SocketAddr,
    settings: MockAiSettings,
) -> std::io::Result<(SocketAddr, MockServer)> {
    let server = HttpServer::new(move || {
        App::new()
            .app_data(web::Data::new(settings))
            .app_data(web::PayloadConfig::new(MAX_BODY))
            // Any path ending in the chat-completion endpoint (`/v1/chat/completions`).
            .route("/{path:.*}", web::post().to(complete))
    })
    .workers(2)
    // Each token is a small write of its own: without TCP_NODELAY, Nagle's algorithm holds one
    // back until the one before is acknowledged, about one token late (actix-web leaves the
    // system's default, Nagle on).
    .tcp_nodelay(true)
    .disable_signals()
    .bind(address)?;
    let bound = server
        .addrs()
        .first()
        .copied()
        .ok_or_else(|| std::io::Error::other("the mock is bound to no address"))?;
    let server = server.run();
    let handle = server.handle();
    tokio::spawn(server);
    Ok((bound, MockServer(handle)))
}

fn token() -> String {
    format!("w{} ", now_micros())
}

/// A chat completion after `latency`: streamed when the request asks for it, else whole.
async fn complete(settings: web::Data<MockAiSettings>, body: web::Bytes) -> HttpResponse {
    let settings = **settings;
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    tokio::time::sleep(settings.latency).await;
    if request.get("stream") == Some(&Value::Bool(true)) {
        HttpResponse::Ok()
            .content_type("text/event-stream")
            .insert_header(("cache-control", "no-cache"))
            .streaming(chunks(settings))
    } else {
        let content: String = (0..settings.reply_tokens.max(1)).map(|_| token()).collect();
        HttpResponse::Ok().json(json!({
            "id": "chatcmpl-loadtest",
            "object": "chat.completion",
            "choices": [{
                "index": 0,
                "message": { "role": "assistant", "content": content },
                "finish_reason": "stop",
            }],
        }))
    }
}

/// The server-sent events of a streamed answer: a `chat.completion.chunk` per token at a steady
/// cadence (each token at its own time, however late the one before was), then `[DONE]`.
fn chunks(settings: MockAiSettings) -> impl futures_util::Stream<Item = Result<Bytes, Infallible>> {
    let interval = Duration::from_secs_f64(1.0 / settings.tokens_per_second.max(0.001));
    let tokens = settings.reply_tokens.max(1);
    let started = tokio::time::Instant::now();
    futures_util::stream::unfold(0, move |index| async move {
        if index > tokens {
            return None;
        }
        if index == tokens {
            return Some((Ok(Bytes::from_static(b"data: [DONE]\n\n")), index + 1));
        }
        tokio::time::sleep_until(started + interval * index).await;
        let chunk = json!({
            "id": "chatcmpl-loadtest",
            "object": "chat.completion.chunk",
            "choices": [{ "index": 0, "delta": { "content": token() }, "finish_reason": null }],
        });
        Some((Ok(Bytes::from(format!("data: {chunk}\n\n"))), index + 1))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_are_read_back_from_a_piece() {
        let piece = format!("{}{}", token(), token());
        let found: Vec<u64> = stamps(&piece).collect();
        assert_eq!(found.len(), 2);
        assert!(found.iter().all(|stamp| *stamp > 1_600_000_000_000_000));
        assert_eq!(stamps("plain words, no stamps").count(), 0);
    }
}

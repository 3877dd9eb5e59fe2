//! The load generator's own OpenAI-compatible chat-completion server, for the member scenario:
//! point the server's `ai.base_url` at it (`http://ADDR/v1`). It answers
//! `POST .../chat/completions` after `latency`, streamed (`"stream": true`, server-sent events of
//! `chat.completion.chunk`s over chunked HTTP/1.1, as OpenAI sends them) at `tokens_per_second`, or
//! whole. Connections are kept alive, as a provider's are.
//!
//! Each token is `w<microseconds since the Unix epoch> `: the moment it was written. A client on
//! the same machine that receives it in a `chat:delta` knows how long the server took to pass it
//! on (the token forwarding overhead), whichever generator process wrote it.

use std::net::SocketAddr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

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

/// Listens on `address` and serves until the returned task is aborted.
pub async fn start(
    address: SocketAddr,
    settings: MockAiSettings,
) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    let listener = TcpListener::bind(address).await?;
    let bound = listener.local_addr()?;
    let task = tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                // Out of files, say: wait rather than spin.
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            };
            let _ = stream.set_nodelay(true);
            tokio::spawn(serve(stream, settings));
        }
    });
    Ok((bound, task))
}

/// One connection: requests one after another until the client closes it or hangs up.
async fn serve(stream: TcpStream, settings: MockAiSettings) {
    let mut stream = BufReader::new(stream);
    while let Ok(Some(body)) = read_request(&mut stream).await {
        let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let streamed = request.get("stream") == Some(&Value::Bool(true));
        tokio::time::sleep(settings.latency).await;
        let answered = if streamed {
            stream_answer(stream.get_mut(), settings).await
        } else {
            whole_answer(stream.get_mut(), settings).await
        };
        if answered.is_err() {
            return;
        }
    }
}

/// The body of the next request, `None` when the client closed the connection.
async fn read_request(stream: &mut BufReader<TcpStream>) -> std::io::Result<Option<Vec<u8>>> {
    let mut length = 0;
    let mut first = true;
    loop {
        let mut line = String::new();
        if stream.read_line(&mut line).await? == 0 {
            return Ok(None);
        }
        if first {
            first = false;
            if !line.starts_with("POST ") {
                return Err(std::io::Error::other("only POST is served"));
            }
            continue;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap_or(0);
        }
    }
    if length > MAX_BODY {
        return Err(std::io::Error::other("the request is too large"));
    }
    let mut body = vec![0; length];
    stream.read_exact(&mut body).await?;
    Ok(Some(body))
}

fn token() -> String {
    format!("w{} ", now_micros())
}

async fn whole_answer(stream: &mut TcpStream, settings: MockAiSettings) -> std::io::Result<()> {
    let content: String = (0..settings.reply_tokens.max(1)).map(|_| token()).collect();
    let body = json!({
        "id": "chatcmpl-loadtest",
        "object": "chat.completion",
        "choices": [{
            "index": 0,
            "message": { "role": "assistant", "content": content },
            "finish_reason": "stop",
        }],
    })
    .to_string();
    let response = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(response.as_bytes()).await
}

async fn stream_answer(stream: &mut TcpStream, settings: MockAiSettings) -> std::io::Result<()> {
    stream
        .write_all(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\
              Transfer-Encoding: chunked\r\n\r\n",
        )
        .await?;
    let interval = Duration::from_secs_f64(1.0 / settings.tokens_per_second.max(0.001));
    let started = tokio::time::Instant::now();
    for index in 0..settings.reply_tokens.max(1) {
        // A steady cadence: each token at its own time, however late the one before was.
        tokio::time::sleep_until(started + interval * index).await;
        let chunk = json!({
            "id": "chatcmpl-loadtest",
            "object": "chat.completion.chunk",
            "choices": [{ "index": 0, "delta": { "content": token() }, "finish_reason": null }],
        });
        write_chunk(stream, &format!("data: {chunk}\n\n")).await?;
    }
    write_chunk(stream, "data: [DONE]\n\n").await?;
    stream.write_all(b"0\r\n\r\n").await
}

async fn write_chunk(stream: &mut TcpStream, data: &str) -> std::io::Result<()> {
    let framed = format!("{:x}\r\n{data}\r\n", data.len());
    stream.write_all(framed.as_bytes()).await
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

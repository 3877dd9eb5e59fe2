//! Any OpenAI-compatible chat-completion API (OpenAI itself, Azure-style gateways, local servers
//! such as Ollama or vLLM): `POST {base_url}/chat/completions` with Bearer auth, either as one
//! answer ([`Ai::complete`]) or streamed ([`Ai::stream`]).
//!
//! Streaming asks for `"stream": true` and reads OpenAI's server-sent events
//! (`data: {chat.completion.chunk}` ... `data: [DONE]`) straight off the response body with
//! `reqwest::Response::chunk`, so reqwest needs no "stream" feature. The returned stream owns the
//! response: dropping it (the Stop button) drops the body mid-read and so closes the connection,
//! which is how the provider learns to stop generating the reply.
//!
//! Time-outs when streaming: `AiRequest::timeout` bounds each wait for the next piece, not the
//! whole reply. The first wait includes connecting and the provider's answer headers; every later
//! wait is the gap between two pieces. A long reply that keeps arriving is therefore never cut
//! off, while a provider that stalls is given up on within one time-out. A caller that needs a
//! bound on the whole reply wraps the stream in its own deadline.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use futures_util::stream::BoxStream;
use futures_util::{FutureExt, StreamExt};
use reqwest::StatusCode;
use reqwest::header::{CONTENT_TYPE, RETRY_AFTER};
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};

use super::{Ai, AiError, AiMessage, AiRequest, AiSetupError};
use crate::config::AiSettings;

/// How long to wait after a 429 that does not say (OpenAI normally sends `Retry-After`).
const DEFAULT_RETRY_AFTER: Duration = Duration::from_secs(30);

/// Calls an OpenAI-compatible chat-completion API. Cloning is cheap; the connections are pooled
/// per thread ([`THREAD_CLIENT`]). The API key is a [`SecretString`]: `Debug` prints it redacted, and it is only exposed
/// to set the `Authorization` header, which reqwest marks sensitive.
#[derive(Debug, Clone)]
pub struct OpenAiCompatible {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// Built when the provider is made, which checks that a client can be; calls use their
    /// thread's ([`Inner::client`]).
    client: reqwest::Client,
    /// `{base_url}/chat/completions`.
    endpoint: String,
    api_key: SecretString,
    model: String,
    temperature: f32,
}

impl OpenAiCompatible {
    pub fn new(settings: &AiSettings) -> Result<Self, AiSetupError> {
        let api_key = settings
            .api_key
            .clone()
            .filter(|key| !key.expose_secret().trim().is_empty())
            .ok_or(AiSetupError::Missing("ai.api_key"))?;
        let base_url = settings
            .base_url
            .as_deref()
            .map(str::trim)
            .filter(|url| !url.is_empty())
            .ok_or(AiSetupError::Missing("ai.base_url"))?;
        let parsed = url::Url::parse(base_url)
            .map_err(|err| AiSetupError::InvalidBaseUrl(format!("{base_url:?}: {err}")))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(AiSetupError::InvalidBaseUrl(format!("{base_url:?}")));
        }
        let client = new_client()?;
        Ok(Self {
            inner: Arc::new(Inner {
                client,
                endpoint: format!("{}/chat/completions", base_url.trim_end_matches('/')),
                api_key,
                model: settings.model.clone(),
                temperature: settings.temperature,
            }),
        })
    }
}

/// Every provider's client is built the same way (the endpoint and key go with each request), so
/// one client per thread serves them all; a setting of a provider's own would have to go with its
/// requests, or key [`THREAD_CLIENT`] by provider.
fn new_client() -> Result<reqwest::Client, AiSetupError> {
    reqwest::Client::builder()
        .tls_backend_preconfigured(tls_config()?)
        .build()
        .map_err(AiSetupError::Client)
}

thread_local! {
    /// This thread's client, with the runtime it serves. reqwest runs a connection's task on the
    /// runtime that opened it, so with one client shared by the server's threads a reply read on
    /// one thread was often carried by a connection task on another, and every piece crossed
    /// threads (a wake-up through the other runtime's event fd). A client per thread keeps each
    /// pooled connection with the replies read on its thread (the server's workers are
    /// single-threaded runtimes; on a multi-threaded one a task may still move). A thread that
    /// runs a new runtime (a test's) gets a new client, so a connection of a runtime that ended is
    /// never used again (the old client is dropped then).
    static THREAD_CLIENT: std::cell::RefCell<Option<(tokio::runtime::Id, reqwest::Client)>> =
        const { std::cell::RefCell::new(None) };
}

/// rustls with ring and Mozilla's root certificates: the same roots on every machine, so a
/// fresh container without system certificates still reaches the provider. The crypto provider is passed explicitly: both ring and aws-lc are compiled in, so rustls
/// could not pick one by itself.
fn tls_config() -> Result<rustls::ClientConfig, AiSetupError> {
    let roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(AiSetupError::Tls)?
    .with_root_certificates(roots)
    .with_no_client_auth();
    Ok(config)
}

impl Ai for OpenAiCompatible {
    fn complete(&self, request: AiRequest) -> BoxFuture<'static, Result<String, AiError>> {
        let inner = Arc::clone(&self.inner);
        async move {
            // One deadline for connecting, sending and reading the whole answer.
            tokio::time::timeout(request.timeout, inner.chat_completion(&request.messages))
                .await
                .unwrap_or(Err(AiError::Timeout))
        }
        .boxed()
    }

    fn stream(&self, request: AiRequest) -> BoxStream<'static, Result<String, AiError>> {
        let start = Progress::Connect {
            inner: Arc::clone(&self.inner),
            messages: request.messages,
        };
        let wait = request.timeout;
        // One timer for the whole stream, made at the first wait (on the runtime that reads the
        // stream) and pushed back before each later one: a deadline moved later costs tokio an
        // atomic store, where a `timeout` per piece registered and removed a timer in the wheel
        // for every piece.
        let idle: Option<Pin<Box<tokio::time::Sleep>>> = None;
        futures_util::stream::unfold((start, idle), move |(progress, idle)| async move {
            // Each wait for an item gets the whole time-out afresh (see the module docs). A
            // time-out drops the half-read response with the future, closing the connection.
            let until = tokio::time::Instant::now() + wait;
            let mut idle = match idle {
                Some(mut idle) => {
                    idle.as_mut().reset(until);
                    idle
                }
                None => Box::pin(tokio::time::sleep_until(until)),
            };
            tokio::select! {
                biased;
                next = progress.advance() => {
                    next.map(|(item, progress)| (item, (progress, Some(idle))))
                }
                () = idle.as_mut() => Some((Err(AiError::Timeout), (Progress::Ended, Some(idle)))),
            }
        })
        .boxed()
    }
}

#[derive(Serialize)]
struct ChatCompletionRequest<'a> {
    model: &'a str,
    messages: &'a [AiMessage],
    temperature: f32,
    /// Left out when false, so a plain completion is sent exactly as before streaming existed.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    stream: bool,
}

#[derive(Deserialize)]
struct ChatCompletion {
    choices: Vec<Choice>,
}

#[derive(Deserialize)]
struct Choice {
    message: ChoiceMessage,
}

#[derive(Deserialize)]
struct ChoiceMessage {
    /// `null` when the model answered with a tool call or a refusal instead of text.
    content: Option<String>,
}

/// OpenAI's error body: `{"error": {"message", "type", "code", "param"}}`.
#[derive(Deserialize)]
struct ErrorBody {
    error: ErrorDetail,
}

#[derive(Deserialize)]
struct ErrorDetail {
    message: String,
}

/// One `chat.completion.chunk` event, or OpenAI's `{"error": {...}}` sent mid-stream.
#[derive(Deserialize)]
struct StreamEvent {
    #[serde(default)]
    choices: Vec<StreamChoice>,
    error: Option<ErrorDetail>,
}

#[derive(Deserialize)]
struct StreamChoice {
    /// Absent in some servers' final chunk, which carries only `finish_reason`.
    #[serde(default)]
    delta: Delta,
}

#[derive(Deserialize, Default)]
struct Delta {
    /// Absent or `null` in the first chunk (the role) and the last (the finish reason).
    content: Option<String>,
}

impl Inner {
    /// The current thread's client ([`THREAD_CLIENT`]); the provider's own outside a runtime or
    /// if one cannot be built (it was built the same way when the provider was made).
    fn client(&self) -> reqwest::Client {
        let Ok(runtime) = tokio::runtime::Handle::try_current().map(|handle| handle.id()) else {
            return self.client.clone();
        };
        THREAD_CLIENT.with_borrow_mut(|cached| match cached {
            Some((id, client)) if *id == runtime => client.clone(),
            _ => {
                let client = new_client().unwrap_or_else(|_| self.client.clone());
                *cached = Some((runtime, client.clone()));
                client
            }
        })
    }

    async fn chat_completion(&self, messages: &[AiMessage]) -> Result<String, AiError> {
        let response = self.send(messages, false).await?;
        let body = response
            .bytes()
            .await
            .map_err(|err| AiError::Failed(format!("reading the AI provider's answer: {err}")))?;
        completion_text(&body)
    }

    /// Posts the chat completion and returns the 2xx response with its body unread; any other
    /// status is mapped (and logged) by [`Inner::refusal`].
    async fn send(
        &self,
        messages: &[AiMessage],
        stream: bool,
    ) -> Result<reqwest::Response, AiError> {
        let response = self
            .client()
            .post(&self.endpoint)
            .bearer_auth(self.api_key.expose_secret())
            .json(&ChatCompletionRequest {
                model: &self.model,
                messages,
                temperature: self.temperature,
                stream,
            })
            .send()
            .await
            .map_err(|err| AiError::Failed(format!("cannot reach the AI provider: {err}")))?;
        if response.status().is_success() {
            Ok(response)
        } else {
            Err(self.refusal(response).await)
        }
    }

    /// The error for a non-2xx answer, logged here because only here is the provider's own
    /// explanation at hand.
    async fn refusal(&self, response: reqwest::Response) -> AiError {
        let status = response.status();
        match status {
            StatusCode::UNAUTHORIZED => {
                // The provider's message is not logged: OpenAI's quotes part of the key.
                tracing::error!(
                    endpoint = %self.endpoint,
                    "the AI provider refused the API key (401): check ai.api_key"
                );
                AiError::Unauthorized
            }
            StatusCode::TOO_MANY_REQUESTS => {
                let retry_after = retry_after(response.headers()).unwrap_or(DEFAULT_RETRY_AFTER);
                tracing::warn!(
                    endpoint = %self.endpoint,
                    ?retry_after,
                    "the AI provider is rate limiting us (429)"
                );
                AiError::RateLimited { retry_after }
            }
            _ => {
                let message = response
                    .bytes()
                    .await
                    .ok()
                    .and_then(|body| serde_json::from_slice::<ErrorBody>(&body).ok())
                    .map(|body| body.error.message);
                tracing::warn!(
                    endpoint = %self.endpoint,
                    status = status.as_u16(),
                    provider_message = message.as_deref().unwrap_or("(none)"),
                    "the AI call failed"
                );
                AiError::Failed(format!("status {}", status.as_u16()))
            }
        }
    }
}

/// `Retry-After` in seconds. The HTTP-date form is not used by chat-completion APIs, so it
/// falls back to the default like a missing header.
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let seconds: f64 = headers
        .get(RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()?;
    Duration::try_from_secs_f64(seconds).ok()
}

/// The first choice's text from a chat-completion body.
fn completion_text(body: &[u8]) -> Result<String, AiError> {
    let completion: ChatCompletion = serde_json::from_slice(body)
        .map_err(|err| AiError::UnexpectedResponse(format!("not a chat completion: {err}")))?;
    let content = completion
        .choices
        .into_iter()
        .next()
        .ok_or_else(|| AiError::UnexpectedResponse("no choices".to_owned()))?
        .message
        .content
        .filter(|content| !content.trim().is_empty())
        .ok_or_else(|| AiError::UnexpectedResponse("the first choice has no text".to_owned()))?;
    Ok(content)
}

/// Where a streamed call is: the state `Ai::stream` unfolds, one item per step.
enum Progress {
    Connect {
        inner: Arc<Inner>,
        messages: Vec<AiMessage>,
    },
    Read(Reader),
    Ended,
}

impl Progress {
    /// The stream's next item and the state after it; `None` once the reply is complete.
    async fn advance(self) -> Option<(Result<String, AiError>, Progress)> {
        let mut reader = match self {
            Progress::Ended => return None,
            Progress::Read(reader) => reader,
            Progress::Connect { inner, messages } => match inner.send(&messages, true).await {
                Err(err) => return Some((Err(err), Progress::Ended)),
                Ok(response) if is_event_stream(&response) => Reader {
                    inner,
                    response,
                    events: EventBuffer::default(),
                    ready: VecDeque::new(),
                    finished: false,
                },
                // Some OpenAI-compatible servers ignore `stream` and answer in one piece.
                Ok(response) => {
                    let answer = match response.bytes().await {
                        Ok(body) => completion_text(&body),
                        Err(err) => Err(AiError::Failed(format!(
                            "reading the AI provider's answer: {err}"
                        ))),
                    };
                    return Some((answer, Progress::Ended));
                }
            },
        };
        loop {
            if let Some(item) = reader.ready.pop_front() {
                return Some((item, Progress::Read(reader)));
            }
            if reader.finished {
                return None;
            }
            reader.read_more().await;
        }
    }
}

fn is_event_stream(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.trim_start().starts_with("text/event-stream"))
}

/// A streamed response being read. Holding the response is what keeps the connection open.
struct Reader {
    inner: Arc<Inner>,
    response: reqwest::Response,
    events: EventBuffer,
    /// Items decoded from the body but not yet handed out: one network chunk can carry several.
    ready: VecDeque<Result<String, AiError>>,
    /// `[DONE]` or an error was seen: nothing more is read.
    finished: bool,
}

impl Reader {
    /// Reads one network chunk and queues what it completes.
    async fn read_more(&mut self) {
        match self.response.chunk().await {
            Ok(Some(bytes)) => {
                for data in self.events.push(&bytes) {
                    self.take_event(&data);
                    if self.finished {
                        break;
                    }
                }
            }
            Ok(None) => self.fail(AiError::Failed(
                "the AI provider's stream ended before [DONE]".to_owned(),
            )),
            Err(err) => self.fail(AiError::Failed(format!(
                "reading the AI provider's stream: {err}"
            ))),
        }
    }

    fn take_event(&mut self, data: &str) {
        if data.trim() == "[DONE]" {
            self.finished = true;
            return;
        }
        let event: StreamEvent = match serde_json::from_str(data) {
            Ok(event) => event,
            Err(err) => {
                return self.fail(AiError::UnexpectedResponse(format!(
                    "not a chat completion chunk: {err}"
                )));
            }
        };
        if let Some(error) = event.error {
            tracing::warn!(
                endpoint = %self.inner.endpoint,
                provider_message = %error.message,
                "the AI provider's stream failed"
            );
            // The provider's words are kept so a rate limit announced mid-stream still reads
            // as one to the backoff.
            return self.fail(AiError::Failed(format!(
                "the AI provider's stream failed: {}",
                error.message
            )));
        }
        let piece = event
            .choices
            .into_iter()
            .next()
            .and_then(|choice| choice.delta.content)
            .filter(|content| !content.is_empty());
        if let Some(piece) = piece {
            self.ready.push_back(Ok(piece));
        }
    }

    /// Ends the stream with `error` after the pieces already decoded.
    fn fail(&mut self, error: AiError) {
        self.ready.push_back(Err(error));
        self.finished = true;
    }
}

/// Splits a server-sent event body into the events' `data`, however the network chunks it.
/// Bytes are kept until a whole line is in, so a chunk boundary inside a line or inside a UTF-8
/// character costs nothing. Lines end with `\n` or `\r\n` (a lone `\r`, also allowed by the
/// format, is not used by chat-completion servers); `event:`, `id:`, `retry:` and comment lines
/// are ignored.
#[derive(Default)]
struct EventBuffer {
    /// The start of a line whose end has not arrived yet.
    partial: Vec<u8>,
    /// The `data:` lines of the event being read, joined with `\n` as the format says.
    data: Option<String>,
}

impl EventBuffer {
    /// Takes the next bytes of the body and returns the data of every event they complete.
    fn push(&mut self, bytes: &[u8]) -> Vec<String> {
        self.partial.extend_from_slice(bytes);
        let mut complete = Vec::new();
        let mut start = 0;
        while let Some(end) = self.partial[start..].iter().position(|&byte| byte == b'\n') {
            let line = &self.partial[start..start + end];
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            let line = String::from_utf8_lossy(line);
            if line.is_empty() {
                complete.extend(self.data.take());
            } else if let Some(value) = field_value(&line, "data") {
                match &mut self.data {
                    Some(data) => {
                        data.push('\n');
                        data.push_str(value);
                    }
                    None => self.data = Some(value.to_owned()),
                }
            }
            start += end + 1;
        }
        self.partial.drain(..start);
        complete
    }
}

/// The value of a `field: value` line (one space after the colon is dropped), if it is `field`.
fn field_value<'a>(line: &'a str, field: &str) -> Option<&'a str> {
    let value = line.strip_prefix(field)?;
    if value.is_empty() {
        return Some(value);
    }
    let value = value.strip_prefix(':')?;
    Some(value.strip_prefix(' ').unwrap_or(value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_found_however_the_body_is_chunked() {
        let body = "data: {\"a\":1}\n\n: keep-alive\n\nevent: x\r\ndata: two\r\ndata:  lines\r\n\r\n\
                    data: caf\u{e9}\n\ndata: [DONE]\n\n";
        let expected = ["{\"a\":1}", "two\n lines", "caf\u{e9}", "[DONE]"];
        for size in 1..body.len() {
            let mut buffer = EventBuffer::default();
            let events: Vec<String> = body
                .as_bytes()
                .chunks(size)
                .flat_map(|chunk| buffer.push(chunk))
                .collect();
            assert_eq!(events, expected, "chunks of {size} bytes");
        }
    }

    #[test]
    fn an_event_without_its_blank_line_is_not_complete() {
        let mut buffer = EventBuffer::default();
        assert!(buffer.push(b"data: {}\n").is_empty());
        assert_eq!(buffer.push(b"\n"), ["{}"]);
    }

    #[test]
    fn retry_after_reads_whole_and_fractional_seconds() {
        let mut headers = reqwest::header::HeaderMap::new();
        assert_eq!(retry_after(&headers), None);
        headers.insert(RETRY_AFTER, "20".parse().expect("header"));
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(20)));
        headers.insert(RETRY_AFTER, "1.5".parse().expect("header"));
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(1500)));
        headers.insert(RETRY_AFTER, "-3".parse().expect("header"));
        assert_eq!(retry_after(&headers), None);
        headers.insert(
            RETRY_AFTER,
            "Wed, 21 Oct 2015 07:28:00 GMT".parse().expect("header"),
        );
        assert_eq!(retry_after(&headers), None);
    }

    #[test]
    fn blank_or_missing_content_is_an_unexpected_response() {
        for body in [
            r#"{"choices":[]}"#,
            r#"{"choices":[{"message":{"role":"assistant","content":null}}]}"#,
            r#"{"choices":[{"message":{"role":"assistant","content":"  "}}]}"#,
            r#"{"object":"chat.completion"}"#,
        ] {
            assert!(
                matches!(
                    completion_text(body.as_bytes()),
                    Err(AiError::UnexpectedResponse(_))
                ),
                "{body}"
            );
        }
    }
}

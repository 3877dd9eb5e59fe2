//! A local mock of OpenAI's chat-completions API, in its real wire format.
//!
//! `MockAi::start()` serves `POST /v1/chat/completions` on 127.0.0.1 (a free port) as
//! `https://api.openai.com/v1` does for a non-streamed call: Bearer auth checked against
//! [`API_KEY`] (a missing or wrong key gets OpenAI's 401 body), the JSON request checked for a
//! model and messages, and answers shaped as `chat.completion` objects or OpenAI's
//! `{"error": {...}}` bodies. Every request is recorded, so a test can assert exactly what was
//! sent.
//!
//! The answer is scripted and stays until changed: a completion by default, or `reply_with`,
//! `fail_with`, `rate_limit` and `malformed`; `delay` holds every answer back (for time-outs).
//! Route tests point the app at it with `settings.ai = mock.settings()`.
//!
//! A request with `"stream": true` gets the scripted completion as OpenAI streams it: a
//! `text/event-stream` of `chat.completion.chunk` events (the role, then the reply word by word,
//! then the finish reason) ending with `data: [DONE]`. Errors are answered before any event, as
//! OpenAI does. `stream_delay` spaces the events out and `stream_stall` pauses once mid-reply;
//! `stream_error_after` and `stream_cut_after` end the stream early with an error event or
//! without `[DONE]`. `stream_cancelled` tells whether a client hung up before the end, which is
//! how a test sees that dropping a stream really stops the provider's request.

use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use actix_web::dev::ServerHandle;
use actix_web::{HttpRequest, HttpResponse, web};
use futures_util::StreamExt;
use helpnow::config::{AiProviderKind, AiSettings};
use serde_json::{Value, json};

pub const API_KEY: &str = "sk-mock-helpnow-0123456789abcdefghijklmnop";
pub const MODEL: &str = "gpt-4o-mini";
/// What the mock answers until a test scripts something else.
pub const DEFAULT_REPLY: &str = "I understand how frustrating that must be. Let's sort it out.";

/// Completion ids are unique across every mock in the test process, as OpenAI's are.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// One request as the mock received it.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    pub method: String,
    /// Without the query string.
    pub path: String,
    pub authorization: Option<String>,
    /// The JSON body; `Value::Null` when it was not JSON.
    pub body: Value,
    /// The client's address: two requests from one pooled connection share it.
    pub peer: Option<std::net::SocketAddr>,
}

impl RecordedRequest {
    /// The `role` of each message sent, in order.
    pub fn roles(&self) -> Vec<String> {
        self.messages()
            .iter()
            .filter_map(|message| message["role"].as_str().map(str::to_owned))
            .collect()
    }

    /// The `content` of each message sent, in order.
    pub fn contents(&self) -> Vec<String> {
        self.messages()
            .iter()
            .filter_map(|message| message["content"].as_str().map(str::to_owned))
            .collect()
    }

    fn messages(&self) -> &[Value] {
        self.body["messages"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
    }
}

enum Reply {
    Completion(String),
    Error {
        status: u16,
        body: Value,
        retry_after: Option<String>,
    },
    Raw {
        status: u16,
        body: String,
    },
}

/// How a streamed answer is paced and how it ends.
#[derive(Clone)]
struct StreamScript {
    /// Before every event after the first.
    delay: Duration,
    /// After this many content pieces, one extra pause.
    stall: Option<(usize, Duration)>,
    end: StreamEnd,
}

#[derive(Clone)]
enum StreamEnd {
    /// The whole reply, the finish reason and `[DONE]`.
    Done,
    /// This many content pieces, then OpenAI's error event, then the body ends.
    Error { after: usize, body: Value },
    /// This many content pieces, then the body ends without `[DONE]`.
    Cut { after: usize },
}

struct State {
    requests: Vec<RecordedRequest>,
    reply: Reply,
    delay: Duration,
    stream: StreamScript,
    /// A streamed answer was dropped before its last event was handed to the connection.
    stream_cancelled: bool,
}

pub struct MockAi {
    base_url: String,
    state: Arc<Mutex<State>>,
    server: ServerHandle,
}

impl Drop for MockAi {
    fn drop(&mut self) {
        // `stop` sends the command at once; its future only waits for the workers to finish.
        drop(self.server.stop(false));
    }
}

impl MockAi {
    /// Starts the mock on a free port, answering [`DEFAULT_REPLY`] at once.
    pub async fn start() -> Self {
        let state = Arc::new(Mutex::new(State {
            requests: Vec::new(),
            reply: Reply::Completion(DEFAULT_REPLY.to_owned()),
            delay: Duration::ZERO,
            stream: StreamScript {
                delay: Duration::ZERO,
                stall: None,
                end: StreamEnd::Done,
            },
            stream_cancelled: false,
        }));
        let (port, handle) = crate::helpers::serve_mock(Arc::clone(&state), handle);
        MockAi {
            base_url: format!("http://127.0.0.1:{port}/v1"),
            state,
            server: handle,
        }
    }

    /// The API base to configure (`ai.base_url`), like `https://api.openai.com/v1`.
    pub fn base_url(&self) -> String {
        self.base_url.clone()
    }

    /// Settings that point the app (or an `OpenAiCompatible`) at this mock.
    pub fn settings(&self) -> AiSettings {
        AiSettings {
            provider: AiProviderKind::Openai,
            base_url: Some(self.base_url()),
            api_key: Some(API_KEY.to_owned().into()),
            model: MODEL.to_owned(),
            temperature: 0.7,
        }
    }

    /// From now on, answer with a completion whose first choice says `text`.
    pub fn reply_with(&self, text: impl Into<String>) {
        self.state().reply = Reply::Completion(text.into());
    }

    /// From now on, answer `status` with `body` (see [`error_body`] for OpenAI's shape).
    pub fn fail_with(&self, status: u16, body: Value) {
        self.state().reply = Reply::Error {
            status,
            body,
            retry_after: None,
        };
    }

    /// From now on, answer 429 as OpenAI does when a rate limit is hit, with `Retry-After`
    /// (seconds) when given.
    pub fn rate_limit(&self, retry_after_secs: Option<u64>) {
        let wait = retry_after_secs.unwrap_or(20);
        self.state().reply = Reply::Error {
            status: 429,
            body: error_body(
                &format!(
                    "Rate limit reached for {MODEL} in organization org-mock on requests per min \
                     (RPM): Limit 3, Used 3, Requested 1. Please try again in {wait}s."
                ),
                "requests",
                Some("rate_limit_exceeded"),
            ),
            retry_after: retry_after_secs.map(|secs| secs.to_string()),
        };
    }

    /// From now on, answer 200 with `raw` as a JSON content type, whatever it holds.
    pub fn malformed(&self, raw: impl Into<String>) {
        self.state().reply = Reply::Raw {
            status: 200,
            body: raw.into(),
        };
    }

    /// Hold every answer back this long from now on.
    pub fn delay(&self, delay: Duration) {
        self.state().delay = delay;
    }

    /// Wait this long between the events of a streamed answer from now on.
    pub fn stream_delay(&self, delay: Duration) {
        self.state().stream.delay = delay;
    }

    /// Pause streamed answers once for `pause` after `pieces` content pieces.
    pub fn stream_stall(&self, pieces: usize, pause: Duration) {
        self.state().stream.stall = Some((pieces, pause));
    }

    /// End streamed answers after `pieces` content pieces with `body` as an event (OpenAI's
    /// shape, see [`error_body`]) and no `[DONE]`.
    pub fn stream_error_after(&self, pieces: usize, body: Value) {
        self.state().stream.end = StreamEnd::Error {
            after: pieces,
            body,
        };
    }

    /// End streamed answers after `pieces` content pieces, without a finish reason or `[DONE]`.
    pub fn stream_cut_after(&self, pieces: usize) {
        self.state().stream.end = StreamEnd::Cut { after: pieces };
    }

    /// Whether a client went away before a streamed answer's last event: the connection closed,
    /// or writing to it failed.
    pub fn stream_cancelled(&self) -> bool {
        self.state().stream_cancelled
    }

    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.state().requests.clone()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().expect("mock state")
    }
}

/// OpenAI's error body.
pub fn error_body(message: &str, kind: &str, code: Option<&str>) -> Value {
    json!({"error": {"message": message, "type": kind, "param": null, "code": code}})
}

async fn handle(
    request: HttpRequest,
    body: web::Bytes,
    state: web::Data<Mutex<State>>,
) -> HttpResponse {
    let recorded = RecordedRequest {
        method: request.method().to_string(),
        path: request.path().to_owned(),
        authorization: request
            .headers()
            .get("authorization")
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned),
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        peer: request.peer_addr(),
    };
    // Answer from the state as it was when the request arrived, without holding the lock
    // across the delay.
    let (delay, answer) = {
        let mut locked = state.lock().expect("mock state");
        locked.requests.push(recorded.clone());
        let answer = answer(&recorded, &locked.reply, &locked.stream, &state);
        (locked.delay, answer)
    };
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    answer
}

/// OpenAI's checks in its order (route, key, body), then the scripted reply.
fn answer(
    request: &RecordedRequest,
    reply: &Reply,
    script: &StreamScript,
    state: &web::Data<Mutex<State>>,
) -> HttpResponse {
    if request.method != "POST" || request.path != "/v1/chat/completions" {
        return error(
            404,
            error_body(
                &format!("Invalid URL ({} {})", request.method, request.path),
                "invalid_request_error",
                None,
            ),
        );
    }
    match request
        .authorization
        .as_deref()
        .and_then(|value| value.strip_prefix("Bearer "))
    {
        None => {
            return error(
                401,
                error_body(
                    "You didn't provide an API key. You need to provide your API key in an \
                     Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
                    "invalid_request_error",
                    None,
                ),
            );
        }
        Some(key) if key != API_KEY => {
            return error(
                401,
                error_body(
                    &format!(
                        "Incorrect API key provided: {}. You can find your API key at \
                         https://platform.openai.com/account/api-keys.",
                        masked(key)
                    ),
                    "invalid_request_error",
                    Some("invalid_api_key"),
                ),
            );
        }
        Some(_) => {}
    }
    if request.body.is_null() {
        return error(
            400,
            error_body(
                "We could not parse the JSON body of your request. (HINT: This likely means you \
                 aren't using your HTTP library correctly.)",
                "invalid_request_error",
                None,
            ),
        );
    }
    let Some(model) = request.body["model"].as_str() else {
        return error(
            400,
            error_body(
                "you must provide a model parameter",
                "invalid_request_error",
                None,
            ),
        );
    };
    if request.body["messages"]
        .as_array()
        .is_none_or(Vec::is_empty)
    {
        return error(
            400,
            error_body(
                "Missing required parameter: 'messages'.",
                "invalid_request_error",
                Some("missing_required_parameter"),
            ),
        );
    }
    match reply {
        Reply::Completion(text) if request.body["stream"].as_bool() == Some(true) => {
            HttpResponse::Ok()
                .insert_header(("x-request-id", request_id()))
                .insert_header(("cache-control", "no-cache"))
                .content_type("text/event-stream; charset=utf-8")
                .streaming(event_stream(model, text, script, state.clone()))
        }
        Reply::Completion(text) => HttpResponse::Ok()
            .insert_header(("x-request-id", request_id()))
            .json(completion(model, request, text)),
        Reply::Error {
            status,
            body,
            retry_after,
        } => {
            let mut response = status_builder(*status);
            if let Some(seconds) = retry_after {
                response.insert_header(("retry-after", seconds.as_str()));
            }
            response.json(body)
        }
        Reply::Raw { status, body } => status_builder(*status)
            .content_type("application/json")
            .body(body.clone()),
    }
}

fn completion(model: &str, request: &RecordedRequest, text: &str) -> Value {
    // Word counts stand in for tokens: the shape matters here, not the numbers.
    let prompt_tokens: usize = request
        .contents()
        .iter()
        .map(|content| content.split_whitespace().count())
        .sum();
    let completion_tokens = text.split_whitespace().count();
    json!({
        "id": format!("chatcmpl-mock{:08}", NEXT_ID.fetch_add(1, Ordering::Relaxed)),
        "object": "chat.completion",
        "created": chrono::Utc::now().timestamp(),
        "model": model,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": text, "refusal": null, "annotations": []},
            "logprobs": null,
            "finish_reason": "stop"
        }],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens
        },
        "service_tier": "default",
        "system_fingerprint": "fp_mock"
    })
}

/// A streamed completion's events as OpenAI sends them, one write each, paced by `script`.
fn event_stream(
    model: &str,
    text: &str,
    script: &StreamScript,
    state: web::Data<Mutex<State>>,
) -> impl futures_util::Stream<Item = Result<web::Bytes, Infallible>> + 'static {
    let id = format!(
        "chatcmpl-mock{:08}",
        NEXT_ID.fetch_add(1, Ordering::Relaxed)
    );
    let created = chrono::Utc::now().timestamp();
    let chunk = |delta: Value, finish_reason: Value| {
        json!({
            "id": id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "system_fingerprint": "fp_mock",
            "choices": [{
                "index": 0,
                "delta": delta,
                "logprobs": null,
                "finish_reason": finish_reason
            }]
        })
        .to_string()
    };
    // Word by word, each with the space after it, so the pieces join back into `text`.
    let pieces: Vec<&str> = text.split_inclusive(' ').collect();
    let sent = match &script.end {
        StreamEnd::Done => pieces.len(),
        StreamEnd::Error { after, .. } | StreamEnd::Cut { after } => (*after).min(pieces.len()),
    };
    let mut events = vec![(
        Duration::ZERO,
        chunk(
            json!({"role": "assistant", "content": "", "refusal": null}),
            Value::Null,
        ),
    )];
    for (index, piece) in pieces[..sent].iter().enumerate() {
        let mut wait = script.delay;
        if let Some((after, pause)) = script.stall
            && after == index
        {
            wait += pause;
        }
        events.push((wait, chunk(json!({"content": piece}), Value::Null)));
    }
    match &script.end {
        StreamEnd::Done => {
            events.push((script.delay, chunk(json!({}), json!("stop"))));
            events.push((script.delay, "[DONE]".to_owned()));
        }
        StreamEnd::Error { body, .. } => events.push((script.delay, body.to_string())),
        StreamEnd::Cut { .. } => {}
    }
    let total = events.len();
    let mut watch = HangUpWatch {
        state,
        finished: false,
    };
    futures_util::stream::iter(events.into_iter().enumerate())
        .then(|(index, (wait, data))| async move {
            if !wait.is_zero() {
                tokio::time::sleep(wait).await;
            }
            (index, data)
        })
        .map(move |(index, data)| {
            // The whole watch moves into the closure (not just the field), so it lives as long
            // as the body does.
            let watch = &mut watch;
            watch.finished = index + 1 == total;
            Ok(web::Bytes::from(format!("data: {data}\n\n")))
        })
}

/// Lives as long as a streamed answer: actix drops the body when the client goes away or a
/// write to it fails, so being dropped before the last event means the client hung up.
struct HangUpWatch {
    state: web::Data<Mutex<State>>,
    finished: bool,
}

impl Drop for HangUpWatch {
    fn drop(&mut self) {
        if !self.finished {
            self.state.lock().expect("mock state").stream_cancelled = true;
        }
    }
}

fn error(status: u16, body: Value) -> HttpResponse {
    status_builder(status)
        .insert_header(("x-request-id", request_id()))
        .json(body)
}

fn status_builder(status: u16) -> actix_web::HttpResponseBuilder {
    HttpResponse::build(actix_web::http::StatusCode::from_u16(status).expect("a valid HTTP status"))
}

fn request_id() -> String {
    format!("req_mock{:08}", NEXT_ID.fetch_add(1, Ordering::Relaxed))
}

/// As OpenAI quotes a wrong key: its start and its last four characters.
fn masked(key: &str) -> String {
    let chars: Vec<char> = key.chars().collect();
    if chars.len() <= 12 {
        return "*".repeat(chars.len());
    }
    let start: String = chars[..8].iter().collect();
    let end: String = chars[chars.len() - 4..].iter().collect();
    format!("{start}{}{end}", "*".repeat(chars.len() - 12))
}

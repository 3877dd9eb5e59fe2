//! The member scenario: each virtual client becomes a member the way a visitor does (signs up,
//! starts the trial checkout, pays the demo checkout with the test card), joins `/member` with
//! its session secret in `auth.token`, and chats: a message, the streamed reply to its end, a
//! pause, the next message in the same chat, until the run ends.
//!
//! Timed: send -> ack (the message stored), ack -> first piece, the gap between pieces, and each
//! token's forwarding overhead (its arrival minus the moment the generator's mock provider wrote
//! it, read from the token's stamp; see `ai_mock`).

use std::net::IpAddr;
use std::time::Duration;

use futures_util::StreamExt;
use rand::Rng;
use serde_json::{Value, json};
use tokio::time::Instant;

use super::acks::{Ack, AckLog};
use super::client::{Client, ClientError, Target, ack_of, event_of};
use super::stats::Stats;
use super::{Finished, PATIENCE, jittered};

const PASSWORD: &str = "load test password 1";
const TEST_CARD: &str = "4242 4242 4242 4242";
const QUESTIONS: [&str; 3] = [
    "How do I update my web browser?",
    "My computer is slow when I open many tabs. What can I do?",
    "How do I find a file I downloaded yesterday?",
];

/// Where members are made: the server's base URL and an HTTP client from this client's source
/// address (the server limits sign-ups and checkouts per address).
pub struct Signup<'a> {
    pub base: &'a url::Url,
    pub http: &'a reqwest::Client,
    /// Unique to the run, so a second run against the same database makes new accounts.
    pub email: String,
}

#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("{step}: {error}")]
    Http {
        step: &'static str,
        error: reqwest::Error,
    },
    #[error("{step} answered {status}: {body}")]
    Status {
        step: &'static str,
        status: u16,
        body: String,
    },
    #[error("{0}")]
    Answer(&'static str),
}

impl SetupError {
    pub fn kind(&self) -> String {
        format!("setup_{}", self.step_kind())
    }

    /// The failed step, and the status it answered if it did (`payment_402`): the error's kind
    /// for a scenario whose steps are not its setup.
    pub(crate) fn step_kind(&self) -> String {
        match self {
            SetupError::Http { step, .. } => (*step).to_owned(),
            SetupError::Status { step, status, .. } => format!("{step}_{status}"),
            SetupError::Answer(_) => "answer".to_owned(),
        }
    }
}

async fn post(
    signup: &Signup<'_>,
    step: &'static str,
    path: &str,
    cookie: Option<&str>,
    body: Value,
) -> Result<reqwest::Response, SetupError> {
    let url = signup
        .base
        .join(path)
        .map_err(|_| SetupError::Answer("a path the server gave is not a URL"))?;
    // No Origin: a script, not a browser (a browser's writes must come from the site itself).
    let mut request = signup.http.post(url).json(&body);
    if let Some(cookie) = cookie {
        request = request.header("cookie", cookie);
    }
    let response = request
        .send()
        .await
        .map_err(|error| SetupError::Http { step, error })?;
    if !response.status().is_success() {
        let status = response.status().as_u16();
        let body = response.text().await.unwrap_or_default();
        return Err(SetupError::Status { step, status, body });
    }
    Ok(response)
}

/// Signs up and pays the trial: the session secret of a member with access.
pub async fn become_member(signup: &Signup<'_>) -> Result<String, SetupError> {
    let response = post(
        signup,
        "signup",
        "/api/auth/signup",
        None,
        json!({ "email": signup.email, "password": PASSWORD }),
    )
    .await?;
    // `helpnow_session`, or `__Host-helpnow_session` from a server on https: sent back as set.
    let cookie = response
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|value| value.to_str().ok())
        .filter_map(|value| value.split(';').next())
        .find(|pair| {
            pair.starts_with("helpnow_session=") || pair.starts_with("__Host-helpnow_session=")
        })
        .map(str::to_owned)
        .ok_or(SetupError::Answer("the sign-up set no session cookie"))?;
    let secret = cookie
        .split_once('=')
        .map(|(_, value)| value.to_owned())
        .unwrap_or_default();
    let started: Value = post(
        signup,
        "checkout",
        "/api/create-checkout.js",
        Some(&cookie),
        json!({ "source": "chat_trial_prompt", "isTrial": true }),
    )
    .await?
    .json()
    .await
    .map_err(|error| SetupError::Http {
        step: "checkout",
        error,
    })?;
    let checkout = started
        .get("url")
        .and_then(Value::as_str)
        .and_then(|url| url.rsplit('/').next())
        .ok_or(SetupError::Answer("the checkout answer has no URL"))?
        .to_owned();
    pay_demo_checkout(signup, &checkout, Some(&cookie)).await?;
    Ok(secret)
}

/// Pays the demo checkout `checkout` (its session id, the last part of `/demo-checkout/{id}`)
/// with the test card, as `payer.email` types it on the page; `cookie` is the session of the
/// account that started it, if one did.
pub(crate) async fn pay_demo_checkout(
    payer: &Signup<'_>,
    checkout: &str,
    cookie: Option<&str>,
) -> Result<(), SetupError> {
    post(
        payer,
        "payment",
        &format!("/api/demo-checkout/{checkout}/complete"),
        cookie,
        json!({ "email": payer.email, "cardNumber": TEST_CARD }),
    )
    .await?;
    Ok(())
}

/// Members to sign up at once: enough to keep the server's password hashing busy.
const SETUP_CONCURRENCY: usize = 16;

/// Makes `count` members, `SETUP_CONCURRENCY` at a time, each from the HTTP client of its source
/// address: their session secrets in order (`None` where one could not be made, counted as a
/// failed connection). Each member's setup time is sampled as `setup_ms`.
pub async fn make_members(
    base: &url::Url,
    http: &[reqwest::Client],
    count: u64,
    stats: &Stats,
) -> Vec<Option<String>> {
    let run_id: String = {
        let mut rng = rand::rng();
        (0..8)
            .map(|_| char::from(rng.sample(rand::distr::Alphanumeric)).to_ascii_lowercase())
            .collect()
    };
    if count > 0 {
        eprintln!("making {count} members (sign-up and the demo trial checkout)...");
    }
    futures_util::stream::iter(0..count)
        .map(|index| {
            let run_id = &run_id;
            async move {
                let http = http.get(index as usize % http.len().max(1))?;
                let signup = Signup {
                    base,
                    http,
                    email: format!("loadtest-{run_id}-{index}@example.com"),
                };
                let began = Instant::now();
                match become_member(&signup).await {
                    Ok(secret) => {
                        stats.sample("setup_ms", began.elapsed());
                        Some(secret)
                    }
                    Err(error) => {
                        Stats::count(&stats.connections_failed);
                        tracing_error(&error);
                        stats.error(error.kind());
                        None
                    }
                }
            }
        })
        .buffered(SETUP_CONCURRENCY)
        .collect()
        .await
}

/// One member, connected and chatting until the run ends; with `acks`, each acknowledged message
/// is recorded as it is.
pub async fn run(
    target: &Target,
    local: IpAddr,
    secret: &str,
    stats: &Stats,
    ends: Instant,
    think: Duration,
    acks: Option<&AckLog>,
) {
    let auth = json!({ "token": secret });
    let mut client = match Client::connect(target, local, "/member", &auth, None, PATIENCE).await {
        Ok(client) => client,
        Err(error) => {
            Stats::count(&stats.connections_failed);
            return stats.error(error.kind());
        }
    };
    Stats::count(&stats.connections_opened);
    let record = acks.map(|log| (log, secret));
    match chat(&mut client, stats, ends, think, record).await {
        Ok(Finished::Run | Finished::Conversation) => client.close().await,
        Err(error) => stats.error(error.kind()),
    }
}

fn tracing_error(error: &SetupError) {
    // The first failures explain the rest; the report counts them by kind.
    static SHOWN: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    if SHOWN.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < 3 {
        // reqwest's own text says only that a request failed; its causes say why.
        let mut text = error.to_string();
        let mut cause = match error {
            SetupError::Http { error, .. } => std::error::Error::source(error),
            _ => None,
        };
        while let Some(inner) = cause {
            text.push_str(&format!(": {inner}"));
            cause = inner.source();
        }
        eprintln!("a member could not be made: {text}");
    }
}

/// Records a `chat:send` acknowledgement by its chat and message ids; one that lacks them is an
/// error of kind `ack_without_id` (it could not be checked after the run).
fn recorded(log: &AckLog, session: &str, chat: Option<&str>, ack: &Value, stats: &Stats) {
    match (chat, ack.get("messageId").and_then(Value::as_str)) {
        (Some(chat), Some(message)) => log.record(
            &Ack::Member {
                session: session.to_owned(),
                chat: chat.to_owned(),
                message: message.to_owned(),
            },
            stats,
        ),
        _ => stats.error("ack_without_id"),
    }
}

async fn next(client: &mut Client) -> Result<crate::realtime::socketio::Packet, ClientError> {
    tokio::time::timeout(PATIENCE, client.next_packet())
        .await
        .map_err(|_| ClientError::Timeout("the next event"))?
}

/// Where an acknowledged message is recorded, and the member's session secret, which reads it back.
type Record<'a> = Option<(&'a AckLog, &'a str)>;

async fn chat(
    client: &mut Client,
    stats: &Stats,
    ends: Instant,
    think: Duration,
    record: Record<'_>,
) -> Result<Finished, ClientError> {
    loop {
        let packet = next(client).await?;
        if event_of(&packet).is_some_and(|(name, _)| name == "chat:ready") {
            break;
        }
    }
    let mut chat_id: Option<String> = None;
    for turn in 0.. {
        let pause = jittered(think);
        if Instant::now() + pause >= ends {
            return Ok(Finished::Run);
        }
        tokio::time::sleep(pause).await;
        let text = QUESTIONS[turn % QUESTIONS.len()];
        let mut data = json!({ "text": text });
        if let Some(id) = &chat_id {
            data["chatId"] = json!(id);
        }
        let sent = Instant::now();
        let id = client.emit_with_ack("chat:send", data).await?;
        Stats::count(&stats.messages_sent);
        let mut acked = None;
        let mut last_piece: Option<Instant> = None;
        loop {
            let packet = next(client).await?;
            if let Some(ack) = ack_of(&packet, id) {
                super::acknowledged(ack, stats, sent)?;
                chat_id = ack.get("chatId").and_then(Value::as_str).map(str::to_owned);
                if let Some((log, session)) = record {
                    recorded(log, session, chat_id.as_deref(), ack, stats);
                }
                acked = Some(Instant::now());
                continue;
            }
            match event_of(&packet) {
                Some(("chat:delta", piece)) => {
                    let now = Instant::now();
                    let received = super::ai_mock::now_micros();
                    match last_piece {
                        Some(last) => stats.sample("token_gap_ms", now - last),
                        None => {
                            if let Some(acked) = acked {
                                stats.sample("first_piece_ms", now - acked);
                            }
                        }
                    }
                    last_piece = Some(now);
                    let text = piece.get("text").and_then(Value::as_str).unwrap_or("");
                    for stamp in super::ai_mock::stamps(text) {
                        let overhead = Duration::from_micros(received.saturating_sub(stamp));
                        stats.sample("forward_ms", overhead);
                    }
                }
                Some(("chat:done", _)) => {
                    Stats::count(&stats.replies);
                    break;
                }
                Some(("chat:error", error)) => {
                    let text = error.get("text").and_then(Value::as_str).unwrap_or("");
                    return Err(ClientError::Reply(text.to_owned()));
                }
                _ => {}
            }
        }
    }
    Ok(Finished::Run)
}

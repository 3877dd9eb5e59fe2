//! The fault run's history (Jepsen's model): every client writes down what it asked and what it
//! was told, as it happens, one JSON object a line, and the checker ([`super::checker`]) judges
//! the whole afterwards. A send that got no answer is a `timeout`: it may or may not have been
//! stored, and the checker allows either, but never twice.
//!
//! The clients behave as the web app does under faults: a dropped connection is opened again
//! (after 0.5-1.5 s, socket.io-client's randomised delay) with the same visitor id or session;
//! a send unanswered for 10 s (the page's `SEND_ACK_TIMEOUT_MS`) is given up and the connection
//! opened again, so that the server's copy of the conversation shows what was kept; a visitor on
//! the final message waits for the automatic checkout and leaves with it.

use std::io::Write;
use std::net::IpAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::Rng;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::time::Instant;

use crate::loadtest::client::{Client, ClientError, Target, ack_of, event_of};
use crate::realtime::socketio;

/// One line of the history: when (milliseconds since the run began), which client, what.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Line {
    pub t: u64,
    pub client: String,
    #[serde(flatten)]
    pub entry: Entry,
}

/// What a client did or was told.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Entry {
    /// A funnel visitor begins (its first line); `tab`: a second tab of the visitor that only
    /// follows the conversation (on another process, it is relayed to the holder).
    Visitor {
        visitor: String,
        funnel: String,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        tab: bool,
    },
    /// One device of a member begins (its first line); `member` names the member's session.
    Device { member: String },
    /// The socket joined its namespace, on this process (the balancer's cookie).
    Connect { server: Option<String> },
    /// The connection could not be made or the namespace refused it (`code`: the server's).
    ConnectFailed { reason: String },
    /// The connection ended (by the server, a fault, or the client itself: `reason`).
    Disconnect { reason: String },
    /// A send, with the acknowledgement id it asked for.
    Send {
        op: u64,
        text: String,
        chat: Option<String>,
    },
    /// Its acknowledgement: `ok`, or the server's refusal `code`; a member's carries the ids.
    Ack {
        op: u64,
        ok: bool,
        code: Option<String>,
        chat: Option<String>,
        message: Option<String>,
    },
    /// No acknowledgement came in time: indeterminate.
    Timeout { op: u64 },
    /// An event the page would show or act on, as it came.
    Shown { event: String, data: Value },
    /// A member's sign-out was asked for (`started`) or answered (`done`).
    SignOut { member: String, done: bool },
}

impl Entry {
    /// The acknowledgement `ack` of send `op`, as the history keeps it (a member's carries the
    /// chat's and the message's ids; a visitor's has neither).
    fn ack(op: u64, ack: &Value) -> Self {
        let text = |key: &str| ack.get(key).and_then(Value::as_str).map(str::to_owned);
        Entry::Ack {
            op,
            ok: ack.get("ok") == Some(&Value::Bool(true)),
            code: text("code"),
            chat: text("chatId"),
            message: text("messageId"),
        }
    }

    fn is_ok(&self) -> bool {
        matches!(self, Entry::Ack { ok: true, .. })
    }
}

/// The history file, shared by every client: each line goes out in one write.
pub struct History {
    file: Mutex<std::io::BufWriter<std::fs::File>>,
    began: Instant,
}

impl History {
    pub fn create(path: &Path, began: Instant) -> Result<Self, String> {
        let file = std::fs::File::create(path)
            .map_err(|error| format!("cannot write {}: {error}", path.display()))?;
        Ok(Self {
            file: Mutex::new(std::io::BufWriter::new(file)),
            began,
        })
    }

    pub fn record(&self, client: &str, entry: Entry) {
        let line = Line {
            t: self.began.elapsed().as_millis() as u64,
            client: client.to_owned(),
            entry,
        };
        let Ok(mut text) = serde_json::to_string(&line) else {
            return;
        };
        text.push('\n');
        if let Ok(mut file) = self.file.lock() {
            let _ = file.write_all(text.as_bytes());
        }
    }

    pub fn flush(&self) {
        if let Ok(mut file) = self.file.lock() {
            let _ = file.flush();
        }
    }
}

/// Reads a history file back.
pub fn read(path: &Path) -> Result<Vec<Line>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|error| format!("cannot read {}: {error}", path.display()))?;
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            serde_json::from_str(line)
                .map_err(|error| format!("{}: {error}: {line}", path.display()))
        })
        .collect()
}

/// The page's patience with a send (`SEND_ACK_TIMEOUT_MS` in web/src/features/funnels).
const SEND_PATIENCE: Duration = Duration::from_secs(10);
/// How long a connection and its first event may take.
const CONNECT_PATIENCE: Duration = Duration::from_secs(10);
/// A reply that has not come in this long: the client connects again (a person would reload).
const REPLY_PATIENCE: Duration = Duration::from_secs(30);
/// How long a visitor on the final message waits for the automatic checkout (15 s in the spec).
const CHECKOUT_PATIENCE: Duration = Duration::from_secs(40);

/// The run's clock, as the clients see it.
#[derive(Clone, Copy)]
pub struct Phases {
    /// No new message is sent after this.
    pub sending_ends: Instant,
    /// Every client closes by this.
    pub ends: Instant,
}

/// Where the clients connect and what they record to.
pub struct Ctx {
    pub target: Target,
    pub history: Arc<History>,
    pub phases: Phases,
}

/// A socket.io client's randomised reconnection delay (1 s, ±50 %).
fn reconnect_delay() -> Duration {
    Duration::from_secs_f64(rand::rng().random_range(0.5..1.5))
}

/// The next packet of `client` before `deadline` (`Ok(None)`: the deadline came); each event is
/// recorded as shown.
async fn next_before(
    ctx: &Ctx,
    name: &str,
    client: &mut Client,
    deadline: Instant,
) -> Result<Option<socketio::Packet>, ClientError> {
    match tokio::time::timeout_at(deadline, client.next_packet()).await {
        Err(_) => Ok(None),
        Ok(Err(error)) => Err(error),
        Ok(Ok(packet)) => {
            // The server closed the socket (socket.io-client's "io server disconnect": it does
            // not connect again by itself; the page decides).
            if packet.kind == socketio::PacketType::Disconnect {
                return Err(ClientError::Refused(
                    "the server disconnected the socket".into(),
                ));
            }
            if let Some((event, data)) = event_of(&packet) {
                ctx.history.record(
                    name,
                    Entry::Shown {
                        event: event.to_owned(),
                        data: data.clone(),
                    },
                );
            }
            Ok(Some(packet))
        }
    }
}

/// Connects `name` to `namespace` with `auth` and records the outcome: the client, or the error
/// (recorded as `connect_failed`).
async fn connect(
    ctx: &Ctx,
    name: &str,
    local: IpAddr,
    namespace: &str,
    auth: &Value,
) -> Result<Client, ClientError> {
    match Client::connect(&ctx.target, local, namespace, auth, None, CONNECT_PATIENCE).await {
        Ok(client) => {
            ctx.history.record(
                name,
                Entry::Connect {
                    server: client.server().map(str::to_owned),
                },
            );
            Ok(client)
        }
        Err(error) => {
            ctx.history.record(
                name,
                Entry::ConnectFailed {
                    reason: error.to_string(),
                },
            );
            Err(error)
        }
    }
}

/// What a funnel visitor's page holds, enough to decide what to do next.
#[derive(Default)]
struct Page {
    /// (role, text) of each message shown.
    messages: Vec<(String, String)>,
    is_final: bool,
}

impl Page {
    fn apply(&mut self, event: &str, data: &Value) {
        match event {
            "conversation" => {
                self.messages = data
                    .get("messages")
                    .and_then(Value::as_array)
                    .map(|messages| messages.iter().filter_map(role_and_text).collect())
                    .unwrap_or_default();
                self.is_final = data.get("final") == Some(&Value::Bool(true))
                    || data
                        .get("messages")
                        .and_then(Value::as_array)
                        .is_some_and(|m| m.iter().any(|m| m.get("isFinal") == Some(&json!(true))));
            }
            "message" => {
                if let Some(message) = role_and_text(data) {
                    self.messages.push(message);
                }
                if data.get("isFinal") == Some(&json!(true)) {
                    self.is_final = true;
                }
            }
            _ => {}
        }
    }

    fn sent(&self) -> usize {
        self.messages
            .iter()
            .filter(|(role, _)| role == "user")
            .count()
    }

    fn awaiting_reply(&self) -> bool {
        self.messages.last().is_some_and(|(role, _)| role == "user")
    }
}

fn role_and_text(message: &Value) -> Option<(String, String)> {
    Some((
        message.get("role")?.as_str()?.to_owned(),
        message.get("text")?.as_str()?.to_owned(),
    ))
}

/// How a connection ended, for the next step.
enum Ended {
    /// The visitor is done (left with the checkout, or the run ends).
    Done,
    /// Connect again.
    Again(String),
}

/// Funnel visitor number `n`: one conversation after another, each to its checkout, until the
/// sending ends.
pub async fn visitor(
    ctx: Arc<Ctx>,
    n: u64,
    local: IpAddr,
    funnel: &'static str,
    texts: &'static [&'static str],
) {
    let mut round = 0;
    while Instant::now() < ctx.phases.sending_ends {
        round += 1;
        let name = format!("v{n}.{round}");
        let visitor = super::super::visitor_id();
        ctx.history.record(
            &name,
            Entry::Visitor {
                visitor: visitor.clone(),
                funnel: funnel.to_owned(),
                tab: false,
            },
        );
        let auth = json!({ "funnel": funnel, "visitorId": visitor });
        // Every other visitor has a second tab open, which the balancer may send to another
        // process than the conversation's holder.
        let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let tab = (n % 2 == 1).then(|| {
            tokio::spawn(second_tab(
                ctx.clone(),
                format!("{name}t"),
                visitor.clone(),
                funnel,
                local,
                done.clone(),
            ))
        });
        loop {
            if Instant::now() >= ctx.phases.ends {
                return;
            }
            let Ok(mut client) = connect(&ctx, &name, local, "/funnel", &auth).await else {
                tokio::time::sleep(reconnect_delay()).await;
                continue;
            };
            let ended = converse(&ctx, &name, &mut client, texts).await;
            match ended {
                Ok(Ended::Done) => {
                    ctx.history.record(
                        &name,
                        Entry::Disconnect {
                            reason: "left".into(),
                        },
                    );
                    client.close().await;
                    break;
                }
                Ok(Ended::Again(reason)) => {
                    ctx.history.record(&name, Entry::Disconnect { reason });
                    client.close().await;
                }
                Err(error) => {
                    ctx.history.record(
                        &name,
                        Entry::Disconnect {
                            reason: error.to_string(),
                        },
                    );
                }
            }
            tokio::time::sleep(reconnect_delay()).await;
        }
        done.store(true, std::sync::atomic::Ordering::SeqCst);
        if let Some(tab) = tab {
            let _ = tab.await;
        }
    }
}

/// A visitor's second tab: it follows the conversation, connecting again when dropped, until
/// the visitor leaves.
async fn second_tab(
    ctx: Arc<Ctx>,
    name: String,
    visitor: String,
    funnel: &'static str,
    local: IpAddr,
    done: Arc<std::sync::atomic::AtomicBool>,
) {
    ctx.history.record(
        &name,
        Entry::Visitor {
            visitor: visitor.clone(),
            funnel: funnel.to_owned(),
            tab: true,
        },
    );
    let auth = json!({ "funnel": funnel, "visitorId": visitor });
    let left =
        || done.load(std::sync::atomic::Ordering::SeqCst) || Instant::now() >= ctx.phases.ends;
    while !left() {
        let Ok(mut client) = connect(&ctx, &name, local, "/funnel", &auth).await else {
            tokio::time::sleep(reconnect_delay()).await;
            continue;
        };
        let reason = loop {
            if left() {
                client.close().await;
                break "left".to_owned();
            }
            let until = Instant::now() + Duration::from_millis(500);
            if let Err(error) = next_before(&ctx, &name, &mut client, until).await {
                break error.to_string();
            }
        };
        ctx.history.record(&name, Entry::Disconnect { reason });
        tokio::time::sleep(reconnect_delay()).await;
    }
}

/// One connection of a visitor: the conversation as the server has it, then the next message
/// when no reply is owed, until the final message's checkout.
async fn converse(
    ctx: &Ctx,
    name: &str,
    client: &mut Client,
    texts: &[&str],
) -> Result<Ended, ClientError> {
    let mut page = Page::default();
    // The conversation comes first on every join.
    let deadline = Instant::now() + CONNECT_PATIENCE;
    loop {
        let Some(packet) = next_before(ctx, name, client, deadline).await? else {
            return Ok(Ended::Again("no conversation".into()));
        };
        if let Some(("conversation", data)) = event_of(&packet) {
            page.apply("conversation", data);
            break;
        }
    }
    loop {
        if page.is_final {
            let deadline = Instant::now() + CHECKOUT_PATIENCE;
            loop {
                let Some(packet) = next_before(ctx, name, client, deadline).await? else {
                    return Ok(Ended::Done);
                };
                if let Some(("checkout", _)) = event_of(&packet) {
                    return Ok(Ended::Done);
                }
            }
        }
        if page.awaiting_reply() {
            let deadline = Instant::now() + REPLY_PATIENCE;
            loop {
                let Some(packet) = next_before(ctx, name, client, deadline).await? else {
                    return Ok(Ended::Again("no reply".into()));
                };
                if let Some((event, data)) = event_of(&packet) {
                    page.apply(event, data);
                    if event == "conversation" || (event == "message" && !page.awaiting_reply()) {
                        break;
                    }
                }
            }
            continue;
        }
        if Instant::now() >= ctx.phases.sending_ends {
            return Ok(Ended::Done);
        }
        let Some(text) = texts.get(page.sent()) else {
            // Every message sent and no final one: the flow ended otherwise; a new visitor.
            return Ok(Ended::Done);
        };
        // A person reads the reply and types the next message, the page's events coming in.
        let think = Duration::from_secs_f64(rand::rng().random_range(0.5..2.0));
        let until = Instant::now() + think;
        while let Some(packet) = next_before(ctx, name, client, until).await? {
            if let Some((event, data)) = event_of(&packet) {
                page.apply(event, data);
            }
        }
        if page.is_final || page.awaiting_reply() {
            continue;
        }
        let op = client
            .emit_with_ack("send", json!({ "text": text }))
            .await?;
        ctx.history.record(
            name,
            Entry::Send {
                op,
                text: (*text).to_owned(),
                chat: None,
            },
        );
        let deadline = Instant::now() + SEND_PATIENCE;
        loop {
            let Some(packet) = next_before(ctx, name, client, deadline).await? else {
                ctx.history.record(name, Entry::Timeout { op });
                return Ok(Ended::Again("send unanswered".into()));
            };
            if let Some(ack) = ack_of(&packet, op) {
                let entry = Entry::ack(op, ack);
                let ok = entry.is_ok();
                ctx.history.record(name, entry);
                if ok {
                    page.messages.push(("user".into(), (*text).to_owned()));
                }
                break;
            }
            if let Some((event, data)) = event_of(&packet) {
                page.apply(event, data);
            }
        }
    }
}

/// What the devices of one member share.
pub struct Member {
    /// The session secret (the socket's token and the cookie).
    pub secret: String,
    /// Short name in the history.
    pub name: String,
    /// The chat both devices write in, once the first message made it.
    pub chat: Mutex<Option<String>>,
    /// Set when the sign-out was asked for: a refused connection then ends the device.
    pub signed_out: std::sync::atomic::AtomicBool,
}

/// The questions members ask, each made unique by the device and turn (a send that timed out
/// is found by its text).
const QUESTIONS: [&str; 3] = [
    "How do I update my web browser?",
    "My computer is slow when I open many tabs. What can I do?",
    "How do I find a file I downloaded yesterday?",
];

/// One device of a member: connected, asking in the member's one chat, following the replies,
/// until the run ends or the member signed out.
pub async fn device(ctx: Arc<Ctx>, member: Arc<Member>, device: char, local: IpAddr) {
    let name = format!("{}{device}", member.name);
    ctx.history.record(
        &name,
        Entry::Device {
            member: member.name.clone(),
        },
    );
    let auth = json!({ "token": member.secret });
    let mut turn = 0;
    while Instant::now() < ctx.phases.ends {
        let mut client = match connect(&ctx, &name, local, "/member", &auth).await {
            Ok(client) => client,
            // Refused after the sign-out, as it should be: this device is done.
            Err(ClientError::Refused(_))
                if member.signed_out.load(std::sync::atomic::Ordering::SeqCst) =>
            {
                return;
            }
            Err(_) => {
                tokio::time::sleep(reconnect_delay()).await;
                continue;
            }
        };
        let reason = match chat(&ctx, &member, &name, device, &mut client, &mut turn).await {
            Ok(reason) => {
                client.close().await;
                reason
            }
            Err(error) => error.to_string(),
        };
        ctx.history.record(&name, Entry::Disconnect { reason });
        tokio::time::sleep(reconnect_delay()).await;
    }
}

async fn chat(
    ctx: &Ctx,
    member: &Member,
    name: &str,
    device: char,
    client: &mut Client,
    turn: &mut u32,
) -> Result<String, ClientError> {
    let deadline = Instant::now() + CONNECT_PATIENCE;
    loop {
        let Some(packet) = next_before(ctx, name, client, deadline).await? else {
            return Ok("no chat:ready".into());
        };
        if event_of(&packet).is_some_and(|(event, _)| event == "chat:ready") {
            break;
        }
    }
    loop {
        // Thinking, and reading what the other device's replies stream meanwhile.
        let think = Duration::from_secs_f64(rand::rng().random_range(1.0..4.0));
        let until = (Instant::now() + think).min(ctx.phases.ends);
        while next_before(ctx, name, client, until).await?.is_some() {}
        if Instant::now() >= ctx.phases.ends {
            return Ok("the run ended".into());
        }
        if Instant::now() >= ctx.phases.sending_ends {
            continue;
        }
        let chat_id = member.chat.lock().map(|chat| chat.clone()).unwrap_or(None);
        // The second device writes once the first made the chat.
        if chat_id.is_none() && device != 'a' {
            continue;
        }
        *turn += 1;
        let text = format!(
            "{} ({} {device}{turn})",
            QUESTIONS[*turn as usize % QUESTIONS.len()],
            member.name
        );
        let mut data = json!({ "text": text });
        if let Some(id) = &chat_id {
            data["chatId"] = json!(id);
        }
        let op = client.emit_with_ack("chat:send", data).await?;
        ctx.history.record(
            name,
            Entry::Send {
                op,
                text,
                chat: chat_id.clone(),
            },
        );
        let deadline = Instant::now() + SEND_PATIENCE;
        let acked = loop {
            let Some(packet) = next_before(ctx, name, client, deadline).await? else {
                ctx.history.record(name, Entry::Timeout { op });
                return Ok("send unanswered".into());
            };
            if let Some(ack) = ack_of(&packet, op) {
                let entry = Entry::ack(op, ack);
                let ok = entry.is_ok();
                let chat = ack.get("chatId").and_then(Value::as_str).map(str::to_owned);
                ctx.history.record(name, entry);
                if ok && let (Some(chat), Ok(mut shared)) = (chat, member.chat.lock()) {
                    shared.get_or_insert(chat);
                }
                break ok;
            }
        };
        if !acked {
            continue;
        }
        // The reply: its pieces, then done (or the error).
        let deadline = Instant::now() + REPLY_PATIENCE;
        loop {
            let Some(packet) = next_before(ctx, name, client, deadline).await? else {
                return Ok("no reply".into());
            };
            if let Some((event, _)) = event_of(&packet)
                && (event == "chat:done" || event == "chat:error")
            {
                break;
            }
        }
    }
}

/// Signs `member` out at `at`: its sockets on every process must close.
pub async fn sign_out(
    ctx: Arc<Ctx>,
    member: Arc<Member>,
    http: reqwest::Client,
    base: url::Url,
    at: Instant,
) {
    tokio::time::sleep_until(at).await;
    member
        .signed_out
        .store(true, std::sync::atomic::Ordering::SeqCst);
    ctx.history.record(
        &member.name,
        Entry::SignOut {
            member: member.name.clone(),
            done: false,
        },
    );
    let Ok(url) = base.join("/api/auth/logout") else {
        return;
    };
    // Asked again until it is answered: a fault may be in the way.
    while Instant::now() < ctx.phases.ends {
        let answer = http
            .post(url.clone())
            .header(
                reqwest::header::COOKIE,
                format!("helpnow_session={}", member.secret),
            )
            .timeout(Duration::from_secs(5))
            .send()
            .await;
        if answer.is_ok_and(|answer| answer.status().is_success()) {
            ctx.history.record(
                &member.name,
                Entry::SignOut {
                    member: member.name.clone(),
                    done: true,
                },
            );
            return;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

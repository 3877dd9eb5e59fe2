//! The member actor with in-memory ports and paused time: replies stream from a test-driven AI
//! whose streams report when they are dropped (which, in the server, hangs up on the provider).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use futures_util::stream::BoxStream;
use futures_util::{FutureExt, StreamExt};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::ports::{Appended, StoredChat, TaskBrief, TaskItemBrief};
use super::*;
use crate::ports::{AiError, AiMessage, AiPurpose, AiRequest, Role, StoreError};
use crate::reply::Reply;
use crate::rules::chat::{GREETING, chat_title};
use crate::test_support::{Events, RecordedAnalytics, RecordedTelemetry, TestClient};

const USER: &str = "member-1";

// ---------------------------------------------------------------------------------------------
// Ports

struct StoredMessage {
    id: String,
    role: Role,
    content: String,
}

struct MemoryChat {
    owner: String,
    title: String,
    messages: Vec<StoredMessage>,
    /// Each message appended after the chat started adds one.
    revision: u64,
}

struct MemoryStore {
    chats: Arc<Mutex<HashMap<String, MemoryChat>>>,
    tasks: Mutex<HashMap<String, (String, TaskBrief)>>,
    access: AtomicBool,
    /// With access: a trial with this time left (`None`: a subscription).
    trial_left: Mutex<Option<Duration>>,
    /// How many times the access was read.
    access_reads: AtomicUsize,
    next_id: Mutex<u32>,
    /// Writes take this long (they happen when the future runs, as in a database).
    write_delay: Mutex<Duration>,
    /// The next this many appends of assistant messages fail.
    failing_replies: Mutex<usize>,
    /// Reading a chat back fails.
    failing_reads: AtomicBool,
    /// How many times a chat was read.
    reads: AtomicUsize,
}

impl Default for MemoryStore {
    fn default() -> Self {
        Self {
            chats: Arc::default(),
            tasks: Mutex::default(),
            access: AtomicBool::new(true),
            trial_left: Mutex::new(None),
            access_reads: AtomicUsize::new(0),
            next_id: Mutex::new(0),
            write_delay: Mutex::new(Duration::ZERO),
            failing_replies: Mutex::new(0),
            failing_reads: AtomicBool::new(false),
            reads: AtomicUsize::new(0),
        }
    }
}

impl MemoryStore {
    /// The chat's messages as (role, content).
    fn messages(&self, chat_id: &str) -> Vec<(Role, String)> {
        self.chats.lock().expect("lock")[chat_id]
            .messages
            .iter()
            .map(|m| (m.role, m.content.clone()))
            .collect()
    }

    fn message_ids(&self, chat_id: &str) -> Vec<String> {
        self.chats.lock().expect("lock")[chat_id]
            .messages
            .iter()
            .map(|m| m.id.clone())
            .collect()
    }

    fn chat_count(&self) -> usize {
        self.chats.lock().expect("lock").len()
    }

    fn add_chat_of(&self, owner: &str) -> String {
        let id = format!("chat{}", self.chats.lock().expect("lock").len() + 100);
        self.chats.lock().expect("lock").insert(
            id.clone(),
            MemoryChat {
                owner: owner.into(),
                title: "Theirs".into(),
                messages: Vec::new(),
                revision: 0,
            },
        );
        id
    }

    /// Another writer (a tab served by another process) stores a message in the chat.
    fn append_elsewhere(&self, chat_id: &str, content: &str) {
        let mut chats = self.chats.lock().expect("lock");
        let chat = chats.get_mut(chat_id).expect("the chat");
        chat.messages.push(StoredMessage {
            id: format!("elsewhere-{}", chat.revision),
            role: Role::User,
            content: content.into(),
        });
        chat.revision += 1;
    }

    fn add_task(&self, owner: &str, task: TaskBrief) -> String {
        let id = format!("task{}", self.tasks.lock().expect("lock").len() + 1);
        self.tasks
            .lock()
            .expect("lock")
            .insert(id.clone(), (owner.into(), task));
        id
    }
}

impl super::ports::MemberStore for MemoryStore {
    fn access_left(
        &self,
        _user_id: &str,
    ) -> BoxFuture<'static, Result<Option<Duration>, StoreError>> {
        self.access_reads.fetch_add(1, Ordering::SeqCst);
        let left = self.access.load(Ordering::SeqCst).then(|| {
            self.trial_left
                .lock()
                .expect("lock")
                .unwrap_or(Duration::MAX)
        });
        async move { Ok(left) }.boxed()
    }

    fn create_chat(
        &self,
        user_id: &str,
        title: &str,
        greeting: &str,
        message_id: &str,
        content: &str,
    ) -> BoxFuture<'static, Result<String, StoreError>> {
        let mut next = self.next_id.lock().expect("lock");
        *next += 1;
        let id = format!("c{next}");
        self.chats.lock().expect("lock").insert(
            id.clone(),
            MemoryChat {
                owner: user_id.into(),
                title: title.into(),
                messages: vec![
                    StoredMessage {
                        id: format!("greeting-{id}"),
                        role: Role::Assistant,
                        content: greeting.into(),
                    },
                    StoredMessage {
                        id: message_id.into(),
                        role: Role::User,
                        content: content.into(),
                    },
                ],
                revision: 0,
            },
        );
        async move { Ok(id) }.boxed()
    }

    fn append_message(
        &self,
        user_id: &str,
        chat_id: &str,
        message_id: &str,
        role: Role,
        content: &str,
        expected: Option<u64>,
    ) -> BoxFuture<'static, Result<Appended, StoreError>> {
        if role == Role::Assistant {
            let mut failing = self.failing_replies.lock().expect("lock");
            if *failing > 0 {
                *failing -= 1;
                return async { Err(StoreError::Failed("disk full".into())) }.boxed();
            }
        }
        let delay = *self.write_delay.lock().expect("lock");
        let chats = self.chats.clone();
        let (user_id, chat_id, message_id, content) = (
            user_id.to_owned(),
            chat_id.to_owned(),
            message_id.to_owned(),
            content.to_owned(),
        );
        async move {
            tokio::time::sleep(delay).await;
            let mut chats = chats.lock().expect("lock");
            Ok(
                match chats.get_mut(&chat_id).filter(|chat| chat.owner == user_id) {
                    // As the real store: a message already there first, then the revision.
                    Some(chat) if chat.messages.iter().any(|m| m.id == message_id) => {
                        Appended::AlreadyThere
                    }
                    Some(chat) if expected.is_some_and(|expected| expected != chat.revision) => {
                        Appended::Moved
                    }
                    Some(chat) => {
                        chat.messages.push(StoredMessage {
                            id: message_id,
                            role,
                            content,
                        });
                        chat.revision += 1;
                        Appended::After {
                            revision: chat.revision - 1,
                        }
                    }
                    None => Appended::NoSuchChat,
                },
            )
        }
        .boxed()
    }

    fn chat(
        &self,
        user_id: &str,
        chat_id: &str,
        last: usize,
    ) -> BoxFuture<'static, Result<Option<StoredChat>, StoreError>> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        if self.failing_reads.load(Ordering::SeqCst) {
            return async { Err(StoreError::Failed("read timed out".into())) }.boxed();
        }
        let chats = self.chats.lock().expect("lock");
        let found = chats
            .get(chat_id)
            .filter(|chat| chat.owner == user_id)
            .map(|chat| {
                let skip = chat.messages.len().saturating_sub(last);
                StoredChat {
                    title: chat.title.clone(),
                    messages: chat.messages[skip..]
                        .iter()
                        .map(|m| AiMessage {
                            role: m.role,
                            content: m.content.clone(),
                        })
                        .collect(),
                    revision: chat.revision,
                }
            });
        async move { Ok(found) }.boxed()
    }

    fn task(
        &self,
        user_id: &str,
        task_id: &str,
    ) -> BoxFuture<'static, Result<Option<TaskBrief>, StoreError>> {
        let found = self
            .tasks
            .lock()
            .expect("lock")
            .get(task_id)
            .filter(|(owner, _)| owner == user_id)
            .map(|(_, task)| task.clone());
        async move { Ok(found) }.boxed()
    }
}

/// One AI call the test drives: pieces go in through `pieces`; `dropped` turns true when the
/// actor lets go of the stream.
struct Call {
    request: AiRequest,
    pieces: mpsc::UnboundedSender<Result<String, AiError>>,
    dropped: Arc<AtomicBool>,
}

impl Call {
    fn piece(&self, text: &str) {
        self.pieces
            .send(Ok(text.into()))
            .expect("the stream is read");
    }

    fn fail(&self, error: AiError) {
        self.pieces.send(Err(error)).expect("the stream is read");
    }

    /// The reply is complete.
    fn end(self) {}
}

/// Sets its flag when dropped, with the stream that owns it.
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[derive(Default)]
struct DrivenAi {
    calls: Mutex<VecDeque<Call>>,
}

impl DrivenAi {
    /// The next call the actor made (waiting for it on the paused clock).
    async fn next_call(&self) -> Call {
        for _ in 0..1000 {
            if let Some(call) = self.calls.lock().expect("lock").pop_front() {
                return call;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        panic!("no AI call was made");
    }

    fn no_call_made(&self) -> bool {
        self.calls.lock().expect("lock").is_empty()
    }
}

impl crate::ports::Ai for DrivenAi {
    fn complete(&self, _request: AiRequest) -> BoxFuture<'static, Result<String, AiError>> {
        async { Err(AiError::Offline) }.boxed()
    }

    fn stream(&self, request: AiRequest) -> BoxStream<'static, Result<String, AiError>> {
        let (tx, rx) = mpsc::unbounded_channel();
        let dropped = Arc::new(AtomicBool::new(false));
        self.calls.lock().expect("lock").push_back(Call {
            request,
            pieces: tx,
            dropped: dropped.clone(),
        });
        futures_util::stream::unfold((rx, DropFlag(dropped)), |(mut rx, flag)| async move {
            rx.recv().await.map(|piece| (piece, (rx, flag)))
        })
        .boxed()
    }
}

// ---------------------------------------------------------------------------------------------
// Harness

/// What the actors passed to their peers on other processes: (user, event, data, volatile), and
/// "joined"/"left" with the user.
#[derive(Default)]
struct RecordedPeers(
    Mutex<Vec<(String, String, Value, bool)>>,
    Mutex<Vec<String>>,
);

impl RecordedPeers {
    fn events(&self) -> Vec<(String, Value, bool)> {
        self.0
            .lock()
            .expect("lock")
            .iter()
            .filter(|(_, event, _, _)| event.starts_with("chat:"))
            .map(|(_, event, data, volatile)| (event.clone(), data.clone(), *volatile))
            .collect()
    }

    fn presence(&self) -> Vec<String> {
        self.0
            .lock()
            .expect("lock")
            .iter()
            .filter(|(_, event, _, _)| !event.starts_with("chat:"))
            .map(|(user, event, _, _)| format!("{event} {user}"))
            .collect()
    }
}

impl super::ports::MemberPeers for RecordedPeers {
    fn joined(&self, user_id: &str) {
        let mut seen = self.0.lock().expect("lock");
        seen.push((user_id.into(), "joined".into(), Value::Null, false));
    }

    fn left(&self, user_id: &str) {
        let mut seen = self.0.lock().expect("lock");
        seen.push((user_id.into(), "left".into(), Value::Null, false));
    }

    fn publish(&self, user_id: &str, event: &'static str, data: &Value, volatile: bool) {
        let mut seen = self.0.lock().expect("lock");
        seen.push((user_id.into(), event.into(), data.clone(), volatile));
    }

    fn alive(&self, process: &str) -> BoxFuture<'static, bool> {
        let dead = self
            .1
            .lock()
            .expect("lock")
            .iter()
            .any(|gone| gone == process);
        futures_util::future::ready(!dead).boxed()
    }
}

struct Harness {
    store: Arc<MemoryStore>,
    ai: Arc<DrivenAi>,
    analytics: Arc<RecordedAnalytics>,
    telemetry: Arc<RecordedTelemetry>,
    peers: Arc<RecordedPeers>,
    registry: MemberRegistry,
}

impl Harness {
    fn new() -> Self {
        tokio::time::pause();
        Self::sharing(Arc::new(MemoryStore::default()))
    }

    /// Another process of the same deployment: its own actors, AI and peers, the same store
    /// (time is paused already).
    fn sharing(store: Arc<MemoryStore>) -> Self {
        let ai = Arc::new(DrivenAi::default());
        let analytics = Arc::new(RecordedAnalytics::default());
        let telemetry = Arc::new(RecordedTelemetry::default());
        let peers = Arc::new(RecordedPeers::default());
        let registry = MemberRegistry::new(Deps {
            store: store.clone(),
            ai: ai.clone(),
            analytics: analytics.clone(),
            telemetry: telemetry.clone(),
            peers: peers.clone(),
            settings: MemberSettings::new("Emma", "HelpNow"),
        });
        Self {
            store,
            ai,
            analytics,
            telemetry,
            peers,
            registry,
        }
    }

    async fn connect(&self, client_id: &str, funnel: Option<FunnelBrief>) -> Tab {
        let (client, events) = TestClient::new(client_id);
        let addr = self
            .registry
            .join(
                USER,
                Join {
                    client,
                    session: Some(format!("session-of-{client_id}")),
                    funnel,
                },
            )
            .await
            .expect("join");
        Tab {
            id: client_id.into(),
            addr,
            events,
        }
    }
}

struct Tab {
    id: String,
    addr: actix::Addr<MemberActor>,
    events: Events,
}

impl Tab {
    /// The next event with this name (others are skipped).
    async fn next_named(&mut self, name: &str) -> Value {
        self.events.next_named(name).await
    }

    async fn send(&self, chat_id: Option<&str>, text: &str) -> SendAck {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.addr.do_send(Event::Send {
            chat_id: chat_id.map(str::to_owned),
            text: text.into(),
            reply: Reply::new(move |ack| {
                let _ = tx.send(ack);
            }),
        });
        rx.await.expect("an ack")
    }

    /// Sends and expects the message to be stored: the chat id.
    async fn send_stored(&self, chat_id: Option<&str>, text: &str) -> String {
        match self.send(chat_id, text).await {
            SendAck::Stored { chat_id, .. } => chat_id,
            refused => panic!("refused: {refused:?}"),
        }
    }

    async fn stop(&self, chat_id: &str) {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.addr.do_send(Event::Stop {
            chat_id: chat_id.into(),
            reply: Reply::new(move |ack| {
                let _ = tx.send(ack);
            }),
        });
        rx.await.expect("an ack");
    }

    async fn task_help(&self, task_id: &str) -> TaskHelpAck {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.addr.do_send(Event::TaskHelp {
            task_id: task_id.into(),
            reply: Reply::new(move |ack| {
                let _ = tx.send(ack);
            }),
        });
        rx.await.expect("an ack")
    }

    fn leave(&self) {
        self.addr.do_send(Event::Left {
            client_id: self.id.clone(),
        });
    }
}

fn outlook_funnel() -> FunnelBrief {
    FunnelBrief {
        issue: "Outlook keeps asking for my password".into(),
        raw_input: Some("outlook password popup".into()),
        user_messages: Vec::new(),
    }
}

// ---------------------------------------------------------------------------------------------
// Tests

#[actix::test]
async fn the_first_send_saves_a_titled_chat_and_the_reply_streams_in() {
    let harness = Harness::new();
    let mut tab = harness.connect("tab-1", None).await;
    assert_eq!(tab.next_named("chat:ready").await["greeting"], GREETING);

    let question = "My printer says it is offline, what should I do?";
    let ack = tab.send(None, question).await;
    let SendAck::Stored {
        chat_id,
        message_id,
        title,
    } = ack
    else {
        panic!("refused: {ack:?}");
    };
    assert_eq!(title, chat_title(question));
    assert_eq!(title, "My printer says it is offline,...");
    assert!(harness.store.message_ids(&chat_id).contains(&message_id));

    let typing = tab.next_named("chat:typing").await;
    assert_eq!(typing["chatId"], chat_id.as_str());
    let call = harness.ai.next_call().await;
    assert_eq!(call.request.purpose, AiPurpose::MemberChat);
    call.piece("1. Turn the printer ");
    let first = tab.next_named("chat:delta").await;
    assert_eq!(first["text"], "1. Turn the printer ");
    assert_eq!(first["messageId"], typing["messageId"]);
    call.piece("off and on.");
    assert_eq!(tab.next_named("chat:delta").await["text"], "off and on.");
    call.end();

    let done = tab.next_named("chat:done").await;
    assert_eq!(done["text"], "1. Turn the printer off and on.");
    assert_eq!(done["title"], title.as_str());
    assert_eq!(done["stopped"], false);
    assert_eq!(
        harness.store.messages(&chat_id),
        vec![
            (Role::Assistant, GREETING.to_owned()),
            (Role::User, question.to_owned()),
            (
                Role::Assistant,
                "1. Turn the printer off and on.".to_owned()
            ),
        ]
    );
    // The server's metrics heard of it: one actor, the message and the reply, two pieces.
    assert_eq!(harness.telemetry.count("started", "member"), 1);
    assert_eq!(harness.telemetry.count("stored", "member"), 2);
    assert_eq!(harness.telemetry.count("forwarded", "member"), 2);
    assert_eq!(
        harness.analytics.names(),
        vec!["chat_message_sent", "new_chat_started"]
    );
    assert!(harness.analytics.subjects().iter().all(|who| who == USER));
}

/// A member's devices may reach different processes: what the actor emits to every socket goes
/// to its peers too (the pieces as volatile), but not `chat:ready`, which is its own; and what a
/// peer emitted reaches the sockets here.
#[actix::test]
async fn the_members_events_go_to_and_come_from_its_peers_on_other_processes() {
    let harness = Harness::new();
    let mut tab = harness.connect("tab-1", None).await;
    tab.next_named("chat:ready").await;
    assert_eq!(harness.peers.presence(), [format!("joined {USER}")]);
    let chat_id = tab.send_stored(None, "My mouse does not move").await;
    let call = harness.ai.next_call().await;
    call.piece("Check the battery.");
    call.end();
    tab.next_named("chat:done").await;
    let passed: Vec<(String, bool)> = harness
        .peers
        .events()
        .into_iter()
        .map(|(event, _, volatile)| (event, volatile))
        .collect();
    assert_eq!(
        passed,
        [
            ("chat:typing".to_owned(), false),
            ("chat:delta".to_owned(), true),
            ("chat:done".to_owned(), false),
        ]
    );
    assert_eq!(harness.peers.events()[1].1["text"], "Check the battery.");
    assert_eq!(harness.peers.events()[1].1["chatId"], chat_id.as_str());

    // The member's other device, on another process, is writing a reply.
    let elsewhere = json!({ "chatId": "chat-elsewhere", "messageId": "m-1", "text": "Hello" });
    harness.registry.from_peer(
        USER,
        FromPeer {
            from: "process-b".into(),
            event: "chat:delta".into(),
            data: elsewhere.clone(),
            volatile: true,
        },
    );
    assert_eq!(tab.next_named("chat:delta").await, elsewhere);
    // Only the events actors pass on are taken.
    harness.registry.from_peer(
        USER,
        FromPeer {
            from: "process-b".into(),
            event: "chat:ready".into(),
            data: json!({}),
            volatile: false,
        },
    );
    harness.registry.from_peer(
        USER,
        FromPeer {
            from: "process-b".into(),
            event: "chat:done".into(),
            data: json!({ "chatId": "chat-elsewhere" }),
            volatile: false,
        },
    );
    assert_eq!(
        tab.next_named("chat:done").await["chatId"],
        "chat-elsewhere"
    );
    assert_eq!(
        harness.peers.events().len(),
        3,
        "what came from a peer is not passed on again"
    );
}

/// A reply that the member's actor on another process is writing ends here in the error when
/// that process dies before its end, so the member can ask again; a later tab hears of it in
/// `chat:ready` while it is being written.
#[actix::test]
async fn a_reply_whose_process_died_ends_in_the_error_on_the_other_processes() {
    let harness = Harness::new();
    let mut tab = harness.connect("tab-1", None).await;
    tab.next_named("chat:ready").await;
    let typing = |chat: &str| FromPeer {
        from: "process-b".into(),
        event: "chat:typing".into(),
        data: json!({ "chatId": chat, "messageId": format!("m-{chat}") }),
        volatile: false,
    };
    harness.registry.from_peer(USER, typing("chat-1"));
    harness.registry.from_peer(USER, typing("chat-2"));
    assert_eq!(tab.next_named("chat:typing").await["chatId"], "chat-1");
    let mut later = harness.connect("tab-2", None).await;
    let ready = later.next_named("chat:ready").await;
    assert_eq!(ready["writing"], json!(["chat-1", "chat-2"]));
    // chat-2's reply ends normally; the process is alive through a check.
    harness.registry.from_peer(
        USER,
        FromPeer {
            from: "process-b".into(),
            event: "chat:done".into(),
            data: json!({ "chatId": "chat-2", "text": "Done." }),
            volatile: false,
        },
    );
    tab.next_named("chat:done").await;
    tokio::time::sleep(Duration::from_millis(2100)).await;
    // Then it dies: chat-1's reply will never end there.
    harness
        .peers
        .1
        .lock()
        .expect("lock")
        .push("process-b".into());
    let error = tab.next_named("chat:error").await;
    assert_eq!(error, json!({ "chatId": "chat-1", "text": CHAT_ERROR }));
    assert_eq!(later.next_named("chat:error").await["chatId"], "chat-1");
    let mut third = harness.connect("tab-3", None).await;
    assert_eq!(third.next_named("chat:ready").await["writing"], json!([]));
}

/// Events from the member's actor on another process were lost (a gap in their numbers): the
/// reply followed here is no longer (its `chat:done` may be among them), and the sockets here get
/// `chat:ready` again without it, so a page that waits for it reloads the chat.
#[actix::test]
async fn after_a_gap_in_the_peers_events_their_replies_are_no_longer_followed() {
    let harness = Harness::new();
    let mut tab = harness.connect("tab-1", None).await;
    tab.next_named("chat:ready").await;
    harness.registry.from_peer(
        USER,
        FromPeer {
            from: "process-b".into(),
            event: "chat:typing".into(),
            data: json!({ "chatId": "chat-1", "messageId": "m-1" }),
            volatile: false,
        },
    );
    tab.next_named("chat:typing").await;
    harness.registry.peers_missed(USER);
    assert_eq!(tab.next_named("chat:ready").await["writing"], json!([]));
    let mut later = harness.connect("tab-2", None).await;
    assert_eq!(later.next_named("chat:ready").await["writing"], json!([]));
    harness.registry.peers_missed("someone-else");
}

/// The sessions each live member's sockets came with, for the check after a sign-out may have
/// been lost; a member whose sockets all left has none to check.
#[actix::test]
async fn the_registry_tells_the_sessions_of_its_members_sockets() {
    let harness = Harness::new();
    let mut first = harness.connect("tab-1", None).await;
    first.next_named("chat:ready").await;
    let mut second = harness.connect("tab-2", None).await;
    second.next_named("chat:ready").await;
    let members = harness.registry.sessions().await;
    assert_eq!(members.len(), 1);
    assert_eq!(members[0].user_id, USER);
    assert_eq!(
        members[0].sessions,
        ["session-of-tab-1", "session-of-tab-2"]
    );
    harness
        .registry
        .signed_out(USER, Some("session-of-tab-1".into()));
    assert_eq!(first.next_named("(disconnected)").await, Value::Null);
    assert_eq!(
        harness.registry.sessions().await[0].sessions,
        ["session-of-tab-2"]
    );
}

#[actix::test]
async fn pieces_that_arrived_together_go_out_as_one_delta() {
    let harness = Harness::new();
    let mut tab = harness.connect("tab-1", None).await;
    let chat_id = tab.send_stored(None, "How do I print?").await;
    tab.next_named("chat:typing").await;
    let call = harness.ai.next_call().await;
    // Three pieces read before the server could pass the first one on: one event.
    call.piece("Open ");
    call.piece("the file, ");
    call.piece("then press Ctrl and P.");
    assert_eq!(
        tab.next_named("chat:delta").await["text"],
        "Open the file, then press Ctrl and P."
    );
    // A piece that arrives later is its own event.
    call.piece(" Choose the printer.");
    assert_eq!(
        tab.next_named("chat:delta").await["text"],
        " Choose the printer."
    );
    call.end();
    let done = tab.next_named("chat:done").await;
    assert_eq!(
        done["text"],
        "Open the file, then press Ctrl and P. Choose the printer."
    );
    assert_eq!(harness.telemetry.count("forwarded", "member"), 2);
    assert_eq!(
        harness.store.messages(&chat_id).last().map(|m| m.1.clone()),
        Some("Open the file, then press Ctrl and P. Choose the printer.".to_owned())
    );
}

#[actix::test]
async fn later_sends_add_to_the_chat_and_the_ai_sees_the_conversation() {
    let harness = Harness::new();
    let mut tab = harness.connect("tab-1", None).await;
    let chat_id = tab
        .send_stored(None, "How do I attach a photo to an email?")
        .await;
    let call = harness.ai.next_call().await;
    call.piece("Click the paper clip.");
    call.end();
    tab.next_named("chat:done").await;

    let again = tab
        .send_stored(Some(&chat_id), "I do not see a paper clip")
        .await;
    assert_eq!(again, chat_id, "the same chat");
    let call = harness.ai.next_call().await;
    let said: Vec<(Role, &str)> = call
        .request
        .messages
        .iter()
        .map(|m| (m.role, m.content.as_str()))
        .collect();
    assert_eq!(said[0].0, Role::System);
    assert_eq!(
        &said[1..],
        &[
            (Role::Assistant, GREETING),
            (Role::User, "How do I attach a photo to an email?"),
            (Role::Assistant, "Click the paper clip."),
            (Role::User, "I do not see a paper clip"),
        ]
    );
    call.piece("Look for 'Attach'.");
    call.end();
    let done = tab.next_named("chat:done").await;
    assert_eq!(done["title"], "How do I attach a photo to an...");
    assert_eq!(harness.store.chat_count(), 1);
    assert_eq!(harness.store.messages(&chat_id).len(), 5);
    let started = harness
        .analytics
        .names()
        .iter()
        .filter(|n| *n == "new_chat_started")
        .count();
    assert_eq!(started, 1);
}

/// The roles and texts the AI was given, after the system prompt.
fn conversation_of(call: &Call) -> Vec<(Role, String)> {
    call.request.messages[1..]
        .iter()
        .map(|m| (m.role, m.content.clone()))
        .collect()
}

#[actix::test]
async fn the_chat_written_in_last_is_read_again_only_when_someone_else_wrote_in_it() {
    let harness = Harness::new();
    let mut tab = harness.connect("tab-1", None).await;
    let chat_id = tab.send_stored(None, "My mouse stopped working").await;
    let call = harness.ai.next_call().await;
    call.piece("Check its battery.");
    call.end();
    tab.next_named("chat:done").await;
    tab.send_stored(Some(&chat_id), "It has a new one").await;
    let call = harness.ai.next_call().await;
    call.piece("Then pair it again.");
    call.end();
    tab.next_named("chat:done").await;
    assert_eq!(
        harness.store.reads.load(Ordering::SeqCst),
        0,
        "the actor knew the chat it had written"
    );

    // Another tab, served by another process, writes in the chat.
    harness.store.append_elsewhere(&chat_id, "Also my keyboard");
    tab.send_stored(Some(&chat_id), "How do I pair it?").await;
    let call = harness.ai.next_call().await;
    assert_eq!(harness.store.reads.load(Ordering::SeqCst), 1);
    let said = conversation_of(&call);
    assert_eq!(
        said[said.len() - 2..],
        [
            (Role::User, "Also my keyboard".to_owned()),
            (Role::User, "How do I pair it?".to_owned()),
        ],
        "the read brought the other writer's message, and this one after it"
    );
    assert_eq!(said.len(), 7);
    call.piece("Hold its button.");
    call.end();
    tab.next_named("chat:done").await;

    // Known again from that read on.
    tab.send_stored(Some(&chat_id), "Done").await;
    let call = harness.ai.next_call().await;
    assert_eq!(harness.store.reads.load(Ordering::SeqCst), 1);
    assert_eq!(
        conversation_of(&call).last(),
        Some(&(Role::User, "Done".to_owned()))
    );
    assert_eq!(conversation_of(&call).len(), 9);
    call.end();
}

#[actix::test]
async fn stop_drops_the_ai_stream_and_keeps_what_was_written() {
    let harness = Harness::new();
    let mut tab = harness.connect("tab-1", None).await;
    let chat_id = tab.send_stored(None, "My computer is very slow").await;
    let call = harness.ai.next_call().await;
    call.piece("1. Restart the computer.");
    tab.next_named("chat:delta").await;
    assert!(!call.dropped.load(Ordering::SeqCst));

    tab.stop(&chat_id).await;
    let done = tab.next_named("chat:done").await;
    assert_eq!(done["stopped"], true);
    assert_eq!(done["text"], "1. Restart the computer.");
    // The stream (and so the provider's request) is gone.
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert!(
        call.dropped.load(Ordering::SeqCst),
        "the AI stream was dropped"
    );
    assert!(call.pieces.send(Ok("2. more".into())).is_err());
    assert_eq!(
        harness.store.messages(&chat_id).last(),
        Some(&(Role::Assistant, "1. Restart the computer.".to_owned()))
    );

    // The chat takes the next message at once.
    tab.send_stored(Some(&chat_id), "Thanks, that helped").await;
    harness.ai.next_call().await.end();
    tab.next_named("chat:error").await;
}

/// A stop (`MemberRegistry::drain`) lets the reply being written end: streamed to its end and
/// stored; only then is the socket asked to connect again (to another process).
#[actix::test]
async fn a_draining_actor_lets_its_reply_end_then_asks_its_sockets_to_connect_again() {
    let harness = Harness::new();
    let mut tab = harness.connect("tab-1", None).await;
    let chat_id = tab.send_stored(None, "My computer is very slow").await;
    let call = harness.ai.next_call().await;
    call.piece("1. Restart ");
    tab.next_named("chat:delta").await;
    let registry = harness.registry.clone();
    let drain = tokio::spawn(async move { registry.drain(Duration::from_secs(30)).await });
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!drain.is_finished(), "the reply is still being written");
    call.piece("the computer.");
    call.end();
    let done = tab.next_named("chat:done").await;
    assert_eq!(done["text"], "1. Restart the computer.");
    assert_eq!(tab.next_named("(reconnect)").await, Value::Null);
    assert_eq!(drain.await.expect("drained"), 0, "no actor left");
    assert_eq!(
        harness.store.messages(&chat_id).last(),
        Some(&(Role::Assistant, "1. Restart the computer.".to_owned()))
    );
}

#[actix::test]
async fn stop_before_any_text_stores_nothing_for_the_reply() {
    let harness = Harness::new();
    let mut tab = harness.connect("tab-1", None).await;
    let chat_id = tab.send_stored(None, "Is this email a scam?").await;
    let call = harness.ai.next_call().await;
    tab.stop(&chat_id).await;
    let done = tab.next_named("chat:done").await;
    assert_eq!(done["text"], "");
    assert_eq!(done["stopped"], true);
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert!(call.dropped.load(Ordering::SeqCst));
    assert_eq!(
        harness.store.messages(&chat_id).len(),
        2,
        "greeting and question"
    );
}

#[actix::test]
async fn a_failed_or_silent_ai_gives_the_spec_error_and_no_reply_is_stored() {
    let harness = Harness::new();
    let mut tab = harness.connect("tab-1", None).await;
    let chat_id = tab.send_stored(None, "Why is my wifi slow?").await;
    let call = harness.ai.next_call().await;
    call.piece("Let me");
    call.fail(AiError::Failed("connection reset".into()));
    let error = tab.next_named("chat:error").await;
    assert_eq!(error["text"], CHAT_ERROR);
    assert_eq!(error["chatId"], chat_id.as_str());
    assert_eq!(harness.store.messages(&chat_id).len(), 2);

    // A stall: no piece within the AI time-out (30 s of paused time).
    tab.send_stored(Some(&chat_id), "Hello?").await;
    let _stalled = harness.ai.next_call().await;
    let started = tokio::time::Instant::now();
    assert_eq!(tab.next_named("chat:error").await["text"], CHAT_ERROR);
    assert_eq!(started.elapsed().as_secs(), 30);
}

#[actix::test]
async fn sends_are_refused_when_empty_too_long_busy_or_not_the_members() {
    let harness = Harness::new();
    let tab = harness.connect("tab-1", None).await;
    assert_eq!(
        tab.send(None, "   \n ").await,
        SendAck::Refused(Refusal::Empty)
    );
    assert_eq!(
        tab.send(None, &"a".repeat(4001)).await,
        SendAck::Refused(Refusal::TooLong)
    );
    let chat_id = tab.send_stored(None, "How do I update Windows?").await;
    let _writing = harness.ai.next_call().await;
    let busy = tab.send(Some(&chat_id), "and also?").await;
    assert_eq!(busy, SendAck::Refused(Refusal::Busy));
    assert_eq!(
        busy.to_json()["error"],
        "Please wait for the reply before sending another message."
    );

    let theirs = harness.store.add_chat_of("member-2");
    let refused = tab.send(Some(&theirs), "let me in").await;
    assert_eq!(refused, SendAck::Refused(Refusal::ChatNotFound));
    assert_eq!(refused.to_json()["code"], "not_found");
    assert!(
        harness.store.messages(&theirs).is_empty(),
        "nothing written"
    );
}

#[actix::test]
async fn without_access_a_send_asks_for_the_upgrade_and_nothing_is_saved() {
    let harness = Harness::new();
    let tab = harness.connect("tab-1", None).await;
    harness.store.access.store(false, Ordering::SeqCst);
    let refused = tab.send(None, "Can you help me?").await;
    assert_eq!(refused, SendAck::Refused(Refusal::UpgradeRequired));
    assert_eq!(refused.to_json()["code"], "upgrade_required");
    assert_eq!(harness.store.chat_count(), 0);
    assert!(harness.ai.no_call_made());
    assert!(harness.analytics.names().is_empty());
}

#[actix::test]
async fn after_a_funnel_the_greeting_names_the_issue_and_yes_gets_the_solution() {
    let harness = Harness::new();
    let mut tab = harness.connect("tab-1", Some(outlook_funnel())).await;
    let greeting = tab.next_named("chat:ready").await["greeting"]
        .as_str()
        .expect("text")
        .to_owned();
    assert!(
        greeting.contains("Outlook keeps asking for my password"),
        "{greeting}"
    );

    let chat_id = tab.send_stored(None, "yes").await;
    let call = harness.ai.next_call().await;
    assert_eq!(call.request.purpose, AiPurpose::FunnelSolution);
    let request = &call.request.messages.last().expect("a message").content;
    assert!(
        request.contains("Outlook keeps asking for my password"),
        "{request}"
    );
    call.piece("1. Open Outlook.");
    call.end();
    tab.next_named("chat:done").await;
    assert_eq!(
        harness.store.messages(&chat_id)[0].1,
        greeting,
        "stored greeting"
    );

    // Only the first reply to the greeting takes the shortcut.
    tab.send_stored(Some(&chat_id), "ok").await;
    assert_eq!(
        harness.ai.next_call().await.request.purpose,
        AiPurpose::MemberChat
    );
}

#[actix::test]
async fn a_question_after_the_funnel_greeting_is_answered_as_asked() {
    let harness = Harness::new();
    let mut tab = harness.connect("tab-1", Some(outlook_funnel())).await;
    tab.next_named("chat:ready").await;
    tab.send_stored(None, "Actually, how do I print a web page?")
        .await;
    assert_eq!(
        harness.ai.next_call().await.request.purpose,
        AiPurpose::MemberChat
    );
}

#[actix::test]
async fn task_help_opens_a_chat_with_the_request_and_the_structured_reply() {
    let harness = Harness::new();
    let task_id = harness.store.add_task(
        USER,
        TaskBrief {
            name: "Set up my new phone".into(),
            items: vec![TaskItemBrief {
                text: "Move my photos".into(),
                completed: false,
            }],
        },
    );
    let mut tab = harness.connect("tab-1", None).await;
    let ack = tab.task_help(&task_id).await;
    let TaskHelpAck::Started { chat_id, title } = ack else {
        panic!("refused: {ack:?}");
    };
    assert_eq!(title, "Set up my new phone");
    tab.next_named("chat:typing").await;
    let call = harness.ai.next_call().await;
    assert_eq!(call.request.purpose, AiPurpose::TaskHelp);
    call.piece("## Move my photos\n1. Open Photos.");
    call.end();
    let done = tab.next_named("chat:done").await;
    assert_eq!(done["chatId"], chat_id.as_str());
    let messages = harness.store.messages(&chat_id);
    assert_eq!(messages.len(), 3);
    assert!(
        messages[1].1.contains("- Move my photos"),
        "{:?}",
        messages[1]
    );
    assert_eq!(messages[2].1, "## Move my photos\n1. Open Photos.");

    // An empty answer gets the spec's helper text; a failure its error text.
    tab.task_help(&task_id).await;
    harness.ai.next_call().await.end();
    assert_eq!(tab.next_named("chat:done").await["text"], TASK_FALLBACK);
    tab.task_help(&task_id).await;
    harness
        .ai
        .next_call()
        .await
        .fail(AiError::Failed("boom".into()));
    assert_eq!(tab.next_named("chat:error").await["text"], TASK_ERROR);

    let theirs = harness.store.add_task(
        "member-2",
        TaskBrief {
            name: "Private".into(),
            items: Vec::new(),
        },
    );
    assert_eq!(
        tab.task_help(&theirs).await,
        TaskHelpAck::Refused(Refusal::TaskNotFound)
    );
}

#[actix::test]
async fn every_tab_sees_the_reply_and_it_is_stored_after_the_last_tab_closes() {
    let harness = Harness::new();
    let mut first = harness.connect("tab-1", None).await;
    let mut second = harness.connect("tab-2", None).await;
    let chat_id = first
        .send_stored(None, "How do I make the text bigger?")
        .await;
    let call = harness.ai.next_call().await;
    call.piece("Press Ctrl and +.");
    assert_eq!(
        first.next_named("chat:delta").await["text"],
        "Press Ctrl and +."
    );
    assert_eq!(
        second.next_named("chat:delta").await["text"],
        "Press Ctrl and +."
    );
    first.leave();
    second.leave();
    // The reply goes on well past the idle window (60 s) with nobody connected.
    for _ in 0..4 {
        tokio::time::sleep(Duration::from_secs(20)).await;
        call.piece(" ");
    }
    assert_eq!(harness.registry.live_count(), 1, "still writing");
    call.end();
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert_eq!(
        harness.store.messages(&chat_id).last(),
        Some(&(Role::Assistant, "Press Ctrl and +.".to_owned()))
    );
    assert_eq!(harness.registry.live_count(), 1);
    tokio::time::sleep(Duration::from_secs(61)).await;
    assert_eq!(harness.registry.live_count(), 0, "the idle actor stopped");

    // The next join starts a fresh actor.
    let mut back = harness.connect("tab-3", None).await;
    assert_eq!(back.next_named("chat:ready").await["greeting"], GREETING);
}

#[actix::test]
async fn signing_out_closes_the_sockets_of_that_session_and_a_reset_closes_all() {
    let harness = Harness::new();
    let mut phone = harness.connect("phone", None).await;
    let mut laptop = harness.connect("laptop", None).await;
    harness
        .registry
        .signed_out(USER, Some("session-of-phone".into()));
    assert_eq!(phone.next_named("(disconnected)").await, Value::Null);
    // The laptop stays: it still gets the member's replies.
    laptop.send_stored(None, "Still here?").await;
    harness.ai.next_call().await.end();
    laptop.next_named("chat:error").await;
    harness.registry.signed_out(USER, None);
    assert_eq!(laptop.next_named("(disconnected)").await, Value::Null);
}

#[actix::test]
async fn chat_ready_names_the_chats_whose_reply_is_still_being_written() {
    let harness = Harness::new();
    let first = harness.connect("tab-1", None).await;
    let chat_id = first.send_stored(None, "How do I find my downloads?").await;
    let call = harness.ai.next_call().await;
    let mut later = harness.connect("tab-2", None).await;
    let ready = later.next_named("chat:ready").await;
    assert_eq!(ready["writing"], serde_json::json!([chat_id]));
    call.piece("Open the Downloads folder.");
    call.end();
    later.next_named("chat:done").await;
    let mut again = harness.connect("tab-3", None).await;
    assert_eq!(
        again.next_named("chat:ready").await["writing"],
        serde_json::json!([])
    );
}

#[actix::test]
async fn a_reply_that_cannot_be_stored_ends_in_the_error_not_in_done() {
    let harness = Harness::new();
    let mut tab = harness.connect("tab-1", None).await;
    *harness.store.failing_replies.lock().expect("lock") = 3;
    let chat_id = tab.send_stored(None, "Why is my phone so slow?").await;
    let call = harness.ai.next_call().await;
    call.piece("Close the apps you do not use.");
    call.end();
    let error = tab.next_named("chat:error").await;
    assert_eq!(error["text"], CHAT_ERROR);
    assert!(
        !tab.events
            .try_recv()
            .is_ok_and(|(event, _)| event == "chat:done"),
        "no done for an unsaved reply"
    );
    assert_eq!(
        harness.store.messages(&chat_id).len(),
        2,
        "greeting and question"
    );

    // Two failures, then it saves: the retries keep the reply.
    *harness.store.failing_replies.lock().expect("lock") = 2;
    tab.send_stored(Some(&chat_id), "And my tablet?").await;
    let call = harness.ai.next_call().await;
    call.piece("The same steps work there.");
    call.end();
    assert_eq!(
        tab.next_named("chat:done").await["text"],
        "The same steps work there."
    );
}

#[actix::test]
async fn a_stored_message_is_acknowledged_even_when_the_chat_cannot_be_read_back() {
    let harness = Harness::new();
    let mut tab = harness.connect("tab-1", None).await;
    // A new chat is not read: the actor knows its greeting and first message.
    harness.store.failing_reads.store(true, Ordering::SeqCst);
    let chat_id = tab.send_stored(None, "Can you check my settings?").await;
    let call = harness.ai.next_call().await;
    call.piece("Yes.");
    call.end();
    tab.next_named("chat:done").await;
    // Someone else wrote in it: the actor must read it, and cannot.
    harness.store.append_elsewhere(&chat_id, "From the phone");
    let ack = tab.send(Some(&chat_id), "Are you there?").await;
    let SendAck::Stored { .. } = ack else {
        panic!("a stored message must be acknowledged: {ack:?}");
    };
    assert_eq!(harness.store.messages(&chat_id).len(), 5);
    assert_eq!(tab.next_named("chat:error").await["text"], CHAT_ERROR);
    assert!(harness.ai.no_call_made());
    harness.store.failing_reads.store(false, Ordering::SeqCst);
    tab.send_stored(Some(&chat_id), "Hello again").await;
    harness.ai.next_call().await.end();
}

#[actix::test]
async fn a_member_has_at_most_three_replies_on_their_way() {
    let harness = Harness::new();
    let tab = harness.connect("tab-1", None).await;
    for question in ["one?", "two?", "three?"] {
        tab.send_stored(None, question).await;
    }
    let refused = tab.send(None, "four?").await;
    assert_eq!(refused, SendAck::Refused(Refusal::TooManyReplies));
    assert_eq!(refused.to_json()["code"], "busy");
    let task_id = harness.store.add_task(
        USER,
        TaskBrief {
            name: "Call the bank".into(),
            items: Vec::new(),
        },
    );
    assert_eq!(
        tab.task_help(&task_id).await,
        TaskHelpAck::Refused(Refusal::TooManyReplies)
    );
    harness.ai.next_call().await.end();
    tokio::time::sleep(Duration::from_millis(10)).await;
    tab.send_stored(None, "four, now?").await;
}

#[actix::test]
async fn stop_while_the_message_is_being_stored_means_no_reply() {
    let harness = Harness::new();
    let mut tab = harness.connect("tab-1", None).await;
    let chat_id = tab.send_stored(None, "How do I zoom in?").await;
    harness.ai.next_call().await.end();
    tab.next_named("chat:error").await;

    *harness.store.write_delay.lock().expect("lock") = Duration::from_secs(2);
    let (tx, rx) = tokio::sync::oneshot::channel();
    tab.addr.do_send(Event::Send {
        chat_id: Some(chat_id.clone()),
        text: "Actually, never mind".into(),
        reply: Reply::new(move |ack| {
            let _ = tx.send(ack);
        }),
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    tab.stop(&chat_id).await;
    assert!(matches!(rx.await.expect("an ack"), SendAck::Stored { .. }));
    let done = tab.next_named("chat:done").await;
    assert_eq!(done["stopped"], true);
    assert_eq!(done["text"], "");
    assert!(harness.ai.no_call_made(), "the reply never started");
}

#[actix::test]
async fn the_funnel_greeting_and_its_shortcut_belong_to_the_first_chat_only() {
    let harness = Harness::new();
    let mut tab = harness.connect("tab-1", Some(outlook_funnel())).await;
    tab.next_named("chat:ready").await;
    // A statement without a question mark counts as yes (the spec's rule) in the first chat...
    tab.send_stored(None, "My wifi keeps dropping").await;
    assert_eq!(
        harness.ai.next_call().await.request.purpose,
        AiPurpose::FunnelSolution
    );
    // ...and the page is told that new chats now start with the plain greeting.
    assert_eq!(tab.next_named("chat:ready").await["greeting"], GREETING);
    let chat_id = tab.send_stored(None, "My wifi keeps dropping").await;
    assert_eq!(
        harness.ai.next_call().await.request.purpose,
        AiPurpose::MemberChat
    );
    assert_eq!(harness.store.messages(&chat_id)[0].1, GREETING);
}

#[actix::test]
async fn a_reply_that_never_ends_is_ended_after_five_minutes_with_what_came() {
    let harness = Harness::new();
    let mut tab = harness.connect("tab-1", None).await;
    let chat_id = tab
        .send_stored(None, "Tell me everything about computers")
        .await;
    let call = harness.ai.next_call().await;
    let started = tokio::time::Instant::now();
    let trickle = tokio::spawn(async move {
        loop {
            if call.pieces.send(Ok("more ".into())).is_err() {
                return call.dropped.load(Ordering::SeqCst);
            }
            tokio::time::sleep(Duration::from_secs(20)).await;
        }
    });
    let done = tab.next_named("chat:done").await;
    assert_eq!(started.elapsed().as_secs(), 300);
    assert!(
        done["text"]
            .as_str()
            .expect("text")
            .starts_with("more more")
    );
    assert!(trickle.await.expect("trickle"), "the AI stream was dropped");
    assert_eq!(harness.store.messages(&chat_id).len(), 3);
}

#[actix::test]
async fn stop_pressed_as_a_reply_is_being_saved_does_not_touch_the_next_reply() {
    let harness = Harness::new();
    let mut tab = harness.connect("tab-1", None).await;
    let chat_id = tab.send_stored(None, "How do I print?").await;
    let call = harness.ai.next_call().await;
    *harness.store.write_delay.lock().expect("lock") = Duration::from_secs(2);
    call.piece("Press Ctrl and P.");
    call.end();
    tokio::time::sleep(Duration::from_millis(500)).await;
    // The reply has ended and is being saved; the page still shows Stop.
    tab.stop(&chat_id).await;
    assert_eq!(tab.next_named("chat:done").await["stopped"], false);
    *harness.store.write_delay.lock().expect("lock") = Duration::ZERO;

    tab.send_stored(Some(&chat_id), "And in colour?").await;
    let call = harness.ai.next_call().await;
    call.piece("Choose Colour in the print window.");
    call.end();
    let done = tab.next_named("chat:done").await;
    assert_eq!(done["text"], "Choose Colour in the print window.");
    assert_eq!(done["stopped"], false);
}

#[actix::test]
async fn a_refused_first_send_gives_the_funnel_greeting_back_and_task_help_takes_it() {
    let harness = Harness::new();
    let mut tab = harness.connect("tab-1", Some(outlook_funnel())).await;
    let funnel_greeting = tab.next_named("chat:ready").await["greeting"].clone();
    harness.store.access.store(false, Ordering::SeqCst);
    assert_eq!(
        tab.send(None, "yes").await,
        SendAck::Refused(Refusal::UpgradeRequired)
    );
    // Plain while the send was under way, then the funnel greeting again.
    assert_eq!(tab.next_named("chat:ready").await["greeting"], GREETING);
    assert_eq!(
        tab.next_named("chat:ready").await["greeting"],
        funnel_greeting
    );
    harness.store.access.store(true, Ordering::SeqCst);
    let task_id = harness.store.add_task(
        USER,
        TaskBrief {
            name: "Fix Outlook".into(),
            items: Vec::new(),
        },
    );
    tab.task_help(&task_id).await;
    assert_eq!(tab.next_named("chat:ready").await["greeting"], GREETING);
    harness.ai.next_call().await.end();
    // A later join (the store still says the funnel) does not bring it back to this actor.
    let mut other = harness.connect("tab-2", Some(outlook_funnel())).await;
    assert_eq!(other.next_named("chat:ready").await["greeting"], GREETING);
}

#[actix::test]
async fn a_reply_is_cut_at_twenty_thousand_characters_and_what_is_shown_is_what_is_stored() {
    let harness = Harness::new();
    let mut tab = harness.connect("tab-1", None).await;
    let chat_id = tab.send_stored(None, "Write me a very long story").await;
    let call = harness.ai.next_call().await;
    call.piece(&"a".repeat(19_990));
    call.piece(&"b".repeat(50));
    let done = tab.next_named("chat:done").await;
    let text = done["text"].as_str().expect("text");
    assert_eq!(text.chars().count(), 20_000);
    assert!(text.ends_with(&"b".repeat(10)));
    assert_eq!(harness.store.messages(&chat_id)[2].1, text);
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert!(
        call.dropped.load(Ordering::SeqCst),
        "the AI call was hung up"
    );
}

/// Sends to `chat_id` (a new chat: `None`) and lets the reply finish: the chat's id.
async fn send_and_finish(harness: &Harness, tab: &mut Tab, chat_id: Option<&str>) -> String {
    let chat_id = tab.send_stored(chat_id, "Is my printer on?").await;
    let call = harness.ai.next_call().await;
    call.piece("It is.");
    call.end();
    tab.next_named("chat:done").await;
    chat_id
}

#[actix::test]
async fn access_read_for_a_send_is_trusted_for_thirty_seconds_and_a_refusal_is_never_kept() {
    let harness = Harness::new();
    let mut tab = harness.connect("tab-1", None).await;
    let reads = || harness.store.access_reads.load(Ordering::SeqCst);
    let chat_id = send_and_finish(&harness, &mut tab, None).await;
    assert_eq!(reads(), 1);

    // The access ends (a payment event): sends and task help go on while the read is trusted.
    harness.store.access.store(false, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_secs(29)).await;
    send_and_finish(&harness, &mut tab, Some(&chat_id)).await;
    let task_id = harness.store.add_task(
        USER,
        TaskBrief {
            name: "Fix the printer".into(),
            items: Vec::new(),
        },
    );
    assert!(matches!(
        tab.task_help(&task_id).await,
        TaskHelpAck::Started { .. }
    ));
    harness.ai.next_call().await.end();
    tab.next_named("chat:done").await;
    assert_eq!(reads(), 1, "no read while trusted");

    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        tab.send(Some(&chat_id), "And now?").await,
        SendAck::Refused(Refusal::UpgradeRequired)
    );
    assert_eq!(reads(), 2);
    assert_eq!(harness.store.messages(&chat_id).len(), 5, "nothing saved");

    // Access back (a new subscription): the refusal was not kept.
    harness.store.access.store(true, Ordering::SeqCst);
    send_and_finish(&harness, &mut tab, Some(&chat_id)).await;
    assert_eq!(reads(), 3);
}

#[actix::test]
async fn access_a_trial_alone_grants_is_not_trusted_past_the_trials_end() {
    let harness = Harness::new();
    let mut tab = harness.connect("tab-1", None).await;
    *harness.store.trial_left.lock().expect("lock") = Some(Duration::from_secs(5));
    let chat_id = send_and_finish(&harness, &mut tab, None).await;
    // The trial ends 5 s after the read.
    harness.store.access.store(false, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_secs(4)).await;
    send_and_finish(&harness, &mut tab, Some(&chat_id)).await;
    assert_eq!(harness.store.access_reads.load(Ordering::SeqCst), 1);
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        tab.send(Some(&chat_id), "Still there?").await,
        SendAck::Refused(Refusal::UpgradeRequired)
    );
    assert_eq!(harness.store.access_reads.load(Ordering::SeqCst), 2);
}

#[actix::test]
async fn access_is_trusted_from_when_it_was_read_not_from_when_the_send_was_stored() {
    let harness = Harness::new();
    let mut tab = harness.connect("tab-1", None).await;
    let chat_id = send_and_finish(&harness, &mut tab, None).await;
    tokio::time::sleep(Duration::from_secs(30)).await;
    // The access is read again, then the message takes 4 s to store (within the store time-out).
    let read_at = tokio::time::Instant::now();
    *harness.store.write_delay.lock().expect("lock") = Duration::from_secs(4);
    tab.send_stored(Some(&chat_id), "Is it plugged in?").await;
    *harness.store.write_delay.lock().expect("lock") = Duration::ZERO;
    let call = harness.ai.next_call().await;
    call.piece("It is.");
    call.end();
    tab.next_named("chat:done").await;
    assert_eq!(harness.store.access_reads.load(Ordering::SeqCst), 2);

    harness.store.access.store(false, Ordering::SeqCst);
    tokio::time::sleep_until(read_at + Duration::from_secs(29)).await;
    send_and_finish(&harness, &mut tab, Some(&chat_id)).await;
    tokio::time::sleep_until(read_at + Duration::from_secs(30)).await;
    assert_eq!(
        tab.send(Some(&chat_id), "And now?").await,
        SendAck::Refused(Refusal::UpgradeRequired)
    );
}

#[actix::test]
async fn a_refusal_is_kept_over_a_grant_read_before_it_that_answers_after_it() {
    let harness = Harness::new();
    let mut tab = harness.connect("tab-1", None).await;
    let first_chat = send_and_finish(&harness, &mut tab, None).await;
    let second_chat = send_and_finish(&harness, &mut tab, None).await;
    tokio::time::sleep(Duration::from_secs(30)).await;
    // The first send's access is read, then its message takes 4 s to store; meanwhile the
    // access ends and a send to the other chat is refused.
    *harness.store.write_delay.lock().expect("lock") = Duration::from_secs(4);
    let first = tab.send(Some(&first_chat), "Is my printer on?");
    let second = async {
        tokio::time::sleep(Duration::from_secs(1)).await;
        harness.store.access.store(false, Ordering::SeqCst);
        tab.send(Some(&second_chat), "Hello?").await
    };
    let (first, second) = tokio::join!(first, second);
    assert!(matches!(first, SendAck::Stored { .. }), "{first:?}");
    assert_eq!(second, SendAck::Refused(Refusal::UpgradeRequired));
    *harness.store.write_delay.lock().expect("lock") = Duration::ZERO;
    let call = harness.ai.next_call().await;
    call.piece("It is.");
    call.end();
    tab.next_named("chat:done").await;
    assert_eq!(harness.store.access_reads.load(Ordering::SeqCst), 3);

    // The grant answered last, but the refusal was read later: the access is read again.
    assert_eq!(
        tab.send(Some(&second_chat), "And now?").await,
        SendAck::Refused(Refusal::UpgradeRequired)
    );
    assert_eq!(harness.store.access_reads.load(Ordering::SeqCst), 4);
}

/// No two assistant messages in a row: never two replies to one member message.
fn assert_one_reply_per_message(store: &MemoryStore, chat_id: &str) {
    let roles: Vec<Role> = store
        .messages(chat_id)
        .iter()
        .map(|(role, _)| *role)
        .collect();
    assert!(
        !roles
            .windows(2)
            .any(|pair| pair == [Role::Assistant, Role::Assistant]),
        "two replies in a row: {:?}",
        store.messages(chat_id)
    );
}

/// The member's two devices are served by two processes (two actors, one store) and send to one
/// chat at the same moment, before either process heard of the other's reply: the message that
/// reaches the store second was written after a revision it did not see, so it is refused as
/// busy and nothing of it is stored; only the first is answered.
#[actix::test]
async fn two_processes_sending_to_one_chat_at_once_store_one_and_refuse_the_other_as_busy() {
    let here = Harness::new();
    let there = Harness::sharing(here.store.clone());
    let mut laptop = here.connect("laptop", None).await;
    let phone = there.connect("phone", None).await;
    // The laptop's actor wrote in the chat last, so it knows the chat; the phone's reads it.
    let chat_id = send_and_finish(&here, &mut laptop, None).await;
    *here.store.write_delay.lock().expect("lock") = Duration::from_secs(1);
    let first = laptop.send(Some(&chat_id), "Is it plugged in?");
    let second = async {
        tokio::time::sleep(Duration::from_millis(10)).await;
        phone.send(Some(&chat_id), "Is it switched on?").await
    };
    let (first, second) = tokio::join!(first, second);
    assert!(matches!(first, SendAck::Stored { .. }), "{first:?}");
    assert_eq!(second, SendAck::Refused(Refusal::Busy));
    assert_eq!(
        second.to_json()["error"],
        "Please wait for the reply before sending another message."
    );
    *here.store.write_delay.lock().expect("lock") = Duration::ZERO;
    let call = here.ai.next_call().await;
    call.piece("It is.");
    call.end();
    laptop.next_named("chat:done").await;
    assert!(there.ai.no_call_made(), "the refused send has no reply");
    let contents: Vec<String> = here
        .store
        .messages(&chat_id)
        .into_iter()
        .map(|(_, content)| content)
        .collect();
    assert_eq!(
        contents[3..],
        ["Is it plugged in?".to_owned(), "It is.".to_owned()]
    );
    assert_one_reply_per_message(&here.store, &chat_id);
}

/// The same race the other way round: the phone's message (its actor read the chat for it)
/// reaches the store first; the laptop's actor, whose chat was out of date, reads it and stores
/// its message after the phone's. The phone's reply then comes after a message it did not
/// answer: it is not stored and ends in the spec's error; the laptop's reply is stored. One reply.
#[actix::test]
async fn a_reply_is_not_stored_when_the_member_wrote_in_its_chat_elsewhere_meanwhile() {
    let here = Harness::new();
    let there = Harness::sharing(here.store.clone());
    let mut laptop = here.connect("laptop", None).await;
    let mut phone = there.connect("phone", None).await;
    let chat_id = send_and_finish(&here, &mut laptop, None).await;
    *here.store.write_delay.lock().expect("lock") = Duration::from_secs(1);
    let first = phone.send(Some(&chat_id), "Is it switched on?");
    let second = async {
        tokio::time::sleep(Duration::from_millis(10)).await;
        laptop.send(Some(&chat_id), "Is it plugged in?").await
    };
    let (first, second) = tokio::join!(first, second);
    assert!(matches!(first, SendAck::Stored { .. }), "{first:?}");
    assert!(matches!(second, SendAck::Stored { .. }), "{second:?}");
    *here.store.write_delay.lock().expect("lock") = Duration::ZERO;
    // The phone's process writes its reply (it paused, or its AI was slower) and ends last.
    let phone_call = there.ai.next_call().await;
    let laptop_call = here.ai.next_call().await;
    assert_eq!(
        conversation_of(&laptop_call)[3..],
        [
            (Role::User, "Is it switched on?".to_owned()),
            (Role::User, "Is it plugged in?".to_owned()),
        ]
    );
    laptop_call.piece("Both, please.");
    laptop_call.end();
    assert_eq!(
        laptop.next_named("chat:done").await["text"],
        "Both, please."
    );
    phone_call.piece("It is on.");
    phone_call.end();
    assert_eq!(
        phone.next_named("chat:error").await,
        json!({ "chatId": chat_id, "text": CHAT_ERROR })
    );
    let messages = here.store.messages(&chat_id);
    assert_eq!(messages.len(), 6, "{messages:?}");
    assert_eq!(messages[5], (Role::Assistant, "Both, please.".to_owned()));
    assert_one_reply_per_message(&here.store, &chat_id);
}

/// A chat whose reply the member's actor on another process is writing takes no send here (no
/// store write at all), as one whose reply is written here; each piece of that reply says it is
/// still on its way. A peer that goes quiet (its `chat:done` lost between the processes, say)
/// holds the chat no longer than the peer itself could stay silent: 30 s after its last event.
#[actix::test]
async fn a_chat_another_process_is_answering_is_busy_until_its_end_or_its_silence() {
    let harness = Harness::new();
    let mut tab = harness.connect("tab-1", None).await;
    let chat_id = send_and_finish(&harness, &mut tab, None).await;
    let from_b = |event: &str, data: Value| FromPeer {
        from: "process-b".into(),
        event: event.into(),
        data,
        volatile: event == "chat:delta",
    };
    let writing = json!({ "chatId": chat_id, "messageId": "m-b" });
    harness
        .registry
        .from_peer(USER, from_b("chat:typing", writing.clone()));
    tab.next_named("chat:typing").await;
    assert_eq!(
        tab.send(Some(&chat_id), "Hello?").await,
        SendAck::Refused(Refusal::Busy)
    );
    assert_eq!(harness.store.messages(&chat_id).len(), 3, "nothing stored");
    // Its end frees the chat at once.
    harness.registry.from_peer(
        USER,
        from_b("chat:done", json!({ "chatId": chat_id, "text": "Yes." })),
    );
    tab.next_named("chat:done").await;
    let chat_id = send_and_finish(&harness, &mut tab, Some(&chat_id)).await;

    // Another reply there, whose end never arrives.
    harness
        .registry
        .from_peer(USER, from_b("chat:typing", writing.clone()));
    tokio::time::sleep(Duration::from_secs(20)).await;
    let mut piece = writing.clone();
    piece["text"] = json!("Let me see");
    harness
        .registry
        .from_peer(USER, from_b("chat:delta", piece));
    tokio::time::sleep(Duration::from_secs(29)).await;
    assert_eq!(
        tab.send(Some(&chat_id), "Still there?").await,
        SendAck::Refused(Refusal::Busy),
        "29 s after its last piece"
    );
    let mut later = harness.connect("tab-2", None).await;
    assert_eq!(
        later.next_named("chat:ready").await["writing"],
        json!([chat_id])
    );
    let stored = harness.store.messages(&chat_id).len();
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let mut latest = harness.connect("tab-3", None).await;
    assert_eq!(latest.next_named("chat:ready").await["writing"], json!([]));
    send_and_finish(&harness, &mut tab, Some(&chat_id)).await;
    assert_eq!(harness.store.messages(&chat_id).len(), stored + 2);
}

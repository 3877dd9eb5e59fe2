//! `MemberActor`: one signed-in member's chats while any of their sockets is open. Every message
//! is stored before it is acknowledged, every reply before `chat:done` says so.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Weak};

use actix::prelude::*;
use futures_util::StreamExt;
use futures_util::future::BoxFuture;
use rand::Rng;
use serde_json::{Value, json};

use super::messages::{
    Drain, Event, FromPeer, Join, Refusal, SendAck, SignedOut, StopAck, TaskHelpAck,
};
use super::ports::{Appended, StoredChat};
use super::{Deps, FunnelBrief, prompts};
use crate::live::LiveActors;
use crate::mutation;
use crate::ports::{ActorClient, AiError, AiMessage, AiPurpose, AiRequest, Role, StoreError};
use crate::reply::Reply;
use crate::rules::chat::{chat_title, greeting, is_affirmative_reply};

/// The spec's chat failure text.
pub const CHAT_ERROR: &str = "I apologize, but I encountered an error. Please try again.";
/// The spec's task-help failure text.
pub const TASK_ERROR: &str =
    "I apologize, but I encountered an error while analyzing your task. Please try again.";
/// The spec's task-help text when the AI gave nothing to show.
pub const TASK_FALLBACK: &str = "I'd be happy to help with your task! Could you provide a bit more detail about what you're working on?";

/// The member actors' name in the server's metrics.
const ACTOR_KIND: &str = "member";

/// The next piece of a reply, from the task reading the AI's stream.
#[derive(Message)]
#[rtype(result = "()")]
struct Piece {
    chat_id: String,
    message_id: String,
    text: String,
    /// When it was read from the provider's stream.
    read_at: tokio::time::Instant,
}

/// Appends to `text` the pieces `stream` has ready now, without waiting, until `text` holds at
/// least `room` bytes (the characters left under the reply's cap). `Some` when the stream ended
/// (or failed) meanwhile.
fn take_ready_pieces(
    stream: &mut futures_util::stream::BoxStream<'static, Result<String, AiError>>,
    text: &mut String,
    room: usize,
) -> Option<Result<(), AiError>> {
    use futures_util::FutureExt;
    while text.len() < room {
        match stream.next().now_or_never()? {
            Some(Ok(more)) => text.push_str(&more),
            Some(Err(error)) => return Some(Err(error)),
            None => return Some(Ok(())),
        }
    }
    None
}

/// The events the member's actors pass between processes.
const PEER_EVENTS: [&str; 4] = ["chat:typing", "chat:delta", "chat:done", "chat:error"];

/// How often the processes whose replies the sockets here are following are asked whether they
/// are still alive.
const PEER_CHECK_EVERY: std::time::Duration = std::time::Duration::from_secs(2);

/// How often a draining actor (`Drain`) looks whether its replies have ended.
const DRAIN_CHECK_EVERY: std::time::Duration = std::time::Duration::from_millis(20);

/// The AI's stream ended (or failed).
#[derive(Message)]
#[rtype(result = "()")]
struct Ended {
    chat_id: String,
    message_id: String,
    result: Result<(), AiError>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ReplyKind {
    Chat,
    Task,
}

impl ReplyKind {
    fn error_text(self) -> &'static str {
        match self {
            ReplyKind::Chat => CHAT_ERROR,
            ReplyKind::Task => TASK_ERROR,
        }
    }
}

/// A reply being written.
struct Writing {
    message_id: String,
    kind: ReplyKind,
    title: String,
    text: String,
    /// The chat's revision with the member's message in it: the reply is stored only while the
    /// chat is still there (nobody wrote in it since: not the member's next message elsewhere,
    /// nor another process's reply to the same message).
    after: u64,
    /// The task reading the AI's stream; aborting it drops the stream, which ends the AI call.
    reader: tokio::task::JoinHandle<()>,
}

/// What a reply is written from.
struct ReplyPlan {
    request: AiRequest,
    /// The chat's revision with the member's message in it ([`Writing::after`]).
    after: u64,
}

/// A chat ready for its reply: the member's message is stored.
struct Prepared {
    chat_id: String,
    message_id: String,
    title: String,
    /// `None` when the chat could not be read back for the AI: the reply fails (the message
    /// itself is stored and acknowledged).
    reply: Option<ReplyPlan>,
    new_chat: bool,
    /// The chat as stored with this message, for the actor to keep ([`KnownChat`]).
    known: Option<StoredChat>,
    /// The member's access time left, when it was read for this send (not trusted from before).
    access_read: Option<std::time::Duration>,
}

/// A read of the member's access that a send or task help makes: which of the actor's reads it
/// is, and when it began (the trust it gives starts then, not when its send is stored).
#[derive(Debug, Clone, Copy)]
struct AccessRead {
    number: u64,
    began: tokio::time::Instant,
}

/// The chat this member wrote in last, as this actor stored it: its title, last messages and
/// revision. The next send to it needs no read of the chat unless someone else (another tab
/// served by another process, a retried write) moved its revision on meanwhile: the append
/// expects the revision this actor knows, and only when the store refuses it for another is the
/// chat read (and the message tried again at the revision read).
#[derive(Debug)]
struct KnownChat {
    id: String,
    chat: StoredChat,
}

/// `chat` with one more message, stored at its revision: the last `keep` messages.
fn with_message(mut chat: StoredChat, message: AiMessage, keep: usize) -> StoredChat {
    chat.messages.push(message);
    let extra = chat.messages.len().saturating_sub(keep);
    chat.messages.drain(..extra);
    chat.revision += 1;
    chat
}

/// A reply that the member's actor on another process is writing.
struct PeerReply {
    /// That process.
    process: String,
    /// When the last of its events (`chat:typing`, `chat:delta`) arrived.
    heard: tokio::time::Instant,
}

/// How long a peer's reply is taken to be on its way after the last of its events: the longest
/// the peer may stay silent while it writes, as its own settings (the deployment's) bound it:
/// the wait for the AI's next piece, or the tries of saving the finished reply, whichever is
/// longer (30 s by default). Past it the chat takes sends here again: its `chat:done` may have
/// been lost between the processes (pub/sub keeps nothing), and a live peer would otherwise keep
/// the chat refused for good. Letting a send through too early costs nothing but the store's
/// check: the revision refuses whichever of the two writes comes second.
fn peer_quiet_limit(settings: &super::MemberSettings) -> std::time::Duration {
    let saving = (settings.store_timeout + std::time::Duration::from_secs(1))
        * settings.reply_save_attempts.max(1);
    settings.ai_timeout.max(saving)
}

/// One member may have this many replies on their way at once (sends to new chats and task help
/// each start one); more are refused as busy.
const MAX_REPLIES_AT_ONCE: usize = 3;
/// A reply longer than this is ended there.
const MAX_REPLY_CHARS: usize = 20_000;
/// A reply that takes longer than this in all is ended where it is.
const MAX_REPLY_TIME: std::time::Duration = std::time::Duration::from_secs(300);

struct Client {
    client: Arc<dyn ActorClient>,
    session: Option<String>,
}

pub struct MemberActor {
    deps: Arc<Deps>,
    user_id: String,
    live: Weak<LiveActors<String, MemberActor>>,
    clients: Vec<Client>,
    funnel: Option<FunnelBrief>,
    /// The funnel greeting was used (or is being used) by a chat: later joins do not bring it back.
    funnel_taken: bool,
    /// Chats with a member's message being stored (their reply has not begun).
    storing: HashSet<String>,
    /// Chats with a finished reply being saved.
    saving: HashSet<String>,
    /// Chats being stored whose member pressed Stop before their reply began.
    stop_requested: HashSet<String>,
    /// Sends and task-help requests being stored (each will start a reply).
    preparing: usize,
    writing: HashMap<String, Writing>,
    /// Replies that the member's actor on another process is writing, by chat id.
    peer_writing: HashMap<String, PeerReply>,
    /// While `peer_writing` has any: the check that their processes are still alive.
    peer_check: Option<SpawnHandle>,
    known: Option<KnownChat>,
    /// Until when the member's access, as last read, lets a send through without another read
    /// (`MemberSettings::access_trusted_for`).
    access_until: Option<tokio::time::Instant>,
    /// How many reads of the access this actor has begun.
    access_reads: u64,
    /// The newest of them whose answer `access_until` holds: an older answer that arrives later
    /// is not kept.
    access_applied: u64,
    idle_timer: Option<SpawnHandle>,
}

impl MemberActor {
    pub(super) fn new(
        deps: Arc<Deps>,
        user_id: String,
        live: Weak<LiveActors<String, MemberActor>>,
    ) -> Self {
        Self {
            deps,
            user_id,
            live,
            clients: Vec::new(),
            funnel: None,
            funnel_taken: false,
            storing: HashSet::new(),
            saving: HashSet::new(),
            stop_requested: HashSet::new(),
            preparing: 0,
            writing: HashMap::new(),
            peer_writing: HashMap::new(),
            peer_check: None,
            known: None,
            access_until: None,
            access_reads: 0,
            access_applied: 0,
            idle_timer: None,
        }
    }

    /// The first message of a new chat.
    fn greeting(&self) -> String {
        greeting(self.funnel.as_ref().map(|funnel| funnel.issue.as_str()))
    }

    /// Takes the funnel greeting for the chat being started; the page learns the plain greeting.
    fn take_funnel(&mut self) -> Option<FunnelBrief> {
        let funnel = self.funnel.take()?;
        self.funnel_taken = true;
        let ready = self.ready();
        self.broadcast("chat:ready", &ready);
        Some(funnel)
    }

    /// A chat that took the funnel greeting was not stored after all.
    fn give_back_funnel(&mut self, funnel: Option<FunnelBrief>) {
        if let Some(funnel) = funnel {
            self.funnel = Some(funnel);
            self.funnel_taken = false;
            let ready = self.ready();
            self.broadcast("chat:ready", &ready);
        }
    }

    /// Emits to every socket of the member: here, and through the member's actors on other
    /// processes. `chat:ready` stays here: it describes this actor's own replies.
    fn broadcast(&self, event: &'static str, data: &Value) {
        self.emit_here(event, data);
        if event != "chat:ready" {
            self.deps.peers.publish(&self.user_id, event, data, false);
        }
    }

    /// Every `PEER_CHECK_EVERY` while the member's actors elsewhere write replies: a reply whose
    /// process is gone (it died) ends here in the error, so the member can ask again.
    fn check_peers_while_they_write(&mut self, ctx: &mut Context<Self>) {
        if self.peer_check.is_some() {
            return;
        }
        self.peer_check = Some(ctx.run_interval(PEER_CHECK_EVERY, |act, ctx| {
            let quiet = peer_quiet_limit(&act.deps.settings);
            act.peer_writing.retain(|chat_id, reply| {
                let waited = reply.heard.elapsed() < quiet;
                if !waited {
                    tracing::info!(user = %act.user_id, chat = %chat_id, "a peer's reply went quiet; its chat takes sends again");
                }
                waited
            });
            if act.peer_writing.is_empty() {
                if let Some(check) = act.peer_check.take() {
                    ctx.cancel_future(check);
                }
                return;
            }
            let mut processes: Vec<String> = act
                .peer_writing
                .values()
                .map(|reply| reply.process.clone())
                .collect();
            processes.sort();
            processes.dedup();
            for process in processes {
                let alive = act.deps.peers.alive(&process);
                ctx.spawn(alive.into_actor(act).map(move |alive, act, _| {
                    if alive {
                        return;
                    }
                    let gone: Vec<String> = act
                        .peer_writing
                        .iter()
                        .filter(|(_, reply)| reply.process == process)
                        .map(|(chat_id, _)| chat_id.clone())
                        .collect();
                    for chat_id in gone {
                        act.peer_writing.remove(&chat_id);
                        tracing::warn!(user = %act.user_id, chat = %chat_id, "a reply's process is gone");
                        act.emit_here(
                            "chat:error",
                            &json!({ "chatId": chat_id, "text": CHAT_ERROR }),
                        );
                    }
                }));
            }
        }));
    }

    /// A volatile event for the sockets here: the last tab takes the value itself, only the
    /// others get copies. False when there is no socket here.
    fn emit_volatile_here(&self, event: &'static str, data: Value) -> bool {
        let Some((last, others)) = self.clients.split_last() else {
            return false;
        };
        for client in others {
            client.client.emit_volatile(event, data.clone());
        }
        last.client.emit_volatile(event, data);
        true
    }

    fn emit_here(&self, event: &'static str, data: &Value) {
        for client in &self.clients {
            client.client.emit(event, data.clone());
        }
    }

    /// An event of the member's actor on another process, for the sockets here. A reply it
    /// begins is followed until it ends (or goes quiet, [`peer_quiet_limit`]), so that the sockets
    /// here hear of its end even when that process dies first, and a send here to its chat is
    /// refused meanwhile.
    fn on_from_peer(&mut self, from_peer: FromPeer, ctx: &mut Context<Self>) {
        let Some(event) = PEER_EVENTS.iter().find(|known| **known == from_peer.event) else {
            return;
        };
        let text_of = |key: &str| from_peer.data[key].as_str().map(str::to_owned);
        match (*event, text_of("chatId"), text_of("messageId")) {
            // Each piece says the reply is still on its way (and stands for a lost `chat:typing`).
            ("chat:typing" | "chat:delta", Some(chat_id), Some(_)) => {
                self.peer_writing.insert(
                    chat_id,
                    PeerReply {
                        process: from_peer.from.clone(),
                        heard: tokio::time::Instant::now(),
                    },
                );
                self.check_peers_while_they_write(ctx);
            }
            ("chat:done" | "chat:error", Some(chat_id), _) => {
                self.peer_writing.remove(&chat_id);
            }
            _ => {}
        }
        if from_peer.volatile {
            self.emit_volatile_here(event, from_peer.data);
        } else {
            self.emit_here(event, &from_peer.data);
        }
    }

    /// Whether the member's actor on another process is writing a reply in `chat_id`, as far as
    /// this actor has heard lately.
    fn peer_writes(&self, chat_id: &str) -> bool {
        let quiet = peer_quiet_limit(&self.deps.settings);
        self.peer_writing
            .get(chat_id)
            .is_some_and(|reply| reply.heard.elapsed() < quiet)
    }

    fn is_working(&self) -> bool {
        !self.storing.is_empty()
            || !self.saving.is_empty()
            || !self.writing.is_empty()
            || self.preparing > 0
    }

    fn replies_on_their_way(&self) -> usize {
        self.writing.len() + self.preparing
    }

    /// `chat:ready`: the greeting of a new chat, and the chats whose reply is still being written
    /// (a page that missed their end knows to reload them).
    fn ready(&self) -> Value {
        let mut writing: Vec<&String> = self
            .writing
            .keys()
            .chain(self.saving.iter())
            .chain(
                self.peer_writing
                    .keys()
                    .filter(|chat_id| self.peer_writes(chat_id)),
            )
            .collect();
        writing.sort();
        writing.dedup();
        json!({ "greeting": self.greeting(), "writing": writing })
    }

    /// The read of the member's access a send or task help begins now; `None` when the access
    /// read last is still trusted.
    fn begin_access_read(&mut self) -> Option<AccessRead> {
        let now = tokio::time::Instant::now();
        if self.access_until.is_some_and(|until| now < until) {
            return None;
        }
        self.access_reads += 1;
        Some(AccessRead {
            number: self.access_reads,
            began: now,
        })
    }

    /// Keeps what `read` found, unless the answer of a read begun later is kept already: access
    /// is trusted from when its read began for `access_trusted_for` (or for the trial's time
    /// left, when that is shorter); a refusal forgets any access trusted before.
    fn note_access(&mut self, read: Option<AccessRead>, prepared: &Result<Prepared, Refusal>) {
        let Some(read) = read.filter(|read| read.number > self.access_applied) else {
            return;
        };
        match prepared {
            Ok(Prepared {
                access_read: Some(left),
                ..
            }) => {
                self.access_applied = read.number;
                let trusted = (*left).min(self.deps.settings.access_trusted_for);
                self.access_until = read.began.checked_add(trusted);
            }
            Err(Refusal::UpgradeRequired) => {
                self.access_applied = read.number;
                self.access_until = None;
            }
            _ => {}
        }
    }

    /// Whether `chat_id` takes no send now: a message of it is being stored here, or its reply
    /// is being written, here or (as far as this actor heard) by the member's actor on another
    /// process. The latter spares the store a write it would refuse; the store's revision check
    /// is what holds when this actor has not heard (yet).
    fn is_taken(&self, chat_id: &str) -> bool {
        self.storing.contains(chat_id)
            || self.saving.contains(chat_id)
            || self.writing.contains_key(chat_id)
            // The fault run's mutation: another process's reply is not waited for.
            || (!mutation::on("no_revision_check") && self.peer_writes(chat_id))
    }

    fn on_send(
        &mut self,
        chat_id: Option<String>,
        text: String,
        reply: Reply<SendAck>,
        ctx: &mut Context<Self>,
    ) {
        let text = text.trim().to_owned();
        let refusal = if text.is_empty() {
            Some(Refusal::Empty)
        } else if text.chars().count() > self.deps.settings.max_message_chars {
            Some(Refusal::TooLong)
        } else if chat_id.as_deref().is_some_and(|id| self.is_taken(id)) {
            Some(Refusal::Busy)
        } else if self.replies_on_their_way() >= MAX_REPLIES_AT_ONCE {
            Some(Refusal::TooManyReplies)
        } else {
            None
        };
        if let Some(refusal) = refusal {
            reply.send(SendAck::Refused(refusal));
            return;
        }
        if let Some(id) = &chat_id {
            self.storing.insert(id.clone());
        }
        self.preparing += 1;
        // The shortcut answers the funnel greeting, so only a new chat's first message counts;
        // the greeting and the shortcut belong to the first chat after the funnel.
        let funnel = if chat_id.is_none() {
            self.take_funnel()
        } else {
            None
        };
        let greeting = greeting(funnel.as_ref().map(|funnel| funnel.issue.as_str()));
        let solution_for = funnel.clone().filter(|_| is_affirmative_reply(&text));
        let known = chat_id
            .as_ref()
            .and_then(|id| self.known.take_if(|known| known.id == *id))
            .map(|known| known.chat);
        let access_check = self.begin_access_read();
        let prepare = prepare_chat_reply(
            self.deps.clone(),
            self.user_id.clone(),
            access_check.is_none(),
            ChatSend {
                chat_id: chat_id.clone(),
                known,
                greeting,
                text,
                solution_for,
            },
        );
        ctx.spawn(prepare.into_actor(self).map(move |prepared, act, ctx| {
            act.preparing -= 1;
            act.note_access(access_check, &prepared);
            if let Some(id) = &chat_id {
                act.storing.remove(id);
            }
            if prepared.is_err() {
                if let Some(id) = &chat_id {
                    act.stop_requested.remove(id);
                }
                // Nothing was stored: the page still shows the funnel greeting, so it stays.
                act.give_back_funnel(funnel);
            }
            match prepared {
                Ok(mut prepared) => {
                    if let Some(chat) = prepared.known.take() {
                        act.known = Some(KnownChat {
                            id: prepared.chat_id.clone(),
                            chat,
                        });
                    }
                    act.deps.telemetry.message_stored(ACTOR_KIND);
                    reply.send(SendAck::Stored {
                        chat_id: prepared.chat_id.clone(),
                        message_id: prepared.message_id.clone(),
                        title: prepared.title.clone(),
                    });
                    act.deps.analytics.record(
                        "chat_message_sent",
                        &act.user_id,
                        json!({ "chatId": prepared.chat_id, "newChat": prepared.new_chat }),
                    );
                    if prepared.new_chat {
                        act.deps.analytics.record(
                            "new_chat_started",
                            &act.user_id,
                            json!({ "chatId": prepared.chat_id }),
                        );
                    }
                    act.start_reply(prepared, ReplyKind::Chat, ctx);
                }
                Err(refusal) => reply.send(SendAck::Refused(refusal)),
            }
            act.arm_idle_timer_if_alone(ctx);
        }));
    }

    fn on_task_help(
        &mut self,
        task_id: String,
        reply: Reply<TaskHelpAck>,
        ctx: &mut Context<Self>,
    ) {
        if self.replies_on_their_way() >= MAX_REPLIES_AT_ONCE {
            reply.send(TaskHelpAck::Refused(Refusal::TooManyReplies));
            return;
        }
        self.preparing += 1;
        // A task chat is a chat too: the funnel greeting no longer opens the member's first one.
        let funnel = self.take_funnel();
        let deps = self.deps.clone();
        let user_id = self.user_id.clone();
        let access_check = self.begin_access_read();
        let trusted = access_check.is_none();
        let prepare = async move {
            let (access_read, task) = within(deps.settings.store_timeout, async {
                let access_read = check_access(&deps, &user_id, trusted).await?;
                let task = deps
                    .store
                    .task(&user_id, &task_id)
                    .await
                    .map_err(unavailable)?
                    .ok_or(Refusal::TaskNotFound)?;
                Ok((access_read, task))
            })
            .await?;
            let request = prompts::task_request(&task);
            let title = chat_title(&task.name);
            let message_id = new_message_id();
            let chat_id = within(deps.settings.store_timeout, async {
                deps.store
                    .create_chat(&user_id, &title, &greeting(None), &message_id, &request)
                    .await
                    .map_err(unavailable)
            })
            .await?;
            let settings = &deps.settings;
            Ok(Prepared {
                chat_id,
                message_id,
                title,
                // A new chat is at revision 0 with its first message.
                reply: Some(ReplyPlan {
                    request: AiRequest {
                        purpose: AiPurpose::TaskHelp,
                        messages: prompts::task_help_messages(
                            &settings.assistant_name,
                            &settings.product_name,
                            &request,
                        ),
                        timeout: settings.ai_timeout,
                    },
                    after: 0,
                }),
                new_chat: true,
                known: None,
                access_read,
            })
        };
        ctx.spawn(prepare.into_actor(self).map(move |prepared, act, ctx| {
            act.preparing -= 1;
            act.note_access(access_check, &prepared);
            if prepared.is_err() {
                act.give_back_funnel(funnel);
            }
            match prepared {
                Ok(prepared) => {
                    reply.send(TaskHelpAck::Started {
                        chat_id: prepared.chat_id.clone(),
                        title: prepared.title.clone(),
                    });
                    act.start_reply(prepared, ReplyKind::Task, ctx);
                }
                Err(refusal) => reply.send(TaskHelpAck::Refused(refusal)),
            }
            act.arm_idle_timer_if_alone(ctx);
        }));
    }

    /// Starts the AI's reply: `chat:typing` now, then a `chat:delta` per piece as it comes.
    fn start_reply(&mut self, prepared: Prepared, kind: ReplyKind, ctx: &mut Context<Self>) {
        let message_id = new_message_id();
        let chat_id = prepared.chat_id;
        if self.stop_requested.remove(&chat_id) {
            // Stop came while the message was being stored: no reply at all.
            self.broadcast(
                "chat:done",
                &json!({
                    "chatId": chat_id, "messageId": message_id, "text": "",
                    "title": prepared.title, "stopped": true,
                }),
            );
            return;
        }
        let Some(ReplyPlan { request, after }) = prepared.reply else {
            self.broadcast(
                "chat:error",
                &json!({ "chatId": chat_id, "text": kind.error_text() }),
            );
            return;
        };
        self.broadcast(
            "chat:typing",
            &json!({ "chatId": chat_id, "messageId": message_id }),
        );
        let mut stream = self.deps.ai.stream(request);
        let wait = self.deps.settings.ai_timeout;
        let addr = ctx.address();
        let (reader_chat, reader_message) = (chat_id.clone(), message_id.clone());
        let reader = tokio::spawn(async move {
            // Two timers for the whole reply, not two per piece: the reply's deadline, and the
            // wait for the next piece, pushed back (an atomic store in tokio) after each one.
            let mut deadline = std::pin::pin!(tokio::time::sleep(MAX_REPLY_TIME));
            let mut idle = std::pin::pin!(tokio::time::sleep(wait));
            let mut length = 0;
            let result = loop {
                idle.as_mut().reset(tokio::time::Instant::now() + wait);
                let next = tokio::select! {
                    biased;
                    next = stream.next() => next,
                    () = deadline.as_mut() => break Ok(()),
                    () = idle.as_mut() => break Err(AiError::Timeout),
                };
                let mut text = match next {
                    Some(Ok(text)) => text,
                    Some(Err(error)) => break Err(error),
                    None => break Ok(()),
                };
                let room = MAX_REPLY_CHARS - length;
                // Pieces that were read while this one waited go with it, as one event: a
                // server that falls behind sends fewer, larger deltas instead of a growing queue
                // of small ones, and one that keeps up holds nothing back.
                let ended = take_ready_pieces(&mut stream, &mut text, room);
                // A runaway reply ends at the cap; what came so far is the reply.
                if let Some((cut, _)) = text.char_indices().nth(room) {
                    text.truncate(cut);
                }
                length += text.chars().count();
                addr.do_send(Piece {
                    chat_id: reader_chat.clone(),
                    message_id: reader_message.clone(),
                    text,
                    read_at: tokio::time::Instant::now(),
                });
                if length >= MAX_REPLY_CHARS {
                    break Ok(());
                }
                if let Some(ended) = ended {
                    break ended;
                }
            };
            // Dropped here (before `Ended` is handled): a reply ended early hangs up on the AI.
            drop(stream);
            addr.do_send(Ended {
                chat_id: reader_chat,
                message_id: reader_message,
                result,
            });
        });
        self.writing.insert(
            chat_id,
            Writing {
                message_id,
                kind,
                title: prepared.title,
                text: String::new(),
                after,
                reader,
            },
        );
    }

    /// The writing reply of `chat_id`, if `message_id` is still it (a stopped reply's last
    /// pieces may still arrive).
    fn current(&mut self, chat_id: &str, message_id: &str) -> Option<&mut Writing> {
        self.writing
            .get_mut(chat_id)
            .filter(|writing| writing.message_id == message_id)
    }

    fn on_piece(&mut self, piece: Piece) {
        if piece.text.is_empty() {
            return;
        }
        let Some(writing) = self.current(&piece.chat_id, &piece.message_id) else {
            return;
        };
        writing.text.push_str(&piece.text);
        let data =
            json!({ "chatId": piece.chat_id, "messageId": piece.message_id, "text": piece.text });
        self.deps
            .peers
            .publish(&self.user_id, "chat:delta", &data, true);
        if self.emit_volatile_here("chat:delta", data) {
            self.deps.telemetry.piece_forwarded(piece.read_at.elapsed());
        }
    }

    fn on_ended(&mut self, ended: Ended, ctx: &mut Context<Self>) {
        if self.current(&ended.chat_id, &ended.message_id).is_none() {
            return;
        }
        let Some(writing) = self.writing.remove(&ended.chat_id) else {
            return;
        };
        let text = writing.text.trim().to_owned();
        match (ended.result, writing.kind) {
            (Ok(()), _) if !text.is_empty() => {
                self.finish(ended.chat_id, writing, text, false, ctx);
            }
            (Ok(()), ReplyKind::Task) => {
                self.finish(ended.chat_id, writing, TASK_FALLBACK.to_owned(), false, ctx);
            }
            (result, kind) => {
                if let Err(error) = result {
                    tracing::warn!(user = %self.user_id, %error, "a member's reply failed");
                } else {
                    tracing::warn!(user = %self.user_id, "the AI gave an empty reply");
                }
                self.broadcast(
                    "chat:error",
                    &json!({ "chatId": ended.chat_id, "text": kind.error_text() }),
                );
                self.arm_idle_timer_if_alone(ctx);
            }
        }
    }

    fn on_stop(&mut self, chat_id: String, reply: Reply<StopAck>, ctx: &mut Context<Self>) {
        reply.send(StopAck);
        let Some(writing) = self.writing.remove(&chat_id) else {
            // The message is still being stored: its reply will not start.
            if self.storing.contains(&chat_id) {
                self.stop_requested.insert(chat_id);
            }
            return;
        };
        // Dropping the stream (with the task that reads it) hangs up on the AI provider.
        writing.reader.abort();
        let text = writing.text.trim().to_owned();
        if text.is_empty() {
            self.broadcast(
                "chat:done",
                &json!({
                    "chatId": chat_id, "messageId": writing.message_id, "text": "",
                    "title": writing.title, "stopped": true,
                }),
            );
            self.arm_idle_timer_if_alone(ctx);
        } else {
            self.finish(chat_id, writing, text, true, ctx);
        }
    }

    /// Stores the reply (tried a few times), then tells every client with `chat:done`. The chat
    /// takes no send here meanwhile, so the next message lands after the reply; and the reply is
    /// stored only right after its own message (`Writing::after`): when the member wrote in the
    /// chat elsewhere since (another device, on another process), or another process answered
    /// the same message, it is not stored and ends in the error.
    fn finish(
        &mut self,
        chat_id: String,
        writing: Writing,
        text: String,
        stopped: bool,
        ctx: &mut Context<Self>,
    ) {
        self.saving.insert(chat_id.clone());
        let deps = self.deps.clone();
        let user_id = self.user_id.clone();
        let (save_chat, message_id, content, after) = (
            chat_id.clone(),
            writing.message_id.clone(),
            text.clone(),
            writing.after,
        );
        // What the store answered (stored after the chat's revision, already there, or refused
        // because the chat moved on); `None`: no answer, or no such chat.
        let save = async move {
            let attempts = deps.settings.reply_save_attempts.max(1);
            for attempt in 1..=attempts {
                let saving = deps.store.append_message(
                    &user_id,
                    &save_chat,
                    &message_id,
                    Role::Assistant,
                    &content,
                    Some(after),
                );
                match within(deps.settings.store_timeout, async {
                    saving.await.map_err(unavailable)
                })
                .await
                {
                    // The chat was deleted meanwhile: nowhere to keep the reply.
                    Ok(Appended::NoSuchChat) => return None,
                    // Stored, or already there; or refused for a chat that moved on, which no
                    // later try changes.
                    Ok(answer) => return Some(answer),
                    Err(_) if attempt < attempts => {
                        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                    }
                    Err(_) => {}
                }
            }
            None
        };
        ctx.spawn(save.into_actor(self).map(move |saved, act, ctx| {
            act.saving.remove(&chat_id);
            act.remember_reply(&chat_id, saved, &text);
            if let Some(Appended::After { .. } | Appended::AlreadyThere) = saved {
                act.deps.telemetry.message_stored(ACTOR_KIND);
                act.broadcast(
                    "chat:done",
                    &json!({
                        "chatId": chat_id, "messageId": writing.message_id, "text": text,
                        "title": writing.title, "stopped": stopped,
                    }),
                );
            } else {
                // `chat:done` means stored: a reply that could not be kept is an error, so the
                // page does not show what a reload would not.
                if saved == Some(Appended::Moved) {
                    tracing::warn!(user = %act.user_id, chat = %chat_id, "a finished reply was not stored: the chat was written in elsewhere meanwhile");
                } else {
                    tracing::error!(user = %act.user_id, chat = %chat_id, "a finished reply could not be stored");
                }
                act.broadcast(
                    "chat:error",
                    &json!({ "chatId": chat_id, "text": writing.kind.error_text() }),
                );
            }
            act.arm_idle_timer_if_alone(ctx);
        }));
    }

    /// Keeps a stored reply in the known chat, if it is that chat and nobody wrote in it since
    /// (`stored`: what became of the reply, if it was stored); otherwise forgets it.
    fn remember_reply(&mut self, chat_id: &str, stored: Option<Appended>, text: &str) {
        let Some(known) = self.known.take_if(|known| known.id == chat_id) else {
            return;
        };
        let revision = known.chat.revision;
        if stored == Some(Appended::After { revision }) {
            let keep = self.deps.settings.context_messages;
            self.known = Some(KnownChat {
                id: known.id,
                chat: with_message(known.chat, AiMessage::assistant(text), keep),
            });
        }
    }

    fn on_join(&mut self, join: Join, ctx: &mut Context<Self>) {
        if let Some(timer) = self.idle_timer.take() {
            ctx.cancel_future(timer);
        }
        if !self.funnel_taken && self.funnel != join.funnel {
            self.funnel = join.funnel;
            let ready = self.ready();
            self.broadcast("chat:ready", &ready);
        }
        let client = join.client;
        self.clients.retain(|c| c.client.id() != client.id());
        client.emit("chat:ready", self.ready());
        self.clients.push(Client {
            client,
            session: join.session,
        });
    }

    fn on_left(&mut self, client_id: &str, ctx: &mut Context<Self>) {
        self.clients.retain(|c| c.client.id() != client_id);
        self.arm_idle_timer_if_alone(ctx);
    }

    /// Closes the clients of the session the member signed out of (all of them after a reset).
    /// Replies on their way are still finished and stored.
    fn on_signed_out(&mut self, session: Option<String>, ctx: &mut Context<Self>) {
        let (closing, staying): (Vec<Client>, Vec<Client>) = std::mem::take(&mut self.clients)
            .into_iter()
            .partition(|c| session.is_none() || c.session == session);
        self.clients = staying;
        for client in closing {
            client.client.disconnect();
        }
        self.arm_idle_timer_if_alone(ctx);
    }

    /// Nobody is connected and nothing is left to finish: the actor stops after a while. A reply
    /// being written when the last tab closes is still finished and stored first.
    fn arm_idle_timer_if_alone(&mut self, ctx: &mut Context<Self>) {
        if !self.clients.is_empty() || self.is_working() {
            return;
        }
        if let Some(timer) = self.idle_timer.take() {
            ctx.cancel_future(timer);
        }
        self.idle_timer = Some(
            ctx.run_later(self.deps.settings.idle_stop_after, |act, ctx| {
                act.idle_timer = None;
                if act.clients.is_empty() && !act.is_working() {
                    ctx.stop();
                }
            }),
        );
    }
}

/// A member's send, as [`prepare_chat_reply`] takes it.
struct ChatSend {
    /// `None`: a new chat.
    chat_id: Option<String>,
    /// The chat as this actor knows it ([`KnownChat`]), if it wrote in it last.
    known: Option<StoredChat>,
    /// A new chat's first message.
    greeting: String,
    /// The member's message.
    text: String,
    /// The funnel whose solution this send asks for, if it does.
    solution_for: Option<FunnelBrief>,
}

/// Stores the member's message (creating the chat on its first send) and builds the AI request.
/// A refusal means nothing was stored. The access (unless `access_trusted`: read within
/// `MemberSettings::access_trusted_for`) and an existing chat's last messages are read
/// together before the message is stored (two store calls in one round, not three in a row),
/// and the chat only when the actor does not `known` it: a chat this actor wrote in last is not
/// read at all. A new chat is never read: the actor knows its greeting and first message. Once
/// the message is stored the send is acknowledged: if the chat could not be read for the AI, the
/// reply fails instead (`reply: None`).
///
/// The message is stored only while the chat is at the revision the actor took its messages at
/// (the store refuses it otherwise, writing nothing). When that was the `known` chat, a refusal
/// means the member wrote in the chat elsewhere since (another device on another process): the
/// chat is read and the message tried once more at the revision read. When it was read for this
/// send, another writer got in between the read and the write (the member's other device sent
/// at the same moment): the send is refused as busy, as a second send to a chat whose reply is
/// on its way is. Only when the chat cannot be read is the message written at whatever revision
/// the chat has (as before the check; its reply is still stored only right after it).
fn prepare_chat_reply(
    deps: Arc<Deps>,
    user_id: String,
    access_trusted: bool,
    send: ChatSend,
) -> BoxFuture<'static, Result<Prepared, Refusal>> {
    let ChatSend {
        chat_id,
        known,
        greeting,
        text,
        solution_for,
    } = send;
    Box::pin(async move {
        let settings = &deps.settings;
        let keep = settings.context_messages;
        let message_id = new_message_id();
        let new_chat = chat_id.is_none();
        let mut from_known = known.is_some();
        let access = check_access(&deps, &user_id, access_trusted);
        let earlier = async {
            match (&chat_id, known) {
                (Some(id), None) => read_chat(&deps, &user_id, id).await,
                (_, known) => known,
            }
        };
        let (access, earlier) = futures_util::future::join(access, earlier).await;
        let access_read = access?;
        let user_message = AiMessage::user(text.clone());
        let (chat_id, chat) = match chat_id {
            None => {
                let title = chat_title(&text);
                let id = within(settings.store_timeout, async {
                    deps.store
                        .create_chat(&user_id, &title, &greeting, &message_id, &text)
                        .await
                        .map_err(unavailable)
                })
                .await?;
                let chat = StoredChat {
                    title,
                    messages: vec![AiMessage::assistant(greeting), user_message],
                    revision: 0,
                };
                (id, Some(chat))
            }
            Some(id) => {
                let mut earlier = earlier;
                let appended = loop {
                    let expected = earlier.as_ref().map(|chat| chat.revision);
                    let appended = within(settings.store_timeout, async {
                        deps.store
                            .append_message(&user_id, &id, &message_id, Role::User, &text, expected)
                            .await
                            .map_err(unavailable)
                    })
                    .await?;
                    match appended {
                        // What this actor knew is out of date: the member wrote elsewhere.
                        Appended::Moved if from_known => {
                            from_known = false;
                            earlier = read_chat(&deps, &user_id, &id).await;
                        }
                        // Someone wrote between this send's read and its write.
                        Appended::Moved => return Err(Refusal::Busy),
                        appended => break appended,
                    }
                };
                let chat = match (appended, earlier) {
                    (Appended::NoSuchChat, _) => return Err(Refusal::ChatNotFound),
                    (Appended::After { revision }, Some(chat)) if chat.revision == revision => {
                        Some(with_message(chat, user_message, keep))
                    }
                    // The earlier read failed, or the message was there already (a retried write).
                    _ => read_chat(&deps, &user_id, &id).await,
                };
                (id, chat)
            }
        };
        let Some(chat) = chat else {
            tracing::warn!(user = %user_id, chat = %chat_id, "a chat could not be read for its reply");
            return Ok(Prepared {
                chat_id,
                message_id,
                title: String::new(),
                reply: None,
                new_chat,
                known: None,
                access_read,
            });
        };
        let (purpose, messages) = match solution_for {
            Some(funnel) => (
                AiPurpose::FunnelSolution,
                prompts::funnel_solution_messages(
                    &settings.assistant_name,
                    &settings.product_name,
                    &funnel,
                    &text,
                ),
            ),
            None => {
                let mut messages = vec![AiMessage::system(prompts::chat_system_prompt(
                    &settings.assistant_name,
                    &settings.product_name,
                ))];
                messages.extend(chat.messages.iter().cloned());
                (AiPurpose::MemberChat, messages)
            }
        };
        Ok(Prepared {
            chat_id,
            message_id,
            title: chat.title.clone(),
            reply: Some(ReplyPlan {
                request: AiRequest {
                    purpose,
                    messages,
                    timeout: settings.ai_timeout,
                },
                after: chat.revision,
            }),
            new_chat,
            known: Some(chat),
            access_read,
        })
    })
}

/// The member's chat with its last messages, or `None` when it cannot be read (or is gone).
async fn read_chat(deps: &Deps, user_id: &str, chat_id: &str) -> Option<StoredChat> {
    let settings = &deps.settings;
    within(settings.store_timeout, async {
        deps.store
            .chat(user_id, chat_id, settings.context_messages)
            .await
            .map_err(unavailable)
    })
    .await
    .ok()
    .flatten()
}

/// The member's access for a send or task help: `Ok(None)` when the actor trusts what it read
/// before (`trusted`), `Ok(Some(time left))` when read now; without access, the upgrade refusal.
async fn check_access(
    deps: &Deps,
    user_id: &str,
    trusted: bool,
) -> Result<Option<std::time::Duration>, Refusal> {
    if trusted {
        return Ok(None);
    }
    within(deps.settings.store_timeout, async {
        deps.store.access_left(user_id).await.map_err(unavailable)
    })
    .await?
    .map(Some)
    .ok_or(Refusal::UpgradeRequired)
}

/// Store work bounded in time: past it, the member is asked to try again.
async fn within<T>(
    limit: std::time::Duration,
    work: impl std::future::Future<Output = Result<T, Refusal>>,
) -> Result<T, Refusal> {
    tokio::time::timeout(limit, work)
        .await
        .unwrap_or(Err(Refusal::Unavailable))
}

fn unavailable(error: StoreError) -> Refusal {
    tracing::warn!(%error, "the member chat's store failed");
    Refusal::Unavailable
}

/// A message id: 20 random letters and digits, like the store's own keys.
fn new_message_id() -> String {
    let mut rng = rand::rng();
    (0..20)
        .map(|_| char::from(rng.sample(rand::distr::Alphanumeric)))
        .collect()
}

impl Actor for MemberActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        self.deps.telemetry.actor_started(ACTOR_KIND);
        self.deps.peers.joined(&self.user_id);
        self.arm_idle_timer_if_alone(ctx);
    }

    fn stopped(&mut self, ctx: &mut Self::Context) {
        self.deps.telemetry.actor_stopped(ACTOR_KIND);
        self.deps.peers.left(&self.user_id);
        for writing in self.writing.values() {
            writing.reader.abort();
        }
        if let Some(live) = self.live.upgrade() {
            live.forget(&self.user_id, &ctx.address());
        }
    }
}

impl Handler<Join> for MemberActor {
    type Result = ();

    fn handle(&mut self, join: Join, ctx: &mut Self::Context) {
        self.on_join(join, ctx);
    }
}

impl Handler<Event> for MemberActor {
    type Result = ();

    fn handle(&mut self, event: Event, ctx: &mut Self::Context) {
        match event {
            Event::Send {
                chat_id,
                text,
                reply,
            } => self.on_send(chat_id, text, reply, ctx),
            Event::Stop { chat_id, reply } => self.on_stop(chat_id, reply, ctx),
            Event::TaskHelp { task_id, reply } => self.on_task_help(task_id, reply, ctx),
            Event::Left { client_id } => self.on_left(&client_id, ctx),
        }
    }
}

impl Handler<Drain> for MemberActor {
    type Result = ();

    fn handle(&mut self, _: Drain, ctx: &mut Self::Context) {
        fn stop_when_idle(act: &mut MemberActor, ctx: &mut Context<MemberActor>) {
            if act.is_working() {
                return;
            }
            for client in act.clients.drain(..) {
                client.client.reconnect();
            }
            ctx.stop();
        }
        stop_when_idle(self, ctx);
        ctx.run_interval(DRAIN_CHECK_EVERY, stop_when_idle);
    }
}

impl Handler<SignedOut> for MemberActor {
    type Result = ();

    fn handle(&mut self, signed_out: SignedOut, ctx: &mut Self::Context) {
        self.on_signed_out(signed_out.session, ctx);
    }
}

impl Handler<FromPeer> for MemberActor {
    type Result = ();

    fn handle(&mut self, from_peer: FromPeer, ctx: &mut Self::Context) {
        self.on_from_peer(from_peer, ctx);
    }
}

impl Handler<Piece> for MemberActor {
    type Result = ();

    fn handle(&mut self, piece: Piece, _ctx: &mut Self::Context) {
        self.on_piece(piece);
    }
}

impl Handler<Ended> for MemberActor {
    type Result = ();

    fn handle(&mut self, ended: Ended, ctx: &mut Self::Context) {
        self.on_ended(ended, ctx);
    }
}

mod resync;

pub use resync::{ClientSessions, PeersMissed, Sessions};

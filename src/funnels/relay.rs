//! A funnel conversation is held by one live actor among all the processes (its claim, see
//! `Cluster::claim`). A visitor's socket that reaches another process (a second tab that the
//! balancer sent elsewhere) is relayed to the holder: the socket's process passes the socket's
//! events to the holder's inbox, and the holder's actor treats the socket as one of its clients,
//! whose events and acknowledgements go back to the socket's process. docs/operations.md,
//! "Several processes".
//!
//! Each relay (one socket's joining) has a number of its own, so a socket that recovers its
//! connection (same socket id, a new relay) never takes the answers or the leaving of its earlier
//! relay. Each side watches the other's sign of life: when the holder dies, the relayed socket's
//! connection is closed, the browser connects again and this process, now free to claim the
//! conversation, loads it from the store; when the socket's process dies, the holder's actor
//! forgets the socket. A message for a relay the other side no longer has is answered with its
//! end (`Left` to the holder, `Close` to the socket's process), so neither keeps a relay the
//! other lost. Delivery is the cluster's: in order, each message once (a pipeline sent again is
//! dropped by its number), and a loss is noticed (`cluster::Gap::Inbox`): then every relay
//! between this process and the other one ends, on both sides ([`FunnelRelay::missed`]): the
//! relayed socket's connection closes and the browser, connecting again, gets the whole
//! conversation as stored. The time-outs below remain for what even that does not notice (a
//! sender's very first messages here).
//!
//! The numbers are the cluster's, per sending process and channel, not a relay's own. A relay's
//! own numbers would end only the relay that lost something, but they show a loss only when a
//! later message of the same relay arrives: a lost last message (the reply the visitor waits
//! for) is noticed by the channel's mark, which cannot say which relay it was on; and a lost
//! subscription loses every relay's messages alike. So a gap ends the relays with that one
//! process, which costs their tabs a reconnection and a read of their conversation, after a
//! fault only; and no relay message carries a number of its own.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::prelude::*;
use helpnow_actors::funnel::{
    Attribution, CheckoutAck, ClientEvent, ConversationKey, FunnelActor, FunnelRegistry,
    NewConversation, Reply, SendAck,
};
use helpnow_actors::ports::ActorClient;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::cluster::{Cluster, ClusterEvent};
use crate::realtime::{AckSender, SocketEvent, SocketRef};

/// How often each side asks whether the other's process lives.
const CHECK_EVERY: Duration = Duration::from_secs(2);

/// A relayed socket that hears nothing from the holder this long after its join (the join was
/// lost: the holder was resubscribing to Redis, say) connects again.
const JOIN_TIMEOUT: Duration = Duration::from_secs(5);

/// A relayed socket whose event waits this long for the holder's answer (lost on the way)
/// connects again: the page gets the conversation as stored.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);

/// A relay message as the cluster carries it.
fn cluster_event(message: &RelayMessage) -> ClusterEvent {
    ClusterEvent::Funnel(
        serde_json::to_value(message)
            .expect("a relay message is plain JSON (no map with non-string keys)"),
    )
}

/// A relayed socket's events between its process and the conversation's holder. `relay` is the
/// number of one socket's relay, chosen by the socket's process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
/// Tagged by `relay_message` (inside the event's own `kind`).
#[serde(tag = "relay_message", rename_all = "snake_case")]
pub enum RelayMessage {
    /// To the holder: a socket joins the conversation of `key`.
    Join {
        relay: u64,
        socket: String,
        key: ConversationKey,
        attribution: Attribution,
        address: Option<IpAddr>,
    },
    /// To the holder: the socket's `send` (`ack`: the number its answer comes back with).
    Send {
        relay: u64,
        text: String,
        ack: Option<u64>,
    },
    /// To the holder: the socket's `checkout`.
    Checkout { relay: u64, ack: Option<u64> },
    /// To the holder: the socket is gone (or this process has no such relay).
    Left { relay: u64 },
    /// To the socket's process: an event for the socket.
    Emit {
        relay: u64,
        event: String,
        data: Value,
        volatile: bool,
    },
    /// To the socket's process: the answer to the socket's event `ack`.
    Ack { relay: u64, ack: u64, data: Value },
    /// To the socket's process: the holder will not serve the socket (any more); its
    /// connection closes so that it connects again.
    Close { relay: u64 },
}

/// The relayed sockets of this process, both ways.
#[derive(Clone)]
pub struct FunnelRelay {
    inner: Arc<Inner>,
}

struct Inner {
    cluster: Cluster,
    registry: FunnelRegistry,
    /// Sockets here whose conversation another process holds, by relay.
    relayed: Mutex<HashMap<u64, Relayed>>,
    /// Sockets of other processes whose conversation is held here, by (process, relay).
    remote: Mutex<HashMap<(String, u64), Addr<RemoteSocket>>>,
    /// Where the actors for other processes' sockets run (and the conversation actors they
    /// start): the events from other processes arrive on a task outside actix's arbiters.
    arbiter: std::sync::OnceLock<ArbiterHandle>,
}

/// A socket here relayed to the process `holder`.
struct Relayed {
    holder: String,
    addr: Addr<RelayedSocket>,
}

/// An arbiter of its own, on its own thread, for the process's lifetime.
fn start_arbiter() -> ArbiterHandle {
    let (sender, handle) = std::sync::mpsc::channel();
    let started = std::thread::Builder::new()
        .name("helpnow-relay".into())
        .spawn(move || {
            System::new().block_on(async move {
                let _ = sender.send(Arbiter::current());
                std::future::pending::<()>().await;
            });
        });
    match started.ok().and_then(|_| handle.recv().ok()) {
        Some(handle) => handle,
        // No thread to be had: the caller's arbiter (if any) has to do.
        None => Arbiter::current(),
    }
}

use crate::sync::lock;

impl FunnelRelay {
    pub fn new(cluster: Cluster, registry: FunnelRegistry) -> Self {
        Self {
            inner: Arc::new(Inner {
                cluster,
                registry,
                relayed: Mutex::new(HashMap::new()),
                remote: Mutex::new(HashMap::new()),
                arbiter: std::sync::OnceLock::new(),
            }),
        }
    }

    /// Serves `socket` through the process `holder`, which holds the conversation of `key`:
    /// the recipient of the socket's events.
    pub fn open(
        &self,
        holder: String,
        key: ConversationKey,
        start: NewConversation,
        socket: SocketRef,
        address: Option<IpAddr>,
    ) -> Recipient<SocketEvent> {
        let relay = rand::random::<u64>();
        let join = RelayMessage::Join {
            relay,
            socket: socket.id().to_owned(),
            key,
            attribution: start.attribution,
            address,
        };
        let addr = RelayedSocket {
            relay_id: relay,
            relay: self.clone(),
            holder: holder.clone(),
            socket,
            acks: HashMap::new(),
            next_ack: 0,
            heard: false,
        }
        .start();
        // Known before the holder can answer.
        lock(&self.inner.relayed).insert(
            relay,
            Relayed {
                holder: holder.clone(),
                addr: addr.clone(),
            },
        );
        self.send_to(&holder, join);
        addr.recipient()
    }

    /// A relay message from the process `from`, as the cluster carries it.
    pub fn receive_event(&self, from: &str, message: serde_json::Value) {
        match serde_json::from_value(message) {
            Ok(message) => self.receive(from, message),
            Err(error) => tracing::warn!(%error, from, "an unreadable relay message"),
        }
    }

    /// A relay message from the process `from`.
    fn receive(&self, from: &str, message: RelayMessage) {
        match message {
            RelayMessage::Join {
                relay,
                socket,
                key,
                attribution,
                address,
            } => {
                let client = RemoteClient {
                    id: format!("{socket}/{relay}"),
                    cluster: self.inner.cluster.clone(),
                    process: from.to_owned(),
                    relay,
                    address,
                };
                let remote = RemoteSocket {
                    relay: self.clone(),
                    client: Arc::new(client),
                    key,
                    start: NewConversation {
                        attribution,
                        flow: None,
                    },
                    actor: None,
                    last_ack: None,
                };
                let arbiter = self.inner.arbiter.get_or_init(start_arbiter);
                let addr = RemoteSocket::start_in_arbiter(arbiter, move |_| remote);
                lock(&self.inner.remote).insert((from.to_owned(), relay), addr);
            }
            RelayMessage::Send { relay, text, ack } => {
                self.to_remote(from, relay, Forward::Send { text, ack });
            }
            RelayMessage::Checkout { relay, ack } => {
                self.to_remote(from, relay, Forward::Checkout { ack });
            }
            RelayMessage::Left { relay } => {
                let addr = lock(&self.inner.remote).remove(&(from.to_owned(), relay));
                if let Some(addr) = addr {
                    addr.do_send(FromSocket(Forward::Left));
                }
            }
            RelayMessage::Emit { relay, .. }
            | RelayMessage::Ack { relay, .. }
            | RelayMessage::Close { relay } => {
                let addr = lock(&self.inner.relayed)
                    .get(&relay)
                    .map(|relayed| relayed.addr.clone());
                match addr {
                    Some(addr) => addr.do_send(FromHolder(message)),
                    // That socket is gone here: the holder is to forget it.
                    None if !matches!(message, RelayMessage::Close { .. }) => {
                        self.send_to(from, RelayMessage::Left { relay });
                    }
                    None => {}
                }
            }
        }
    }

    /// Passes a socket's event to its remote socket here; a socket this process does not
    /// serve (it lost the conversation's claim, or restarted) is told to connect again.
    fn to_remote(&self, from: &str, relay: u64, forward: Forward) {
        let addr = lock(&self.inner.remote)
            .get(&(from.to_owned(), relay))
            .cloned();
        match addr {
            Some(addr) => addr.do_send(FromSocket(forward)),
            None => self.send_to(from, RelayMessage::Close { relay }),
        }
    }

    /// Relay messages from the process `from` (from every process, `None`) may have been lost
    /// (see the module's notes): every relay with it ends. The sockets here relayed to it close
    /// their connections (the browser connects again and gets the conversation as stored); the
    /// sockets of it served here leave their actors, and their processes are told to close them.
    pub fn missed(&self, from: Option<&str>) {
        let with = |process: &str| from.is_none_or(|from| from == process);
        let relayed: Vec<(u64, Addr<RelayedSocket>)> = lock(&self.inner.relayed)
            .iter()
            .filter(|(_, relayed)| with(&relayed.holder))
            .map(|(relay, relayed)| (*relay, relayed.addr.clone()))
            .collect();
        for (relay, addr) in relayed {
            addr.do_send(FromHolder(RelayMessage::Close { relay }));
        }
        // Taken out at once: what arrives for them from now on is answered with their end.
        let remote: Vec<((String, u64), Addr<RemoteSocket>)> = {
            let mut remote = lock(&self.inner.remote);
            let ending: Vec<(String, u64)> = remote
                .keys()
                .filter(|(process, _)| with(process))
                .cloned()
                .collect();
            ending
                .into_iter()
                .filter_map(|key| remote.remove(&key).map(|addr| (key, addr)))
                .collect()
        };
        for ((process, relay), addr) in remote {
            self.send_to(&process, RelayMessage::Close { relay });
            addr.do_send(FromSocket(Forward::Left));
        }
    }

    fn forget_relayed(&self, relay: u64, addr: &Addr<RelayedSocket>) {
        let mut relayed = lock(&self.inner.relayed);
        if relayed
            .get(&relay)
            .is_some_and(|relayed| relayed.addr == *addr)
        {
            relayed.remove(&relay);
        }
    }

    fn forget_remote(&self, client: &RemoteClient, addr: &Addr<RemoteSocket>) {
        let mut remote = lock(&self.inner.remote);
        let key = (client.process.clone(), client.relay);
        if remote.get(&key) == Some(addr) {
            remote.remove(&key);
        }
    }

    fn send_to(&self, process: &str, message: RelayMessage) {
        self.inner.cluster.send_to(process, cluster_event(&message));
    }
}

// ---------------------------------------------------------------------------------------------
// The socket's side

/// A socket of this process whose conversation another process holds.
struct RelayedSocket {
    relay_id: u64,
    relay: FunnelRelay,
    holder: String,
    socket: SocketRef,
    /// The socket's events that wait for the holder's answer, by the number sent with them,
    /// and since when.
    acks: HashMap<u64, (AckSender, tokio::time::Instant)>,
    next_ack: u64,
    /// The holder has sent something (the conversation, at least).
    heard: bool,
}

impl RelayedSocket {
    fn keep_ack(&mut self, ack: Option<AckSender>) -> Option<u64> {
        let ack = ack?;
        let number = self.next_ack;
        self.next_ack += 1;
        self.acks.insert(number, (ack, tokio::time::Instant::now()));
        Some(number)
    }
}

impl Actor for RelayedSocket {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.run_later(JOIN_TIMEOUT, |act, _| {
            if !act.heard {
                act.socket.close_connection();
            }
        });
        ctx.run_interval(CHECK_EVERY, |act, ctx| {
            // An answer lost on the way: the page gets the conversation as stored.
            if act
                .acks
                .values()
                .any(|(_, since)| since.elapsed() >= ANSWER_TIMEOUT)
            {
                act.socket.close_connection();
            }
            let alive = act.relay.inner.cluster.clone();
            let holder = act.holder.clone();
            let check = async move { alive.alive(&holder).await };
            ctx.spawn(check.into_actor(act).map(|alive, act, _| {
                if !alive {
                    // The holder died: connecting again, the browser gets the conversation
                    // from the store through this process or another.
                    act.socket.close_connection();
                }
            }));
        });
    }
}

impl Handler<SocketEvent> for RelayedSocket {
    type Result = ();

    fn handle(&mut self, event: SocketEvent, ctx: &mut Self::Context) {
        let relay = self.relay_id;
        match event {
            SocketEvent::Event {
                name, payload, ack, ..
            } => {
                let message = match name.as_str() {
                    "send" => RelayMessage::Send {
                        relay,
                        text: super::events::sent_text(&payload),
                        ack: self.keep_ack(ack),
                    },
                    "checkout" => RelayMessage::Checkout {
                        relay,
                        ack: self.keep_ack(ack),
                    },
                    _ => return super::events::refuse_unknown(ack),
                };
                self.relay.send_to(&self.holder, message);
            }
            SocketEvent::Disconnected { .. } => {
                self.relay.forget_relayed(relay, &ctx.address());
                self.relay
                    .send_to(&self.holder, RelayMessage::Left { relay });
                ctx.stop();
            }
        }
    }
}

/// A relay message from the holder.
#[derive(Message)]
#[rtype(result = "()")]
struct FromHolder(RelayMessage);

impl Handler<FromHolder> for RelayedSocket {
    type Result = ();

    fn handle(&mut self, FromHolder(message): FromHolder, _ctx: &mut Self::Context) {
        self.heard = true;
        match message {
            RelayMessage::Emit {
                event,
                data,
                volatile,
                ..
            } => {
                if volatile {
                    self.socket.emit_volatile(&event, data);
                } else {
                    self.socket.emit(&event, &data);
                }
            }
            RelayMessage::Ack { ack, data, .. } => {
                if let Some((sender, _)) = self.acks.remove(&ack) {
                    sender.send_json(&data);
                }
            }
            RelayMessage::Close { .. } => self.socket.close_connection(),
            _ => {}
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The holder's side

/// A socket of another process, as the conversation actor here sees it.
struct RemoteClient {
    /// Its client id in the actor: the socket's id and the relay's number, so a socket that
    /// recovered its connection (a new relay) is another client than its earlier relay.
    id: String,
    cluster: Cluster,
    process: String,
    relay: u64,
    address: Option<IpAddr>,
}

impl RemoteClient {
    fn send(&self, message: RelayMessage) {
        self.cluster.send_to(&self.process, cluster_event(&message));
    }

    /// An event for the socket, to its process.
    fn pass(&self, event: &str, data: Value, volatile: bool) {
        self.send(RelayMessage::Emit {
            relay: self.relay,
            event: event.to_owned(),
            data,
            volatile,
        });
    }
}

impl ActorClient for RemoteClient {
    fn id(&self) -> &str {
        &self.id
    }

    fn address(&self) -> Option<IpAddr> {
        self.address
    }

    fn emit(&self, event: &'static str, data: Value) {
        self.pass(event, data, false);
    }

    fn emit_volatile(&self, event: &'static str, data: Value) {
        self.pass(event, data, true);
    }

    fn disconnect(&self) {
        self.reconnect();
    }

    fn reconnect(&self) {
        self.send(RelayMessage::Close { relay: self.relay });
    }
}

/// What a relayed socket's process passed on, for its remote socket here.
enum Forward {
    Send { text: String, ack: Option<u64> },
    Checkout { ack: Option<u64> },
    Left,
}

#[derive(Message)]
#[rtype(result = "()")]
struct FromSocket(Forward);

/// A socket of another process joined to the conversation actor here.
struct RemoteSocket {
    relay: FunnelRelay,
    client: Arc<RemoteClient>,
    key: ConversationKey,
    start: NewConversation,
    /// Set once joined.
    actor: Option<Addr<FunnelActor>>,
    /// The highest answer number seen: an event sent twice (a pipeline that Redis ran but
    /// answered late, sent again) is passed on once.
    last_ack: Option<u64>,
}

impl RemoteSocket {
    /// The answer to the socket's event `ack`, sent back to its process.
    fn reply<T: 'static>(&self, ack: Option<u64>, to_json: fn(&T) -> Value) -> Reply<T> {
        let Some(ack) = ack else {
            return Reply::none();
        };
        let client = self.client.clone();
        Reply::new(move |answer: T| {
            client.send(RelayMessage::Ack {
                relay: client.relay,
                ack,
                data: to_json(&answer),
            });
        })
    }

    /// Whether an event with this answer number was passed on already.
    fn seen(&mut self, ack: Option<u64>) -> bool {
        let Some(ack) = ack else {
            return false;
        };
        if self.last_ack.is_some_and(|last| ack <= last) {
            return true;
        }
        self.last_ack = Some(ack);
        false
    }

    /// The socket is gone: the actor forgets it, and so does this process.
    fn leave(&mut self, ctx: &mut Context<Self>) {
        if let Some(actor) = self.actor.take() {
            actor.do_send(ClientEvent::Left {
                client_id: self.client.id.clone(),
            });
        }
        self.relay.forget_remote(&self.client, &ctx.address());
        ctx.stop();
    }
}

impl Actor for RemoteSocket {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        // The socket's events wait until it has joined.
        let registry = self.relay.inner.registry.clone();
        let (key, start) = (self.key.clone(), self.start.clone());
        let client: Arc<dyn ActorClient> = self.client.clone();
        let join = async move { registry.join(key, start, client).await };
        ctx.wait(join.into_actor(self).map(|joined, act, ctx| match joined {
            Ok(actor) => act.actor = Some(actor),
            Err(error) => {
                // Not served here (any more, or the store failed): the browser connects again.
                tracing::debug!(%error, "a relayed funnel socket could not join");
                act.client.reconnect();
                act.leave(ctx);
            }
        }));
        ctx.run_interval(CHECK_EVERY, |act, ctx| {
            let cluster = act.client.cluster.clone();
            let process = act.client.process.clone();
            let check = async move { cluster.alive(&process).await };
            ctx.spawn(check.into_actor(act).map(|alive, act, ctx| {
                if !alive {
                    act.leave(ctx);
                }
            }));
        });
    }
}

impl Handler<FromSocket> for RemoteSocket {
    type Result = ();

    fn handle(&mut self, FromSocket(forward): FromSocket, ctx: &mut Self::Context) {
        let client_id = self.client.id.clone();
        let event = match forward {
            Forward::Send { ack, .. } | Forward::Checkout { ack } if self.seen(ack) => return,
            Forward::Send { text, ack } => ClientEvent::Send {
                client_id,
                text,
                reply: self.reply(ack, |answer: &SendAck| answer.to_json()),
            },
            Forward::Checkout { ack } => ClientEvent::Checkout {
                client_id,
                reply: self.reply(ack, CheckoutAck::to_json),
            },
            Forward::Left => return self.leave(ctx),
        };
        match &self.actor {
            Some(actor) if actor.connected() => actor.do_send(event),
            // The conversation actor here stopped (it handed the conversation over, and its
            // word to the socket was lost): the socket connects again.
            _ => {
                self.client.reconnect();
                self.leave(ctx);
            }
        }
    }
}

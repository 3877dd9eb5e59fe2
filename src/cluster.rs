//! What the processes of a deployment share besides the database: events that every process must
//! act on (a session that ended closes its sockets everywhere), a member's events for the
//! member's sockets on other processes (a reply streamed to every device), and the limits that
//! protect accounts (sign-in, reset mails, sign-up, checkout), counted once for all processes.
//!
//! One process needs nothing: the events are delivered to itself and the limits are governor's
//! keyed limiters in memory. Several processes share a Redis server (`events.redis_url`): events
//! go over its pub/sub, and each limit is a GCRA cell in Redis, run as one Lua script (the same
//! arithmetic as governor's: `burst` at once, then one more every `period`). See
//! docs/operations.md, "Events between processes".
//!
//! Each event carries its number among its sender's events on its channel, so that a receiver
//! drops what it heard already (a pipeline sent again after a late answer) and notices what it
//! missed (a gap in the numbers, or its own subscription lost and taken again). Pub/sub keeps
//! nothing, so what was missed is not replayed: the receiver is told the channel ([`Gap`]) and
//! reads what the lost events would have told from the store, where every one of them points
//! (a session ended, a flow published, a reply stored, a funnel conversation as saved).

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use futures_util::StreamExt;
use governor::Quota;
use helpnow_actors::funnel::ports::Holder;
use serde::{Deserialize, Serialize};

use crate::client::KeyedLimiter;
use crate::sync::lock;

/// The channel every process listens on.
const CHANNEL: &str = "helpnow:events";

/// A process's sign of life (`helpnow:process:{id}`), set again every `HEARTBEAT_EVERY`, gone
/// `HEARTBEAT_TTL` after the process stopped setting it.
const PROCESS_KEY_PREFIX: &str = "helpnow:process:";
const HEARTBEAT_EVERY: Duration = Duration::from_secs(1);
const HEARTBEAT_TTL: Duration = Duration::from_secs(5);

/// A member's channel (`helpnow:member:{user id}`), listened on by the processes that hold an
/// actor of the member.
const MEMBER_CHANNEL_PREFIX: &str = "helpnow:member:";

/// A process's own channel (`helpnow:inbox:{id}`): what another process sends it alone (a
/// funnel conversation's events between the process a visitor's socket is on and the one that
/// holds the conversation).
const INBOX_CHANNEL_PREFIX: &str = "helpnow:inbox:";

/// Which process holds a funnel conversation's live actor (`helpnow:claim:{conversation id}`):
/// valid while that process's sign of life is, set again by the holder every `CLAIM_RENEW_EVERY`,
/// gone `CLAIM_TTL` after it stopped.
const CLAIM_PREFIX: &str = "helpnow:claim:";
pub const CLAIM_RENEW_EVERY: Duration = Duration::from_secs(10);
const CLAIM_TTL: Duration = Duration::from_secs(30);

/// Claims KEYS[1] for the actor ARGV[1] (`{process}/{actor}`) of the process ARGV[4] unless
/// another process holds it and lives (its sign of life, ARGV[2] followed by its id, is there);
/// answers the holding process. Run again by the holder, it renews the claim; an actor of the
/// same process takes it over.
const CLAIM: &str = r"
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then
  local process = string.match(holder, '^[^/]*')
  if process ~= ARGV[4] and redis.call('EXISTS', ARGV[2] .. process) == 1 then
    return process
  end
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[3])
return ARGV[4]
";

/// Gives up KEYS[1] if the actor ARGV[1] (`{process}/{actor}`) holds it.
const RELEASE: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
";

/// At most this many queued events go to Redis in one pipeline.
const PIPELINE: usize = 256;

/// At most this many events wait for Redis (besides the pipeline on its way), each its JSON
/// (mostly a piece of a reply or a short notice: a few megabytes in all). While Redis answers
/// slowly or not at all, an event past it is dropped and counted
/// (`helpnow_cluster_events_dropped_total`) rather than held, so the process's memory stays
/// bounded; events reach other processes only while they listen anyway, and none is stored.
const EVENTS_WAITING: usize = 10_000;

/// Events this process did not get to the other processes (over all its `Cluster`s): dropped
/// because `EVENTS_WAITING` already waited, or given up after Redis failed them for `RETRY_FOR`.
static EVENTS_DROPPED: AtomicU64 = AtomicU64::new(0);

/// [`EVENTS_DROPPED`], for `/metrics`.
pub fn events_dropped() -> u64 {
    EVENTS_DROPPED.load(Ordering::Relaxed)
}

/// While marks are owed (events were given up), how long the publishing task waits for more
/// events before it sends the marks alone: what was lost is noticed within about this long of
/// Redis answering again.
const MARK_AFTER: Duration = Duration::from_millis(500);

/// Keys of the limits in Redis start with this.
const LIMIT_PREFIX: &str = "helpnow:limit:";

/// How long a lost subscription waits before it connects again.
const RESUBSCRIBE_AFTER: Duration = Duration::from_secs(1);

/// How long a limit's check or an event waits for Redis: past it the process counts the limit
/// alone, and the event reaches only this process.
const ENGINE_TIMEOUT: Duration = Duration::from_millis(500);

/// GCRA (the generic cell rate algorithm, as governor counts): a key's "theoretical arrival
/// time" moves on by `period` with each allowed attempt and may run ahead of now by at most
/// `burst` periods. Redis's own clock, so every process counts against one time. Answers 1 when
/// the attempt is allowed.
const GCRA: &str = r"
local period = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then tat = now end
local next_tat = tat + period
if next_tat - now > burst * period then
  return 0
end
redis.call('SET', KEYS[1], tostring(next_tat), 'PX', math.ceil((next_tat - now) / 1000))
return 1
";

/// An event every process acts on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ClusterEvent {
    /// A member signed out of `session` (its hash), or of every session (`None`, after a
    /// password reset): the sockets that came with it close.
    SignedOut {
        user_id: String,
        session: Option<String>,
    },
    /// What a member's actor emitted to all of the member's sockets (`volatile`: a streamed
    /// piece), for the member's sockets on the other processes. Sent only to the processes that
    /// hold an actor of the member.
    Member {
        user_id: String,
        event: String,
        data: serde_json::Value,
        volatile: bool,
    },
    /// A funnel conversation's event between the process of a visitor's socket and the process
    /// that holds the conversation (to one process's inbox): a relay message of the funnels'
    /// (`funnels::relay::RelayMessage`, a JSON object), which this layer carries unread.
    Funnel(serde_json::Value),
    /// A flow, a routing or a preview was published (issue 47): every process reloads its
    /// catalog of flows from the store.
    FlowsChanged,
}

/// On the wire: the event, the process that sent it (which has acted on it already), and the
/// event's number among that process's on this channel (`seq`, one more each time; see
/// [`Heard`]). Without an event it is a mark: the sender's number moved on because events on
/// this channel were given up, so that a receiver notices the loss even when no event follows.
/// An envelope without a number (a process of an older build, during an upgrade) is acted on as
/// it comes.
#[derive(Debug, Serialize, Deserialize)]
struct Envelope {
    from: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    seq: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    event: Option<ClusterEvent>,
}

/// Events from another process that may have been lost on their way here, by channel: what
/// they would have told is to be read again from the store. Told when the numbers on a channel
/// skip (events given up by their sender, whose next event or mark shows it), and for every
/// channel when this process's subscription was lost and taken again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gap {
    /// `helpnow:events`: a sign-out or a flows' change may be lost.
    Events,
    /// A member's channel (`helpnow:member:{user id}`): a reply's events from the member's
    /// actor on another process may be lost.
    Member(String),
    /// This process's inbox: relay messages from the process named (from every process, `None`,
    /// when the subscription was lost) may be lost.
    Inbox(Option<String>),
}

/// Acts on an event from the process `from` (this process's own id for its own events).
type Handler = Arc<dyn Fn(&str, ClusterEvent) + Send + Sync>;

/// Reads again what a gap may have lost.
type GapHandler = Arc<dyn Fn(Gap) + Send + Sync>;

/// What `listen` was given.
#[derive(Clone)]
struct Listener {
    event: Handler,
    gap: GapHandler,
}

/// The numbers this process gives its events, per channel. A channel's count is forgotten
/// when a member's actor stops here; counted again later, it goes on from the highest number
/// given on any channel, so it never gives a number twice on a channel (a receiver would take
/// the second as heard already) and a receiver that kept the old count sees a gap (and reads
/// the member's state again, which is harmless).
#[derive(Default)]
struct Numbering {
    last: HashMap<String, u64>,
    highest: u64,
    /// Channels whose events were given up since their last mark (Redis failed, or the queue
    /// was full): each gets a mark once Redis answers.
    marks_owed: HashSet<String>,
}

impl Numbering {
    fn next(&mut self, channel: &str) -> u64 {
        let highest = self.highest;
        let last = self.last.entry(channel.to_owned()).or_insert(highest);
        *last += 1;
        self.highest = self.highest.max(*last);
        *last
    }
}

/// What one process heard last from each other process on each channel (its subscription's
/// state): an event whose number is not above the last is heard again and dropped, one past it
/// is the next, and one further on shows that some were missed. A sender's first event on a
/// channel is taken as it comes (a process that just started, or a channel just subscribed:
/// there is nothing before it to have missed here).
#[derive(Debug, Default)]
struct Heard {
    /// Channel -> sending process -> its last number here.
    last: HashMap<String, HashMap<String, Last>>,
}

#[derive(Debug, Clone, Copy)]
struct Last {
    seq: u64,
    /// What was missed up to here is being read again (the subscription was taken again): the
    /// next number is taken as it comes.
    covered: bool,
}

/// What an event's number says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Heading {
    /// The next one (or the sender's first here).
    Next,
    /// Heard already: a pipeline sent again.
    Again,
    /// Events before it were missed.
    AfterGap,
}

impl Heard {
    fn hear(&mut self, channel: &str, from: &str, seq: u64) -> Heading {
        let senders = match self.last.get_mut(channel) {
            Some(senders) => senders,
            None => self.last.entry(channel.to_owned()).or_default(),
        };
        let Some(last) = senders.get_mut(from) else {
            senders.insert(
                from.to_owned(),
                Last {
                    seq,
                    covered: false,
                },
            );
            return Heading::Next;
        };
        if seq <= last.seq {
            return Heading::Again;
        }
        let missed = seq != last.seq + 1 && !last.covered;
        *last = Last {
            seq,
            covered: false,
        };
        if missed {
            Heading::AfterGap
        } else {
            Heading::Next
        }
    }

    /// The subscription was taken again and every channel is being read again: the next
    /// number from each sender is taken as it comes (what an earlier number would still drop).
    fn cover_all(&mut self) {
        for last in self.last.values_mut().flat_map(HashMap::values_mut) {
            last.covered = true;
        }
    }

    /// The channel is no longer listened on: subscribed again later, its senders start anew.
    fn forget(&mut self, channel: &str) {
        self.last.remove(channel);
    }
}

/// An event on its way to Redis.
struct Outgoing {
    channel: String,
    message: String,
    /// A member's event whose number of receivers tells whether other processes listen.
    member: Option<String>,
}

/// What the subscription is told: a member's actor started or stopped here.
enum Control {
    Subscribe(String),
    Unsubscribe(String),
}

fn member_channel(user_id: &str) -> String {
    format!("{MEMBER_CHANNEL_PREFIX}{user_id}")
}

fn inbox_channel(process: &str) -> String {
    format!("{INBOX_CHANNEL_PREFIX}{process}")
}

/// An [`Envelope`] as JSON, from an event already written as JSON (`None`: a mark), so that
/// the event is written outside the numbering's lock.
fn envelope(from: &str, seq: u64, event: Option<&str>) -> String {
    let from = serde_json::Value::from(from);
    match event {
        Some(event) => format!("{{\"from\":{from},\"seq\":{seq},\"event\":{event}}}"),
        None => format!("{{\"from\":{from},\"seq\":{seq}}}"),
    }
}

/// A limit: `burst` attempts at once, then one more every `period`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit {
    /// Its name in Redis keys.
    pub name: &'static str,
    pub burst: u32,
    pub period: Duration,
}

/// The events and limits of this process, shared with the others through Redis when there is
/// one.
#[derive(Clone)]
pub struct Cluster {
    inner: Arc<Inner>,
}

impl Inner {
    fn listener(&self) -> Option<Listener> {
        lock(&self.handler).clone()
    }
}

struct Inner {
    /// This process's name on the channel.
    id: String,
    /// Set by [`Cluster::leave`]: the sign of life is no longer set.
    left: AtomicBool,
    /// Held while the sign of life is set, so a leave never runs between a heartbeat's check and
    /// its write.
    beat: tokio::sync::Mutex<()>,
    redis: Option<Redis>,
    /// Set once by `listen`; taken away by `leave`, for it holds what holds this (the relay, the
    /// registries), and the tasks end only once this is gone.
    handler: std::sync::Mutex<Option<Listener>>,
    /// The numbers of this process's events, per channel; held while an event is queued, so
    /// that the queue holds each channel's events in the order of their numbers.
    numbering: std::sync::Mutex<Numbering>,
    /// Each limit counted in this process: alone, or while Redis does not answer.
    local: std::sync::Mutex<std::collections::HashMap<&'static str, LocalLimiter>>,
    /// The members that have an actor here: their channels are listened on.
    members: std::sync::Mutex<std::collections::HashSet<String>>,
    /// The members whose channel this process's subscription has confirmed.
    subscribed: std::sync::Mutex<std::collections::HashSet<String>>,
    /// Whether another process listened to a member's channel when this process last published
    /// on it (the number of receivers less this process's own subscription).
    others_listen: std::sync::Mutex<std::collections::HashMap<String, bool>>,
}

struct Redis {
    client: redis::Client,
    commands: redis::aio::ConnectionManager,
    gcra: redis::Script,
    claim: redis::Script,
    release: redis::Script,
    /// Events in the order they were passed, for the publishing task; at most `EVENTS_WAITING`.
    outbox: tokio::sync::mpsc::Sender<Outgoing>,
    /// This cluster's share of [`EVENTS_DROPPED`] (a test may read it alone).
    dropped: Arc<AtomicU64>,
    control: tokio::sync::mpsc::UnboundedSender<Control>,
    /// Taken by the subscription task when it starts.
    control_receiver: std::sync::Mutex<Option<tokio::sync::mpsc::UnboundedReceiver<Control>>>,
}

#[derive(Debug, thiserror::Error)]
#[error("cannot reach the event engine (events.redis_url): {0}")]
pub struct ClusterError(#[from] redis::RedisError);

impl Cluster {
    /// One process alone: events stay here, limits are counted here.
    pub fn alone() -> Self {
        Self::with(None)
    }

    /// Several processes that share the Redis server at `url`.
    pub async fn connect(url: &str) -> Result<Self, ClusterError> {
        Self::connect_queueing(url, EVENTS_WAITING).await
    }

    /// `connect`, with at most `waiting` events queued for Redis.
    async fn connect_queueing(url: &str, waiting: usize) -> Result<Self, ClusterError> {
        let client = redis::Client::open(url)?;
        // A lost connection is tried again at least every half second, so the processes are
        // back soon after Redis is.
        let config = redis::aio::ConnectionManagerConfig::new()
            .set_max_delay(ENGINE_TIMEOUT)
            .set_connection_timeout(Some(ENGINE_TIMEOUT))
            .set_response_timeout(Some(Duration::from_secs(1)));
        let commands =
            redis::aio::ConnectionManager::new_with_config(client.clone(), config).await?;
        let (outbox, queued) = tokio::sync::mpsc::channel(waiting.max(1));
        let dropped = Arc::new(AtomicU64::new(0));
        let commands_for_heartbeat = commands.clone();
        let (control, control_receiver) = tokio::sync::mpsc::unbounded_channel();
        let cluster = Self::with(Some(Redis {
            client,
            commands,
            gcra: redis::Script::new(GCRA),
            claim: redis::Script::new(CLAIM),
            release: redis::Script::new(RELEASE),
            outbox,
            dropped: dropped.clone(),
            control,
            control_receiver: std::sync::Mutex::new(Some(control_receiver)),
        }));
        // The first sign of life, before anything else: a password Redis refuses (NOAUTH,
        // WRONGPASS) or a user without the commands this needs (NOPERM) stops start-up here,
        // rather than leaving a process that counts its limits alone and hears no one.
        let mut first = commands_for_heartbeat.clone();
        set_sign_of_life(&mut first, &cluster.inner.id).await?;
        tokio::spawn(publish_in_order(
            Arc::downgrade(&cluster.inner),
            commands_for_heartbeat.clone(),
            queued,
            dropped,
        ));
        tokio::spawn(heartbeat(
            Arc::downgrade(&cluster.inner),
            commands_for_heartbeat,
        ));
        Ok(cluster)
    }

    /// Whether the process `id` (an event's `from`) is alive: its heartbeat is in Redis. When
    /// Redis cannot tell, it is taken to be.
    pub async fn alive(&self, id: &str) -> bool {
        let Some(redis) = &self.inner.redis else {
            return true;
        };
        let mut commands = redis.commands.clone();
        let mut exists = redis::cmd("EXISTS");
        exists.arg(format!("{PROCESS_KEY_PREFIX}{id}"));
        !matches!(
            tokio::time::timeout(ENGINE_TIMEOUT, exists.query_async::<i64>(&mut commands)).await,
            Ok(Ok(0))
        )
    }

    /// Claims the funnel conversation `conversation` for this process, or renews its claim:
    /// `Elsewhere` when a living process holds it. Alone, or when Redis does not answer within
    /// half a second, the answer is `Here` (with a warning): a conversation is then served
    /// rather than refused, and the versioned saves keep it whole should another process serve
    /// it meanwhile.
    pub async fn claim(&self, conversation: &str, actor: u64) -> Holder {
        let Some(redis) = &self.inner.redis else {
            return Holder::Here;
        };
        let mut commands = redis.commands.clone();
        let mut invocation = redis.claim.key(format!("{CLAIM_PREFIX}{conversation}"));
        invocation
            .arg(format!("{}/{actor}", self.inner.id))
            .arg(PROCESS_KEY_PREFIX)
            .arg(u64::try_from(CLAIM_TTL.as_millis()).unwrap_or(u64::MAX))
            .arg(&self.inner.id);
        match tokio::time::timeout(
            ENGINE_TIMEOUT,
            invocation.invoke_async::<String>(&mut commands),
        )
        .await
        {
            Ok(Ok(holder)) if holder == self.inner.id => Holder::Here,
            Ok(Ok(holder)) => Holder::Elsewhere(holder),
            Ok(Err(error)) => {
                tracing::warn!(%error, "a funnel conversation is served here unclaimed");
                Holder::Here
            }
            Err(_) => {
                tracing::warn!(
                    "a funnel conversation is served here unclaimed (the event engine is slow)"
                );
                Holder::Here
            }
        }
    }

    /// The process is stopping: its sign of life is taken away at once (and no longer set), so
    /// the other processes take over whatever it still holds (a claim not given up, a member's
    /// reply it was writing) without waiting for it to lapse.
    /// Events from the others are no longer acted on: the handler goes, and with it what it
    /// held, so the tasks end once the last handle of this is dropped.
    pub async fn leave(&self) {
        lock(&self.inner.handler).take();
        let _beat = self.inner.beat.lock().await;
        self.inner.left.store(true, Ordering::SeqCst);
        let Some(redis) = &self.inner.redis else {
            return;
        };
        let mut commands = redis.commands.clone();
        let mut delete = redis::cmd("DEL");
        delete.arg(format!("{PROCESS_KEY_PREFIX}{}", self.inner.id));
        if let Ok(Err(error)) =
            tokio::time::timeout(ENGINE_TIMEOUT, delete.query_async::<i64>(&mut commands)).await
        {
            tracing::warn!(%error, "this process's sign of life could not be taken away");
        }
    }

    /// Gives up `actor`'s claim on `conversation` (it stopped), without waiting.
    pub fn release(&self, conversation: &str, actor: u64) {
        let Some(redis) = &self.inner.redis else {
            return;
        };
        let mut commands = redis.commands.clone();
        let script = redis.release.clone();
        let key = format!("{CLAIM_PREFIX}{conversation}");
        let me = format!("{}/{actor}", self.inner.id);
        tokio::spawn(async move {
            let mut invocation = script.key(key);
            invocation.arg(me);
            // Not released (Redis away): the claim lapses with its holder's sign of life or its
            // time to live.
            let _ = tokio::time::timeout(
                ENGINE_TIMEOUT,
                invocation.invoke_async::<i64>(&mut commands),
            )
            .await;
        });
    }

    /// Sends `event` to the process `process` alone (its inbox), in order with this process's
    /// other events, without waiting.
    pub fn send_to(&self, process: &str, event: ClusterEvent) {
        self.send(inbox_channel(process), event);
    }

    fn with(redis: Option<Redis>) -> Self {
        Self {
            inner: Arc::new(Inner {
                id: format!("{:016x}", rand::random::<u64>()),
                left: AtomicBool::new(false),
                beat: tokio::sync::Mutex::new(()),
                redis,
                handler: std::sync::Mutex::new(None),
                numbering: std::sync::Mutex::new(Numbering::default()),
                local: std::sync::Mutex::new(std::collections::HashMap::new()),
                members: std::sync::Mutex::new(std::collections::HashSet::new()),
                subscribed: std::sync::Mutex::new(std::collections::HashSet::new()),
                others_listen: std::sync::Mutex::new(std::collections::HashMap::new()),
            }),
        }
    }

    /// Whether the limits and events are shared with other processes.
    pub fn is_shared(&self) -> bool {
        self.inner.redis.is_some()
    }

    /// This process's name on the channels (the `from` of its events).
    pub fn id(&self) -> &str {
        &self.inner.id
    }

    /// Starts acting on events with `handler`: this process's own at once, the others' as they
    /// arrive (from a task that subscribes again whenever its connection is lost), each once.
    /// Where some of the others' may have been lost, `missed` is told first (see [`Gap`]), then
    /// the event that showed it is passed on. Once.
    pub fn listen(
        &self,
        handler: impl Fn(&str, ClusterEvent) + Send + Sync + 'static,
        missed: impl Fn(Gap) + Send + Sync + 'static,
    ) {
        {
            let mut slot = lock(&self.inner.handler);
            if slot.is_some() {
                return;
            }
            *slot = Some(Listener {
                event: Arc::new(handler),
                gap: Arc::new(missed),
            });
        }
        let control = self
            .inner
            .redis
            .as_ref()
            .and_then(|redis| lock(&redis.control_receiver).take());
        if let Some(control) = control {
            tokio::spawn(subscribe(Arc::downgrade(&self.inner), control));
        }
    }

    /// A member's actor started here: the member's events from other processes are wanted.
    pub fn member_joined(&self, user_id: &str) {
        let Some(redis) = &self.inner.redis else {
            return;
        };
        self.members().insert(user_id.to_owned());
        let _ = redis.control.send(Control::Subscribe(user_id.to_owned()));
    }

    /// A member's actor stopped here.
    pub fn member_left(&self, user_id: &str) {
        let Some(redis) = &self.inner.redis else {
            return;
        };
        self.members().remove(user_id);
        lock(&self.inner.others_listen).remove(user_id);
        lock(&self.inner.numbering)
            .last
            .remove(&member_channel(user_id));
        let _ = redis.control.send(Control::Unsubscribe(user_id.to_owned()));
    }

    fn members(&self) -> std::sync::MutexGuard<'_, std::collections::HashSet<String>> {
        lock(&self.inner.members)
    }

    /// Passes what a member's actor emitted to all of the member's sockets to the member's
    /// actors on other processes, in order, without waiting (a task sends them). A volatile
    /// event (a streamed piece, which the reply's `chat:done` makes good) is not sent when no
    /// other process listened to the member's last event (the `chat:typing` that starts each
    /// reply): most members are on one process.
    pub fn publish_member(
        &self,
        user_id: &str,
        event: &str,
        data: &serde_json::Value,
        volatile: bool,
    ) {
        if self.inner.redis.is_none() {
            return;
        }
        if volatile && lock(&self.inner.others_listen).get(user_id) == Some(&false) {
            return;
        }
        self.send_counted(
            member_channel(user_id),
            (!volatile).then(|| user_id.to_owned()),
            ClusterEvent::Member {
                user_id: user_id.to_owned(),
                event: event.to_owned(),
                data: data.clone(),
                volatile,
            },
        );
    }

    /// Acts on `event` here and tells the other processes (a task sends it, in order with the
    /// members' events).
    pub fn publish(&self, event: ClusterEvent) {
        if let Some(listener) = self.inner.listener() {
            (listener.event)(&self.inner.id, event.clone());
        }
        self.send(CHANNEL.to_owned(), event);
    }

    fn send(&self, channel: String, event: ClusterEvent) {
        self.send_counted(channel, None, event);
    }

    /// `send`, noting for a member's event whether other processes received it. The event gets
    /// its channel's next number here, as it is queued.
    fn send_counted(&self, channel: String, member: Option<String>, event: ClusterEvent) {
        let Some(redis) = &self.inner.redis else {
            return;
        };
        let Ok(event) = serde_json::to_string(&event) else {
            return;
        };
        // Numbered and queued under one lock: two threads sending on one channel at once queue
        // their events in the order of their numbers.
        let mut numbering = lock(&self.inner.numbering);
        let seq = numbering.next(&channel);
        let outgoing = Outgoing {
            message: envelope(&self.inner.id, seq, Some(&event)),
            channel,
            member,
        };
        // Full: Redis is slow or away, and this event would wait behind `EVENTS_WAITING`
        // others. Closed: the process is stopping. Its number is gone with it, so the receivers
        // see a gap at the channel's next event, or at its mark.
        if let Err(error) = redis.outbox.try_send(outgoing) {
            let outgoing = match error {
                tokio::sync::mpsc::error::TrySendError::Full(outgoing)
                | tokio::sync::mpsc::error::TrySendError::Closed(outgoing) => outgoing,
            };
            numbering.marks_owed.insert(outgoing.channel);
            drop(numbering);
            count_dropped(&redis.dropped, 1);
        }
    }

    /// Counts one attempt against `limit` for `key`; false when it is over. Shared by every
    /// process through Redis; when Redis does not answer (within half a second), this process
    /// counts alone, as a single process would.
    pub async fn allow(&self, limit: Limit, key: &str) -> bool {
        if let Some(redis) = &self.inner.redis {
            let period = u64::try_from(limit.period.as_micros()).unwrap_or(u64::MAX);
            let mut commands = redis.commands.clone();
            let mut invocation = redis
                .gcra
                .key(format!("{LIMIT_PREFIX}{}:{key}", limit.name));
            invocation.arg(period).arg(limit.burst.max(1));
            let shared = tokio::time::timeout(
                ENGINE_TIMEOUT,
                invocation.invoke_async::<i64>(&mut commands),
            )
            .await;
            match shared {
                Ok(Ok(allowed)) => return allowed == 1,
                Ok(Err(error)) => {
                    tracing::warn!(%error, limit = limit.name, "a shared limit is counted in this process alone");
                }
                Err(_) => {
                    tracing::warn!(
                        limit = limit.name,
                        "a shared limit is counted in this process alone (the event engine is slow)"
                    );
                }
            }
        }
        self.allow_here(limit, key)
    }

    fn allow_here(&self, limit: Limit, key: &str) -> bool {
        let mut local = lock(&self.inner.local);
        local
            .entry(limit.name)
            .or_insert_with(|| LocalLimiter::new(limit))
            .allow(&key.to_owned())
    }

    /// `allow` for a client address (`None`: unknown, never limited).
    pub async fn allow_address(&self, limit: Limit, address: Option<IpAddr>) -> bool {
        match address {
            Some(address) => self.allow(limit, &address.to_string()).await,
            None => true,
        }
    }
}

/// Sets this process's sign of life in Redis every `HEARTBEAT_EVERY` until the cluster is gone.
async fn heartbeat(inner: std::sync::Weak<Inner>, mut commands: redis::aio::ConnectionManager) {
    loop {
        tokio::time::sleep(HEARTBEAT_EVERY).await;
        let Some(process) = inner.upgrade() else {
            return;
        };
        let _beat = process.beat.lock().await;
        if process.left.load(Ordering::SeqCst) {
            return;
        }
        if let Ok(Err(error)) =
            tokio::time::timeout(ENGINE_TIMEOUT, set_sign_of_life(&mut commands, &process.id)).await
        {
            tracing::debug!(%error, "this process's sign of life could not be set");
        }
    }
}

/// Sets the sign of life of the process `id` for `HEARTBEAT_TTL`.
async fn set_sign_of_life(
    commands: &mut redis::aio::ConnectionManager,
    id: &str,
) -> redis::RedisResult<()> {
    let ttl = u64::try_from(HEARTBEAT_TTL.as_millis()).unwrap_or(u64::MAX);
    let mut set = redis::cmd("SET");
    set.arg(format!("{PROCESS_KEY_PREFIX}{id}"))
        .arg(1)
        .arg("PX")
        .arg(ttl);
    set.query_async(commands).await
}

/// Counts `count` events that did not reach the other processes: in this cluster's count and
/// the process's.
fn count_dropped(dropped: &AtomicU64, count: u64) {
    dropped.fetch_add(count, Ordering::Relaxed);
    EVENTS_DROPPED.fetch_add(count, Ordering::Relaxed);
}

/// Sends the events in the order they were queued: what waits goes in one pipeline. A pipeline
/// that fails is sent again for up to `RETRY_FOR` (the connection manager reconnects meanwhile,
/// Redis restarted, say); then it is given up, with whatever queued behind it meanwhile, and
/// counted in `dropped`. A pipeline sent again may reach Redis twice (it ran the first but
/// answered late): its events keep their numbers, so the receivers drop the second copy. The
/// channels of events given up are owed a mark each ([`Envelope`]), sent with the next pipeline
/// or alone after `MARK_AFTER`, until one goes through. The number of receivers of each
/// member's event tells whether other processes listen to the member.
async fn publish_in_order(
    inner: std::sync::Weak<Inner>,
    mut commands: redis::aio::ConnectionManager,
    mut queued: tokio::sync::mpsc::Receiver<Outgoing>,
    dropped: Arc<AtomicU64>,
) {
    const RETRY_FOR: Duration = Duration::from_secs(3);
    const RETRY_AFTER: Duration = Duration::from_millis(100);
    let mut batch = Vec::with_capacity(PIPELINE);
    loop {
        let marks_owed = inner
            .upgrade()
            .is_some_and(|inner| !lock(&inner.numbering).marks_owed.is_empty());
        if marks_owed {
            // Marks wait for no event: the loss they tell of may be the channel's last event.
            if let Ok(0) =
                tokio::time::timeout(MARK_AFTER, queued.recv_many(&mut batch, PIPELINE)).await
            {
                return;
            }
        } else if queued.recv_many(&mut batch, PIPELINE).await == 0 {
            return;
        }
        let mut pipeline = redis::pipe();
        let mut counted = Vec::new();
        let mut channels = Vec::with_capacity(batch.len());
        for (index, outgoing) in batch.drain(..).enumerate() {
            pipeline
                .cmd("PUBLISH")
                .arg(&outgoing.channel)
                .arg(outgoing.message);
            channels.push(outgoing.channel);
            if let Some(member) = outgoing.member {
                counted.push((index, member));
            }
        }
        let in_pipeline = channels.len();
        // The marks go after the events (numbered later than any queued before them).
        if let Some(inner) = inner.upgrade() {
            let mut numbering = lock(&inner.numbering);
            for channel in std::mem::take(&mut numbering.marks_owed) {
                let seq = numbering.next(&channel);
                pipeline
                    .cmd("PUBLISH")
                    .arg(&channel)
                    .arg(envelope(&inner.id, seq, None));
                channels.push(channel);
            }
        }
        if channels.is_empty() {
            continue;
        }
        let started = tokio::time::Instant::now();
        loop {
            let sent = tokio::time::timeout(
                ENGINE_TIMEOUT,
                pipeline.query_async::<Vec<i64>>(&mut commands),
            )
            .await;
            if let Ok(Ok(receivers)) = sent {
                if helpnow_actors::mutation::on("double_publish") {
                    let _ = tokio::time::timeout(
                        ENGINE_TIMEOUT,
                        pipeline.query_async::<Vec<i64>>(&mut commands),
                    )
                    .await;
                }
                if let Some(inner) = inner.upgrade()
                    && !counted.is_empty()
                {
                    let subscribed = lock(&inner.subscribed);
                    let mut others = lock(&inner.others_listen);
                    for (index, member) in counted.drain(..) {
                        // Less this process's own subscription, when it is there.
                        let own = i64::from(subscribed.contains(&member));
                        if let Some(&count) = receivers.get(index) {
                            others.insert(member, count > own);
                        }
                    }
                }
                break;
            }
            if started.elapsed() >= RETRY_FOR {
                let mut behind = 0;
                while let Ok(outgoing) = queued.try_recv() {
                    behind += 1;
                    channels.push(outgoing.channel);
                }
                if let Some(inner) = inner.upgrade() {
                    lock(&inner.numbering).marks_owed.extend(channels);
                }
                if in_pipeline + behind > 0 {
                    count_dropped(&dropped, (in_pipeline + behind) as u64);
                    tracing::warn!(
                        dropped = in_pipeline + behind,
                        "events could not be sent to the other processes"
                    );
                }
                break;
            }
            tokio::time::sleep(RETRY_AFTER).await;
        }
    }
}

/// Receives the other processes' events until the cluster is gone: the shared channel, and the
/// channels of the members that have an actor here. A subscription taken again after one was
/// lost is a gap on every channel: what was published meanwhile never came.
async fn subscribe(
    inner: std::sync::Weak<Inner>,
    mut control: tokio::sync::mpsc::UnboundedReceiver<Control>,
) {
    let mut heard = Heard::default();
    // Events published before the first subscription are the start's, and nothing here was
    // told anything yet; once one attempt was made, any later subscription may have missed some.
    let mut first = true;
    loop {
        let Some(client) = inner
            .upgrade()
            .and_then(|inner| inner.redis.as_ref().map(|redis| redis.client.clone()))
        else {
            return;
        };
        match client.get_async_pubsub().await {
            Ok(pubsub) => {
                let (mut sink, mut stream) = pubsub.split();
                let Some(here) = inner.upgrade() else {
                    return;
                };
                let members: Vec<String> = lock(&here.members).iter().cloned().collect();
                let mut channels = vec![CHANNEL.to_owned(), inbox_channel(&here.id)];
                channels.extend(members.iter().map(|user_id| member_channel(user_id)));
                drop(here);
                let subscribed = sink.subscribe(channels).await;
                if subscribed.is_ok()
                    && let Some(here) = inner.upgrade()
                {
                    lock(&here.subscribed).extend(members.iter().cloned());
                    if !first {
                        tracing::info!(
                            "subscribed to the event engine again: reading again what may have been missed"
                        );
                        heard.cover_all();
                        if let Some(listener) = here.listener() {
                            (listener.gap)(Gap::Events);
                            (listener.gap)(Gap::Inbox(None));
                            for user_id in members {
                                (listener.gap)(Gap::Member(user_id));
                            }
                        }
                    }
                }
                first = false;
                match subscribed {
                    Ok(()) => loop {
                        tokio::select! {
                            message = stream.next() => {
                                let Some(message) = message else {
                                    tracing::warn!("the event engine's subscription ended; subscribing again");
                                    break;
                                };
                                let Some(inner) = inner.upgrade() else {
                                    return;
                                };
                                deliver(&inner, &mut heard, &message);
                            }
                            change = control.recv() => {
                                let changed = match change {
                                    Some(Control::Subscribe(user_id)) => {
                                        let done = sink.subscribe(member_channel(&user_id)).await;
                                        if done.is_ok() && let Some(here) = inner.upgrade() {
                                            lock(&here.subscribed).insert(user_id);
                                        }
                                        done
                                    }
                                    Some(Control::Unsubscribe(user_id)) => {
                                        if let Some(here) = inner.upgrade() {
                                            lock(&here.subscribed).remove(&user_id);
                                        }
                                        heard.forget(&member_channel(&user_id));
                                        sink.unsubscribe(member_channel(&user_id)).await
                                    }
                                    None => return,
                                };
                                if let Err(error) = changed {
                                    tracing::warn!(%error, "the event engine's subscription failed; subscribing again");
                                    break;
                                }
                            }
                        }
                    },
                    Err(error) => tracing::warn!(%error, "cannot subscribe to the event engine"),
                }
            }
            Err(error) => {
                first = false;
                tracing::warn!(%error, "cannot reach the event engine");
            }
        }
        // Until subscribed again, this process hears none of its members' channels.
        if let Some(here) = inner.upgrade() {
            lock(&here.subscribed).clear();
        }
        tokio::time::sleep(RESUBSCRIBE_AFTER).await;
    }
}

/// The events from other processes passed on, counted for the `drop_inbox` mutation (which
/// loses one in twenty).
static PASSED_ON: AtomicU64 = AtomicU64::new(0);

/// Acts on another process's event: once, after telling of a gap its number shows.
fn deliver(inner: &Inner, heard: &mut Heard, message: &redis::Msg) {
    let Ok(payload) = message.get_payload::<String>() else {
        return;
    };
    let Ok(envelope) = serde_json::from_str::<Envelope>(&payload) else {
        tracing::warn!("an event from another process could not be read");
        return;
    };
    if envelope.from == inner.id {
        return;
    }
    let Some(listener) = inner.listener() else {
        return;
    };
    let channel = message.get_channel_name();
    let heading = match envelope.seq {
        Some(seq) => heard.hear(channel, &envelope.from, seq),
        None => Heading::Next,
    };
    match heading {
        // The mutation puts back the bug the numbers fixed: an event sent twice acted on twice.
        Heading::Again if !helpnow_actors::mutation::on("double_publish") => return,
        Heading::AfterGap => {
            tracing::info!(
                channel,
                from = envelope.from,
                "events from another process were missed: reading again what they told"
            );
            (listener.gap)(gap_on(channel, &envelope.from));
        }
        Heading::Again | Heading::Next => {}
    }
    let Some(event) = envelope.event else {
        return;
    };
    // The mutation loses events as plain pub/sub may, where the numbers do not show it.
    if helpnow_actors::mutation::on("drop_inbox")
        && PASSED_ON.fetch_add(1, Ordering::Relaxed) % 20 == 19
    {
        return;
    }
    (listener.event)(&envelope.from, event);
}

/// What a gap on `channel` in the events of the process `from` may have lost.
fn gap_on(channel: &str, from: &str) -> Gap {
    if let Some(user_id) = channel.strip_prefix(MEMBER_CHANNEL_PREFIX) {
        Gap::Member(user_id.to_owned())
    } else if channel.starts_with(INBOX_CHANNEL_PREFIX) {
        Gap::Inbox(Some(from.to_owned()))
    } else {
        Gap::Events
    }
}

/// One limit counted in this process: governor's keyed GCRA.
struct LocalLimiter(KeyedLimiter<String>);

impl LocalLimiter {
    fn new(limit: Limit) -> Self {
        let burst = NonZeroU32::new(limit.burst).unwrap_or(NonZeroU32::MIN);
        let quota = Quota::with_period(limit.period)
            .unwrap_or_else(|| Quota::per_second(NonZeroU32::MIN))
            .allow_burst(burst);
        Self(KeyedLimiter::new(quota))
    }

    fn allow(&self, key: &String) -> bool {
        self.0.allow(key)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    /// Each sender's numbers on each channel are their own: one heard again is dropped, the
    /// next passes, one further on tells of a gap (and is then the last); a sender's first here
    /// is taken as it comes; after the subscription was taken again the next number passes
    /// whatever it is (that gap is being read again), while older ones are still dropped; a
    /// channel forgotten starts anew.
    #[test]
    fn the_numbers_heard_drop_doubles_and_show_gaps() {
        let mut heard = Heard::default();
        let events = CHANNEL;
        let hear = |heard: &mut Heard, from: &str, seq: u64| heard.hear(events, from, seq);
        assert_eq!(
            hear(&mut heard, "a", 41),
            Heading::Next,
            "a's first: the baseline"
        );
        assert_eq!(hear(&mut heard, "a", 42), Heading::Next);
        assert_eq!(hear(&mut heard, "a", 41), Heading::Again);
        assert_eq!(
            hear(&mut heard, "a", 42),
            Heading::Again,
            "a pipeline sent again"
        );
        assert_eq!(
            hear(&mut heard, "b", 7),
            Heading::Next,
            "b's numbers are b's"
        );
        assert_eq!(
            hear(&mut heard, "a", 45),
            Heading::AfterGap,
            "43 and 44 were lost"
        );
        assert_eq!(hear(&mut heard, "a", 46), Heading::Next);
        assert_eq!(
            hear(&mut heard, "a", 44),
            Heading::Again,
            "late: behind the last"
        );
        assert_eq!(
            heard.hear("helpnow:member:m", "a", 3),
            Heading::Next,
            "another channel's numbers are its own"
        );

        heard.cover_all();
        assert_eq!(hear(&mut heard, "a", 46), Heading::Again);
        assert_eq!(
            hear(&mut heard, "a", 60),
            Heading::Next,
            "covered by the re-read"
        );
        assert_eq!(
            hear(&mut heard, "a", 62),
            Heading::AfterGap,
            "covered once only"
        );
        assert_eq!(hear(&mut heard, "b", 8), Heading::Next);

        heard.forget("helpnow:member:m");
        assert_eq!(heard.hear("helpnow:member:m", "a", 1), Heading::Next);
    }

    /// A channel counted anew (a member's actor stopped here, then started again) goes on above
    /// every number given before, on any channel.
    #[test]
    fn a_channel_counted_anew_never_gives_a_number_twice() {
        let mut numbering = Numbering::default();
        assert_eq!(numbering.next("helpnow:member:m"), 1);
        assert_eq!(numbering.next("helpnow:member:m"), 2);
        assert_eq!(
            numbering.next(CHANNEL),
            3,
            "a new channel starts above the highest"
        );
        assert_eq!(numbering.next("helpnow:member:m"), 3);
        numbering.last.remove("helpnow:member:m");
        assert_eq!(numbering.next("helpnow:member:m"), 4);
    }

    /// The envelope as written is read back, a mark too; one of an older build (no number) is
    /// read as unnumbered.
    #[test]
    fn envelopes_are_read_back_marks_and_older_ones_too() {
        let event = serde_json::to_string(&ClusterEvent::FlowsChanged).expect("JSON");
        let read: Envelope =
            serde_json::from_str(&envelope("a\"b", 7, Some(&event))).expect("an envelope");
        assert_eq!(
            (read.from.as_str(), read.seq, read.event),
            ("a\"b", Some(7), Some(ClusterEvent::FlowsChanged))
        );
        let mark: Envelope = serde_json::from_str(&envelope("a", 8, None)).expect("a mark");
        assert_eq!((mark.seq, mark.event), (Some(8), None));
        let older: Envelope =
            serde_json::from_str("{\"from\":\"a\",\"event\":{\"kind\":\"flows_changed\"}}")
                .expect("an older envelope");
        assert_eq!(
            (older.seq, older.event),
            (None, Some(ClusterEvent::FlowsChanged))
        );
    }

    /// Which channel's gap asks for what to be read again.
    #[test]
    fn a_gap_is_named_by_its_channel() {
        assert_eq!(gap_on(CHANNEL, "a"), Gap::Events);
        assert_eq!(gap_on(&member_channel("m"), "a"), Gap::Member("m".into()));
        assert_eq!(
            gap_on(&inbox_channel("me"), "a"),
            Gap::Inbox(Some("a".into()))
        );
    }

    /// A Redis server that answers a connection's set-up (redis-rs's `CLIENT SETINFO`, then the
    /// process's first sign of life, a `SET`) and nothing from the first other command on: a
    /// server stalled behind a full disk or a saturated link. Its `redis://` URL.
    async fn stalled_redis() -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a port");
        let address = listener.local_addr().expect("its address");
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let (mut read, mut answered) = (Vec::new(), 0);
                    let mut buffer = [0; 4096];
                    while let Ok(count) = socket.read(&mut buffer).await
                        && count > 0
                    {
                        read.extend_from_slice(&buffer[..count]);
                        let names = command_names(&read);
                        let set_up = names
                            .iter()
                            .take_while(|name| matches!(name.as_str(), "CLIENT" | "SET"))
                            .count();
                        while answered < set_up {
                            let _ = socket.write_all(b"+OK\r\n").await;
                            answered += 1;
                        }
                    }
                });
            }
        });
        format!("redis://{address}")
    }

    /// The names of the whole commands in `read` (RESP arrays of bulk strings), in order.
    fn command_names(read: &[u8]) -> Vec<String> {
        fn line(read: &[u8], at: usize) -> Option<(&[u8], usize)> {
            let end = read
                .get(at..)?
                .windows(2)
                .position(|pair| pair == b"\r\n")?;
            Some((&read[at..at + end], at + end + 2))
        }
        fn number(text: &[u8]) -> Option<usize> {
            std::str::from_utf8(text).ok()?.parse().ok()
        }
        let mut names = Vec::new();
        let mut at = 0;
        while let Some((header, next)) = line(read, at)
            && let Some(arguments) = header.strip_prefix(b"*").and_then(number)
        {
            at = next;
            let mut name = None;
            for _ in 0..arguments {
                let Some((bulk, data)) = line(read, at) else {
                    return names;
                };
                let Some(length) = bulk.strip_prefix(b"$").and_then(number) else {
                    return names;
                };
                let Some(argument) = read.get(data..data + length) else {
                    return names;
                };
                name.get_or_insert_with(|| String::from_utf8_lossy(argument).to_uppercase());
                at = data + length + 2;
            }
            if at > read.len() {
                break;
            }
            names.extend(name);
        }
        names
    }

    fn waiting(cluster: &Cluster) -> usize {
        let outbox = &cluster.inner.redis.as_ref().expect("shared").outbox;
        outbox.max_capacity() - outbox.capacity()
    }

    fn dropped(cluster: &Cluster) -> u64 {
        let redis = cluster.inner.redis.as_ref().expect("shared");
        redis.dropped.load(Ordering::Relaxed)
    }

    fn publish(cluster: &Cluster, events: usize) {
        for n in 0..events {
            cluster.send_to(
                "another",
                ClusterEvent::Funnel(serde_json::json!({ "n": n })),
            );
        }
    }

    /// While Redis does not answer, the events waiting for it stay at the queue's capacity and
    /// the rest are dropped and counted; once the stalled pipeline is given up, everything is
    /// counted, in `/metrics` too.
    #[tokio::test]
    async fn events_past_the_queue_are_dropped_and_counted_while_redis_does_not_answer() {
        let cluster = Cluster::connect_queueing(&stalled_redis().await, 100)
            .await
            .expect("the set-up is answered");
        tokio::time::pause();
        // Nothing here awaits, so the publishing task takes none of them meanwhile.
        publish(&cluster, 150);
        assert_eq!((waiting(&cluster), dropped(&cluster)), (100, 50));

        // The task takes the hundred into a pipeline that Redis does not answer; a hundred more
        // wait behind it, and the rest are dropped.
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(waiting(&cluster), 0, "taken into the pipeline");
        publish(&cluster, 150);
        assert_eq!((waiting(&cluster), dropped(&cluster)), (100, 100));

        // Past the retries the pipeline is given up with what waited behind it: none was sent.
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert_eq!((waiting(&cluster), dropped(&cluster)), (0, 300));
        assert!(events_dropped() >= 300, "the process's count");
        let metrics = crate::metrics::Metrics::new()
            .expect("metrics")
            .render()
            .expect("rendered");
        let shown = metrics
            .lines()
            .find_map(|line| line.strip_prefix("helpnow_cluster_events_dropped_total "))
            .and_then(|value| value.parse::<u64>().ok());
        assert!(shown.is_some_and(|shown| shown >= 300), "{metrics}");
    }
}

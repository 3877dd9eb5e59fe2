//! The funnel actor with in-memory ports and paused time: every timer (typing delay,
//! auto-checkout, idle stop) is measured on tokio's clock, never by sleeping.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use serde_json::Value;
use tokio::time::Instant;

use super::ports::{
    CheckoutError, ConversationChange, FlowStep, FlowTally, FunnelCheckoutRequest, StepReached,
};
use super::*;
use crate::ports::{AiError, AiPurpose, AiRequest, StoreError};
use crate::rules::FunnelKind;
use crate::rules::flows::{FlowCatalog, FlowRef, FlowScript, FlowSource};
use crate::test_support::{Events, RecordedAnalytics, RecordedTelemetry, TestClient};

const KEYWORD: &str = "outlook email";

// ---------------------------------------------------------------------------------------------
// Ports

#[derive(Default)]
struct MemoryStore {
    rows: Mutex<HashMap<ConversationKey, Conversation>>,
    failing_saves: AtomicUsize,
    /// The next save's answer comes this much later (its write is made at once).
    slow_save: Mutex<Option<Duration>>,
}

impl MemoryStore {
    fn get(&self, key: &ConversationKey) -> Option<Conversation> {
        self.rows.lock().expect("lock").get(key).cloned()
    }

    fn fail_next_saves(&self, count: usize) {
        self.failing_saves.store(count, Ordering::SeqCst);
    }

    fn answer_next_save_after(&self, delay: Duration) {
        *self.slow_save.lock().expect("lock") = Some(delay);
    }
}

impl super::ports::FunnelStore for MemoryStore {
    fn load(
        &self,
        key: &ConversationKey,
    ) -> BoxFuture<'static, Result<Option<Conversation>, StoreError>> {
        // The server's store keeps the messages and rebuilds the rest from them: so does this.
        let found = self.get(key).map(|stored| rebuilt_from_messages(&stored));
        async move { Ok(found) }.boxed()
    }

    /// As the server's store: the stored epoch moves on, and the conversation comes back at it.
    fn take_over(
        &self,
        key: &ConversationKey,
    ) -> BoxFuture<'static, Result<Option<Conversation>, StoreError>> {
        let mut rows = self.rows.lock().expect("lock");
        let found = rows.get_mut(key).map(|stored| {
            stored.epoch += 1;
            rebuilt_from_messages(stored)
        });
        async move { Ok(found) }.boxed()
    }

    fn save(
        &self,
        conversation: &Conversation,
        change: ConversationChange,
    ) -> BoxFuture<'static, Result<(), StoreError>> {
        let failing = self.failing_saves.load(Ordering::SeqCst);
        if failing > 0 {
            self.failing_saves.store(failing - 1, Ordering::SeqCst);
            return async { Err(StoreError::Failed("disk full".into())) }.boxed();
        }
        let mut rows = self.rows.lock().expect("lock");
        let stored = rows.get(&conversation.key);
        let stored_version = stored.map_or(0, |c| c.version);
        // The fence, as the server's store has it: every write but a new conversation's lands
        // only at the stored epoch, whatever else it finds.
        let creates = change == ConversationChange::Started && conversation.version == 1;
        if !creates && stored.is_none_or(|stored| stored.epoch != conversation.epoch) {
            return async { Err(StoreError::Fenced) }.boxed();
        }
        let made_from_stored = match change {
            ConversationChange::Started | ConversationChange::CheckoutChanged => {
                stored_version + 1 == conversation.version
            }
            ConversationChange::MessageAdded => stored.is_some_and(|stored| {
                stored.version == conversation.version
                    && stored.messages.len() + 1 == conversation.messages.len()
            }),
        };
        let result = if made_from_stored {
            rows.insert(conversation.key.clone(), conversation.clone());
            Ok(())
        } else {
            Err(StoreError::Conflict)
        };
        let delay = self.slow_save.lock().expect("lock").take();
        async move {
            if let Some(delay) = delay {
                tokio::time::sleep(delay).await;
            }
            result
        }
        .boxed()
    }
}

/// Answers from a queue; an empty queue answers like the offline provider.
#[derive(Default)]
struct ScriptedAi {
    answers: Mutex<VecDeque<(Duration, Result<String, AiError>)>>,
    requests: Mutex<Vec<AiRequest>>,
}

impl ScriptedAi {
    fn answer(&self, text: &str) {
        self.answers
            .lock()
            .expect("lock")
            .push_back((Duration::ZERO, Ok(text.to_owned())));
    }

    fn answer_after(&self, delay: Duration, answer: Result<String, AiError>) {
        self.answers
            .lock()
            .expect("lock")
            .push_back((delay, answer));
    }

    fn requests(&self) -> Vec<AiRequest> {
        self.requests.lock().expect("lock").clone()
    }
}

impl crate::ports::Ai for ScriptedAi {
    fn complete(&self, request: AiRequest) -> BoxFuture<'static, Result<String, AiError>> {
        self.requests.lock().expect("lock").push(request);
        let (delay, answer) = self
            .answers
            .lock()
            .expect("lock")
            .pop_front()
            .unwrap_or((Duration::ZERO, Err(AiError::Offline)));
        async move {
            tokio::time::sleep(delay).await;
            answer
        }
        .boxed()
    }
}

#[derive(Default)]
struct FakeCheckout {
    requests: Mutex<Vec<FunnelCheckoutRequest>>,
    failing: Mutex<bool>,
}

impl super::ports::FunnelCheckout for FakeCheckout {
    fn start(
        &self,
        request: FunnelCheckoutRequest,
    ) -> BoxFuture<'static, Result<String, CheckoutError>> {
        let mut requests = self.requests.lock().expect("lock");
        requests.push(request);
        let result = if *self.failing.lock().expect("lock") {
            Err(CheckoutError("provider down".into()))
        } else {
            Ok(format!("/api/funnels/checkout/handoff-{}", requests.len()))
        };
        async move { result }.boxed()
    }
}

/// The claims of the processes that share a store (Redis's, in production): a conversation is
/// held by one process at a time, until it releases it or a test takes it away.
#[derive(Default)]
struct SharedClaims {
    /// The process and actor holding each conversation.
    holders: Mutex<HashMap<String, (String, u64)>>,
    /// Processes cut off from the claims (from Redis): each of their claims is answered `Here`
    /// and changes nothing, as the server's claims answer on an error or a time-out.
    cut_off: Mutex<HashSet<String>>,
}

impl SharedClaims {
    fn holder(&self, conversation_id: &str) -> Option<String> {
        self.holders
            .lock()
            .expect("lock")
            .get(conversation_id)
            .map(|(process, _)| process.clone())
    }

    fn set_holder(&self, conversation_id: &str, process: &str) {
        self.holders
            .lock()
            .expect("lock")
            .insert(conversation_id.into(), (process.into(), 0));
    }

    fn cut_off(&self, process: &str) {
        self.cut_off.lock().expect("lock").insert(process.into());
    }
}

/// One process's view of the shared claims.
struct ProcessClaims {
    process: String,
    shared: Arc<SharedClaims>,
}

impl super::ports::FunnelClaims for ProcessClaims {
    fn claim(&self, conversation_id: &str, actor: u64) -> BoxFuture<'static, super::ports::Holder> {
        if self
            .shared
            .cut_off
            .lock()
            .expect("lock")
            .contains(&self.process)
        {
            return futures_util::future::ready(super::ports::Holder::Here).boxed();
        }
        let mut holders = self.shared.holders.lock().expect("lock");
        let answer = match holders.get(conversation_id) {
            Some((process, _)) if *process != self.process => {
                super::ports::Holder::Elsewhere(process.clone())
            }
            _ => {
                holders.insert(conversation_id.into(), (self.process.clone(), actor));
                super::ports::Holder::Here
            }
        };
        futures_util::future::ready(answer).boxed()
    }

    fn release(&self, conversation_id: &str, actor: u64) {
        let mut holders = self.shared.holders.lock().expect("lock");
        if holders.get(conversation_id) == Some(&(self.process.clone(), actor)) {
            holders.remove(conversation_id);
        }
    }

    fn renew_every(&self) -> Option<Duration> {
        Some(Duration::from_secs(10))
    }
}

/// The flows of a deployment, which a test publishes to as the server's catalog would take a
/// publish: a new catalog swapped in whole.
struct TestFlows(Mutex<Arc<FlowCatalog>>);

impl TestFlows {
    fn shipped() -> Self {
        Self(Mutex::new(Arc::new(FlowCatalog::from_scripts(
            &shipped_scripts(),
        ))))
    }

    /// Publishes `change` of the flow's published script as its next version.
    fn publish(&self, flow: &str, change: impl FnOnce(&mut FlowScript)) -> u32 {
        let mut current = self.0.lock().expect("lock");
        let mut catalog = current.as_ref().clone();
        let mut script = catalog
            .published_script(flow)
            .expect("published")
            .as_ref()
            .clone();
        change(&mut script);
        let version = catalog.versions[flow].keys().max().copied().unwrap_or(0) + 1;
        catalog.insert(flow, version, script);
        catalog.published.insert(flow.into(), version);
        *current = Arc::new(catalog);
        version
    }
}

impl FlowSource for TestFlows {
    fn catalog(&self) -> Arc<FlowCatalog> {
        self.0.lock().expect("lock").clone()
    }
}

/// The steps counted for the drop-off.
#[derive(Default)]
struct RecordedTally(Mutex<Vec<StepReached>>);

impl RecordedTally {
    fn steps(&self) -> Vec<StepReached> {
        self.0.lock().expect("lock").clone()
    }
}

impl FlowTally for RecordedTally {
    fn reached(&self, step: StepReached) {
        self.0.lock().expect("lock").push(step);
    }
}

/// Wall-clock time that follows tokio's (paused) clock.
struct PausedClock {
    base: DateTime<Utc>,
    start: Instant,
}

impl crate::ports::Clock for PausedClock {
    fn now(&self) -> DateTime<Utc> {
        self.base + chrono::TimeDelta::from_std(self.start.elapsed()).expect("small")
    }
}

// ---------------------------------------------------------------------------------------------
// Harness

struct Harness {
    store: Arc<MemoryStore>,
    ai: Arc<ScriptedAi>,
    checkout: Arc<FakeCheckout>,
    analytics: Arc<RecordedAnalytics>,
    telemetry: Arc<RecordedTelemetry>,
    flows: Arc<TestFlows>,
    tally: Arc<RecordedTally>,
    registry: FunnelRegistry,
    claims: Arc<SharedClaims>,
    base: DateTime<Utc>,
    start: Instant,
}

impl Harness {
    fn new() -> Self {
        tokio::time::pause();
        let store = Arc::new(MemoryStore::default());
        let claims = Arc::new(SharedClaims::default());
        let flows = Arc::new(TestFlows::shipped());
        Self::with_store(store, claims, flows, "p1", Utc::now(), Instant::now())
    }

    fn with_store(
        store: Arc<MemoryStore>,
        claims: Arc<SharedClaims>,
        flows: Arc<TestFlows>,
        process: &str,
        base: DateTime<Utc>,
        start: Instant,
    ) -> Self {
        let ai = Arc::new(ScriptedAi::default());
        let checkout = Arc::new(FakeCheckout::default());
        let analytics = Arc::new(RecordedAnalytics::default());
        let telemetry = Arc::new(RecordedTelemetry::default());
        let tally = Arc::new(RecordedTally::default());
        let registry = FunnelRegistry::new(Deps {
            store: store.clone(),
            ai: ai.clone(),
            checkout: checkout.clone(),
            analytics: analytics.clone(),
            clock: Arc::new(PausedClock { base, start }),
            flows: flows.clone(),
            tally: tally.clone(),
            telemetry: telemetry.clone(),
            claims: Arc::new(ProcessClaims {
                process: process.into(),
                shared: claims.clone(),
            }),
            settings: FunnelSettings::new("Emma", "HelpNow"),
        });
        Self {
            store,
            ai,
            checkout,
            analytics,
            telemetry,
            flows,
            tally,
            registry,
            claims,
            base,
            start,
        }
    }

    /// Another process on the same store and claims (same wall clock).
    fn another_process(&self) -> Self {
        Self::with_store(
            self.store.clone(),
            self.claims.clone(),
            self.flows.clone(),
            "p2",
            self.base,
            self.start,
        )
    }

    fn key(funnel: FunnelKind) -> ConversationKey {
        ConversationKey {
            visitor_id: "visitor-1".into(),
            funnel,
        }
    }

    async fn connect(&self, funnel: FunnelKind, client_id: &str) -> Connected {
        self.connect_visitor(funnel, "visitor-1", client_id).await
    }

    async fn connect_visitor(
        &self,
        funnel: FunnelKind,
        visitor: &str,
        client_id: &str,
    ) -> Connected {
        let (client, events) = TestClient::new(client_id);
        let start = NewConversation {
            attribution: Attribution {
                keyword: Some(KEYWORD.into()),
                campaignid: Some("555".into()),
                ..Attribution::default()
            },
            flow: None,
        };
        let key = ConversationKey {
            visitor_id: visitor.into(),
            funnel,
        };
        let addr = self.registry.join(key, start, client).await.expect("join");
        Connected {
            id: client_id.into(),
            addr,
            events,
        }
    }
}

struct Connected {
    id: String,
    addr: actix::Addr<FunnelActor>,
    events: Events,
}

impl Connected {
    /// The next event with this name (others are skipped).
    async fn next_named(&mut self, name: &str) -> Value {
        self.events.next_named(name).await
    }

    async fn send(&self, text: &str) -> SendAck {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.addr.do_send(ClientEvent::Send {
            client_id: self.id.clone(),
            text: text.into(),
            reply: Reply::new(move |ack| {
                let _ = tx.send(ack);
            }),
        });
        rx.await.expect("an ack")
    }

    async fn press_get_started(&self) -> CheckoutAck {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.addr.do_send(ClientEvent::Checkout {
            client_id: self.id.clone(),
            reply: Reply::new(move |ack| {
                let _ = tx.send(ack);
            }),
        });
        rx.await.expect("an ack")
    }

    fn leave(&self) {
        self.addr.do_send(ClientEvent::Left {
            client_id: self.id.clone(),
        });
    }

    /// Three messages: the conversation reaches its final message.
    async fn reach_final(&mut self) {
        for text in [
            "wifi keeps dropping",
            "every few minutes",
            "restarted the router",
        ] {
            self.exchange(text).await;
        }
    }

    /// Sends and waits for the assistant's reply; returns it and how long typing showed.
    async fn exchange(&mut self, text: &str) -> (Value, Duration) {
        assert_eq!(self.send(text).await, SendAck::Stored);
        let typing = self.next_named("typing").await;
        assert_eq!(typing["active"], true);
        let announced = Duration::from_millis(typing["delayMs"].as_u64().expect("delayMs"));
        let started = Instant::now();
        let message = self.next_named("message").await;
        let elapsed = started.elapsed();
        assert!(
            elapsed >= announced,
            "the reply came {elapsed:?} after typing, which announced {announced:?}"
        );
        (message, elapsed)
    }
}

fn shipped_scripts() -> crate::rules::scripts::FunnelScripts {
    toml::from_str(include_str!("../../../config/funnels.toml")).expect("scripts")
}

/// Tokio's timers tick in whole milliseconds and round up.
const TIMER_GRAIN: Duration = Duration::from_millis(2);

fn assert_typing_window(elapsed: Duration) {
    assert!(
        (Duration::from_millis(1500)..=Duration::from_millis(2500) + TIMER_GRAIN)
            .contains(&elapsed),
        "typing showed for {elapsed:?}"
    );
}

fn assert_about(elapsed: Duration, expected: Duration) {
    assert!(
        elapsed >= expected && elapsed <= expected + TIMER_GRAIN,
        "took {elapsed:?}, expected {expected:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// Tests

#[actix::test]
async fn a_new_visitor_gets_the_greeting_and_the_keyword_headline() {
    let harness = Harness::new();
    let mut client = harness.connect(FunnelKind::Chat, "a").await;
    let conversation = client.next_named("conversation").await;
    assert_eq!(
        conversation["headline"],
        "Need Outlook Email Assistance? Get Instant Expert Assistance Now"
    );
    assert_eq!(conversation["stage"], 0);
    assert_eq!(conversation["final"], false);
    let messages = conversation["messages"].as_array().expect("messages");
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0]["role"], "assistant");
    assert!(
        messages[0]["text"].as_str().expect("text").contains("Emma"),
        "{conversation}"
    );
    // "outlook email" names the email flow.
    assert_eq!(
        harness
            .store
            .get(&Harness::key(FunnelKind::Chat))
            .expect("stored")
            .flow,
        FlowRef::published("email", 1)
    );
}

#[actix::test]
async fn three_messages_reach_the_final_message_after_a_typing_delay_each() {
    let harness = Harness::new();
    harness
        .ai
        .answer("I'm so sorry your email is acting up. What do you see?");
    harness.ai.answer("Thanks! What have you tried so far?");
    let mut client = harness.connect(FunnelKind::Chat, "a").await;
    client.next_named("conversation").await;

    let (first, elapsed) = client.exchange("I can't sign in to my Outlook").await;
    assert_typing_window(elapsed);
    assert_eq!(
        first["text"],
        "I'm so sorry your email is acting up. What do you see?"
    );
    assert_eq!(first["isFinal"], false);

    let (second, elapsed) = client.exchange("It says my password is wrong").await;
    assert_typing_window(elapsed);
    assert_eq!(second["text"], "Thanks! What have you tried so far?");

    let (last, elapsed) = client.exchange("I restarted my laptop").await;
    assert_typing_window(elapsed);
    assert_eq!(last["isFinal"], true);
    assert_eq!(last["showSubscribeButton"], true);

    // The server's metrics heard of it: one actor, six stored messages, three typing timers.
    let telemetry = &harness.telemetry;
    assert_eq!(telemetry.count("started", "funnel"), 1);
    assert_eq!(telemetry.count("stored", "funnel"), 6);
    let typing = telemetry.lateness("typing");
    assert_eq!(typing.len(), 3);
    assert!(typing.iter().all(|late| *late <= TIMER_GRAIN), "{typing:?}");
    assert!(
        last["text"]
            .as_str()
            .expect("text")
            .contains("Get started >>")
    );

    // The two follow-ups asked the AI, with prompts that forbid selling; the final one did not.
    let requests = harness.ai.requests();
    assert_eq!(requests.len(), 2);
    assert!(
        requests
            .iter()
            .all(|r| r.purpose == AiPurpose::FunnelFollowUp)
    );
    assert!(requests[0].messages[0].content.contains("empathy"));
    assert!(requests[1].messages[0].content.contains("troubleshooting"));
    assert!(
        requests
            .iter()
            .all(|r| r.messages[0].content.contains("Never mention prices"))
    );

    // Once the final message exists, sends are ignored.
    assert_eq!(
        client.send("hello?").await,
        SendAck::Refused(Refusal::Final)
    );
    let stored = harness
        .store
        .get(&Harness::key(FunnelKind::Chat))
        .expect("stored");
    assert_eq!(stored.stage, 2);
    assert!(stored.is_final);
    assert_eq!(stored.messages.len(), 7);
}

#[actix::test]
async fn the_checkout_opens_15_seconds_after_the_final_message() {
    let harness = Harness::new();
    let mut client = harness.connect(FunnelKind::Refundable, "a").await;
    client.next_named("conversation").await;
    for text in [
        "my printer is offline",
        "it shows an error light",
        "I unplugged it",
    ] {
        client.exchange(text).await;
    }
    let final_at = Instant::now();
    // The page is told when, to show a countdown.
    let countdown = client.next_named("countdown").await;
    let left = countdown["checkoutInMs"].as_i64().expect("milliseconds");
    assert!((14_000..=15_000).contains(&left), "{countdown}");
    let checkout = client.next_named("checkout").await;
    assert_about(final_at.elapsed(), Duration::from_secs(15));
    assert_eq!(checkout["url"], "/api/funnels/checkout/handoff-1");
    assert_eq!(harness.telemetry.lateness("auto_checkout").len(), 1);

    let requests = harness.checkout.requests.lock().expect("lock").clone();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].funnel, FunnelKind::Refundable);
    assert_eq!(requests[0].attribution.campaignid.as_deref(), Some("555"));
    assert_eq!(requests[0].record["funnel"], "refundable_fee_funnel");
    assert_eq!(requests[0].record["userIssue"], "my printer is offline");
    assert_eq!(
        requests[0].record["userMessages"].as_array().map(Vec::len),
        Some(3)
    );

    assert_eq!(
        harness.analytics.names(),
        [
            "refundable_fee_first_message",
            "refundable_fee_final_message",
            "refundable_fee_checkout_initiated"
        ]
    );
    // It fired once: the stored deadline is gone.
    let stored = harness
        .store
        .get(&Harness::key(FunnelKind::Refundable))
        .expect("stored");
    assert_eq!(stored.checkout_deadline, None);
    assert!(stored.checkout_started_at.is_some());
}

#[actix::test]
async fn the_button_opens_the_checkout_at_once_and_cancels_the_timer() {
    let harness = Harness::new();
    let mut client = harness.connect(FunnelKind::Chat, "a").await;
    client.next_named("conversation").await;
    client.reach_final().await;
    let pressed_at = Instant::now();
    let ack = client.press_get_started().await;
    assert_eq!(pressed_at.elapsed(), Duration::ZERO);
    assert_eq!(
        ack,
        CheckoutAck::Url("/api/funnels/checkout/handoff-1".into())
    );

    // Nothing more fires after the 15 s would have passed.
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert_eq!(harness.checkout.requests.lock().expect("lock").len(), 1);
    while let Ok((event, _)) = client.events.try_recv() {
        assert_ne!(event, "checkout");
    }
}

#[actix::test]
async fn pressing_the_button_again_reuses_the_checkout_for_half_an_hour() {
    let harness = Harness::new();
    let mut client = harness.connect(FunnelKind::Chat, "a").await;
    client.next_named("conversation").await;
    client.reach_final().await;
    let first = client.press_get_started().await;
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(client.press_get_started().await, first);
    assert_eq!(harness.checkout.requests.lock().expect("lock").len(), 1);
    tokio::time::sleep(Duration::from_secs(30 * 60)).await;
    assert_ne!(client.press_get_started().await, first);
    assert_eq!(harness.checkout.requests.lock().expect("lock").len(), 2);
}

#[actix::test]
async fn the_button_is_refused_before_the_final_message_and_a_failed_checkout_falls_back() {
    let harness = Harness::new();
    let mut client = harness.connect(FunnelKind::Chat, "a").await;
    client.next_named("conversation").await;
    assert_eq!(client.press_get_started().await, CheckoutAck::NotReady);

    *harness.checkout.failing.lock().expect("lock") = true;
    client.reach_final().await;
    let checkout = client.next_named("checkout").await;
    assert_eq!(checkout["url"], CHECKOUT_FALLBACK_URL);
}

/// A stored conversation with what follows from its messages forgotten and rebuilt.
fn rebuilt_from_messages(stored: &Conversation) -> Conversation {
    let mut rebuilt = stored.clone();
    rebuilt.stage = 0;
    rebuilt.junk_count = 0;
    rebuilt.is_final = false;
    rebuilt.first_message_tracked = false;
    rebuilt.settle_from_messages();
    rebuilt
}

#[actix::test]
async fn the_messages_alone_give_back_the_stage_junk_count_and_end() {
    let harness = Harness::new();
    let mut client = harness.connect(FunnelKind::Chat, "a").await;
    client.next_named("conversation").await;
    let key = Harness::key(FunnelKind::Chat);
    for text in ["??", "my wifi keeps dropping", "I restarted the router"] {
        let kept = harness.store.get(&key).expect("stored");
        assert_eq!(rebuilt_from_messages(&kept), kept);
        client.exchange(text).await;
    }
    let kept = harness.store.get(&key).expect("stored");
    assert!(kept.is_final);
    assert_eq!((kept.stage, kept.junk_count), (2, 1));
    assert_eq!(rebuilt_from_messages(&kept), kept);
}

#[actix::test]
async fn two_junk_messages_turn_the_ai_off() {
    let harness = Harness::new();
    harness.ai.answer("Oh no, I'm sorry. Tell me more?");
    harness.ai.answer("never used");
    let mut client = harness.connect(FunnelKind::Chat, "a").await;
    client.next_named("conversation").await;

    // First junk: the count is 1, the AI is still used.
    let (first, _) = client.exchange("??").await;
    assert_eq!(first["text"], "Oh no, I'm sorry. Tell me more?");
    // Second junk: scripts from now on, even for a real message; a script answers a message
    // that says nothing by asking again, not by thanking for it.
    let (second, _) = client.exchange("k").await;
    let scripts = shipped_scripts();
    assert_eq!(second["text"], scripts.unclear.troubleshooting);
    assert_ne!(second["text"], scripts.flow("email").troubleshooting);
    let (last, _) = client.exchange("I cannot open my inbox at all").await;
    assert_eq!(last["isFinal"], true);
    assert_eq!(harness.ai.requests().len(), 1);
    assert_eq!(
        harness
            .store
            .get(&Harness::key(FunnelKind::Chat))
            .expect("stored")
            .junk_count,
        2
    );
}

#[actix::test]
async fn a_failing_or_erroring_ai_is_replaced_by_the_script() {
    let harness = Harness::new();
    harness
        .ai
        .answer_after(Duration::ZERO, Err(AiError::Failed("status 500".into())));
    harness
        .ai
        .answer("Error: Unexpected response format from the AI provider");
    let mut client = harness.connect(FunnelKind::Refundable, "a").await;
    client.next_named("conversation").await;
    let scripts = shipped_scripts();
    let flow = scripts.flow("email");

    let (first, elapsed) = client.exchange("my email stopped working").await;
    assert_eq!(first["text"], flow.follow_up);
    assert_typing_window(elapsed);
    let (second, _) = client.exchange("since yesterday").await;
    assert_eq!(second["text"], flow.troubleshooting);
}

#[actix::test]
async fn a_slow_ai_is_cut_off_and_the_script_answers() {
    let harness = Harness::new();
    harness
        .ai
        .answer_after(Duration::from_secs(60), Ok("too late".into()));
    let mut client = harness.connect(FunnelKind::Chat, "a").await;
    client.next_named("conversation").await;
    let (reply, elapsed) = client.exchange("my computer is slow").await;
    assert_ne!(reply["text"], "too late");
    assert_about(elapsed, Duration::from_secs(8));
}

#[actix::test]
async fn sends_are_refused_while_a_reply_is_pending_and_when_empty_or_too_long() {
    let harness = Harness::new();
    let mut client = harness.connect(FunnelKind::Chat, "a").await;
    client.next_named("conversation").await;
    assert_eq!(client.send("   ").await, SendAck::Refused(Refusal::Empty));
    assert_eq!(
        client.send(&"a".repeat(2001)).await,
        SendAck::Refused(Refusal::TooLong)
    );
    assert_eq!(client.send("my screen is black").await, SendAck::Stored);
    assert_eq!(client.send("hello?").await, SendAck::Refused(Refusal::Busy));
    client.next_named("message").await;
    assert_eq!(client.send("it happens at startup").await, SendAck::Stored);
}

#[actix::test]
async fn the_first_message_is_tracked_once() {
    let harness = Harness::new();
    let mut client = harness.connect(FunnelKind::Chat, "a").await;
    client.next_named("conversation").await;
    client.exchange("my phone will not charge").await;
    client.exchange("since this morning").await;
    let firsts = harness
        .analytics
        .names()
        .iter()
        .filter(|name| *name == "chatbot_first_message")
        .count();
    assert_eq!(firsts, 1);
}

#[actix::test]
async fn a_second_tab_sees_the_visitors_messages_and_a_reconnect_gets_everything() {
    let harness = Harness::new();
    let mut tab_a = harness.connect(FunnelKind::Chat, "a").await;
    tab_a.next_named("conversation").await;
    let mut tab_b = harness.connect(FunnelKind::Chat, "b").await;
    tab_b.next_named("conversation").await;

    tab_a.exchange("my mouse is not working").await;
    let echoed = tab_b.next_named("message").await;
    assert_eq!(echoed["role"], "user");
    assert_eq!(echoed["text"], "my mouse is not working");
    // The sender is not sent its own message back.
    while let Ok((event, data)) = tab_a.events.try_recv() {
        assert!(event != "message" || data["role"] == "assistant");
    }

    // A dropped connection comes back (same client id) and gets the whole conversation.
    tab_a.leave();
    let mut again = harness.connect(FunnelKind::Chat, "a").await;
    let conversation = again.next_named("conversation").await;
    assert_eq!(conversation["messages"].as_array().map(Vec::len), Some(3));
}

#[actix::test]
async fn an_idle_actor_stops_and_is_rebuilt_from_the_store() {
    let harness = Harness::new();
    let mut client = harness.connect(FunnelKind::Chat, "a").await;
    client.next_named("conversation").await;
    client.exchange("my laptop overheats").await;
    client.leave();
    assert_eq!(harness.registry.live_count(), 1);
    tokio::time::sleep(Duration::from_secs(61)).await;
    assert_eq!(harness.registry.live_count(), 0, "the idle actor stopped");
    assert_eq!(harness.telemetry.count("stopped", "funnel"), 1);

    let mut back = harness.connect(FunnelKind::Chat, "c").await;
    let conversation = back.next_named("conversation").await;
    assert_eq!(conversation["stage"], 1);
    assert_eq!(conversation["messages"].as_array().map(Vec::len), Some(3));
}

#[actix::test]
async fn a_visitor_back_after_an_hour_starts_over() {
    let harness = Harness::new();
    let mut client = harness.connect(FunnelKind::Chat, "a").await;
    client.next_named("conversation").await;
    client.exchange("my laptop overheats").await;
    client.leave();
    tokio::time::sleep(Duration::from_secs(50 * 60)).await;
    let mut soon = harness.connect(FunnelKind::Chat, "b").await;
    let kept = soon.next_named("conversation").await;
    assert_eq!(kept["messages"].as_array().map(Vec::len), Some(3));
    soon.leave();

    tokio::time::sleep(Duration::from_secs(61 * 60)).await;
    let mut later = harness.connect(FunnelKind::Chat, "c").await;
    let fresh = later.next_named("conversation").await;
    assert_eq!(fresh["messages"].as_array().map(Vec::len), Some(1));
    assert_eq!(fresh["stage"], 0);
    assert_eq!(fresh["id"], kept["id"], "the same record, started over");
}

#[actix::test]
async fn a_reply_the_store_keeps_refusing_is_saved_later_without_asking_the_ai_again() {
    let harness = Harness::new();
    harness.ai.answer("So sorry about that. What do you see?");
    let mut client = harness.connect(FunnelKind::Chat, "a").await;
    client.next_named("conversation").await;
    assert_eq!(
        client.send("my speakers make no sound").await,
        SendAck::Stored
    );
    harness.store.fail_next_saves(3);
    let notice = client.next_named("notice").await;
    assert_eq!(notice["code"], "reply_delayed");
    assert_eq!(client.send("hello?").await, SendAck::Refused(Refusal::Busy));
    let reply = client.next_named("message").await;
    assert_eq!(reply["text"], "So sorry about that. What do you see?");
    assert_eq!(harness.ai.requests().len(), 1);
}

#[actix::test]
async fn another_process_re_arms_the_auto_checkout_from_the_stored_deadline() {
    let harness = Harness::new();
    let mut client = harness.connect(FunnelKind::Chat, "a").await;
    client.next_named("conversation").await;
    client.reach_final().await;
    let final_at = Instant::now();
    // The first process dies 5 s into the countdown.
    tokio::time::sleep(Duration::from_secs(5)).await;
    client.addr.do_send(StopForTest);
    drop(client);

    let other = harness.another_process();
    let mut resumed = other.connect(FunnelKind::Chat, "a").await;
    let conversation = resumed.next_named("conversation").await;
    assert_eq!(conversation["final"], true);
    resumed.next_named("checkout").await;
    assert_about(final_at.elapsed(), Duration::from_secs(15));
    assert_eq!(harness.checkout.requests.lock().expect("lock").len(), 0);
    assert_eq!(other.checkout.requests.lock().expect("lock").len(), 1);
}

#[actix::test]
async fn a_deadline_that_passed_while_nobody_was_connected_fires_15_seconds_after_the_return() {
    let harness = Harness::new();
    let mut client = harness.connect(FunnelKind::Chat, "a").await;
    client.next_named("conversation").await;
    client.reach_final().await;
    client.leave();
    tokio::time::sleep(Duration::from_secs(40)).await;
    assert_eq!(harness.checkout.requests.lock().expect("lock").len(), 0);
    // The one who comes back sees the conversation for 15 s before the checkout opens.
    let returned_at = Instant::now();
    let mut back = harness.connect(FunnelKind::Chat, "a").await;
    back.next_named("conversation").await;
    back.next_named("checkout").await;
    assert_about(returned_at.elapsed(), Duration::from_secs(15));
    assert_eq!(harness.checkout.requests.lock().expect("lock").len(), 1);
}

#[actix::test]
async fn a_reply_owed_by_a_dead_process_is_written_by_the_next_one() {
    let harness = Harness::new();
    let mut client = harness.connect(FunnelKind::Chat, "a").await;
    client.next_named("conversation").await;
    // The visitor's message is stored, then the process dies before replying.
    assert_eq!(client.send("my tablet is frozen").await, SendAck::Stored);
    client.addr.do_send(StopForTest);
    drop(client);
    tokio::task::yield_now().await;
    let stored = harness
        .store
        .get(&Harness::key(FunnelKind::Chat))
        .expect("stored");
    assert!(stored.awaits_reply());

    let other = harness.another_process();
    let mut resumed = other.connect(FunnelKind::Chat, "b").await;
    let conversation = resumed.next_named("conversation").await;
    assert_eq!(conversation["messages"].as_array().map(Vec::len), Some(2));
    assert_eq!(resumed.next_named("typing").await["active"], true);
    let reply = resumed.next_named("message").await;
    assert_eq!(reply["role"], "assistant");
}

#[actix::test]
async fn a_conversation_held_by_another_process_is_not_served_here_until_released() {
    let harness = Harness::new();
    let mut client = harness.connect(FunnelKind::Chat, "a").await;
    client.next_named("conversation").await;
    let id = Harness::key(FunnelKind::Chat).conversation_id();
    assert_eq!(harness.claims.holder(&id).as_deref(), Some("p1"));

    let other = harness.another_process();
    assert_eq!(
        refused_join(&other.registry).await,
        Some(JoinError::Elsewhere("p1".into()))
    );
    tokio::task::yield_now().await;
    assert_eq!(other.registry.live_count(), 0, "no second actor");
    assert_eq!(harness.claims.holder(&id).as_deref(), Some("p1"));

    // The holder's actor stops (idle): its claim is released and the other process serves it.
    client.leave();
    tokio::time::sleep(Duration::from_secs(61)).await;
    assert_eq!(harness.claims.holder(&id), None);
    let mut served = other.connect(FunnelKind::Chat, "b").await;
    served.next_named("conversation").await;
    assert_eq!(harness.claims.holder(&id).as_deref(), Some("p2"));
}

#[actix::test]
async fn an_actor_whose_claim_was_taken_hands_the_conversation_over() {
    let harness = Harness::new();
    let mut client = harness.connect(FunnelKind::Chat, "a").await;
    client.next_named("conversation").await;
    let id = Harness::key(FunnelKind::Chat).conversation_id();
    // This process's claim lapsed (its sign of life was not seen) and another took it.
    harness.claims.set_holder(&id, "p2");
    tokio::time::sleep(Duration::from_secs(11)).await;
    assert_eq!(client.next_named("(reconnect)").await, Value::Null);
    assert_eq!(harness.registry.live_count(), 0, "the actor stopped");
    assert_eq!(
        harness.claims.holder(&id).as_deref(),
        Some("p2"),
        "the other process's claim is left alone"
    );
}

/// Process p1 is cut off from the claims (Redis; or paused past its claim): it goes on serving
/// its tab, while its sign of life lapsed and p2 took the conversation over through another tab
/// (issue 49). Returns p2, whose tab has left again.
async fn taken_over_behind_the_holders_back(harness: &Harness) -> Harness {
    let id = Harness::key(FunnelKind::Chat).conversation_id();
    harness.claims.cut_off("p1");
    harness.claims.set_holder(&id, "p2");
    let other = harness.another_process();
    let mut other_tab = other.connect(FunnelKind::Chat, "b").await;
    other_tab.next_named("conversation").await;
    other_tab.leave();
    tokio::task::yield_now().await;
    assert_eq!(harness.registry.live_count(), 1, "p1 still serves its tab");
    other
}

/// The auto-checkout of a holder that was taken over (issue 49): it comes due on p1, which still
/// believes it holds the conversation. Its intent to open a checkout is refused at the store's
/// fence, so it opens none and counts none, and its tab is sent to the holder; there the
/// checkout opens once.
#[actix::test]
async fn a_holder_taken_over_opens_no_checkout_and_hands_the_conversation_over() {
    let harness = Harness::new();
    let mut client = harness.connect(FunnelKind::Chat, "a").await;
    client.next_named("conversation").await;
    client.reach_final().await;
    client.next_named("countdown").await;
    let other = taken_over_behind_the_holders_back(&harness).await;

    // The deadline passes.
    tokio::time::sleep(Duration::from_secs(16)).await;
    assert_eq!(
        harness.checkout.requests.lock().expect("lock").len(),
        0,
        "the stale holder opened a checkout"
    );
    assert_eq!(client.next_named("(reconnect)").await, Value::Null);
    assert_eq!(harness.telemetry.count("fenced", "funnel"), 1);
    tokio::task::yield_now().await;
    assert_eq!(harness.registry.live_count(), 0, "the stale actor stopped");
    assert!(
        !harness
            .analytics
            .names()
            .iter()
            .any(|name| name.contains("checkout")),
        "{:?}",
        harness.analytics.names()
    );
    assert!(
        harness
            .tally
            .steps()
            .iter()
            .all(|step| step.step != FlowStep::CheckoutAuto)
    );
    let stored = harness
        .store
        .get(&Harness::key(FunnelKind::Chat))
        .expect("stored");
    assert_eq!(stored.epoch, 2, "created at 1, taken over once");
    assert_eq!(stored.checkout_started_at, None, "no checkout opened yet");

    // The tab connects again and is served by the holder, which opens the one checkout 15 s
    // later (the deadline passed while none of its tabs was connected).
    let mut back = other.connect(FunnelKind::Chat, "a").await;
    back.next_named("conversation").await;
    back.next_named("checkout").await;
    assert_eq!(other.checkout.requests.lock().expect("lock").len(), 1);
    assert_eq!(harness.checkout.requests.lock().expect("lock").len(), 0);
    let auto: Vec<FlowStep> = other
        .tally
        .steps()
        .iter()
        .map(|step| step.step)
        .filter(|step| *step == FlowStep::CheckoutAuto)
        .collect();
    assert_eq!(auto, [FlowStep::CheckoutAuto]);
}

/// A message sent through a holder that was taken over (issue 49) is refused at the store's
/// fence: nothing is stored, acknowledged or counted, and the tab is sent to the holder, where
/// the same message is stored.
#[actix::test]
async fn a_holder_taken_over_stores_no_message_and_hands_the_conversation_over() {
    let harness = Harness::new();
    let mut client = harness.connect(FunnelKind::Chat, "a").await;
    client.next_named("conversation").await;
    let other = taken_over_behind_the_holders_back(&harness).await;

    assert_eq!(
        client.send("my printer is offline").await,
        SendAck::Refused(Refusal::Unavailable)
    );
    assert_eq!(client.next_named("(reconnect)").await, Value::Null);
    let key = Harness::key(FunnelKind::Chat);
    assert_eq!(
        harness.store.get(&key).expect("stored").messages.len(),
        1,
        "only the greeting"
    );
    assert_eq!(harness.telemetry.count("stored", "funnel"), 0);
    assert_eq!(harness.telemetry.count("fenced", "funnel"), 1);
    assert!(harness.analytics.names().is_empty());
    assert!(
        harness
            .tally
            .steps()
            .iter()
            .all(|step| step.step == FlowStep::Joined)
    );

    let back = other.connect(FunnelKind::Chat, "a").await;
    assert_eq!(back.send("my printer is offline").await, SendAck::Stored);
    assert_eq!(harness.store.get(&key).expect("stored").messages.len(), 2);
}

/// Why a tab of the chat funnel's visitor is not served through `registry` (this process's or
/// another's): `None` when it is.
async fn refused_join(registry: &FunnelRegistry) -> Option<JoinError> {
    let (tab, _events) = TestClient::new("b");
    registry
        .join(
            Harness::key(FunnelKind::Chat),
            NewConversation::default(),
            tab,
        )
        .await
        .err()
}

/// A stop (`FunnelRegistry::drain`) lets a message being saved finish: it is acknowledged; then
/// the client is asked to connect again (to another process) and the claim is given up, and a
/// join is refused from then on.
#[actix::test]
async fn a_draining_actor_finishes_its_save_then_hands_the_conversation_over() {
    let harness = Harness::new();
    let mut client = harness.connect(FunnelKind::Chat, "a").await;
    client.next_named("conversation").await;
    let id = Harness::key(FunnelKind::Chat).conversation_id();
    assert_eq!(harness.claims.holder(&id).as_deref(), Some("p1"));
    harness
        .store
        .answer_next_save_after(Duration::from_millis(500));
    let drain = async {
        // The message reaches the actor first.
        tokio::task::yield_now().await;
        harness.registry.drain(Duration::from_secs(5)).await
    };
    let (ack, left) = tokio::join!(client.send("my printer will not print"), drain);
    assert_eq!(ack, SendAck::Stored, "acknowledged once stored");
    assert_eq!(left, 0, "no actor left");
    assert_eq!(client.next_named("(reconnect)").await, Value::Null);
    assert_eq!(harness.claims.holder(&id), None, "the claim given up");
    let stored = harness
        .store
        .get(&Harness::key(FunnelKind::Chat))
        .expect("stored");
    assert_eq!(stored.messages.len(), 2, "the greeting and the message");
    assert_eq!(
        refused_join(&harness.registry).await,
        Some(JoinError::Stopping)
    );
}

#[actix::test]
async fn a_message_the_store_refused_is_not_acknowledged() {
    let harness = Harness::new();
    let mut client = harness.connect(FunnelKind::Chat, "a").await;
    client.next_named("conversation").await;
    harness.store.fail_next_saves(1);
    assert_eq!(
        client.send("my keyboard types wrong letters").await,
        SendAck::Refused(Refusal::Unavailable)
    );
    let stored = harness
        .store
        .get(&Harness::key(FunnelKind::Chat))
        .expect("stored");
    assert_eq!(stored.messages.len(), 1);
    // The visitor can simply send it again.
    let (reply, _) = client.exchange("my keyboard types wrong letters").await;
    assert_eq!(reply["role"], "assistant");
}

#[actix::test]
async fn a_reply_whose_save_fails_is_retried() {
    let harness = Harness::new();
    let mut client = harness.connect(FunnelKind::Chat, "a").await;
    client.next_named("conversation").await;
    assert_eq!(
        client.send("my speakers make no sound").await,
        SendAck::Stored
    );
    harness.store.fail_next_saves(2);
    let reply = client.next_named("message").await;
    assert_eq!(reply["role"], "assistant");
    let stored = harness
        .store
        .get(&Harness::key(FunnelKind::Chat))
        .expect("stored");
    assert_eq!(stored.messages.len(), 3);
}

/// Stops an actor the way a dying process would: no goodbye to anyone.
#[derive(actix::Message)]
#[rtype(result = "()")]
struct StopForTest;

impl actix::Handler<StopForTest> for FunnelActor {
    type Result = ();

    fn handle(&mut self, _: StopForTest, ctx: &mut Self::Context) {
        actix::ActorContext::stop(ctx);
    }
}

#[actix::test]
async fn a_conversation_keeps_its_flow_version_while_new_ones_get_the_published_one() {
    let harness = Harness::new();
    let mut client = harness.connect(FunnelKind::Chat, "a").await;
    let first = client.next_named("conversation").await;
    let old_greeting = first["messages"][0]["text"].clone();
    let (reply, _) = client.exchange("my outlook will not open").await;
    let version = harness.flows.publish("email", |script| {
        script.greeting = "Hello from version 2, {assistant}.".into();
        script.troubleshooting = "Version 2 asks what you tried.".into();
        script.final_chat = "Version 2's offer: click 'Get started >>'.".into();
        script.typing_delay_min_ms = 500;
        script.typing_delay_max_ms = 500;
        script.auto_checkout_after_s = 5;
    });
    assert_eq!(version, 2);
    // The AI is offline: the scripts answer, each from version 1, also once the actor stopped
    // (nobody connected) and was rebuilt from the store.
    let v1 = FlowScript::from_file(&shipped_scripts(), shipped_scripts().flow("email"));
    assert_eq!(reply["text"], v1.follow_up);
    client.leave();
    tokio::time::sleep(Duration::from_secs(61)).await;
    assert_eq!(harness.registry.live_count(), 0, "the idle actor stopped");
    let mut client = harness.connect(FunnelKind::Chat, "a2").await;
    client.next_named("conversation").await;
    let (reply, elapsed) = client.exchange("it says the password is wrong").await;
    assert_eq!(reply["text"], v1.troubleshooting);
    assert_typing_window(elapsed);
    let (last, _) = client.exchange("I restarted it").await;
    assert_eq!(last["text"], v1.final_chat);
    let countdown = client.next_named("countdown").await;
    assert!(
        countdown["checkoutInMs"].as_i64().expect("ms") > 14_000,
        "{countdown}"
    );

    // A new visitor follows version 2: its greeting, its typing delay and its checkout delay.
    let mut other = harness
        .connect_visitor(FunnelKind::Chat, "visitor-2", "b")
        .await;
    let conversation = other.next_named("conversation").await;
    assert_eq!(
        conversation["messages"][0]["text"],
        "Hello from version 2, Emma."
    );
    assert_ne!(conversation["messages"][0]["text"], old_greeting);
    let (_, elapsed) = other.exchange("my email is broken").await;
    assert_about(elapsed, Duration::from_millis(500));
    let (reply, _) = other.exchange("it will not load").await;
    assert_eq!(reply["text"], "Version 2 asks what you tried.");
    let (last, _) = other.exchange("nothing yet").await;
    assert_eq!(last["text"], "Version 2's offer: click 'Get started >>'.");
    let countdown = other.next_named("countdown").await;
    let left = countdown["checkoutInMs"].as_i64().expect("ms");
    assert!((4_000..=5_000).contains(&left), "{countdown}");

    // A conversation rebuilt from the store (an idle stop, another process) keeps its version.
    let stored = harness
        .store
        .get(&Harness::key(FunnelKind::Chat))
        .expect("stored");
    assert_eq!(stored.flow, FlowRef::published("email", 1));
    let key_2 = ConversationKey {
        visitor_id: "visitor-2".into(),
        funnel: FunnelKind::Chat,
    };
    assert_eq!(
        harness.store.get(&key_2).expect("stored").flow,
        FlowRef::published("email", 2)
    );
}

#[actix::test]
async fn each_step_is_counted_once_on_its_flow_version_with_the_time_spent_before_it() {
    let harness = Harness::new();
    let mut client = harness.connect(FunnelKind::Refundable, "a").await;
    client.next_named("conversation").await;
    tokio::time::advance(Duration::from_secs(7)).await;
    for text in ["my printer is offline", "it blinks", "I unplugged it"] {
        client.exchange(text).await;
        tokio::time::advance(Duration::from_secs(3)).await;
    }
    client.next_named("checkout").await;
    // A second tab and a press of the button later count nothing more.
    let mut second = harness.connect(FunnelKind::Refundable, "b").await;
    second.next_named("conversation").await;
    let steps = harness.tally.steps();
    let names: Vec<FlowStep> = steps.iter().map(|step| step.step).collect();
    assert_eq!(
        names,
        [
            FlowStep::Joined,
            FlowStep::FirstMessage,
            FlowStep::FirstReply,
            FlowStep::SecondMessage,
            FlowStep::SecondReply,
            FlowStep::ThirdMessage,
            FlowStep::FinalMessage,
            FlowStep::CheckoutAuto,
        ]
    );
    for step in &steps {
        assert_eq!((step.flow.as_str(), step.version), ("email", 1));
        assert_eq!(step.funnel, FunnelKind::Refundable);
        assert_eq!(step.campaignid.as_deref(), Some("555"));
        assert_eq!(step.keyword.as_deref(), Some(KEYWORD));
    }
    let after = |index: usize| steps[index].after.expect("a time");
    assert_eq!(steps[0].after, None);
    assert_about(after(1), Duration::from_secs(7));
    assert_typing_window(after(2));
    assert_about(after(3), Duration::from_secs(3));
    assert_about(after(7), Duration::from_secs(15));
}

#[actix::test]
async fn the_first_checkout_by_the_button_is_counted_as_the_buttons() {
    let harness = Harness::new();
    let mut client = harness.connect(FunnelKind::Chat, "a").await;
    client.next_named("conversation").await;
    for text in ["my printer is offline", "it blinks", "I unplugged it"] {
        client.exchange(text).await;
    }
    client.press_get_started().await;
    client.press_get_started().await;
    let checkouts: Vec<FlowStep> = harness
        .tally
        .steps()
        .iter()
        .map(|step| step.step)
        .filter(|step| matches!(step, FlowStep::CheckoutAuto | FlowStep::CheckoutButton))
        .collect();
    assert_eq!(checkouts, [FlowStep::CheckoutButton]);
}

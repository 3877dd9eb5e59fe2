//! Test doubles the actor tests share: a client that hands the test every event it is sent, and
//! analytics that remember what was recorded.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::mpsc;

use crate::ports::{ActorClient, Analytics};

/// A connected client whose events (and its disconnection, as `("(disconnected)", null)`, or
/// `("(reconnect)", null)` when it is to connect again) arrive
/// at the test's `Events`.
pub(crate) struct TestClient {
    id: String,
    events: mpsc::UnboundedSender<(String, Value)>,
}

impl TestClient {
    pub(crate) fn new(id: &str) -> (Arc<Self>, Events) {
        let (tx, rx) = mpsc::unbounded_channel();
        let client = Arc::new(Self {
            id: id.into(),
            events: tx,
        });
        (client, Events(rx))
    }
}

impl ActorClient for TestClient {
    fn id(&self) -> &str {
        &self.id
    }

    fn address(&self) -> Option<std::net::IpAddr> {
        None
    }

    fn emit(&self, event: &'static str, data: Value) {
        let _ = self.events.send((event.to_owned(), data));
    }

    fn disconnect(&self) {
        let _ = self.events.send(("(disconnected)".to_owned(), Value::Null));
    }

    fn reconnect(&self) {
        let _ = self.events.send(("(reconnect)".to_owned(), Value::Null));
    }
}

/// The events a `TestClient` was sent, in order.
pub(crate) struct Events(mpsc::UnboundedReceiver<(String, Value)>);

impl Events {
    /// The next event, waiting up to 10 minutes of (paused) time for it.
    pub(crate) async fn next(&mut self) -> (String, Value) {
        tokio::time::timeout(Duration::from_secs(600), self.0.recv())
            .await
            .expect("an event within 10 minutes")
            .expect("the actor is alive")
    }

    /// The next event with this name (others are skipped).
    pub(crate) async fn next_named(&mut self, name: &str) -> Value {
        loop {
            let (event, data) = self.next().await;
            if event == name {
                return data;
            }
        }
    }

    /// An event already sent, without waiting.
    pub(crate) fn try_recv(&mut self) -> Result<(String, Value), mpsc::error::TryRecvError> {
        self.0.try_recv()
    }
}

/// Remembers every recorded event as (name, subject).
#[derive(Default)]
pub(crate) struct RecordedAnalytics(Mutex<Vec<(String, String)>>);

impl RecordedAnalytics {
    /// The recorded events' names, in order.
    pub(crate) fn names(&self) -> Vec<String> {
        self.0
            .lock()
            .expect("lock")
            .iter()
            .map(|(name, _)| name.clone())
            .collect()
    }

    /// Whom each recorded event was about (visitor or user id), in order.
    pub(crate) fn subjects(&self) -> Vec<String> {
        self.0
            .lock()
            .expect("lock")
            .iter()
            .map(|(_, subject)| subject.clone())
            .collect()
    }
}

impl Analytics for RecordedAnalytics {
    fn record(&self, event: &'static str, subject: &str, _properties: Value) {
        self.0
            .lock()
            .expect("lock")
            .push((event.to_owned(), subject.to_owned()));
    }
}

/// Telemetry that remembers what it was told: `(what, label)` pairs, and every timer's lateness.
#[derive(Default)]
pub(crate) struct RecordedTelemetry {
    events: Mutex<Vec<(&'static str, &'static str)>>,
    lateness: Mutex<Vec<(&'static str, Duration)>>,
}

impl RecordedTelemetry {
    /// How many times `what` (`"started"`, `"stopped"`, `"stored"`, `"forwarded"`, `"fenced"`)
    /// was reported with `label`.
    pub(crate) fn count(&self, what: &str, label: &str) -> usize {
        self.events
            .lock()
            .expect("lock")
            .iter()
            .filter(|(w, l)| *w == what && *l == label)
            .count()
    }

    /// The lateness of every run of `timer`.
    pub(crate) fn lateness(&self, timer: &str) -> Vec<Duration> {
        self.lateness
            .lock()
            .expect("lock")
            .iter()
            .filter(|(t, _)| *t == timer)
            .map(|(_, late)| *late)
            .collect()
    }

    fn push(&self, what: &'static str, label: &'static str) {
        self.events.lock().expect("lock").push((what, label));
    }
}

impl crate::ports::Telemetry for RecordedTelemetry {
    fn actor_started(&self, kind: &'static str) {
        self.push("started", kind);
    }

    fn actor_stopped(&self, kind: &'static str) {
        self.push("stopped", kind);
    }

    fn message_stored(&self, kind: &'static str) {
        self.push("stored", kind);
    }

    fn timer_fired(&self, timer: &'static str, late: Duration) {
        self.lateness.lock().expect("lock").push((timer, late));
    }

    fn piece_forwarded(&self, _waited: Duration) {
        self.push("forwarded", "member");
    }

    fn fenced(&self, kind: &'static str) {
        self.push("fenced", kind);
    }
}

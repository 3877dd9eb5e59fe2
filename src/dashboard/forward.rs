//! The analytics events sent on to an external analytics service (issue 19): PostHog's batch
//! capture API or Google Analytics 4's Measurement Protocol, from the server only (no key ever
//! reaches a browser), off unless `analytics.forward.provider` is set (docs/operations.md).
//!
//! One task per process reads the stored events after a cursor (`store::analytics`), oldest
//! first, a batch at a time, and sends them; the cursor moves on only once the service accepted
//! the batch. A failed send is tried again after 1 s, 2 s, 4 s ... at most 5 min; events wait in
//! the database meanwhile, so nobody's request ever waits on the service and nothing is dropped.
//! Several processes share one cursor under a lease, so one of them forwards at a time; a process
//! that dies mid-batch leaves that batch to the next holder, which may send it twice (PostHog
//! keeps one event per `uuid`, which is the event's own id hashed).

use std::time::Duration;

use chrono::{DateTime, Utc};
use secrecy::ExposeSecret;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::config::{ForwardProvider, ForwardSettings};
use crate::store::Db;
use crate::store::analytics::{self, ForwardedEvent};

/// Events sent in one batch at most (GA4 takes 25 a request: a batch is sent in such pieces).
pub const BATCH: usize = 100;
/// GA4's limit of events per request.
const GA4_EVENTS_PER_REQUEST: usize = 25;
/// How long the forwarding process holds the cursor without renewing it.
const LEASE: Duration = Duration::from_secs(60);
/// The longest wait between attempts after failures.
const MAX_BACKOFF: Duration = Duration::from_secs(300);
/// The distinct id of an event that names no visitor and no account (a server's own event).
const SERVER_ID: &str = "helpnow-server";

/// Where the events go, from the settings.
#[derive(Debug, Clone)]
pub struct Target {
    provider: ForwardProvider,
    url: String,
    key: secrecy::SecretString,
    measurement_id: String,
}

impl Target {
    /// The configured service, or none when forwarding is off. The settings were checked when
    /// they were loaded (`ForwardSettings::validate`).
    pub fn from_settings(settings: &ForwardSettings) -> Option<Target> {
        let provider = settings.provider?;
        let url = settings.url.clone().unwrap_or_else(|| match provider {
            ForwardProvider::Posthog => "https://us.i.posthog.com".to_owned(),
            ForwardProvider::Ga4 => "https://www.google-analytics.com".to_owned(),
        });
        Some(Target {
            provider,
            url: url.trim_end_matches('/').to_owned(),
            key: settings.key.clone()?,
            measurement_id: settings.measurement_id.clone().unwrap_or_default(),
        })
    }

    /// The requests that carry `events`: (address, JSON body).
    fn requests(&self, events: &[ForwardedEvent]) -> Vec<(String, Value)> {
        match self.provider {
            ForwardProvider::Posthog => vec![(
                format!("{}/batch/", self.url),
                posthog_batch(self.key.expose_secret(), events),
            )],
            ForwardProvider::Ga4 => {
                let address = format!(
                    "{}/mp/collect?measurement_id={}&api_secret={}",
                    self.url,
                    urlencode(&self.measurement_id),
                    urlencode(self.key.expose_secret())
                );
                ga4_requests(events)
                    .into_iter()
                    .map(|body| (address.clone(), body))
                    .collect()
            }
        }
    }
}

fn urlencode(value: &str) -> String {
    url::form_urlencoded::byte_serialize(value.as_bytes()).collect()
}

/// A UUID made from the event's id, so a batch sent twice names its events alike.
fn event_uuid(id: &str) -> String {
    let hash = Sha256::digest(id.as_bytes());
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&hash[..16]);
    bytes[6] = (bytes[6] & 0x0f) | 0x50;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// The event's own properties, with its path and its first touch beside them (`first_campaignid`,
/// `first_keyword`, ... `first_gclid`).
fn properties(event: &ForwardedEvent) -> Map<String, Value> {
    let mut properties = match &event.properties {
        Some(Value::Object(map)) => map.clone(),
        _ => Map::new(),
    };
    if let Some(path) = &event.path {
        properties.insert("path".to_owned(), Value::String(path.clone()));
    }
    if let Some(Value::Object(first)) = &event.first_touch {
        for (field, value) in first {
            properties.insert(format!("first_{field}"), value.clone());
        }
    }
    properties
}

/// PostHog's `POST /batch/` body: each event with its distinct id (the account once known, else
/// the visitor, as an anonymous event), its time and a stable uuid.
fn posthog_batch(key: &str, events: &[ForwardedEvent]) -> Value {
    let batch: Vec<Value> = events
        .iter()
        .map(|event| {
            let mut properties = properties(event);
            if let Some(visitor) = &event.visitor {
                properties.insert("visitor".to_owned(), Value::String(visitor.clone()));
            }
            // A visitor without an account stays anonymous: PostHog makes no person of it.
            if event.user.is_none() {
                properties.insert("$process_person_profile".to_owned(), Value::Bool(false));
            }
            json!({
                "event": event.name,
                "distinct_id": event.user.as_deref().or(event.visitor.as_deref()).unwrap_or(SERVER_ID),
                "properties": properties,
                "timestamp": event.created_at.to_rfc3339(),
                "uuid": event_uuid(&event.id),
            })
        })
        .collect();
    json!({ "api_key": key, "batch": batch })
}

/// GA4's Measurement Protocol bodies: one client (the visitor, else the account) per request, at
/// most 25 events each; parameters are strings or numbers of at most 100 characters.
fn ga4_requests(events: &[ForwardedEvent]) -> Vec<Value> {
    let mut clients: Vec<(String, Option<String>, Vec<Value>)> = Vec::new();
    for event in events {
        let client = event
            .visitor
            .clone()
            .or_else(|| event.user.clone())
            .unwrap_or_else(|| SERVER_ID.to_owned());
        let params: Map<String, Value> = properties(event)
            .into_iter()
            .filter_map(|(name, value)| {
                let value = match value {
                    Value::String(text) => Value::String(text.chars().take(100).collect()),
                    Value::Number(number) => Value::Number(number),
                    Value::Bool(flag) => Value::String(flag.to_string()),
                    _ => return None,
                };
                Some((name.chars().take(40).collect(), value))
            })
            .collect();
        let entry = json!({
            "name": event.name,
            "params": params,
            "timestamp_micros": event.created_at.timestamp_micros(),
        });
        match clients.iter_mut().find(|(id, user, list)| {
            *id == client && *user == event.user && list.len() < GA4_EVENTS_PER_REQUEST
        }) {
            Some((_, _, list)) => list.push(entry),
            None => clients.push((client, event.user.clone(), vec![entry])),
        }
    }
    clients
        .into_iter()
        .map(|(client, user, events)| {
            let mut body = json!({ "client_id": client, "events": events });
            if let Some(user) = user {
                body["user_id"] = Value::String(user);
            }
            body
        })
        .collect()
}

/// Sends one batch if this process holds (or takes) the cursor: answers how many events went.
pub async fn forward_once(
    db: &Db,
    target: &Target,
    client: &reqwest::Client,
    me: &str,
    settle: Duration,
) -> anyhow::Result<usize> {
    let Some(cursor) = analytics::take_forward_lease(db, me, LEASE).await? else {
        return Ok(0);
    };
    let until: DateTime<Utc> = Utc::now() - chrono::Duration::from_std(settle).unwrap_or_default();
    let events = analytics::events_to_forward(db, &cursor, until, BATCH).await?;
    if events.is_empty() {
        return Ok(0);
    }
    for (address, body) in target.requests(&events) {
        let response = client
            .post(&address)
            .json(&body)
            .send()
            .await
            .map_err(without_secrets)?;
        let status = response.status();
        if !status.is_success() {
            // An error page may quote the request's address, API secret and all.
            let text = response
                .text()
                .await
                .unwrap_or_default()
                .replace(target.key.expose_secret(), "[redacted]");
            anyhow::bail!(
                "the analytics service answered {status}: {}",
                text.chars().take(200).collect::<String>()
            );
        }
    }
    analytics::advance_forward(db, me, &cursor, &events).await?;
    Ok(events.len())
}

/// A failed request's error with its URL cut to the service's address and path: GA4's API secret
/// travels in the query (`api_secret=`), and the error, which carries the URL, is logged.
fn without_secrets(mut error: reqwest::Error) -> reqwest::Error {
    if let Some(url) = error.url_mut() {
        url.set_query(None);
        url.set_fragment(None);
        // Only fails for URLs that cannot have credentials, which then have none.
        let _ = url.set_username("");
        let _ = url.set_password(None);
    }
    error
}

/// Forwards for ever: a batch every `every` (at once while there are more), backing off after
/// failures.
pub fn spawn(
    db: Db,
    target: Target,
    every: Duration,
    settle: Duration,
) -> Result<tokio::task::JoinHandle<()>, reqwest::Error> {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()?;
    let me = format!("{}-{}", std::process::id(), crate::ids::alphanumeric(8));
    Ok(tokio::spawn(async move {
        let mut backoff = Duration::from_secs(1);
        loop {
            let wait = match forward_once(&db, &target, &client, &me, settle).await {
                Ok(sent) => {
                    backoff = Duration::from_secs(1);
                    if sent == BATCH { Duration::ZERO } else { every }
                }
                Err(error) => {
                    tracing::warn!(%error, retry_in = ?backoff, "analytics events could not be forwarded");
                    let wait = backoff;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                    wait
                }
            };
            tokio::time::sleep(wait).await;
        }
    }))
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::sync::{Arc, Mutex};

    use super::*;

    fn event(id: &str, name: &str, visitor: Option<&str>, user: Option<&str>) -> ForwardedEvent {
        ForwardedEvent {
            id: id.to_owned(),
            name: name.to_owned(),
            created_at: "2026-11-27T10:00:00Z".parse().unwrap_or_default(),
            visitor: visitor.map(str::to_owned),
            user: user.map(str::to_owned),
            path: Some("/chat-help".to_owned()),
            properties: Some(json!({ "campaignid": "c1", "nested": { "x": 1 } })),
            first_touch: Some(json!({ "campaignid": "c0", "gclid": "g1" })),
        }
    }

    #[test]
    fn posthog_gets_one_batch_with_stable_uuids_and_distinct_ids() {
        let events = [
            event("e1", "chatbot_funnel_view", Some("v1"), None),
            event("e2", "sign_up", None, Some("u1")),
            event("e3", "purchase", None, None),
        ];
        let body = posthog_batch("phc_key", &events);
        assert_eq!(body["api_key"], "phc_key");
        let batch = body["batch"].as_array().cloned().unwrap_or_default();
        assert_eq!(batch.len(), 3);
        assert_eq!(batch[0]["distinct_id"], "v1");
        assert_eq!(batch[0]["properties"]["campaignid"], "c1");
        assert_eq!(batch[0]["properties"]["path"], "/chat-help");
        assert_eq!(batch[0]["properties"]["first_campaignid"], "c0");
        assert_eq!(batch[0]["timestamp"], "2026-11-27T10:00:00+00:00");
        assert_eq!(batch[1]["distinct_id"], "u1");
        assert_eq!(batch[0]["properties"]["$process_person_profile"], false);
        assert!(
            batch[1]["properties"]
                .get("$process_person_profile")
                .is_none()
        );
        assert_eq!(batch[2]["distinct_id"], SERVER_ID);
        assert_eq!(batch[0]["uuid"], event_uuid("e1"));
        assert_ne!(event_uuid("e1"), event_uuid("e2"));
        let uuid = event_uuid("e1");
        assert_eq!(uuid.len(), 36);
        assert_eq!(&uuid[14..15], "5");
    }

    #[test]
    fn ga4_gets_one_client_a_request_and_flat_short_params() {
        let mut events: Vec<ForwardedEvent> = (0..30)
            .map(|n| event(&format!("e{n}"), "page_view", Some("v1"), None))
            .collect();
        events.push(event("x", "sign_up", Some("v2"), Some("u2")));
        let bodies = ga4_requests(&events);
        assert_eq!(bodies.len(), 3, "25 + 5 for v1, 1 for v2");
        assert_eq!(bodies[0]["client_id"], "v1");
        assert_eq!(bodies[0]["events"].as_array().map(Vec::len), Some(25));
        assert_eq!(bodies[1]["events"].as_array().map(Vec::len), Some(5));
        assert_eq!(bodies[2]["user_id"], "u2");
        let params = &bodies[0]["events"][0]["params"];
        assert_eq!(params["campaignid"], "c1");
        assert!(params.get("nested").is_none());
        assert_eq!(params["first_gclid"], "g1");
        assert_eq!(
            bodies[0]["events"][0]["timestamp_micros"],
            1_795_773_600_000_000_i64
        );
    }

    const SECRET: &str = "ga4SecretXy7pQ2";

    /// A GA4 forwarder on a fresh database with one event waiting, sending to `url`: what it
    /// logs until it says the forward failed (or 10 s passed).
    async fn logs_of_a_ga4_forward_to(url: String) -> String {
        #[derive(Clone, Default)]
        struct Buffer(Arc<Mutex<Vec<u8>>>);
        impl Write for Buffer {
            fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
                crate::sync::lock(&self.0).extend_from_slice(bytes);
                Ok(bytes.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let db = crate::store::connect(&crate::config::DatabaseSettings {
            url: "mem://".to_owned(),
            namespace: "test".to_owned(),
            database: "forward".to_owned(),
            username: None,
            password: None,
            unanswered_exit_secs: 0,
        })
        .await
        .expect("an in-memory database");
        // Forwarding starts from when it is first switched on: switch it on, then record.
        analytics::take_forward_lease(&db, "earlier", Duration::ZERO)
            .await
            .expect("the cursor");
        analytics::record(
            &db,
            analytics::NewAnalyticsEvent {
                name: "page_view".to_owned(),
                properties: json!({}),
                visitor: Some("visitor-1".to_owned()),
                path: Some("/".to_owned()),
                user: None,
                first_touch: None,
            },
        )
        .await
        .expect("an event");
        let target = Target::from_settings(&ForwardSettings {
            provider: Some(ForwardProvider::Ga4),
            url: Some(url),
            key: Some(SECRET.to_owned().into()),
            measurement_id: Some("G-TEST123".to_owned()),
            ..ForwardSettings::default()
        })
        .expect("a GA4 target");

        let buffer = Buffer::default();
        let writer = buffer.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .with_max_level(tracing::Level::TRACE)
            .finish();
        // The test's runtime has one thread, so the forwarding task logs here too.
        let _logging = tracing::subscriber::set_default(subscriber);
        let task = spawn(db, target, Duration::from_millis(10), Duration::ZERO).expect("a client");
        let logs = || String::from_utf8_lossy(&crate::sync::lock(&buffer.0)).into_owned();
        for _ in 0..200 {
            if logs().contains("could not be forwarded") {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        task.abort();
        logs()
    }

    /// A local port nothing listens on.
    fn closed_port() -> u16 {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
        listener.local_addr().expect("its address").port()
    }

    /// A local server that answers every request 500 with an error page quoting its request line.
    fn quoting_server() -> u16 {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
        let port = listener.local_addr().expect("its address").port();
        std::thread::spawn(move || {
            for mut stream in listener.incoming().map_while(Result::ok) {
                let mut request = Vec::new();
                let mut chunk = [0u8; 4096];
                // The head, then the JSON body (read whole, so closing does not reset).
                while let Ok(read @ 1..) = stream.read(&mut chunk) {
                    request.extend_from_slice(&chunk[..read]);
                    let text = String::from_utf8_lossy(&request);
                    if let Some((head, body)) = text.split_once("\r\n\r\n") {
                        let length = head
                            .lines()
                            .find_map(|line| {
                                line.to_lowercase()
                                    .strip_prefix("content-length:")
                                    .map(|n| n.trim().parse().unwrap_or(0))
                            })
                            .unwrap_or(0);
                        if body.len() >= length {
                            break;
                        }
                    }
                }
                let text = String::from_utf8_lossy(&request);
                let page = format!(
                    "<h1>Internal error</h1>{}",
                    text.lines().next().unwrap_or("")
                );
                let _ = write!(
                    stream,
                    "HTTP/1.1 500 Internal Server Error\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{page}",
                    page.len()
                );
            }
        });
        port
    }

    /// The lines of `logs` that name the secret or the failure (the database traces aside).
    fn telling_lines(logs: &str) -> String {
        logs.lines()
            .filter(|line| line.contains(SECRET) || line.contains("could not be forwarded"))
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[tokio::test]
    async fn a_failed_ga4_forward_is_logged_without_its_api_secret() {
        let refused = logs_of_a_ga4_forward_to(format!("http://127.0.0.1:{}", closed_port())).await;
        let answered_500 =
            logs_of_a_ga4_forward_to(format!("http://127.0.0.1:{}", quoting_server())).await;
        for (logs, failure) in [(refused, "/mp/collect"), (answered_500, "answered 500")] {
            let lines = telling_lines(&logs);
            assert!(
                lines.contains("analytics events could not be forwarded")
                    && lines.contains(failure),
                "the failure is logged, saying what failed: {lines}"
            );
            assert!(!logs.contains(SECRET), "{lines}");
        }
    }
}

//! `POST /api/events`: the browser records one analytics event of the spec's list — only those
//! that happen in the browser; sign-ups, payments and the like are recorded by the server itself.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, post, web};
use helpnow_actors::rules::experiments::Visit;
use prometheus::{IntCounterVec, IntGauge};
use serde::Deserialize;
use serde_json::json;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::client::client_key;
use crate::cluster::{Cluster, Limit};
use crate::config::Settings;
use crate::domain::analytics::EventName;
use crate::domain::{VisitorId, journey};
use crate::error::{ApiError, Context};
use crate::store::{self, Db};

const MAX_PROPERTIES_BYTES: usize = 4 * 1024;
const MAX_PATH_CHARS: usize = 512;

/// Page loads one address may have recorded: 300 at once, then five a second (an office behind
/// one address browses far below it; a script that loads pages in a loop is past it at once).
pub const PAGE_VIEWS_PER_ADDRESS: Limit = Limit {
    name: "page-views-address",
    burst: 300,
    period: Duration::from_millis(200),
};
/// Browser events one address may record: a steady minute's worth of browsing (one a second),
/// with room for bursts.
pub const EVENTS_PER_ADDRESS: Limit = Limit {
    name: "events-address",
    burst: 30,
    period: Duration::from_secs(1),
};
/// Page views waiting for their write at once: past it a page view is dropped, not queued, so a
/// flood of page loads cannot grow the process's memory while the store is slow.
pub const PAGE_VIEWS_WAITING: usize = 2_000;

/// What the browser's own analytics may write: a view of each page load and the events of
/// `POST /api/events`, each limited per client address (over every process where they share
/// Redis: `Cluster::allow`), page views through a bounded queue. What is past either is dropped
/// and counted (`helpnow_analytics_dropped_total`), so a client without cookies, or with a new
/// visitor id each time, cannot fill the store or the dashboard with made-up visitors.
#[derive(Clone)]
pub struct BrowserAnalytics {
    cluster: Cluster,
    waiting: Arc<Semaphore>,
    dropped: IntCounterVec,
    queued: IntGauge,
}

/// A page view's place in the queue: held until its write is done.
pub struct Queued {
    _permit: OwnedSemaphorePermit,
    queued: IntGauge,
}

impl Drop for Queued {
    fn drop(&mut self) {
        self.queued.dec();
    }
}

impl BrowserAnalytics {
    pub fn new(cluster: Cluster, metrics: &crate::metrics::Metrics) -> Self {
        Self {
            cluster,
            waiting: Arc::new(Semaphore::new(PAGE_VIEWS_WAITING)),
            dropped: metrics.analytics_dropped.clone(),
            queued: metrics.analytics_queued.clone(),
        }
    }

    fn drop_one(&self, source: &str, reason: &str) {
        self.dropped.with_label_values(&[source, reason]).inc();
    }

    /// A place in the page views' queue, or `None` (counted) when it is full.
    pub fn queue_page_view(&self) -> Option<Queued> {
        match self.waiting.clone().try_acquire_owned() {
            Ok(permit) => {
                self.queued.inc();
                Some(Queued {
                    _permit: permit,
                    queued: self.queued.clone(),
                })
            }
            Err(_) => {
                self.drop_one("page_view", "queue_full");
                None
            }
        }
    }

    /// Whether this address may have one more page view recorded (counted when not).
    pub async fn allow_page_view(&self, address: Option<IpAddr>) -> bool {
        let allowed = self
            .cluster
            .allow_address(PAGE_VIEWS_PER_ADDRESS, address)
            .await;
        if !allowed {
            self.drop_one("page_view", "over_limit");
        }
        allowed
    }

    async fn allow_event(&self, address: Option<IpAddr>) -> bool {
        let allowed = self
            .cluster
            .allow_address(EVENTS_PER_ADDRESS, address)
            .await;
        if !allowed {
            self.drop_one("event", "over_limit");
        }
        allowed
    }
}

#[derive(Deserialize)]
pub struct EventRequest {
    name: String,
    #[serde(default)]
    properties: Option<serde_json::Map<String, serde_json::Value>>,
    #[serde(default)]
    path: Option<String>,
}

// Extractors, one per thing the handler reads: fewer would mean a bag of them.
#[allow(clippy::too_many_arguments)]
#[post("/events")]
pub async fn record_event(
    db: web::Data<Db>,
    settings: web::Data<Settings>,
    limiter: web::Data<BrowserAnalytics>,
    user: crate::auth::MaybeUser,
    journeys: Option<web::Data<store::journeys::JourneyRecorder>>,
    flows: Option<web::Data<crate::flows::FlowLibrary>>,
    req: HttpRequest,
    body: web::Json<EventRequest>,
) -> Result<HttpResponse, ApiError> {
    if !limiter
        .allow_event(client_key(&req, &settings.server.forwarding()))
        .await
    {
        return Err(ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limited",
            "Too many requests. Please try again later.",
        ));
    }
    let body = body.into_inner();
    let name = EventName::parse(&body.name)
        .map_err(|err| ApiError::bad_request("unknown_event", err.to_string()))?;
    if !name.is_reported_by_browser() {
        return Err(ApiError::bad_request(
            "server_event",
            "This event is recorded by the server.",
        ));
    }
    let properties = body.properties.unwrap_or_default();
    if serde_json::Value::Object(properties.clone())
        .to_string()
        .len()
        > MAX_PROPERTIES_BYTES
    {
        return Err(ApiError::bad_request(
            "properties_too_large",
            "Event properties may hold at most 4 KiB.",
        ));
    }
    let properties = kept_properties(properties);
    let path = body.path.as_deref().map(kept_path);
    // A visitor is the `vid` cookie the pages set, as the pages set it; anything else is none.
    let visitor = crate::auth::SessionCookies::read(&req, crate::auth::SessionCookies::visitor)
        .as_deref()
        .and_then(VisitorId::parse)
        .map(VisitorId::into_string);

    // A funnel page's event carries the visitor's experiment arm there (issue 48), decided here:
    // a page cannot name one (`kept_properties` keeps no such field).
    let mut properties = properties;
    let arm = if let (Some(flows), Some(visitor), Some(funnel)) = (
        flows,
        visitor.as_deref(),
        journey::funnel_viewed(name.as_str(), path.as_deref())
            .and_then(crate::funnels::funnel_of_source),
    ) {
        let field = |key: &str| properties.get(key).and_then(serde_json::Value::as_str);
        let (_, arm) = flows.catalog().landing(&Visit {
            funnel,
            campaignid: field("campaignid"),
            keyword: field("keyword"),
            visitor,
        });
        arm
    } else {
        None
    };
    if let (Some(arm), Some(fields)) = (&arm, properties.as_object_mut()) {
        fields.insert("experiment".into(), arm.experiment.clone().into());
        fields.insert("arm".into(), arm.arm.clone().into());
    }
    // A view of a funnel's page is a visitor of that funnel on the dashboard, from the campaign
    // the page's address names (the server's first touch of the visitor wins, if it has one).
    let journey = visitor
        .as_deref()
        .zip(journey::funnel_viewed(name.as_str(), path.as_deref()));
    let journey = journey.map(|(visitor, funnel)| {
        store::journeys::JourneyStep::new(visitor, funnel, journey::Step::Visitors)
            .attribution(Some(journey::campaign(|field| {
                properties.get(field).and_then(serde_json::Value::as_str)
            })))
            .arm(arm.as_ref())
    });
    let id = store::analytics::record(
        &db,
        store::analytics::NewAnalyticsEvent {
            first_touch: None,
            name: name.as_str().to_owned(),
            properties,
            visitor,
            path,
            user: user
                .0
                .as_ref()
                .map(|user| surrealdb::types::RecordId::new("user", user.id.as_str())),
        },
    )
    .await
    .context("cannot store an analytics event")?;
    if let (Some(step), Some(journeys)) = (journey, journeys) {
        journeys.record(step);
    }
    Ok(HttpResponse::Created().json(json!({ "id": id })))
}

/// The properties a browser's event may carry: the campaign fields, and which feature or sidebar
/// (the members' events). Others are dropped, and so is any value with an `@` in it: events never
/// hold an address, whatever a page sends.
fn kept_properties(properties: serde_json::Map<String, serde_json::Value>) -> serde_json::Value {
    let kept = properties
        .into_iter()
        .filter(|(key, value)| {
            (journey::CAMPAIGN_FIELDS.contains(&key.as_str())
                || matches!(key.as_str(), "feature" | "sidebar"))
                && match value {
                    serde_json::Value::String(text) => !text.contains('@') && text.len() <= 200,
                    serde_json::Value::Null
                    | serde_json::Value::Bool(_)
                    | serde_json::Value::Number(_) => true,
                    _ => false,
                }
        })
        .collect();
    serde_json::Value::Object(kept)
}

/// A page's path as an event may keep it: at most 512 characters, and of its query only the
/// campaign's fields ([`journey::CAMPAIGN_FIELDS`], as `journey::campaign` keeps them: no value
/// with an `@`): a query string can carry an email address or a one-time link's secret.
fn kept_path(sent: &str) -> String {
    let sent = sent.split('#').next().unwrap_or_default();
    let (path, query) = sent.split_once('?').unwrap_or((sent, ""));
    let pairs: Vec<(String, String)> = url::form_urlencoded::parse(query.as_bytes())
        .into_owned()
        .collect();
    let campaign = journey::campaign(|field| {
        pairs
            .iter()
            .find(|(key, _)| key == field)
            .map(|(_, value)| value.as_str())
    });
    let mut kept = path.chars().take(MAX_PATH_CHARS).collect::<String>();
    if let Some(fields) = campaign.as_object().filter(|fields| !fields.is_empty()) {
        let mut query = url::form_urlencoded::Serializer::new(String::new());
        for (key, value) in fields {
            query.append_pair(key, value.as_str().unwrap_or_default());
        }
        kept.push('?');
        kept.push_str(&query.finish());
    }
    kept.chars().take(MAX_PATH_CHARS).collect()
}

/// This module's endpoints.
pub fn configure(cfg: &mut actix_web::web::ServiceConfig) {
    cfg.service(record_event);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_views_past_the_queues_room_are_dropped_and_counted() {
        let metrics = crate::metrics::Metrics::new().expect("metrics");
        let browser = BrowserAnalytics::new(Cluster::alone(), &metrics);
        let waiting: Vec<Queued> = (0..PAGE_VIEWS_WAITING)
            .map(|_| browser.queue_page_view().expect("room"))
            .collect();
        assert!(browser.queue_page_view().is_none(), "full");
        let dropped = |reason: &str| {
            metrics
                .analytics_dropped
                .with_label_values(&["page_view", reason])
                .get()
        };
        assert_eq!(dropped("queue_full"), 1);
        assert_eq!(metrics.analytics_queued.get(), PAGE_VIEWS_WAITING as i64);
        drop(waiting);
        assert_eq!(metrics.analytics_queued.get(), 0);
        assert!(
            browser.queue_page_view().is_some(),
            "room again once written"
        );
    }

    #[test]
    fn a_path_keeps_only_the_campaign_of_its_query() {
        assert_eq!(kept_path("/chat-help"), "/chat-help");
        assert_eq!(
            kept_path(
                "/chat-help?keyword=outlook%20email&email=ann%40example.com&campaignid=12345#x"
            ),
            "/chat-help?campaignid=12345&keyword=outlook+email"
        );
        assert_eq!(
            kept_path("/?success=true&jwt=abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG"),
            "/"
        );
        assert_eq!(kept_path("/x?utm_source=a@b.example"), "/x", "no address");
        assert_eq!(kept_path(&"/a".repeat(400)).chars().count(), 512);
    }
}

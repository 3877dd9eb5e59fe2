//! `POST /api/events`: the browser records one analytics event of the spec's list — only those
//! that happen in the browser; sign-ups, payments and the like are recorded by the server itself.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, post, web};
use serde::Deserialize;
use serde_json::json;

use crate::client::{AddressLimiter, client_key};
use crate::config::Settings;
use crate::domain::analytics::EventName;
use crate::domain::journey;
use crate::error::{ApiError, Context};
use crate::store::{self, Db};

const MAX_PROPERTIES_BYTES: usize = 4 * 1024;
const MAX_PATH_CHARS: usize = 512;

/// Events each address may record: a steady minute's worth of browsing, with room for bursts.
pub struct EventLimiter(AddressLimiter);

impl EventLimiter {
    pub fn new() -> Self {
        Self(AddressLimiter::per_minute(60, 30))
    }
}

impl Default for EventLimiter {
    fn default() -> Self {
        Self::new()
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

#[post("/events")]
pub async fn record_event(
    db: web::Data<Db>,
    settings: web::Data<Settings>,
    limiter: web::Data<EventLimiter>,
    user: crate::auth::MaybeUser,
    journeys: Option<web::Data<store::journeys::JourneyRecorder>>,
    req: HttpRequest,
    body: web::Json<EventRequest>,
) -> Result<HttpResponse, ApiError> {
    if !limiter
        .0
        .allow(client_key(&req, &settings.server.forwarding()))
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
    let path = body.path.map(|p| p.chars().take(MAX_PATH_CHARS).collect());
    let visitor = crate::auth::SessionCookies::read(&req, crate::auth::SessionCookies::visitor)
        .map(|value| value.chars().take(64).collect());

    // A view of a funnel's page is a visitor of that funnel on the dashboard, from the campaign
    // the page's address names (the server's first touch of the visitor wins, if it has one).
    let journey = visitor
        .as_deref()
        .zip(journey::funnel_viewed(name.as_str(), path.as_deref()));
    let journey = journey.map(|(visitor, funnel)| {
        store::journeys::JourneyStep::new(visitor, funnel, journey::Step::Visitors).attribution(
            Some(journey::campaign(|field| {
                properties.get(field).and_then(serde_json::Value::as_str)
            })),
        )
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

/// This module's endpoints.
pub fn configure(cfg: &mut actix_web::web::ServiceConfig) {
    cfg.service(record_event);
}

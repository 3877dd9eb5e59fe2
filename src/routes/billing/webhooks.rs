//! The payment provider's webhook (`/api/webhooks/stripe`) and the debug tools' simulated one
//! (`/api/webhook-test.js`).

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, post, web};
use chrono::Utc;
use serde::Deserialize;
use serde_json::json;

use super::{MISSING_SESSION, clean};
use crate::billing::{Billing, BillingError};
use crate::domain::Email;
use crate::error::{ApiError, Context};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WebhookTest {
    #[serde(default, rename = "type")]
    event_type: Option<String>,
    #[serde(default)]
    session_id: Option<String>,
    #[serde(default)]
    payment_session_id: Option<String>,
    #[serde(default)]
    email: Option<String>,
}

/// `POST /api/webhook-test.js` (debug tools, admins only): simulates checkout.session.completed
/// for a checkout started here, through the same event handling as a real webhook.
#[post("/webhook-test.js")]
pub async fn webhook_test(
    billing: web::Data<Billing>,
    _admin: crate::routes::admin::DebugAdmin,
    body: web::Json<WebhookTest>,
) -> Result<HttpResponse, ApiError> {
    let body = body.into_inner();
    if body.event_type.as_deref() != Some("checkout.session.completed") {
        return Err(ApiError::bad_request(
            "unsupported_event",
            "Only checkout.session.completed can be simulated.",
        ));
    }
    let email = Email::parse(body.email.as_deref().unwrap_or_default())
        .map_err(|error| ApiError::bad_request(error.code(), error.to_string()))?;
    let checkout = match (clean(body.payment_session_id), clean(body.session_id)) {
        (Some(id), _) => billing.checkout(&id).await,
        (None, Some(tracking)) => billing.checkout_by_tracking_id(&tracking).await,
        (None, None) => return Err(ApiError::bad_request("missing_session", MISSING_SESSION)),
    }
    .context("cannot read a checkout")?
    .ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "unknown_checkout",
            "Error simulating webhook: no such checkout",
        )
    })?;
    let (event_id, outcome) = billing
        .simulate_checkout_completed(&checkout, &email)
        .await
        .context("Error simulating webhook")?;
    Ok(HttpResponse::Ok().json(json!({ "eventId": event_id, "outcome": outcome })))
}

/// `POST /api/webhooks/stripe`: Stripe's signed events. The signature is checked on the raw body
/// before anything is read; a bad or stale one changes nothing. Each event is handled once by id;
/// a failure answers 500, and a delivery while another holds the event 409, so that Stripe
/// delivers it again.
#[post("/webhooks/stripe")]
pub async fn stripe_webhook(
    req: HttpRequest,
    billing: web::Data<Billing>,
    settings: web::Data<crate::config::Settings>,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    use secrecy::ExposeSecret;
    let Some(secret) = settings
        .stripe
        .webhook_secret
        .as_ref()
        .filter(|_| billing.provider().name() == "stripe")
    else {
        return Err(ApiError::not_found());
    };
    let header = req
        .headers()
        .get("stripe-signature")
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default();
    if let Err(error) = crate::billing::stripe::verify_signature(
        &body,
        header,
        secret.expose_secret(),
        Utc::now().timestamp(),
    ) {
        tracing::warn!(%error, "a Stripe webhook was refused");
        return Err(ApiError::bad_request(
            "invalid_signature",
            format!("Webhook signature check failed: {error}"),
        ));
    }
    let parsed = crate::billing::stripe::parse_event(&body).map_err(|error| {
        // Authentic, so Stripe keeps delivering it: an operator should see why it is refused.
        tracing::warn!(%error, "a signed Stripe event cannot be read");
        ApiError::bad_request("invalid_event", format!("Cannot read the event: {error}"))
    })?;
    let payload: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    let outcome = billing
        .process_event(
            "stripe",
            &parsed.id,
            &parsed.event_type,
            payload,
            parsed.event,
        )
        .await
        .map_err(|error| match error {
            // Another delivery holds the event's lease: Stripe delivers it again later, by which
            // time it is processed (a repeat is acknowledged) or its lease has run out.
            BillingError::EventInFlight(_) => ApiError::new(
                StatusCode::CONFLICT,
                "event_in_flight",
                "This event is being processed by another delivery.",
            ),
            other => ApiError::internal("cannot process a Stripe event", other),
        })?;
    let duplicate = outcome == crate::billing::service::EventOutcome::Duplicate;
    Ok(HttpResponse::Ok().json(json!({ "received": true, "duplicate": duplicate })))
}

//! Stripe webhooks: the `Stripe-Signature` check and the mapping of an event to a `BillingEvent`.
//!
//! Both are pure functions of the raw body, so the route stays thin and the tests need no clock.
//! The signature check is our own rather than async-stripe's, because the crate reads the clock
//! itself. Events are read as plain JSON instead of the crate's typed objects: the typed parser
//! rejects a whole event when an object lacks a field its API version made required, and a
//! webhook endpoint pinned to another API version must not lose payments over that. Only the wire
//! fields below are read, each under its names across API versions.

use chrono::{DateTime, Utc};
use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;
use subtle::ConstantTimeEq;

use crate::domain::billing::{
    BillingEvent, CompletedCheckout, SubscriptionSnapshot, SubscriptionStatus,
};

/// How far a signature's timestamp may be from now, either way: Stripe's own libraries use five
/// minutes, which bounds how long a captured request can be replayed.
pub const SIGNATURE_TOLERANCE_SECS: i64 = 300;

#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    #[error("the Stripe-Signature header is missing")]
    MissingHeader,
    #[error("the Stripe-Signature header is malformed: {0}")]
    MalformedHeader(String),
    #[error("the Stripe-Signature header carries no v1 signature")]
    NoV1Signature,
    #[error("no v1 signature matches the payload signed with the webhook secret")]
    BadSignature,
    #[error(
        "the signature timestamp {timestamp} is more than {SIGNATURE_TOLERANCE_SECS} s away from now ({now})"
    )]
    StaleTimestamp { timestamp: i64, now: i64 },
    #[error("the event is not valid JSON: {0}")]
    InvalidJson(#[from] serde_json::Error),
    #[error("the event's {0} is missing or malformed")]
    InvalidField(String),
}

/// An authentic Stripe event: its envelope, and what it means to the product when it means
/// anything (`event` is `None` for types the product ignores; they are acknowledged all the same).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedEvent {
    pub id: String,
    pub event_type: String,
    pub created: i64,
    pub livemode: bool,
    pub event: Option<BillingEvent>,
}

/// Checks a `Stripe-Signature` header (`t=<secs>,v1=<hex>[,v1=<hex>...][,v0=<hex>]`) against the
/// raw body. Any one matching v1 signature will do: Stripe sends one per active secret while a
/// secret is being rolled. The signature is checked before the timestamp, so `StaleTimestamp`
/// only ever reports an authentic but old (replayed or long-delayed) delivery.
pub fn verify_signature(
    payload: &[u8],
    header: &str,
    secret: &str,
    now: i64,
) -> Result<(), WebhookError> {
    let header = header.trim();
    if header.is_empty() {
        return Err(WebhookError::MissingHeader);
    }
    let mut timestamp = None;
    let mut candidates = Vec::new();
    for part in header.split(',') {
        let (key, value) = part
            .trim()
            .split_once('=')
            .ok_or_else(|| WebhookError::MalformedHeader(format!("`{part}` is not key=value")))?;
        match key {
            "t" => {
                let parsed = value.parse::<i64>().map_err(|_| {
                    WebhookError::MalformedHeader(format!("timestamp `{value}` is not a number"))
                })?;
                if timestamp.replace(parsed).is_some() {
                    return Err(WebhookError::MalformedHeader(
                        "more than one timestamp".to_owned(),
                    ));
                }
            }
            "v1" => candidates.push(value),
            // v0 is Stripe's test-mode legacy scheme, and newer schemes are unknown to us: neither
            // may stand in for a v1 signature.
            _ => {}
        }
    }
    let timestamp =
        timestamp.ok_or_else(|| WebhookError::MalformedHeader("no t= timestamp".to_owned()))?;
    if candidates.is_empty() {
        return Err(WebhookError::NoV1Signature);
    }

    let expected = signature(payload, secret, timestamp);
    // Every candidate is compared, in constant time, so the time taken tells nothing about how
    // close a forged signature came.
    let matched = candidates.iter().fold(false, |matched, candidate| {
        let candidate_matches = decode_hex(candidate)
            .is_some_and(|bytes| bool::from(expected.as_slice().ct_eq(bytes.as_slice())));
        matched | candidate_matches
    });
    if !matched {
        return Err(WebhookError::BadSignature);
    }
    if (now - timestamp).abs() > SIGNATURE_TOLERANCE_SECS {
        return Err(WebhookError::StaleTimestamp { timestamp, now });
    }
    Ok(())
}

/// A valid `Stripe-Signature` header for `payload`, as Stripe would send it (for tests and the
/// debug webhook simulation).
pub fn sign_payload(payload: &[u8], secret: &str, timestamp: i64) -> String {
    format!(
        "t={timestamp},v1={}",
        encode_hex(&signature(payload, secret, timestamp))
    )
}

/// HMAC-SHA256 over `{t}.{payload}`, keyed with the whole secret string (`whsec_...` as is, not
/// decoded).
fn signature(payload: &[u8], secret: &str, timestamp: i64) -> [u8; 32] {
    let mut mac = match Hmac::<Sha256>::new_from_slice(secret.as_bytes()) {
        Ok(mac) => mac,
        // HMAC hashes or pads a key of any length; the error exists only for fixed-key MACs.
        Err(_) => unreachable!("HMAC-SHA256 accepts keys of any length"),
    };
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(payload);
    mac.finalize().into_bytes().into()
}

fn encode_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    bytes
        .iter()
        .flat_map(|byte| {
            [
                DIGITS[usize::from(byte >> 4)],
                DIGITS[usize::from(byte & 0x0f)],
            ]
        })
        .map(char::from)
        .collect()
}

fn decode_hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    text.as_bytes()
        .chunks(2)
        .map(|pair| {
            let digits = std::str::from_utf8(pair).ok()?;
            u8::from_str_radix(digits, 16).ok()
        })
        .collect()
}

/// Reads a (verified) event body. Types the product does not act on, and checkouts that are
/// complete but not yet paid (delayed payment methods, whose money arrives with
/// `checkout.session.async_payment_succeeded`), come back with `event: None`.
pub fn parse_event(payload: &[u8]) -> Result<ParsedEvent, WebhookError> {
    let envelope: Value = serde_json::from_slice(payload)?;
    let id = required_str(&envelope, "id")?.to_owned();
    let event_type = required_str(&envelope, "type")?.to_owned();
    let created = envelope
        .get("created")
        .and_then(Value::as_i64)
        .ok_or_else(|| invalid("created"))?;
    let livemode = envelope
        .get("livemode")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let object = envelope
        .get("data")
        .and_then(|data| data.get("object"))
        .filter(|object| object.is_object())
        .ok_or_else(|| invalid("data.object"))?;

    let event = match event_type.as_str() {
        // A delayed payment method completes the checkout unpaid and reports the money later.
        "checkout.session.completed" | "checkout.session.async_payment_succeeded" => {
            completed_checkout(object, created)?
        }
        "customer.subscription.created" | "customer.subscription.updated" => Some(
            BillingEvent::SubscriptionChanged(subscription_snapshot(object, created, None)?),
        ),
        // A deleted subscription is over, whatever status the object still shows.
        "customer.subscription.deleted" => Some(BillingEvent::SubscriptionChanged(
            subscription_snapshot(object, created, Some(SubscriptionStatus::Canceled))?,
        )),
        "customer.subscription.trial_will_end" => Some(BillingEvent::TrialWillEnd(
            subscription_snapshot(object, created, None)?,
        )),
        "invoice.paid" => Some(BillingEvent::InvoicePaid {
            customer_id: expandable_id(object.get("customer")),
            subscription_id: invoice_subscription(object),
            amount_paid: amount(object, "amount_paid")?,
            billing_reason: object
                .get("billing_reason")
                .and_then(Value::as_str)
                .map(str::to_owned),
        }),
        "invoice.payment_failed" => Some(BillingEvent::InvoicePaymentFailed {
            customer_id: expandable_id(object.get("customer")),
            subscription_id: invoice_subscription(object),
            amount_due: amount(object, "amount_due")?,
        }),
        _ => None,
    };
    Ok(ParsedEvent {
        id,
        event_type,
        created,
        livemode,
        event,
    })
}

/// A paid `checkout.session.completed`. The event's time is the completion time: the trial runs
/// from it however late the event is processed.
fn completed_checkout(session: &Value, created: i64) -> Result<Option<BillingEvent>, WebhookError> {
    let payment_status = session.get("payment_status").and_then(Value::as_str);
    if !matches!(payment_status, Some("paid" | "no_payment_required")) {
        return Ok(None);
    }
    let email = session
        .get("customer_details")
        .and_then(|details| details.get("email"))
        .and_then(Value::as_str)
        .or_else(|| session.get("customer_email").and_then(Value::as_str))
        .filter(|email| !email.is_empty())
        .ok_or_else(|| invalid("data.object.customer_details.email"))?;
    Ok(Some(BillingEvent::CheckoutCompleted(CompletedCheckout {
        provider_session_id: required_str(session, "id")?.to_owned(),
        email: email.to_owned(),
        customer_id: expandable_id(session.get("customer")),
        subscription_id: expandable_id(session.get("subscription")),
        // Set in payment mode only; a subscription's first payment belongs to its invoice.
        payment_intent_id: expandable_id(session.get("payment_intent")),
        // Not in the event: fulfilment asks for the subscription's card.
        card_fingerprint: None,
        completed_at: timestamp(created).ok_or_else(|| invalid("created"))?,
    })))
}

fn subscription_snapshot(
    subscription: &Value,
    event_created: i64,
    status_override: Option<SubscriptionStatus>,
) -> Result<SubscriptionSnapshot, WebhookError> {
    let status = match status_override {
        Some(status) => status,
        // An unknown status must not be guessed at (it could grant or end access): the event is
        // refused, and Stripe keeps retrying it until a release understands it.
        None => subscription
            .get("status")
            .and_then(Value::as_str)
            .and_then(SubscriptionStatus::parse)
            .ok_or_else(|| invalid("data.object.status"))?,
    };
    let first_item = subscription
        .get("items")
        .and_then(|items| items.get("data"))
        .and_then(|data| data.get(0));
    let price_id = first_item
        .and_then(|item| {
            item.get("price")
                .or_else(|| item.get("plan"))
                .and_then(|price| expandable_id(Some(price)))
        })
        .or_else(|| {
            subscription
                .get("plan")
                .and_then(|plan| expandable_id(Some(plan)))
        });
    // Since API 2025-03-31 the period lives on each item; older versions kept it on the
    // subscription.
    let current_period_end = first_item
        .and_then(|item| item.get("current_period_end"))
        .or_else(|| subscription.get("current_period_end"))
        .and_then(Value::as_i64)
        .and_then(timestamp);
    Ok(SubscriptionSnapshot {
        id: required_str(subscription, "id")?.to_owned(),
        customer_id: expandable_id(subscription.get("customer")),
        status,
        price_id,
        current_period_end,
        trial_end: subscription
            .get("trial_end")
            .and_then(Value::as_i64)
            .and_then(timestamp),
        cancel_at_period_end: subscription
            .get("cancel_at_period_end")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        event_created,
    })
}

/// An invoice's subscription: `parent.subscription_details.subscription` since API 2025-03-31,
/// `subscription` before.
fn invoice_subscription(invoice: &Value) -> Option<String> {
    expandable_id(
        invoice
            .get("parent")
            .and_then(|parent| parent.get("subscription_details"))
            .and_then(|details| details.get("subscription")),
    )
    .or_else(|| expandable_id(invoice.get("subscription")))
}

/// The id of a field Stripe sends either as an id or, when expanded, as the object.
fn expandable_id(value: Option<&Value>) -> Option<String> {
    match value? {
        Value::String(id) if !id.is_empty() => Some(id.clone()),
        Value::Object(object) => object.get("id").and_then(Value::as_str).map(str::to_owned),
        _ => None,
    }
}

fn amount(object: &Value, field: &str) -> Result<i64, WebhookError> {
    object
        .get(field)
        .and_then(Value::as_i64)
        .ok_or_else(|| invalid(&format!("data.object.{field}")))
}

fn required_str<'a>(object: &'a Value, field: &str) -> Result<&'a str, WebhookError> {
    object
        .get(field)
        .and_then(Value::as_str)
        .filter(|text| !text.is_empty())
        .ok_or_else(|| invalid(field))
}

fn invalid(field: &str) -> WebhookError {
    WebhookError::InvalidField(field.to_owned())
}

fn timestamp(seconds: i64) -> Option<DateTime<Utc>> {
    DateTime::from_timestamp(seconds, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trips_and_rejects_junk() {
        let bytes = [0x00, 0x7f, 0xab, 0xff];
        assert_eq!(encode_hex(&bytes), "007fabff");
        assert_eq!(decode_hex("007fabff"), Some(bytes.to_vec()));
        assert_eq!(decode_hex("007"), None);
        assert_eq!(decode_hex("zz"), None);
        assert_eq!(decode_hex("é1"), None);
    }

    #[test]
    fn malformed_headers_are_told_apart() {
        let body = b"{}";
        assert!(matches!(
            verify_signature(body, "  ", "s", 0),
            Err(WebhookError::MissingHeader)
        ));
        assert!(matches!(
            verify_signature(body, "t=abc,v1=00", "s", 0),
            Err(WebhookError::MalformedHeader(_))
        ));
        assert!(matches!(
            verify_signature(body, "v1=00", "s", 0),
            Err(WebhookError::MalformedHeader(_))
        ));
        assert!(matches!(
            verify_signature(body, "t=1,t=2,v1=00", "s", 0),
            Err(WebhookError::MalformedHeader(_))
        ));
        assert!(matches!(
            verify_signature(body, "garbage", "s", 0),
            Err(WebhookError::MalformedHeader(_))
        ));
    }

    #[test]
    fn an_event_without_its_envelope_fields_is_refused() {
        assert!(matches!(
            parse_event(b"not json"),
            Err(WebhookError::InvalidJson(_))
        ));
        assert!(matches!(
            parse_event(br#"{"type":"invoice.paid","created":1,"data":{"object":{}}}"#),
            Err(WebhookError::InvalidField(field)) if field == "id"
        ));
        assert!(matches!(
            parse_event(br#"{"id":"evt_1","type":"invoice.paid","created":1}"#),
            Err(WebhookError::InvalidField(field)) if field == "data.object"
        ));
    }

    #[test]
    fn an_unknown_subscription_status_is_refused_rather_than_guessed() {
        let body =
            br#"{"id":"evt_1","type":"customer.subscription.updated","created":1,"livemode":false,
            "data":{"object":{"id":"sub_1","status":"hibernating"}}}"#;
        assert!(matches!(
            parse_event(body),
            Err(WebhookError::InvalidField(field)) if field == "data.object.status"
        ));
    }
}

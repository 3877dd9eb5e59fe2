//! The spec's checkout endpoints (`/api/create-checkout.js`, `/api/checkout-success`,
//! `/api/check-subscription.js`) and the demo checkout's own API. The client says where a checkout
//! comes from; the server decides prices, and only a paid checkout, as the provider reports it,
//! grants anything.

use actix_web::cookie::{Cookie, SameSite, time};
use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, get, post, web};
use chrono::Utc;
use serde::Deserialize;
use serde_json::json;

use crate::auth::{CurrentUser, MaybeUser, SessionCookies};
use crate::billing::demo;
use crate::billing::held::HeldError;
use crate::billing::service::{ConfirmError, SIGN_IN_TOKEN_LIFETIME, StartCheckout};
use crate::billing::{Billing, BillingError, DemoPayError, RefundError, UNIDENTIFIED_CARD_NOTICE};
use crate::domain::billing::{
    Attribution, CheckoutSource, MONTHLY_PRICE_CENTS, REFUNDABLE_FEE_CENTS, TRIAL_DAYS,
};
use crate::domain::{Email, EmailError, VisitorId};
use crate::error::{ApiError, Context};
use crate::store::{self, Db};

pub const MISSING_SESSION: &str = "Missing required session parameters";

/// Set by create-checkout (and a funnel's checkout link): that this browser started the checkout,
/// HttpOnly, for a day. It holds a random secret whose SHA-256 the checkout keeps: only that
/// browser gets the checkout's sign-in cookie on the success page, so a success URL seen
/// elsewhere signs nobody in (its ids are no secret: a cookie holding one could be forged).
pub async fn checkout_start_cookie(
    db: &Db,
    cookies: &SessionCookies,
    tracking_id: &str,
) -> Result<Cookie<'static>, ApiError> {
    let secret = crate::auth::token::new_secret();
    store::billing::mark_started_by(db, tracking_id, crate::auth::token::hash_secret(&secret))
        .await
        .context("cannot mark a checkout's browser")?;
    Ok(Cookie::build(cookies.checkout_start(), secret)
        .path("/")
        .http_only(true)
        .same_site(SameSite::Lax)
        .secure(cookies.secure)
        .max_age(time::Duration::days(1))
        .finish())
}

fn billing_error(context: &str, error: BillingError) -> ApiError {
    match error {
        BillingError::NotFound(_) => ApiError::new(
            StatusCode::NOT_FOUND,
            "unknown_checkout",
            "Error processing checkout success",
        ),
        other => ApiError::internal(context, other),
    }
}

/// Keeps short attribution texts only.
fn clean(value: Option<String>) -> Option<String> {
    value
        .map(|text| text.trim().chars().take(200).collect::<String>())
        .filter(|text| !text.is_empty())
}

/// A path on this site (`/x?y`), or the spec's default: a cancel URL never leaves the site.
fn local_path(value: Option<&str>, public_url: &url::Url) -> String {
    let default = "/?canceled=true".to_owned();
    let Some(value) = value.map(str::trim).filter(|v| !v.is_empty()) else {
        return default;
    };
    let path = match url::Url::parse(value) {
        Ok(absolute) if absolute.origin() == public_url.origin() => path_and_query(&absolute),
        Ok(_) => return default,
        Err(_) => value.to_owned(),
    };
    if is_same_site_path(&path) {
        path
    } else {
        default
    }
}

/// A path a browser resolves on this site: one leading slash, no backslash (browsers read `/\x`
/// as `//x`), no control characters (they strip them, turning `/\t/x` into `//x`).
fn is_same_site_path(path: &str) -> bool {
    path.starts_with('/')
        && !path.starts_with("//")
        && !path.contains('\\')
        && !path.chars().any(char::is_control)
}

fn path_and_query(url: &url::Url) -> String {
    let mut path = url.path().to_owned();
    if let Some(query) = url.query() {
        path.push('?');
        path.push_str(query);
    }
    path
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateCheckoutRequest {
    #[serde(default)]
    source: Option<String>,
    #[serde(default)]
    headline: Option<String>,
    #[serde(default)]
    cancel_url: Option<String>,
    /// This checkout's campaign (`campaignid`, `keyword`, `utm_source`, `utm_medium`,
    /// `utm_campaign`, `gclid`).
    #[serde(flatten)]
    campaign: TouchBody,
    /// The browser's first campaign touch (the spec's `utm_params`), whatever page this is.
    #[serde(default)]
    first_touch: Option<TouchBody>,
    // The spec's client also sends priceId, isTrial, refundableFee, refundableFeePrice and
    // subscriptionPrice. They are accepted and ignored: what is charged is the server's decision.
}

/// A campaign as the browser sends it (a touch's `first_visit_timestamp` is not needed here).
#[derive(Deserialize)]
pub struct TouchBody {
    #[serde(default)]
    campaignid: Option<String>,
    #[serde(default)]
    keyword: Option<String>,
    #[serde(default)]
    utm_source: Option<String>,
    #[serde(default)]
    utm_medium: Option<String>,
    #[serde(default)]
    utm_campaign: Option<String>,
    #[serde(default)]
    gclid: Option<String>,
}

impl TouchBody {
    fn into_attribution(self, headline: Option<String>) -> Attribution {
        Attribution {
            source: None,
            campaignid: clean(self.campaignid),
            keyword: clean(self.keyword),
            headline: clean(headline),
            utm_source: clean(self.utm_source),
            utm_medium: clean(self.utm_medium),
            utm_campaign: clean(self.utm_campaign),
            gclid: clean(self.gclid),
        }
    }
}

/// `POST /api/create-checkout.js` -> `{sessionId, trackingSessionId, url}`.
// Extractors, one per thing the handler reads: fewer would mean a bag of them.
#[allow(clippy::too_many_arguments)]
#[post("/create-checkout.js")]
pub async fn create_checkout(
    req: HttpRequest,
    billing: web::Data<Billing>,
    settings: web::Data<crate::config::Settings>,
    cookies: web::Data<SessionCookies>,
    throttle: web::Data<crate::auth::AuthThrottle>,
    db: web::Data<Db>,
    user: MaybeUser,
    body: web::Json<CreateCheckoutRequest>,
) -> Result<HttpResponse, ApiError> {
    // Every checkout is a call to the payment provider: a client may not spray them.
    if !throttle
        .allow_checkout(crate::client::client_key(
            &req,
            &settings.server.forwarding(),
        ))
        .await
    {
        return Err(ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "too_many_requests",
            "Too many requests. Please try again later.",
        ));
    }
    let body = body.into_inner();
    let source = body
        .source
        .as_deref()
        .and_then(CheckoutSource::parse)
        .ok_or_else(|| {
            ApiError::bad_request(
                "invalid_source",
                "source must be one of help_funnel, chat_funnel, refundable_fee_funnel, chat_trial_prompt, direct_signup",
            )
        })?;
    let visitor_id = req
        .cookie(cookies.visitor())
        .and_then(|cookie| VisitorId::parse(cookie.value()));
    let funnel = match &visitor_id {
        Some(visitor) => crate::funnels::record_for_checkout(&db, visitor, source).await,
        None => None,
    };
    let started = billing
        .start_checkout(StartCheckout {
            source,
            attribution: body.campaign.into_attribution(body.headline),
            user: user.0.map(|user| (user.id, user.email)),
            visitor_id: visitor_id.map(VisitorId::into_string),
            cancel_path: local_path(body.cancel_url.as_deref(), &settings.server.public_url),
            funnel,
            handoff: false,
            first_touch: body.first_touch.map(|touch| touch.into_attribution(None)),
        })
        .await
        .context("cannot start a checkout")?;
    let start_cookie = checkout_start_cookie(&db, &cookies, &started.tracking_id).await?;
    Ok(HttpResponse::Ok().cookie(start_cookie).json(json!({
        "sessionId": started.provider_session_id,
        "trackingSessionId": started.tracking_id,
        "url": started.url,
    })))
}

#[derive(Deserialize)]
pub struct SuccessQuery {
    #[serde(default)]
    session_id: Option<String>,
    #[serde(default)]
    session: Option<String>,
}

/// The cookie that proves a finished checkout to the account-setup endpoints
/// (`SessionCookies::checkout`): a one-time sign-in token, HttpOnly, so no script ever reads it.
fn checkout_cookie(cookies: SessionCookies, secret: String) -> Cookie<'static> {
    let seconds = i64::try_from(SIGN_IN_TOKEN_LIFETIME.as_secs()).unwrap_or(3600);
    Cookie::build(cookies.checkout(), secret)
        .path("/")
        .http_only(true)
        .same_site(SameSite::Lax)
        .secure(cookies.secure)
        .max_age(time::Duration::seconds(seconds))
        .finish()
}

pub fn clear_checkout_cookie(cookies: SessionCookies) -> Cookie<'static> {
    Cookie::build(cookies.checkout(), "")
        .path("/")
        .http_only(true)
        .same_site(SameSite::Lax)
        .secure(cookies.secure)
        .max_age(time::Duration::ZERO)
        .finish()
}

/// `GET /api/checkout-success?session_id=..&session=..`: confirms the payment with the provider,
/// fulfils it if the webhook has not, and hands this browser a one-time sign-in token in an
/// HttpOnly cookie (within the token's hour after payment).
#[get("/checkout-success")]
pub async fn checkout_success(
    req: HttpRequest,
    billing: web::Data<Billing>,
    cookies: web::Data<SessionCookies>,
    viewer: MaybeUser,
    throttle: web::Data<crate::auth::AuthThrottle>,
    settings: web::Data<crate::config::Settings>,
    query: web::Query<SuccessQuery>,
) -> Result<HttpResponse, ApiError> {
    let query = query.into_inner();
    let (session_id, tracking) = (clean(query.session_id), clean(query.session));
    let Some(checkout) = session_id.as_deref().or(tracking.as_deref()) else {
        return Err(ApiError::bad_request("missing_session", MISSING_SESSION));
    };
    // A hit on a checkout not yet fulfilled may ask the provider: no client may spray them (the
    // provider's "not paid" is kept a few seconds per checkout besides). The checkout's own count
    // is per client address too, as the sign-in limits are per account and address: its ids are
    // in the success URL, which others may see, and their hits must not lock the buyer out.
    let address = crate::client::client_key(&req, &settings.server.forwarding());
    let checkout_from_address = match address {
        Some(address) => format!("{checkout} {address}"),
        None => format!("{checkout} unknown"),
    };
    if !throttle
        .allow_checkout_success(&checkout_from_address, address)
        .await
    {
        return Err(ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "too_many_requests",
            "Too many requests. Please try again later.",
        ));
    }
    let start_secret = SessionCookies::read(&req, SessionCookies::checkout_start)
        .filter(|value| crate::auth::token::looks_like_secret(value));
    let started_here = |start_hash: Option<&str>| {
        start_secret
            .zip(start_hash)
            .is_some_and(|(secret, hash)| crate::auth::token::hash_secret(&secret) == hash)
    };
    let paid = match billing
        .checkout_return(
            session_id,
            tracking.as_deref(),
            started_here,
            viewer.0.as_ref().map(|user| user.id.as_str()),
        )
        .await
    {
        Ok(paid) => paid,
        Err(ConfirmError::Unknown) => {
            return Err(ApiError::new(
                StatusCode::NOT_FOUND,
                "unknown_checkout",
                "Error processing checkout success",
            ));
        }
        Err(ConfirmError::NotPaid) => {
            return Err(ApiError::new(
                StatusCode::PAYMENT_REQUIRED,
                "not_paid",
                "Your payment has not been completed. Please try the checkout again.",
            ));
        }
        Err(ConfirmError::Billing(error)) => {
            return Err(billing_error("cannot answer the success page", error));
        }
    };
    let mut response = HttpResponse::Ok();
    if let Some(secret) = paid.sign_in_secret {
        response.cookie(checkout_cookie(**cookies, secret));
    }
    let mut answer = json!({
        "next": paid.next.as_str(),
        "email": paid.email,
        "sessionId": paid.tracking_id,
        "paymentSessionId": paid.provider_session_id,
    });
    if let Some(account) = paid.account {
        answer["hasPassword"] = json!(account.has_password);
        answer["trialActive"] = json!(account.trial_active);
        answer["trialEndDate"] = json!(account.trial_end_date);
    }
    Ok(response.json(answer))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckRequest {
    #[serde(default)]
    user_id: Option<String>,
}

/// `POST /api/check-subscription.js {userId}`: a member's own access; anyone else's id is 404.
#[post("/check-subscription.js")]
pub async fn check_subscription(
    billing: web::Data<Billing>,
    user: CurrentUser,
    body: web::Json<CheckRequest>,
) -> Result<HttpResponse, ApiError> {
    let Some(user_id) = body.into_inner().user_id.filter(|id| !id.trim().is_empty()) else {
        return Err(ApiError::bad_request("missing_user", "No userId provided"));
    };
    if user_id != user.id {
        return Err(ApiError::not_found());
    }
    let check = billing
        .throttled_check(&user.id)
        .await
        .context("cannot check a subscription")?
        .ok_or_else(ApiError::not_found)?;
    Ok(HttpResponse::Ok().json(check))
}

fn demo_only(billing: &Billing) -> Result<(), ApiError> {
    if billing.provider().name() == "demo" {
        Ok(())
    } else {
        Err(ApiError::not_found())
    }
}

async fn demo_checkout_of(
    billing: &Billing,
    id: &str,
) -> Result<store::billing::StoredCheckout, ApiError> {
    demo_only(billing)?;
    billing
        .checkout(id)
        .await
        .context("cannot read a checkout")?
        .filter(|checkout| checkout.provider == "demo")
        .ok_or_else(ApiError::not_found)
}

/// The checkout page's status: `open`, `complete` (paid) or `canceled`.
fn demo_status(checkout: &store::billing::StoredCheckout) -> &'static str {
    if checkout.completed_at.is_some() {
        "complete"
    } else if checkout.status == "canceled" {
        "canceled"
    } else {
        "open"
    }
}

/// A same-site path from an absolute URL of ours (the page navigates to it).
fn as_path(url: &str) -> String {
    url::Url::parse(url)
        .map(|parsed| path_and_query(&parsed))
        .ok()
        .filter(|path| is_same_site_path(path))
        .unwrap_or_else(|| "/".to_owned())
}

#[get("/demo-checkout/{id}")]
pub async fn demo_checkout(
    billing: web::Data<Billing>,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let checkout = demo_checkout_of(&billing, &id).await?;
    Ok(HttpResponse::Ok().json(json!({
        "sessionId": checkout.provider_session_id,
        "status": demo_status(&checkout),
        "email": checkout.email,
        "source": checkout.source,
        "refundableFee": checkout.refundable_fee,
        // A member who had the trial pays the first month today.
        "todayCents": match (checkout.trial_offered, checkout.refundable_fee) {
            (false, _) => MONTHLY_PRICE_CENTS,
            (true, true) => REFUNDABLE_FEE_CENTS,
            (true, false) => 0,
        },
        "trialDays": if checkout.trial_offered { TRIAL_DAYS } else { 0 },
        "monthlyCents": MONTHLY_PRICE_CENTS,
        // Beside the pay button of a trial checkout, as on Stripe's page.
        "cardNotice": checkout.trial_offered.then_some(UNIDENTIFIED_CARD_NOTICE),
        "cancelUrl": as_path(&checkout.cancel_url),
    })))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DemoPayment {
    #[serde(default)]
    email: Option<String>,
    #[serde(default)]
    card_number: Option<String>,
}

/// The demo's "payment": records it on the checkout, then hands the provider's events to the same
/// handling as Stripe's webhook (checkout completed, subscription created in trial).
#[post("/demo-checkout/{id}/complete")]
pub async fn complete_demo_checkout(
    billing: web::Data<Billing>,
    id: web::Path<String>,
    body: web::Json<DemoPayment>,
) -> Result<HttpResponse, ApiError> {
    let checkout = demo_checkout_of(&billing, &id).await?;
    let redirect = as_path(
        &checkout
            .success_url
            .replace("{CHECKOUT_SESSION_ID}", &checkout.provider_session_id),
    );
    if checkout.completed_at.is_some() {
        return Ok(HttpResponse::Ok().json(json!({ "redirect": redirect })));
    }
    if checkout.status == "canceled" {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "checkout_closed",
            "This checkout was canceled. Please start again.",
        ));
    }
    let body = body.into_inner();
    // A checkout started signed in pays for that account: its address is fixed, as on Stripe's
    // page when the checkout names the customer's email.
    let typed = checkout
        .email
        .as_deref()
        .filter(|email| checkout.user_id.is_some() && !email.is_empty())
        .or(body.email.as_deref());
    let email = Email::parse(typed.unwrap_or_default()).map_err(|error| match error {
        EmailError::Missing | EmailError::Invalid => {
            ApiError::bad_request("invalid_email", "Please enter a valid email address.")
        }
    })?;
    match billing
        .pay_demo_checkout(
            &checkout,
            &email,
            body.card_number.as_deref().unwrap_or_default(),
        )
        .await
    {
        Ok(()) => {}
        Err(DemoPayError::Card(error)) => {
            let status = if error == demo::CardError::Declined {
                StatusCode::PAYMENT_REQUIRED
            } else {
                StatusCode::BAD_REQUEST
            };
            return Err(ApiError::new(status, error.code(), error.to_string()));
        }
        Err(DemoPayError::Billing(error)) => {
            return Err(ApiError::internal("cannot take a demo payment", error));
        }
    }
    Ok(HttpResponse::Ok().json(json!({ "redirect": redirect })))
}

#[post("/demo-checkout/{id}/cancel")]
pub async fn cancel_demo_checkout(
    billing: web::Data<Billing>,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let checkout = demo_checkout_of(&billing, &id).await?;
    billing
        .cancel_demo_checkout(&checkout.provider_session_id)
        .await
        .context("cannot cancel a checkout")?;
    Ok(HttpResponse::Ok().json(json!({ "redirect": as_path(&checkout.cancel_url) })))
}

/// The billing endpoints under `/api`; the demo checkout's only while it is the provider.
pub fn configure(cfg: &mut actix_web::web::ServiceConfig, demo_payments: bool) {
    cfg.service(create_checkout)
        .service(checkout_success)
        .service(check_subscription)
        .service(webhook_test)
        .service(stripe_webhook)
        .service(portal)
        .service(refund_fee)
        .service(cancel_subscription)
        .service(held_payments)
        .service(claim_held_payment)
        .service(decline_held_payment);
    if demo_payments {
        cfg.service(demo_checkout)
            .service(complete_demo_checkout)
            .service(cancel_demo_checkout);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cancel_urls_stay_on_the_site() {
        let public: url::Url = "https://help.example".parse().expect("url");
        assert_eq!(local_path(None, &public), "/?canceled=true");
        assert_eq!(
            local_path(Some("/chat-help?x=1"), &public),
            "/chat-help?x=1"
        );
        assert_eq!(
            local_path(Some("https://help.example/get-help?k=a"), &public),
            "/get-help?k=a"
        );
        for hostile in [
            "https://evil.example/",
            "//evil.example",
            "javascript:alert(1)",
            "/\\evil.example",
            "https://help.example//evil.example",
            "/\t/evil.example",
        ] {
            assert_eq!(
                local_path(Some(hostile), &public),
                "/?canceled=true",
                "{hostile}"
            );
        }
    }
}

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

/// `POST /api/billing/portal` -> `{url}`: where a member manages or cancels the subscription.
#[post("/billing/portal")]
pub async fn portal(
    billing: web::Data<Billing>,
    settings: web::Data<crate::config::Settings>,
    user: CurrentUser,
) -> Result<HttpResponse, ApiError> {
    let return_url = settings.server.public_url.join("/").context("portal")?;
    let Some(url) = billing
        .portal_url(&user.id, return_url.as_str())
        .await
        .context("cannot open the billing portal")?
    else {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "no_subscription",
            "There is no subscription on this account yet.",
        ));
    };
    Ok(HttpResponse::Ok().json(json!({ "url": url })))
}

/// `POST /api/billing/cancel`: cancels the member's subscription at the end of its period (cancel
/// anytime; access lasts until then). The change is recorded as a payment event, like any other.
#[post("/billing/cancel")]
pub async fn cancel_subscription(
    billing: web::Data<Billing>,
    user: CurrentUser,
) -> Result<HttpResponse, ApiError> {
    let Some(canceled) = billing
        .cancel_subscription(&user.id)
        .await
        .context("cannot cancel a subscription")?
    else {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "no_subscription",
            "There is no active subscription on this account.",
        ));
    };
    let ends = canceled.access_until;
    Ok(HttpResponse::Ok().json(json!({
        "cancelAtPeriodEnd": true,
        "accessUntil": ends,
        "message": "Your subscription is canceled. You keep access until the end of the current period, and nothing more is charged.",
    })))
}

/// `POST /api/billing/refund-fee`: pays back the $1 setup fee of the member's latest checkout, once.
#[post("/billing/refund-fee")]
pub async fn refund_fee(
    billing: web::Data<Billing>,
    user: CurrentUser,
) -> Result<HttpResponse, ApiError> {
    match billing.refund_fee(&user.id).await {
        Ok(()) => {}
        Err(RefundError::NothingToRefund) => {
            return Err(ApiError::new(
                StatusCode::NOT_FOUND,
                "nothing_to_refund",
                "There is no setup fee to refund on this account.",
            ));
        }
        Err(RefundError::AlreadyRefunded) => {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                "already_refunded",
                "Your $1 setup fee was already refunded. It reaches your card in 5-7 business days.",
            ));
        }
        Err(RefundError::Billing(error)) => {
            return Err(ApiError::internal("cannot refund the fee", error));
        }
    }
    Ok(HttpResponse::Ok().json(json!({
        "message": "Your $1 setup fee has been refunded. It reaches your card in 5-7 business days."
    })))
}

/// The held payments of an account are its address's owner's: a session whose holder has not
/// proved the address (a sign-up with someone's address, say) sees none and settles none. The
/// owner proves it with the link mailed with the payment.
fn held_for_prover(user: &CurrentUser) -> Result<(), HeldError> {
    if user.holds_proved_address() {
        Ok(())
    } else {
        Err(HeldError::NotHeld)
    }
}

/// `GET /api/billing/held`: payments made signed out with the member's address, waiting for the
/// member to add them to the account or decline them. Before the session's holder proved the
/// address, none is shown (`held: []`), and `waitingForProof` says whether some wait: the page
/// then points to the link mailed with the payment, which proves it.
#[get("/billing/held")]
pub async fn held_payments(
    billing: web::Data<Billing>,
    user: CurrentUser,
) -> Result<HttpResponse, ApiError> {
    let held = billing
        .held_payments(&user.id)
        .await
        .context("cannot read held payments")?;
    if !user.holds_proved_address() {
        return Ok(HttpResponse::Ok().json(json!({
            "held": [],
            "waitingForProof": !held.is_empty(),
        })));
    }
    Ok(HttpResponse::Ok().json(json!({ "held": held, "waitingForProof": false })))
}

/// `POST /api/billing/held/{id}/claim`: the member adds a held payment to the account.
#[post("/billing/held/{id}/claim")]
pub async fn claim_held_payment(
    billing: web::Data<Billing>,
    user: CurrentUser,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    held_for_prover(&user).map_err(held_error)?;
    billing
        .claim_held(&user.id, &id)
        .await
        .map_err(held_error)?;
    let check = billing
        .check(&user.id)
        .await
        .context("cannot read access")?;
    Ok(HttpResponse::Ok().json(json!({
        "message": "The payment was added to your account.",
        "access": check,
    })))
}

/// `POST /api/billing/held/{id}/decline`: the member did not make this payment: its subscription
/// is canceled and its setup fee refunded to whoever paid.
#[post("/billing/held/{id}/decline")]
pub async fn decline_held_payment(
    billing: web::Data<Billing>,
    user: CurrentUser,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    held_for_prover(&user).map_err(held_error)?;
    billing
        .decline_held(&user.id, &id, "declined by the owner")
        .await
        .map_err(held_error)?;
    Ok(HttpResponse::Ok().json(json!({
        "message": "The payment was canceled and refunded. Nothing in your account changed."
    })))
}

fn held_error(error: HeldError) -> ApiError {
    match error {
        HeldError::NotHeld => ApiError::new(
            StatusCode::NOT_FOUND,
            "not_held",
            "This payment is no longer waiting: it was added or canceled already.",
        ),
        HeldError::Billing(error) => ApiError::internal("cannot settle a held payment", error),
    }
}

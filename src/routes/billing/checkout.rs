//! The spec's checkout endpoints (`/api/create-checkout.js`, `/api/checkout-success`,
//! `/api/check-subscription.js`), the cookie that marks the browser that started a checkout and
//! the one the success page hands it.

use actix_web::cookie::{Cookie, SameSite, time};
use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, get, post, web};
use helpnow_actors::rules::experiments::Visit;
use serde::Deserialize;
use serde_json::json;

use super::{MISSING_SESSION, clean, is_same_site_path, path_and_query};
use crate::auth::{CurrentUser, MaybeUser, SessionCookies};
use crate::billing::service::{ConfirmError, SIGN_IN_TOKEN_LIFETIME, StartCheckout};
use crate::billing::{Billing, BillingError};
use crate::domain::VisitorId;
use crate::domain::billing::{Attribution, CheckoutSource};
use crate::error::{ApiError, Context};
use crate::store::{self, Db};

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
    flows: web::Data<crate::flows::FlowLibrary>,
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
    let campaign = body.campaign.into_attribution(body.headline);
    // The visitor's experiment arm in the funnel the checkout is of (issue 48).
    let arm = match (&visitor_id, crate::funnels::funnel_of_source(source)) {
        (Some(visitor), Some(kind)) => {
            flows
                .catalog()
                .landing(&Visit {
                    funnel: kind,
                    campaignid: campaign.campaignid.as_deref(),
                    keyword: campaign.keyword.as_deref(),
                    visitor: visitor.as_str(),
                })
                .1
        }
        _ => None,
    };
    let started = billing
        .start_checkout(StartCheckout {
            source,
            attribution: campaign,
            user: user.0.map(|user| (user.id, user.email)),
            visitor_id: visitor_id.map(VisitorId::into_string),
            cancel_path: local_path(body.cancel_url.as_deref(), &settings.server.public_url),
            funnel,
            handoff: false,
            first_touch: body.first_touch.map(|touch| touch.into_attribution(None)),
            arm,
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
    req: HttpRequest,
    db: web::Data<Db>,
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
    // The spec's webhook_debug row (the checkout debug page); the check answers without it.
    if let Err(error) = store::billing::record_check(&db, &user.id, debug_check_of(&req)).await {
        tracing::warn!(%error, "a subscription check's debug row could not be written");
    }
    let check = billing
        .throttled_check(&user.id)
        .await
        .context("cannot check a subscription")?
        .ok_or_else(ApiError::not_found)?;
    Ok(HttpResponse::Ok().json(check))
}

/// What the spec's `webhook_debug` keeps of a subscription check's request: the browser's user
/// agent, the page's origin (the Origin header) and path (the Referer's, never its query, which
/// can carry a one-time link's secret), each cut short.
fn debug_check_of(req: &HttpRequest) -> store::billing::NewDebugCheck {
    let header = |name: actix_web::http::header::HeaderName| {
        req.headers()
            .get(name)
            .and_then(|value| value.to_str().ok())
            .map(|value| value.chars().take(300).collect::<String>())
    };
    let pathname = header(actix_web::http::header::REFERER)
        .and_then(|referer| url::Url::parse(&referer).ok())
        .map(|url| url.path().chars().take(300).collect());
    store::billing::NewDebugCheck {
        user_agent: header(actix_web::http::header::USER_AGENT),
        origin: header(actix_web::http::header::ORIGIN),
        pathname,
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

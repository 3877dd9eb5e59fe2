//! The funnels' HTTP endpoints: the help funnel's summary and intro (`POST /api/funnels/help`)
//! and the one-time link a chat funnel's checkout reaches the browser by
//! (`GET /api/funnels/checkout/{secret}`).

use std::sync::Arc;

use actix_web::http::{StatusCode, header};
use actix_web::{HttpRequest, HttpResponse, get, post, web};
use chrono::Utc;
use helpnow_actors::funnel::{Attribution, CHECKOUT_FALLBACK_URL};
use helpnow_actors::ports::Ai;
use helpnow_actors::rules::experiments::Visit;
use helpnow_actors::rules::text::clean_query_value;
use serde::Deserialize;
use serde_json::json;

use crate::auth::{SessionCookies, token};
use crate::client::{AddressLimiter, client_key};
use crate::config::Settings;
use crate::domain::VisitorId;
use crate::domain::billing::CheckoutSource;
use crate::domain::journey::Step;
use crate::error::ApiError;
use crate::funnels::help;
use crate::routes::billing::checkout_start_cookie;
use crate::store::{self, Db};

/// How long a checkout's one-time link works (the provider's sessions last longer).
const HANDOFF_LIFETIME: chrono::TimeDelta = chrono::TimeDelta::hours(1);

/// Each help request is two AI calls: an address gets a few a minute.
pub struct HelpLimiter(AddressLimiter);

impl HelpLimiter {
    pub fn new() -> Self {
        Self(AddressLimiter::per_minute(10, 5))
    }
}

impl Default for HelpLimiter {
    fn default() -> Self {
        Self::new()
    }
}

/// The AI provider, shared by every AI call of the server.
#[derive(Clone)]
pub struct AiProvider(pub Arc<dyn Ai>);

#[derive(Deserialize)]
pub struct HelpRequest {
    #[serde(default)]
    issue: Option<String>,
    #[serde(default)]
    keyword: Option<String>,
    #[serde(default)]
    campaignid: Option<String>,
    #[serde(default)]
    utm_source: Option<String>,
    #[serde(default)]
    utm_medium: Option<String>,
    #[serde(default)]
    utm_campaign: Option<String>,
    #[serde(default)]
    gclid: Option<String>,
}

fn clean(value: Option<&str>) -> Option<String> {
    value.and_then(clean_query_value)
}

/// `POST /api/funnels/help` `{issue, keyword?, campaignid?, utm_*?, gclid?}` ->
/// `{summary, intro, aiEvents?}`. The visitor's help funnel record is stored for the checkout.
#[post("/funnels/help")]
pub async fn help_answer(
    req: HttpRequest,
    db: web::Data<Db>,
    settings: web::Data<Settings>,
    ai: web::Data<AiProvider>,
    limiter: web::Data<HelpLimiter>,
    flows: web::Data<crate::flows::FlowLibrary>,
    body: web::Json<HelpRequest>,
) -> Result<HttpResponse, ApiError> {
    let body = body.into_inner();
    let issue: String = body
        .issue
        .as_deref()
        .map(str::trim)
        .unwrap_or_default()
        .chars()
        .take(help::MAX_ISSUE_CHARS)
        .collect();
    if issue.is_empty() {
        return Err(ApiError::bad_request(
            "issue_required",
            "Please describe your issue so we can help.",
        ));
    }
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
    let attribution = Attribution {
        campaignid: clean(body.campaignid.as_deref()),
        keyword: clean(body.keyword.as_deref()),
        utm_source: clean(body.utm_source.as_deref()),
        utm_medium: clean(body.utm_medium.as_deref()),
        utm_campaign: clean(body.utm_campaign.as_deref()),
        gclid: clean(body.gclid.as_deref()),
    };
    let visitor = SessionCookies::read(&req, SessionCookies::visitor)
        .and_then(|value| VisitorId::parse(&value));
    // The intro shown when the AI's is unusable is the routed flow's (issue 47), or the flow
    // version of the visitor's experiment arm (issue 48).
    let default_intro = flows
        .catalog()
        .choose_for(&Visit {
            funnel: helpnow_actors::rules::FunnelKind::Help,
            campaignid: attribution.campaignid.as_deref(),
            keyword: attribution.keyword.as_deref(),
            visitor: visitor.as_ref().map_or("", VisitorId::as_str),
        })
        .map(|(_, script, _)| {
            helpnow_actors::rules::scripts::render(
                &script.help_intro,
                &helpnow_actors::rules::scripts::ScriptContext {
                    assistant: &settings.product.assistant_name,
                    product: &settings.product.name,
                    keyword: None,
                },
            )
        });
    let answer = help::answer(ai.0.clone(), &issue, default_intro).await;
    let headline = help::headline(&attribution);
    if let Some(visitor) = &visitor {
        let record = answer.record(&issue, &headline, &attribution, Utc::now());
        let stored = async {
            store::funnels::touch_visitor(&db, visitor, &attribution).await?;
            store::funnels::save_help_record(&db, visitor, &headline, &attribution, &record).await
        };
        if let Err(error) = stored.await {
            // Step 2 still shows; the checkout then goes without the record.
            tracing::warn!(%error, "a help funnel record could not be stored");
        }
        // The help form's issue is its first and final message: the answer shows the offer.
        let step = |step| {
            store::journeys::JourneyStep::new(visitor.as_str(), CheckoutSource::HelpFunnel, step)
        };
        store::journeys::record_logged(
            &db,
            vec![
                step(Step::Visitors).attribution(serde_json::to_value(&attribution).ok()),
                step(Step::FirstMessage),
                step(Step::FinalMessage),
            ],
        )
        .await;
    }
    let event = store::analytics::NewAnalyticsEvent {
        first_touch: None,
        name: "issue_submission".to_owned(),
        properties: json!({
            "funnel": "help_funnel",
            "keyword": attribution.keyword,
            "campaignid": attribution.campaignid,
            "summarised": answer.summary.is_some(),
            "introStyle": answer.intro_style,
        }),
        visitor: visitor.map(VisitorId::into_string),
        path: None,
        user: None,
    };
    if let Err(error) = store::analytics::record(&db, event).await {
        tracing::warn!(%error, "an issue_submission event could not be stored");
    }
    let mut response = json!({ "summary": answer.summary, "intro": answer.intro });
    if settings.security.debug_tools {
        response["aiEvents"] = json!(answer.ai_events);
    }
    Ok(HttpResponse::Ok().json(response))
}

fn see_other(location: &str) -> actix_web::HttpResponseBuilder {
    let mut response = HttpResponse::SeeOther();
    response
        .insert_header((header::LOCATION, location.to_owned()))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header((header::REFERRER_POLICY, "no-referrer"));
    response
}

/// `GET /api/funnels/checkout/{secret}`: marks this browser as the one that started the checkout
/// (only on the link's first use) and sends it to the provider's page. An unknown or expired
/// link goes to the spec's checkout fallback.
#[get("/funnels/checkout/{secret}")]
pub async fn checkout_handoff(
    db: web::Data<Db>,
    cookies: web::Data<SessionCookies>,
    secret: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let secret = secret.into_inner();
    if !token::looks_like_secret(&secret) {
        return Ok(see_other(CHECKOUT_FALLBACK_URL).finish());
    }
    // A page navigation: even a store failure ends on the spec's fallback page, not an error body.
    let found = match store::billing::claim_handoff(&db, &token::hash_secret(&secret)).await {
        Ok(found) => found,
        Err(error) => {
            tracing::error!(%error, "cannot read a checkout link");
            return Ok(see_other(CHECKOUT_FALLBACK_URL).finish());
        }
    };
    let Some(checkout) = found.filter(|c| Utc::now() - c.created_at < HANDOFF_LIFETIME) else {
        return Ok(see_other(CHECKOUT_FALLBACK_URL).finish());
    };
    let Some(url) = checkout.url else {
        return Ok(see_other(CHECKOUT_FALLBACK_URL).finish());
    };
    let mut response = see_other(&url);
    if checkout.first_use {
        match checkout_start_cookie(&db, &cookies, &checkout.tracking_id).await {
            Ok(cookie) => {
                response.cookie(cookie);
            }
            // The buyer still pays; the sign-in link in the welcome mail stands in.
            Err(error) => tracing::error!(?error, "cannot mark a checkout's browser"),
        }
    }
    Ok(response.finish())
}

/// This module's endpoints.
pub fn configure(cfg: &mut actix_web::web::ServiceConfig) {
    cfg.service(help_answer).service(checkout_handoff);
}

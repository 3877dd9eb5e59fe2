//! The demo checkout's own API (`/api/demo-checkout/{id}`): the page the built-in demo provider
//! sends a buyer to, its "payment" and its cancel. Registered only while the demo is the provider.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, get, post, web};
use serde::Deserialize;
use serde_json::json;

use super::{is_same_site_path, path_and_query};
use crate::billing::demo;
use crate::billing::{Billing, DemoPayError, UNIDENTIFIED_CARD_NOTICE};
use crate::domain::billing::{MONTHLY_PRICE_CENTS, REFUNDABLE_FEE_CENTS, TRIAL_DAYS};
use crate::domain::{Email, EmailError};
use crate::error::{ApiError, Context};
use crate::store;

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

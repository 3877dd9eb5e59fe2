//! A member's billing actions (`/api/billing/portal`, `/cancel`, `/refund-fee`).

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, post, web};
use serde_json::json;

use crate::auth::CurrentUser;
use crate::billing::{Billing, RefundError};
use crate::error::{ApiError, Context};

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

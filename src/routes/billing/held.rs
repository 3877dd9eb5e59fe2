//! Payments held for an account's owner (`/api/billing/held`): the list, and the owner's claim or
//! decline of one.

use actix_web::{HttpResponse, get, post, web};
use serde_json::json;

use crate::auth::CurrentUser;
use crate::billing::Billing;
use crate::billing::held::HeldError;
use crate::error::{ApiError, Context};

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
    held_for_prover(&user).map_err(ApiError::from)?;
    billing
        .claim_held(&user.id, &id)
        .await
        .map_err(ApiError::from)?;
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
    held_for_prover(&user).map_err(ApiError::from)?;
    billing
        .decline_held(&user.id, &id, "declined by the owner")
        .await
        .map_err(ApiError::from)?;
    Ok(HttpResponse::Ok().json(json!({
        "message": "The payment was canceled and refunded. Nothing in your account changed."
    })))
}

//! `/api/admin/checkout-debug*`: the checkout debug page's data and actions. Only with
//! `security.debug_tools` on and only for accounts in `admin.emails`; everyone else gets 404.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, get, post, web};
use serde::Deserialize;
use serde_json::json;

use crate::auth::MaybeUser;
use crate::config::Settings;
use crate::domain::Email;
use crate::error::{ApiError, Context};
use crate::mail::Mailer;
use crate::routes::auth::send_reset_mail;
use crate::routes::billing::require_debug_admin;
use crate::store::{self, Db};

const LIST_LIMIT: usize = 25;

/// Recent checkouts, accounts, and the last hour's payment events.
#[get("/admin/checkout-debug")]
pub async fn overview(
    db: web::Data<Db>,
    settings: web::Data<Settings>,
    user: MaybeUser,
) -> Result<HttpResponse, ApiError> {
    require_debug_admin(&db, &settings, user.0.as_ref()).await?;
    let checkouts = store::billing::recent_checkouts(&db, LIST_LIMIT)
        .await
        .context("debug: checkouts")?;
    let users = store::users::recent_users(&db, LIST_LIMIT)
        .await
        .context("debug: users")?;
    let events = store::billing::recent_events(&db)
        .await
        .context("debug: events")?;
    let checkouts: Vec<serde_json::Value> = checkouts
        .into_iter()
        .map(|checkout| {
            json!({
                "provider": checkout.provider,
                "paymentSessionId": checkout.provider_session_id,
                "sessionId": checkout.tracking_id,
                "source": checkout.source,
                "status": checkout.status,
                "email": checkout.email,
                "userId": checkout.user_id,
                "refundableFee": checkout.refundable_fee,
                "createdAt": checkout.created_at,
                "completedAt": checkout.completed_at,
                "fulfilledAt": checkout.fulfilled_at,
            })
        })
        .collect();
    Ok(HttpResponse::Ok().json(json!({
        "checkouts": checkouts,
        "users": users,
        "webhookEvents": events,
    })))
}

#[derive(Deserialize)]
pub struct EmailRequest {
    #[serde(default)]
    email: Option<String>,
}

/// Creates an account without a password and mails it a link to choose one; an address that
/// already has an account gets the reset mail instead.
#[post("/admin/checkout-debug/accounts")]
pub async fn create_account(
    db: web::Data<Db>,
    settings: web::Data<Settings>,
    mailer: web::Data<Mailer>,
    user: MaybeUser,
    body: web::Json<EmailRequest>,
) -> Result<HttpResponse, ApiError> {
    require_debug_admin(&db, &settings, user.0.as_ref()).await?;
    let raw = body.into_inner().email.unwrap_or_default();
    if raw.trim().is_empty() {
        return Err(ApiError::bad_request(
            "email_required",
            "Email is required to create an account",
        ));
    }
    let email = Email::parse(&raw)
        .map_err(|error| ApiError::bad_request(error.code(), error.to_string()))?;
    let (id, created) = match store::users::create(&db, &email, None).await {
        Ok(id) => (id, true),
        Err(store::users::CreateUserError::EmailTaken) => {
            let existing = store::users::credentials_by_email(&db, &email)
                .await
                .context("debug: account")?
                .ok_or_else(|| ApiError::internal("debug: account", "vanished"))?;
            (existing.id, false)
        }
        Err(error) => return Err(ApiError::internal("Account creation failed", error)),
    };
    send_reset_mail(&db, &settings, &mailer, &id, &email).await?;
    let message = if created {
        format!("Account created for {email}; a link to choose a password was mailed.")
    } else {
        format!(
            "Account creation failed: {email} already has an account, so a password reset mail was sent."
        )
    };
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok(HttpResponse::build(status)
        .json(json!({ "created": created, "userId": id, "message": message })))
}

/// Mails a password reset link to an account.
#[post("/admin/checkout-debug/reset")]
pub async fn reset_account(
    db: web::Data<Db>,
    settings: web::Data<Settings>,
    mailer: web::Data<Mailer>,
    user: MaybeUser,
    body: web::Json<EmailRequest>,
) -> Result<HttpResponse, ApiError> {
    require_debug_admin(&db, &settings, user.0.as_ref()).await?;
    let email = Email::parse(body.into_inner().email.as_deref().unwrap_or_default())
        .map_err(|error| ApiError::bad_request(error.code(), error.to_string()))?;
    let account = store::users::credentials_by_email(&db, &email)
        .await
        .context("debug: account")?
        .ok_or_else(|| {
            ApiError::new(
                StatusCode::NOT_FOUND,
                "user_not_found",
                crate::routes::auth::NO_ACCOUNT_FOR_RESET,
            )
        })?;
    send_reset_mail(&db, &settings, &mailer, &account.id, &email).await?;
    Ok(HttpResponse::Ok()
        .json(json!({ "message": format!("A password reset mail was sent to {email}.") })))
}

/// This module's endpoints.
pub fn configure(cfg: &mut actix_web::web::ServiceConfig) {
    cfg.service(overview)
        .service(create_account)
        .service(reset_account);
}

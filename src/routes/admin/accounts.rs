//! `/api/admin/accounts` and `/api/admin/held`: an account looked up before it is deleted, and the payments held for their owners (issue 52).

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, get, post, web};
use chrono::{DateTime, Utc};
use serde_json::json;

use super::{Admin, EmailRequest};
use crate::billing::Billing;
use crate::billing::held::remind_held;
use crate::billing::service::SubscriptionCheck;
use crate::config::Settings;
use crate::domain::billing::MONTHLY_PRICE_CENTS;
use crate::error::{ApiError, Context};
use crate::mail::Mailer;
use crate::store::{self, Db};

/// A day as the admin page shows it.
fn day(time: DateTime<Utc>) -> String {
    time.format("%Y-%m-%d").to_string()
}

/// What an account pays for, in a word (`plan`) and as the page says it (`planLabel`), from its
/// access as the members page computes it.
fn plan_of(check: Option<&SubscriptionCheck>) -> (&'static str, String) {
    let price = format!("${}/month", MONTHLY_PRICE_CENTS / 100);
    let Some(check) = check else {
        return ("none", "No subscription".to_owned());
    };
    let subscription = check.subscription.as_ref();
    let canceled = subscription.is_some_and(|sub| sub.cancel_at_period_end);
    let then_canceled = if canceled { ", then canceled" } else { "" };
    let period_end = subscription.and_then(|sub| sub.current_period_end);
    if check.trial_active {
        let until = check.trial_end_date.map(day).unwrap_or_default();
        return ("trial", format!("Free trial until {until}{then_canceled}"));
    }
    if check.has_active_subscription {
        if subscription.is_some_and(|sub| sub.status == "trialing") {
            let label = match period_end {
                Some(end) => format!("Free trial until {}{then_canceled}", day(end)),
                None => format!("Free trial{then_canceled}"),
            };
            return ("trial", label);
        }
        let label = match period_end {
            Some(end) if canceled => format!("Subscribed ({price}) until {}, canceled", day(end)),
            _ => format!("Subscribed ({price})"),
        };
        return ("subscribed", label);
    }
    match subscription.map(|sub| sub.status.as_str()) {
        None | Some("canceled" | "incomplete_expired") => ("none", "No subscription".to_owned()),
        Some(status) => (
            "no_access",
            format!(
                "Subscription {} ({price}): no access",
                status.replace('_', " ")
            ),
        ),
    }
}

/// `GET /api/admin/accounts?email=`: the account with that address, as the delete form shows it
/// before asking to delete it: `{email, createdAt, plan, planLabel, trialEndDate,
/// currentPeriodEnd, subscriptionStatus}`. `plan`: `trial`, `subscribed`, `no_access` (a
/// subscription past due, unpaid, incomplete or paused) or `none`. 400 as the delete for a missing
/// or bad address, 404 `user_not_found`.
#[get("/admin/accounts")]
pub async fn find_account(
    db: web::Data<Db>,
    _admin: Admin,
    query: web::Query<EmailRequest>,
) -> Result<HttpResponse, ApiError> {
    let email = query
        .into_inner()
        .email("Enter the email address of the account to delete.")?;
    let account = store::users::account_since(&db, email.as_str())
        .await
        .context("accounts: account")?
        .ok_or_else(|| {
            ApiError::new(
                StatusCode::NOT_FOUND,
                "user_not_found",
                format!("No account found with the address {email}."),
            )
        })?;
    let facts = store::billing::access_facts(&db, &account.id)
        .await
        .context("accounts: access")?;
    let check = facts.as_ref().map(SubscriptionCheck::from_facts);
    let (plan, label) = plan_of(check.as_ref());
    let subscription = check.as_ref().and_then(|check| check.subscription.as_ref());
    Ok(HttpResponse::Ok().json(json!({
        "email": account.email,
        "createdAt": account.created_at,
        "plan": plan,
        "planLabel": label,
        "trialEndDate": check.as_ref().and_then(|check| check.trial_end_date),
        "currentPeriodEnd": subscription.and_then(|sub| sub.current_period_end),
        "subscriptionStatus": subscription.map(|sub| sub.status.clone()),
    })))
}

/// `GET /api/admin/held`: every payment waiting for its owner (paid signed out with the address of
/// an account), the first to expire first: `{held: [{id, email, paidAt, expiresAt, setupFee}]}`.
#[get("/admin/held")]
pub async fn held_payments(
    billing: web::Data<Billing>,
    _admin: Admin,
) -> Result<HttpResponse, ApiError> {
    let held = billing
        .held_payments_for_owners()
        .await
        .context("admin: held payments")?;
    Ok(HttpResponse::Ok().json(json!({ "held": held })))
}

/// `POST /api/admin/held/{id}/remind`: mails the owner again about the payment (the mail sent when
/// it was held, with a fresh one-time sign-in link). 404 `not_held`.
#[post("/admin/held/{id}/remind")]
pub async fn remind_held_payment(
    db: web::Data<Db>,
    mailer: web::Data<Mailer>,
    settings: web::Data<Settings>,
    admin: Admin,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    remind_held(
        &db,
        &mailer,
        &settings.server.public_url,
        &settings.product.name,
        &id,
    )
    .await
    .map_err(ApiError::from)?;
    tracing::info!(admin = admin.0.id, checkout = %id, "a held payment's owner was mailed again");
    Ok(HttpResponse::Ok().json(json!({
        "message": "The owner was mailed again about this payment."
    })))
}

/// `POST /api/admin/held/{id}/decline`: cancels the payment for its owner, as the owner's decline
/// does (its subscription canceled at once, its setup fee refunded). 404 `not_held`.
#[post("/admin/held/{id}/decline")]
pub async fn decline_held_payment(
    billing: web::Data<Billing>,
    admin: Admin,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    billing
        .decline_held_for_owner(&id)
        .await
        .map_err(ApiError::from)?;
    tracing::info!(admin = admin.0.id, checkout = %id, "a held payment was declined by the operator");
    Ok(HttpResponse::Ok().json(json!({
        "message": "The payment was canceled and its setup fee refunded."
    })))
}

/// This file's endpoints.
pub fn configure(cfg: &mut actix_web::web::ServiceConfig) {
    cfg.service(find_account)
        .service(held_payments)
        .service(remind_held_payment)
        .service(decline_held_payment);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::billing::service::SubscriptionView;

    fn check(
        trial_end: Option<DateTime<Utc>>,
        status: Option<&str>,
        cancel_at_period_end: bool,
    ) -> SubscriptionCheck {
        let now = Utc::now();
        let active = matches!(status, Some("active" | "trialing"));
        SubscriptionCheck {
            has_active_subscription: active,
            trial_active: trial_end.is_some_and(|end| end > now),
            trial_end_date: trial_end,
            subscription: status.map(|status| SubscriptionView {
                id: "sub_1".to_owned(),
                status: status.to_owned(),
                plan_id: None,
                current_period_end: Some("2026-12-31T10:00:00Z".parse().expect("a time")),
                cancel_at_period_end,
            }),
        }
    }

    #[test]
    fn a_plan_reads_as_the_operator_would_say_it() {
        let soon: DateTime<Utc> = Utc::now() + chrono::Duration::days(3);
        let past: DateTime<Utc> = "2026-01-02T00:00:00Z".parse().expect("a time");
        let cases = [
            (None, ("none", "No subscription".to_owned())),
            (
                Some(check(Some(soon), Some("trialing"), false)),
                ("trial", format!("Free trial until {}", day(soon))),
            ),
            (
                Some(check(Some(soon), Some("trialing"), true)),
                (
                    "trial",
                    format!("Free trial until {}, then canceled", day(soon)),
                ),
            ),
            (
                Some(check(Some(past), Some("active"), false)),
                ("subscribed", "Subscribed ($20/month)".to_owned()),
            ),
            (
                Some(check(Some(past), Some("active"), true)),
                (
                    "subscribed",
                    "Subscribed ($20/month) until 2026-12-31, canceled".to_owned(),
                ),
            ),
            (
                Some(check(Some(past), Some("past_due"), false)),
                (
                    "no_access",
                    "Subscription past due ($20/month): no access".to_owned(),
                ),
            ),
            (
                Some(check(Some(past), Some("canceled"), false)),
                ("none", "No subscription".to_owned()),
            ),
            (
                Some(check(Some(past), None, false)),
                ("none", "No subscription".to_owned()),
            ),
        ];
        for (check, expected) in cases {
            assert_eq!(plan_of(check.as_ref()), expected, "{check:?}");
        }
    }
}

//! `/api/admin/*`: the operator's dashboard (admins only: accounts in `admin.emails` with a proved
//! address), and the checkout debug page's data and actions (admins, with `security.debug_tools`
//! on). Everyone else gets 404.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, get, post, web};
use serde::Deserialize;
use serde_json::json;

use crate::auth::MaybeUser;
use crate::billing::Billing;
use crate::cluster::{Cluster, ClusterEvent};
use crate::config::Settings;
use crate::dashboard;
use crate::domain::Email;
use crate::domain::journey::DayRange;
use crate::error::{ApiError, Context};
use crate::mail::Mailer;
use crate::metrics::Metrics;
use crate::routes::auth::send_reset_mail;
use crate::routes::billing::{require_admin, require_debug_admin};
use crate::store::{self, Db};

const LIST_LIMIT: usize = 25;

/// Recent checkouts, accounts, and the last hour's payment events.
#[get("/admin/checkout-debug")]
pub async fn overview(
    db: web::Data<Db>,
    settings: web::Data<Settings>,
    user: MaybeUser,
) -> Result<HttpResponse, ApiError> {
    require_debug_admin(&settings, user.0.as_ref())?;
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

impl EmailRequest {
    /// The address asked for: `missing` when there is none, the address's own error when it is
    /// no address.
    fn email(self, missing: &'static str) -> Result<Email, ApiError> {
        let raw = self.email.unwrap_or_default();
        if raw.trim().is_empty() {
            return Err(ApiError::bad_request("email_required", missing));
        }
        Email::parse(&raw).map_err(|error| ApiError::bad_request(error.code(), error.to_string()))
    }
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
    require_debug_admin(&settings, user.0.as_ref())?;
    let email = body
        .into_inner()
        .email("Email is required to create an account")?;
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
    require_debug_admin(&settings, user.0.as_ref())?;
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

/// `POST /api/admin/accounts/delete`: deletes an account on its owner's request (the operator's
/// answer to "delete my data"): its running subscription is canceled at the provider first, so
/// nothing more is charged; then the account goes, with its chats, tasks, sessions, mails and the
/// visitors it was, with their funnel conversations and analytics events (`store::users::erase`);
/// its chat sockets close. Nothing is deleted when the cancellation fails.
#[post("/admin/accounts/delete")]
pub async fn delete_account(
    db: web::Data<Db>,
    settings: web::Data<Settings>,
    billing: web::Data<Billing>,
    cluster: web::Data<Cluster>,
    user: MaybeUser,
    body: web::Json<EmailRequest>,
) -> Result<HttpResponse, ApiError> {
    require_admin(&settings, user.0.as_ref())?;
    let email = body
        .into_inner()
        .email("Enter the email address of the account to delete.")?;
    let no_account = || {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "user_not_found",
            format!("No account found with the address {email}."),
        )
    };
    let account = store::users::credentials_by_email(&db, &email)
        .await
        .context("delete: account")?
        .ok_or_else(no_account)?;
    let admin = user.0.as_ref().map(|admin| admin.id.as_str());
    if admin == Some(account.id.as_str()) {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "own_account",
            "You cannot delete the account you are signed in with.",
        ));
    }
    let canceled = billing
        .end_subscription_now(&account.id)
        .await
        .map_err(|error| {
            ApiError::new(
                StatusCode::BAD_GATEWAY,
                "cancel_failed",
                "The subscription could not be canceled at the payment provider, so nothing was deleted. Try again.",
            )
            .with_cause(format!("delete: cancel: {error}"))
        })?;
    let erased = store::users::erase(&db, &account.id)
        .await
        .context("delete: erase")?
        .ok_or_else(no_account)?;
    // Its sessions are gone: the chat sockets that came with them close, on every process.
    cluster.publish(ClusterEvent::SignedOut {
        user_id: account.id.clone(),
        session: None,
    });
    tracing::info!(
        admin,
        account = account.id,
        canceled,
        "an account was deleted"
    );
    let subscription = if canceled {
        " Its subscription was canceled."
    } else {
        ""
    };
    Ok(HttpResponse::Ok().json(json!({
        "deleted": erased,
        "subscriptionCanceled": canceled,
        "message": format!("The account {email} and everything it held were deleted.{subscription}"),
    })))
}

#[derive(Deserialize)]
pub struct DashboardRequest {
    #[serde(default)]
    from: Option<String>,
    #[serde(default)]
    to: Option<String>,
    #[serde(default)]
    by: Option<String>,
    #[serde(default)]
    funnel: Option<String>,
    #[serde(default)]
    campaign: Option<String>,
    /// `csv`: the breakdown table as CSV (`table=funnels`: the funnels' table).
    #[serde(default)]
    format: Option<String>,
    #[serde(default)]
    table: Option<String>,
}

/// The query a dashboard request asks for: the last 30 days by campaign unless it says.
fn dashboard_query(request: &DashboardRequest) -> Result<dashboard::Query, ApiError> {
    let today = chrono::Utc::now().date_naive();
    let default_from = (today - chrono::Days::new(29))
        .format("%Y-%m-%d")
        .to_string();
    let default_to = today.format("%Y-%m-%d").to_string();
    let range = DayRange::parse(
        request.from.as_deref().unwrap_or(&default_from),
        request.to.as_deref().unwrap_or(&default_to),
    )
    .map_err(|message| ApiError::bad_request("invalid_range", message))?;
    let by = match request.by.as_deref() {
        None | Some("") => dashboard::By::Campaign,
        Some(value) => dashboard::By::parse(value).ok_or_else(|| {
            ApiError::bad_request(
                "invalid_breakdown",
                "Break down by campaign, keyword, utm_source, utm_medium, utm_campaign, day or week.",
            )
        })?,
    };
    let nonempty = |value: &Option<String>| {
        value
            .as_deref()
            .map(str::trim)
            .filter(|value| !value.is_empty())
            .map(|value| value.chars().take(200).collect::<String>())
    };
    Ok(dashboard::Query {
        range,
        by,
        funnel: nonempty(&request.funnel),
        campaign: nonempty(&request.campaign),
    })
}

/// `GET /api/admin/dashboard`: the funnels' figures and a breakdown over a range of days, as JSON
/// or (`format=csv`) as CSV.
#[get("/admin/dashboard")]
pub async fn dashboard_report(
    db: web::Data<Db>,
    settings: web::Data<Settings>,
    user: MaybeUser,
    request: web::Query<DashboardRequest>,
) -> Result<HttpResponse, ApiError> {
    require_admin(&settings, user.0.as_ref())?;
    let query = dashboard_query(&request)?;
    let report = dashboard::report(&db, &query)
        .await
        .context("dashboard: figures")?;
    if request.format.as_deref() == Some("csv") {
        let funnels = request.table.as_deref() == Some("funnels");
        let (name, csv) = if funnels {
            let rows = report
                .funnels
                .iter()
                .map(|f| (f.funnel.as_str(), &f.figures));
            ("funnels", dashboard::csv("funnel", rows))
        } else {
            let rows = report.rows.iter().map(|r| (r.key.as_str(), &r.figures));
            (query.by.as_str(), dashboard::csv(query.by.as_str(), rows))
        };
        let file = format!("helpnow-{name}-{}-{}.csv", report.from, report.to);
        return Ok(HttpResponse::Ok()
            .content_type("text/csv; charset=utf-8")
            .insert_header((
                actix_web::http::header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{file}\""),
            ))
            .body(csv));
    }
    Ok(HttpResponse::Ok().json(report))
}

/// `GET /api/admin/live`: this process's live figures (conversations open, messages stored, AI
/// calls and failures), from the same metrics as `/metrics`.
#[get("/admin/live")]
pub async fn dashboard_live(
    settings: web::Data<Settings>,
    metrics: web::Data<std::sync::Arc<Metrics>>,
    user: MaybeUser,
) -> Result<HttpResponse, ApiError> {
    require_admin(&settings, user.0.as_ref())?;
    Ok(HttpResponse::Ok().json(metrics.live()))
}

/// This module's endpoints.
pub fn configure(cfg: &mut actix_web::web::ServiceConfig) {
    cfg.service(dashboard_report)
        .service(dashboard_live)
        .service(overview)
        .service(create_account)
        .service(reset_account)
        .service(delete_account);
}

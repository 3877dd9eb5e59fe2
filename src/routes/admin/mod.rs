//! `/api/admin/*`: the operator's dashboard (admins only: accounts in `admin.emails` with a proved
//! address), and the checkout debug page's data and actions (admins, with `security.debug_tools`
//! on). Everyone else gets 404.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use actix_web::http::StatusCode;
use actix_web::{FromRequest, HttpRequest, HttpResponse, get, post, web};
use serde::Deserialize;
use serde_json::json;

use crate::auth::{AuthThrottle, CurrentUser};
use crate::billing::Billing;
use crate::client::client_key;
use crate::cluster::{Cluster, ClusterEvent, Limit};
use crate::config::Settings;
use crate::domain::Email;
use crate::error::{ApiError, Context};
use crate::mail::Mailer;
use crate::routes::auth::send_reset_mail;
use crate::store::{self, Db};

mod accounts;
mod costs;
mod dashboard;
mod dropoff;
mod experiments;
mod flows;

const LIST_LIMIT: usize = 25;

/// Requests to the admin endpoints from one address, whoever makes them: the dashboard's page
/// asks a few at a time and its live panel every few seconds; a script probing or scraping the
/// admin API gets 429 past it. Counted for all processes where they share Redis.
pub const ADMIN_PER_ADDRESS: Limit = Limit {
    name: "admin-address",
    burst: 60,
    period: Duration::from_millis(500),
};

/// The days a report asks for (`from` and `to`, YYYY-MM-DD), the last 30 unless it says; 400
/// `invalid_range` in words otherwise.
fn requested_days(
    from: Option<&str>,
    to: Option<&str>,
) -> Result<crate::domain::journey::DayRange, ApiError> {
    let today = chrono::Utc::now().date_naive();
    let default_from = (today - chrono::Days::new(29))
        .format("%Y-%m-%d")
        .to_string();
    let default_to = today.format("%Y-%m-%d").to_string();
    crate::domain::journey::DayRange::parse(
        from.unwrap_or(&default_from),
        to.unwrap_or(&default_to),
    )
    .map_err(|message| ApiError::bad_request("invalid_range", message))
}

/// A CSV report as a file to save (`file`: its name).
fn csv_file(file: &str, csv: String) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/csv; charset=utf-8")
        .insert_header((
            actix_web::http::header::CONTENT_DISPOSITION,
            format!("attachment; filename=\"{file}\""),
        ))
        .body(csv)
}

/// A report's filter as asked: trimmed, at most 200 characters, none when empty.
fn filter_value(value: &Option<String>) -> Option<String> {
    value
        .as_deref()
        .map(str::trim)
        .filter(|value| !value.is_empty())
        .map(|value| value.chars().take(200).collect())
}

/// A handler argument for the admin endpoints: the signed-in admin (an account listed in
/// `admin.emails`, its address proved by a mailed link, and the session holding the password
/// the prover chose: docs/operations.md, "Accounts: who holds one"), within
/// [`ADMIN_PER_ADDRESS`]. Anyone else gets a plain 404, as if the page did not exist, and a
/// client past the limit 429.
pub struct Admin(pub CurrentUser);

/// [`Admin`], on a server with `security.debug_tools` on (the checkout debug page and the
/// webhook simulation; production refuses the setting). 404 otherwise.
pub struct DebugAdmin(pub CurrentUser);

fn app_data<T: 'static>(req: &HttpRequest) -> Result<web::Data<T>, ApiError> {
    req.app_data::<web::Data<T>>()
        .cloned()
        .ok_or_else(|| ApiError::internal("admin", "the app's state is not registered"))
}

/// The admin behind a request, or the error to answer; `debug`: the debug tools are asked for.
async fn admin_of(req: HttpRequest, debug: bool) -> Result<CurrentUser, ApiError> {
    let settings = app_data::<Settings>(&req)?;
    let cluster = app_data::<Cluster>(&req)?;
    let db = app_data::<Db>(&req)?;
    let address = client_key(&req, &settings.server.forwarding());
    if !cluster.allow_address(ADMIN_PER_ADDRESS, address).await {
        return Err(ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "too_many_requests",
            "Too many requests. Please try again later.",
        ));
    }
    if debug && !settings.security.debug_tools {
        return Err(ApiError::not_found());
    }
    let user = crate::auth::session::current_user(&db, &req)
        .await?
        .filter(|user| user.listed_admin(&settings.admin.emails))
        .ok_or_else(ApiError::not_found)?;
    if user.proved_with_password() {
        Ok(user)
    } else {
        tracing::warn!(
            user = user.id,
            "an admin address whose password was not chosen by the address's prover"
        );
        Err(ApiError::not_found())
    }
}

impl FromRequest for Admin {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, Self::Error>>>>;

    fn from_request(req: &HttpRequest, _payload: &mut actix_web::dev::Payload) -> Self::Future {
        let req = req.clone();
        Box::pin(async move { admin_of(req, false).await.map(Admin) })
    }
}

impl FromRequest for DebugAdmin {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, Self::Error>>>>;

    fn from_request(req: &HttpRequest, _payload: &mut actix_web::dev::Payload) -> Self::Future {
        let req = req.clone();
        Box::pin(async move { admin_of(req, true).await.map(DebugAdmin) })
    }
}

/// Recent checkouts, accounts, and the last hour's payment events.
#[get("/admin/checkout-debug")]
pub async fn overview(db: web::Data<Db>, _admin: DebugAdmin) -> Result<HttpResponse, ApiError> {
    let checkouts = store::billing::recent_checkouts(&db, LIST_LIMIT)
        .await
        .context("debug: checkouts")?;
    let users = store::users::recent_users(&db, LIST_LIMIT)
        .await
        .context("debug: users")?;
    let events = store::billing::recent_events(&db)
        .await
        .context("debug: events")?;
    let checks = store::billing::recent_checks(&db, LIST_LIMIT)
        .await
        .context("debug: subscription checks")?;
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
        "webhookDebug": checks,
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

/// What deleting an account takes: its address, and the admin's own password.
#[derive(Deserialize)]
pub struct DeleteRequest {
    #[serde(default)]
    email: Option<String>,
    #[serde(default)]
    password: Option<String>,
}

/// Checks the signed-in admin's own password, under the sign-in limits (a guess here is a guess
/// at the admin's password): 401 `wrong_password` when it is not theirs.
async fn confirm_admin_password(
    req: &HttpRequest,
    admin: &CurrentUser,
    password: String,
) -> Result<(), ApiError> {
    let settings = app_data::<Settings>(req)?;
    let throttle = app_data::<AuthThrottle>(req)?;
    let db = app_data::<Db>(req)?;
    let email = Email::parse(&admin.email)
        .map_err(|error| ApiError::internal("an admin's address", error.to_string()))?;
    if !throttle
        .allow_login(&email, client_key(req, &settings.server.forwarding()))
        .await
    {
        return Err(ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "too_many_requests",
            crate::routes::auth::TOO_MANY_ATTEMPTS,
        ));
    }
    let hash = store::users::credentials_by_email(&db, &email)
        .await
        .context("an admin's password")?
        .and_then(|account| account.password_hash);
    let matches = password.len() <= crate::domain::password::MAX_BYTES
        && crate::auth::password::verify_password(hash, password)
            .await
            .map_err(|error| error.into_api("cannot verify a password"))?;
    if matches {
        Ok(())
    } else {
        Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "wrong_password",
            "Incorrect password. Please try again.",
        ))
    }
}

/// Creates an account without a password and mails it a link to choose one; an address that
/// already has an account gets the reset mail instead.
#[post("/admin/checkout-debug/accounts")]
pub async fn create_account(
    db: web::Data<Db>,
    settings: web::Data<Settings>,
    mailer: web::Data<Mailer>,
    _admin: DebugAdmin,
    body: web::Json<EmailRequest>,
) -> Result<HttpResponse, ApiError> {
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
    _admin: DebugAdmin,
    body: web::Json<EmailRequest>,
) -> Result<HttpResponse, ApiError> {
    let email = Email::parse(body.into_inner().email.as_deref().unwrap_or_default())
        .map_err(|error| ApiError::bad_request(error.code(), error.to_string()))?;
    let account = store::users::credentials_by_email(&db, &email)
        .await
        .context("debug: account")?
        .ok_or_else(|| {
            ApiError::new(
                StatusCode::NOT_FOUND,
                "user_not_found",
                // An admin may know which addresses have accounts.
                "No account found with this email address.",
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
/// its chat sockets close. Nothing is deleted when the cancellation fails. The admin types their
/// own password again: a session left open on a shared computer cannot delete anyone, and the
/// tries count against the admin's sign-in limits.
#[post("/admin/accounts/delete")]
pub async fn delete_account(
    req: HttpRequest,
    db: web::Data<Db>,
    billing: web::Data<Billing>,
    cluster: web::Data<Cluster>,
    admin: Admin,
    body: web::Json<DeleteRequest>,
) -> Result<HttpResponse, ApiError> {
    let Admin(admin) = admin;
    let DeleteRequest { email, password } = body.into_inner();
    let email =
        EmailRequest { email }.email("Enter the email address of the account to delete.")?;
    let password = password.unwrap_or_default();
    if password.is_empty() {
        return Err(ApiError::bad_request(
            "password_required",
            "Enter your own password to delete an account.",
        ));
    }
    confirm_admin_password(&req, &admin, password).await?;
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
    let admin = Some(admin.id.as_str());
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

/// This module's endpoints.
pub fn configure(cfg: &mut actix_web::web::ServiceConfig) {
    dashboard::configure(cfg);
    dropoff::configure(cfg);
    flows::configure(cfg);
    experiments::configure(cfg);
    costs::configure(cfg);
    accounts::configure(cfg);
    cfg.service(overview)
        .service(create_account)
        .service(reset_account)
        .service(delete_account);
}

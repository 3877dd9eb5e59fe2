//! `/api/auth/*`: sign-up, sign-in, sign-out, who am I, and password reset by mail.
//! Every text a person reads is the product spec's (sections 5 and 8).

use std::time::Duration;

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, get, post, web};
use serde::Deserialize;
use serde_json::json;

use crate::auth::{self, AuthThrottle, SessionCookies, SessionHolder, token};
use crate::billing::service::SubscriptionCheck;
use crate::client::client_key;
use crate::cluster::{Cluster, ClusterEvent};
use crate::config::Settings;
use crate::domain::analytics::EventName;
use crate::domain::{Email, EmailError, NewPassword, PasswordError};
use crate::error::{ApiError, Context};
use crate::mail::{MailKind, Mailer, OutgoingMail};
use crate::store::sessions::SessionStart;
use crate::store::{self, Db};

/// How long a reset link works.
const RESET_LIFETIME: Duration = Duration::from_secs(3600);

pub const INVALID_CREDENTIALS: &str = "Invalid email or password. If you signed up through our instant checkout, you may need to reset your password.";
pub const TOO_MANY_ATTEMPTS: &str =
    "Too many failed login attempts. Please try again later or reset your password.";
pub const EMAIL_IN_USE: &str = "An account with this email already exists. Please sign in instead.";
pub const RESET_SENT: &str = "Password reset email sent! Check your inbox for instructions to reset your password. If you don't see it, check your spam folder.";
pub const RESET_LINK_INVALID: &str =
    "This password reset link has expired or was already used. Please request a new one.";

#[derive(Deserialize)]
pub struct Credentials {
    #[serde(default)]
    email: Option<String>,
    #[serde(default)]
    password: Option<String>,
}

/// Sign-up: an email and a password, or (the access dialog's create mode) an email alone, and the
/// password chosen later from a mailed link.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SignupRequest {
    #[serde(default)]
    email: Option<String>,
    #[serde(default)]
    password: Option<String>,
    #[serde(default)]
    set_password_by_mail: bool,
}

fn email_error(error: EmailError) -> ApiError {
    ApiError::bad_request(error.code(), error.to_string())
}

fn password_error(error: PasswordError) -> ApiError {
    ApiError::bad_request(error.code(), error.to_string())
}

fn user_body(id: &str, email: &str) -> serde_json::Value {
    json!({ "user": { "id": id, "email": email } })
}

fn signed_in(cookie: actix_web::cookie::Cookie<'static>, id: &str, email: &str) -> HttpResponse {
    HttpResponse::Ok().cookie(cookie).json(user_body(id, email))
}

fn too_many(message: &str) -> ApiError {
    ApiError::new(StatusCode::TOO_MANY_REQUESTS, "too_many_requests", message)
}

#[post("/auth/signup")]
pub async fn signup(
    req: HttpRequest,
    db: web::Data<Db>,
    settings: web::Data<Settings>,
    mailer: web::Data<Mailer>,
    cookies: web::Data<SessionCookies>,
    throttle: web::Data<AuthThrottle>,
    body: web::Json<SignupRequest>,
) -> Result<HttpResponse, ApiError> {
    let body = body.into_inner();
    let email = Email::parse(body.email.as_deref().unwrap_or_default()).map_err(email_error)?;
    let password = if body.set_password_by_mail {
        None
    } else {
        Some(NewPassword::parse(body.password.unwrap_or_default()).map_err(password_error)?)
    };
    if !throttle
        .allow_signup(client_key(&req, &settings.server.forwarding()))
        .await
    {
        return Err(too_many("Too many requests. Please try again later."));
    }
    let hash = match password {
        Some(password) => Some(
            auth::password::hash_password(password)
                .await
                .map_err(|error| error.into_api("cannot hash a password"))?,
        ),
        None => None,
    };
    let by_mail = hash.is_none();
    let id = match store::users::create(&db, &email, hash).await {
        Ok(id) => id,
        Err(store::users::CreateUserError::EmailTaken) => {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                "email_in_use",
                EMAIL_IN_USE,
            ));
        }
        Err(error) => return Err(ApiError::internal("cannot create an account", error)),
    };
    if by_mail {
        // No password yet: the welcome mail is the link that chooses one.
        send_password_mail(&db, &settings, &mailer, &id, &email, PasswordMail::Choose).await?;
        store::analytics::record_server_event(
            &db,
            EventName::SIGN_UP,
            Some(&id),
            json!({"method": "email_link"}),
        )
        .await;
        let cookie = auth::session::start(&db, **cookies, &id).await?;
        return Ok(HttpResponse::Created()
            .cookie(cookie)
            .json(user_body(&id, email.as_str())));
    }
    let product = &settings.product.name;
    let welcome = OutgoingMail {
        to: email.as_str().to_owned(),
        subject: format!("Welcome to {product}"),
        text: format!(
            "Welcome to {product}!\n\nYour account {email} is ready. Sign in any time at {}.\n\n\
             Start your 7-day trial from your account page to get unlimited help from {}, your \
             personal chat assistant.\n\nThe {product} team\n",
            settings
                .server
                .public_url
                .join("/login")
                .map(|url| url.to_string())
                .unwrap_or_default(),
            settings.product.assistant_name,
        ),
        kind: MailKind::Welcome,
    };
    // Not awaited: sign-up does not wait for a mail server, and the account exists either way.
    let mailer = mailer.get_ref().clone();
    tokio::spawn(async move {
        if let Err(error) = mailer.send(welcome).await {
            tracing::warn!(%error, "cannot queue a welcome mail");
        }
    });
    store::analytics::record_server_event(
        &db,
        EventName::SIGN_UP,
        Some(&id),
        json!({"method": "password"}),
    )
    .await;
    let cookie = auth::session::start(&db, **cookies, &id).await?;
    Ok(HttpResponse::Created()
        .cookie(cookie)
        .json(user_body(&id, email.as_str())))
}

#[post("/auth/login")]
pub async fn login(
    req: HttpRequest,
    db: web::Data<Db>,
    settings: web::Data<Settings>,
    cookies: web::Data<SessionCookies>,
    throttle: web::Data<AuthThrottle>,
    body: web::Json<Credentials>,
) -> Result<HttpResponse, ApiError> {
    let body = body.into_inner();
    let email = Email::parse(body.email.as_deref().unwrap_or_default()).map_err(email_error)?;
    let password = body.password.unwrap_or_default();
    if password.is_empty() {
        return Err(password_error(PasswordError::Missing));
    }
    if !throttle
        .allow_login(&email, client_key(&req, &settings.server.forwarding()))
        .await
    {
        return Err(too_many(TOO_MANY_ATTEMPTS));
    }
    let account = store::users::credentials_by_email(&db, &email)
        .await
        .context("cannot read an account")?;
    let (id, stored_hash) = match account {
        Some(account) => (Some(account.id), account.password_hash),
        None => (None, None),
    };
    let matches = password.len() <= crate::domain::password::MAX_BYTES
        && auth::password::verify_password(stored_hash.clone(), password)
            .await
            .map_err(|error| error.into_api("cannot verify a password"))?;
    let invalid = || {
        ApiError::new(
            StatusCode::UNAUTHORIZED,
            "invalid_credentials",
            INVALID_CREDENTIALS,
        )
    };
    let (Some(id), Some(checked)) = (id.filter(|_| matches), stored_hash) else {
        return Err(invalid());
    };
    // Only while the password is still the one just checked: a proof of the address that took
    // it away during the hash leaves this sign-in without a session.
    let cookie =
        auth::session::start_if_password_is(&db, **cookies, &id, &checked, SessionStart::default())
            .await?
            .ok_or_else(invalid)?;
    store::analytics::record_server_event(
        &db,
        EventName::LOGIN,
        Some(&id),
        json!({"method": "password"}),
    )
    .await;
    Ok(signed_in(cookie, &id, email.as_str()))
}

#[post("/auth/logout")]
pub async fn logout(
    req: HttpRequest,
    db: web::Data<Db>,
    cookies: web::Data<SessionCookies>,
    cluster: web::Data<Cluster>,
) -> Result<HttpResponse, ApiError> {
    // The chat sockets that came with this session close with it, on every process.
    if let Some((user_id, session)) = auth::session::end(&db, &req).await? {
        cluster.publish(ClusterEvent::SignedOut {
            user_id,
            session: Some(session),
        });
    }
    Ok(HttpResponse::NoContent()
        .cookie(cookies.signed_out())
        .finish())
}

/// Who is signed in, with what access: `{user: {id, email, hasPassword, mustChoosePassword,
/// admin, access, pendingSetup, funnel, shortcuts}}`,
/// or `{user: null}` for a visitor. `admin`: the endpoints under `/api/admin` answer this session
/// (`CurrentUser::is_admin`), so the header's menu shows the dashboard's link. `pendingSetup`
/// names the checkout of an account that a checkout created and that has no password yet (the
/// page shows 'Complete Your Account Setup').
/// `mustChoosePassword`: a mailed link proved the address and took the account over; this
/// session chooses a new password (account setup) before anything else answers it.
#[get("/auth/me")]
pub async fn me(
    user: SessionHolder,
    db: web::Data<Db>,
    settings: web::Data<Settings>,
) -> Result<HttpResponse, ApiError> {
    let Some(user) = user.0 else {
        return Ok(HttpResponse::Ok().json(json!({ "user": null })));
    };
    let facts = store::billing::access_facts(&db, &user.id)
        .await
        .context("cannot read an account")?;
    let check = facts.as_ref().map(SubscriptionCheck::from_facts);
    let has_password = facts.as_ref().is_none_or(|facts| facts.has_password);
    let latest_checkout = match &facts {
        Some(facts) if facts.trial_started => {
            store::billing::latest_fulfilled_checkout_of(&db, &user.id)
                .await
                .context("cannot read a checkout")?
        }
        _ => None,
    };
    // The members page offers 'Refund my $1 setup fee' only while there is one to give back.
    let fee_refundable = latest_checkout
        .as_ref()
        .is_some_and(|checkout| checkout.refundable_fee && checkout.fee_refunded_at.is_none());
    let pending_setup = if has_password {
        None
    } else {
        latest_checkout.as_ref().map(|checkout| {
            json!({
                "email": user.email,
                "session": checkout.tracking_id,
                "paymentSessionId": checkout.provider_session_id,
            })
        })
    };
    // The members area greets a funnel visitor with the issue they came with.
    let funnel = store::users::funnel_record(&db, &user.id)
        .await
        .context("cannot read an account")?;
    let shortcuts = store::users::shortcuts(&db, &user.id)
        .await
        .context("cannot read an account")?;
    let access = check.map(|check| {
        json!({
            "hasAccess": check.has_access(),
            "trialActive": check.trial_active,
            "hasActiveSubscription": check.has_active_subscription,
            "trialEndDate": check.trial_end_date,
            "feeRefundable": fee_refundable,
        })
    });
    Ok(HttpResponse::Ok().json(json!({
        "user": {
            "id": user.id,
            "email": user.email,
            "hasPassword": has_password,
            "mustChoosePassword": user.password_pending(),
            "admin": user.is_admin(&settings.admin.emails),
            "access": access.unwrap_or_else(|| json!({
                "hasAccess": false, "trialActive": false, "hasActiveSubscription": false, "trialEndDate": null,
                "feeRefundable": false
            })),
            "pendingSetup": pending_setup,
            "funnel": funnel,
            "shortcuts": shortcuts,
        }
    })))
}

#[derive(Deserialize)]
pub struct ResetRequest {
    #[serde(default)]
    email: Option<String>,
}

/// Mails a reset link when the address has an account, and answers the same either way: nobody
/// learns from this form which addresses have accounts (docs/operations.md, "Which forms tell
/// whether an address has an account"; the spec's 'No account found...' is not said, docs/spec.md).
#[post("/auth/reset")]
pub async fn request_reset(
    req: HttpRequest,
    db: web::Data<Db>,
    settings: web::Data<Settings>,
    mailer: web::Data<Mailer>,
    throttle: web::Data<AuthThrottle>,
    body: web::Json<ResetRequest>,
) -> Result<HttpResponse, ApiError> {
    let email =
        Email::parse(body.email.as_deref().unwrap_or_default()).map_err(|error| match error {
            EmailError::Missing => {
                ApiError::bad_request(error.code(), "Please enter your email address")
            }
            EmailError::Invalid => ApiError::bad_request(
                error.code(),
                "Invalid email format. Please enter a valid email address.",
            ),
        })?;
    if !throttle
        .allow_reset(&email, client_key(&req, &settings.server.forwarding()))
        .await
    {
        return Err(too_many(
            "Too many password reset requests. Please wait a few minutes and try again.",
        ));
    }
    let account = store::users::credentials_by_email(&db, &email)
        .await
        .context("cannot read an account")?;
    // Queued before the answer, so "sent" is true when it is said. An account's answer takes one
    // write longer than a stranger's; the reset limits (ten a minute from one address) bound
    // what timing could tell.
    if let Some(account) = account {
        send_reset_mail(&db, &settings, &mailer, &account.id, &email).await?;
    }
    Ok(HttpResponse::Ok().json(json!({ "message": RESET_SENT })))
}

/// Why a mail carries a link that sets a password.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PasswordMail {
    /// 'Forgot password?' (and the checkout debug page).
    Reset,
    /// An account created with an email alone (the access dialog): its first password.
    Choose,
}

/// Stores a reset link for an account and mails it (also used by the checkout debug page).
pub async fn send_reset_mail(
    db: &Db,
    settings: &Settings,
    mailer: &Mailer,
    user_id: &str,
    email: &Email,
) -> Result<(), ApiError> {
    send_password_mail(db, settings, mailer, user_id, email, PasswordMail::Reset).await
}

/// Stores a one-hour, one-time link that sets the account's password, and mails it.
pub async fn send_password_mail(
    db: &Db,
    settings: &Settings,
    mailer: &Mailer,
    user_id: &str,
    email: &Email,
    purpose: PasswordMail,
) -> Result<(), ApiError> {
    let secret = token::new_secret();
    store::password_resets::create(db, user_id, token::hash_secret(&secret), RESET_LIFETIME)
        .await
        .context("cannot store a reset link")?;
    let mut link = settings
        .server
        .public_url
        .join("/login")
        .context("reset link")?;
    link.query_pairs_mut().append_pair("reset", &secret);
    let product = &settings.product.name;
    let (subject, text) = match purpose {
        PasswordMail::Reset => (
            format!("Reset your {product} password"),
            format!(
                "Hello,\n\nSomeone (we hope you) asked to reset the password of your {product} account.\n\n\
                 Choose a new password here (the link works once, for one hour):\n\n{link}\n\n\
                 If you did not ask for this, ignore this mail; your password stays as it is.\n\n\
                 The {product} team\n"
            ),
        ),
        PasswordMail::Choose => (
            format!("Welcome to {product}: choose your password"),
            format!(
                "Welcome to {product}!\n\nYour account {email} is ready, and you are signed in on the \
                 device where you created it.\n\nTo sign in anywhere else, choose your password here \
                 (the link works once, for one hour; after that, use 'Forgot password?' on the sign-in \
                 page):\n\n{link}\n\nThe {product} team\n"
            ),
        ),
    };
    mailer
        .send(OutgoingMail {
            to: email.as_str().to_owned(),
            subject,
            text,
            kind: MailKind::PasswordReset,
        })
        .await
        .context("cannot send a reset mail")?;
    Ok(())
}

#[derive(Deserialize)]
pub struct ResetToken {
    #[serde(default)]
    token: Option<String>,
}

fn reset_token_hash(token: Option<&str>) -> Option<String> {
    token
        .filter(|value| token::looks_like_secret(value))
        .map(token::hash_secret)
}

fn reset_link_invalid() -> ApiError {
    ApiError::new(StatusCode::GONE, "reset_link_invalid", RESET_LINK_INVALID)
}

/// Whether a reset link still works, so the page can say so before a new password is typed.
#[post("/auth/reset/check")]
pub async fn check_reset(
    db: web::Data<Db>,
    body: web::Json<ResetToken>,
) -> Result<HttpResponse, ApiError> {
    let Some(hash) = reset_token_hash(body.token.as_deref()) else {
        return Err(reset_link_invalid());
    };
    let usable = store::password_resets::is_usable(&db, &hash)
        .await
        .context("cannot read a reset link")?;
    if usable {
        Ok(HttpResponse::Ok().json(json!({ "valid": true })))
    } else {
        Err(reset_link_invalid())
    }
}

#[derive(Deserialize)]
pub struct NewPasswordRequest {
    #[serde(default)]
    token: Option<String>,
    #[serde(default)]
    password: Option<String>,
}

/// Sets the new password, signs the account out everywhere, and signs this browser in.
#[post("/auth/reset/confirm")]
pub async fn confirm_reset(
    req: HttpRequest,
    settings: web::Data<Settings>,
    throttle: web::Data<AuthThrottle>,
    db: web::Data<Db>,
    cookies: web::Data<SessionCookies>,
    cluster: web::Data<Cluster>,
    body: web::Json<NewPasswordRequest>,
) -> Result<HttpResponse, ApiError> {
    let body = body.into_inner();
    let password = NewPassword::parse(body.password.unwrap_or_default()).map_err(password_error)?;
    let Some(hash) = reset_token_hash(body.token.as_deref()) else {
        return Err(reset_link_invalid());
    };
    // Each try costs a hash: a client may not spray them.
    if !throttle
        .allow_reset_confirm(client_key(&req, &settings.server.forwarding()))
        .await
    {
        return Err(too_many(
            "Too many password reset attempts. Please wait a minute and try again.",
        ));
    }
    // The link first: a made-up or spent one costs no hash.
    if !store::password_resets::is_usable(&db, &hash)
        .await
        .context("cannot check a reset link")?
    {
        return Err(reset_link_invalid());
    }
    // Then the hash: the link is spent only when the new password can be stored.
    let password_hash = auth::password::hash_password(password)
        .await
        .map_err(|error| error.into_api("cannot hash a password"))?;
    // The link came by mail: whoever chose this password reads the account's mailbox. The new
    // password, the end of every other session and link, and this browser's session are one
    // transaction: no session of before the reset keeps what the proved password brings.
    let secret = token::new_secret();
    let user_id = store::password_resets::redeem_with_password(
        &db,
        &hash,
        password_hash,
        store::password_resets::NewSession {
            token_hash: token::hash_secret(&secret),
            lifetime: auth::session::SESSION_LIFETIME,
        },
    )
    .await
    .context("cannot redeem a reset link")?
    .ok_or_else(reset_link_invalid)?;
    cluster.publish(ClusterEvent::SignedOut {
        user_id: user_id.clone(),
        session: None,
    });
    let email = store::users::email_of(&db, &user_id)
        .await
        .context("cannot read an account")?
        .unwrap_or_default();
    let cookie = cookies.signed_in(secret);
    Ok(signed_in(cookie, &user_id, &email))
}

/// This module's endpoints.
pub fn configure(cfg: &mut actix_web::web::ServiceConfig) {
    cfg.service(signup)
        .service(login)
        .service(logout)
        .service(me)
        .service(request_reset)
        .service(check_reset)
        .service(confirm_reset);
}

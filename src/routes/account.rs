//! After a checkout: `/api/account/setup` (choose a password, or confirm the existing one) and
//! `/api/auth/token` (redeem a one-time sign-in token: the welcome mail's link, or the checkout
//! cookie the success page set).

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, get, post, put, web};
use serde::Deserialize;
use serde_json::json;

use crate::auth::{self, AuthThrottle, CurrentUser, SessionCookies, SessionHolder, token};
use crate::billing::service::SubscriptionCheck;
use crate::client::client_key;
use crate::cluster::Cluster;
use crate::config::Settings;
use crate::domain::analytics::EventName;
use crate::domain::{Email, NewPassword, PasswordError};
use crate::error::{ApiError, Context};
use crate::routes::billing::clear_checkout_cookie;
use crate::store::sessions::SessionStart;
use crate::store::{self, Db};

pub const NO_SESSION: &str = "No session information found. Please contact support.";
pub const WRONG_PASSWORD: &str = "Incorrect password for existing account";
pub const TOKEN_INVALID: &str = "This sign-in link has expired or was already used. Please sign in with your email and password.";

fn no_session() -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, "no_session", NO_SESSION)
}

/// The hash of the checkout cookie's token, if the request carries a plausible one.
fn checkout_token_hash(req: &HttpRequest) -> Option<String> {
    SessionCookies::read(req, SessionCookies::checkout)
        .filter(|value| token::looks_like_secret(value))
        .map(|value| token::hash_secret(&value))
}

/// Whose account setup this request may do: the checkout cookie's (spent on success), or a
/// signed-in member's whose account has no password (a checkout created it without one, or a
/// mailed link that proved the address took the password set before the proof).
struct SetupRight {
    user_id: String,
    email: String,
    /// The checkout cookie's token, to spend; `None` for a signed-in member.
    token_hash: Option<String>,
    /// The signed-in member's session, when the right is theirs.
    session: Option<CurrentUser>,
}

async fn setup_right(
    req: &HttpRequest,
    db: &Db,
    user: Option<CurrentUser>,
) -> Result<SetupRight, ApiError> {
    if let Some(hash) = checkout_token_hash(req)
        && let Some(owner) = store::billing::peek_checkout_token(db, &hash)
            .await
            .context("cannot read a sign-in token")?
    {
        return Ok(SetupRight {
            user_id: owner.user_id,
            email: owner.email,
            token_hash: Some(hash),
            session: None,
        });
    }
    if let Some(user) = user {
        let has_password = store::billing::access_facts(db, &user.id)
            .await
            .context("cannot read an account")?
            .is_none_or(|facts| facts.has_password);
        if !has_password {
            return Ok(SetupRight {
                user_id: user.id.clone(),
                email: user.email.clone(),
                token_hash: None,
                session: Some(user),
            });
        }
    }
    Err(no_session())
}

/// `GET /api/account/setup`: whose checkout this browser finished, and whether that account
/// already has a password (`mustChoosePassword`: a mailed link proved the address and took the
/// password set before it; this session chooses a new one before going on).
#[get("/account/setup")]
pub async fn setup_status(
    req: HttpRequest,
    db: web::Data<Db>,
    user: SessionHolder,
) -> Result<HttpResponse, ApiError> {
    let owner = setup_right(&req, &db, user.0).await?;
    let facts = store::billing::access_facts(&db, &owner.user_id)
        .await
        .context("cannot read an account")?
        .ok_or_else(no_session)?;
    let check = SubscriptionCheck::from_facts(&facts);
    let must_choose = owner
        .session
        .as_ref()
        .is_some_and(CurrentUser::password_pending);
    Ok(HttpResponse::Ok().json(json!({
        "email": owner.email,
        "hasPassword": facts.has_password,
        "mustChoosePassword": must_choose,
        "trialActive": check.trial_active,
        "trialEndDate": check.trial_end_date,
    })))
}

#[derive(Deserialize)]
pub struct SetupRequest {
    #[serde(default)]
    email: Option<String>,
    #[serde(default)]
    password: Option<String>,
}

/// `POST /api/account/setup {email, password}`: for the account the checkout created, sets the
/// first password, or checks the existing one; either way signs this browser in, once.
#[post("/account/setup")]
pub async fn setup(
    req: HttpRequest,
    db: web::Data<Db>,
    settings: web::Data<Settings>,
    throttle: web::Data<AuthThrottle>,
    cookies: web::Data<SessionCookies>,
    user: SessionHolder,
    body: web::Json<SetupRequest>,
) -> Result<HttpResponse, ApiError> {
    let db: &Db = &db;
    let body = body.into_inner();
    let email_text = body.email.unwrap_or_default();
    if email_text.trim().is_empty() {
        return Err(ApiError::bad_request("email_required", "Email is required"));
    }
    let email = Email::parse(&email_text)
        .map_err(|error| ApiError::bad_request(error.code(), error.to_string()))?;
    let password = body.password.unwrap_or_default();
    if password.is_empty() {
        return Err(ApiError::bad_request(
            "password_required",
            "Password is required",
        ));
    }
    let address = client_key(&req, &settings.server.forwarding());
    let too_many = || {
        ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "too_many_requests",
            crate::routes::auth::TOO_MANY_ATTEMPTS,
        )
    };
    // Without a checkout cookie (another device, or an account that existed before the
    // checkout), setup is a sign-in: an account with a password may enter it here. It answers as
    // the sign-in does, the same for an address without an account as for a wrong password, and
    // counts against the sign-in limits before anything is looked up: this form tells nobody
    // which addresses have accounts (docs/operations.md).
    // The account's password hash, once the typed password was checked against it.
    let mut checked_hash: Option<String> = None;
    let owner = match setup_right(&req, db, user.0).await {
        Ok(owner) => owner,
        Err(_) => {
            if !throttle.allow_login(&email, address).await {
                return Err(too_many());
            }
            let account = store::users::credentials_by_email(db, &email)
                .await
                .context("cannot read an account")?;
            let stored = account
                .as_ref()
                .and_then(|account| account.password_hash.clone());
            let matches = password.len() <= crate::domain::password::MAX_BYTES
                && auth::password::verify_password(stored.clone(), password.clone())
                    .await
                    .map_err(|error| error.into_api("cannot verify a password"))?;
            let Some(account) = account.filter(|_| matches) else {
                return Err(ApiError::new(
                    StatusCode::UNAUTHORIZED,
                    "invalid_credentials",
                    crate::routes::auth::INVALID_CREDENTIALS,
                ));
            };
            checked_hash = stored;
            SetupRight {
                user_id: account.id,
                email: account.email,
                token_hash: None,
                session: None,
            }
        }
    };
    if owner.email != email.as_str() {
        return Err(ApiError::bad_request(
            "email_mismatch",
            format!(
                "Please use the email address you paid with: {}",
                owner.email
            ),
        ));
    }
    let account = store::users::credentials_by_email(db, &email)
        .await
        .context("cannot read an account")?
        .ok_or_else(no_session)?;
    let new_hash = match account.password_hash.clone() {
        Some(_) if checked_hash.is_some() => None,
        Some(existing) => {
            if !throttle.allow_login(&email, address).await {
                return Err(too_many());
            }
            let matches = auth::password::verify_password(Some(existing.clone()), password)
                .await
                .map_err(|error| error.into_api("cannot verify a password"))?;
            if !matches {
                return Err(ApiError::new(
                    StatusCode::UNAUTHORIZED,
                    "wrong_password",
                    WRONG_PASSWORD,
                ));
            }
            checked_hash = Some(existing);
            None
        }
        None => {
            let password = NewPassword::parse(password).map_err(|error: PasswordError| {
                ApiError::bad_request(error.code(), error.to_string())
            })?;
            Some(
                auth::password::hash_password(password)
                    .await
                    .map_err(|error| error.into_api("cannot hash a password"))?,
            )
        }
    };
    // Spend the token before anything changes: of two racing requests, one sets up the account.
    if let Some(hash) = &owner.token_hash {
        store::billing::redeem_sign_in_token(db, hash, None)
            .await
            .context("cannot redeem a sign-in token")?
            .ok_or_else(no_session)?;
    }
    // A session that began with a mailed link chooses a password as the address's prover.
    let by_proof = owner.session.as_ref().is_some_and(CurrentUser::by_proof);
    if let Some(new_hash) = new_hash.clone() {
        // Only while there is none: a setup racing another, or a proof that took the account
        // over, does not set it after them.
        if !store::users::set_first_password(db, &account.id, new_hash, by_proof)
            .await
            .context("cannot store a password")?
        {
            return Err(no_session());
        }
        if by_proof {
            // The prover's password: every other session of the account ends with it (as at
            // a reset), so none from before keeps what the proved password brings.
            store::sessions::delete_all_of(db, &account.id)
                .await
                .context("cannot end sessions")?;
            if let Some(cluster) = req.app_data::<web::Data<crate::cluster::Cluster>>() {
                cluster.publish(crate::cluster::ClusterEvent::SignedOut {
                    user_id: account.id.clone(),
                    session: None,
                });
            }
        }
    }
    store::analytics::record_server_event(
        db,
        EventName::ACCOUNT_SETUP,
        Some(&account.id),
        json!({}),
    )
    .await;
    let trial_active = store::billing::access_facts(db, &account.id)
        .await
        .context("cannot read access")?
        .is_some_and(|facts| SubscriptionCheck::from_facts(&facts).trial_active);
    // The session that had to choose a password gives way to one that may go on.
    if let Some(pending) = owner.session.as_ref().filter(|s| s.password_pending()) {
        store::sessions::delete(db, &pending.session)
            .await
            .context("cannot end a session")?;
    }
    // Only while the account's password is still the one checked here or set here: a proof or a
    // reset landing meanwhile leaves this request without a session.
    let start = SessionStart {
        by_proof,
        password_pending: false,
    };
    let session = match checked_hash.as_ref().or(new_hash.as_ref()) {
        Some(hash) => auth::session::start_if_password_is(db, **cookies, &account.id, hash, start)
            .await?
            .ok_or_else(no_session)?,
        None => auth::session::start_as(db, **cookies, &account.id, start).await?,
    };
    Ok(HttpResponse::Ok()
        .cookie(session)
        .cookie(clear_checkout_cookie(**cookies))
        .json(json!({
            "user": { "id": account.id, "email": account.email },
            "trialActive": trial_active,
        })))
}

#[derive(Deserialize)]
pub struct TokenRequest {
    #[serde(default)]
    token: Option<String>,
}

/// `POST /api/auth/token {token?}`: signs in with a one-time token, from the body (the welcome
/// mail's link) or else from the checkout cookie. Works once; concurrent tries get one session.
/// A mailed link proves the address, which may take the account over
/// ([`auth::proof::redeem_sign_in_token`]): then `mustChoosePassword` says this session chooses
/// a new password before anything else.
#[post("/auth/token")]
pub async fn redeem_token(
    req: HttpRequest,
    db: web::Data<Db>,
    cookies: web::Data<SessionCookies>,
    cluster: web::Data<Cluster>,
    user: SessionHolder,
    body: web::Json<TokenRequest>,
) -> Result<HttpResponse, ApiError> {
    let invalid = || ApiError::new(StatusCode::UNAUTHORIZED, "invalid_token", TOKEN_INVALID);
    let hash = match body.into_inner().token {
        Some(value) if token::looks_like_secret(&value) => token::hash_secret(&value),
        Some(_) => return Err(invalid()),
        None => checkout_token_hash(&req).ok_or_else(invalid)?,
    };
    // A browser signed in to one account is not switched to another by a link (someone could
    // send a member their own link, and read what the member then types there): sign out first.
    if let Some(current) = &user.0
        && store::billing::sign_in_token_owner(&db, &hash)
            .await
            .context("cannot read a sign-in token")?
            .is_some_and(|owner| owner != current.id)
    {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "other_account",
            "This sign-in link is for another account. Please sign out first, then open it again.",
        ));
    }
    // The session is made in the redeem's own transaction: a proof or a reset landing at the
    // same moment cannot leave it standing beside them.
    let secret = token::new_secret();
    let owner =
        auth::proof::redeem_sign_in_token(&db, &cluster, &hash, Some(token::hash_secret(&secret)))
            .await
            .context("cannot redeem a sign-in token")?
            .ok_or_else(invalid)?;
    store::analytics::record_server_event(
        &db,
        EventName::LOGIN,
        Some(&owner.user_id),
        json!({"method": "token"}),
    )
    .await;
    let session = cookies.signed_in(secret);
    Ok(HttpResponse::Ok()
        .cookie(session)
        .cookie(clear_checkout_cookie(**cookies))
        .json(json!({ "user": {
            "id": owner.user_id,
            "email": owner.email,
            "mustChoosePassword": owner.password_pending,
        } })))
}

#[derive(Deserialize)]
pub struct ShortcutsRequest {
    shortcuts: Vec<String>,
}

/// `PUT /api/account/shortcuts {shortcuts: [name]}`: the member's extra shortcuts ('Select
/// Additional Shortcuts'), by name, in the order picked. Unknown names are refused; repeats are
/// kept once. The answer is the saved list (also in `/api/auth/me` as `user.shortcuts`).
#[put("/account/shortcuts")]
pub async fn save_shortcuts(
    user: CurrentUser,
    db: web::Data<Db>,
    content: web::Data<crate::content::Content>,
    body: web::Json<ShortcutsRequest>,
) -> Result<HttpResponse, ApiError> {
    let mut names: Vec<String> = Vec::new();
    for name in body.into_inner().shortcuts {
        if !content
            .shortcuts
            .iter()
            .any(|shortcut| shortcut.name == name)
        {
            return Err(ApiError::bad_request(
                "unknown_shortcut",
                "That shortcut is not available. Please reload the page and try again.",
            ));
        }
        if !names.contains(&name) {
            names.push(name);
        }
    }
    store::users::set_shortcuts(&db, &user.id, &names)
        .await
        .context("cannot save shortcuts")?;
    Ok(HttpResponse::Ok().json(json!({ "shortcuts": names })))
}

/// This module's endpoints.
pub fn configure(cfg: &mut actix_web::web::ServiceConfig) {
    cfg.service(redeem_token)
        .service(setup_status)
        .service(setup)
        .service(save_shortcuts);
}

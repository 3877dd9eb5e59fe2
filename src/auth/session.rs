//! Signed-in sessions: an HttpOnly, SameSite=Lax cookie holding a random secret (Secure when the
//! public URL is https), and the extractors that turn it into the user a handler serves.
//!
//! Lax rather than Strict: a member coming back from the hosted checkout arrives by a top-level
//! navigation from another site, and must arrive signed in. Cross-site POSTs carry no cookie, and
//! the API takes JSON bodies only, which a form on another site cannot send.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use actix_web::cookie::{Cookie, SameSite, time};
use actix_web::http::StatusCode;
use actix_web::{FromRequest, HttpRequest, web};

use super::token;
use crate::error::{ApiError, Context};
use crate::store::sessions::{SessionStart, SessionUser};
use crate::store::{self, Db};

/// The session cookie's name over plain http (local runs, tests); over https it is
/// `__Host-helpnow_session` ([`SessionCookies::session`]).
pub const COOKIE_NAME: &str = "helpnow_session";

/// How long a sign-in lasts without signing in again.
pub const SESSION_LIFETIME: Duration = Duration::from_secs(30 * 24 * 3600);

/// Cookie settings, from `server.public_url`. Over https every cookie of ours is Secure, has
/// Path=/ and no Domain, and its name carries the `__Host-` prefix: a browser accepts such a
/// cookie only from this very host over https, so neither a page on a sibling subdomain nor a
/// plain-http response forged on the network can plant one that the server would read (the
/// server reads only the prefixed name over https).
#[derive(Debug, Clone, Copy)]
pub struct SessionCookies {
    pub secure: bool,
}

impl SessionCookies {
    pub fn for_public_url(url: &url::Url) -> Self {
        Self {
            secure: url.scheme() == "https",
        }
    }

    /// The settings the app was built with (fail closed: none, no cookie is read).
    pub fn of(req: &HttpRequest) -> Option<Self> {
        req.app_data::<web::Data<SessionCookies>>()
            .map(|cookies| *cookies.get_ref())
    }

    /// The value of one of our cookies, by its name under these settings.
    pub fn read(req: &HttpRequest, name: impl FnOnce(Self) -> &'static str) -> Option<String> {
        let cookies = Self::of(req)?;
        req.cookie(name(cookies))
            .map(|cookie| cookie.value().to_owned())
    }

    fn named(self, name: &'static str, host_only: &'static str) -> &'static str {
        if self.secure { host_only } else { name }
    }

    /// The signed-in session.
    pub fn session(self) -> &'static str {
        self.named(COOKIE_NAME, "__Host-helpnow_session")
    }

    /// The visitor id (`vid`), set with the pages.
    pub fn visitor(self) -> &'static str {
        self.named("vid", "__Host-vid")
    }

    /// The success page's one-time sign-in token.
    pub fn checkout(self) -> &'static str {
        self.named("helpnow_checkout", "__Host-helpnow_checkout")
    }

    /// Which checkout this browser started.
    pub fn checkout_start(self) -> &'static str {
        self.named("helpnow_checkout_start", "__Host-helpnow_checkout_start")
    }

    fn build(self, value: String, max_age: time::Duration) -> Cookie<'static> {
        Cookie::build(self.session(), value)
            .path("/")
            .http_only(true)
            .same_site(SameSite::Lax)
            .secure(self.secure)
            .max_age(max_age)
            .finish()
    }

    /// The cookie of a signed-in session whose secret is `secret`.
    pub fn signed_in(self, secret: String) -> Cookie<'static> {
        let seconds = i64::try_from(SESSION_LIFETIME.as_secs()).unwrap_or(i64::MAX);
        self.build(secret, time::Duration::seconds(seconds))
    }

    /// Tells the browser to drop its session cookie.
    pub fn signed_out(self) -> Cookie<'static> {
        self.build(String::new(), time::Duration::ZERO)
    }
}

/// Starts a session for a user and returns the cookie that carries it.
pub async fn start(
    db: &Db,
    cookies: SessionCookies,
    user_id: &str,
) -> Result<Cookie<'static>, ApiError> {
    start_as(db, cookies, user_id, SessionStart::default()).await
}

/// Starts a session that began as `how` says (with a proof of the address, say).
pub async fn start_as(
    db: &Db,
    cookies: SessionCookies,
    user_id: &str,
    how: SessionStart,
) -> Result<Cookie<'static>, ApiError> {
    let secret = token::new_secret();
    store::sessions::create(
        db,
        user_id,
        token::hash_secret(&secret),
        SESSION_LIFETIME,
        how,
    )
    .await
    .context("cannot store a session")?;
    Ok(cookies.signed_in(secret))
}

/// Starts a session only while the account's password is still `password_hash` (the one the
/// caller just checked): `None` when a proof of the address took it away meanwhile.
pub async fn start_if_password_is(
    db: &Db,
    cookies: SessionCookies,
    user_id: &str,
    password_hash: &str,
    how: SessionStart,
) -> Result<Option<Cookie<'static>>, ApiError> {
    let secret = token::new_secret();
    let created = store::sessions::create_if_password_is(
        db,
        user_id,
        token::hash_secret(&secret),
        SESSION_LIFETIME,
        how,
        password_hash,
    )
    .await
    .context("cannot store a session")?;
    Ok(created.then(|| cookies.signed_in(secret)))
}

/// Ends the session the request carries, if any.
/// Ends the request's session; the user and the session's hash, when there was one.
pub async fn end(db: &Db, req: &HttpRequest) -> Result<Option<(String, String)>, ApiError> {
    let Some(secret) = session_secret(req) else {
        return Ok(None);
    };
    let hash = token::hash_secret(&secret);
    let user = store::sessions::find_user(db, &hash)
        .await
        .context("cannot read a session")?;
    store::sessions::delete(db, &hash)
        .await
        .context("cannot delete a session")?;
    Ok(user.map(|user| (user.user_id, hash)))
}

/// The session cookie's secret of a request, if it has one (looked up with [`user_of_session`]).
pub fn session_secret(req: &HttpRequest) -> Option<String> {
    SessionCookies::read(req, SessionCookies::session)
        .filter(|value| token::looks_like_secret(value))
}

/// The signed-in user behind a request: its id (the record key), email, and what the session's
/// holder has proved of the address.
#[derive(Debug, Clone)]
pub struct CurrentUser {
    pub id: String,
    pub email: String,
    /// The session's hash (to end it).
    pub session: String,
    session_user: SessionUser,
}

impl CurrentUser {
    /// The session began with the proof that took the account over and may do nothing but choose
    /// a new password (or sign out) until it has.
    pub fn password_pending(&self) -> bool {
        self.session_user.password_pending
    }

    /// The session began with a mailed link or a reset link.
    pub fn by_proof(&self) -> bool {
        self.session_user.by_proof
    }

    /// The session's holder has proved the account's address ([`SessionUser::holds_proved_address`]).
    pub fn holds_proved_address(&self) -> bool {
        self.session_user.holds_proved_address()
    }

    /// An address proved by whoever holds the current password: what admin rights need.
    pub fn proved_with_password(&self) -> bool {
        self.session_user.proved_with_password()
    }

    /// Whether the address is listed in `admin.emails` (`admins`), whatever its proof.
    pub fn listed_admin(&self, admins: &[String]) -> bool {
        admins
            .iter()
            .any(|email| email.trim().eq_ignore_ascii_case(&self.email))
    }

    /// Whether the endpoints under `/api/admin` answer this user: listed in `admin.emails`, the
    /// address proved by a mailed link and the password chosen by its prover (what
    /// `routes::admin::Admin` checks, less its rate limit). The header's menu shows the
    /// dashboard's link by it; the server decides access.
    pub fn is_admin(&self, admins: &[String]) -> bool {
        self.listed_admin(admins) && self.proved_with_password()
    }
}

/// Looks up the session cookie of a request (a pending session too: see [`SessionHolder`]).
pub async fn current_user(db: &Db, req: &HttpRequest) -> Result<Option<CurrentUser>, ApiError> {
    match session_secret(req) {
        Some(secret) => user_of_session(db, &secret).await,
        None => Ok(None),
    }
}

/// The signed-in user of a session secret.
pub async fn user_of_session(db: &Db, secret: &str) -> Result<Option<CurrentUser>, ApiError> {
    let hash = token::hash_secret(secret);
    let found = store::sessions::find_user(db, &hash)
        .await
        .context("cannot read a session")?;
    Ok(found.map(|user| CurrentUser {
        id: user.user_id.clone(),
        email: user.email.clone(),
        session: hash,
        session_user: user,
    }))
}

fn database(req: &HttpRequest) -> Result<Db, ApiError> {
    req.app_data::<web::Data<Db>>()
        .map(|db| db.get_ref().clone())
        .ok_or_else(|| ApiError::internal("session lookup", "the database is not registered"))
}

pub fn sign_in_required() -> ApiError {
    ApiError::new(
        StatusCode::UNAUTHORIZED,
        "sign_in_required",
        "Please sign in to continue.",
    )
}

pub fn password_required() -> ApiError {
    ApiError::new(StatusCode::FORBIDDEN, "choose_password", CHOOSE_PASSWORD)
}

/// What a session that must choose a password is told by everything else.
pub const CHOOSE_PASSWORD: &str =
    "Your email address is confirmed. For your safety, please choose a new password to continue.";

/// A handler argument that answers 401 when nobody is signed in, and 403 `choose_password` to a
/// session that must choose a new password first.
impl FromRequest for CurrentUser {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, Self::Error>>>>;

    fn from_request(req: &HttpRequest, _payload: &mut actix_web::dev::Payload) -> Self::Future {
        let req = req.clone();
        Box::pin(async move {
            let db = database(&req)?;
            let user = current_user(&db, &req)
                .await?
                .ok_or_else(sign_in_required)?;
            if user.password_pending() {
                return Err(password_required());
            }
            Ok(user)
        })
    }
}

/// A handler argument for pages that serve visitors and members alike. A session that must
/// choose a new password counts as nobody here.
pub struct MaybeUser(pub Option<CurrentUser>);

impl FromRequest for MaybeUser {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, Self::Error>>>>;

    fn from_request(req: &HttpRequest, _payload: &mut actix_web::dev::Payload) -> Self::Future {
        let req = req.clone();
        Box::pin(async move {
            let db = database(&req)?;
            let user = current_user(&db, &req).await?;
            Ok(MaybeUser(user.filter(|user| !user.password_pending())))
        })
    }
}

/// The session's holder whatever it may do, a session that must choose a new password included:
/// for the few endpoints such a session uses (who am I, and choosing the password).
pub struct SessionHolder(pub Option<CurrentUser>);

impl FromRequest for SessionHolder {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, Self::Error>>>>;

    fn from_request(req: &HttpRequest, _payload: &mut actix_web::dev::Payload) -> Self::Future {
        let req = req.clone();
        Box::pin(async move {
            let db = database(&req)?;
            Ok(SessionHolder(current_user(&db, &req).await?))
        })
    }
}

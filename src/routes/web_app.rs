//! The built React app: `index.html` for every route of the spec's route table, its static files,
//! and a redirect to `/` for any other path (the spec's last row).
//!
//! The web build writes a Brotli (`.br`) and a gzip (`.gz`) copy beside each text file it emits
//! (`web/scripts/precompress.mjs`); a request whose `Accept-Encoding` allows one gets it as is, with
//! `Content-Encoding` and `Vary: Accept-Encoding`, so nothing is compressed per request.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use actix_files::NamedFile;
use actix_web::cookie::{Cookie, SameSite, time};
use actix_web::http::header::{
    self, AcceptEncoding, CacheControl, CacheDirective, ContentEncoding, Encoding, Header,
    Preference,
};
use actix_web::{HttpRequest, HttpResponse, web};

use crate::auth::{SessionCookies, token};
use crate::domain::VisitorId;
use crate::domain::journey;
use crate::flows::FlowLibrary;
use crate::routes::events::BrowserAnalytics;
use crate::store::Db;
use crate::store::analytics::NewAnalyticsEvent;
use crate::store::batch::{Batcher, Statement};
use crate::store::journeys::{JourneyRecorder, JourneyStep};
use helpnow_actors::rules::FunnelKind;
use helpnow_actors::rules::experiments::{ArmRef, Visit};

/// Every path of the spec's route table that the web app renders (query strings such as
/// `/?canceled=true` land on `/`). `/demo-checkout/{id}` is the built-in checkout page.
pub const APP_ROUTES: &[&str] = &[
    "/",
    "/landing",
    "/get-help",
    "/funnel",
    "/chat-help",
    "/Chat-Help-2",
    "/email-help",
    "/login",
    "/signup",
    "/members",
    "/account-setup",
    "/checkout-success",
    "/checkout-debug",
    "/demo-checkout/{id}",
    // The operator's dashboard, and the checkout debug page under it (admins only: the page
    // shows what the admin API answers, which is 404 for anyone else).
    "/admin",
    "/admin/checkout-debug",
    // The funnels' flows: edit, try, publish, and the drop-off (issue 47).
    "/admin/flows",
    // Experiments: split a campaign between flow versions or offers (issue 48).
    "/admin/experiments",
];

/// Pages answer HEAD as they answer GET (load balancers and uptime checks use HEAD).
fn is_page_method(method: &actix_web::http::Method) -> bool {
    matches!(
        *method,
        actix_web::http::Method::GET | actix_web::http::Method::HEAD
    )
}

/// Where the built app lives; shared with the handlers.
#[derive(Clone)]
pub struct StaticDir(pub PathBuf);

impl StaticDir {
    fn index(&self) -> PathBuf {
        self.0.join("index.html")
    }

    /// `pages/<name>.html`, which the web build writes for each route (`web/scripts/route-pages.mjs`):
    /// index.html naming the route's page chunks too. `name` is the route's first segment, `home`
    /// for `/`.
    fn page(&self, route: &str) -> Option<PathBuf> {
        let name = match route.trim_start_matches('/').split('/').next() {
            None | Some("") => "home",
            Some(name) => name,
        };
        let plain = name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_'));
        plain.then(|| self.0.join("pages").join(format!("{name}.html")))
    }
}

/// Serves the route's page file (else `index.html`) without caching, so a new build reaches
/// browsers at once. A browser without a visitor cookie gets one: it keys the funnel
/// conversations and attribution.
async fn index(
    req: HttpRequest,
    dir: web::Data<StaticDir>,
    cookies: web::Data<SessionCookies>,
    analytics: Option<web::Data<Batcher>>,
    journeys: Option<web::Data<JourneyRecorder>>,
    browser: Option<web::Data<BrowserAnalytics>>,
    flows: Option<web::Data<FlowLibrary>>,
) -> HttpResponse {
    let known = req
        .cookie(cookies.visitor())
        .and_then(|cookie| VisitorId::parse(cookie.value()));
    let visitor = known
        .as_ref()
        .map(|visitor| visitor.as_str().to_owned())
        .unwrap_or_else(token::new_secret);
    // A preview of a draft (/admin's Flows page) is counted nowhere.
    let preview = req
        .query_string()
        .split('&')
        .any(|pair| pair.split('=').next() == Some("preview"));
    let query = query_fields(&req);
    let landing = match (&flows, funnel_of_page(req.path())) {
        (Some(flows), Some(funnel)) if !preview => {
            Some(landing(&req, &query, flows, funnel, &visitor))
        }
        _ => None,
    };
    let visitor_cookie = known.is_none().then(|| {
        Cookie::build(cookies.visitor(), visitor.clone())
            .path("/")
            .http_only(true)
            .same_site(SameSite::Lax)
            .secure(cookies.secure)
            .max_age(time::Duration::days(365))
            .finish()
    });
    // An experiment's arm or a campaign's offer route has this visitor meet another funnel: its
    // page, with the same address's campaign (issue 48).
    if let Some(Landing {
        redirect: Some(location),
        ..
    }) = &landing
    {
        let mut response = HttpResponse::Found();
        response
            .insert_header((header::LOCATION, location.as_str()))
            .insert_header((header::CACHE_CONTROL, "no-store"));
        if let Some(cookie) = visitor_cookie {
            response.cookie(cookie);
        }
        return response.finish();
    }
    let arm = landing.and_then(|landing| landing.arm);
    let page = match req.match_pattern().and_then(|route| dir.page(&route)) {
        Some(page) => open_built_file(&req, &page).await.ok(),
        None => None,
    };
    let file = match page {
        Some(file) => Ok(file),
        None => open_built_file(&req, &dir.index()).await,
    };
    match file {
        Ok(file) => {
            let mut response = vary_by_encoding(file.into_response(&req));
            response.headers_mut().insert(
                header::CACHE_CONTROL,
                header::HeaderValue::from_static("no-cache"),
            );
            if req.method() == actix_web::http::Method::GET
                && !preview
                && let (Some(analytics), Some(journeys), Some(browser)) =
                    (analytics, journeys, browser)
            {
                record_page_view(
                    &analytics,
                    &journeys,
                    &browser,
                    &req,
                    &query,
                    &visitor,
                    arm.as_ref(),
                );
            }
            if let Some(cookie) = visitor_cookie
                && let Err(error) = response.add_cookie(&cookie)
            {
                tracing::warn!(%error, "the visitor cookie could not be set");
            }
            response
        }
        Err(error) => {
            tracing::error!(%error, path = %dir.index().display(), "the web app is not built");
            HttpResponse::ServiceUnavailable()
                .content_type("text/plain; charset=utf-8")
                .body("The web app is not built yet. Build it with `npm --prefix web ci && npm --prefix web run build`, or start the product with the README's run command.")
        }
    }
}

/// The page view of a page load (the app's own navigations after it are the app's to report),
/// with the campaign its address names, in the analytics writes' group commit. A view of the help
/// form's page is a visitor of that funnel on the dashboard. Within the client address's limit
/// and the queue's room only ([`BrowserAnalytics`]); the page is served either way.
fn record_page_view(
    analytics: &Batcher,
    journeys: &JourneyRecorder,
    browser: &BrowserAnalytics,
    req: &HttpRequest,
    query: &HashMap<String, String>,
    visitor: &str,
    arm: Option<&ArmRef>,
) {
    let Some(queued) = browser.queue_page_view() else {
        return;
    };
    let address = req
        .app_data::<web::Data<crate::config::Settings>>()
        .map_or_else(
            || req.peer_addr().map(|peer| peer.ip()),
            |settings| crate::client::client_key(req, &settings.server.forwarding()),
        );
    let path = req.path().chars().take(512).collect::<String>();
    let campaign = journey::campaign(|field| query.get(field).map(String::as_str));
    let step = journey::funnel_viewed("page_view", Some(&path)).map(|funnel| {
        JourneyStep::new(visitor, funnel, journey::Step::Visitors)
            .attribution(Some(campaign.clone()))
            .arm(arm)
    });
    // An address that names a campaign is the visitor's first touch, unless one came before.
    let first_touch = campaign
        .as_object()
        .is_some_and(|fields| !fields.is_empty())
        .then(|| Statement::Visitor {
            id: visitor.to_owned(),
            attribution: Some(campaign.clone()),
        });
    let mut properties = campaign;
    if let (Some(arm), Some(fields)) = (arm, properties.as_object_mut()) {
        fields.insert("experiment".into(), arm.experiment.clone().into());
        fields.insert("arm".into(), arm.arm.clone().into());
    }
    let mut view = NewAnalyticsEvent {
        first_touch: None,
        name: "page_view".to_owned(),
        properties,
        visitor: Some(visitor.to_owned()),
        path: Some(path),
        user: None,
    };
    let analytics = analytics.clone();
    let journeys = journeys.clone();
    let browser = browser.clone();
    // A member's page view names the account, looked up behind the page's answer.
    let session = crate::auth::session::session_secret(req);
    let db = req
        .app_data::<web::Data<Db>>()
        .map(|db| db.get_ref().clone());
    tokio::spawn(async move {
        let _queued = queued;
        if !browser.allow_page_view(address).await {
            return;
        }
        if let Some(step) = step {
            journeys.record(step);
        }
        if let (Some(secret), Some(db)) = (session, db) {
            match crate::auth::session::user_of_session(&db, &secret).await {
                Ok(user) => {
                    view.user = user.map(|user| surrealdb::types::RecordId::new("user", user.id));
                }
                Err(error) => tracing::warn!(?error, "a page view's session could not be read"),
            }
        }
        // Together, so that they share a group commit (visits go before events in it).
        let writes = first_touch.into_iter().chain([Statement::Analytics(view)]);
        let written = futures_util::future::join_all(writes.map(|s| analytics.submit(s))).await;
        for error in written.into_iter().filter_map(Result::err) {
            tracing::warn!(%error, "a page view could not be recorded");
        }
    });
}

/// The funnel a page is of.
fn funnel_of_page(path: &str) -> Option<FunnelKind> {
    match path.trim_end_matches('/') {
        "/chat-help" | "/email-help" => Some(FunnelKind::Chat),
        "/Chat-Help-2" => Some(FunnelKind::Refundable),
        "/get-help" | "/funnel" => Some(FunnelKind::Help),
        _ => None,
    }
}

/// The page of a funnel.
fn page_of_funnel(funnel: FunnelKind) -> &'static str {
    match funnel {
        FunnelKind::Chat => "/chat-help",
        FunnelKind::Refundable => "/Chat-Help-2",
        FunnelKind::Help => "/get-help",
    }
}

/// Where a visitor who opened a funnel's page belongs.
struct Landing {
    /// Another funnel's page (with the same query) that their arm or campaign has them meet.
    redirect: Option<String>,
    /// Their experiment's arm, in this funnel.
    arm: Option<ArmRef>,
}

/// A page address's query as fields (none when it does not parse).
fn query_fields(req: &HttpRequest) -> HashMap<String, String> {
    web::Query::<HashMap<String, String>>::from_query(req.query_string())
        .map(web::Query::into_inner)
        .unwrap_or_default()
}

/// The visitor's arm or offer on a funnel's page (`fields`: its query); the help form's page is
/// its arm shown, so its exposure is recorded here (a chat funnel's is its conversation's start).
fn landing(
    req: &HttpRequest,
    fields: &HashMap<String, String>,
    flows: &FlowLibrary,
    funnel: FunnelKind,
    visitor: &str,
) -> Landing {
    let (meets, arm) = flows.catalog().landing(&Visit {
        funnel,
        campaignid: fields.get("campaignid").map(String::as_str),
        keyword: fields.get("keyword").map(String::as_str),
        visitor,
    });
    if meets != funnel {
        let mut query = req.query_string().to_owned();
        // /email-help is the chat funnel about email: its keyword goes along.
        if req.path().trim_end_matches('/') == "/email-help" && !fields.contains_key("keyword") {
            query = if query.is_empty() {
                "keyword=email".to_owned()
            } else {
                format!("{query}&keyword=email")
            };
        }
        let page = page_of_funnel(meets);
        return Landing {
            redirect: Some(if query.is_empty() {
                page.to_owned()
            } else {
                format!("{page}?{query}")
            }),
            arm: None,
        };
    }
    if funnel == FunnelKind::Help
        && req.method() == actix_web::http::Method::GET
        && let (Some(arm), Some(db)) = (&arm, req.app_data::<web::Data<Db>>())
    {
        let (db, arm, visitor) = (db.get_ref().clone(), arm.clone(), visitor.to_owned());
        tokio::spawn(async move {
            if let Err(error) =
                crate::store::experiments::expose_help_form(&db, &arm, &visitor).await
            {
                tracing::warn!(%error, "a help form's exposure could not be recorded");
            }
        });
    }
    Landing {
        redirect: None,
        arm,
    }
}

fn redirect_home() -> HttpResponse {
    HttpResponse::Found()
        .insert_header((header::LOCATION, "/"))
        .finish()
}

/// Registers the app routes and, last, the built files with the redirect for anything unknown.
pub fn configure(cfg: &mut web::ServiceConfig, static_dir: &Path) {
    cfg.app_data(web::Data::new(StaticDir(static_dir.to_path_buf())));
    for route in APP_ROUTES {
        cfg.route(
            route,
            web::route()
                .guard(actix_web::guard::fn_guard(|ctx| {
                    is_page_method(&ctx.head().method)
                }))
                .to(index),
        );
    }
    cfg.default_service(web::to(built_file_or_home));
}

/// A file of the build (`/assets/...`, `/icons/...`, `/favicon.svg`), else a redirect to `/`.
/// Only plain names are looked up: no hidden files, no `..`, nothing that needs decoding.
async fn built_file_or_home(req: HttpRequest, dir: web::Data<StaticDir>) -> HttpResponse {
    if !is_page_method(req.method()) {
        return redirect_home();
    }
    let Some(relative) = safe_relative_path(req.path()) else {
        return redirect_home();
    };
    if relative == Path::new("index.html") {
        return redirect_home();
    }
    match open_built_file(&req, &dir.0.join(&relative)).await {
        Ok(file) if file.metadata().is_file() => {
            vary_by_encoding(file.prefer_utf8(true).into_response(&req))
        }
        _ => redirect_home(),
    }
}

/// A built file, as its precompressed copy when the request accepts one and the build wrote it.
/// The copy keeps the file's content type and gets its own `ETag` (from its own metadata), as a
/// different representation must. Range requests get the file itself: their bytes are the file's.
async fn open_built_file(req: &HttpRequest, path: &Path) -> std::io::Result<NamedFile> {
    if !req.headers().contains_key(header::RANGE) {
        let accepted = AcceptEncoding::parse(req).ok();
        for (encoding, suffix) in PRECOMPRESSED {
            if !accepted
                .as_ref()
                .is_some_and(|accepted| accepts(accepted, encoding))
            {
                continue;
            }
            let mut variant = path.as_os_str().to_owned();
            variant.push(suffix);
            if let Ok(file) = NamedFile::open_async(PathBuf::from(variant)).await
                && file.metadata().is_file()
            {
                let extension = path.extension().and_then(|ext| ext.to_str()).unwrap_or("");
                return Ok(with_validators(file)
                    .set_content_type(actix_files::file_extension_to_mime(extension))
                    .disable_content_disposition()
                    .set_content_encoding(encoding));
            }
        }
    }
    NamedFile::open_async(path).await.map(with_validators)
}

fn with_validators(file: NamedFile) -> NamedFile {
    file.use_etag(true).use_last_modified(true)
}

/// The precompressed copies the build writes, in the server's order of preference.
const PRECOMPRESSED: [(ContentEncoding, &str); 2] = [
    (ContentEncoding::Brotli, ".br"),
    (ContentEncoding::Gzip, ".gz"),
];

/// Whether `Accept-Encoding` allows `encoding`: named with a non-zero weight, or not named and
/// allowed by `*`. Weights between the accepted ones are not compared: Brotli is the smaller.
fn accepts(accepted: &AcceptEncoding, encoding: ContentEncoding) -> bool {
    let wanted = Encoding::Known(encoding);
    let named = accepted
        .iter()
        .find(|item| matches!(&item.item, Preference::Specific(named) if *named == wanted));
    match named {
        Some(item) => item.quality > header::Quality::ZERO,
        None => accepted.iter().any(|item| {
            matches!(item.item, Preference::Any) && item.quality > header::Quality::ZERO
        }),
    }
}

/// Any built file may come precompressed, so caches must key its answers on `Accept-Encoding`.
fn vary_by_encoding(mut response: HttpResponse) -> HttpResponse {
    response.headers_mut().insert(
        header::VARY,
        header::HeaderValue::from_static("Accept-Encoding"),
    );
    response
}

/// The request path as a path inside the build folder, when every segment is a plain file name.
fn safe_relative_path(path: &str) -> Option<PathBuf> {
    let mut relative = PathBuf::new();
    for segment in path.trim_start_matches('/').split('/') {
        let plain = !segment.is_empty()
            && !segment.starts_with('.')
            && segment
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'));
        if !plain {
            return None;
        }
        relative.push(segment);
    }
    Some(relative)
}

/// Vite names built assets by content hash, so they may be cached for a year.
pub fn cache_headers_for(path: &str) -> Option<CacheControl> {
    path.starts_with("/assets/").then(|| {
        CacheControl(vec![
            CacheDirective::Public,
            CacheDirective::MaxAge(31_536_000),
            CacheDirective::Extension("immutable".to_owned(), None),
        ])
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_hashed_assets_are_cached_for_long() {
        assert!(cache_headers_for("/assets/index-3f2a.js").is_some());
        assert!(cache_headers_for("/icons/gmail.svg").is_none());
        assert!(cache_headers_for("/").is_none());
    }

    #[test]
    fn only_plain_file_names_are_looked_up() {
        assert_eq!(
            safe_relative_path("/assets/index-3f2a.js"),
            Some(PathBuf::from("assets/index-3f2a.js"))
        );
        assert_eq!(
            safe_relative_path("/icons/yahoo-mail.svg"),
            Some(PathBuf::from("icons/yahoo-mail.svg"))
        );
        for path in [
            "/",
            "/.env",
            "/assets/../Cargo.toml",
            "/a//b",
            "/%2e%2e/etc",
            "/icons/.hidden",
            "/a b",
        ] {
            assert_eq!(safe_relative_path(path), None, "{path}");
        }
    }

    #[test]
    fn the_route_table_is_served_case_exactly() {
        assert!(APP_ROUTES.contains(&"/Chat-Help-2"));
        assert!(!APP_ROUTES.contains(&"/chat-help-2"));
    }
}

//! What every HTTP answer gets: its request id (`x-request-id`, the id in the request's log
//! lines), the security headers, and long caching for content-hashed assets; and what every
//! `/api` request must be: a write from this site, not another one.

use actix_web::HttpMessage;
use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{self, HeaderValue};
use actix_web::middleware::Next;

use crate::realtime::OriginPolicy;

/// The response header that carries the request's id.
pub const REQUEST_ID_HEADER: &str = "x-request-id";

/// Answers with the id that `tracing_actix_web::TracingLogger` gave the request (its span's
/// `request_id`, so a person's report can be found in the logs).
pub async fn request_id_header(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let id = req
        .extensions()
        .get::<tracing_actix_web::RequestId>()
        .map(ToString::to_string);
    let mut response = next.call(req).await?;
    if let Some(id) = id.and_then(|id| HeaderValue::from_str(&id).ok()) {
        response
            .headers_mut()
            .insert(header::HeaderName::from_static(REQUEST_ID_HEADER), id);
    }
    Ok(response)
}

/// The pages the site itself may frame: the chat funnels', for /admin's preview of a draft.
const FRAMED_BY_SITE: [&str; 3] = ["/chat-help", "/Chat-Help-2", "/email-help"];

/// Security headers on every answer; long caching for content-hashed assets.
pub async fn security_headers(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
    hsts: bool,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let cache = super::web_app::cache_headers_for(req.path());
    // The chat funnels' pages may be framed by the site itself: /admin's Flows page tries a
    // draft in one (issue 47). Nothing else may be framed, by anyone.
    let framed_by_site = FRAMED_BY_SITE.contains(&req.path());
    let mut response = next.call(req).await?;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(if framed_by_site {
            "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; \
             connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'self'; \
             frame-ancestors 'self'; form-action 'self'"
        } else {
            "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; \
             connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'self'; \
             frame-ancestors 'none'; form-action 'self'"
        }),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::X_FRAME_OPTIONS,
        HeaderValue::from_static(if framed_by_site { "SAMEORIGIN" } else { "DENY" }),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("strict-origin-when-cross-origin"),
    );
    headers.insert(
        header::HeaderName::from_static("permissions-policy"),
        HeaderValue::from_static("camera=(), microphone=(), geolocation=(), payment=()"),
    );
    headers.insert(
        header::HeaderName::from_static("cross-origin-opener-policy"),
        HeaderValue::from_static("same-origin"),
    );
    if hsts {
        headers.insert(
            header::STRICT_TRANSPORT_SECURITY,
            HeaderValue::from_static("max-age=31536000; includeSubDomains"),
        );
    }
    if let Some(cache) = cache
        && response.status().is_success()
    {
        response.headers_mut().insert(
            header::CACHE_CONTROL,
            HeaderValue::from_str(&cache.to_string())
                .unwrap_or_else(|_| HeaderValue::from_static("no-cache")),
        );
    }
    Ok(response)
}

/// Refuses an unsafe request (POST, PUT, PATCH, DELETE) that a browser sent from another site:
/// `Sec-Fetch-Site` other than same-origin or none (typed or bookmarked), else an `Origin` that
/// is not this site's (the real-time channel's policy: `server.site_origins`). Cancel, refund, the billing portal and sign-out take no body and relied on
/// SameSite cookies alone. A request with neither header (a provider's webhook, a script) is not
/// a browser's and goes on; the endpoints decide.
pub async fn same_site_writes(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
    origins: std::sync::Arc<OriginPolicy>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    use actix_web::http::Method;
    let unsafe_method = matches!(
        *req.method(),
        Method::POST | Method::PUT | Method::PATCH | Method::DELETE
    );
    if unsafe_method && !from_this_site(req.headers(), &origins) {
        return Err(crate::error::ApiError::new(
            actix_web::http::StatusCode::FORBIDDEN,
            "cross_site",
            "This request came from another website, so it was refused.",
        )
        .into());
    }
    next.call(req).await
}

fn from_this_site(headers: &header::HeaderMap, origins: &OriginPolicy) -> bool {
    if let Some(site) = headers.get("sec-fetch-site") {
        return matches!(site.to_str(), Ok("same-origin" | "none"));
    }
    match headers.get(header::ORIGIN).map(HeaderValue::to_str) {
        None => true,
        Some(Ok(origin)) => origins.allows(Some(origin)),
        Some(Err(_)) => false,
    }
}

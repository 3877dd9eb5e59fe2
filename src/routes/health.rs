//! Liveness (`/health/live`: the process answers), readiness (`/health/ready`, and `/health` as
//! the balancer asks it: the database answers and the server is not stopping) and `/metrics`
//! (Prometheus text, with the standard `process_*` figures).

use std::sync::Arc;

use actix_web::{HttpResponse, get, guard, route, web};
use serde_json::json;

use crate::metrics::Metrics;
use crate::realtime::RealtimeServer;
use crate::store::{self, Db};

/// Liveness: the process answers HTTP (nothing else is asked, so a slow database never gets a
/// live process restarted).
#[route("/health/live", method = "GET", method = "HEAD")]
pub async fn live() -> HttpResponse {
    HttpResponse::Ok().json(json!({ "status": "ok" }))
}

/// Readiness: whether this process should get traffic (at `/health/ready`, and at `/health`
/// where the balancer asks).
pub async fn ready(db: web::Data<Db>, realtime: web::Data<RealtimeServer>) -> HttpResponse {
    if realtime.is_draining() {
        // It is stopping: the balancer sends new clients elsewhere.
        return HttpResponse::ServiceUnavailable().json(json!({ "status": "stopping" }));
    }
    if store::is_healthy(&db).await {
        HttpResponse::Ok().json(json!({ "status": "ok", "database": "ok" }))
    } else {
        tracing::warn!("health check: the database does not answer");
        HttpResponse::ServiceUnavailable()
            .json(json!({ "status": "unavailable", "database": "unavailable" }))
    }
}

#[get("/metrics")]
pub async fn metrics(metrics: web::Data<Arc<Metrics>>) -> HttpResponse {
    match metrics.render() {
        Ok(text) => HttpResponse::Ok()
            .content_type("text/plain; version=0.0.4; charset=utf-8")
            .body(text),
        Err(error) => {
            tracing::error!(%error, "cannot render metrics");
            HttpResponse::InternalServerError().finish()
        }
    }
}

/// This module's endpoints.
pub fn configure(cfg: &mut actix_web::web::ServiceConfig) {
    cfg.service(live)
        .service(
            web::resource(["/health/ready", "/health"]).route(
                web::route()
                    .guard(guard::Any(guard::Get()).or(guard::Head()))
                    .to(ready),
            ),
        )
        .service(metrics);
}

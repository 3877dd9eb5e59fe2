//! `/health` (the database answers) and `/metrics` (Prometheus text).

use std::sync::Arc;

use actix_web::{HttpResponse, get, route, web};
use serde_json::json;

use crate::metrics::Metrics;
use crate::store::{self, Db};

#[route("/health", method = "GET", method = "HEAD")]
pub async fn health(db: web::Data<Db>) -> HttpResponse {
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

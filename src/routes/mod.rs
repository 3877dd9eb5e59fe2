//! HTTP handlers by area, one module each.

pub mod account;
pub mod admin;
pub mod auth;
pub mod billing;
pub mod chats;
pub mod content;
pub mod events;
pub mod funnels;
pub mod health;
pub mod middleware;
pub mod tasks;
pub mod web_app;

use crate::error::ApiError;

/// Unknown `/api` paths answer JSON 404s rather than the web app's redirect.
pub async fn api_not_found() -> Result<actix_web::HttpResponse, ApiError> {
    Err(ApiError::not_found())
}

/// Every endpoint under `/api`, each module's own (the demo checkout's only while it is the
/// payment provider).
pub fn configure_api(cfg: &mut actix_web::web::ServiceConfig, demo_payments: bool) {
    content::configure(cfg);
    events::configure(cfg);
    auth::configure(cfg);
    account::configure(cfg);
    billing::configure(cfg, demo_payments);
    admin::configure(cfg);
    funnels::configure(cfg);
    tasks::configure(cfg);
    chats::configure(cfg);
}

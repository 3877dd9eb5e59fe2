//! Public, read-only content: the product's public settings, the legal texts and the shortcut list.

use actix_web::{HttpResponse, get, web};
use serde::Serialize;

use crate::config::{AiProviderKind, Settings};
use crate::content::{Content, Shortcut};
use crate::error::ApiError;

/// What the browser may know of the settings; never a key or secret.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PublicConfig<'a> {
    product_name: &'a str,
    assistant_name: &'a str,
    support_email: &'a str,
    debug_tools: bool,
    /// `offline` when members' answers come from the help library (the chat says so once, above
    /// the conversation), `live` with an AI service.
    ai_mode: &'static str,
}

#[get("/public-config")]
pub async fn public_config(settings: web::Data<Settings>) -> HttpResponse {
    HttpResponse::Ok().json(PublicConfig {
        product_name: &settings.product.name,
        assistant_name: &settings.product.assistant_name,
        support_email: &settings.product.support_email,
        debug_tools: settings.security.debug_tools,
        ai_mode: match settings.ai.provider {
            AiProviderKind::Offline => "offline",
            AiProviderKind::Openai => "live",
        },
    })
}

#[get("/legal/{slug}")]
pub async fn legal(
    content: web::Data<Content>,
    slug: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    content
        .legal(&slug)
        .map(|doc| HttpResponse::Ok().json(doc))
        .ok_or_else(ApiError::not_found)
}

#[derive(Serialize)]
struct Shortcuts<'a> {
    shortcuts: &'a [Shortcut],
}

#[get("/shortcuts")]
pub async fn shortcuts(content: web::Data<Content>) -> HttpResponse {
    HttpResponse::Ok().json(Shortcuts {
        shortcuts: &content.shortcuts,
    })
}

/// This module's endpoints.
pub fn configure(cfg: &mut actix_web::web::ServiceConfig) {
    cfg.service(public_config).service(legal).service(shortcuts);
}

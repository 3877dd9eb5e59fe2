//! `/api/chats`: the signed-in member's saved conversations, the history panel and the chat it
//! loads (spec sections 2, 3, 4 and 5). Chats are created and written over the real-time channel
//! (the member chat actor); here they are listed, read and deleted. A chat that is not the
//! member's, and an id that cannot be one, are both "Conversation not found." (404): the answer
//! never tells whether another member's chat exists.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, delete, get, web};
use chrono::{DateTime, SecondsFormat, Utc};
use helpnow_actors::rules::chat::list_title;
use serde_json::{Value, json};

use crate::auth::CurrentUser;
use crate::error::ApiError;
use crate::store::chats::{ChatId, ChatStoreError, ChatSummary, MAX_LISTED_CHATS, Message};
use crate::store::{self, Db};

pub const CHAT_NOT_FOUND: &str = "Conversation not found.";

fn not_found() -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, "not_found", CHAT_NOT_FOUND)
}

fn store_error(context: &str, error: ChatStoreError) -> ApiError {
    match error {
        ChatStoreError::NotFound => not_found(),
        other => ApiError::internal(context, other),
    }
}

fn chat_id(raw: &str) -> Result<ChatId, ApiError> {
    ChatId::parse(raw).ok_or_else(not_found)
}

/// A time as JavaScript's `toISOString()` writes it.
fn iso(time: &DateTime<Utc>) -> String {
    time.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// A history row: `{id, title, listTitle, preview, timestamp}` (the list's cuts of the spec).
fn summary_json(chat: &ChatSummary) -> Value {
    json!({
        "id": chat.id,
        "title": chat.title,
        "listTitle": list_title(&chat.title),
        "preview": chat.preview,
        "timestamp": iso(&chat.updated_at),
    })
}

fn message_json(message: &Message) -> Value {
    json!({
        "id": message.id,
        "role": message.role.as_str(),
        "content": message.content,
        "timestamp": iso(&message.created_at),
    })
}

/// `GET /api/chats` -> `{chats: [...]}`, the most recently active first.
#[get("/chats")]
pub async fn list_chats(user: CurrentUser, db: web::Data<Db>) -> Result<HttpResponse, ApiError> {
    let chats = store::chats::list_chats(&db, &user.id, MAX_LISTED_CHATS)
        .await
        .map_err(|e| store_error("cannot list chats", e))?;
    let chats: Vec<Value> = chats.iter().map(summary_json).collect();
    Ok(HttpResponse::Ok().json(json!({ "chats": chats })))
}

/// `GET /api/chats/{id}` -> `{chat: {id, title, timestamp, messages: [{id, role, content,
/// timestamp}]}}`, the messages oldest first (the greeting is the first).
#[get("/chats/{id}")]
pub async fn get_chat(
    user: CurrentUser,
    db: web::Data<Db>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id = chat_id(&path.into_inner())?;
    let (chat, messages) = store::chats::chat_with_messages(&db, &user.id, &id)
        .await
        .map_err(|e| store_error("cannot read a chat", e))?
        .ok_or_else(not_found)?;
    let messages: Vec<Value> = messages.iter().map(message_json).collect();
    Ok(HttpResponse::Ok().json(json!({
        "chat": {
            "id": chat.id,
            "title": chat.title,
            "timestamp": iso(&chat.updated_at),
            "messages": messages,
        }
    })))
}

/// `DELETE /api/chats/{id}` -> 204; the chat's messages go with it.
#[delete("/chats/{id}")]
pub async fn delete_chat(
    user: CurrentUser,
    db: web::Data<Db>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id = chat_id(&path.into_inner())?;
    let deleted = store::chats::delete_chat(&db, &user.id, &id)
        .await
        .map_err(|e| store_error("cannot delete a chat", e))?;
    if !deleted {
        return Err(not_found());
    }
    Ok(HttpResponse::NoContent().finish())
}

/// This module's endpoints.
pub fn configure(cfg: &mut actix_web::web::ServiceConfig) {
    cfg.service(list_chats)
        .service(get_chat)
        .service(delete_chat);
}

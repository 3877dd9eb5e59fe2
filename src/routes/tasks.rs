//! `/api/tasks`: the signed-in member's own task list (spec sections 2, 3, 5 and 7). A signed-in
//! user is all it takes (no trial: spec section 6). A task that is not the member's, and an id
//! that cannot be one, are both "Task not found." (404): the answer never tells whether another
//! member's task exists.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, delete, get, patch, post, web};
use chrono::SecondsFormat;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::auth::CurrentUser;
use crate::domain::analytics::EventName;
use crate::domain::task::{ItemId, ItemText, TaskError, TaskId, TaskItems, TaskName};
use crate::error::ApiError;
use crate::store::tasks::{Task, TaskStoreError};
use crate::store::{self, Db};

pub const TASK_NOT_FOUND: &str = "Task not found.";
pub const TOO_MANY_TASKS: &str =
    "You can keep up to 500 tasks. Please delete a task you no longer need first.";
pub const TOO_MANY_ITEMS: &str = "A task can hold up to 100 items.";

fn not_found() -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, "not_found", TASK_NOT_FOUND)
}

fn task_error(error: TaskError) -> ApiError {
    ApiError::bad_request(error.code(), error.to_string())
}

fn store_error(context: &str, error: TaskStoreError) -> ApiError {
    match error {
        TaskStoreError::TooManyTasks => {
            ApiError::new(StatusCode::CONFLICT, "too_many_tasks", TOO_MANY_TASKS)
        }
        TaskStoreError::TooManyItems => {
            ApiError::new(StatusCode::CONFLICT, "too_many_items", TOO_MANY_ITEMS)
        }
        other => ApiError::internal(context, other),
    }
}

/// The spec's task shape: `{id, name, timestamp, items: [{id, text, completed}]}`, with the
/// timestamp as JavaScript's `toISOString()` writes it.
fn task_json(task: &Task) -> Value {
    json!({
        "id": task.id,
        "name": task.name,
        "timestamp": task.created_at.to_rfc3339_opts(SecondsFormat::Millis, true),
        "items": task.items,
    })
}

fn task_id(raw: &str) -> Result<TaskId, ApiError> {
    TaskId::parse(raw).ok_or_else(not_found)
}

/// `GET /api/tasks` -> `{tasks: [...]}`, newest first.
#[get("/tasks")]
pub async fn list_tasks(user: CurrentUser, db: web::Data<Db>) -> Result<HttpResponse, ApiError> {
    let tasks = store::tasks::list(&db, &user.id)
        .await
        .map_err(|e| store_error("cannot list tasks", e))?;
    let tasks: Vec<Value> = tasks.iter().map(task_json).collect();
    Ok(HttpResponse::Ok().json(json!({ "tasks": tasks })))
}

#[derive(Deserialize)]
pub struct NewTaskRequest {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    items: Option<Vec<String>>,
}

/// `POST /api/tasks` `{name, items: [string]}` -> 201 `{task}`.
#[post("/tasks")]
pub async fn create_task(
    user: CurrentUser,
    db: web::Data<Db>,
    body: web::Json<NewTaskRequest>,
) -> Result<HttpResponse, ApiError> {
    let body = body.into_inner();
    let name = TaskName::parse(body.name.as_deref().unwrap_or_default()).map_err(task_error)?;
    let items = TaskItems::parse(&body.items.unwrap_or_default()).map_err(task_error)?;
    let task = store::tasks::create(&db, &user.id, &name, &items)
        .await
        .map_err(|e| store_error("cannot create a task", e))?;
    record_task_event(&db, "task_added", &user.id, task.items.len()).await;
    Ok(HttpResponse::Created().json(json!({ "task": task_json(&task) })))
}

#[derive(Deserialize)]
pub struct NewItemRequest {
    #[serde(default)]
    text: Option<String>,
}

/// `POST /api/tasks/{id}/items` `{text}` -> 201 `{task}`.
#[post("/tasks/{id}/items")]
pub async fn add_item(
    user: CurrentUser,
    db: web::Data<Db>,
    path: web::Path<String>,
    body: web::Json<NewItemRequest>,
) -> Result<HttpResponse, ApiError> {
    let id = task_id(&path.into_inner())?;
    let text = ItemText::parse(body.text.as_deref().unwrap_or_default()).map_err(task_error)?;
    let task = store::tasks::add_item(&db, &user.id, &id, &text)
        .await
        .map_err(|e| store_error("cannot add a task item", e))?
        .ok_or_else(not_found)?;
    Ok(HttpResponse::Created().json(json!({ "task": task_json(&task) })))
}

#[derive(Deserialize)]
pub struct ItemUpdateRequest {
    #[serde(default)]
    completed: Option<bool>,
}

/// `PATCH /api/tasks/{id}/items/{itemId}` `{completed}` -> 200 `{task}`.
#[patch("/tasks/{id}/items/{item_id}")]
pub async fn update_item(
    user: CurrentUser,
    db: web::Data<Db>,
    path: web::Path<(String, String)>,
    body: web::Json<ItemUpdateRequest>,
) -> Result<HttpResponse, ApiError> {
    let (raw_task, raw_item) = path.into_inner();
    let id = task_id(&raw_task)?;
    let item_id = ItemId::parse(&raw_item).ok_or_else(not_found)?;
    let completed = body.completed.ok_or_else(|| {
        ApiError::bad_request(
            "completed_required",
            "Please say whether the item is completed (true or false).",
        )
    })?;
    let change = store::tasks::set_completed(&db, &user.id, &id, &item_id, completed)
        .await
        .map_err(|e| store_error("cannot update a task item", e))?
        .ok_or_else(not_found)?;
    if change.became_completed {
        record_task_event(&db, "task_completed", &user.id, change.task.items.len()).await;
    }
    Ok(HttpResponse::Ok().json(json!({ "task": task_json(&change.task) })))
}

/// `DELETE /api/tasks/{id}` -> 204.
#[delete("/tasks/{id}")]
pub async fn delete_task(
    user: CurrentUser,
    db: web::Data<Db>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id = task_id(&path.into_inner())?;
    let deleted = store::tasks::delete(&db, &user.id, &id)
        .await
        .map_err(|e| store_error("cannot delete a task", e))?;
    if !deleted {
        return Err(not_found());
    }
    Ok(HttpResponse::NoContent().finish())
}

/// Records `task_added` / `task_completed` with the task's item count. Both are in the spec's
/// event list (the unit test below holds that); analytics never fails the action it describes.
async fn record_task_event(db: &Db, name: &str, user_id: &str, items: usize) {
    match EventName::parse(name) {
        Ok(event) => {
            store::analytics::record_server_event(
                db,
                event,
                Some(user_id),
                json!({ "items": items }),
            )
            .await;
        }
        Err(error) => tracing::warn!(%error, event = name, "cannot record a task event"),
    }
}

/// This module's endpoints.
pub fn configure(cfg: &mut actix_web::web::ServiceConfig) {
    cfg.service(list_tasks)
        .service(create_task)
        .service(add_item)
        .service(update_item)
        .service(delete_task);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_task_events_are_known_events() {
        for name in ["task_added", "task_completed"] {
            assert_eq!(EventName::parse(name).map(EventName::as_str), Ok(name));
        }
    }
}

//! The `task` table: a member's own tasks (spec section 7, `users/{uid}/tasks`). Every statement
//! names the owner (`user = type::record('user', $user)`) next to the record, so a task id of
//! another member finds nothing here: the routes answer that as "not found".
//!
//! Concurrency: an item is added or (un)checked by one `UPDATE` of the one record that changes
//! the `items` array inside the database (`items += $item`, `items.map(...)` by item id), never by
//! reading the task into the server, changing it and writing it back. Two requests therefore can
//! never overwrite each other's item with a stale copy. When two of these statements touch the same
//! record at once, the embedded engines abort one of them with a conflict and nothing of it is
//! written; `store::retry_conflicts` runs that statement again. Running it again is safe: it sets an absolute value
//! (`completed = $completed`) or appends an item that was not written. No version field is needed.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use surrealdb::types::SurrealValue;

use super::Db;
use crate::domain::task::{ItemId, ItemText, MAX_ITEMS, MAX_TASKS, TaskId, TaskItems, TaskName};

/// One item of a task, as stored in the `items` array and as the API shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Item {
    pub id: String,
    pub text: String,
    pub completed: bool,
}

impl Item {
    pub fn new(text: &ItemText) -> Self {
        Self {
            id: ItemId::generate().as_str().to_owned(),
            text: text.as_str().to_owned(),
            completed: false,
        }
    }
}

/// A stored task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Task {
    pub id: String,
    pub name: String,
    pub items: Vec<Item>,
    pub created_at: DateTime<Utc>,
}

#[derive(Debug, Clone, SurrealValue)]
struct TaskRow {
    id: String,
    name: String,
    items: serde_json::Value,
    created_at: DateTime<Utc>,
}

const TASK_FIELDS: &str = "record::id(id) AS id, name, items, created_at";

#[derive(Debug, thiserror::Error)]
pub enum TaskStoreError {
    /// The member already keeps `MAX_TASKS` tasks.
    #[error("the task list is full")]
    TooManyTasks,
    /// The task already holds `MAX_ITEMS` items.
    #[error("the task is full")]
    TooManyItems,
    #[error("a stored task has broken items: {0}")]
    Broken(#[from] serde_json::Error),
    #[error("database: {0}")]
    Database(#[from] surrealdb::Error),
}

fn from_row(row: TaskRow) -> Result<Task, TaskStoreError> {
    let items = if row.items.is_null() {
        Vec::new()
    } else {
        serde_json::from_value(row.items)?
    };
    Ok(Task {
        id: row.id,
        name: row.name,
        items,
        created_at: row.created_at,
    })
}

fn first_task(rows: Vec<TaskRow>) -> Result<Option<Task>, TaskStoreError> {
    rows.into_iter().next().map(from_row).transpose()
}

/// A burst of checks on one task (someone ticking a list quickly, several tabs) makes many
/// writers of one record: more attempts than the store's default.
const WRITE_ATTEMPTS: u64 = 40;

/// The member's (`$user`) tasks, newest first, at most `$limit`: forward through
/// `(user, newest_first)`, as SurrealKV walks a backward scan from the end of its in-memory table
/// (migration 0006).
fn list_query() -> String {
    format!(
        "SELECT {TASK_FIELDS} FROM task WHERE user = type::record('user', $user) \
         ORDER BY newest_first ASC LIMIT $limit"
    )
}

/// The member's tasks, newest first.
pub async fn list(db: &Db, user_id: &str) -> Result<Vec<Task>, TaskStoreError> {
    let mut response = db
        .query(list_query())
        .bind(("user", user_id.to_owned()))
        .bind(("limit", MAX_TASKS as i64))
        .await?
        .check()?;
    let rows: Vec<TaskRow> = response.take(0)?;
    rows.into_iter().map(from_row).collect()
}

/// The member's task; `None` when the member has no such task.
pub async fn find(
    db: &Db,
    user_id: &str,
    task_id: &TaskId,
) -> Result<Option<Task>, TaskStoreError> {
    let mut response = db
        .query(format!(
            "SELECT {TASK_FIELDS} FROM type::record('task', $id) \
             WHERE user = type::record('user', $user)"
        ))
        .bind(("id", task_id.as_str().to_owned()))
        .bind(("user", user_id.to_owned()))
        .await?
        .check()?;
    first_task(response.take(0)?)
}

/// How many tasks the member keeps.
async fn count(db: &Db, user_id: &str) -> Result<usize, surrealdb::Error> {
    let mut response = db
        .query(
            "RETURN array::len(SELECT VALUE id FROM task WHERE user = type::record('user', $user))",
        )
        .bind(("user", user_id.to_owned()))
        .await?
        .check()?;
    let count: Option<i64> = response.take(0)?;
    Ok(usize::try_from(count.unwrap_or(0)).unwrap_or(0))
}

/// Creates a task with fresh item ids. The task limit is checked before the write, so two
/// creations at the same moment may pass it by one; it guards against runaway lists, not races.
pub async fn create(
    db: &Db,
    user_id: &str,
    name: &TaskName,
    items: &TaskItems,
) -> Result<Task, TaskStoreError> {
    if count(db, user_id).await? >= MAX_TASKS {
        return Err(TaskStoreError::TooManyTasks);
    }
    let items: Vec<Item> = items.as_slice().iter().map(Item::new).collect();
    let mut response = db
        .query(format!(
            "CREATE task CONTENT {{ user: type::record('user', $user), name: $name, \
             items: $items, created_at: time::now() }} RETURN {TASK_FIELDS}"
        ))
        .bind(("user", user_id.to_owned()))
        .bind(("name", name.as_str().to_owned()))
        .bind(("items", serde_json::to_value(&items)?))
        .await?
        .check()?;
    let rows: Vec<TaskRow> = response.take(0)?;
    first_task(rows)?.ok_or_else(|| {
        TaskStoreError::Database(surrealdb::Error::internal(
            "CREATE returned no task".to_owned(),
        ))
    })
}

/// Whether this member owns a task of this id.
async fn owns(db: &Db, user_id: &str, task_id: &TaskId) -> Result<bool, surrealdb::Error> {
    let mut response = db
        .query(
            "SELECT VALUE record::id(id) FROM type::record('task', $id) \
             WHERE user = type::record('user', $user)",
        )
        .bind(("id", task_id.as_str().to_owned()))
        .bind(("user", user_id.to_owned()))
        .await?
        .check()?;
    let ids: Vec<String> = response.take(0)?;
    Ok(!ids.is_empty())
}

/// Appends an item to the member's task; `None` when the member has no such task.
pub async fn add_item(
    db: &Db,
    user_id: &str,
    task_id: &TaskId,
    text: &ItemText,
) -> Result<Option<Task>, TaskStoreError> {
    let item = serde_json::to_value(Item::new(text))?;
    let rows: Vec<TaskRow> = super::retry_conflicts(WRITE_ATTEMPTS, || async {
        let mut response = db
            .query(format!(
                "UPDATE type::record('task', $id) SET items += $item \
                 WHERE user = type::record('user', $user) AND array::len(items) < $max \
                 RETURN {TASK_FIELDS}"
            ))
            .bind(("id", task_id.as_str().to_owned()))
            .bind(("user", user_id.to_owned()))
            .bind(("item", item.clone()))
            .bind(("max", MAX_ITEMS as i64))
            .await?
            .check()?;
        response.take(0)
    })
    .await?;
    match first_task(rows)? {
        Some(task) => Ok(Some(task)),
        // Nothing changed: either the task is full or it is not this member's.
        None if owns(db, user_id, task_id).await? => Err(TaskStoreError::TooManyItems),
        None => Ok(None),
    }
}

/// What checking or unchecking an item did.
#[derive(Debug, Clone)]
pub struct ItemChange {
    pub task: Task,
    /// The item was open and is now completed (the moment `task_completed` is recorded).
    pub became_completed: bool,
}

#[derive(Debug, Clone, SurrealValue)]
struct ChangeRow {
    id: String,
    name: String,
    items: serde_json::Value,
    created_at: DateTime<Utc>,
    was_completed: bool,
}

/// Sets one item's `completed`; `None` when the member has no such task or the task no such item.
pub async fn set_completed(
    db: &Db,
    user_id: &str,
    task_id: &TaskId,
    item_id: &ItemId,
    completed: bool,
) -> Result<Option<ItemChange>, TaskStoreError> {
    let rows: Vec<ChangeRow> = super::retry_conflicts(WRITE_ATTEMPTS, || async {
        let mut response = db
            .query(format!(
                "UPDATE type::record('task', $id) \
                 SET items = items.map(|$i| IF $i.id = $item \
                   THEN {{ id: $i.id, text: $i.text, completed: $completed }} ELSE $i END) \
                 WHERE user = type::record('user', $user) AND $item IN items.id \
                 RETURN {TASK_FIELDS}, \
                   ($before.items.filter(|$i| $i.id = $item)[0].completed ?? false) = true \
                   AS was_completed"
            ))
            .bind(("id", task_id.as_str().to_owned()))
            .bind(("user", user_id.to_owned()))
            .bind(("item", item_id.as_str().to_owned()))
            .bind(("completed", completed))
            .await?
            .check()?;
        response.take(0)
    })
    .await?;
    let Some(row) = rows.into_iter().next() else {
        return Ok(None);
    };
    let was_completed = row.was_completed;
    let task = from_row(TaskRow {
        id: row.id,
        name: row.name,
        items: row.items,
        created_at: row.created_at,
    })?;
    Ok(Some(ItemChange {
        task,
        became_completed: completed && !was_completed,
    }))
}

/// Deletes the member's task; `false` when the member has no such task.
pub async fn delete(db: &Db, user_id: &str, task_id: &TaskId) -> Result<bool, TaskStoreError> {
    let ids: Vec<String> = super::retry_conflicts(WRITE_ATTEMPTS, || async {
        let mut response = db
            .query(
                "DELETE type::record('task', $id) WHERE user = type::record('user', $user) \
                 RETURN VALUE record::id($before.id)",
            )
            .bind(("id", task_id.as_str().to_owned()))
            .bind(("user", user_id.to_owned()))
            .await?
            .check()?;
        response.take(0)
    })
    .await?;
    Ok(!ids.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The task list goes forward through `(user, newest_first)`, never backward (migration 0006).
    #[tokio::test]
    async fn the_list_reads_forward_through_its_index() {
        let db = crate::store::migrate::migrated_memory_db().await;
        let plan = crate::store::migrate::plan_of(&db, &list_query()).await;
        assert!(plan.contains("\"index\":\"task_user_newest\""), "{plan}");
        assert!(plan.contains("\"direction\":\"Forward\""), "{plan}");
    }
}

//! The members' chat on the server: the `/member` Socket.IO namespace that joins each signed-in
//! member with access to their actor (`helpnow_actors::member`), and the ports those actors use
//! (SurrealDB for chats, tasks and access; the analytics table).

mod namespace;

use std::sync::Arc;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use helpnow_actors::member::{Deps, FunnelBrief, MemberRegistry, MemberSettings};
use helpnow_actors::ports::{
    Ai, AiMessage, Analytics, MemberStore, Role, StoreError, StoredChat, TaskBrief, TaskItemBrief,
    Telemetry,
};

pub use namespace::MemberNamespace;

use crate::billing::service::SubscriptionCheck;
use crate::config::Settings;
use crate::domain::analytics::EventName;
use crate::domain::task::TaskId;
use crate::store::{self, Db, chats};

/// Builds the registry of member actors for this process.
pub fn registry(
    settings: &Settings,
    db: Db,
    ai: Arc<dyn Ai>,
    telemetry: Arc<dyn Telemetry>,
) -> MemberRegistry {
    MemberRegistry::new(Deps {
        store: Arc::new(StoredChats(db.clone())),
        ai,
        analytics: Arc::new(MemberAnalytics(db)),
        telemetry,
        settings: MemberSettings::new(&settings.product.assistant_name, &settings.product.name),
    })
}

/// Whether the user has an active trial or subscription now (DESIGN.md section 6).
pub async fn has_access(db: &Db, user_id: &str) -> Result<bool, surrealdb::Error> {
    Ok(store::billing::access_facts(db, user_id)
        .await?
        .as_ref()
        .map(SubscriptionCheck::from_facts)
        .is_some_and(|check| check.has_access()))
}

/// What the members' chat needs of the funnel record on the account (spec section 3): the
/// issue, and the visitor's own words and messages when the record kept them.
pub fn funnel_brief(record: &serde_json::Value) -> Option<FunnelBrief> {
    let text = |key: &str| {
        record
            .get(key)
            .and_then(serde_json::Value::as_str)
            .map(str::trim)
            .filter(|value| !value.is_empty())
            .map(str::to_owned)
    };
    let user_messages: Vec<String> = record
        .get("userMessages")
        .and_then(serde_json::Value::as_array)
        .map(|messages| {
            messages
                .iter()
                .filter_map(serde_json::Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let raw_input = text("rawUserInput");
    // A chat funnel's record has no summary: its first message names the issue.
    let issue = text("userIssue")
        .or_else(|| raw_input.clone())
        .or_else(|| user_messages.first().cloned())?;
    Some(FunnelBrief {
        issue,
        raw_input,
        user_messages,
    })
}

fn failed(error: impl std::fmt::Display) -> StoreError {
    StoreError::Failed(error.to_string())
}

/// The member actors' store: `store::chats`, `store::tasks` and the access facts.
struct StoredChats(Db);

impl MemberStore for StoredChats {
    fn has_access(&self, user_id: &str) -> BoxFuture<'static, Result<bool, StoreError>> {
        let (db, user_id) = (self.0.clone(), user_id.to_owned());
        async move { has_access(&db, &user_id).await.map_err(failed) }.boxed()
    }

    fn create_chat(
        &self,
        user_id: &str,
        title: &str,
        greeting: &str,
        message_id: &str,
        content: &str,
    ) -> BoxFuture<'static, Result<String, StoreError>> {
        let Some(message_id) = chats::MessageId::parse(message_id) else {
            return futures_util::future::ready(Err(StoreError::Failed(
                "a message id must be letters and digits".into(),
            )))
            .boxed();
        };
        let (db, user_id, title, greeting, content) = (
            self.0.clone(),
            user_id.to_owned(),
            title.to_owned(),
            greeting.to_owned(),
            content.to_owned(),
        );
        async move {
            chats::start_chat(&db, &user_id, &title, &greeting, &message_id, &content)
                .await
                .map(|chat| chat.id)
                .map_err(failed)
        }
        .boxed()
    }

    fn append_message(
        &self,
        user_id: &str,
        chat_id: &str,
        message_id: &str,
        role: Role,
        content: &str,
    ) -> BoxFuture<'static, Result<bool, StoreError>> {
        let (Some(chat_id), Some(message_id)) = (
            chats::ChatId::parse(chat_id),
            chats::MessageId::parse(message_id),
        ) else {
            return futures_util::future::ready(Ok(false)).boxed();
        };
        let role = match role {
            Role::User => chats::Role::User,
            Role::Assistant => chats::Role::Assistant,
            Role::System => {
                return futures_util::future::ready(Err(StoreError::Failed(
                    "system messages are not stored".into(),
                )))
                .boxed();
            }
        };
        let (db, user_id, content) = (self.0.clone(), user_id.to_owned(), content.to_owned());
        async move {
            match chats::append_message_as(&db, &user_id, &chat_id, &message_id, role, &content)
                .await
            {
                Ok(_) => Ok(true),
                Err(chats::ChatStoreError::NotFound) => Ok(false),
                Err(error) => Err(failed(error)),
            }
        }
        .boxed()
    }

    fn chat(
        &self,
        user_id: &str,
        chat_id: &str,
        last: usize,
    ) -> BoxFuture<'static, Result<Option<StoredChat>, StoreError>> {
        let Some(chat_id) = chats::ChatId::parse(chat_id) else {
            return futures_util::future::ready(Ok(None)).boxed();
        };
        let (db, user_id) = (self.0.clone(), user_id.to_owned());
        async move {
            let found = chats::chat_with_recent_messages(&db, &user_id, &chat_id, last)
                .await
                .map_err(failed)?;
            Ok(found.map(|(chat, messages)| StoredChat {
                title: chat.title,
                messages: messages
                    .into_iter()
                    .map(|message| match message.role {
                        chats::Role::User => AiMessage::user(message.content),
                        chats::Role::Assistant => AiMessage::assistant(message.content),
                    })
                    .collect(),
            }))
        }
        .boxed()
    }

    fn task(
        &self,
        user_id: &str,
        task_id: &str,
    ) -> BoxFuture<'static, Result<Option<TaskBrief>, StoreError>> {
        let Some(task_id) = TaskId::parse(task_id) else {
            return futures_util::future::ready(Ok(None)).boxed();
        };
        let (db, user_id) = (self.0.clone(), user_id.to_owned());
        async move {
            let found = store::tasks::find(&db, &user_id, &task_id)
                .await
                .map_err(failed)?;
            Ok(found.map(|task| TaskBrief {
                name: task.name,
                items: task
                    .items
                    .into_iter()
                    .map(|item| TaskItemBrief {
                        text: item.text,
                        completed: item.completed,
                    })
                    .collect(),
            }))
        }
        .boxed()
    }
}

/// Member events go to the analytics table under the member's account.
struct MemberAnalytics(Db);

impl Analytics for MemberAnalytics {
    fn record(&self, event: &'static str, user_id: &str, properties: serde_json::Value) {
        let Ok(name) = EventName::parse(event) else {
            tracing::warn!(event, "the member chat named an unknown analytics event");
            return;
        };
        let (db, user_id) = (self.0.clone(), user_id.to_owned());
        tokio::spawn(async move {
            store::analytics::record_server_event(&db, name, Some(&user_id), properties).await;
        });
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_funnel_brief_takes_the_summary_or_else_the_visitors_words() {
        let help = json!({ "funnel": "help_funnel", "userIssue": "Printer is offline", "rawUserInput": "my printer wont print" });
        let brief = funnel_brief(&help).expect("a brief");
        assert_eq!(brief.issue, "Printer is offline");
        assert_eq!(brief.raw_input.as_deref(), Some("my printer wont print"));

        let chat = json!({ "funnel": "chat_funnel", "userMessages": ["outlook wont open", "since monday"] });
        let brief = funnel_brief(&chat).expect("a brief");
        assert_eq!(brief.issue, "outlook wont open");
        assert_eq!(brief.user_messages.len(), 2);

        assert_eq!(funnel_brief(&json!({ "funnel": "chat_funnel" })), None);
        assert_eq!(funnel_brief(&json!({ "userIssue": "  " })), None);
    }
}

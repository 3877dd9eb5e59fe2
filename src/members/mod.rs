//! The members' chat on the server: the `/member` Socket.IO namespace that joins each signed-in
//! member with access to their actor (`helpnow_actors::member`), and the ports those actors use
//! (SurrealDB for chats, tasks and access; the analytics table).

mod namespace;

use std::sync::Arc;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use helpnow_actors::member::ports::{
    Appended, MemberPeers, MemberStore, NoPeers, StoredChat, TaskBrief, TaskItemBrief,
};
use helpnow_actors::member::{Deps, FunnelBrief, MemberRegistry, MemberSettings};
use helpnow_actors::ports::{Ai, AiMessage, Analytics, Role, StoreError, Telemetry};

pub use namespace::MemberNamespace;

use crate::billing::service::SubscriptionCheck;
use crate::cluster::Cluster;
use crate::config::Settings;
use crate::domain::analytics::EventName;
use crate::domain::task::TaskId;
use crate::store::batch::{Batcher, Outcome, Statement};
use crate::store::billing::AccessFacts;
use crate::store::{self, Db, chats};
use surrealdb::types::SurrealValue;

/// Builds the registry of member actors for this process.
/// The members' hot store calls (access reads, messages, chat reads and events) go in groups
/// with the funnels' through `batcher`; a new chat and a task read run on their own.
pub fn registry(
    settings: &Settings,
    db: Db,
    batcher: Batcher,
    ai: Arc<dyn Ai>,
    telemetry: Arc<dyn Telemetry>,
    cluster: &Cluster,
) -> MemberRegistry {
    let peers: Arc<dyn MemberPeers> = if cluster.is_shared() {
        Arc::new(ClusterPeers(cluster.clone()))
    } else {
        Arc::new(NoPeers)
    };
    MemberRegistry::new(Deps {
        store: Arc::new(StoredChats {
            db,
            batcher: batcher.clone(),
        }),
        ai,
        analytics: Arc::new(MemberAnalytics(batcher)),
        telemetry,
        peers,
        settings: MemberSettings::new(&settings.product.assistant_name, &settings.product.name),
    })
}

/// The member's actors on the other processes, through the deployment's event engine.
struct ClusterPeers(Cluster);

impl MemberPeers for ClusterPeers {
    fn joined(&self, user_id: &str) {
        self.0.member_joined(user_id);
    }

    fn left(&self, user_id: &str) {
        self.0.member_left(user_id);
    }

    fn publish(
        &self,
        user_id: &str,
        event: &'static str,
        data: &serde_json::Value,
        volatile: bool,
    ) {
        self.0.publish_member(user_id, event, data, volatile);
    }

    fn alive(&self, process: &str) -> BoxFuture<'static, bool> {
        let cluster = self.0.clone();
        let process = process.to_owned();
        async move { cluster.alive(&process).await }.boxed()
    }
}

/// Whether the user has an active trial or subscription now (DESIGN.md section 6).
pub async fn has_access(db: &Db, user_id: &str) -> Result<bool, surrealdb::Error> {
    Ok(grants_access(
        store::billing::access_facts(db, user_id).await?.as_ref(),
    ))
}

/// Whether these access facts (none: no such user) give access now.
fn grants_access(facts: Option<&AccessFacts>) -> bool {
    facts
        .map(SubscriptionCheck::from_facts)
        .is_some_and(|check| check.has_access())
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
struct StoredChats {
    db: Db,
    batcher: Batcher,
}

impl StoredChats {
    /// Runs `statement`, a call that reads (or answers what it found), in the next group of
    /// store calls: what it found, as `T`.
    fn submit<T: SurrealValue + Send + 'static>(
        &self,
        statement: Statement,
    ) -> BoxFuture<'static, Result<Option<T>, StoreError>> {
        let batcher = self.batcher.clone();
        async move {
            batcher
                .submit(statement)
                .await
                .and_then(Outcome::found)
                .map_err(failed)
        }
        .boxed()
    }
}

impl MemberStore for StoredChats {
    fn has_access(&self, user_id: &str) -> BoxFuture<'static, Result<bool, StoreError>> {
        let read = self.submit::<AccessFacts>(Statement::AccessFacts {
            user: user_id.to_owned(),
        });
        async move { Ok(grants_access(read.await?.as_ref())) }.boxed()
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
            self.db.clone(),
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
    ) -> BoxFuture<'static, Result<Appended, StoreError>> {
        let (Some(chat_id), Some(message_id)) = (
            chats::ChatId::parse(chat_id),
            chats::MessageId::parse(message_id),
        ) else {
            return futures_util::future::ready(Ok(Appended::NoSuchChat)).boxed();
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
        let write = self.submit::<i64>(Statement::AppendChatMessage(Box::new(
            chats::AppendVars::new(user_id, &chat_id, &message_id, role, content),
        )));
        async move {
            Ok(match write.await? {
                None => Appended::NoSuchChat,
                Some(revision) => u64::try_from(revision)
                    .map_or(Appended::AlreadyThere, |revision| Appended::After {
                        revision,
                    }),
            })
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
        let read = self.submit::<chats::RecentRow>(Statement::RecentChat(chats::RecentVars::new(
            user_id, &chat_id, last,
        )));
        async move {
            let found = read
                .await?
                .map(|row| {
                    let revision = row.revision();
                    row.into_chat()
                        .map(|(chat, messages)| (chat, messages, revision))
                })
                .transpose()
                .map_err(failed)?;
            Ok(found.map(|(chat, messages, revision)| StoredChat {
                revision,
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
        let (db, user_id) = (self.db.clone(), user_id.to_owned());
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
struct MemberAnalytics(Batcher);

impl Analytics for MemberAnalytics {
    fn record(&self, event: &'static str, user_id: &str, properties: serde_json::Value) {
        let Ok(name) = EventName::parse(event) else {
            tracing::warn!(event, "the member chat named an unknown analytics event");
            return;
        };
        let event = Statement::MemberEvent {
            name: name.as_str().to_owned(),
            user: user_id.to_owned(),
            properties,
        };
        let batcher = self.0.clone();
        tokio::spawn(async move {
            if let Err(error) = batcher.submit(event).await {
                tracing::warn!(%error, event = %name, "cannot record an analytics event");
            }
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

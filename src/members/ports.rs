//! The adapters of the ports only the member actors use: their store (chats, tasks and access,
//! the hot calls in the batcher's groups) and their peers on other processes through the event
//! engine. (The shared ones are in `crate::adapters`.)

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use helpnow_actors::member::ports::{
    Appended, MemberPeers, MemberStore, StoredChat, TaskBrief, TaskItemBrief,
};
use helpnow_actors::ports::{AiMessage, Role, StoreError};
use surrealdb::types::SurrealValue;

use super::access_left;
use crate::cluster::Cluster;
use crate::domain::task::TaskId;
use crate::store::batch::{Batcher, Outcome, Statement};
use crate::store::billing::AccessFacts;
use crate::store::{self, Db, chats};

/// The member's actors on the other processes, through the deployment's event engine.
pub(super) struct ClusterPeers(pub(super) Cluster);

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

fn failed(error: impl std::fmt::Display) -> StoreError {
    StoreError::Failed(error.to_string())
}

/// The member actors' store: `store::chats`, `store::tasks` and the access facts.
pub(super) struct StoredChats {
    pub(super) db: Db,
    pub(super) batcher: Batcher,
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
    fn access_left(
        &self,
        user_id: &str,
    ) -> BoxFuture<'static, Result<Option<std::time::Duration>, StoreError>> {
        let read = self.submit::<AccessFacts>(Statement::AccessFacts {
            user: user_id.to_owned(),
        });
        async move { Ok(access_left(read.await?.as_ref(), chrono::Utc::now())) }.boxed()
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
        expected: Option<u64>,
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
            chats::AppendVars::new(user_id, &chat_id, &message_id, role, content, expected),
        )));
        async move {
            Ok(match chats::Appended::from_answer(write.await?) {
                None => Appended::NoSuchChat,
                Some(chats::Appended::After(revision)) => Appended::After { revision },
                Some(chats::Appended::AlreadyThere) => Appended::AlreadyThere,
                Some(chats::Appended::Moved) => Appended::Moved,
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

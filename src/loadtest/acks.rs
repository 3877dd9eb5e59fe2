//! The crash test at load (docs/benchmarks.md, "Crash test at load"): with `--record-acks FILE`
//! the generator appends each acknowledged message to FILE the moment its acknowledgement arrives,
//! one JSON object a line; `--verify-acks FILE` then reads every one back from the server and
//! lists those it does not hold. An acknowledgement means "stored" (docs/protocol.md), so after
//! `kill -9` of the server and a restart on the same files none may be missing.
//!
//! What names a message: a member's `chat:send` acknowledgement carries its `messageId` and
//! `chatId`; a funnel `send` acknowledgement carries only `ok`, so a funnel message is its visitor,
//! its conversation's id (from the `conversation` event) and its text: each conversation has a
//! visitor of its own and its three messages differ. Funnel messages are read back by joining
//! `/funnel` as the visitor (the `conversation` event holds every message, as a returning visitor
//! sees it); member messages through `GET /api/chats/{id}` with the member's session.

use std::collections::{BTreeMap, HashSet};
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;

use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::client::Client;
use super::stats::Stats;
use super::{PATIENCE, http_clients, next_conversation, source_address, target_of};

/// Conversations read back at once.
const CONCURRENCY: usize = 32;

/// One acknowledged message, as a line of the file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Ack {
    /// A visitor's message in a funnel conversation, named by its text.
    Funnel {
        funnel: String,
        visitor: String,
        conversation: String,
        text: String,
    },
    /// A member's chat message; `session` is the member's session secret (a load-test account's),
    /// to read the chat back.
    Member {
        session: String,
        chat: String,
        message: String,
    },
}

/// A funnel conversation the generator joined: what its messages' records share.
#[derive(Debug, Clone)]
pub struct FunnelConversation {
    pub funnel: String,
    pub visitor: String,
    /// The `conversation` event's `id`.
    pub id: String,
}

impl FunnelConversation {
    pub fn ack(&self, text: &str) -> Ack {
        Ack::Funnel {
            funnel: self.funnel.clone(),
            visitor: self.visitor.clone(),
            conversation: self.id.clone(),
            text: text.to_owned(),
        }
    }
}

/// The file acknowledgements are appended to.
pub struct AckLog {
    file: Mutex<std::fs::File>,
}

impl AckLog {
    /// Opens `path` for appending (created if need be), so several generator processes may share
    /// one file: each line goes out in one write, whole.
    pub fn open(path: &Path) -> Result<Self, String> {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map(|file| Self {
                file: Mutex::new(file),
            })
            .map_err(|error| format!("cannot open {}: {error}", path.display()))
    }

    /// Writes `ack` as one line, unbuffered: once this returns the line is the kernel's, so
    /// neither the server's death nor the generator's loses it. A failed write is an error of kind
    /// `ack_record` (the run fails: a list with holes would prove nothing).
    pub fn record(&self, ack: &Ack, stats: &Stats) {
        let written = serde_json::to_vec(ack)
            .map_err(std::io::Error::from)
            .and_then(|mut line| {
                line.push(b'\n');
                self.file
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .write_all(&line)
            });
        if let Err(error) = written {
            tracing::warn!(%error, "an acknowledgement was not recorded");
            stats.error("ack_record");
        }
    }
}

/// What `--verify-acks` found.
#[derive(Debug, Default)]
pub struct Verdict {
    /// Acknowledgements in the file.
    pub recorded: usize,
    /// The funnel conversations and member chats they belong to.
    pub conversations: usize,
    pub stored: usize,
    /// Acknowledged and not stored: lost.
    pub missing: Vec<Ack>,
    /// Not checked, with why: their conversation could not be read (the server down, a join
    /// refused), which says nothing either way.
    pub unchecked: Vec<(Ack, String)>,
}

impl Verdict {
    /// Every recorded message is stored.
    pub fn passed(&self) -> bool {
        self.missing.is_empty() && self.unchecked.is_empty()
    }

    pub fn to_json(&self) -> Value {
        json!({
            "recorded": self.recorded,
            "conversations": self.conversations,
            "stored": self.stored,
            "missing": self.missing.len(),
            "unchecked": self.unchecked.len(),
            "missing_acks": self.missing,
            "unchecked_acks": self.unchecked.iter()
                .map(|(ack, why)| json!({ "ack": ack, "why": why }))
                .collect::<Vec<_>>(),
        })
    }

    /// The figures, then each missing and unchecked acknowledgement on a line of its own.
    pub fn summary(&self) -> String {
        let mut out = format!(
            "acknowledged messages recorded {} in {} conversations\n  stored     {}\n  missing    {}\n  unchecked  {}\n",
            self.recorded,
            self.conversations,
            self.stored,
            self.missing.len(),
            self.unchecked.len(),
        );
        for ack in &self.missing {
            out.push_str(&format!("missing: {}\n", json!(ack)));
        }
        for (ack, why) in &self.unchecked {
            out.push_str(&format!("unchecked ({why}): {}\n", json!(ack)));
        }
        out
    }
}

/// The acknowledgements in `path`, in order. A line that is not one is an error naming it.
pub fn read(path: &Path) -> Result<Vec<Ack>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|error| format!("cannot read {}: {error}", path.display()))?;
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(index, line)| {
            serde_json::from_str(line).map_err(|error| {
                format!(
                    "{} line {}: not an acknowledgement: {error}",
                    path.display(),
                    index + 1
                )
            })
        })
        .collect()
}

/// What the server holds of one conversation.
enum Stored {
    /// A funnel conversation: its id and the visitor's messages.
    Conversation { id: String, texts: Vec<String> },
    /// A member's chat: its messages' ids (none when the chat is not found).
    Chat(HashSet<String>),
}

impl Stored {
    /// Whether `ack` is among the messages held, each held message answering for one
    /// acknowledgement only.
    fn take(&mut self, ack: &Ack) -> bool {
        match (self, ack) {
            (
                Stored::Conversation { id, texts },
                Ack::Funnel {
                    conversation, text, ..
                },
            ) if id == conversation => match texts.iter().position(|held| held == text) {
                Some(found) => {
                    texts.swap_remove(found);
                    true
                }
                None => false,
            },
            (Stored::Chat(ids), Ack::Member { message, .. }) => ids.remove(message),
            _ => false,
        }
    }
}

/// Reads back from the server at `url` every acknowledgement recorded in `path`.
pub async fn verify(url: &url::Url, path: &Path) -> Result<Verdict, String> {
    let acks = read(path)?;
    let target = target_of(url).await?;
    let http = http_clients(target.address)?;
    // One read per conversation, keyed by what reads it back.
    let mut conversations: BTreeMap<(&str, &str, &str), Vec<&Ack>> = BTreeMap::new();
    for ack in &acks {
        let key = match ack {
            Ack::Funnel {
                funnel, visitor, ..
            } => ("funnel", funnel.as_str(), visitor.as_str()),
            Ack::Member { session, chat, .. } => ("member", session.as_str(), chat.as_str()),
        };
        conversations.entry(key).or_default().push(ack);
    }
    let mut verdict = Verdict {
        recorded: acks.len(),
        conversations: conversations.len(),
        ..Verdict::default()
    };
    let (target, http) = (&target, &http);
    let mut reads = futures_util::stream::iter(conversations.into_values().enumerate())
        .map(|(index, acks)| async move {
            let local = source_address(target.address, index as u64);
            let held = match acks[0] {
                Ack::Funnel {
                    funnel, visitor, ..
                } => funnel_conversation(target, local, funnel, visitor).await,
                Ack::Member { session, chat, .. } => {
                    let client = &http[index % http.len()];
                    member_chat(url, client, session, chat).await
                }
            };
            (acks, held)
        })
        .buffer_unordered(CONCURRENCY);
    while let Some((acks, held)) = reads.next().await {
        match held {
            Ok(mut held) => {
                for ack in acks {
                    if held.take(ack) {
                        verdict.stored += 1;
                    } else {
                        verdict.missing.push(ack.clone());
                    }
                }
            }
            Err(why) => {
                let unchecked = acks.into_iter().map(|ack| (ack.clone(), why.clone()));
                verdict.unchecked.extend(unchecked);
            }
        }
    }
    Ok(verdict)
}

/// Joins `/funnel` as `visitor`: the `conversation` event holds the stored conversation.
async fn funnel_conversation(
    target: &super::client::Target,
    local: std::net::IpAddr,
    funnel: &str,
    visitor: &str,
) -> Result<Stored, String> {
    let auth = json!({ "funnel": funnel, "visitorId": visitor });
    let mut client = Client::connect(target, local, "/funnel", &auth, None, PATIENCE)
        .await
        .map_err(|error| format!("join: {error}"))?;
    let conversation = next_conversation(&mut client)
        .await
        .map_err(|error| format!("the conversation: {error}"))?;
    client.close().await;
    let texts = conversation["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|message| message["role"] == "user")
        .filter_map(|message| message["text"].as_str().map(str::to_owned))
        .collect();
    Ok(Stored::Conversation {
        id: conversation["id"].as_str().unwrap_or_default().to_owned(),
        texts,
    })
}

/// `GET /api/chats/{chat}` with the member's session.
async fn member_chat(
    base: &url::Url,
    http: &reqwest::Client,
    session: &str,
    chat: &str,
) -> Result<Stored, String> {
    let mut url = base.clone();
    url.path_segments_mut()
        .map_err(|()| "the URL cannot have a path".to_owned())?
        .clear()
        .extend(["api", "chats", chat]);
    // The session cookie's name: a server reached over https reads only the `__Host-` one.
    let name = if base.scheme() == "https" {
        "__Host-helpnow_session"
    } else {
        "helpnow_session"
    };
    let response = http
        .get(url)
        .header("cookie", format!("{name}={session}"))
        .send()
        .await
        .map_err(|error| format!("GET /api/chats: {error}"))?;
    let status = response.status();
    if status == reqwest::StatusCode::NOT_FOUND {
        return Ok(Stored::Chat(HashSet::new()));
    }
    if !status.is_success() {
        return Err(format!("GET /api/chats answered {status}"));
    }
    let answer: Value = response
        .json()
        .await
        .map_err(|error| format!("GET /api/chats: {error}"))?;
    let ids = answer["chat"]["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|message| message["id"].as_str().map(str::to_owned))
        .collect();
    Ok(Stored::Chat(ids))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn funnel(conversation: &str, text: &str) -> Ack {
        Ack::Funnel {
            funnel: "chat".into(),
            visitor: "loadtest_visitor".into(),
            conversation: conversation.into(),
            text: text.into(),
        }
    }

    #[test]
    fn a_held_message_answers_for_one_acknowledgement_of_its_own_conversation() {
        let mut held = Stored::Conversation {
            id: "c1".into(),
            texts: vec!["hello".into(), "again".into()],
        };
        assert!(!held.take(&funnel("c2", "hello")), "another conversation");
        assert!(held.take(&funnel("c1", "hello")));
        assert!(!held.take(&funnel("c1", "hello")), "held once, taken once");
        assert!(held.take(&funnel("c1", "again")));
        let mut chat = Stored::Chat(HashSet::from(["m1".to_owned()]));
        let member = |message: &str| Ack::Member {
            session: "s".into(),
            chat: "chat1".into(),
            message: message.into(),
        };
        assert!(!chat.take(&member("m2")));
        assert!(chat.take(&member("m1")));
        assert!(
            !chat.take(&funnel("c1", "m1")),
            "a chat holds no funnel message"
        );
    }

    #[test]
    fn the_file_is_one_acknowledgement_a_line_and_a_broken_line_is_named() {
        let folder = tempfile::tempdir().expect("temp dir");
        let path = folder.path().join("acks.jsonl");
        let log = AckLog::open(&path).expect("opens");
        let stats = Stats::default();
        log.record(&funnel("c1", "hello"), &stats);
        // A second writer appends rather than overwrites.
        AckLog::open(&path)
            .expect("opens again")
            .record(&funnel("c1", "again"), &stats);
        assert_eq!(stats.error_count(), 0);
        let text = std::fs::read_to_string(&path).expect("written");
        assert!(
            text.starts_with(r#"{"kind":"funnel","funnel":"chat","#),
            "{text}"
        );
        let acks = read(&path).expect("reads");
        assert_eq!(acks, [funnel("c1", "hello"), funnel("c1", "again")]);
        std::fs::write(&path, format!("{text}{{\"kind\":\"funn")).expect("written");
        assert!(read(&path).is_err_and(|error| error.contains("line 3")));
    }
}

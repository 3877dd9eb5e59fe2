//! The `/member` namespace (docs/protocol.md): a signed-in member with an active trial or
//! subscription. The member is found by the session cookie, or by `auth.token`: a session secret
//! (clients without cookies, such as load generators) or a one-time sign-in token (used up).

use std::sync::Arc;

use actix::{Handler, Recipient};
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use helpnow_actors::member::{Event, Join, MemberActor, MemberRegistry, StopAck};
use helpnow_actors::ports::ActorClient;
use serde_json::{Value, json};

use crate::adapters::socket::{SocketClient, reply};
use crate::auth::SessionCookies;
use crate::auth::token;
use crate::client::AddressLimiter;
use crate::cluster::Cluster;
use crate::realtime::{ConnectError, ConnectRequest, Namespace, SocketEvent, SocketRef};
use crate::store::{self, Db};

pub struct MemberNamespace {
    registry: MemberRegistry,
    db: Db,
    /// A mailed link in `auth.token` may take the account over: its other sessions' sockets close
    /// on every process.
    cluster: Cluster,
    /// Connections per address and minute (`realtime.member_joins_per_minute`): each is a session
    /// lookup (and, with a token, a write), so a script cannot spray them.
    joins: Option<AddressLimiter>,
    /// The session cookie's name (`__Host-` over https).
    cookies: SessionCookies,
}

impl MemberNamespace {
    pub fn new(
        registry: MemberRegistry,
        db: Db,
        cluster: Cluster,
        joins_per_minute: u32,
        cookies: SessionCookies,
    ) -> Self {
        Self {
            registry,
            db,
            cluster,
            cookies,
            joins: (joins_per_minute > 0)
                .then(|| AddressLimiter::per_minute(joins_per_minute, joins_per_minute)),
        }
    }
}

/// Who a handshake signed in as: the user, the session's hash when it came with a session, and
/// whether the account waits for a new password (a mailed link took it over) before it may chat.
struct Member {
    user_id: String,
    session: Option<String>,
    password_pending: bool,
}

fn refusal(code: &str, message: &str) -> ConnectError {
    ConnectError::new(message).with_data(json!({ "code": code }))
}

fn unavailable(error: impl std::fmt::Display) -> ConnectError {
    tracing::warn!(%error, "a member's chat could not be opened");
    refusal(
        "unavailable",
        "We could not open your chat just now. Please try again in a moment.",
    )
}

/// The member a handshake names: the session cookie, else `auth.token` (a session secret, or a
/// one-time sign-in token, which this uses up).
async fn member_of(
    db: &Db,
    cluster: &Cluster,
    cookie: Option<String>,
    auth_token: Option<String>,
) -> Result<Option<Member>, surrealdb::Error> {
    for secret in cookie.iter().chain(auth_token.iter()) {
        let hash = token::hash_secret(secret);
        if let Some(user) = store::sessions::find_user(db, &hash).await? {
            return Ok(Some(Member {
                user_id: user.user_id,
                session: Some(hash),
                password_pending: user.password_pending,
            }));
        }
    }
    if let Some(secret) = auth_token {
        let hash = token::hash_secret(&secret);
        // The socket gets a session of its own (its secret goes nowhere), made in the redeem's
        // transaction, so that a sign-out everywhere, or a later proof of the address that ends
        // the account's sessions, closes it like any other, also when it lands while it joins.
        let session = token::hash_secret(&token::new_secret());
        let Some(owner) =
            crate::auth::proof::redeem_sign_in_token(db, cluster, &hash, Some(session.clone()))
                .await?
        else {
            return Ok(None);
        };
        if owner.password_pending {
            return Ok(Some(Member {
                user_id: owner.user_id,
                session: None,
                password_pending: true,
            }));
        }
        return Ok(Some(Member {
            user_id: owner.user_id,
            session: Some(session),
            password_pending: false,
        }));
    }
    Ok(None)
}

impl Namespace for MemberNamespace {
    fn connect(
        &self,
        request: ConnectRequest,
        socket: SocketRef,
    ) -> BoxFuture<'static, Result<Recipient<SocketEvent>, ConnectError>> {
        let secret = |value: Option<&str>| {
            value
                .filter(|value| token::looks_like_secret(value))
                .map(str::to_owned)
        };
        let cookie = secret(request.handshake.cookie(self.cookies.session()));
        let auth_token = secret(request.auth.get("token").and_then(Value::as_str));
        let address = request.handshake.address;
        if !request.recovered && !self.joins.as_ref().is_none_or(|joins| joins.allow(address)) {
            return futures_util::future::ready(Err(refusal(
                "rate_limited",
                "Too many connections from your network. Please wait a minute and try again.",
            )))
            .boxed();
        }
        let registry = self.registry.clone();
        let db = self.db.clone();
        let cluster = self.cluster.clone();
        async move {
            let Member {
                user_id,
                session,
                password_pending,
            } = member_of(&db, &cluster, cookie, auth_token)
                .await
                .map_err(unavailable)?
                .ok_or_else(|| refusal("sign_in_required", "Please sign in to chat."))?;
            if password_pending {
                return Err(refusal(
                    "choose_password",
                    crate::auth::session::CHOOSE_PASSWORD,
                ));
            }
            if !super::has_access(&db, &user_id)
                .await
                .map_err(unavailable)?
            {
                return Err(refusal(
                    "upgrade_required",
                    "Start your trial to chat with your assistant.",
                ));
            }
            // The funnel greeting (and its shortcut) opens the first chat after the checkout.
            let first_chat = store::chats::list_chats(&db, &user_id, 1)
                .await
                .map_err(unavailable)?
                .is_empty();
            let funnel = if first_chat {
                store::users::funnel_record(&db, &user_id)
                    .await
                    .map_err(unavailable)?
                    .as_ref()
                    .and_then(super::funnel_brief)
            } else {
                None
            };
            let client: Arc<dyn ActorClient> = Arc::new(SocketClient {
                socket: socket.clone(),
                address,
            });
            let joined = registry
                .join(
                    &user_id,
                    Join {
                        client,
                        session: session.clone(),
                        funnel,
                    },
                )
                .await;
            let actor = match joined {
                Ok(actor) => actor,
                Err(error) => {
                    if registry.is_draining() {
                        // This process is stopping: the client connects again, to another.
                        socket.close_connection();
                    }
                    return Err(unavailable(error));
                }
            };
            // A sign-out while this connection was being opened told the actor before the
            // socket had joined: look again now that it has.
            if let Some(hash) = session {
                match store::sessions::find_user(&db, &hash).await {
                    Ok(Some(_)) => {}
                    Ok(None) => registry.signed_out(&user_id, Some(hash)),
                    Err(error) => tracing::warn!(%error, "a member's session could not be checked"),
                }
            }
            Ok(actor.recipient())
        }
        .boxed()
    }
}

fn text_field(args: &[Value], key: &str) -> Option<String> {
    args.first()
        .and_then(|data| data.get(key))
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// The socket's events, as the member actor understands them.
impl Handler<SocketEvent> for MemberActor {
    type Result = ();

    fn handle(&mut self, event: SocketEvent, ctx: &mut Self::Context) {
        let event = match event {
            SocketEvent::Event {
                name, payload, ack, ..
            } => {
                let args = &payload.args;
                match name.as_str() {
                    "chat:send" => Event::Send {
                        chat_id: text_field(args, "chatId"),
                        text: text_field(args, "text").unwrap_or_default(),
                        reply: reply(ack, |answer: &helpnow_actors::member::SendAck| {
                            answer.to_json()
                        }),
                    },
                    "chat:stop" => Event::Stop {
                        chat_id: text_field(args, "chatId").unwrap_or_default(),
                        reply: reply(ack, StopAck::to_json),
                    },
                    "task:help" => Event::TaskHelp {
                        task_id: text_field(args, "taskId").unwrap_or_default(),
                        reply: reply(ack, |answer: &helpnow_actors::member::TaskHelpAck| {
                            answer.to_json()
                        }),
                    },
                    _ => {
                        if let Some(ack) = ack {
                            ack.send_json(&json!({ "ok": false, "error": "Unknown event." }));
                        }
                        return;
                    }
                }
            }
            SocketEvent::Disconnected { socket, .. } => Event::Left {
                client_id: socket.id().to_owned(),
            },
        };
        <Self as Handler<Event>>::handle(self, event, ctx);
    }
}

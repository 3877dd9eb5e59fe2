//! The `/funnel` namespace (docs/protocol.md): no sign-in; the visitor is the `vid` cookie, or
//! `auth.visitorId` for clients without cookies (load generators). Each socket is joined to the
//! conversation actor of its visitor and funnel, which then gets the socket's events.

use std::net::IpAddr;
use std::sync::Arc;

use actix::{Handler, Recipient};
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use helpnow_actors::funnel::{
    Attribution, CheckoutAck, ClientEvent, ConversationKey, FunnelActor, FunnelRegistry, JoinError,
    NewConversation, SendAck,
};
use helpnow_actors::ports::ActorClient;
use helpnow_actors::rules::FunnelKind;
use helpnow_actors::rules::experiments::Visit;
use helpnow_actors::rules::flows::FlowRef;
use helpnow_actors::rules::text::clean_query_value;
use serde_json::{Map, Value, json};

use super::events::{refuse_unknown, sent_text};
use super::relay::FunnelRelay;
use crate::adapters::socket::{SocketClient, reply};
use crate::auth::SessionCookies;
use crate::client::AddressLimiter;
use crate::domain::VisitorId;
use crate::domain::journey::Step;
use crate::flows::FlowLibrary;
use crate::realtime::{ConnectError, ConnectRequest, Namespace, SocketEvent, SocketRef};
use crate::store;
use crate::store::Db;
use crate::store::batch::Batcher;
use crate::store::journeys::JourneyRecorder;

/// What a preview's socket is joined with (`auth.preview`, from `/admin`'s "Try it"): its own
/// registry (counted nowhere), the flows (the preview's draft), and who may open one: an admin,
/// by the session cookie the page's frame sends.
#[derive(Clone)]
pub struct PreviewChats {
    pub registry: FunnelRegistry,
    pub flows: FlowLibrary,
    pub db: Db,
    /// `admin.emails`.
    pub admins: Vec<String>,
}

/// The cookie that names a visitor (set with the pages, HttpOnly).
pub struct FunnelNamespace {
    registry: FunnelRegistry,
    /// Sockets whose conversation another process holds are served through it.
    relay: FunnelRelay,
    /// The visits' group commit (with the conversations' writes).
    batcher: Batcher,
    /// The dashboard's journey steps (a new visitor of the funnel).
    journeys: JourneyRecorder,
    /// Conversations (and rejoins) per address and minute (`realtime.funnel_joins_per_minute`):
    /// a tab's reconnects fit easily, a script opening conversation after conversation (each a
    /// stored row, an actor, AI calls) does not.
    joins: Option<AddressLimiter>,
    /// The visitor cookie's name (`__Host-vid` over https).
    cookies: SessionCookies,
    previews: PreviewChats,
}

impl FunnelNamespace {
    pub fn new(
        registry: FunnelRegistry,
        relay: FunnelRelay,
        batcher: Batcher,
        journeys: JourneyRecorder,
        joins_per_minute: u32,
        cookies: SessionCookies,
        previews: PreviewChats,
    ) -> Self {
        Self {
            registry,
            relay,
            batcher,
            journeys,
            cookies,
            previews,
            joins: (joins_per_minute > 0)
                .then(|| AddressLimiter::per_minute(joins_per_minute, joins_per_minute)),
        }
    }

    fn allow_join(&self, address: Option<IpAddr>) -> bool {
        self.joins.as_ref().is_none_or(|joins| joins.allow(address))
    }
}

fn text(auth: &Map<String, Value>, key: &str) -> Option<String> {
    auth.get(key)
        .and_then(Value::as_str)
        .and_then(clean_query_value)
}

fn attribution(auth: &Map<String, Value>) -> Attribution {
    Attribution {
        campaignid: text(auth, "campaignid"),
        keyword: text(auth, "keyword"),
        utm_source: text(auth, "utm_source"),
        utm_medium: text(auth, "utm_medium"),
        utm_campaign: text(auth, "utm_campaign"),
        gclid: text(auth, "gclid"),
    }
}

impl Namespace for FunnelNamespace {
    fn connect(
        &self,
        request: ConnectRequest,
        socket: SocketRef,
    ) -> BoxFuture<'static, Result<Recipient<SocketEvent>, ConnectError>> {
        let funnel = match request.auth.get("funnel").and_then(Value::as_str) {
            Some("chat") => FunnelKind::Chat,
            Some("refundable") => FunnelKind::Refundable,
            _ => {
                return futures_util::future::ready(Err(ConnectError::new(
                    "This chat is not available. Please reload the page.",
                )))
                .boxed();
            }
        };
        if let Some(preview) = request.auth.get("preview").and_then(Value::as_str) {
            if !request.recovered && !self.allow_join(request.handshake.address) {
                return futures_util::future::ready(Err(ConnectError::new(
                    "Too many chats from your connection. Please wait a minute and try again.",
                )))
                .boxed();
            }
            let session = request.handshake.cookie(self.cookies.session());
            return connect_preview(
                self.previews.clone(),
                preview.to_owned(),
                funnel,
                session.map(str::to_owned),
                attribution(&request.auth),
                socket,
                request.handshake.address,
            );
        }
        let visitor = request
            .handshake
            .cookie(self.cookies.visitor())
            .or_else(|| request.auth.get("visitorId").and_then(Value::as_str))
            .and_then(VisitorId::parse);
        let address = request.handshake.address;
        if !request.recovered && !self.allow_join(address) {
            return futures_util::future::ready(Err(ConnectError::new(
                "Too many chats from your connection. Please wait a minute and try again.",
            )
            .with_data(json!({ "code": "rate_limited" }))))
            .boxed();
        }
        let Some(visitor_id) = visitor else {
            return futures_util::future::ready(Err(ConnectError::new(
                "Please reload the page to start chatting (this site needs a cookie to keep your conversation).",
            )))
            .boxed();
        };
        let attribution = attribution(&request.auth);
        let registry = self.registry.clone();
        let relay = self.relay.clone();
        // The visit is noted beside the join, not before it: nothing in the conversation waits
        // for it.
        let visit = store::funnels::visit(&visitor_id, &attribution);
        // A new visitor of this funnel for the dashboard, if not already counted, with the
        // experiment's arm the visitor is in here (the actor chooses the same from the same
        // catalog).
        let (_, arm) = self.previews.flows.catalog().landing(&Visit {
            funnel,
            campaignid: attribution.campaignid.as_deref(),
            keyword: attribution.keyword.as_deref(),
            visitor: visitor_id.as_str(),
        });
        let journey = store::journeys::JourneyStep::new(
            visitor_id.as_str(),
            super::checkout_source(funnel),
            Step::Visitors,
        )
        .attribution(serde_json::to_value(&attribution).ok())
        .arm(arm.as_ref());
        self.journeys.record(journey);
        let batcher = self.batcher.clone();
        tokio::spawn(async move {
            if let Err(error) = batcher.submit(visit).await {
                tracing::warn!(%error, "a visitor could not be recorded");
            }
        });
        async move {
            let key = ConversationKey {
                visitor_id: visitor_id.into_string(),
                funnel,
            };
            let start = NewConversation {
                attribution,
                flow: None,
            };
            let client: Arc<dyn ActorClient> = Arc::new(SocketClient {
                socket: socket.clone(),
                address,
            });
            match registry.join(key.clone(), start.clone(), client).await {
                Ok(actor) => Ok(actor.recipient()),
                // Another process holds the conversation (the visitor's other tab is there).
                Err(JoinError::Elsewhere(holder)) => {
                    Ok(relay.open(holder, key, start, socket, address))
                }
                // This process is stopping: the client connects again, to another one.
                Err(JoinError::Stopping) => {
                    socket.close_connection();
                    Err(ConnectError::new(
                        "We could not open your chat just now. Please try again in a moment.",
                    )
                    .with_data(json!({ "code": "unavailable" })))
                }
                Err(JoinError::Unavailable) => Err(ConnectError::new(
                    "We could not open your chat just now. Please try again in a moment.",
                )
                .with_data(json!({ "code": "unavailable" }))),
            }
        }
        .boxed()
    }
}

/// Joins a preview's socket to its conversation: only for an admin (the session cookie), only
/// for a preview that exists; counted nowhere (no visit, no journey, no event).
fn connect_preview(
    previews: PreviewChats,
    preview: String,
    funnel: FunnelKind,
    session: Option<String>,
    attribution: Attribution,
    socket: SocketRef,
    address: Option<IpAddr>,
) -> BoxFuture<'static, Result<Recipient<SocketEvent>, ConnectError>> {
    async move {
        let refused = || {
            ConnectError::new(
                "This preview is not available. Please start it again from the Flows page.",
            )
        };
        let admin = match session {
            Some(secret) => crate::auth::session::user_of_session(&previews.db, &secret)
                .await
                .ok()
                .flatten()
                .is_some_and(|user| user.is_admin(&previews.admins)),
            None => false,
        };
        if !admin {
            return Err(refused());
        }
        let mut flow = previews
            .flows
            .catalog()
            .previews
            .get(&preview)
            .map(|(flow, _)| flow.clone());
        if flow.is_none() {
            // Made a moment ago on another process.
            let _ = previews.flows.reload().await;
            flow = previews
                .flows
                .catalog()
                .previews
                .get(&preview)
                .map(|(flow, _)| flow.clone());
        }
        let Some(flow) = flow else {
            return Err(refused());
        };
        let key = ConversationKey {
            visitor_id: crate::flows::preview_visitor(&preview),
            funnel,
        };
        let start = NewConversation {
            // Only the keyword (for `{keyword}` and the headline): nothing else of an ad.
            attribution: Attribution {
                keyword: attribution.keyword,
                ..Attribution::default()
            },
            flow: Some(FlowRef {
                name: flow,
                version: 0,
                preview: Some(preview),
            }),
        };
        let client: Arc<dyn ActorClient> = Arc::new(SocketClient { socket, address });
        match previews.registry.join(key, start, client).await {
            Ok(actor) => Ok(actor.recipient()),
            Err(_) => Err(ConnectError::new(
                "We could not open your chat just now. Please try again in a moment.",
            )
            .with_data(json!({ "code": "unavailable" }))),
        }
    }
    .boxed()
}

/// The socket's events, as the conversation actor understands them.
impl Handler<SocketEvent> for FunnelActor {
    type Result = ();

    fn handle(&mut self, event: SocketEvent, ctx: &mut Self::Context) {
        let event = match event {
            SocketEvent::Event {
                socket,
                name,
                payload,
                ack,
            } => match name.as_str() {
                "send" => ClientEvent::Send {
                    client_id: socket.id().to_owned(),
                    text: sent_text(&payload),
                    reply: reply(ack, |answer: &SendAck| answer.to_json()),
                },
                "checkout" => ClientEvent::Checkout {
                    client_id: socket.id().to_owned(),
                    reply: reply(ack, CheckoutAck::to_json),
                },
                _ => return refuse_unknown(ack),
            },
            SocketEvent::Disconnected { socket, .. } => ClientEvent::Left {
                client_id: socket.id().to_owned(),
            },
        };
        <Self as Handler<ClientEvent>>::handle(self, event, ctx);
    }
}

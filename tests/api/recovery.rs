//! Connection state recovery on the product's namespaces (docs/protocol.md): a socket whose
//! transport drops and that comes back within the window keeps its id, and what it missed reaches
//! it once; `/member` checks access again on the way back. The conversation actors let go of a
//! socket whose transport went and send the whole state to every socket that joins, recovered ones
//! included (`conversation`, `chat:ready`), so a reply sent while the socket was away shows there.
//!
//! A small Socket.IO client over a raw WebSocket, which can lose its transport without a word, as a
//! dropped network does, and comes back as the official client does (`auth.pid`, `auth.offset`).

use std::time::Duration;

use futures_util::StreamExt;
use helpnow::realtime::socketio::{Packet, PacketType};
use serde_json::{Value, json};

use crate::ai_mock::MockAi;
use crate::helpers::{
    RawWebSocket, TestApp, Upgrade, post_with_cookie, spawn_app, spawn_app_with, websocket_upgrade,
};
use crate::members::member;
use crate::realtime::open_connections;

const WEBSOCKET: &str = "/socket.io/?EIO=4&transport=websocket";

/// One socket of a namespace, with what the official client keeps to recover it.
pub(crate) struct Client {
    /// `None` once lost.
    transport: Option<RawWebSocket>,
    namespace: &'static str,
    auth: Value,
    cookie: Option<String>,
    /// The socket id and the private session id of the last CONNECT answer.
    sid: String,
    pid: String,
    /// The offset of the last event received: the last argument of the events kept for recovery.
    offset: Option<String>,
    /// Events received and not taken yet: name and data.
    inbox: Vec<(String, Value)>,
    next_ack: u64,
}

/// A WebSocket to the server (with the session cookie), past its open packet.
async fn transport(app: &TestApp, cookie: Option<&str>) -> RawWebSocket {
    let headers: Vec<(&str, &str)> = cookie.map(|c| ("cookie", c)).into_iter().collect();
    let Upgrade::Open(mut socket) = websocket_upgrade(&app.address, WEBSOCKET, &headers).await
    else {
        panic!("the upgrade was refused");
    };
    assert!(socket.next_text().await.starts_with('0'), "an open packet");
    socket
}

impl Client {
    /// Joins `namespace` with `auth`: the socket, or the data of the refusal.
    pub(crate) async fn join(
        app: &TestApp,
        namespace: &'static str,
        auth: Value,
        cookie: Option<&str>,
    ) -> Result<Self, Value> {
        let mut client = Self {
            transport: Some(transport(app, cookie).await),
            namespace,
            auth: auth.clone(),
            cookie: cookie.map(str::to_owned),
            sid: String::new(),
            pid: String::new(),
            offset: None,
            inbox: Vec::new(),
            next_ack: 0,
        };
        client.connect(&auth).await?;
        Ok(client)
    }

    /// Closes the TCP connection without a close frame or packet, and waits until the server
    /// has noticed: it keeps the socket for the recovery window. (The official client waits a
    /// second before it connects again.)
    async fn lose_transport(&mut self, app: &TestApp) {
        let before = open_connections(app).await;
        self.transport = None;
        for _ in 0..200 {
            if open_connections(app).await < before {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the server did not notice the lost transport");
    }

    /// Comes back on a new transport as the official client does: the handshake's auth with the
    /// private session id and the offset of the last event received. The refusal's data if
    /// refused.
    async fn recover(&mut self, app: &TestApp) -> Result<(), Value> {
        self.transport = Some(transport(app, self.cookie.as_deref()).await);
        let mut auth = self.auth.clone();
        auth["pid"] = json!(self.pid);
        if let Some(offset) = &self.offset {
            auth["offset"] = json!(offset);
        }
        self.inbox.clear();
        self.connect(&auth).await
    }

    async fn connect(&mut self, auth: &Value) -> Result<(), Value> {
        let connect = format!("0{},{auth}", self.namespace);
        self.send(&connect).await;
        loop {
            let packet = self.next_packet().await.expect("the CONNECT answer");
            match packet.kind {
                PacketType::Connect => {
                    let data = packet.data.expect("the CONNECT answer's data");
                    self.sid = data["sid"].as_str().expect("sid").to_owned();
                    self.pid = data["pid"]
                        .as_str()
                        .expect("pid: recovery is on")
                        .to_owned();
                    return Ok(());
                }
                PacketType::ConnectError => return Err(packet.data.unwrap_or(Value::Null)),
                _ => self.keep(packet),
            }
        }
    }

    /// Sends a Socket.IO packet's text.
    async fn send(&mut self, text: &str) {
        let transport = self.transport.as_mut().expect("a transport");
        transport.send_text(&format!("4{text}")).await;
    }

    /// The next packet of the namespace, answering pings on the way; `None` when nothing comes
    /// within `patience`.
    async fn next_packet_within(&mut self, patience: Duration) -> Option<Packet> {
        let transport = self.transport.as_mut().expect("a transport");
        loop {
            let frame = tokio::time::timeout(patience, transport.framed.next())
                .await
                .ok()?
                .expect("the connection is open")
                .expect("a valid frame");
            let actix_http::ws::Frame::Text(bytes) = frame else {
                continue;
            };
            let text = std::str::from_utf8(&bytes).expect("UTF-8");
            if text == "2" {
                transport.send_text("3").await;
            } else if let Some(message) = text.strip_prefix('4') {
                let packet = Packet::decode(message).expect("a Socket.IO packet");
                if packet.namespace == self.namespace {
                    return Some(packet);
                }
            }
        }
    }

    /// The next packet of the namespace within 10 s.
    async fn next_packet(&mut self) -> Option<Packet> {
        self.next_packet_within(Duration::from_secs(10)).await
    }

    /// Keeps an event for later, noting its offset as the official client does.
    fn keep(&mut self, packet: Packet) {
        if packet.kind != PacketType::Event {
            return;
        }
        let Some(Value::Array(mut items)) = packet.data else {
            return;
        };
        if items.len() > 2
            && let Some(Value::String(offset)) = items.last()
        {
            self.offset = Some(offset.clone());
            items.pop();
        }
        let name = items[0].as_str().expect("an event name").to_owned();
        self.inbox
            .push((name, items.get(1).cloned().unwrap_or(Value::Null)));
    }

    /// The data of the next `name` event that `wanted` picks (10 s at most).
    pub(crate) async fn event_where(
        &mut self,
        name: &str,
        wanted: impl Fn(&Value) -> bool,
    ) -> Value {
        loop {
            if let Some(index) = self
                .inbox
                .iter()
                .position(|(event, data)| event == name && wanted(data))
            {
                return self.inbox.remove(index).1;
            }
            let packet = self
                .next_packet()
                .await
                .unwrap_or_else(|| panic!("no {name} within 10 s; got {:?}", self.inbox));
            self.keep(packet);
        }
    }

    pub(crate) async fn event(&mut self, name: &str) -> Value {
        self.event_where(name, |_| true).await
    }

    /// Every event that comes until nothing has come for a second.
    async fn events_until_quiet(&mut self) -> Vec<(String, Value)> {
        while let Some(packet) = self.next_packet_within(Duration::from_secs(1)).await {
            self.keep(packet);
        }
        std::mem::take(&mut self.inbox)
    }

    /// Emits `event` asking for an acknowledgement; the acknowledgement's data.
    pub(crate) async fn call(&mut self, event: &str, data: Value) -> Value {
        let id = self.next_ack;
        self.next_ack += 1;
        let packet = Packet::event(self.namespace, event, vec![data], Some(id), 0);
        self.send(&packet.encode()).await;
        loop {
            let packet = self.next_packet().await.expect("the acknowledgement");
            if packet.kind == PacketType::Ack && packet.ack_id == Some(id) {
                return packet.data.expect("ack data")[0].clone();
            }
            self.keep(packet);
        }
    }
}

/// The funnel conversation as the page shows it: the last `conversation`, then each `message`
/// after it; as (role, text).
fn shown(events: &[(String, Value)]) -> Vec<(String, String)> {
    let entry = |message: &Value| {
        (
            message["role"].as_str().expect("role").to_owned(),
            message["text"].as_str().expect("text").to_owned(),
        )
    };
    let mut shown = Vec::new();
    for (event, data) in events {
        match event.as_str() {
            "conversation" => {
                shown = data["messages"]
                    .as_array()
                    .expect("messages")
                    .iter()
                    .map(entry)
                    .collect();
            }
            "message" => shown.push(entry(data)),
            _ => {}
        }
    }
    shown
}

#[tokio::test]
async fn a_funnel_visitor_back_within_the_window_keeps_its_socket_and_sees_the_missed_reply_once() {
    let app = spawn_app().await;
    let auth = json!({ "funnel": "chat", "visitorId": "recovering-visitor-000001" });
    let mut tab = Client::join(&app, "/funnel", auth.clone(), None)
        .await
        .expect("joined");
    let greeting = tab.event("conversation").await;
    // The visitor's other tab sees the reply go out while the first one is away.
    let mut other = Client::join(&app, "/funnel", auth, None)
        .await
        .expect("joined");
    other.event("conversation").await;

    let text = "My printer will not print anything";
    assert_eq!(tab.call("send", json!({ "text": text })).await["ok"], true);
    let sid = tab.sid.clone();
    tab.lose_transport(&app).await;
    let reply = other
        .event_where("message", |message| message["role"] == "assistant")
        .await;

    tab.recover(&app).await.expect("recovered");
    assert_eq!(tab.sid, sid, "the same socket");
    let greeting = &greeting["messages"][0];
    assert_eq!(
        shown(&tab.events_until_quiet().await),
        [
            ("assistant", greeting["text"].as_str().expect("text")),
            ("user", text),
            ("assistant", reply["text"].as_str().expect("text")),
        ]
        .map(|(role, text)| (role.to_owned(), text.to_owned())),
        "the reply it missed, once"
    );
}

#[tokio::test]
async fn a_member_back_within_the_window_keeps_its_socket_and_the_reply_being_written() {
    let ai = MockAi::start().await;
    let steps: Vec<String> = (1..=6).map(|n| format!("{n}. Step number {n}.")).collect();
    ai.reply_with(steps.join(" "));
    // A piece every 300 ms: the reply is still being written when the member is back.
    ai.stream_delay(Duration::from_millis(300));
    let app = spawn_app_with(|settings| settings.ai = ai.settings()).await;
    let (cookie, _) = member(&app, "recovers@example.com").await;
    let mut tab = Client::join(&app, "/member", json!({}), Some(&cookie))
        .await
        .expect("joined");
    tab.event("chat:ready").await;

    let ack = tab
        .call(
            "chat:send",
            json!({ "text": "How do I connect to the Wi-Fi?" }),
        )
        .await;
    let chat_id = ack["chatId"].as_str().expect("chat id").to_owned();
    tab.event("chat:delta").await;
    let sid = tab.sid.clone();
    tab.lose_transport(&app).await;

    tab.recover(&app).await.expect("recovered");
    assert_eq!(tab.sid, sid, "the same socket");
    let ready = tab.event("chat:ready").await;
    assert_eq!(ready["writing"], json!([chat_id]), "{ready}");
    let done = tab.event("chat:done").await;
    assert_eq!(done["chatId"], chat_id.as_str());
    assert_eq!(done["text"], steps.join(" "));
}

/// Sets the end of the member's trial, which is all the access they have.
async fn trial_ends(app: &TestApp, user_id: &str, end: &str) {
    app.db
        .query(format!(
            "UPDATE type::record('user', $id) SET trial_end_date = {end}"
        ))
        .bind(("id", user_id.to_owned()))
        .await
        .expect("query")
        .check()
        .expect("trial end set");
}

#[tokio::test]
async fn a_member_who_lost_access_while_away_is_refused_on_recovery_as_on_a_new_connection() {
    let app = spawn_app().await;
    let (cookie, user_id) = member(&app, "lapses@example.com").await;
    let mut tab = Client::join(&app, "/member", json!({}), Some(&cookie))
        .await
        .expect("joined");
    tab.event("chat:ready").await;
    let sid = tab.sid.clone();
    tab.lose_transport(&app).await;

    // The trial ends while the tab is away.
    trial_ends(&app, &user_id, "time::now() - 1d").await;
    let Err(fresh) = Client::join(&app, "/member", json!({}), Some(&cookie)).await else {
        panic!("a new connection without access was let in");
    };
    assert_eq!(fresh["data"], json!({ "code": "upgrade_required" }));
    let refused = tab.recover(&app).await.expect_err("refused on recovery");
    assert_eq!(refused, fresh);

    // The refused session is not kept for a later try: with access back, it starts anew.
    trial_ends(&app, &user_id, "time::now() + 7d").await;
    tab.recover(&app).await.expect("joined again");
    assert_ne!(tab.sid, sid, "a new socket");

    // Signed out while away: refused as a visitor is.
    tab.event("chat:ready").await;
    tab.lose_transport(&app).await;
    let response = post_with_cookie(&app, "/api/auth/logout", &cookie, &json!({})).await;
    assert_eq!(response.status(), 204);
    let refused = tab.recover(&app).await.expect_err("refused on recovery");
    assert_eq!(refused["data"], json!({ "code": "sign_in_required" }));
}

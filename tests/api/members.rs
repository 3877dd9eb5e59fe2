//! The members' chat on the real server: the `/member` namespace's refusals, a streamed reply
//! saved with its title, Stop hanging up on the AI provider (the mock sees the request end), owner
//! isolation, and the saved shortcuts. A small Socket.IO client over HTTP long-polling speaks the
//! protocol here; the official client checks the same namespace in web/conformance.

use std::time::{Duration, Instant};

use helpnow::store::batch::{Outcome, Statement, commit_together};
use helpnow::store::chats::{self, ChatId, MessageId, Role};
use serde_json::{Value, json};
use surrealdb::types::SurrealValue;

use crate::ai_mock::MockAi;
use crate::auth::{me, sign_up};
use crate::helpers::{TestApp, get_with_cookie, spawn_app, spawn_app_with};

const HANDSHAKE: &str = "/socket.io/?EIO=4&transport=polling";
pub(crate) const NAMESPACE: &str = "/member";

/// Gives the account behind `cookie` a trial that ends in a week (as fulfilment would).
async fn start_trial(app: &TestApp, cookie: &str) -> String {
    let user_id = me(app, cookie).await["user"]["id"]
        .as_str()
        .expect("user id")
        .to_owned();
    app.db
        .query(
            "UPDATE type::record('user', $id) SET trial_started = true, \
             trial_start_date = time::now(), trial_end_date = time::now() + 7d",
        )
        .bind(("id", user_id.clone()))
        .await
        .expect("query")
        .check()
        .expect("trial set");
    user_id
}

pub(crate) async fn member(app: &TestApp, email: &str) -> (String, String) {
    let cookie = sign_up(app, email, "correct horse battery").await;
    let user_id = start_trial(app, &cookie).await;
    (cookie, user_id)
}

/// A Socket.IO client of the `/member` namespace over HTTP long-polling.
pub(crate) struct MemberSocket<'a> {
    app: &'a TestApp,
    sid: String,
    cookie: Option<String>,
    /// Packets read but not yet taken.
    inbox: Vec<String>,
    next_ack: u64,
}

impl<'a> MemberSocket<'a> {
    /// Opens the Engine.IO session (with the cookie, if any) and asks to join the namespace.
    pub(crate) async fn open(app: &'a TestApp, cookie: Option<&str>, auth: Value) -> (Self, Value) {
        let mut request = app.client.get(app.url(HANDSHAKE));
        if let Some(cookie) = cookie {
            request = request.header("cookie", cookie);
        }
        let body = request
            .send()
            .await
            .expect("handshake")
            .text()
            .await
            .expect("body");
        let open: Value =
            serde_json::from_str(body.strip_prefix('0').expect("an open packet")).expect("json");
        let mut socket = Self {
            app,
            sid: open["sid"].as_str().expect("sid").to_owned(),
            cookie: cookie.map(str::to_owned),
            inbox: Vec::new(),
            next_ack: 0,
        };
        socket.post(&format!("40{NAMESPACE},{auth}")).await;
        let answer = socket
            .take(|packet| {
                packet.starts_with(&format!("40{NAMESPACE},"))
                    || packet.starts_with(&format!("44{NAMESPACE},"))
            })
            .await;
        let joined = answer.starts_with("40");
        let data: Value = serde_json::from_str(&answer[NAMESPACE.len() + 3..]).expect("json");
        (socket, json!({ "joined": joined, "data": data }))
    }

    async fn post(&self, body: &str) {
        let mut request = self
            .app
            .client
            .post(self.app.url(&format!("{HANDSHAKE}&sid={}", self.sid)))
            .body(body.to_owned());
        if let Some(cookie) = &self.cookie {
            request = request.header("cookie", cookie);
        }
        let response = request.send().await.expect("POST");
        assert_eq!(response.status(), 200);
    }

    /// The first packet (read so far or from the next polls) that `wanted` picks. Pings are
    /// answered on the way.
    pub(crate) async fn take(&mut self, wanted: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(index) = self.inbox.iter().position(|packet| wanted(packet)) {
                return self.inbox.remove(index);
            }
            assert!(
                Instant::now() < deadline,
                "no such packet; got {:?}",
                self.inbox
            );
            let body = self
                .app
                .get(&format!("{HANDSHAKE}&sid={}", self.sid))
                .await
                .text()
                .await
                .expect("poll body");
            for packet in body.split('\u{1e}') {
                if packet == "2" {
                    self.post("3").await;
                } else if !packet.is_empty() {
                    self.inbox.push(packet.to_owned());
                }
            }
        }
    }

    /// Emits `event` with `data`, asking for an acknowledgement; returns the ack's data.
    async fn call(&mut self, event: &str, data: Value) -> Value {
        let id = self.next_ack;
        self.next_ack += 1;
        self.post(&format!("42{NAMESPACE},{id}{}", json!([event, data])))
            .await;
        let prefix = format!("43{NAMESPACE},{id}[");
        let packet = self.take(|packet| packet.starts_with(&prefix)).await;
        let args: Value = serde_json::from_str(&packet[prefix.len() - 1..]).expect("json");
        args[0].clone()
    }

    /// The next server event named `event`; its data.
    pub(crate) async fn event(&mut self, event: &str) -> Value {
        let prefix = format!("42{NAMESPACE},[\"{event}\",");
        let packet = self.take(|packet| packet.starts_with(&prefix)).await;
        let args: Value = serde_json::from_str(&packet[NAMESPACE.len() + 3..]).expect("json");
        args[1].clone()
    }
}

#[tokio::test]
async fn visitors_and_members_without_access_are_refused_with_a_code() {
    let app = spawn_app().await;
    let (_, visitor) = MemberSocket::open(&app, None, json!({})).await;
    assert_eq!(visitor["joined"], false);
    assert_eq!(visitor["data"]["data"]["code"], "sign_in_required");
    assert_eq!(visitor["data"]["message"], "Please sign in to chat.");

    let (_, forged) = MemberSocket::open(&app, None, json!({ "token": "x".repeat(43) })).await;
    assert_eq!(forged["data"]["data"]["code"], "sign_in_required");

    let cookie = sign_up(&app, "no-trial@example.com", "correct horse battery").await;
    let (_, no_access) = MemberSocket::open(&app, Some(&cookie), json!({})).await;
    assert_eq!(no_access["joined"], false);
    assert_eq!(no_access["data"]["data"]["code"], "upgrade_required");

    start_trial(&app, &cookie).await;
    let (_, member) = MemberSocket::open(&app, Some(&cookie), json!({})).await;
    assert_eq!(member["joined"], true);
}

#[tokio::test]
async fn a_streamed_reply_is_saved_under_the_title_of_the_first_message() {
    let ai = MockAi::start().await;
    ai.reply_with("1. Open **Settings**.\n2. Choose *Wi-Fi*.\n3. Pick your network.");
    let app = spawn_app_with(|settings| settings.ai = ai.settings()).await;
    let (cookie, _) = member(&app, "streams@example.com").await;
    let (mut socket, joined) = MemberSocket::open(&app, Some(&cookie), json!({})).await;
    assert_eq!(joined["joined"], true);
    assert_eq!(
        socket.event("chat:ready").await["greeting"],
        "Hello! How can I help you today?"
    );

    let question = "How do I connect my new laptop to the Wi-Fi at home?";
    let ack = socket.call("chat:send", json!({ "text": question })).await;
    assert_eq!(ack["ok"], true, "{ack}");
    assert_eq!(ack["title"], "How do I connect my new laptop...");
    let chat_id = ack["chatId"].as_str().expect("chat id").to_owned();

    let typing = socket.event("chat:typing").await;
    assert_eq!(typing["chatId"], chat_id.as_str());
    let mut streamed = String::new();
    let done = loop {
        let packet = socket
            .take(|p| p.contains("\"chat:delta\"") || p.contains("\"chat:done\""))
            .await;
        let args: Value = serde_json::from_str(&packet[NAMESPACE.len() + 3..]).expect("json");
        if args[0] == "chat:done" {
            break args[1].clone();
        }
        streamed.push_str(args[1]["text"].as_str().expect("text"));
    };
    assert_eq!(
        done["text"],
        "1. Open **Settings**.\n2. Choose *Wi-Fi*.\n3. Pick your network."
    );
    assert_eq!(
        streamed,
        done["text"].as_str().expect("text"),
        "the pieces make the reply"
    );
    assert_eq!(done["messageId"], typing["messageId"]);
    assert_eq!(done["stopped"], false);
    let sent = ai.requests().last().expect("a request").clone();
    assert!(
        sent.contents().iter().any(|c| c == question),
        "{:?}",
        sent.contents()
    );

    // Reloaded (or from another device): the history has it, in order.
    let list: Value = get_with_cookie(&app, "/api/chats", &cookie)
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(list["chats"][0]["id"], chat_id.as_str());
    assert_eq!(
        list["chats"][0]["title"],
        "How do I connect my new laptop..."
    );
    let chat: Value = get_with_cookie(&app, &format!("/api/chats/{chat_id}"), &cookie)
        .await
        .json()
        .await
        .expect("json");
    let messages: Vec<(&str, &str)> = chat["chat"]["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap_or_default(),
                m["content"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        messages,
        vec![
            ("assistant", "Hello! How can I help you today?"),
            ("user", question),
            ("assistant", done["text"].as_str().expect("text")),
        ]
    );
    assert_eq!(chat["chat"]["messages"][2]["id"], done["messageId"]);
}

#[tokio::test]
async fn stop_ends_the_providers_request_and_keeps_what_was_written() {
    let ai = MockAi::start().await;
    // A long reply, a piece every 300 ms: about 20 s to write in full.
    let steps: Vec<String> = (1..=20).map(|n| format!("{n}. Step number {n}.")).collect();
    ai.reply_with(steps.join(" "));
    ai.stream_delay(Duration::from_millis(300));
    let app = spawn_app_with(|settings| settings.ai = ai.settings()).await;
    let (cookie, _) = member(&app, "stops@example.com").await;
    let (mut socket, _) = MemberSocket::open(&app, Some(&cookie), json!({})).await;
    let ack = socket
        .call("chat:send", json!({ "text": "My internet keeps dropping" }))
        .await;
    let chat_id = ack["chatId"].as_str().expect("chat id").to_owned();
    let first = socket.event("chat:delta").await;
    assert!(!ai.stream_cancelled());

    let stopped = socket.call("chat:stop", json!({ "chatId": chat_id })).await;
    assert_eq!(stopped["ok"], true);
    let done = socket.event("chat:done").await;
    assert_eq!(done["stopped"], true);
    let kept = done["text"].as_str().expect("text").to_owned();
    assert!(
        kept.starts_with(first["text"].as_str().expect("text").trim()),
        "{kept:?}"
    );

    // The provider sees its request end long before the reply would have been written.
    let deadline = Instant::now() + Duration::from_secs(5);
    while !ai.stream_cancelled() {
        assert!(
            Instant::now() < deadline,
            "the provider's request was not ended"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let chat: Value = get_with_cookie(&app, &format!("/api/chats/{chat_id}"), &cookie)
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(chat["chat"]["messages"][2]["content"], kept.as_str());
    assert_eq!(
        chat["chat"]["messages"].as_array().expect("messages").len(),
        3
    );
}

#[tokio::test]
async fn another_members_chat_is_not_found_and_a_session_token_works_without_cookies() {
    let app = spawn_app().await;
    let (owner_cookie, owner) = member(&app, "owner@example.com").await;
    let (other_cookie, _) = member(&app, "other@example.com").await;
    let first = MessageId::parse("mine1").expect("id");
    let chat = chats::start_chat(
        &app.db,
        &owner,
        "Mine",
        "Hello! How can I help you today?",
        &first,
        "my printer",
    )
    .await
    .expect("chat");

    // The other member connects with the session secret in `auth.token` (no cookie).
    let secret = other_cookie
        .split_once('=')
        .expect("name=value")
        .1
        .to_owned();
    let (mut socket, joined) = MemberSocket::open(&app, None, json!({ "token": secret })).await;
    assert_eq!(joined["joined"], true, "{joined}");
    let refused = socket
        .call(
            "chat:send",
            json!({ "chatId": chat.id, "text": "let me read it" }),
        )
        .await;
    assert_eq!(refused["ok"], false);
    assert_eq!(refused["code"], "not_found");
    assert_eq!(refused["error"], "Conversation not found.");
    let task = socket
        .call("task:help", json!({ "taskId": "abc123" }))
        .await;
    assert_eq!(task["code"], "not_found");

    let stored: Value = get_with_cookie(&app, &format!("/api/chats/{}", chat.id), &owner_cookie)
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(
        stored["chat"]["messages"]
            .as_array()
            .expect("messages")
            .len(),
        2
    );
}

#[tokio::test]
async fn task_help_answers_in_a_new_chat_from_the_offline_library() {
    let app = spawn_app().await;
    let (cookie, _) = member(&app, "tasks@example.com").await;
    let created: Value = crate::helpers::post_with_cookie(
        &app,
        "/api/tasks",
        &cookie,
        &json!({ "name": "Fix the printer", "items": ["Printer says offline"] }),
    )
    .await
    .json()
    .await
    .expect("json");
    let task_id = created["task"]["id"].as_str().expect("task id").to_owned();
    let (mut socket, _) = MemberSocket::open(&app, Some(&cookie), json!({})).await;
    let ack = socket.call("task:help", json!({ "taskId": task_id })).await;
    assert_eq!(ack["ok"], true, "{ack}");
    assert_eq!(ack["title"], "Fix the printer");
    let done = socket.event("chat:done").await;
    let text = done["text"].as_str().expect("text");
    assert!(text.contains("offline"), "{text}");
    assert!(text.contains("1."), "numbered steps: {text}");
}

#[tokio::test]
async fn messages_keep_the_id_their_writer_chose_and_the_ai_sees_the_last_ones() {
    let app = spawn_app().await;
    let (cookie, user) = member(&app, "ids@example.com").await;
    let first = MessageId::parse("msg0").expect("id");
    let chat = chats::start_chat(
        &app.db,
        &user,
        "Ids",
        "Hello! How can I help you today?",
        &first,
        "m0",
    )
    .await
    .expect("chat");
    let chat_id = ChatId::parse(&chat.id).expect("id");
    for n in 1..=6 {
        let id = MessageId::parse(&format!("msg{n}")).expect("id");
        chats::append_message_as(
            &app.db,
            &user,
            &chat_id,
            &id,
            Role::User,
            &format!("m{n}"),
            None,
        )
        .await
        .expect("stored");
    }
    // A write retried under the same id (its first try landed) keeps the one message.
    let again = MessageId::parse("msg6").expect("id");
    chats::append_message_as(&app.db, &user, &chat_id, &again, Role::User, "twice", None)
        .await
        .expect("a retry is answered as stored");
    let (_, all) = chats::chat_with_messages(&app.db, &user, &chat_id)
        .await
        .expect("read")
        .expect("found");
    let sixth: Vec<&str> = all
        .iter()
        .filter(|m| m.id == "msg6")
        .map(|m| m.content.as_str())
        .collect();
    assert_eq!(sixth, ["m6"]);
    // An id of another chat's message is not this chat's.
    let other = chats::start_chat(
        &app.db,
        &user,
        "Other",
        "Hello! How can I help you today?",
        &MessageId::parse("elsewhere1").expect("id"),
        "elsewhere",
    )
    .await
    .expect("chat");
    let stolen = MessageId::parse("msg6").expect("id");
    let other_id = ChatId::parse(&other.id).expect("id");
    assert!(matches!(
        chats::append_message_as(&app.db, &user, &other_id, &stolen, Role::User, "x", None).await,
        Err(chats::ChatStoreError::NotFound)
    ));
    let (_, recent) = chats::chat_with_recent_messages(&app.db, &user, &chat_id, 3)
        .await
        .expect("read")
        .expect("found");
    let contents: Vec<&str> = recent.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(contents, vec!["m4", "m5", "m6"]);
    assert_eq!(recent[2].id, "msg6");
    let theirs = chats::chat_with_recent_messages(&app.db, "someone-else", &chat_id, 3)
        .await
        .expect("read");
    assert!(theirs.is_none());
    let _ = cookie;
}

/// The member chat's store calls ride in the funnels' batches: one transaction holds access
/// reads, appends (one to a chat the member does not have: refused, nothing written), a chat read
/// and an event, and answers each on its own.
#[tokio::test]
async fn a_members_reads_and_writes_share_a_batch_and_each_gets_its_own_answer() {
    let app = spawn_app().await;
    let (_, user) = member(&app, "batched@example.com").await;
    let (_, other) = member(&app, "batched-other@example.com").await;
    let chat = chats::start_chat(&app.db, &user, "Mine", "Hello!", &id("first1"), "m0")
        .await
        .expect("chat");
    let theirs = chats::start_chat(&app.db, &other, "Theirs", "Hello!", &id("their1"), "t0")
        .await
        .expect("chat");
    let (mine, not_mine) = (
        ChatId::parse(&chat.id).expect("id"),
        ChatId::parse(&theirs.id).expect("id"),
    );
    let append = |chat: &ChatId, message: &str, content: &str| {
        Statement::AppendChatMessage(Box::new(chats::AppendVars::new(
            &user,
            chat,
            &id(message),
            Role::User,
            content,
            None,
        )))
    };
    let outcomes = commit_together(
        &app.db,
        vec![
            Statement::AccessFacts { user: user.clone() },
            append(&mine, "second2", "m1"),
            append(&not_mine, "stolen1", "x"),
            Statement::AccessFacts {
                user: "nobody".into(),
            },
            append(&mine, "third3", "m2"),
            Statement::RecentChat(chats::RecentVars::new(&user, &mine, 3)),
            Statement::RecentChat(chats::RecentVars::new(&user, &not_mine, 3)),
            Statement::MemberEvent {
                name: "chat_message_sent".into(),
                user: user.clone(),
                properties: json!({ "chatId": chat.id }),
            },
        ],
    )
    .await;
    assert_eq!(outcomes.len(), 8);
    assert!(
        matches!(&outcomes[0], Ok(Outcome::Loaded(Some(_)))),
        "{outcomes:?}"
    );
    // An append answers the chat's revision before it; none for a chat the member does not have.
    let revision = |n: i64| Ok(Outcome::Loaded(Some(n.into_value())));
    assert_eq!(outcomes[1], revision(0));
    assert_eq!(
        outcomes[2],
        Ok(Outcome::Loaded(None)),
        "another member's chat"
    );
    assert_eq!(outcomes[3], Ok(Outcome::Loaded(None)));
    assert_eq!(
        outcomes[4],
        revision(1),
        "the batch went on after a refusal"
    );
    let Ok(Outcome::Loaded(Some(recent))) = &outcomes[5] else {
        panic!("{outcomes:?}");
    };
    let recent = <chats::RecentRow as SurrealValue>::from_value(recent.clone()).expect("a chat");
    assert_eq!(recent.revision(), 2);
    let (_, recent) = recent.into_chat().expect("its messages");
    let contents: Vec<&str> = recent.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(
        contents,
        ["m0", "m1", "m2"],
        "read after the appends before it"
    );
    assert_eq!(outcomes[6], Ok(Outcome::Loaded(None)));
    assert_eq!(outcomes[7], Ok(Outcome::Done));
    let (_, theirs_now) = chats::chat_with_messages(&app.db, &other, &not_mine)
        .await
        .expect("read")
        .expect("found");
    assert_eq!(theirs_now.len(), 2, "nothing was written to another's chat");
    assert_eq!(
        helpnow::store::analytics::count_named(&app.db, "chat_message_sent")
            .await
            .expect("count"),
        1
    );
}

/// A member's events carry their account's first touch, read in the batch's own statement (not
/// the field's `fn::first_touch` per row): the same campaign fields as that function gives, and
/// an empty first touch for an account no ad brought. A visitor's event in the same batch keeps
/// the first touch it was given.
#[tokio::test]
async fn a_members_events_carry_the_first_touch_of_their_account() {
    let app = spawn_app().await;
    let (_, by_ad) = member(&app, "by-ad@example.com").await;
    let (_, organic) = member(&app, "organic@example.com").await;
    app.db
        .query(
            "UPDATE type::record('user', $id) SET acquisition = {
                 campaignid: '2231', keyword: 'printer offline', gclid: 'g-1', landing: '/help' }",
        )
        .bind(("id", by_ad.clone()))
        .await
        .expect("query")
        .check()
        .expect("acquisition set");
    let event = |user: &str| Statement::MemberEvent {
        name: "chat_message_sent".into(),
        user: user.to_owned(),
        properties: json!({ "chatId": "c1", "newChat": false }),
    };
    let outcomes = commit_together(
        &app.db,
        vec![
            event(&by_ad),
            event(&organic),
            Statement::Analytics(helpnow::store::analytics::NewAnalyticsEvent {
                name: "chatbot_first_message".into(),
                properties: json!({ "funnel": "chatbot" }),
                visitor: Some("v-member-batch".into()),
                path: None,
                user: None,
                first_touch: Some(json!({ "campaignid": "77" })),
            }),
        ],
    )
    .await;
    assert!(
        outcomes.iter().all(|outcome| outcome == &Ok(Outcome::Done)),
        "{outcomes:?}"
    );
    // Each row: [the stored first touch, what fn::first_touch gives for it].
    let touch = |query: &'static str, id: String| {
        let db = app.db.clone();
        async move {
            let mut response = db
                .query(query)
                .bind(("id", id))
                .await
                .expect("query")
                .check()
                .expect("read");
            let rows: Vec<Value> = response.take(0).expect("rows");
            assert_eq!(rows.len(), 1, "{rows:?}");
            rows[0].clone()
        }
    };
    let of_member = "SELECT VALUE [first_touch, fn::first_touch(NONE, user, properties)]
        FROM analytics_event
        WHERE user = type::record('user', $id) AND name = 'chat_message_sent'";
    // fn::first_touch names the fields the account lacks too (as none); the batch leaves them out.
    let given = |touch: &Value| {
        let mut touch = touch.as_object().cloned().unwrap_or_default();
        touch.retain(|_, value| !value.is_null());
        Value::Object(touch)
    };
    let expected = json!({ "campaignid": "2231", "keyword": "printer offline", "gclid": "g-1" });
    let stored = touch(of_member, by_ad).await;
    assert_eq!(stored[0], expected, "{stored}");
    assert_eq!(given(&stored[1]), expected, "as fn::first_touch gives it");
    let stored = touch(of_member, organic).await;
    assert_eq!(stored[0], json!({}), "{stored}");
    assert_eq!(stored[1], Value::Null, "fn::first_touch: none");
    let stored = touch(
        "SELECT VALUE [first_touch, NONE] FROM analytics_event WHERE visitor = $id",
        "v-member-batch".into(),
    )
    .await;
    assert_eq!(stored[0], json!({ "campaignid": "77" }));
}

/// Appends alone on their chat in a batch go together (one read, one `INSERT`), each answered
/// from its row as an append of its own would be: the revision before it; `-1` for an id that
/// already landed in that chat; none for another member's chat, a chat that does not exist or an
/// id of another chat's message (nothing written then). Two appends to one chat in a batch keep
/// their order.
#[tokio::test]
async fn appends_of_one_batch_go_together_and_each_gets_what_it_would_alone() {
    let app = spawn_app().await;
    let (_, user) = member(&app, "together@example.com").await;
    let (_, other) = member(&app, "together-other@example.com").await;
    let mine = four_chats(&app, &user, "start").await;
    let theirs = chats::start_chat(&app.db, &other, "Theirs", "Hello!", &id("their1"), "t0")
        .await
        .expect("chat");
    let not_mine = ChatId::parse(&theirs.id).expect("id");
    let missing = ChatId::parse("nosuchchat1").expect("id");
    let append = |chat: &ChatId, message: &str, role: Role, content: &str| {
        Statement::AppendChatMessage(Box::new(chats::AppendVars::new(
            &user,
            chat,
            &id(message),
            role,
            content,
            None,
        )))
    };
    let revision = |n: i64| Ok(Outcome::Loaded(Some(n.into_value())));
    let outcomes = commit_together(
        &app.db,
        vec![
            append(&mine[0], "a1", Role::User, "first of chat 0"),
            append(&not_mine, "stolen2", Role::User, "x"),
            append(&mine[1], "b1", Role::Assistant, "first of chat 1"),
            append(&missing, "lost1", Role::User, "x"),
            Statement::AccessFacts { user: user.clone() },
        ],
    )
    .await;
    assert_eq!(outcomes[0], revision(0), "{outcomes:?}");
    assert_eq!(
        outcomes[1],
        Ok(Outcome::Loaded(None)),
        "another member's chat"
    );
    assert_eq!(outcomes[2], revision(0));
    assert_eq!(outcomes[3], Ok(Outcome::Loaded(None)), "no such chat");
    assert!(matches!(&outcomes[4], Ok(Outcome::Loaded(Some(_)))));
    let outcomes = commit_together(
        &app.db,
        vec![
            // Retried after it landed: answered as already there, not stored twice.
            append(&mine[0], "a1", Role::User, "first of chat 0, again"),
            // An id of chat 1's message, sent to chat 3: not this chat's.
            append(&mine[3], "b1", Role::User, "x"),
            // A row of another kind goes before the appends in the batch's script.
            Statement::MemberEvent {
                name: "chat_message_sent".into(),
                user: user.clone(),
                properties: json!({}),
            },
            append(&mine[1], "b2", Role::User, "second of chat 1"),
            // Two to one chat: in order, each with its own statement.
            append(&mine[2], "c1", Role::User, "first of chat 2"),
            append(&mine[2], "c2", Role::Assistant, "second of chat 2"),
        ],
    )
    .await;
    assert_eq!(outcomes[0], revision(-1), "{outcomes:?}");
    assert_eq!(outcomes[1], Ok(Outcome::Loaded(None)));
    assert_eq!(outcomes[2], Ok(Outcome::Done));
    assert_eq!(outcomes[3], revision(1));
    assert_eq!(outcomes[4], revision(0));
    assert_eq!(outcomes[5], revision(1));
    let contents = |chat: &ChatId| {
        let (db, user, chat) = (app.db.clone(), user.clone(), chat.clone());
        async move {
            let (_, messages) = chats::chat_with_messages(&db, &user, &chat)
                .await
                .expect("read")
                .expect("found");
            messages
                .into_iter()
                .map(|m| (m.id, m.role, m.content))
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(
        contents(&mine[3]).await.len(),
        2,
        "nothing was written to chat 3"
    );
    assert_eq!(
        contents(&mine[0]).await[2..],
        [("a1".to_owned(), Role::User, "first of chat 0".to_owned())]
    );
    assert_eq!(
        contents(&mine[1]).await[2..],
        [
            (
                "b1".to_owned(),
                Role::Assistant,
                "first of chat 1".to_owned()
            ),
            ("b2".to_owned(), Role::User, "second of chat 1".to_owned()),
        ]
    );
    let third = contents(&mine[2]).await;
    assert_eq!(third[1].0, "start2");
    assert_eq!(
        third[2..],
        [
            ("c1".to_owned(), Role::User, "first of chat 2".to_owned()),
            (
                "c2".to_owned(),
                Role::Assistant,
                "second of chat 2".to_owned()
            ),
        ]
    );
    let (_, theirs_now) = chats::chat_with_messages(&app.db, &other, &not_mine)
        .await
        .expect("read")
        .expect("found");
    assert_eq!(theirs_now.len(), 2, "nothing was written to another's chat");
    // Each chat's revision counts its appends, and the history shows the last message.
    let listed = chats::list_chats(&app.db, &user, 10).await.expect("list");
    let preview_of = |chat: &ChatId| {
        listed
            .iter()
            .find(|c| c.id == chat.as_str())
            .map(|c| c.preview.clone())
    };
    assert_eq!(preview_of(&mine[2]).as_deref(), Some("second of chat 2"));
    assert_eq!(preview_of(&mine[1]).as_deref(), Some("second of chat 1"));
    assert_eq!(preview_of(&mine[0]).as_deref(), Some("first of chat 0"));
    let outcomes = commit_together(
        &app.db,
        vec![
            append(&mine[0], "a2", Role::User, "m"),
            append(&mine[1], "b3", Role::User, "m"),
            append(&mine[2], "c3", Role::User, "m"),
        ],
    )
    .await;
    assert_eq!(outcomes, [revision(1), revision(2), revision(2)]);
    // A batch whose appends all find nothing to write.
    let outcomes = commit_together(
        &app.db,
        vec![
            append(&mine[0], "a2", Role::User, "m"),
            append(&not_mine, "stolen3", Role::User, "x"),
        ],
    )
    .await;
    assert_eq!(outcomes, [revision(-1), Ok(Outcome::Loaded(None))]);
}

fn id(raw: &str) -> MessageId {
    MessageId::parse(raw).expect("an id")
}

/// The chat's stored revision, read straight from its record.
async fn revision_of(app: &TestApp, chat: &ChatId) -> i64 {
    let revisions: Vec<Option<i64>> = app
        .db
        .query("SELECT VALUE revision FROM type::record('chat', $id)")
        .bind(("id", chat.as_str().to_owned()))
        .await
        .expect("query")
        .check()
        .expect("read")
        .take(0)
        .expect("revisions");
    revisions[0].unwrap_or(0)
}

/// An append names the revision it expects the chat at (the member actor's: the one its
/// context was read at, or right after its own message for a reply). Two writers that expected
/// the same revision (two processes answering one message) cannot both write: the second is
/// answered "moved" and writes nothing, not the message, not the chat's revision or preview. A
/// write retried under the same id is still answered as there, though its first try moved the
/// revision on; an append that expects nothing is written at any revision.
#[tokio::test]
async fn an_append_expecting_a_revision_the_chat_has_left_writes_nothing() {
    let app = spawn_app().await;
    let (_, user) = member(&app, "revision@example.com").await;
    let (_, other) = member(&app, "revision-other@example.com").await;
    let chat = chats::start_chat(&app.db, &user, "Mine", "Hello!", &id("first1"), "m0")
        .await
        .expect("chat");
    let chat = ChatId::parse(&chat.id).expect("id");
    let append = |message: &'static str, content: &'static str, expected: Option<u64>| {
        let (db, user, chat) = (app.db.clone(), user.clone(), chat.clone());
        async move {
            chats::append_message_as(
                &db,
                &user,
                &chat,
                &id(message),
                Role::Assistant,
                content,
                expected,
            )
            .await
        }
    };
    assert_eq!(
        append("reply1", "from process A", Some(0))
            .await
            .expect("stored"),
        chats::Appended::After(0)
    );
    assert_eq!(
        append("reply2", "from process B", Some(0))
            .await
            .expect("answered"),
        chats::Appended::Moved
    );
    let (_, messages) = chats::chat_with_messages(&app.db, &user, &chat)
        .await
        .expect("read")
        .expect("found");
    let contents: Vec<&str> = messages.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(contents, ["Hello!", "m0", "from process A"]);
    assert_eq!(revision_of(&app, &chat).await, 1);
    let listed = chats::list_chats(&app.db, &user, 10).await.expect("list");
    assert_eq!(listed[0].preview, "from process A");
    // A's write retried (its first try landed, its answer was lost): there, not moved.
    assert_eq!(
        append("reply1", "from process A", Some(0))
            .await
            .expect("answered"),
        chats::Appended::AlreadyThere
    );
    assert_eq!(
        append("next1", "the next message", Some(1))
            .await
            .expect("stored"),
        chats::Appended::After(1)
    );
    assert_eq!(
        append("next2", "without a revision", None)
            .await
            .expect("stored"),
        chats::Appended::After(2)
    );
    assert_eq!(revision_of(&app, &chat).await, 3);
    // Another member's chat is not found, whatever the revision.
    assert!(matches!(
        chats::append_message_as(
            &app.db,
            &other,
            &chat,
            &id("stolen4"),
            Role::User,
            "x",
            Some(3)
        )
        .await,
        Err(chats::ChatStoreError::NotFound)
    ));
}

/// Four chats of `user`, each started with a message of ids `{prefix}0..3`.
async fn four_chats(app: &TestApp, user: &str, prefix: &str) -> Vec<ChatId> {
    let mut mine = Vec::new();
    for n in 0..4 {
        let chat = chats::start_chat(
            &app.db,
            user,
            "Mine",
            "Hello!",
            &id(&format!("{prefix}{n}")),
            "m0",
        )
        .await
        .expect("chat");
        mine.push(ChatId::parse(&chat.id).expect("id"));
    }
    mine
}

/// The appends of a batch that go together ([`chats::APPEND_ALL`]) are checked each against its
/// own chat's revision: one that expected a revision its chat has left is answered "moved" and
/// writes nothing, while the others of the batch are written; a retry of a landed id is answered
/// as there before its revision is looked at.
#[tokio::test]
async fn appends_of_one_batch_are_each_refused_for_their_own_chats_revision() {
    let app = spawn_app().await;
    let (_, user) = member(&app, "revision-batch@example.com").await;
    let mine = four_chats(&app, &user, "begin").await;
    // Chats 1 and 3 have moved on by one message.
    for (chat, message) in [(&mine[1], "moved1"), (&mine[3], "landed3")] {
        chats::append_message_as(
            &app.db,
            &user,
            chat,
            &id(message),
            Role::User,
            "m1",
            Some(0),
        )
        .await
        .expect("stored");
    }
    let append = |chat: &ChatId, message: &str, expected: Option<u64>| {
        Statement::AppendChatMessage(Box::new(chats::AppendVars::new(
            &user,
            chat,
            &id(message),
            Role::Assistant,
            "a reply",
            expected,
        )))
    };
    let answer = |n: i64| Ok(Outcome::Loaded(Some(n.into_value())));
    let outcomes = commit_together(
        &app.db,
        vec![
            append(&mine[0], "reply0", Some(0)),
            append(&mine[1], "reply1", Some(0)),
            append(&mine[2], "reply2", None),
            append(&mine[3], "landed3", Some(0)),
        ],
    )
    .await;
    assert_eq!(
        outcomes,
        [
            answer(0),
            answer(chats::MOVED),
            answer(0),
            answer(chats::ALREADY_THERE)
        ]
    );
    let count = |chat: &ChatId| {
        let (db, user, chat) = (app.db.clone(), user.clone(), chat.clone());
        async move {
            chats::chat_with_messages(&db, &user, &chat)
                .await
                .expect("read")
                .expect("found")
                .1
                .len()
        }
    };
    assert_eq!(count(&mine[0]).await, 3);
    assert_eq!(count(&mine[1]).await, 3, "only the message it moved on by");
    assert_eq!(count(&mine[2]).await, 3);
    assert_eq!(count(&mine[3]).await, 3, "the retry wrote nothing");
    let revisions = [
        revision_of(&app, &mine[0]).await,
        revision_of(&app, &mine[1]).await,
        revision_of(&app, &mine[2]).await,
        revision_of(&app, &mine[3]).await,
    ];
    assert_eq!(revisions, [1, 1, 1, 1]);
}

#[tokio::test]
async fn chosen_shortcuts_are_saved_to_the_account() {
    let app = spawn_app().await;
    let cookie = sign_up(&app, "shortcuts@example.com", "correct horse battery").await;
    assert_eq!(me(&app, &cookie).await["user"]["shortcuts"], json!([]));
    let put = |body: Value| {
        app.client
            .put(app.url("/api/account/shortcuts"))
            .header("cookie", cookie.clone())
            .json(&body)
            .send()
    };
    let saved: Value = put(json!({ "shortcuts": ["Gmail", "YouTube", "Gmail"] }))
        .await
        .expect("request")
        .json()
        .await
        .expect("json");
    assert_eq!(saved["shortcuts"], json!(["Gmail", "YouTube"]));
    assert_eq!(
        me(&app, &cookie).await["user"]["shortcuts"],
        json!(["Gmail", "YouTube"])
    );
    let unknown = put(json!({ "shortcuts": ["Evil"] }))
        .await
        .expect("request");
    assert_eq!(unknown.status(), 400);
    let visitor = app
        .client
        .put(app.url("/api/account/shortcuts"))
        .json(&json!({ "shortcuts": [] }))
        .send()
        .await
        .expect("request");
    assert_eq!(visitor.status(), 401);
}

#[tokio::test]
async fn another_members_task_cannot_be_asked_about() {
    let app = spawn_app().await;
    let (owner_cookie, _) = member(&app, "task-owner@example.com").await;
    let (other_cookie, _) = member(&app, "task-other@example.com").await;
    let created: Value = crate::helpers::post_with_cookie(
        &app,
        "/api/tasks",
        &owner_cookie,
        &json!({ "name": "My private task", "items": ["Bank login"] }),
    )
    .await
    .json()
    .await
    .expect("json");
    let task_id = created["task"]["id"].as_str().expect("task id").to_owned();
    let (mut socket, _) = MemberSocket::open(&app, Some(&other_cookie), json!({})).await;
    let refused = socket.call("task:help", json!({ "taskId": task_id })).await;
    assert_eq!(refused["code"], "not_found");
    assert_eq!(refused["error"], "Task not found.");
    let theirs: Value = get_with_cookie(&app, "/api/chats", &other_cookie)
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(theirs["chats"], json!([]), "no chat was made");
}

/// A one-time sign-in token of `purpose` for the account: its secret.
async fn sign_in_token(app: &TestApp, user_id: &str, email: &str, purpose: &str) -> String {
    let secret = helpnow::auth::token::new_secret();
    helpnow::store::billing::create_sign_in_token(
        &app.db,
        user_id,
        email,
        "cs_test_token",
        helpnow::auth::token::hash_secret(&secret),
        purpose,
        chrono::Utc::now() + chrono::Duration::hours(1),
    )
    .await
    .expect("token stored");
    secret
}

#[tokio::test]
async fn a_one_time_sign_in_token_opens_the_chat_once() {
    let app = spawn_app().await;
    let (_, user_id) = member(&app, "token@example.com").await;
    let secret = sign_in_token(&app, &user_id, "token@example.com", "checkout").await;
    let (_, first) = MemberSocket::open(&app, None, json!({ "token": secret })).await;
    assert_eq!(first["joined"], true, "{first}");
    let (_, again) = MemberSocket::open(&app, None, json!({ "token": secret })).await;
    assert_eq!(again["joined"], false);
    assert_eq!(again["data"]["data"]["code"], "sign_in_required");
}

#[tokio::test]
async fn a_mailed_link_that_takes_the_account_over_opens_no_chat_before_a_new_password() {
    let app = spawn_app().await;
    // A password set before the address was proved: the mailed link takes it away.
    let (cookie, user_id) = member(&app, "mailed@example.com").await;
    let secret = sign_in_token(&app, &user_id, "mailed@example.com", "mail").await;
    let (_, joined) = MemberSocket::open(&app, None, json!({ "token": secret })).await;
    assert_eq!(joined["joined"], false, "{joined}");
    assert_eq!(joined["data"]["data"]["code"], "choose_password");
    let (_, before) = MemberSocket::open(&app, Some(&cookie), json!({})).await;
    assert_eq!(
        before["data"]["data"]["code"], "sign_in_required",
        "the session from before the proof ended: {before}"
    );
}

#[tokio::test]
async fn signing_out_closes_that_sessions_chat_sockets() {
    let app = spawn_app().await;
    let (cookie, _) = member(&app, "leaving@example.com").await;
    let (mut socket, joined) = MemberSocket::open(&app, Some(&cookie), json!({})).await;
    assert_eq!(joined["joined"], true);
    socket.event("chat:ready").await;
    let response =
        crate::helpers::post_with_cookie(&app, "/api/auth/logout", &cookie, &json!({})).await;
    assert_eq!(response.status(), 204);
    let closed = socket
        .take(|packet| packet == format!("41{NAMESPACE},"))
        .await;
    assert_eq!(closed, format!("41{NAMESPACE},"));
}

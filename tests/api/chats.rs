//! The members' saved conversations: written through the store as the member chat actor writes
//! them, listed, read and deleted over HTTP; order by last activity; the spec's title and preview
//! cuts; owner isolation; visitors; deleting a chat deletes its messages.

use std::sync::atomic::{AtomicUsize, Ordering};

use helpnow::store::chats::{self, ChatId, ChatStoreError, MessageId, Role};
use helpnow_actors::rules::chat::{GREETING, chat_title, greeting};
use serde_json::Value;

use crate::auth::{error_of, sign_up};
use crate::helpers::{TestApp, get_with_cookie, spawn_app};

async fn user_id(app: &TestApp, cookie: &str) -> String {
    crate::auth::me(app, cookie).await["user"]["id"]
        .as_str()
        .expect("user id")
        .to_owned()
}

async fn list(app: &TestApp, cookie: &str) -> Vec<Value> {
    let response = get_with_cookie(app, "/api/chats", cookie).await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.expect("json");
    body["chats"].as_array().expect("a chat list").clone()
}

async fn get_chat(app: &TestApp, cookie: &str, chat_id: &str) -> reqwest::Response {
    get_with_cookie(app, &format!("/api/chats/{chat_id}"), cookie).await
}

async fn chat_json(app: &TestApp, cookie: &str, chat_id: &str) -> Value {
    let response = get_chat(app, cookie, chat_id).await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.expect("json");
    body["chat"].clone()
}

async fn delete_chat(app: &TestApp, cookie: &str, chat_id: &str) -> reqwest::Response {
    app.client
        .delete(app.url(&format!("/api/chats/{chat_id}")))
        .header("cookie", cookie)
        .send()
        .await
        .expect("request reaches the server")
}

/// A message id no other message of the test run has (the actor names every message it stores).
fn fresh_message_id() -> MessageId {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    MessageId::parse(&format!("m{}", NEXT.fetch_add(1, Ordering::Relaxed))).expect("an id")
}

/// Appends as the member chat actor does, then reads the stored message back.
async fn append(
    app: &TestApp,
    user: &str,
    chat_id: &ChatId,
    role: Role,
    content: &str,
) -> Result<chats::Message, ChatStoreError> {
    let id = fresh_message_id();
    chats::append_message_as(&app.db, user, chat_id, &id, role, content, None).await?;
    let (_, messages) = chats::chat_with_messages(&app.db, user, chat_id)
        .await?
        .ok_or(ChatStoreError::NotFound)?;
    messages
        .into_iter()
        .find(|message| MessageId::parse(&message.id).as_ref() == Some(&id))
        .ok_or(ChatStoreError::NotFound)
}

/// A chat as the member chat actor makes it: the greeting and the first message naming it, then
/// the assistant's reply.
async fn start_chat(app: &TestApp, user: &str, first: &str, reply: &str) -> ChatId {
    let chat = chats::start_chat(
        &app.db,
        user,
        &chat_title(first),
        GREETING,
        &fresh_message_id(),
        first,
    )
    .await
    .expect("chat started");
    let id = ChatId::parse(&chat.id).expect("a chat id");
    append(app, user, &id, Role::Assistant, reply)
        .await
        .expect("assistant message");
    id
}

async fn count_messages(app: &TestApp) -> i64 {
    let mut response = app
        .db
        .query("RETURN count(SELECT id FROM message)")
        .await
        .expect("query");
    let count: Option<i64> = response.take(0).expect("count");
    count.unwrap_or(0)
}

fn str_of<'a>(value: &'a Value, field: &str) -> &'a str {
    value[field].as_str().expect(field)
}

fn is_iso(timestamp: &str) -> bool {
    chrono::DateTime::parse_from_rfc3339(timestamp).is_ok() && timestamp.ends_with('Z')
}

#[tokio::test]
async fn a_member_lists_reads_and_deletes_saved_chats() {
    let app = spawn_app().await;
    let cookie = sign_up(&app, "ann@example.com", "secret1").await;
    let ann = user_id(&app, &cookie).await;
    assert!(list(&app, &cookie).await.is_empty());

    // A chat with a blank title is titled 'New Conversation'; it starts with the greeting.
    let fresh = chats::start_chat(&app.db, &ann, "  ", GREETING, &fresh_message_id(), "Hi")
        .await
        .expect("chat started");
    assert_eq!(fresh.title, "New Conversation");
    let chat = chat_json(&app, &cookie, &fresh.id).await;
    assert_eq!(chat["id"], fresh.id.as_str());
    assert_eq!(chat["title"], "New Conversation");
    assert!(is_iso(str_of(&chat, "timestamp")), "{chat}");
    let messages = chat["messages"].as_array().expect("messages");
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[0]["role"], "assistant");
    assert_eq!(messages[0]["content"], "Hello! How can I help you today?");
    assert_eq!(messages[1]["role"], "user");
    assert_eq!(messages[1]["content"], "Hi");

    let printer = start_chat(
        &app,
        &ann,
        "Printer offline",
        "Let's check the cable first.",
    )
    .await;
    let chat = chat_json(&app, &cookie, printer.as_str()).await;
    assert_eq!(chat["title"], "Printer offline");
    let messages = chat["messages"].as_array().expect("messages");
    let shape: Vec<(&str, &str)> = messages
        .iter()
        .map(|m| (str_of(m, "role"), str_of(m, "content")))
        .collect();
    assert_eq!(
        shape,
        [
            ("assistant", GREETING),
            ("user", "Printer offline"),
            ("assistant", "Let's check the cable first."),
        ],
        "oldest first"
    );
    assert!(messages.iter().all(|m| is_iso(str_of(m, "timestamp"))));
    assert!(messages.iter().all(|m| !str_of(m, "id").is_empty()));

    let listed = list(&app, &cookie).await;
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[0]["id"], printer.as_str());
    assert_eq!(listed[0]["title"], "Printer offline");
    assert_eq!(listed[0]["listTitle"], "Printer offline");
    assert_eq!(listed[0]["preview"], "Let's check the cable first.");
    assert!(is_iso(str_of(&listed[0], "timestamp")));
    assert_eq!(listed[1]["id"], fresh.id.as_str());
    assert_eq!(listed[1]["preview"], "Hi");

    let before = count_messages(&app).await;
    assert_eq!(before, 5);
    assert_eq!(
        delete_chat(&app, &cookie, printer.as_str()).await.status(),
        204
    );
    assert_eq!(count_messages(&app).await, 2, "its messages went with it");
    let listed = list(&app, &cookie).await;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["id"], fresh.id.as_str());
    for response in [
        get_chat(&app, &cookie, printer.as_str()).await,
        delete_chat(&app, &cookie, printer.as_str()).await,
    ] {
        let (status, body) = error_of(response).await;
        assert_eq!((status, body["error"].as_str()), (404, Some("not_found")));
        assert_eq!(body["message"], "Conversation not found.");
    }
}

#[tokio::test]
async fn the_most_recently_active_chat_comes_first() {
    let app = spawn_app().await;
    let cookie = sign_up(&app, "ann@example.com", "secret1").await;
    let ann = user_id(&app, &cookie).await;
    let first = start_chat(&app, &ann, "Wi-Fi drops", "Restart the router.").await;
    let second = start_chat(&app, &ann, "Email stuck", "Check the outbox.").await;
    let ids = |chats: Vec<Value>| -> Vec<String> {
        chats.iter().map(|c| str_of(c, "id").to_owned()).collect()
    };
    assert_eq!(
        ids(list(&app, &cookie).await),
        [second.as_str(), first.as_str()]
    );

    append(&app, &ann, &first, Role::User, "It dropped again")
        .await
        .expect("appended");
    let listed = list(&app, &cookie).await;
    assert_eq!(ids(listed.clone()), [first.as_str(), second.as_str()]);
    assert_eq!(listed[0]["preview"], "It dropped again");
}

#[tokio::test]
async fn titles_and_previews_are_cut_by_the_spec() {
    let app = spawn_app().await;
    let cookie = sign_up(&app, "ann@example.com", "secret1").await;
    let ann = user_id(&app, &cookie).await;

    let first = "My computer keeps freezing when I open Chrome!";
    assert_eq!(first.chars().count(), 46);
    let first = &first[..45];
    let last = "x".repeat(40) + " " + &"y".repeat(59);
    assert_eq!(last.chars().count(), 100);
    let id = start_chat(&app, &ann, first, &last).await;

    let chat = chat_json(&app, &cookie, id.as_str()).await;
    let title = str_of(&chat, "title");
    assert_eq!(title, "My computer keeps freezing whe...");
    assert_eq!(title.chars().count(), 33);

    let listed = list(&app, &cookie).await;
    let list_title = str_of(&listed[0], "listTitle");
    assert_eq!(list_title, "My computer keeps freezing...");
    assert!(list_title.chars().count() <= 30);
    assert_eq!(listed[0]["title"], title);
    let preview = str_of(&listed[0], "preview");
    assert_eq!(preview.chars().count(), 60);
    assert_eq!(preview, format!("{} {}...", "x".repeat(40), "y".repeat(16)));
    // The message itself is stored whole.
    assert_eq!(chat["messages"][2]["content"], last.as_str());

    // A funnel-adapted greeting is stored as given; over-long content is cut at 20,000, in a
    // chat's first message and in later ones.
    let adapted = greeting(Some("Outlook keeps asking for the password"));
    let huge = "é".repeat(20_010);
    let chat = chats::start_chat(&app.db, &ann, "", &adapted, &fresh_message_id(), &huge)
        .await
        .expect("started");
    let chat_id = ChatId::parse(&chat.id).expect("id");
    let stored = append(&app, &ann, &chat_id, Role::User, &huge)
        .await
        .expect("appended");
    assert_eq!(stored.content.chars().count(), 20_000);
    let chat = chat_json(&app, &cookie, chat_id.as_str()).await;
    assert_eq!(chat["messages"][0]["content"], adapted.as_str());
    for message in &chat["messages"].as_array().expect("messages")[1..] {
        assert_eq!(str_of(message, "content").chars().count(), 20_000);
    }
}

#[tokio::test]
async fn another_members_chat_is_not_found_on_every_endpoint() {
    let app = spawn_app().await;
    let ann_cookie = sign_up(&app, "ann@example.com", "secret1").await;
    let bob_cookie = sign_up(&app, "bob@example.com", "secret2").await;
    let ann = user_id(&app, &ann_cookie).await;
    let bob = user_id(&app, &bob_cookie).await;
    let id = start_chat(&app, &ann, "Secret printer", "Secret answer").await;
    let before = chat_json(&app, &ann_cookie, id.as_str()).await;
    let listed_before = list(&app, &ann_cookie).await;

    assert!(
        list(&app, &bob_cookie).await.is_empty(),
        "Bob sees none of Ann's"
    );
    for response in [
        get_chat(&app, &bob_cookie, id.as_str()).await,
        delete_chat(&app, &bob_cookie, id.as_str()).await,
    ] {
        let (status, body) = error_of(response).await;
        assert_eq!(status, 404);
        assert_eq!(body["error"], "not_found");
        assert_eq!(body["message"], "Conversation not found.");
        assert!(!body.to_string().contains("Secret"), "{body}");
    }

    // The store refuses Bob's writes to Ann's chat, and writes nothing.
    let messages = count_messages(&app).await;
    let refused = append(&app, &bob, &id, Role::User, "Bob was here").await;
    assert!(
        matches!(refused, Err(ChatStoreError::NotFound)),
        "{refused:?}"
    );
    assert!(
        !chats::delete_chat(&app.db, &bob, &id)
            .await
            .expect("delete")
    );
    assert!(
        chats::chat_with_messages(&app.db, &bob, &id)
            .await
            .expect("read")
            .is_none()
    );
    assert_eq!(count_messages(&app).await, messages);

    assert_eq!(chat_json(&app, &ann_cookie, id.as_str()).await, before);
    assert_eq!(list(&app, &ann_cookie).await, listed_before);

    // Malformed and unknown ids are not found either, for the owner too.
    for bad in ["nosuchchat123", "chat:abc", "a%20b", "x'y", &"a".repeat(65)] {
        for response in [
            get_chat(&app, &ann_cookie, bad).await,
            delete_chat(&app, &ann_cookie, bad).await,
        ] {
            let (status, body) = error_of(response).await;
            assert_eq!(
                (status, body["error"].as_str()),
                (404, Some("not_found")),
                "{bad}"
            );
        }
    }
    let unknown = ChatId::parse("nosuchchat123").expect("id-shaped");
    let refused = append(&app, &ann, &unknown, Role::User, "Hi").await;
    assert!(matches!(refused, Err(ChatStoreError::NotFound)));
    assert_eq!(count_messages(&app).await, messages);
}

#[tokio::test]
async fn visitors_are_asked_to_sign_in() {
    let app = spawn_app().await;
    let cookie = sign_up(&app, "ann@example.com", "secret1").await;
    let ann = user_id(&app, &cookie).await;
    let id = start_chat(&app, &ann, "Printer offline", "Check the cable.").await;

    let responses = [
        app.get("/api/chats").await,
        app.get(&format!("/api/chats/{}", id.as_str())).await,
        app.client
            .delete(app.url(&format!("/api/chats/{}", id.as_str())))
            .send()
            .await
            .expect("request reaches the server"),
        get_with_cookie(&app, "/api/chats", "helpnow_session=forged").await,
        delete_chat(&app, "helpnow_session=forged", id.as_str()).await,
    ];
    for response in responses {
        assert_eq!(response.status(), 401);
    }
    assert_eq!(list(&app, &cookie).await.len(), 1);
    assert_eq!(count_messages(&app).await, 3);
}

#[tokio::test]
async fn twenty_concurrent_appends_to_one_chat_all_land() {
    let app = spawn_app().await;
    let cookie = sign_up(&app, "ann@example.com", "secret1").await;
    let ann = user_id(&app, &cookie).await;
    let id = start_chat(&app, &ann, "Busy", "Go on.").await;
    let texts: Vec<String> = (1..=20).map(|n| format!("Message {n}")).collect();
    let appends = texts
        .iter()
        .map(|text| append(&app, &ann, &id, Role::User, text));
    for result in futures_util::future::join_all(appends).await {
        result.expect("every append lands");
    }
    let (stored, messages) = chats::chat_with_messages(&app.db, &ann, &id)
        .await
        .expect("read")
        .expect("found");
    assert_eq!(messages.len(), 23);
    let opening: Vec<&str> = messages[..3].iter().map(|m| m.content.as_str()).collect();
    assert_eq!(opening, [GREETING, "Busy", "Go on."]);
    assert!(stored.updated_at >= messages[22].created_at);
    let mut contents: Vec<&str> = messages[3..].iter().map(|m| m.content.as_str()).collect();
    contents.sort_unstable();
    let mut expected: Vec<&str> = texts.iter().map(String::as_str).collect();
    expected.sort_unstable();
    assert_eq!(contents, expected);
}

//! The funnels over HTTP and on the real store: the visitor cookie, the conversation store's
//! versions, the help funnel (against the AI mock), the checkout's one-time link, and the funnel
//! record travelling from the visit into the account. The chat protocol itself is tested with
//! the official socket.io-client (web/conformance/funnel.test.mjs).

use chrono::{TimeDelta, Utc};
use helpnow::auth::token;
use helpnow::store::analytics::NewAnalyticsEvent;
use helpnow::store::batch::{Batcher, Outcome, Statement, commit_together};
use helpnow::store::funnels::{
    help_record, load_conversation, load_statement, save_conversation, save_statement,
    take_over_conversation, visit,
};
use helpnow_actors::funnel::ports::ConversationChange::{CheckoutChanged, MessageAdded, Started};
use helpnow_actors::funnel::{Attribution, Conversation, ConversationKey, FunnelMessage, Speaker};
use helpnow_actors::ports::StoreError;
use helpnow_actors::rules::FunnelKind;
use helpnow_actors::rules::summary::DEFAULT_INTRO;
use serde_json::{Value, json};

use crate::ai_mock::MockAi;
use crate::helpers::{
    TestApp, cookie_named, get_with_cookie, post_with_cookie, spawn_app, spawn_app_with,
};

/// A browser's first page view: the visitor cookie it gets.
async fn visitor_cookie(app: &TestApp) -> String {
    let response = app.get("/get-help").await;
    assert_eq!(response.status(), 200);
    cookie_named(&response, "vid").expect("a visitor cookie")
}

/// A conversation after its first reply: the greeting, a junk message, the follow-up.
fn conversation(visitor: &str, version: u64) -> Conversation {
    let now = Utc::now();
    let key = ConversationKey {
        visitor_id: visitor.to_owned(),
        funnel: FunnelKind::Chat,
    };
    let message = |role, text: &str, junk, source: Option<&str>| FunnelMessage {
        role,
        text: text.into(),
        is_final: false,
        junk,
        source: source.map(str::to_owned),
        at: now,
    };
    Conversation {
        id: key.conversation_id(),
        key,
        version,
        epoch: 1,
        flow: helpnow_actors::rules::flows::FlowRef::published("email", 1),
        arm: None,
        headline: "Need Help? Get Instant Expert Assistance Now!".to_owned(),
        attribution: Attribution {
            keyword: Some("outlook email".into()),
            ..Attribution::default()
        },
        stage: 1,
        junk_count: 1,
        is_final: false,
        first_message_tracked: true,
        messages: vec![
            message(Speaker::Assistant, "Hi, I'm Emma.", false, Some("greeting")),
            message(Speaker::User, "??", true, None),
            message(Speaker::Assistant, "Tell me more?", false, Some("script")),
        ],
        checkout_deadline: None,
        checkout_started_at: None,
        created_at: now,
        updated_at: now,
    }
}

/// `conversation` with one more message, as the actor adds it (and what it changes).
fn with_message(conversation: &Conversation, role: Speaker, text: &str) -> Conversation {
    let mut next = conversation.clone();
    let now = Utc::now();
    let is_final = role == Speaker::Assistant && next.stage == 2;
    next.messages.push(FunnelMessage {
        role,
        text: text.into(),
        is_final,
        junk: false,
        source: (role == Speaker::Assistant).then(|| "script".into()),
        at: now,
    });
    if role == Speaker::Assistant {
        next.stage = (next.stage + 1).min(2);
    }
    if is_final {
        next.is_final = true;
        next.checkout_deadline = Some(now + TimeDelta::seconds(15));
    }
    next.updated_at = now;
    next
}

async fn load(app: &TestApp, conversation: &Conversation) -> Conversation {
    load_conversation(&app.db, &conversation.key)
        .await
        .expect("loads")
        .expect("found")
}

#[tokio::test]
async fn a_new_browser_gets_one_http_only_visitor_cookie() {
    let app = spawn_app().await;
    let response = app.get("/chat-help").await;
    let header = response
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with("vid="))
        .expect("a visitor cookie")
        .to_owned();
    assert!(header.contains("HttpOnly"), "{header}");
    assert!(header.contains("SameSite=Lax"), "{header}");
    let cookie = header.split(';').next().unwrap_or_default().to_owned();
    let again = get_with_cookie(&app, "/Chat-Help-2", &cookie).await;
    assert_eq!(
        cookie_named(&again, "vid"),
        None,
        "a known visitor keeps theirs"
    );
}

#[tokio::test]
async fn a_conversation_is_stored_as_its_record_and_messages_and_a_stale_write_loses() {
    let app = spawn_app().await;
    let visitor = "visitor-store-0000000001";
    let first = conversation(visitor, 1);
    save_conversation(&app.db, &first, Started)
        .await
        .expect("created");
    assert_eq!(load(&app, &first).await, first);

    // Another process starting the same visitor's conversation loses (the same id).
    assert_eq!(
        save_conversation(&app.db, &conversation(visitor, 1), Started).await,
        Err(StoreError::Conflict)
    );

    // A message lands in its place once: a second writer of that place loses.
    let second = with_message(&first, Speaker::User, "my email is broken");
    save_conversation(&app.db, &second, MessageAdded)
        .await
        .expect("the visitor's message");
    let rival = with_message(&first, Speaker::User, "something else");
    assert_eq!(
        save_conversation(&app.db, &rival, MessageAdded).await,
        Err(StoreError::Conflict)
    );
    let reply = with_message(&second, Speaker::Assistant, "What did you try?");
    save_conversation(&app.db, &reply, MessageAdded)
        .await
        .expect("the reply");
    let loaded = load(&app, &first).await;
    assert_eq!(
        loaded, reply,
        "the messages give back the stage and the rest"
    );
    assert_eq!((loaded.stage, loaded.messages.len()), (2, 5));

    // The auto-checkout's changes land only on the version they were made from.
    let mut opened = reply.clone();
    opened.version = 2;
    opened.checkout_started_at = Some(Utc::now());
    save_conversation(&app.db, &opened, CheckoutChanged)
        .await
        .expect("version 2");
    let mut stale = reply.clone();
    stale.version = 2;
    stale.checkout_deadline = Some(Utc::now());
    assert_eq!(
        save_conversation(&app.db, &stale, CheckoutChanged).await,
        Err(StoreError::Conflict)
    );
    assert_eq!(load(&app, &first).await, opened);

    let other_funnel = ConversationKey {
        visitor_id: visitor.to_owned(),
        funnel: FunnelKind::Refundable,
    };
    assert_eq!(load_conversation(&app.db, &other_funnel).await, Ok(None));
}

#[tokio::test]
async fn the_final_message_sets_the_auto_checkout_until_it_moves_or_opens() {
    let app = spawn_app().await;
    let first = conversation("visitor-final-0000000001", 1);
    save_conversation(&app.db, &first, Started)
        .await
        .expect("created");
    let asked = with_message(&first, Speaker::User, "my email is broken");
    let second = with_message(&asked, Speaker::Assistant, "What did you try?");
    let answered = with_message(&second, Speaker::User, "a restart");
    let last = with_message(&answered, Speaker::Assistant, "Click 'Get started >>'");
    for step in [&asked, &second, &answered, &last] {
        save_conversation(&app.db, step, MessageAdded)
            .await
            .expect("a message");
    }
    let loaded = load(&app, &first).await;
    assert!(loaded.is_final);
    assert_eq!(loaded.checkout_deadline, last.checkout_deadline);
    assert_eq!(loaded, last);

    // The visitor was away when it came: it moves; then a checkout opens: there is none.
    let mut moved = last.clone();
    moved.version = 2;
    moved.checkout_deadline = Some(Utc::now() + TimeDelta::seconds(40));
    save_conversation(&app.db, &moved, CheckoutChanged)
        .await
        .expect("moved");
    assert_eq!(load(&app, &first).await, moved);
    let mut opened = moved.clone();
    opened.version = 3;
    opened.checkout_deadline = None;
    opened.checkout_started_at = Some(Utc::now());
    save_conversation(&app.db, &opened, CheckoutChanged)
        .await
        .expect("opened");
    assert_eq!(load(&app, &first).await.checkout_deadline, None);
}

#[tokio::test]
async fn a_conversation_started_over_keeps_only_its_new_messages() {
    let app = spawn_app().await;
    let first = conversation("visitor-again-0000000001", 1);
    save_conversation(&app.db, &first, Started)
        .await
        .expect("created");
    let mut fresh = conversation("visitor-again-0000000001", 2);
    fresh.messages.truncate(1);
    fresh.stage = 0;
    fresh.junk_count = 0;
    fresh.first_message_tracked = false;
    // This visit came without an ad's fields: the record keeps none, and not the first's.
    fresh.attribution = Attribution::default();
    // Started over in a batch with other writes: all of them land.
    let other = conversation_for("visitor-again-0000000002");
    let outcomes = commit_together(&app.db, vec![start_of(&fresh), start_of(&other)]).await;
    assert_eq!(outcomes, [Ok(Outcome::Done), Ok(Outcome::Done)]);
    assert_eq!(load(&app, &first).await, fresh);
    assert_eq!(load(&app, &other).await, other);
    let mut stored: Vec<Option<serde_json::Value>> = app
        .db
        .query("SELECT VALUE attribution FROM funnel_conversation")
        .await
        .expect("query")
        .take(0)
        .expect("attributions");
    stored.sort_by_key(Option::is_some);
    assert_eq!(
        stored,
        [
            None,
            Some(serde_json::json!({ "keyword": "outlook email" }))
        ],
        "only the fields a visit brought"
    );
    // A second process starting it over from the same version loses.
    assert_eq!(
        save_conversation(&app.db, &fresh, Started).await,
        Err(StoreError::Conflict)
    );
    let count: Option<i64> = app
        .db
        .query("RETURN count(SELECT id FROM funnel_message)")
        .await
        .expect("query")
        .take(0)
        .expect("count");
    assert_eq!(
        count,
        Some(4),
        "the earlier messages are gone: one left, three of the other"
    );
}

#[tokio::test]
async fn the_help_funnel_asks_the_ai_for_a_summary_and_an_intro_and_keeps_the_record() {
    let ai = MockAi::start().await;
    ai.reply_with("\"Outlook keeps asking for the password\"");
    let app = spawn_app_with(|settings| settings.ai = ai.settings()).await;
    let vid = visitor_cookie(&app).await;

    let response = post_with_cookie(
        &app,
        "/api/funnels/help",
        &vid,
        &json!({"issue": "My outlook keeps asking me for my password", "keyword": "outlook", "campaignid": "42"}),
    )
    .await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.expect("json");
    assert_eq!(body["summary"], "Outlook keeps asking for the password");
    assert_eq!(body["intro"], "Outlook keeps asking for the password");
    // Debug tools are on in the test configuration: the overlay gets the two calls.
    let events = body["aiEvents"].as_array().expect("ai events");
    assert_eq!(events.len(), 2);
    assert!(events.iter().all(|e| e["outcome"] == "ok"), "{body}");

    let requests = ai.requests();
    assert_eq!(requests.len(), 2);
    let prompts: Vec<String> = requests
        .iter()
        .map(|r| {
            r.body["messages"][0]["content"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    assert!(
        prompts.iter().any(|p| p.contains("50 to 60 characters")),
        "{prompts:?}"
    );
    assert!(
        prompts.iter().all(|p| p.contains("Do not mention prices")),
        "{prompts:?}"
    );

    let visitor = vid.trim_start_matches("vid=");
    let (_, record) = help_record(&app.db, visitor)
        .await
        .expect("reads")
        .expect("stored");
    assert_eq!(record["funnel"], "help_funnel");
    assert_eq!(record["userIssue"], "Outlook keeps asking for the password");
    assert_eq!(
        record["rawUserInput"],
        "My outlook keeps asking me for my password"
    );
    assert_eq!(record["keyword"], "outlook");
    assert_eq!(
        record["headline"],
        "Need Outlook Help? Get Instant Expert Help Now!"
    );

    let mut count = app
        .db
        .query("RETURN count(SELECT VALUE id FROM analytics_event WHERE name = 'issue_submission')")
        .await
        .expect("query");
    let submissions: Option<u64> = count.take(0).expect("count");
    assert_eq!(submissions, Some(1));
}

#[tokio::test]
async fn the_help_funnel_falls_back_when_the_ai_fails_and_refuses_an_empty_issue() {
    let ai = MockAi::start().await;
    ai.fail_with(
        500,
        json!({"error": {"message": "boom", "type": "server_error"}}),
    );
    let app = spawn_app_with(|settings| settings.ai = ai.settings()).await;

    let response = app
        .post_json(
            "/api/funnels/help",
            &json!({"issue": "My computer keeps freezing when I open Chrome"}),
        )
        .await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.expect("json");
    // The failing service is replaced by the offline provider's summary of the visitor's words;
    // the intro has no offline version, so the default text shows.
    assert_eq!(
        body["summary"],
        "My computer keeps freezing when I open Chrome"
    );
    assert_eq!(body["intro"], DEFAULT_INTRO);

    let short = app
        .post_json("/api/funnels/help", &json!({"issue": " wifi "}))
        .await;
    let body: Value = short.json().await.expect("json");
    assert_eq!(
        body["summary"],
        Value::Null,
        "under 5 characters: no summary"
    );

    let empty = app
        .post_json("/api/funnels/help", &json!({"issue": "   "}))
        .await;
    assert_eq!(empty.status(), 400);
    let body: Value = empty.json().await.expect("json");
    assert_eq!(body["error"], "issue_required");
}

#[tokio::test]
async fn a_help_funnel_checkout_carries_the_issue_into_the_account() {
    let app = spawn_app().await;
    let vid = visitor_cookie(&app).await;
    let visitor = vid.trim_start_matches("vid=").to_owned();
    let help = post_with_cookie(
        &app,
        "/api/funnels/help",
        &vid,
        &json!({"issue": "My printer says it is offline", "keyword": "printer"}),
    )
    .await;
    assert_eq!(help.status(), 200);

    let started = post_with_cookie(
        &app,
        "/api/create-checkout.js",
        &vid,
        &json!({"source": "help_funnel", "keyword": "printer", "headline": "Need Printer Help? Get Instant Expert Help Now!"}),
    )
    .await;
    assert_eq!(started.status(), 200);
    let started: Value = started.json().await.expect("json");
    let session_id = started["sessionId"].as_str().expect("session id");
    let paid = app
        .post_json(
            &format!("/api/demo-checkout/{session_id}/complete"),
            &json!({"email": "printer@example.com", "cardNumber": "4242 4242 4242 4242"}),
        )
        .await;
    assert_eq!(paid.status(), 200);

    let mut response = app
        .db
        .query("SELECT VALUE funnel FROM user WHERE email = 'printer@example.com'")
        .await
        .expect("query");
    let funnels: Vec<Option<Value>> = response.take(0).expect("funnel");
    let funnel = funnels
        .into_iter()
        .next()
        .flatten()
        .expect("the account has the funnel record");
    assert_eq!(funnel["funnel"], "help_funnel");
    assert_eq!(funnel["rawUserInput"], "My printer says it is offline");
    assert_eq!(funnel["keyword"], "printer");

    // The visitor's conversation record now names the account.
    let mut response = app
        .db
        .query(
            "SELECT VALUE user.email FROM funnel_conversation \
             WHERE visitor = type::record('visitor', $v) AND funnel = 'help'",
        )
        .bind(("v", visitor))
        .await
        .expect("query");
    let owners: Vec<Option<String>> = response.take(0).expect("owner");
    assert_eq!(owners, [Some("printer@example.com".to_owned())]);
}

#[tokio::test]
async fn a_checkout_link_redirects_and_marks_the_starting_browser_once() {
    let app = spawn_app().await;
    let secret = token::new_secret();
    let stale = token::new_secret();
    app.db
        .query(
            "CREATE checkout_session CONTENT { provider: 'demo', provider_session_id: 'demo_cs_link', \
               tracking_id: 'hn_link', source: 'chat_funnel', refundable_fee: true, \
               success_url: '/checkout-success', cancel_url: '/?canceled=true', \
               url: '/demo-checkout/demo_cs_link', handoff_hash: $hash, handoff_used: false }; \
             CREATE checkout_session CONTENT { provider: 'demo', provider_session_id: 'demo_cs_old', \
               tracking_id: 'hn_old', source: 'chat_funnel', refundable_fee: true, \
               success_url: '/checkout-success', cancel_url: '/?canceled=true', \
               url: '/demo-checkout/demo_cs_old', handoff_hash: $stale, handoff_used: false, \
               created_at: time::now() - 2h };",
        )
        .bind(("hash", token::hash_secret(&secret)))
        .bind(("stale", token::hash_secret(&stale)))
        .await
        .expect("query")
        .check()
        .expect("checkouts");

    let first = app.get(&format!("/api/funnels/checkout/{secret}")).await;
    assert_eq!(first.status(), 303);
    assert_eq!(first.headers()["location"], "/demo-checkout/demo_cs_link");
    // The cookie holds a secret of its own (not the checkout's id, which the success URL shows),
    // whose hash the checkout keeps.
    let start = cookie_named(&first, "helpnow_checkout_start").expect("the start cookie");
    let start = start.trim_start_matches("helpnow_checkout_start=");
    assert!(
        token::looks_like_secret(start) && start != "hn_link",
        "{start}"
    );
    let mut kept = app
        .db
        .query("SELECT VALUE start_hash FROM checkout_session WHERE tracking_id = 'hn_link'")
        .await
        .expect("query");
    let kept: Vec<Option<String>> = kept.take(0).expect("hash");
    assert_eq!(kept, vec![Some(token::hash_secret(start))]);
    let again = app.get(&format!("/api/funnels/checkout/{secret}")).await;
    assert_eq!(again.status(), 303);
    assert_eq!(again.headers()["location"], "/demo-checkout/demo_cs_link");
    assert_eq!(cookie_named(&again, "helpnow_checkout_start"), None);

    for link in [stale, token::new_secret(), "not-a-secret".to_owned()] {
        let response = app.get(&format!("/api/funnels/checkout/{link}")).await;
        assert_eq!(response.status(), 303);
        assert_eq!(response.headers()["location"], "/?success=demo");
    }
}

// Group commit (src/store/batch.rs): the real-time paths' writes committed together.

fn conversation_for(visitor: &str) -> Conversation {
    conversation(visitor, 1)
}

fn start_of(conversation: &Conversation) -> Statement {
    save_statement(conversation, Started).expect("a write")
}

/// `conversation` as another process would start it: the same record with more greeting than
/// is stored, so a place of it is still free.
fn with_more_greeting(conversation: &Conversation) -> Conversation {
    with_message(
        &with_message(conversation, Speaker::Assistant, "hello"),
        Speaker::Assistant,
        "how can I help?",
    )
}

/// A visitor's `chatbot_first_message` event, as a call of a batch.
fn first_message_event(visitor: &str) -> Statement {
    Statement::Analytics(NewAnalyticsEvent {
        first_touch: None,
        name: "chatbot_first_message".into(),
        properties: json!({ "funnel": "chat" }),
        visitor: Some(visitor.into()),
        path: None,
        user: None,
    })
}

async fn stored_ids(app: &TestApp) -> Vec<String> {
    app.db
        .query("SELECT VALUE record::id(id) FROM funnel_conversation")
        .await
        .expect("query")
        .take(0)
        .expect("ids")
}

#[tokio::test]
async fn a_batch_commits_its_writes_together_and_answers_each_one() {
    let app = spawn_app().await;
    let conversations: Vec<Conversation> = (0..40)
        .map(|n| conversation_for(&format!("visitor-batch-{n:016}")))
        .collect();
    let mut writes: Vec<Statement> = conversations.iter().map(start_of).collect();
    writes.push(visit(
        &helpnow::domain::VisitorId::parse("visitor-batch-0000000000000000")
            .expect("a valid visitor id"),
        &Attribution::default(),
    ));
    writes.push(first_message_event("visitor-batch-0000000000000000"));
    let outcomes = commit_together(&app.db, writes).await;
    assert_eq!(outcomes.len(), 42);
    assert!(
        outcomes.iter().all(|o| *o == Ok(Outcome::Done)),
        "{outcomes:?}"
    );
    assert_eq!(stored_ids(&app).await.len(), 40);
    assert_eq!(load(&app, &conversations[7]).await, conversations[7]);

    // Loads ride along in a batch: each gets its own conversation, or none.
    let missing = conversation_for("visitor-batch-missing-00000001");
    let outcomes = commit_together(
        &app.db,
        vec![
            load_statement(&conversations[3].key),
            load_statement(&missing.key),
            start_of(&missing),
        ],
    )
    .await;
    assert!(
        matches!(&outcomes[0], Ok(Outcome::Loaded(Some(_)))),
        "{outcomes:?}"
    );
    assert_eq!(outcomes[1], Ok(Outcome::Loaded(None)));
    assert_eq!(outcomes[2], Ok(Outcome::Done));
    assert_eq!(
        helpnow::store::analytics::count_named(&app.db, "chatbot_first_message")
            .await
            .expect("count"),
        1
    );
}

#[tokio::test]
async fn a_failed_batch_fails_every_caller_in_it_and_stores_nothing() {
    let app = spawn_app().await;
    let mut writes: Vec<Statement> = (0..10)
        .map(|n| start_of(&conversation_for(&format!("visitor-fails-{n:016}"))))
        .collect();
    // An event whose properties are not an object breaks the table's schema.
    writes.insert(
        5,
        Statement::Analytics(NewAnalyticsEvent {
            first_touch: None,
            name: "broken".into(),
            properties: json!("not an object"),
            visitor: None,
            path: None,
            user: None,
        }),
    );
    let outcomes = commit_together(&app.db, writes).await;
    assert_eq!(outcomes.len(), 11);
    assert!(outcomes.iter().all(Result::is_err), "{outcomes:?}");
    assert!(
        stored_ids(&app).await.is_empty(),
        "no write of a failed batch is acknowledged or stored"
    );
}

#[tokio::test]
async fn a_conflict_in_a_batch_fails_only_its_own_write() {
    let app = spawn_app().await;
    let first = conversation_for("visitor-race-0000000000000000");
    save_conversation(&app.db, &first, Started)
        .await
        .expect("created");
    let asked = with_message(&first, Speaker::User, "my email is broken");
    save_conversation(&app.db, &asked, MessageAdded)
        .await
        .expect("a message");
    let mut opened = asked.clone();
    opened.version = 2;
    opened.checkout_started_at = Some(Utc::now());
    save_conversation(&app.db, &opened, CheckoutChanged)
        .await
        .expect("version 2");

    // Another process's start of the same conversation (with more greeting than is stored, so
    // a place of it is still free), a message in a place already taken, a stale checkout change
    // (from version 1 again), and fresh conversations with a message each, in one batch.
    let mut stale = asked.clone();
    stale.version = 2;
    let rival = with_more_greeting(&first);
    let mut writes = vec![
        start_of(&rival),
        save_statement(
            &with_message(&first, Speaker::User, "another"),
            MessageAdded,
        )
        .expect("a write"),
        save_statement(&stale, CheckoutChanged).expect("a write"),
    ];
    let fresh: Vec<Conversation> = (1..=5)
        .map(|n| conversation_for(&format!("visitor-race-{n:016}")))
        .collect();
    for conversation in &fresh {
        writes.push(start_of(conversation));
        writes.push(
            save_statement(
                &with_message(conversation, Speaker::User, "hello"),
                MessageAdded,
            )
            .expect("a write"),
        );
    }
    let outcomes = commit_together(&app.db, writes).await;
    assert_eq!(
        outcomes[..3],
        [
            Ok(Outcome::Conflict),
            Ok(Outcome::Conflict),
            Ok(Outcome::Conflict)
        ],
        "the rival start, the taken place and the stale change land nowhere: {outcomes:?}"
    );
    assert!(
        outcomes[3..].iter().all(|o| *o == Ok(Outcome::Done)),
        "the others land: {outcomes:?}"
    );
    assert_eq!(stored_ids(&app).await.len(), 6);
    assert_eq!(
        load(&app, &first).await,
        opened,
        "the losers changed nothing"
    );
    assert_eq!(load(&app, &fresh[2]).await.messages.len(), 4);
}

#[tokio::test]
async fn a_start_whose_record_is_there_is_refused_inside_a_batch_that_commits() {
    let app = spawn_app().await;
    let first = conversation_for("visitor-there-0000000000000000");
    save_conversation(&app.db, &first, Started)
        .await
        .expect("created");
    // A returning visitor's join tries its start first: with more greeting than is stored, so
    // a place of it is free. Beside it in the batch: new conversations and an event,
    // none of which fails the batch.
    let rival = with_more_greeting(&first);
    let fresh: Vec<Conversation> = (1..=2)
        .map(|n| conversation_for(&format!("visitor-there-{n:016}")))
        .collect();
    let writes = vec![
        start_of(&fresh[0]),
        start_of(&rival),
        start_of(&fresh[1]),
        first_message_event("visitor-there-0000000000000001"),
    ];
    let outcomes = commit_together(&app.db, writes).await;
    assert_eq!(
        outcomes,
        [
            Ok(Outcome::Done),
            Ok(Outcome::Conflict),
            Ok(Outcome::Done),
            Ok(Outcome::Done)
        ]
    );
    assert_eq!(
        load(&app, &first).await,
        first,
        "nothing of the rival was written"
    );
    assert_eq!(load(&app, &fresh[1]).await, fresh[1]);
    assert_eq!(stored_ids(&app).await.len(), 3);
    assert_eq!(
        helpnow::store::analytics::count_named(&app.db, "chatbot_first_message")
            .await
            .expect("count"),
        1,
        "the event beside them is stored once"
    );
}

#[tokio::test]
async fn an_update_keeps_what_other_writers_put_on_the_row_and_clears_what_it_clears() {
    let app = spawn_app().await;
    let mut first = conversation("visitor-merge-000000000001", 1);
    first.checkout_deadline = Some(Utc::now() + TimeDelta::seconds(15));
    save_conversation(&app.db, &first, Started)
        .await
        .expect("created");
    app.db
        .query("UPDATE type::record('funnel_conversation', $id) SET user = type::record('user', 'someone')")
        .bind(("id", first.id.clone()))
        .await
        .expect("query")
        .check()
        .expect("set");
    let mut next = first.clone();
    next.version = 2;
    next.checkout_deadline = None;
    next.checkout_started_at = Some(Utc::now());
    save_conversation(&app.db, &next, CheckoutChanged)
        .await
        .expect("version 2");
    let loaded = load(&app, &first).await;
    assert_eq!(
        loaded.checkout_deadline, None,
        "a cleared deadline is cleared"
    );
    assert_eq!(loaded, next);
    let user: Option<String> = app
        .db
        .query("RETURN record::id(type::record('funnel_conversation', $id).user)")
        .bind(("id", first.id.clone()))
        .await
        .expect("query")
        .take(0)
        .expect("a user");
    assert_eq!(
        user.as_deref(),
        Some("someone"),
        "the checkout's account link stays"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_writer_groups_writes_that_arrive_together_and_answers_each_once_committed() {
    let app = spawn_app().await;
    let writes = Batcher::start(app.db.clone());
    let saves = (0..600).map(|n| {
        let (writes, db) = (writes.clone(), app.db.clone());
        async move {
            let conversation = conversation_for(&format!("visitor-group-{n:016}"));
            let outcome = writes.submit(start_of(&conversation)).await;
            // The moment a caller is answered, its write is there for anyone to read.
            let there: Option<bool> = db
                .query("RETURN type::record('funnel_conversation', $id).id != NONE")
                .bind(("id", conversation.id.clone()))
                .await
                .expect("query")
                .take(0)
                .expect("a bool");
            assert_eq!(there, Some(true), "answered before it was committed");
            outcome
        }
    });
    let outcomes = futures_util::future::join_all(saves).await;
    assert!(
        outcomes.iter().all(|o| *o == Ok(Outcome::Done)),
        "{outcomes:?}"
    );
    // Every write answered as committed is there to read.
    assert_eq!(stored_ids(&app).await.len(), 600);
    let (transactions, written) = writes.counts();
    assert_eq!(written, 600);
    assert!(
        transactions < 600,
        "writes that arrived together were committed together ({transactions} transactions)"
    );
}

/// `conversation` as its holder has it after taking it over at `epoch`.
fn at_epoch(conversation: &Conversation, epoch: u64) -> Conversation {
    Conversation {
        epoch,
        ..conversation.clone()
    }
}

/// Issue 49: a holder paused (or cut off from Redis) past its claim, whose conversation another
/// process took over, writes nothing: each kind of write made at its old epoch is refused as
/// fenced, even where it would otherwise land, and the new holder's writes land.
#[tokio::test]
async fn a_write_at_an_epoch_that_was_taken_over_is_fenced_whatever_it_changes() {
    let app = spawn_app().await;
    let first = conversation("visitor-fence-0000000001", 1);
    assert_eq!(first.epoch, 1, "a new conversation starts at epoch 1");
    save_conversation(&app.db, &first, Started)
        .await
        .expect("created");
    assert_eq!(load(&app, &first).await, first);

    // Another process takes it over: the epoch moves on, in the store, and comes back with it.
    let taken = take_over_conversation(&app.db, &first.key)
        .await
        .expect("taken over")
        .expect("found");
    assert_eq!(taken, at_epoch(&first, 2));
    assert_eq!(
        load(&app, &first).await,
        taken,
        "a plain read moves nothing"
    );

    // The stale holder's writes, each of which would land without the fence: a message in a
    // free place, an auto-checkout change from the stored version, a start over from it.
    let stale_message = with_message(&first, Speaker::User, "my email is broken");
    assert_eq!(
        save_conversation(&app.db, &stale_message, MessageAdded).await,
        Err(StoreError::Fenced)
    );
    let mut stale_checkout = first.clone();
    stale_checkout.version = 2;
    stale_checkout.checkout_started_at = Some(Utc::now());
    assert_eq!(
        save_conversation(&app.db, &stale_checkout, CheckoutChanged).await,
        Err(StoreError::Fenced)
    );
    let mut stale_restart = conversation("visitor-fence-0000000001", 2);
    stale_restart.messages.truncate(1);
    stale_restart.stage = 0;
    stale_restart.junk_count = 0;
    stale_restart.first_message_tracked = false;
    assert_eq!(
        save_conversation(&app.db, &stale_restart, Started).await,
        Err(StoreError::Fenced)
    );
    assert_eq!(
        load(&app, &first).await,
        taken,
        "nothing of them was written"
    );

    // The holder's writes land; one from a version it no longer has is still a conflict, and
    // a stale write to a place the holder filled is fenced, not a conflict.
    let asked = with_message(&taken, Speaker::User, "my email is broken");
    save_conversation(&app.db, &asked, MessageAdded)
        .await
        .expect("the holder's message");
    let mut opened = asked.clone();
    opened.version = 2;
    opened.checkout_started_at = Some(Utc::now());
    save_conversation(&app.db, &opened, CheckoutChanged)
        .await
        .expect("the holder's checkout");
    assert_eq!(
        save_conversation(&app.db, &at_epoch(&stale_checkout, 2), CheckoutChanged).await,
        Err(StoreError::Conflict)
    );
    assert_eq!(
        save_conversation(&app.db, &stale_message, MessageAdded).await,
        Err(StoreError::Fenced)
    );
    assert_eq!(load(&app, &first).await, opened);

    // A start over at the holder's epoch lands (a returning visitor after the hour); the one
    // before stays fenced out of the new conversation.
    let mut restart = at_epoch(&stale_restart, 2);
    restart.version = 3;
    save_conversation(&app.db, &restart, Started)
        .await
        .expect("started over");
    let late = with_message(
        &with_message(&first, Speaker::User, "a"),
        Speaker::Assistant,
        "b",
    );
    assert_eq!(
        save_conversation(&app.db, &late, MessageAdded).await,
        Err(StoreError::Fenced),
        "a stale message does not land in the new conversation"
    );
    assert_eq!(load(&app, &first).await, restart);

    // A message for a conversation that is not there is fenced too; a take-over finds none.
    let nowhere = conversation("visitor-fence-0000000002", 1);
    assert_eq!(
        save_conversation(
            &app.db,
            &with_message(&nowhere, Speaker::User, "hello"),
            MessageAdded
        )
        .await,
        Err(StoreError::Fenced)
    );
    assert_eq!(
        take_over_conversation(&app.db, &nowhere.key).await,
        Ok(None)
    );
    assert_eq!(stored_ids(&app).await.len(), 1);
}

/// The batch's messages stay one `INSERT`: among many conversations at once, only those written
/// at an epoch that was taken over are refused, even beside their new holder's message in the
/// same place, and every other write of the batch lands.
#[tokio::test]
async fn a_batch_of_messages_refuses_only_those_fenced() {
    let app = spawn_app().await;
    let conversations: Vec<Conversation> = (0..30)
        .map(|n| conversation_for(&format!("visitor-fenced-batch-{n:08}")))
        .collect();
    let starts = conversations.iter().map(start_of).collect();
    let started = commit_together(&app.db, starts).await;
    assert!(
        started.iter().all(|o| *o == Ok(Outcome::Done)),
        "{started:?}"
    );
    // Every third conversation is taken over by another process.
    let mut holders = Vec::new();
    for conversation in conversations.iter().step_by(3) {
        let taken = take_over_conversation(&app.db, &conversation.key)
            .await
            .expect("taken over")
            .expect("found");
        holders.push(taken);
    }

    // One message each from the process that started them (stale for every third), the new
    // holders' messages in the same places, a new conversation and an event.
    let mut writes: Vec<Statement> = conversations
        .iter()
        .map(|c| {
            save_statement(
                &with_message(c, Speaker::User, "from the first"),
                MessageAdded,
            )
            .expect("a write")
        })
        .collect();
    for holder in &holders {
        writes.push(
            save_statement(
                &with_message(holder, Speaker::User, "from the holder"),
                MessageAdded,
            )
            .expect("a write"),
        );
    }
    let fresh = conversation_for("visitor-fenced-batch-new");
    writes.push(start_of(&fresh));
    writes.push(first_message_event("visitor-fenced-batch-new"));
    let outcomes = commit_together(&app.db, writes).await;

    let expected: Vec<Result<Outcome, _>> = (0..conversations.len())
        .map(|n| {
            if n % 3 == 0 {
                Ok(Outcome::Fenced)
            } else {
                Ok(Outcome::Done)
            }
        })
        .chain(holders.iter().map(|_| Ok(Outcome::Done)))
        .chain([Ok(Outcome::Done), Ok(Outcome::Done)])
        .collect();
    assert_eq!(outcomes, expected);
    for (n, conversation) in conversations.iter().enumerate() {
        let loaded = load(&app, conversation).await;
        let text = &loaded.messages.last().expect("messages").text;
        let writer = if n % 3 == 0 {
            "from the holder"
        } else {
            "from the first"
        };
        assert_eq!((loaded.messages.len(), text.as_str()), (4, writer), "{n}");
    }
    assert_eq!(load(&app, &fresh).await, fresh);
}

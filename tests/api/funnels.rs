//! The funnels over HTTP and on the real store: the visitor cookie, the conversation store's
//! versions, the help funnel (against the AI mock), the checkout's one-time link, and the funnel
//! record travelling from the visit into the account. The chat protocol itself is tested with
//! the official socket.io-client (web/conformance/funnel.test.mjs).

use chrono::{TimeDelta, Utc};
use helpnow::auth::token;
use helpnow::store::analytics::NewAnalyticsEvent;
use helpnow::store::batch::{Batcher, Outcome, Statement, commit_together};
use helpnow::store::funnels::{
    help_record, load_conversation, load_statement, save_conversation, save_statement, visit,
};
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

fn conversation(id: &str, visitor: &str, version: u64) -> Conversation {
    let now = Utc::now();
    Conversation {
        id: id.to_owned(),
        key: ConversationKey {
            visitor_id: visitor.to_owned(),
            funnel: FunnelKind::Chat,
        },
        version,
        flow: "email".to_owned(),
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
            FunnelMessage {
                role: Speaker::Assistant,
                text: "Hi, I'm Emma.".into(),
                is_final: false,
                junk: false,
                source: Some("greeting".into()),
                at: now,
            },
            FunnelMessage {
                role: Speaker::User,
                text: "my email is broken".into(),
                is_final: false,
                junk: false,
                source: None,
                at: now,
            },
        ],
        checkout_deadline: Some(now + TimeDelta::seconds(15)),
        checkout_started_at: None,
        created_at: now,
        updated_at: now,
    }
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
async fn a_conversation_is_stored_whole_and_a_stale_save_loses() {
    let app = spawn_app().await;
    let visitor = "visitor-store-0000000001";
    let first = conversation("conv1", visitor, 1);
    save_conversation(&app.db, &first).await.expect("created");
    let loaded = load_conversation(&app.db, &first.key)
        .await
        .expect("loads")
        .expect("found");
    assert_eq!(loaded, first);

    // Another process creating the same visitor's conversation loses (unique visitor + funnel).
    let rival = conversation("conv2", visitor, 1);
    assert_eq!(
        save_conversation(&app.db, &rival).await,
        Err(StoreError::Conflict)
    );

    let mut next = first.clone();
    next.version = 2;
    next.stage = 2;
    save_conversation(&app.db, &next).await.expect("version 2");
    let mut stale = first.clone();
    stale.version = 2;
    assert_eq!(
        save_conversation(&app.db, &stale).await,
        Err(StoreError::Conflict)
    );
    let loaded = load_conversation(&app.db, &first.key)
        .await
        .expect("loads")
        .expect("found");
    assert_eq!(loaded.stage, 2);

    let other_funnel = ConversationKey {
        visitor_id: visitor.to_owned(),
        funnel: FunnelKind::Refundable,
    };
    assert_eq!(load_conversation(&app.db, &other_funnel).await, Ok(None));
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
    assert_eq!(
        cookie_named(&first, "helpnow_checkout_start").as_deref(),
        Some("helpnow_checkout_start=hn_link")
    );
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
    let mut fresh = conversation(&format!("c{visitor}"), visitor, 1);
    fresh.checkout_deadline = None;
    fresh
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
    let mut writes: Vec<Statement> = conversations
        .iter()
        .map(|c| save_statement(c).expect("a write"))
        .collect();
    writes.push(visit(
        "visitor-batch-0000000000000000",
        &Attribution::default(),
    ));
    writes.push(Statement::Analytics(NewAnalyticsEvent {
        name: "chatbot_first_message".into(),
        properties: json!({ "funnel": "chat" }),
        visitor: Some("visitor-batch-0000000000000000".into()),
        path: None,
    }));
    let outcomes = commit_together(&app.db, writes).await;
    assert_eq!(outcomes.len(), 42);
    assert!(
        outcomes.iter().all(|o| *o == Ok(Outcome::Done)),
        "{outcomes:?}"
    );
    assert_eq!(stored_ids(&app).await.len(), 40);
    let loaded = load_conversation(&app.db, &conversations[7].key)
        .await
        .expect("loads")
        .expect("found");
    assert_eq!(loaded, conversations[7], "stored whole");

    // Loads ride along in a batch: each gets its own conversation, or none.
    let missing = conversation_for("visitor-batch-missing-00000001");
    let outcomes = commit_together(
        &app.db,
        vec![
            load_statement(&conversations[3].key),
            load_statement(&missing.key),
            save_statement(&missing).expect("a statement"),
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
        .map(|n| {
            save_statement(&conversation_for(&format!("visitor-fails-{n:016}"))).expect("a write")
        })
        .collect();
    // An event whose properties are not an object breaks the table's schema.
    writes.insert(
        5,
        Statement::Analytics(NewAnalyticsEvent {
            name: "broken".into(),
            properties: json!("not an object"),
            visitor: None,
            path: None,
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
    save_conversation(&app.db, &first).await.expect("created");
    let mut second = first.clone();
    second.version = 2;
    second.stage = 2;
    save_conversation(&app.db, &second)
        .await
        .expect("version 2");

    // Another process's creation of the same visitor's conversation (the unique index), a stale
    // update (from version 1 again), and fresh conversations, in one batch.
    let mut rival = conversation_for("visitor-race-0000000000000000");
    rival.id = "rival".into();
    let mut stale = first.clone();
    stale.version = 2;
    let mut writes = vec![
        save_statement(&rival).expect("a write"),
        save_statement(&stale).expect("a write"),
    ];
    for n in 1..=5 {
        writes.push(
            save_statement(&conversation_for(&format!("visitor-race-{n:016}"))).expect("a write"),
        );
    }
    let outcomes = commit_together(&app.db, writes).await;
    assert!(
        outcomes[0].is_err(),
        "the rival creation fails: {outcomes:?}"
    );
    assert_eq!(
        outcomes[1],
        Ok(Outcome::Conflict),
        "the stale update lands nowhere"
    );
    assert!(
        outcomes[2..].iter().all(|o| *o == Ok(Outcome::Done)),
        "the others land: {outcomes:?}"
    );
    assert_eq!(stored_ids(&app).await.len(), 6);
    let loaded = load_conversation(&app.db, &first.key)
        .await
        .expect("loads")
        .expect("found");
    assert_eq!(loaded.stage, 2, "the stale update changed nothing");
}

#[tokio::test]
async fn an_update_keeps_what_other_writers_put_on_the_row_and_clears_what_it_clears() {
    let app = spawn_app().await;
    let first = conversation("conv-merge", "visitor-merge-000000000001", 1);
    assert!(first.checkout_deadline.is_some());
    save_conversation(&app.db, &first).await.expect("created");
    app.db
        .query("UPDATE type::record('funnel_conversation', 'conv-merge') SET user = type::record('user', 'someone')")
        .await
        .expect("query")
        .check()
        .expect("set");
    let mut next = first.clone();
    next.version = 2;
    next.checkout_deadline = None;
    next.checkout_started_at = Some(Utc::now());
    save_conversation(&app.db, &next).await.expect("version 2");
    let loaded = load_conversation(&app.db, &first.key)
        .await
        .expect("loads")
        .expect("found");
    assert_eq!(
        loaded.checkout_deadline, None,
        "a cleared deadline is cleared"
    );
    assert_eq!(loaded, next);
    let user: Option<String> = app
        .db
        .query("RETURN record::id(type::record('funnel_conversation', 'conv-merge').user)")
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
        let writes = writes.clone();
        async move {
            let write = save_statement(&conversation_for(&format!("visitor-group-{n:016}")))
                .expect("a write");
            writes.submit(write).await
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

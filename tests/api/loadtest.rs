//! The load generator's smoke run (the full benchmarks are in docs/benchmarks.md): a few hundred
//! idle connections and a few funnel conversations against the real server, with the report's
//! figures checked. It proves the tool runs and reports, not the server's speed. And the crash test
//! in small: acknowledged messages recorded through a `kill -9` of the server, then read back. And
//! the experiment scenario against an A/B experiment started through the admin API, its per-arm
//! counts checked against the server's analysis.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use helpnow::config::{AiProviderKind, AiSettings};
use helpnow::loadtest::acks::{self, Ack};
use helpnow::loadtest::ai_mock::MockAiSettings;
use helpnow::loadtest::{self, Options, Scenario};
use serde_json::{Value, json};

use crate::billing::verified_admin;
use crate::experiments::{definition, get_json, post_json, split_of};
use crate::helpers::{TestApp, spawn_app, spawn_app_with};
use crate::processes::{start, start_with};

/// The load generator's options for `scenario` against `address`, as the tests run it.
pub(crate) fn options(
    address: &str,
    scenario: Scenario,
    connections: u64,
    seconds: f64,
) -> Options {
    Options {
        url: url::Url::parse(address).expect("url"),
        scenario,
        connections,
        ramp: 1000,
        duration: Duration::from_secs_f64(seconds),
        think: Duration::from_millis(200),
        ai_mock: None,
        ai: MockAiSettings {
            latency: Duration::from_millis(50),
            tokens_per_second: 50.0,
            reply_tokens: 20,
        },
        max_error_rate: 0.0,
        json: true,
        record_acks: None,
        campaign: None,
        convert: BTreeMap::new(),
        visitors: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_load_generator_holds_idle_connections_and_reports_them() {
    let app = spawn_app().await;
    let outcome = loadtest::run(&options(&app.address, Scenario::Idle, 300, 3.0))
        .await
        .expect("the run reaches the server");
    let report = outcome.report.to_json(&outcome.stats);
    assert!(outcome.passed, "{report}");
    assert_eq!(report["connections_opened"], 300, "{report}");
    assert_eq!(report["connections_failed"], 0, "{report}");
    assert_eq!(report["errors"], 0, "{report}");
    assert_eq!(
        report["server_realtime_connections_peak"], 300.0,
        "{report}"
    );
    assert!(
        report["server_rss_bytes"].as_f64().unwrap_or(0.0) > 0.0,
        "{report}"
    );
    let summary = outcome.report.summary(&outcome.stats);
    assert!(summary.contains("connections_opened     300"), "{summary}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_load_generator_runs_funnel_conversations_and_times_every_send() {
    let app = spawn_app().await;
    let outcome = loadtest::run(&options(&app.address, Scenario::Funnel, 10, 8.0))
        .await
        .expect("the run reaches the server");
    let report = outcome.report.to_json(&outcome.stats);
    assert!(outcome.passed, "{report}");
    let sent = report["messages_sent"].as_u64().expect("a count");
    assert!(sent >= 20, "{report}");
    assert_eq!(report["messages_acked"], sent, "{report}");
    assert_eq!(report["ack_ms"]["count"], sent, "{report}");
    // Each reply comes after the spec's typing delay of 1.5-2.5 s.
    assert!(
        report["reply_ms"]["p50"].as_f64().expect("p50") >= 1400.0,
        "{report}"
    );
    let stored: Option<i64> = app
        .db
        .query("RETURN count(SELECT id FROM funnel_conversation)")
        .await
        .expect("query")
        .take(0)
        .expect("a count");
    assert!(stored.unwrap_or(0) >= 10, "every conversation is stored");
    // Replies come when the announced typing delay is over, not before (an early one is an error
    // of kind `reply_early`, and this run allows none).
    assert!(
        report["reply_late_ms"]["count"].as_u64() >= Some(10),
        "{report}"
    );
    assert!(
        report["errors_by_kind"].get("reply_early").is_none(),
        "{report}"
    );
    // The server's metrics count every message stored (visitors' and replies) and timer run.
    let replies = report["replies"].as_f64().expect("replies");
    assert!(
        report["server_messages_stored"].as_f64() >= Some(sent as f64 + replies),
        "{report}"
    );
    assert!(
        report["server_typing_timer_late_ms"]["count"].as_f64() >= Some(replies),
        "{report}"
    );
    assert!(
        report["server_actors_live_peak"].as_f64() >= Some(10.0),
        "{report}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_burst_scenario_joins_everyone_at_once_and_runs_one_conversation_each() {
    let app = spawn_app().await;
    let mut burst = options(&app.address, Scenario::Burst, 6, 20.0);
    burst.ramp = 100_000;
    let outcome = loadtest::run(&burst)
        .await
        .expect("the run reaches the server");
    let report = outcome.report.to_json(&outcome.stats);
    assert!(outcome.passed, "{report}");
    // One conversation each: three messages, three replies, the last one final.
    assert_eq!(report["connections_opened"], 6, "{report}");
    assert_eq!(report["join_ms"]["count"], 6, "{report}");
    assert_eq!(report["messages_sent"], 18, "{report}");
    assert_eq!(report["messages_acked"], 18, "{report}");
    assert_eq!(report["replies"], 18, "{report}");
    // Each client left after its final reply, long before the run's 20 s.
    assert!(report["elapsed_s"].as_f64() < Some(18.0), "{report}");
    let stored: Option<i64> = app
        .db
        .query("RETURN count(SELECT id FROM funnel_message WHERE is_final = true)")
        .await
        .expect("query")
        .take(0)
        .expect("a count");
    assert_eq!(
        stored,
        Some(6),
        "every conversation reached its final message"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_join_scenario_holds_live_conversations_until_the_end() {
    // A server process of its own: its memory is the server's alone (in this test process, the
    // other tests' allocations moved it, and the memory held per connection came out below 0).
    let server = start("mem://");
    let mut join = options(&server.address, Scenario::Join, 40, 2.0);
    join.ramp = 100_000;
    let outcome = loadtest::run(&join)
        .await
        .expect("the run reaches the server");
    let report = outcome.report.to_json(&outcome.stats);
    assert!(outcome.passed, "{report}");
    assert_eq!(report["join_ms"]["count"], 40, "{report}");
    assert!(
        report["joined_at_ms"]["max"].as_f64() < Some(2000.0),
        "{report}"
    );
    assert!(
        report["server_actors_live_peak"].as_f64() >= Some(40.0),
        "{report}"
    );
    assert_eq!(report["messages_sent"], 0, "{report}");
    // The server's memory while it held them, apart from the peak of getting them in.
    assert!(
        report["server_rss_held_per_connection_bytes"].as_f64() > Some(0.0),
        "{report}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_load_generator_makes_members_and_times_their_streamed_replies() {
    // The generator's own mock provider, started here so the server can be pointed at it.
    let settings = options("http://127.0.0.1:1", Scenario::Member, 0, 0.0).ai;
    let (mock, serving) =
        loadtest::ai_mock::start("127.0.0.1:0".parse().expect("address"), settings)
            .await
            .expect("the mock listens");
    let app = spawn_app_with(|s| {
        s.ai = AiSettings {
            provider: AiProviderKind::Openai,
            base_url: Some(format!("http://{mock}/v1")),
            api_key: Some("sk-loadtest".to_owned().into()),
            model: "gpt-4o-mini".to_owned(),
            temperature: 0.7,
        };
    })
    .await;
    let outcome = loadtest::run(&options(&app.address, Scenario::Member, 5, 4.0))
        .await
        .expect("the run reaches the server");
    serving.abort();
    let report = outcome.report.to_json(&outcome.stats);
    assert!(outcome.passed, "{report}");
    assert_eq!(report["connections_opened"], 5, "{report}");
    let sent = report["messages_sent"].as_u64().expect("a count");
    assert!(sent >= 5, "{report}");
    assert_eq!(report["messages_acked"], sent, "{report}");
    assert!(report["replies"].as_u64() >= Some(5), "{report}");
    // 20 tokens a reply, each stamped by the mock and read back from the pieces.
    let tokens = report["forward_ms"]["count"]
        .as_u64()
        .expect("forwarded tokens");
    assert!(tokens >= 5 * 20, "{report}");
    // 50 tokens a second: pieces come about 20 ms apart.
    let gap = report["token_gap_ms"]["p50"].as_f64().expect("gaps");
    assert!((10.0..40.0).contains(&gap), "{report}");
    // The server times each delta it sends; tokens read together go out in one.
    let deltas = report["server_piece_forwarding_ms"]["count"]
        .as_f64()
        .expect("timed deltas");
    let replies = report["replies"].as_f64().expect("replies");
    assert!((replies..=tokens as f64).contains(&deltas), "{report}");
    let members: Option<i64> = app
        .db
        .query("RETURN count(SELECT id FROM user WHERE string::starts_with(email, 'loadtest-'))")
        .await
        .expect("query")
        .take(0)
        .expect("a count");
    assert_eq!(members, Some(5), "each client became a member");
}

/// Appends `lines` to the acknowledgements file, as forged records of messages never sent.
fn append(path: &Path, lines: &[Ack]) {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .expect("the file is there");
    for ack in lines {
        writeln!(file, "{}", serde_json::to_string(ack).expect("JSON")).expect("written");
    }
}

/// The crash test in small (docs/benchmarks.md, "Crash test at load"): a funnel run records each
/// acknowledged message while the server is killed with `kill -9` and started again on the same
/// SurrealKV files and port. The run carries on through it, and every recorded message is read
/// back from the restarted server; recorded messages it never stored are listed as missing, and
/// ones that cannot be read (the server gone) as unchecked, not as lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_messages_recorded_through_a_kill_9_are_all_read_back() {
    let folder = tempfile::tempdir().expect("temp dir");
    let database_url = format!("surrealkv://{}/store", folder.path().display());
    let file = folder.path().join("acks.jsonl");
    let server = start(&database_url);
    let url = url::Url::parse(&server.address).expect("address");
    let port = url.port().expect("port").to_string();
    let mut run = options(&server.address, Scenario::Funnel, 6, 16.0);
    run.record_acks = Some(file.clone());
    // The crash fails sends and joins: counted, not fatal.
    run.max_error_rate = 1.0;
    let generator = tokio::spawn(async move { loadtest::run(&run).await });
    let recorded = || acks::read(&file).map_or(0, |acks| acks.len());
    for _ in 0..600 {
        if recorded() >= 6 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let before_the_kill = recorded();
    assert!(
        before_the_kill >= 6,
        "messages were acknowledged before the kill"
    );
    server.kill_hard();
    let server = tokio::task::spawn_blocking(move || {
        start_with(&database_url, &[("APP__SERVER__PORT", port.as_str())])
    })
    .await
    .expect("restarted");

    let outcome = generator
        .await
        .expect("the generator's task")
        .expect("the run reaches the server");
    let report = outcome.report.to_json(&outcome.stats);
    assert!(
        report["errors"].as_u64() > Some(0),
        "the clients saw the server die: {report}"
    );
    let acked = report["messages_acked"].as_u64().expect("a count") as usize;
    assert_eq!(
        recorded(),
        acked,
        "every acknowledgement is recorded: {report}"
    );
    assert!(
        acked > before_the_kill,
        "the run went on against the restarted server: {report}"
    );

    let verdict = acks::verify(&url, &file).await.expect("the file reads");
    assert!(verdict.passed(), "{}", verdict.summary());
    assert_eq!((verdict.recorded, verdict.stored), (acked, acked));
    assert_eq!(verdict.conversations, {
        let acks = acks::read(&file).expect("reads");
        let visitors: std::collections::HashSet<_> = acks
            .iter()
            .map(|ack| match ack {
                Ack::Funnel { visitor, .. } => visitor.clone(),
                Ack::Member { .. } => panic!("a funnel run records funnel messages: {ack:?}"),
            })
            .collect();
        visitors.len()
    });

    // A message the server never got, in a real conversation, and one of a visitor never seen.
    let Some(Ack::Funnel {
        funnel,
        visitor,
        conversation,
        ..
    }) = acks::read(&file).expect("reads").into_iter().next()
    else {
        panic!("a funnel acknowledgement first");
    };
    let never_sent = Ack::Funnel {
        funnel: funnel.clone(),
        visitor,
        conversation: conversation.clone(),
        text: "a message this visitor never sent".into(),
    };
    let never_joined = Ack::Funnel {
        funnel,
        visitor: "loadtest_never_joined_000000".into(),
        conversation,
        text: "My email keeps asking for my password".into(),
    };
    append(&file, &[never_sent.clone(), never_joined.clone()]);
    let verdict = acks::verify(&url, &file).await.expect("the file reads");
    assert!(!verdict.passed(), "{}", verdict.summary());
    assert_eq!(verdict.stored, acked, "{}", verdict.summary());
    assert_eq!(verdict.missing.len(), 2, "{}", verdict.summary());
    assert!(verdict.missing.contains(&never_sent) && verdict.missing.contains(&never_joined));
    assert!(
        verdict
            .summary()
            .contains("a message this visitor never sent")
    );

    // Nothing can be read from a server that is not there: unchecked, not missing.
    drop(server);
    let verdict = acks::verify(&url, &file).await.expect("the file reads");
    assert!(!verdict.passed());
    assert!(verdict.missing.is_empty(), "{}", verdict.summary());
    assert_eq!(verdict.unchecked.len(), acked + 2, "{}", verdict.summary());
}

/// A member's acknowledgement carries the message's id: the run records it and the check finds
/// each in its chat (`GET /api/chats/{id}`), and lists one the chat does not hold.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn member_messages_are_recorded_by_id_and_read_back_from_their_chats() {
    let settings = options("http://127.0.0.1:1", Scenario::Member, 0, 0.0).ai;
    let (mock, serving) =
        loadtest::ai_mock::start("127.0.0.1:0".parse().expect("address"), settings)
            .await
            .expect("the mock listens");
    let app = spawn_app_with(|s| {
        s.ai = AiSettings {
            provider: AiProviderKind::Openai,
            base_url: Some(format!("http://{mock}/v1")),
            api_key: Some("sk-loadtest".to_owned().into()),
            model: "gpt-4o-mini".to_owned(),
            temperature: 0.7,
        };
    })
    .await;
    let folder = tempfile::tempdir().expect("temp dir");
    let file = folder.path().join("acks.jsonl");
    let mut run = options(&app.address, Scenario::Member, 3, 3.0);
    run.record_acks = Some(file.clone());
    run.max_error_rate = 1.0;
    let outcome = loadtest::run(&run)
        .await
        .expect("the run reaches the server");
    serving.abort();
    let report = outcome.report.to_json(&outcome.stats);
    assert!(outcome.passed, "{report}");
    let acked = report["messages_acked"].as_u64().expect("a count") as usize;
    assert!(acked >= 3, "{report}");

    let url = url::Url::parse(&app.address).expect("address");
    let verdict = acks::verify(&url, &file).await.expect("the file reads");
    assert!(verdict.passed(), "{}", verdict.summary());
    assert_eq!((verdict.recorded, verdict.stored), (acked, acked));
    assert_eq!(
        verdict.conversations,
        3,
        "one chat each: {}",
        verdict.summary()
    );

    let Some(Ack::Member { session, chat, .. }) = acks::read(&file).expect("reads").pop() else {
        panic!("member acknowledgements");
    };
    let never_stored = Ack::Member {
        session,
        chat,
        message: "not-a-message-id".into(),
    };
    append(&file, std::slice::from_ref(&never_stored));
    let verdict = acks::verify(&url, &file).await.expect("the file reads");
    assert_eq!(verdict.stored, acked, "{}", verdict.summary());
    assert_eq!(verdict.missing, [never_stored], "{}", verdict.summary());
}

/// Publishes the next version of the default flow with `greeting` and its replies 0.5-0.6 s
/// after each message (the spec's 1.5-2.5 s would make the run long); its version.
async fn publish_quick_flow(app: &TestApp, admin: &str, greeting: &str) -> u64 {
    let (status, flows) = get_json(app, "/api/admin/flows", admin).await;
    assert_eq!(status, 200, "{flows}");
    let default = flows["flows"]
        .as_array()
        .expect("flows")
        .iter()
        .find(|flow| flow["name"] == "default")
        .expect("the default flow");
    let published = default["published"].as_u64().expect("a published version");
    let mut script = default["script"].clone();
    script["greeting"] = json!(greeting);
    script["typingDelayMinMs"] = json!(500);
    script["typingDelayMaxMs"] = json!(600);
    let response = app
        .client
        .put(app.url("/api/admin/flows/default/draft"))
        .header("cookie", admin)
        .json(&json!({ "script": script, "basedOn": published }))
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), 200, "the draft is saved");
    let (status, answer) = post_json(
        app,
        "/api/admin/flows/default/publish",
        admin,
        &json!({ "basedOn": published }),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    published + 1
}

/// The experiment scenario against a started A/B experiment on campaign `lt-exp`, both arms on
/// quick flows, with `--convert a=0,b=1`: every visitor of B pays the demo checkout and none of
/// A does. The generator's visitors per arm are the hash's arms of the visitors it sent, and the
/// server's analysis counts the same exposures, B's all converted and A's none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_experiment_scenario_pays_at_each_arms_rate_and_the_server_counts_the_same() {
    const ADMIN: &str = "loadtest-admin@example.com";
    const VISITORS: u64 = 36;
    let app = spawn_app_with(|settings| settings.admin.emails = vec![ADMIN.to_owned()]).await;
    let admin = verified_admin(&app, ADMIN).await;
    let a = publish_quick_flow(&app, &admin, "Hi, I'm {assistant}. What is the trouble?").await;
    let b = publish_quick_flow(&app, &admin, "Hello, I'm {assistant}! What can I fix?").await;
    let mut experiment = definition("lt-exp", 1000);
    experiment["arms"][0]["flow"]["version"] = json!(a);
    experiment["arms"][1]["flow"]["version"] = json!(b);
    let (status, created) = post_json(&app, "/api/admin/experiments", &admin, &experiment).await;
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_str().expect("an id").to_owned();
    let path = format!("/api/admin/experiments/{id}/start");
    let (status, started) = post_json(&app, &path, &admin, &json!({})).await;
    assert_eq!(status, 200, "{started}");

    let folder = tempfile::tempdir().expect("temp dir");
    let file = folder.path().join("acks.jsonl");
    let mut run = options(&app.address, Scenario::Experiment, 12, 60.0);
    run.think = Duration::ZERO;
    run.campaign = Some("lt-exp".to_owned());
    run.convert = BTreeMap::from([("a".to_owned(), 0.0), ("b".to_owned(), 1.0)]);
    run.visitors = Some(VISITORS);
    run.record_acks = Some(file.clone());
    run.max_error_rate = 1.0;
    let outcome = loadtest::run(&run)
        .await
        .expect("the run reaches the server");
    let report = outcome.report.to_json(&outcome.stats);
    // A reply read sooner than its typing delay is the generator's own lateness when the machine
    // is busy (it read the typing event late): the funnel scenario's test checks the timing.
    let errors = report["errors_by_kind"].as_object().expect("errors");
    assert!(errors.keys().all(|kind| kind == "reply_early"), "{report}");
    // The visitors came, each through three messages, and the run ended with the last of them.
    assert!(report["elapsed_s"].as_f64() < Some(50.0), "{report}");
    assert_eq!(report["messages_acked"], 3 * VISITORS, "{report}");
    assert_eq!(report["replies"], 3 * VISITORS, "{report}");
    let seen = &report["experiment"];
    assert_eq!(seen["visitors"], VISITORS, "{report}");
    assert_eq!(
        (&seen["outside"], &seen["help_form"], &seen["refundable"]),
        (&json!(0), &json!(0), &json!(0)),
        "{report}"
    );
    let arm = |key: &str, field: &str| seen["arms"][key][field].as_u64().expect("a count");
    assert_eq!(
        arm("a", "visitors") + arm("b", "visitors"),
        VISITORS,
        "{report}"
    );
    assert!(
        arm("a", "visitors") > 0 && arm("b", "visitors") > 0,
        "{report}"
    );
    assert_eq!(arm("a", "finished"), arm("a", "visitors"), "{report}");
    assert_eq!(arm("b", "finished"), arm("b", "visitors"), "{report}");
    assert_eq!(arm("a", "paid"), 0, "{report}");
    assert_eq!(arm("b", "paid"), arm("b", "visitors"), "{report}");
    assert_eq!(seen["arms"]["b"]["paid_share"], 1.0, "{report}");
    assert_eq!(seen["arms"]["a"]["target_rate"], 0.0, "{report}");
    assert_eq!(
        report["payment_ms"]["count"].as_u64(),
        Some(arm("b", "paid")),
        "{report}"
    );
    let summary = outcome.report.summary(&outcome.stats);
    assert!(
        summary.contains(&format!(
            "{} paid: 100.0 % (target 100.0 %)",
            arm("b", "paid")
        )),
        "{summary}"
    );

    // The arms the generator read are the hash's arms of the visitors it sent.
    let split = split_of(&started);
    let mut by_hash = BTreeMap::<String, u64>::new();
    let visitors: std::collections::BTreeSet<String> = acks::read(&file)
        .expect("the acknowledgements")
        .into_iter()
        .map(|ack| match ack {
            Ack::Funnel { visitor, .. } => visitor,
            Ack::Member { .. } => panic!("visitors' messages"),
        })
        .collect();
    for visitor in &visitors {
        let key = split.arm_of(visitor).expect("an arm").key.clone();
        *by_hash.entry(key).or_default() += 1;
    }
    assert_eq!(
        by_hash,
        BTreeMap::from([
            ("a".to_owned(), arm("a", "visitors")),
            ("b".to_owned(), arm("b", "visitors"))
        ])
    );

    // The server counts each visitor's exposure and B's paid trials (as they are stored). Asked
    // every 500 ms: the admin API's pace per address once its burst is spent.
    let expected = json!([
        [arm("a", "visitors"), 0],
        [arm("b", "visitors"), arm("b", "visitors")]
    ]);
    let mut counted = Value::Null;
    for _ in 0..60 {
        let (status, body) = get_json(&app, &format!("/api/admin/experiments/{id}"), &admin).await;
        assert_eq!(status, 200, "{body}");
        counted = body["analysis"]["arms"]
            .as_array()
            .expect("arms")
            .iter()
            .map(|arm| json!([arm["exposures"], arm["conversions"]]))
            .collect();
        if counted == expected {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert_eq!(
        counted, expected,
        "the server's exposures and conversions per arm"
    );
}

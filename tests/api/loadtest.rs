//! The load generator's smoke run (the full benchmarks are in docs/benchmarks.md): a few hundred
//! idle connections and a few funnel conversations against the real server, with the report's
//! figures checked. It proves the tool runs and reports, not the server's speed.

use std::time::Duration;

use helpnow::config::{AiProviderKind, AiSettings};
use helpnow::loadtest::ai_mock::MockAiSettings;
use helpnow::loadtest::{self, Options, Scenario};

use crate::helpers::{spawn_app, spawn_app_with};

fn options(address: &str, scenario: Scenario, connections: u64, seconds: f64) -> Options {
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
    let app = spawn_app().await;
    let mut join = options(&app.address, Scenario::Join, 40, 2.0);
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

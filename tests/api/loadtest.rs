//! The load generator's smoke run (the full benchmarks are in docs/benchmarks.md): a few hundred
//! idle connections and a few funnel conversations against the real server, with the report's
//! figures checked. It proves the tool runs and reports, not the server's speed.

use std::time::Duration;

use helpnow::loadtest::{self, Options, Scenario};

use crate::helpers::spawn_app;

fn options(address: &str, scenario: Scenario, connections: u64, seconds: f64) -> Options {
    Options {
        url: url::Url::parse(address).expect("url"),
        scenario,
        connections,
        ramp: 1000,
        duration: Duration::from_secs_f64(seconds),
        think: Duration::from_millis(200),
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
}

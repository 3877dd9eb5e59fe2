//! A client that floods page loads and browser events (issue 46, item 2): without cookies, or with
//! a new visitor id on every request, from one address. What is past the per-address limits is
//! not recorded, what waits to be written is bounded, and the dashboard's figures stop growing.

use std::time::Instant;

use futures_util::StreamExt;
use serde_json::json;

use crate::helpers::{TestApp, settled, spawn_app};

const REQUESTS: usize = 10_000;

/// The help funnel's visitors on the dashboard (the daily roll-ups) and the stored page views,
/// once they stop changing (the writes land behind the pages' answers).
async fn settled_views(app: &TestApp) -> (i64, u64) {
    settled(|| async {
        let mut response = app
            .db
            .query(
                "SELECT VALUE math::sum(n) FROM analytics_daily \
                 WHERE funnel = 'help_funnel' AND step = 'visitors' GROUP ALL",
            )
            .await
            .expect("query");
        let visitors: Option<i64> = response.take(0).expect("sum");
        let views = helpnow::store::analytics::count_named(&app.db, "page_view")
            .await
            .expect("count");
        (visitors.unwrap_or(0), views)
    })
    .await
}

/// A Prometheus sample of `/metrics` whose line starts with `series`, summed.
async fn metric(app: &TestApp, series: &str) -> f64 {
    let text = app.get("/metrics").await.text().await.expect("text");
    text.lines()
        .filter(|line| line.starts_with(series))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[tokio::test]
async fn ten_thousand_page_loads_from_one_address_record_no_more_than_its_limit() {
    let app = spawn_app().await;
    let started = Instant::now();
    // No cookie on any request: each is a new visitor to the server.
    let statuses: Vec<u16> = futures_util::stream::iter(0..REQUESTS)
        .map(|n| {
            let url = app.url(&format!("/get-help?keyword=flood&utm_source=n{n}"));
            let client = app.client.clone();
            async move {
                client
                    .get(url)
                    .send()
                    .await
                    .expect("sent")
                    .status()
                    .as_u16()
            }
        })
        .buffer_unordered(32)
        .collect()
        .await;
    let elapsed = started.elapsed();
    assert!(
        statuses.iter().all(|status| *status == 200),
        "every page is served"
    );
    let (visitors, views) = settled_views(&app).await;
    // 300 at once, then five a second (routes::events::PAGE_VIEWS_PER_ADDRESS).
    let most = 300 + 5 * elapsed.as_secs() as i64 + 5;
    assert!(
        visitors <= most && views as i64 <= most,
        "{visitors} visitors and {views} views recorded of {REQUESTS} in {elapsed:?} (at most {most})"
    );
    assert!(views >= 300, "the limit's burst is recorded: {views}");
    let dropped = metric(
        &app,
        "helpnow_analytics_dropped_total{reason=\"over_limit\",source=\"page_view\"}",
    )
    .await;
    assert_eq!(
        dropped as u64 + views,
        REQUESTS as u64,
        "every page view not recorded is counted"
    );
    assert!(metric(&app, "helpnow_analytics_queued").await <= 2_000.0);

    // Past the limit the figures do not move, however many more loads come.
    for _ in 0..50 {
        let response = app.get("/get-help?keyword=flood").await;
        assert_eq!(response.status(), 200);
    }
    let (after, _) = settled_views(&app).await;
    assert!(
        after <= visitors + 5 * (started.elapsed() - elapsed).as_secs() as i64 + 5,
        "{after} after {visitors}"
    );
}

#[tokio::test]
async fn events_with_made_up_visitor_ids_are_limited_and_keep_no_id_that_is_not_one() {
    let app = spawn_app().await;
    // A cookie that is not a visitor id names no visitor; a path keeps no query but a campaign's.
    let response = app
        .client
        .post(app.url("/api/events"))
        .header("cookie", format!("vid={}", "x".repeat(63) + "!"))
        .json(&json!({ "name": "feature_use", "path": "/x?email=ann@example.com&keyword=printer" }))
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), 201);
    let mut found = app
        .db
        .query("SELECT visitor, path FROM analytics_event WHERE name = 'feature_use'")
        .await
        .expect("query");
    let stored: Vec<serde_json::Value> = found.take(0).expect("rows");
    assert_eq!(
        stored,
        vec![json!({ "path": "/x?keyword=printer", "visitor": null })],
        "no visitor, no address"
    );

    let statuses: Vec<u16> = futures_util::stream::iter(0..REQUESTS)
        .map(|n| {
            let url = app.url("/api/events");
            let client = app.client.clone();
            async move {
                client
                    .post(url)
                    .header("cookie", format!("vid=rotating-visitor-{n:08}"))
                    .json(&json!({ "name": "feature_use" }))
                    .send()
                    .await
                    .expect("sent")
                    .status()
                    .as_u16()
            }
        })
        .buffer_unordered(32)
        .collect()
        .await;
    let accepted = statuses.iter().filter(|status| **status == 201).count();
    // 30 at once, then one a second (routes::events::EVENTS_PER_ADDRESS).
    assert!(accepted <= 30 + 60, "{accepted} accepted of {REQUESTS}");
    assert_eq!(
        helpnow::store::analytics::count_named(&app.db, "feature_use")
            .await
            .expect("count"),
        accepted as u64 + 1
    );
    let dropped = metric(
        &app,
        "helpnow_analytics_dropped_total{reason=\"over_limit\",source=\"event\"}",
    )
    .await;
    assert_eq!(dropped as usize, REQUESTS - accepted);
}

#[tokio::test]
async fn a_burst_of_handshakes_from_one_address_opens_no_more_than_its_places() {
    let app = crate::helpers::spawn_app_with(|settings| {
        settings.realtime.max_connections_per_address = 5;
    })
    .await;
    let upgrades = (0..100).map(|_| {
        crate::helpers::websocket_upgrade(
            &app.address,
            "/socket.io/?EIO=4&transport=websocket",
            &[],
        )
    });
    let results = futures_util::future::join_all(upgrades).await;
    let (open, refused): (Vec<_>, Vec<_>) = results
        .into_iter()
        .partition(|upgrade| matches!(upgrade, crate::helpers::Upgrade::Open(_)));
    assert_eq!(open.len(), 5, "one address holds five connections at most");
    assert!(
        refused
            .iter()
            .all(|upgrade| matches!(upgrade, crate::helpers::Upgrade::Refused(429, _)))
    );
}

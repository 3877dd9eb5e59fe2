//! What the ads cost (issue 52): a Google Ads campaign report, as its UI downloads it, uploaded by
//! an admin, kept per day and campaign, replaced day by day, and refused whole when a cell is bad.

use std::collections::BTreeMap;

use helpnow::domain::journey::DayRange;
use helpnow::store::ad_costs::{Spend, Spending, spending};
use serde_json::{Value, json};

use crate::auth::sign_up;
use crate::billing::verified_admin;
use crate::helpers::{TestApp, get_with_cookie, spawn_app_with};

const ADMIN: &str = "ops@example.com";

/// A campaign report made the way the Google Ads UI downloads it: the report's name and its date
/// range above a header of the UI's own column names (in the operator's order, with columns the
/// upload does not read), quoted numbers with thousands separators, `--` for a missing value, the
/// currency column, and the totals at the end. (docs: the same as the browser test's sample.)
const NOVEMBER: &str = "\u{feff}Campaign report\r
\"November 1, 2026 - November 30, 2026\"\r
Day,Campaign ID,Campaign,Campaign status,Clicks,Impr.,CTR,Currency code,Avg. CPC,Cost\r
2026-11-01,21000000001,\"Printer help, US\",Enabled,\"1,204\",\"12,345\",9.75%,USD,1.03,\"1,240.12\"\r
2026-11-01,21000000002,Email help,Enabled,87,\"2,010\",4.33%,USD,0.55,47.85\r
2026-11-02,21000000001,\"Printer help, US\",Enabled,990,\"10,002\",9.90%,USD,1.10,\"1,089.00\"\r
2026-11-02,21000000002,Email help,Enabled,20,415,4.82%,USD,0.60,12.00\r
Total: Account,--,--,--,\"2,301\",\"24,772\",9.29%,USD,1.04,\"2,388.97\"\r
Total: Search,--,--,--,\"2,301\",\"24,772\",9.29%,USD,1.04,\"2,388.97\"\r
";

const PRINTERS: &str = "21000000001";
const EMAIL: &str = "21000000002";

async fn admin_app() -> (TestApp, String) {
    let app = spawn_app_with(|settings| settings.admin.emails = vec![ADMIN.to_owned()]).await;
    let admin = verified_admin(&app, ADMIN).await;
    (app, admin)
}

/// The browser's upload: the file as the body, from this site's page.
async fn upload(app: &TestApp, cookie: &str, file: impl Into<reqwest::Body>) -> reqwest::Response {
    app.client
        .post(app.url("/api/admin/costs"))
        .header("cookie", cookie)
        .header("origin", "http://127.0.0.1:8080")
        .header("content-type", "text/csv")
        .body(file)
        .send()
        .await
        .expect("request reaches the server")
}

async fn uploaded(app: &TestApp, cookie: &str, file: &str) -> Value {
    let response = upload(app, cookie, file.to_owned()).await;
    let status = response.status();
    let body: Value = response.json().await.expect("json");
    assert_eq!(status, 200, "{body}");
    body
}

async fn refused(app: &TestApp, cookie: &str, file: &str) -> Value {
    let response = upload(app, cookie, file.to_owned()).await;
    let status = response.status();
    let body: Value = response.json().await.expect("json");
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"], "invalid_costs", "{body}");
    body
}

async fn november(app: &TestApp) -> Spending {
    let range = DayRange::parse("2026-11-01", "2026-11-30").expect("a range");
    spending(&app.db, &range, None).await.expect("spending")
}

fn spend(cost_cents: i64, clicks: u64) -> Spend {
    Spend { cost_cents, clicks }
}

fn campaigns(pairs: &[(&str, Spend)]) -> BTreeMap<String, Spend> {
    pairs
        .iter()
        .map(|(campaign, spend)| ((*campaign).to_owned(), *spend))
        .collect()
}

async fn loaded(app: &TestApp, cookie: &str) -> Value {
    let response = get_with_cookie(app, "/api/admin/costs", cookie).await;
    let status = response.status();
    let body: Value = response.json().await.expect("json");
    assert_eq!(status, 200, "{body}");
    body
}

#[tokio::test]
async fn a_campaign_report_as_google_ads_downloads_it_loads_and_sums_per_day_and_campaign() {
    let (app, admin) = admin_app().await;
    assert_eq!(
        loaded(&app, &admin).await,
        json!({"from": null, "to": null, "days": 0, "campaigns": 0, "cost_cents": 0})
    );

    let body = uploaded(&app, &admin, NOVEMBER).await;
    assert_eq!(
        body["message"],
        "Costs loaded for 2 campaigns from 2026-11-01 to 2026-11-30: $2,388.97."
    );
    assert_eq!(
        (
            &body["from"],
            &body["to"],
            &body["days"],
            &body["campaigns"],
            &body["rows"],
            &body["cost_cents"],
            &body["replaced"]
        ),
        (
            &json!("2026-11-01"),
            &json!("2026-11-30"),
            &json!(30),
            &json!(2),
            &json!(4),
            &json!(238_897),
            &json!(0)
        )
    );

    let costs = november(&app).await;
    assert_eq!(
        costs.campaigns,
        campaigns(&[
            (PRINTERS, spend(124_012 + 108_900, 1204 + 990)),
            (EMAIL, spend(4785 + 1200, 87 + 20)),
        ])
    );
    assert_eq!(
        costs.days,
        BTreeMap::from([
            ("2026-11-01".to_owned(), spend(124_012 + 4785, 1204 + 87)),
            ("2026-11-02".to_owned(), spend(108_900 + 1200, 990 + 20)),
        ])
    );
    assert!(costs.keywords.is_empty());
    // One campaign's costs, for its keywords' page.
    let range = DayRange::parse("2026-11-02", "2026-11-30").expect("a range");
    let email = spending(&app.db, &range, Some(EMAIL))
        .await
        .expect("spending");
    assert_eq!(email.campaigns, campaigns(&[(EMAIL, spend(1200, 20))]));

    assert_eq!(
        loaded(&app, &admin).await,
        json!({"from": "2026-11-01", "to": "2026-11-02", "days": 2, "campaigns": 2, "cost_cents": 238_897})
    );
}

#[tokio::test]
async fn the_same_report_uploaded_twice_counts_once() {
    let (app, admin) = admin_app().await;
    uploaded(&app, &admin, NOVEMBER).await;
    let once = november(&app).await;
    let again = uploaded(&app, &admin, NOVEMBER).await;
    assert_eq!(again["replaced"], 4, "{again}");
    assert_eq!(
        again["message"],
        "Costs loaded for 2 campaigns from 2026-11-01 to 2026-11-30: $2,388.97. They replace the costs loaded before for these days."
    );
    assert_eq!(november(&app).await, once);
    assert_eq!(loaded(&app, &admin).await["cost_cents"], 238_897);
}

#[tokio::test]
async fn a_report_of_some_days_replaces_those_days_only() {
    let (app, admin) = admin_app().await;
    uploaded(&app, &admin, NOVEMBER).await;
    // A corrected report of 2 November: the printers' cost changed, and the email campaign's row
    // is no longer there, so that day loses its old cost.
    let second = "Campaign report\n\
\"November 2, 2026 - November 2, 2026\"\n\
Day,Campaign ID,Campaign,Clicks,Currency code,Cost\n\
2026-11-02,21000000001,\"Printer help, US\",400,USD,500.00\n\
Total: Account,--,--,400,USD,500.00\n";
    let body = uploaded(&app, &admin, second).await;
    assert_eq!((&body["days"], &body["replaced"]), (&json!(1), &json!(2)));

    let costs = november(&app).await;
    assert_eq!(
        costs.campaigns,
        campaigns(&[
            (PRINTERS, spend(124_012 + 50_000, 1204 + 400)),
            (EMAIL, spend(4785, 87)),
        ])
    );
    assert_eq!(
        costs.days,
        BTreeMap::from([
            ("2026-11-01".to_owned(), spend(124_012 + 4785, 1204 + 87)),
            ("2026-11-02".to_owned(), spend(50_000, 400)),
        ])
    );
    assert_eq!(
        loaded(&app, &admin).await,
        json!({"from": "2026-11-01", "to": "2026-11-02", "days": 2, "campaigns": 2, "cost_cents": 124_012 + 4785 + 50_000})
    );
}

#[tokio::test]
async fn a_file_with_one_bad_amount_is_refused_whole_naming_its_row_and_column() {
    let (app, admin) = admin_app().await;
    // Nothing of a bad file is stored: not its good rows, and nothing loaded before is replaced.
    let bad = NOVEMBER.replace("0.60,12.00", "0.60,\"12,3x\"");
    let body = refused(&app, &admin, &bad).await;
    assert_eq!(
        body,
        json!({
            "error": "invalid_costs",
            "message": "Row 7, column Cost: \"12,3x\" is not an amount.",
            "row": 7,
            "column": "Cost",
        })
    );
    assert_eq!(november(&app).await, Spending::default());

    uploaded(&app, &admin, NOVEMBER).await;
    let before = november(&app).await;
    let bad = NOVEMBER
        .replace("1,089.00", "99.00")
        .replace("0.60,12.00", "0.60,\"12,3x\"");
    refused(&app, &admin, &bad).await;
    assert_eq!(november(&app).await, before);
    assert_eq!(loaded(&app, &admin).await["cost_cents"], 238_897);

    // A file without the cost column, and an empty one.
    let body = refused(
        &app,
        &admin,
        "Campaign report\n\"November 1, 2026 - November 30, 2026\"\nDay,Campaign ID,Clicks,Currency code\n2026-11-01,1,1,USD\n",
    )
    .await;
    assert_eq!(
        (&body["message"], &body["row"], &body["column"]),
        (
            &json!("Row 3: the file has no column Cost."),
            &json!(3),
            &json!("Cost")
        )
    );
    let body = refused(&app, &admin, "").await;
    assert_eq!(body["row"], Value::Null);
    assert_eq!(november(&app).await, before);
}

#[tokio::test]
async fn costs_in_another_currency_than_the_revenues_are_refused() {
    let (app, admin) = admin_app().await;
    let euros = NOVEMBER.replace("4.33%,USD", "4.33%,EUR");
    let body = refused(&app, &admin, &euros).await;
    assert_eq!(
        (&body["message"], &body["row"], &body["column"]),
        (
            &json!(
                "Row 5, column Currency code: costs must be in USD, the currency the revenue is counted in (found EUR)."
            ),
            &json!(5),
            &json!("Currency code")
        )
    );
    assert_eq!(november(&app).await, Spending::default());
}

#[tokio::test]
async fn a_file_over_5_mb_is_refused() {
    let (app, admin) = admin_app().await;
    let mut big = NOVEMBER.to_owned();
    while big.len() <= 5 * 1024 * 1024 {
        big.push_str("2026-11-03,21000000003,Filler,Enabled,1,1,1%,USD,1.00,1.00\n");
    }
    let response = upload(&app, &admin, big).await;
    assert_eq!(response.status(), 413);
    let body: Value = response.json().await.expect("json");
    assert_eq!(body["message"], "The file is too large: at most 5 MB.");
    assert_eq!(november(&app).await, Spending::default());
}

#[tokio::test]
async fn strangers_and_members_find_no_costs_endpoint() {
    let (app, admin) = admin_app().await;
    let member = sign_up(&app, "member@example.com", "secret1").await;
    for cookie in ["", member.as_str()] {
        assert_eq!(upload(&app, cookie, NOVEMBER).await.status(), 404);
        assert_eq!(
            get_with_cookie(&app, "/api/admin/costs", cookie)
                .await
                .status(),
            404
        );
    }
    // The admin's session, from another website, writes nothing.
    let response = app
        .client
        .post(app.url("/api/admin/costs"))
        .header("cookie", admin.as_str())
        .header("origin", "https://evil.example")
        .body(NOVEMBER)
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), 403);
    assert_eq!(november(&app).await, Spending::default());
}

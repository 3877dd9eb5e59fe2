//! The admin's accounts and held payments (issue 52): `me` says who is an admin, the delete form
//! finds the account first, the payments held for their owners are listed, sent again and
//! declined; and the live panel tells the offline helper's scripted replies from failures.

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use crate::auth::{error_of, me, sign_up};
use crate::billing::{
    confirm, count, pay, start_checkout, start_checkout_signed_in, verified_admin,
};
use crate::helpers::{TestApp, get_with_cookie, post_with_cookie, settled, spawn_app_with};

const ADMIN: &str = "ops@example.com";
const OWNER: &str = "owner@example.com";

async fn admin_app() -> TestApp {
    spawn_app_with(|settings| {
        settings.admin.emails = vec![ADMIN.to_owned(), "listed@example.com".to_owned()]
    })
    .await
}

async fn get_json(app: &TestApp, path: &str, cookie: &str) -> (u16, Value) {
    error_of(get_with_cookie(app, path, cookie).await).await
}

async fn post_json(app: &TestApp, path: &str, cookie: &str) -> (u16, Value) {
    error_of(post_with_cookie(app, path, cookie, &json!({})).await).await
}

async fn row(app: &TestApp, sql: &str) -> Value {
    let mut response = app.db.query(sql).await.expect("query");
    let rows: Vec<Value> = response.take(0).expect("rows");
    rows.into_iter().next().unwrap_or(Value::Null)
}

fn time(value: &Value) -> DateTime<Utc> {
    value
        .as_str()
        .and_then(|text| text.parse().ok())
        .unwrap_or_else(|| panic!("a time, not {value}"))
}

#[tokio::test]
async fn me_says_admin_only_for_a_listed_address_proved_by_its_password_holder() {
    let app = admin_app().await;
    let admin = verified_admin(&app, ADMIN).await;
    assert_eq!(me(&app, &admin).await["user"]["admin"], true);
    // Listed, but the password is the sign-up's: nobody proved the address.
    let listed = sign_up(&app, "listed@example.com", "secret1").await;
    assert_eq!(me(&app, &listed).await["user"]["admin"], false);
    let member = sign_up(&app, "ann@example.com", "secret1").await;
    assert_eq!(me(&app, &member).await["user"]["admin"], false);
    assert_eq!(me(&app, "").await["user"], Value::Null);
}

#[tokio::test]
async fn the_delete_form_finds_the_account_first_with_its_plan_and_since_when() {
    let app = admin_app().await;
    let admin = verified_admin(&app, ADMIN).await;
    let before = Utc::now();
    let member = sign_up(&app, "ann@example.com", "secret1").await;
    sign_up(&app, "bob@example.com", "secret1").await;

    let (status, bob) = get_json(&app, "/api/admin/accounts?email=BOB@Example.com", &admin).await;
    assert_eq!(status, 200, "{bob}");
    assert_eq!(
        bob,
        json!({
            "email": "bob@example.com", "createdAt": bob["createdAt"], "plan": "none",
            "planLabel": "No subscription", "trialEndDate": null, "currentPeriodEnd": null,
            "subscriptionStatus": null,
        })
    );
    let since = time(&bob["createdAt"]);
    assert!(since >= before - chrono::Duration::seconds(5) && since <= Utc::now());

    // Ann starts her trial.
    let started =
        start_checkout_signed_in(&app, &member, json!({"source": "chat_trial_prompt"})).await;
    pay(
        &app,
        started["sessionId"].as_str().expect("id"),
        "ann@example.com",
    )
    .await;
    let (status, ann) = get_json(&app, "/api/admin/accounts?email=ann@example.com", &admin).await;
    assert_eq!(status, 200, "{ann}");
    let trial_end = time(&ann["trialEndDate"]);
    assert_eq!(ann["plan"], "trial");
    assert_eq!(
        ann["planLabel"],
        format!("Free trial until {}", trial_end.format("%Y-%m-%d"))
    );
    assert_eq!(ann["subscriptionStatus"], "trialing");

    // The delete's own errors for the address.
    for (query, code, message) in [
        (
            "",
            "email_required",
            "Enter the email address of the account to delete.",
        ),
        (
            "?email=%20",
            "email_required",
            "Enter the email address of the account to delete.",
        ),
        (
            "?email=not-an-address",
            "invalid_email",
            "Please enter a valid email address.",
        ),
    ] {
        let (status, error) = get_json(&app, &format!("/api/admin/accounts{query}"), &admin).await;
        assert_eq!(
            (status, &error["error"], &error["message"]),
            (400, &json!(code), &json!(message)),
            "{query}"
        );
    }
    let (status, error) = get_json(&app, "/api/admin/accounts?email=cat@example.com", &admin).await;
    assert_eq!((status, &error["error"]), (404, &json!("user_not_found")));
    assert_eq!(
        error["message"],
        "No account found with the address cat@example.com."
    );

    // Nobody else learns which addresses have accounts.
    for cookie in [member.as_str(), ""] {
        let (status, _) = get_json(&app, "/api/admin/accounts?email=bob@example.com", cookie).await;
        assert_eq!(status, 404);
    }
}

/// The body of the newest mail about a held payment to `recipient`.
async fn held_mails_to(app: &TestApp, recipient: &str) -> Vec<String> {
    let mut response = app
        .db
        .query(
            "SELECT VALUE body FROM mail_outbox WHERE recipient = $to AND kind = 'payment_held' \
             ORDER BY created_at",
        )
        .bind(("to", recipient.to_owned()))
        .await
        .expect("query");
    response.take(0).expect("bodies")
}

#[tokio::test]
async fn an_admin_lists_reminds_and_declines_the_payments_held_for_their_owners() {
    let app = admin_app().await;
    let admin = verified_admin(&app, ADMIN).await;
    let stranger = sign_up(&app, "stranger@example.com", "secret1").await;
    sign_up(&app, OWNER, "original1").await;
    let (status, empty) = get_json(&app, "/api/admin/held", &admin).await;
    assert_eq!((status, empty), (200, json!({ "held": [] })));

    // Someone pays signed out with the owner's address: the payment is held for the owner.
    let started = start_checkout(&app, json!({"source": "chat_trial_prompt"})).await;
    let redirect = pay(&app, started["sessionId"].as_str().expect("id"), OWNER).await;
    let (answer, _) = confirm(&app, &started, &redirect).await;
    assert_eq!(answer["next"], "sign-in", "{answer}");
    let id = started["trackingSessionId"]
        .as_str()
        .expect("tracking")
        .to_owned();

    let (status, list) = get_json(&app, "/api/admin/held", &admin).await;
    assert_eq!(status, 200, "{list}");
    let held = &list["held"][0];
    assert_eq!(
        list,
        json!({ "held": [{
            "id": id, "email": OWNER, "paidAt": held["paidAt"], "expiresAt": held["expiresAt"],
            "setupFee": true,
        }]})
    );
    assert_eq!(
        time(&held["expiresAt"]) - time(&held["paidAt"]),
        chrono::Duration::days(helpnow::billing::HOLD_DAYS)
    );

    // Nobody else sees, reminds or declines it.
    for cookie in [stranger.as_str(), ""] {
        assert_eq!(get_json(&app, "/api/admin/held", cookie).await.0, 404);
        for action in ["remind", "decline"] {
            let path = format!("/api/admin/held/{id}/{action}");
            assert_eq!(post_json(&app, &path, cookie).await.0, 404, "{action}");
        }
    }
    // Nor does another site, through the admin's browser.
    let forged = app
        .client
        .post(app.url(&format!("/api/admin/held/{id}/decline")))
        .header("cookie", admin.clone())
        .header("origin", "https://evil.example")
        .json(&json!({}))
        .send()
        .await
        .expect("sent");
    assert_eq!(forged.status(), 403);
    assert_eq!(held_mails_to(&app, OWNER).await.len(), 1);
    assert_eq!(get_json(&app, "/api/admin/held", &admin).await.1, list);

    // The owner is mailed again: the same mail, with a new one-time link and the day the
    // payment stops waiting.
    let (status, reminded) = post_json(&app, &format!("/api/admin/held/{id}/remind"), &admin).await;
    assert_eq!(
        (status, reminded),
        (
            200,
            json!({ "message": "The owner was mailed again about this payment." })
        )
    );
    let mails = held_mails_to(&app, OWNER).await;
    assert_eq!(mails.len(), 2, "{mails:?}");
    let (first, again) = (&mails[0], &mails[1]);
    let (first_token, new_token) = (
        crate::helpers::sign_in_token_in(first),
        crate::helpers::sign_in_token_in(again),
    );
    assert_ne!(first_token, new_token);
    let until = time(&held["expiresAt"]).format("by %B %-d, %Y at %H:%M UTC");
    assert_eq!(
        *again,
        first
            .replace(&first_token, &new_token)
            .replace("within 3 days", &until.to_string()),
        "the mail sent when the payment was held, with a fresh link"
    );
    // The new link works once and proves the address: the owner sees the payment waiting.
    let owner = crate::takeover::prove_by_mailed_link(&app, OWNER, "owners-own1").await;
    let (_, waiting) = get_json(&app, "/api/billing/held", &owner).await;
    assert_eq!(waiting["held"][0]["id"], id.as_str(), "{waiting}");

    // The operator declines it: canceled at once and its fee refunded, as the owner's decline.
    let (status, declined) =
        post_json(&app, &format!("/api/admin/held/{id}/decline"), &admin).await;
    assert_eq!(
        (status, declined),
        (
            200,
            json!({ "message": "The payment was canceled and its setup fee refunded." })
        )
    );
    let checkout = row(
        &app,
        &format!(
            "SELECT status, declined_because, fee_refunded_at != NONE AS refunded, \
             subscription_id FROM checkout_session WHERE tracking_id = '{id}'"
        ),
    )
    .await;
    assert_eq!(checkout["status"], "declined");
    assert_eq!(checkout["declined_because"], "declined by the operator");
    assert_eq!(checkout["refunded"], true);
    let subscription = row(
        &app,
        &format!(
            "SELECT VALUE status FROM subscription WHERE id = subscription:⟨{}⟩",
            checkout["subscription_id"].as_str().expect("subscription")
        ),
    )
    .await;
    assert_eq!(subscription, "canceled");
    assert_eq!(
        get_json(&app, "/api/admin/held", &admin).await.1,
        empty_list()
    );
    assert_eq!(
        get_json(&app, "/api/billing/held", &owner).await.1,
        json!({ "held": [], "waitingForProof": false })
    );
    for action in ["remind", "decline"] {
        let (status, error) =
            post_json(&app, &format!("/api/admin/held/{id}/{action}"), &admin).await;
        assert_eq!(
            (status, &error["error"], &error["message"]),
            (
                404,
                &json!("not_held"),
                &json!("This payment is no longer waiting: it was added or canceled already.")
            ),
            "{action}"
        );
    }
    assert_eq!(
        held_mails_to(&app, OWNER).await.len(),
        2,
        "no mail for a payment not held"
    );
    assert_eq!(
        count(
            &app,
            "RETURN count(SELECT VALUE id FROM checkout_session WHERE status = 'held')"
        )
        .await,
        0
    );
}

fn empty_list() -> Value {
    json!({ "held": [] })
}

#[tokio::test]
async fn the_live_panel_counts_the_offline_helpers_scripted_replies_apart_from_failures() {
    let app = admin_app().await;
    let admin = verified_admin(&app, ADMIN).await;
    // The help funnel on the offline default: the summary is written from the visitor's words,
    // the intro is the script's (the offline helper declines it by design).
    let response = post_with_cookie(
        &app,
        "/api/funnels/help",
        "vid=visitor-ann-0000000001",
        &json!({"issue": "My printer says it is offline"}),
    )
    .await;
    assert_eq!(response.status(), 200);
    let live = settled(|| async { get_json(&app, "/api/admin/live", &admin).await.1 }).await;
    assert_eq!(
        (&live["aiCalls"], &live["aiFailures"], &live["aiScripted"]),
        (&json!(1), &json!(0), &json!(1)),
        "{live}"
    );
}

#[tokio::test]
async fn a_payment_held_for_an_account_deleted_since_is_still_listed_and_can_be_declined() {
    let app = admin_app().await;
    let admin = verified_admin(&app, ADMIN).await;
    sign_up(&app, OWNER, "original1").await;
    let started = start_checkout(&app, json!({"source": "chat_trial_prompt"})).await;
    let redirect = pay(&app, started["sessionId"].as_str().expect("id"), OWNER).await;
    confirm(&app, &started, &redirect).await;
    let id = started["trackingSessionId"].as_str().expect("tracking");
    let deleted = post_with_cookie(
        &app,
        "/api/admin/accounts/delete",
        &admin,
        &json!({"email": OWNER, "password": "secret2-new"}),
    )
    .await;
    assert_eq!(deleted.status(), 200);

    let (status, list) = get_json(&app, "/api/admin/held", &admin).await;
    assert_eq!(status, 200, "{list}");
    assert_eq!(list["held"][0]["id"], id);
    assert_eq!(
        list["held"][0]["email"], OWNER,
        "the address it was paid with"
    );
    // No sign-in link for an account that is gone; the payment is refunded all the same.
    let mails = held_mails_to(&app, OWNER).await.len();
    let (status, error) = post_json(&app, &format!("/api/admin/held/{id}/remind"), &admin).await;
    assert_eq!((status, &error["error"]), (404, &json!("not_held")));
    assert_eq!(held_mails_to(&app, OWNER).await.len(), mails, "no mail");
    assert_eq!(
        count(
            &app,
            "RETURN count(SELECT VALUE id FROM sign_in_token WHERE used = false)"
        )
        .await,
        0,
        "no link"
    );
    let (status, _) = post_json(&app, &format!("/api/admin/held/{id}/decline"), &admin).await;
    assert_eq!(status, 200);
    assert_eq!(
        get_json(&app, "/api/admin/held", &admin).await.1,
        empty_list()
    );
}

//! Proving an address takes the account (issue 46, item 1): the pre-hijack of Sudhodanan and
//! Paverd ("Pre-hijacked accounts", USENIX Security 2022) against an admin address, end to end.

use serde_json::{Value, json};

use crate::auth::{error_of, me, session_cookie, sign_up};
use crate::billing::{confirm, pay, start_checkout};
use crate::helpers::{TestApp, get_with_cookie, post_with_cookie, spawn_app_with};

const OWNER: &str = "boss@example.com";

/// The one-time sign-in link in the newest mail to `recipient` that carries one.
pub(crate) async fn mailed_sign_in_token(app: &TestApp, recipient: &str) -> String {
    let mut response = app
        .db
        .query(
            "SELECT VALUE body FROM mail_outbox WHERE recipient = $to AND body CONTAINS 'jwt=' \
             ORDER BY created_at DESC LIMIT 1",
        )
        .bind(("to", recipient.to_owned()))
        .await
        .expect("query");
    let bodies: Vec<String> = response.take(0).expect("bodies");
    let body = bodies
        .into_iter()
        .next()
        .expect("a mail with a sign-in link");
    crate::helpers::sign_in_token_in(&body)
}

/// The owner of `email` opens the link mailed to it and, where the proof took the account over,
/// chooses `password` (account setup) before going on: the owner's session cookie.
pub(crate) async fn prove_by_mailed_link(app: &TestApp, email: &str, password: &str) -> String {
    let token = mailed_sign_in_token(app, email).await;
    let response = app
        .post_json("/api/auth/token", &json!({ "token": token }))
        .await;
    assert_eq!(response.status(), 200);
    let (cookie, _) = session_cookie(&response);
    let body: Value = response.json().await.expect("json");
    if body["user"]["mustChoosePassword"] != true {
        return cookie;
    }
    let response = post_with_cookie(
        app,
        "/api/account/setup",
        &cookie,
        &json!({ "email": email, "password": password }),
    )
    .await;
    assert_eq!(response.status(), 200);
    session_cookie(&response).0
}

async fn status_of(app: &TestApp, path: &str, cookie: &str) -> u16 {
    get_with_cookie(app, path, cookie).await.status().as_u16()
}

async fn login(app: &TestApp, email: &str, password: &str) -> reqwest::Response {
    app.post_json(
        "/api/auth/login",
        &json!({ "email": email, "password": password }),
    )
    .await
}

#[tokio::test]
async fn a_stranger_who_signed_up_first_with_the_admins_address_loses_it_when_the_owner_proves_it()
{
    let app = spawn_app_with(|settings| settings.admin.emails = vec![OWNER.to_owned()]).await;

    // Before the operator has an account, a stranger signs up with the admin address...
    let stranger = sign_up(&app, OWNER, "strangers1").await;
    assert_eq!(
        status_of(&app, "/api/admin/dashboard", &stranger).await,
        404
    );
    // ...and pays signed out with it: the payment is held and the owner is mailed a link.
    let started = start_checkout(&app, json!({ "source": "chat_trial_prompt" })).await;
    let redirect = pay(&app, started["sessionId"].as_str().expect("id"), OWNER).await;
    let (answer, _) = confirm(&app, &started, &redirect).await;
    assert_eq!(answer["next"], "sign-in");
    assert_eq!(
        get_with_cookie(&app, "/api/billing/held", &stranger)
            .await
            .json::<Value>()
            .await
            .expect("json"),
        json!({ "held": [], "waitingForProof": true }),
        "a session that has not proved the address sees no payment held for it, only that one \
         waits for the mailed link"
    );

    // The owner clicks the link: the address is proved, and the proof takes the account.
    let token = mailed_sign_in_token(&app, OWNER).await;
    let response = app
        .post_json("/api/auth/token", &json!({ "token": token }))
        .await;
    assert_eq!(response.status(), 200);
    let (pending, _) = session_cookie(&response);
    let body: Value = response.json().await.expect("json");
    assert_eq!(body["user"]["mustChoosePassword"], true, "{body}");

    // The stranger's session is over, and the stranger's password with it.
    assert_eq!(me(&app, &stranger).await["user"], Value::Null);
    assert_eq!(
        status_of(&app, "/api/admin/dashboard", &stranger).await,
        404
    );
    assert_eq!(login(&app, OWNER, "strangers1").await.status(), 401);

    // Until the owner has chosen a password, the new session does nothing else.
    let who = me(&app, &pending).await;
    assert_eq!(who["user"]["mustChoosePassword"], true, "{who}");
    assert_eq!(status_of(&app, "/api/admin/dashboard", &pending).await, 404);
    let (code, error) = error_of(get_with_cookie(&app, "/api/tasks", &pending).await).await;
    assert_eq!(
        (code, error["error"].as_str()),
        (403, Some("choose_password"))
    );
    let (code, _) = error_of(get_with_cookie(&app, "/api/billing/held", &pending).await).await;
    assert_eq!(code, 403);
    let status: Value = get_with_cookie(&app, "/api/account/setup", &pending)
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(status["email"], OWNER);
    assert_eq!(status["hasPassword"], false);
    assert_eq!(status["mustChoosePassword"], true);

    // The owner chooses a password: now the owner is the admin, on this session and any other.
    let response = post_with_cookie(
        &app,
        "/api/account/setup",
        &pending,
        &json!({ "email": OWNER, "password": "owners-own1" }),
    )
    .await;
    assert_eq!(response.status(), 200);
    let (owner, _) = session_cookie(&response);
    assert_eq!(me(&app, &pending).await["user"], Value::Null, "it gave way");
    assert_eq!(status_of(&app, "/api/admin/dashboard", &owner).await, 200);
    assert_eq!(me(&app, &owner).await["user"]["mustChoosePassword"], false);
    let held: Value = get_with_cookie(&app, "/api/billing/held", &owner)
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(
        held["held"][0]["id"], started["trackingSessionId"],
        "the owner sees the payment held for the address: {held}"
    );
    let again = login(&app, OWNER, "owners-own1").await;
    assert_eq!(again.status(), 200);
    let (elsewhere, _) = session_cookie(&again);
    assert_eq!(
        status_of(&app, "/api/admin/dashboard", &elsewhere).await,
        200
    );

    // The stranger is left with nothing: no password, no session, no admin rights.
    assert_eq!(login(&app, OWNER, "strangers1").await.status(), 401);
    assert_eq!(
        status_of(&app, "/api/admin/dashboard", &stranger).await,
        404
    );
}

#[tokio::test]
async fn an_address_proved_while_someone_elses_password_stays_carries_no_admin_rights() {
    // The store of a build before the fix: the address proved, the password set before the proof
    // (by whoever signed up first), no mark of who chose it.
    let app = spawn_app_with(|settings| settings.admin.emails = vec![OWNER.to_owned()]).await;
    let stranger = sign_up(&app, OWNER, "strangers1").await;
    app.db
        .query("UPDATE user SET email_verified_at = time::now(), password_proved = NONE")
        .await
        .expect("query");
    assert_eq!(
        status_of(&app, "/api/admin/dashboard", &stranger).await,
        404
    );
    let again = login(&app, OWNER, "strangers1").await;
    assert_eq!(
        status_of(&app, "/api/admin/dashboard", &session_cookie(&again).0).await,
        404
    );
}

#[tokio::test]
async fn a_session_made_with_the_address_alone_ends_when_the_owner_proves_it() {
    // The access dialog's create mode: an account from an email alone, signed in at once.
    let app = spawn_app_with(|_| {}).await;
    let response = app
        .post_json(
            "/api/auth/signup",
            &json!({ "email": "member@example.com", "setPasswordByMail": true }),
        )
        .await;
    assert_eq!(response.status(), 201);
    let (stranger, _) = session_cookie(&response);
    // The owner later pays signed out, and opens the link of the mail that says so.
    let started = start_checkout(&app, json!({ "source": "chat_trial_prompt" })).await;
    let redirect = pay(
        &app,
        started["sessionId"].as_str().expect("id"),
        "member@example.com",
    )
    .await;
    confirm(&app, &started, &redirect).await;
    let owner = prove_by_mailed_link(&app, "member@example.com", "unused-here").await;
    assert_eq!(me(&app, &stranger).await["user"], Value::Null);
    let who = me(&app, &owner).await;
    assert_eq!(
        who["user"]["mustChoosePassword"], false,
        "no password to take: {who}"
    );
    let held: Value = get_with_cookie(&app, "/api/billing/held", &owner)
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(held["held"].as_array().map(Vec::len), Some(1), "{held}");
}

/// A stranger pays with someone's address (no account yet: the checkout makes one, without a
/// password) from a browser of the stranger's, and waits. Once the owner has opened the welcome
/// mail's link, the success page gives that browser no setup sign-in: the account is the
/// prover's. (A setup cookie handed out before the proof is spent by it: see above.)
#[tokio::test]
async fn once_the_owner_proved_the_address_the_browser_that_paid_gets_no_way_in() {
    let app = spawn_app_with(|_| {}).await;
    let victim = "victim@example.com";
    let started = start_checkout(&app, json!({ "source": "chat_trial_prompt" })).await;
    let redirect = pay(&app, started["sessionId"].as_str().expect("id"), victim).await;

    // The owner opens the welcome link: the account has no password, nothing to choose.
    let owner = prove_by_mailed_link(&app, victim, "unused-here").await;
    assert_eq!(me(&app, &owner).await["user"]["email"], victim);

    // Within the hour, the stranger's browser comes to the success page.
    let (_, cookie) = confirm(&app, &started, &redirect).await;
    assert_eq!(cookie, None, "no setup sign-in for the browser that paid");
    let setup = post_with_cookie(
        &app,
        "/api/account/setup",
        started["startCookie"].as_str().expect("cookie"),
        &json!({ "email": victim, "password": "strangers1" }),
    )
    .await;
    assert_ne!(setup.status(), 200, "no password set");
    assert_eq!(login(&app, victim, "strangers1").await.status(), 401);
}

/// The owner proves the address and chooses a password: every other session of the account ends
/// with it, also one made in a race with the proof.
#[tokio::test]
async fn a_password_chosen_after_the_proof_ends_every_other_session() {
    let app = spawn_app_with(|_| {}).await;
    let started = start_checkout(&app, json!({ "source": "chat_trial_prompt" })).await;
    let redirect = pay(
        &app,
        started["sessionId"].as_str().expect("id"),
        "owner@example.com",
    )
    .await;
    confirm(&app, &started, &redirect).await;
    let owner = prove_by_mailed_link(&app, "owner@example.com", "unused-here").await;
    let user_id = me(&app, &owner).await["user"]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    // A session that slipped in beside the owner's (a sign-in racing the proof, say).
    let other = helpnow::auth::token::new_secret();
    helpnow::store::sessions::create(
        &app.db,
        &user_id,
        helpnow::auth::token::hash_secret(&other),
        std::time::Duration::from_secs(3600),
        helpnow::store::sessions::SessionStart::default(),
    )
    .await
    .expect("a session");
    let other = format!("helpnow_session={other}");
    assert_eq!(me(&app, &other).await["user"]["email"], "owner@example.com");

    let response = post_with_cookie(
        &app,
        "/api/account/setup",
        &owner,
        &json!({ "email": "owner@example.com", "password": "owners-own1" }),
    )
    .await;
    assert_eq!(response.status(), 200);
    let (chosen, _) = session_cookie(&response);
    assert_eq!(
        me(&app, &other).await["user"],
        Value::Null,
        "the other session ended"
    );
    assert_eq!(
        me(&app, &chosen).await["user"]["email"],
        "owner@example.com"
    );
}

/// Someone sends a signed-in member their own mailed link: the member's browser is not switched
/// to the sender's account (where what the member typed would be the sender's to read).
#[tokio::test]
async fn a_link_for_another_account_does_not_switch_a_signed_in_browser() {
    let app = spawn_app_with(|_| {}).await;
    let member = sign_up(&app, "member@example.com", "members1").await;
    // The sender's own account, with a mailed link (a checkout paid with the sender's address).
    let started = start_checkout(&app, json!({ "source": "chat_trial_prompt" })).await;
    let redirect = pay(
        &app,
        started["sessionId"].as_str().expect("id"),
        "sender@example.com",
    )
    .await;
    confirm(&app, &started, &redirect).await;
    let token = mailed_sign_in_token(&app, "sender@example.com").await;

    let (status, error) = error_of(
        post_with_cookie(&app, "/api/auth/token", &member, &json!({ "token": token })).await,
    )
    .await;
    assert_eq!(
        (status, error["error"].as_str()),
        (409, Some("other_account"))
    );
    assert_eq!(
        me(&app, &member).await["user"]["email"],
        "member@example.com"
    );
    // The link is not spent: its owner can still use it.
    let response = app
        .post_json("/api/auth/token", &json!({ "token": token }))
        .await;
    assert_eq!(response.status(), 200);
}

//! The members' task list over HTTP: create, list newest first, add and check items, delete; the
//! spec's validation texts; owner isolation; visitors; concurrent checks; analytics.

use serde_json::{Value, json};

use crate::auth::{error_of, sign_up};
use crate::helpers::{TestApp, get_with_cookie, post_with_cookie, spawn_app};

async fn list(app: &TestApp, cookie: &str) -> Vec<Value> {
    let response = get_with_cookie(app, "/api/tasks", cookie).await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.expect("json");
    body["tasks"].as_array().expect("a task list").clone()
}

async fn create(app: &TestApp, cookie: &str, name: &str, items: &[&str]) -> Value {
    let response = post_with_cookie(
        app,
        "/api/tasks",
        cookie,
        &json!({"name": name, "items": items}),
    )
    .await;
    assert_eq!(response.status(), 201);
    let body: Value = response.json().await.expect("json");
    body["task"].clone()
}

async fn patch_item(
    app: &TestApp,
    cookie: &str,
    task_id: &str,
    item_id: &str,
    completed: bool,
) -> reqwest::Response {
    app.client
        .patch(app.url(&format!("/api/tasks/{task_id}/items/{item_id}")))
        .header("cookie", cookie)
        .json(&json!({ "completed": completed }))
        .send()
        .await
        .expect("request reaches the server")
}

async fn delete_task(app: &TestApp, cookie: &str, task_id: &str) -> reqwest::Response {
    app.client
        .delete(app.url(&format!("/api/tasks/{task_id}")))
        .header("cookie", cookie)
        .send()
        .await
        .expect("request reaches the server")
}

fn str_of<'a>(value: &'a Value, field: &str) -> &'a str {
    value[field].as_str().expect(field)
}

#[tokio::test]
async fn a_member_creates_lists_adds_checks_and_deletes_tasks() {
    let app = spawn_app().await;
    let cookie = sign_up(&app, "ann@example.com", "secret1").await;
    assert!(list(&app, &cookie).await.is_empty());

    let printer = create(
        &app,
        &cookie,
        "  Set up the printer ",
        &["Unbox it", "  ", "Plug it in", ""],
    )
    .await;
    assert_eq!(printer["name"], "Set up the printer");
    let items = printer["items"].as_array().expect("items");
    assert_eq!(items.len(), 2, "blank rows are dropped: {printer}");
    assert_eq!(items[0]["text"], "Unbox it");
    assert_eq!(items[0]["completed"], false);
    assert_ne!(items[0]["id"], items[1]["id"]);
    let timestamp = str_of(&printer, "timestamp");
    assert!(
        chrono::DateTime::parse_from_rfc3339(timestamp).is_ok() && timestamp.ends_with('Z'),
        "{timestamp}"
    );

    let mail = create(&app, &cookie, "Sort my email", &["Make folders"]).await;
    let tasks = list(&app, &cookie).await;
    let names: Vec<&str> = tasks.iter().map(|task| str_of(task, "name")).collect();
    assert_eq!(
        names,
        ["Sort my email", "Set up the printer"],
        "newest first"
    );

    let task_id = str_of(&printer, "id");
    let response = post_with_cookie(
        &app,
        &format!("/api/tasks/{task_id}/items"),
        &cookie,
        &json!({"text": " Print a test page "}),
    )
    .await;
    assert_eq!(response.status(), 201);
    let body: Value = response.json().await.expect("json");
    let items = body["task"]["items"].as_array().expect("items").clone();
    assert_eq!(items.len(), 3);
    assert_eq!(items[2]["text"], "Print a test page");

    let item_id = str_of(&items[1], "id");
    let response = patch_item(&app, &cookie, task_id, item_id, true).await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.expect("json");
    assert_eq!(body["task"]["items"][1]["completed"], true);
    assert_eq!(body["task"]["items"][0]["completed"], false);
    assert_eq!(body["task"]["items"][2]["completed"], false);

    let response = patch_item(&app, &cookie, task_id, item_id, false).await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.expect("json");
    assert_eq!(body["task"]["items"][1]["completed"], false);

    let response = delete_task(&app, &cookie, task_id).await;
    assert_eq!(response.status(), 204);
    let tasks = list(&app, &cookie).await;
    assert_eq!(tasks.len(), 1);
    assert_eq!(tasks[0]["id"], mail["id"]);
    let (status, body) = error_of(delete_task(&app, &cookie, task_id).await).await;
    assert_eq!((status, body["error"].as_str()), (404, Some("not_found")));
}

#[tokio::test]
async fn invalid_tasks_and_items_are_refused_in_plain_words() {
    let app = spawn_app().await;
    let cookie = sign_up(&app, "ann@example.com", "secret1").await;
    let cases = [
        (
            json!({"name": "  ", "items": ["One"]}),
            "name_required",
            "Please give the task a name.",
        ),
        (
            json!({"items": ["One"]}),
            "name_required",
            "Please give the task a name.",
        ),
        (
            json!({"name": "Printer", "items": ["", "   "]}),
            "items_required",
            "Please add at least one item.",
        ),
        (
            json!({"name": "Printer"}),
            "items_required",
            "Please add at least one item.",
        ),
        (
            json!({"name": "x".repeat(201), "items": ["One"]}),
            "name_too_long",
            "Please keep the task name to 200 characters or fewer.",
        ),
        (
            json!({"name": "Printer", "items": ["x".repeat(501)]}),
            "item_too_long",
            "Please keep each item to 500 characters or fewer.",
        ),
        (
            json!({"name": "Printer", "items": vec!["item"; 101]}),
            "too_many_items",
            "A task can hold up to 100 items.",
        ),
    ];
    for (body, code, message) in cases {
        let (status, error) =
            error_of(post_with_cookie(&app, "/api/tasks", &cookie, &body).await).await;
        assert_eq!(status, 400, "{body}");
        assert_eq!(error["error"], code, "{body}");
        assert_eq!(error["message"], message, "{body}");
    }
    assert!(list(&app, &cookie).await.is_empty());

    let task = create(&app, &cookie, "Printer", &["One"]).await;
    let task_id = str_of(&task, "id");
    let (status, error) = error_of(
        post_with_cookie(
            &app,
            &format!("/api/tasks/{task_id}/items"),
            &cookie,
            &json!({"text": "   "}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(error["error"], "item_required");
    assert_eq!(error["message"], "Please type the item first.");

    // A full task takes no more items.
    let full = create(&app, &cookie, "Full", &vec!["item"; 100]).await;
    let (status, error) = error_of(
        post_with_cookie(
            &app,
            &format!("/api/tasks/{}/items", str_of(&full, "id")),
            &cookie,
            &json!({"text": "one more"}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 409);
    assert_eq!(error["error"], "too_many_items");
}

#[tokio::test]
async fn another_members_task_is_not_found_on_every_endpoint() {
    let app = spawn_app().await;
    let ann = sign_up(&app, "ann@example.com", "secret1").await;
    let bob = sign_up(&app, "bob@example.com", "secret2").await;
    let task = create(&app, &ann, "Ann's private task", &["Secret item"]).await;
    let task_id = str_of(&task, "id");
    let item_id = str_of(&task["items"][0], "id");

    assert!(list(&app, &bob).await.is_empty(), "Bob sees none of Ann's");

    let answers = [
        post_with_cookie(
            &app,
            &format!("/api/tasks/{task_id}/items"),
            &bob,
            &json!({"text": "Bob was here"}),
        )
        .await,
        patch_item(&app, &bob, task_id, item_id, true).await,
        delete_task(&app, &bob, task_id).await,
    ];
    for response in answers {
        let (status, body) = error_of(response).await;
        assert_eq!(status, 404);
        assert_eq!(body["error"], "not_found");
        assert_eq!(body["message"], "Task not found.");
        assert!(!body.to_string().contains("Secret"), "{body}");
    }

    let tasks = list(&app, &ann).await;
    assert_eq!(tasks.len(), 1);
    assert_eq!(tasks[0], task, "Ann's task is unchanged");

    // Malformed and unknown ids are not found either, for the owner too.
    for bad in ["nosuchtask123", "task:abc", "a%20b", "x'y"] {
        let (status, body) = error_of(delete_task(&app, &ann, bad).await).await;
        assert_eq!(
            (status, body["error"].as_str()),
            (404, Some("not_found")),
            "{bad}"
        );
        let (status, _) = error_of(patch_item(&app, &ann, bad, item_id, true).await).await;
        assert_eq!(status, 404, "{bad}");
    }
    let (status, body) = error_of(patch_item(&app, &ann, task_id, "nosuchitem", true).await).await;
    assert_eq!(
        (status, body["message"].as_str()),
        (404, Some("Task not found."))
    );
    assert_eq!(list(&app, &ann).await[0], task);
}

#[tokio::test]
async fn visitors_are_asked_to_sign_in() {
    let app = spawn_app().await;
    let ann = sign_up(&app, "ann@example.com", "secret1").await;
    let task = create(&app, &ann, "Printer", &["One"]).await;
    let task_id = str_of(&task, "id");
    let item_id = str_of(&task["items"][0], "id");

    let responses = [
        app.get("/api/tasks").await,
        app.post_json("/api/tasks", &json!({"name": "X", "items": ["Y"]}))
            .await,
        app.post_json(
            &format!("/api/tasks/{task_id}/items"),
            &json!({"text": "Z"}),
        )
        .await,
        app.client
            .patch(app.url(&format!("/api/tasks/{task_id}/items/{item_id}")))
            .json(&json!({"completed": true}))
            .send()
            .await
            .expect("request reaches the server"),
        app.client
            .delete(app.url(&format!("/api/tasks/{task_id}")))
            .send()
            .await
            .expect("request reaches the server"),
        get_with_cookie(&app, "/api/tasks", "helpnow_session=forged").await,
    ];
    for response in responses {
        assert_eq!(response.status(), 401);
    }
    assert_eq!(list(&app, &ann).await, vec![task]);
}

#[tokio::test]
async fn twenty_concurrent_checks_on_one_task_all_land() {
    let app = spawn_app().await;
    let cookie = sign_up(&app, "ann@example.com", "secret1").await;
    let texts: Vec<String> = (1..=20).map(|n| format!("Step {n}")).collect();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let task = create(&app, &cookie, "Many steps", &texts).await;
    let task_id = str_of(&task, "id").to_owned();
    let item_ids: Vec<String> = task["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|item| str_of(item, "id").to_owned())
        .collect();

    let checks = item_ids
        .iter()
        .map(|item_id| patch_item(&app, &cookie, &task_id, item_id, true));
    for response in futures_util::future::join_all(checks).await {
        assert_eq!(response.status(), 200);
    }

    let tasks = list(&app, &cookie).await;
    let items = tasks[0]["items"].as_array().expect("items");
    assert_eq!(items.len(), 20);
    assert!(
        items.iter().all(|item| item["completed"] == true),
        "{items:?}"
    );
    assert_eq!(
        helpnow::store::analytics::count_named(&app.db, "task_completed")
            .await
            .expect("count"),
        20
    );
}

#[tokio::test]
async fn adding_and_completing_are_recorded_as_analytics_events() {
    let app = spawn_app().await;
    let cookie = sign_up(&app, "ann@example.com", "secret1").await;
    let task = create(&app, &cookie, "Printer", &["One", "Two", "Three"]).await;
    let task_id = str_of(&task, "id");
    let item_id = str_of(&task["items"][0], "id");

    let count = |name: &'static str| {
        let db = app.db.clone();
        async move {
            helpnow::store::analytics::count_named(&db, name)
                .await
                .expect("count")
        }
    };
    assert_eq!(count("task_added").await, 1);
    assert_eq!(count("task_completed").await, 0);

    let mut response = app
        .db
        .query("SELECT VALUE properties.items FROM analytics_event WHERE name = 'task_added'")
        .await
        .expect("query");
    let sizes: Vec<i64> = response.take(0).expect("sizes");
    assert_eq!(sizes, [3]);

    assert_eq!(
        patch_item(&app, &cookie, task_id, item_id, true)
            .await
            .status(),
        200
    );
    assert_eq!(count("task_completed").await, 1);
    // Checking a completed item again, or unchecking it, completes nothing.
    assert_eq!(
        patch_item(&app, &cookie, task_id, item_id, true)
            .await
            .status(),
        200
    );
    assert_eq!(
        patch_item(&app, &cookie, task_id, item_id, false)
            .await
            .status(),
        200
    );
    assert_eq!(count("task_completed").await, 1);
    // A failed creation records nothing.
    let response = post_with_cookie(
        &app,
        "/api/tasks",
        &cookie,
        &json!({"name": "", "items": ["x"]}),
    )
    .await;
    assert_eq!(response.status(), 400);
    assert_eq!(count("task_added").await, 1);
}

#[tokio::test]
async fn a_member_keeps_at_most_500_tasks() {
    let app = spawn_app().await;
    let cookie = sign_up(&app, "ann@example.com", "secret1").await;
    let user_id = crate::auth::me(&app, &cookie).await["user"]["id"]
        .as_str()
        .expect("user id")
        .to_owned();
    app.db
        .query(
            "FOR $n IN 1..500 { CREATE task CONTENT { user: type::record('user', $user), \
             name: 'Old task', items: [{ id: 'a1', text: 'Item', completed: false }] } };",
        )
        .bind(("user", user_id))
        .await
        .expect("query")
        .check()
        .expect("499 tasks stored");
    create(&app, &cookie, "Task 500", &["Item"]).await;

    let response = post_with_cookie(
        &app,
        "/api/tasks",
        &cookie,
        &json!({"name": "Task 501", "items": ["Item"]}),
    )
    .await;
    let (status, body) = error_of(response).await;
    assert_eq!(status, 409);
    assert_eq!(body["error"], "too_many_tasks");
    assert_eq!(
        body["message"],
        "You can keep up to 500 tasks. Please delete a task you no longer need first."
    );
    assert_eq!(list(&app, &cookie).await.len(), 500);
}

use crate::helpers::spawn_app;

#[tokio::test]
async fn public_config_names_the_product_and_holds_no_secret() {
    let app = crate::helpers::spawn_app_with(|settings| {
        settings.product.name = "FixIt".to_owned();
        settings.ai.api_key = Some("sk-test-secret".to_owned().into());
    })
    .await;
    let response = app.get("/api/public-config").await;
    assert_eq!(response.status(), 200);
    let text = response.text().await.expect("text");
    assert!(!text.contains("sk-test-secret"));
    let body: serde_json::Value = serde_json::from_str(&text).expect("json");
    assert_eq!(body["productName"], "FixIt");
    assert_eq!(body["assistantName"], "Emma");
    assert_eq!(body["debugTools"], true);
    // No AI service configured: members' answers come from the help library.
    assert_eq!(body["aiMode"], "offline");
}

#[tokio::test]
async fn the_four_legal_texts_are_served_with_the_product_name() {
    let app = spawn_app().await;
    for (slug, title) in [
        ("privacy", "Privacy Policy"),
        ("terms", "Terms & Conditions"),
        ("refund", "Refund Policy"),
        ("contact", "Contact Us"),
    ] {
        let response = app.get(&format!("/api/legal/{slug}")).await;
        assert_eq!(response.status(), 200, "{slug}");
        let body: serde_json::Value = response.json().await.expect("json");
        assert_eq!(body["title"], title);
        let text = body["body"].as_str().expect("markdown body");
        assert!(text.contains("4 May 2025"), "{slug}");
        assert!(!text.contains("{{"), "{slug} has an unfilled placeholder");
    }
    assert_eq!(app.get("/api/legal/cookies").await.status(), 404);
}

#[tokio::test]
async fn the_shortcut_list_holds_24_sites() {
    let app = spawn_app().await;
    let body: serde_json::Value = app.get("/api/shortcuts").await.json().await.expect("json");
    let shortcuts = body["shortcuts"].as_array().expect("a list");
    assert_eq!(shortcuts.len(), 24);
    assert_eq!(shortcuts[0]["name"], "Yahoo Mail");
    assert_eq!(shortcuts[0]["icon"], "/icons/yahoo-mail.svg");
    assert_eq!(shortcuts[23]["name"], "Viber");
}

//! The AI providers against a mock of OpenAI's chat-completions API.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use helpnow::ai::{
    Ai, AiError, AiMessage, AiPurpose, AiRequest, AiSetupError, OpenAiCompatible, provider,
};
use helpnow::config::AiProviderKind;
use tracing::instrument::WithSubscriber;

use crate::ai_mock::{self, API_KEY, DEFAULT_REPLY, MODEL, MockAi};

fn request(purpose: AiPurpose, messages: Vec<AiMessage>) -> AiRequest {
    AiRequest {
        purpose,
        messages,
        timeout: Duration::from_secs(5),
    }
}

fn member_chat(text: &str) -> AiRequest {
    request(AiPurpose::MemberChat, vec![AiMessage::user(text)])
}

fn openai(mock: &MockAi) -> OpenAiCompatible {
    OpenAiCompatible::new(&mock.settings()).expect("the provider builds")
}

/// Everything logged while `future` runs, as plain text.
async fn logs_of<T>(future: impl Future<Output = T>) -> (T, String) {
    #[derive(Clone)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);
    impl Write for Buffer {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().expect("log buffer").extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let buffer = Buffer(Arc::default());
    let writer = buffer.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::TRACE)
        .finish();
    let output = future.with_subscriber(subscriber).await;
    let logs = String::from_utf8(buffer.0.lock().expect("log buffer").clone()).expect("utf-8");
    (output, logs)
}

#[tokio::test]
async fn a_completion_request_has_openais_shape_and_returns_the_first_choice() {
    let mock = MockAi::start().await;
    mock.reply_with("Sorry to hear that. What have you tried so far?");

    let answer = openai(&mock)
        .complete(request(
            AiPurpose::FunnelFollowUp,
            vec![
                AiMessage::system("You are Emma, a friendly helper."),
                AiMessage::user("My printer will not print."),
                AiMessage::assistant("Which printer is it?"),
                AiMessage::user("An HP LaserJet."),
            ],
        ))
        .await;

    assert_eq!(
        answer.as_deref(),
        Ok("Sorry to hear that. What have you tried so far?")
    );
    let requests = mock.requests();
    assert_eq!(requests.len(), 1);
    let sent = &requests[0];
    assert_eq!(sent.method, "POST");
    assert_eq!(sent.path, "/v1/chat/completions");
    assert_eq!(
        sent.authorization.as_deref(),
        Some(format!("Bearer {API_KEY}").as_str())
    );
    assert_eq!(sent.body["model"], MODEL);
    let temperature = sent.body["temperature"].as_f64().expect("a temperature");
    assert!((temperature - 0.7).abs() < 1e-9, "{temperature}");
    assert_eq!(sent.roles(), ["system", "user", "assistant", "user"]);
    assert_eq!(
        sent.contents(),
        [
            "You are Emma, a friendly helper.",
            "My printer will not print.",
            "Which printer is it?",
            "An HP LaserJet.",
        ]
    );
    assert!(
        !sent.body["stream"].as_bool().unwrap_or(false),
        "one answer, not a stream"
    );
}

#[tokio::test]
async fn a_trailing_slash_on_the_base_url_is_tolerated() {
    let mock = MockAi::start().await;
    let mut settings = mock.settings();
    settings.base_url = Some(format!("{}/", mock.base_url()));
    let provider = OpenAiCompatible::new(&settings).expect("the provider builds");

    let answer = provider.complete(member_chat("Hello")).await;

    assert_eq!(answer.as_deref(), Ok(DEFAULT_REPLY));
    assert_eq!(mock.requests()[0].path, "/v1/chat/completions");
}

#[tokio::test]
async fn calls_reuse_one_pooled_connection() {
    let mock = MockAi::start().await;
    let provider = openai(&mock);
    let copy = provider.clone();

    provider
        .complete(member_chat("one"))
        .await
        .expect("an answer");
    copy.complete(member_chat("two")).await.expect("an answer");

    let peers: Vec<_> = mock
        .requests()
        .iter()
        .map(|request| request.peer.expect("a peer address"))
        .collect();
    assert_eq!(peers.len(), 2);
    assert_eq!(peers[0], peers[1], "the second call reuses the connection");
}

#[tokio::test]
async fn a_refused_key_is_unauthorized_and_logged_as_a_key_problem_without_the_key() {
    let mock = MockAi::start().await;
    let wrong_key = "sk-wrong-helpnow-key-that-must-stay-secret-4321";
    let mut settings = mock.settings();
    settings.api_key = Some(wrong_key.to_owned().into());
    let provider = OpenAiCompatible::new(&settings).expect("the provider builds");

    let (answer, logs) = logs_of(provider.complete(member_chat("Hello"))).await;

    assert_eq!(answer, Err(AiError::Unauthorized));
    assert!(logs.contains("ERROR"), "{logs}");
    assert!(logs.contains("API key"), "{logs}");
    assert!(!logs.contains(wrong_key), "{logs}");
    // OpenAI's 401 message quotes the key's start and end; none of it is logged.
    assert!(!logs.contains("sk-wrong"), "{logs}");
}

#[tokio::test]
async fn a_rate_limit_says_when_to_retry() {
    let mock = MockAi::start().await;
    let provider = openai(&mock);

    mock.rate_limit(Some(20));
    assert_eq!(
        provider.complete(member_chat("Hello")).await,
        Err(AiError::RateLimited {
            retry_after: Duration::from_secs(20)
        })
    );

    mock.rate_limit(None);
    assert_eq!(
        provider.complete(member_chat("Hello")).await,
        Err(AiError::RateLimited {
            retry_after: Duration::from_secs(30)
        }),
        "without Retry-After, 30 s"
    );
}

#[tokio::test]
async fn a_server_error_fails_with_its_status_and_logs_the_providers_message() {
    let mock = MockAi::start().await;
    mock.fail_with(
        500,
        ai_mock::error_body(
            "The server had an error while processing your request. Sorry about that!",
            "server_error",
            None,
        ),
    );

    let (answer, logs) = logs_of(openai(&mock).complete(member_chat("Hello"))).await;

    assert_eq!(answer, Err(AiError::Failed("status 500".to_owned())));
    assert!(
        logs.contains("The server had an error while processing your request"),
        "{logs}"
    );
}

#[tokio::test]
async fn malformed_json_is_an_unexpected_response() {
    let mock = MockAi::start().await;
    let provider = openai(&mock);

    mock.malformed(r#"{"id":"chatcmpl-x","choices":[{"index":0,"message":"#);
    assert!(matches!(
        provider.complete(member_chat("Hello")).await,
        Err(AiError::UnexpectedResponse(_))
    ));

    mock.malformed(r#"{"object":"chat.completion","choices":[]}"#);
    assert!(matches!(
        provider.complete(member_chat("Hello")).await,
        Err(AiError::UnexpectedResponse(_))
    ));
}

#[tokio::test]
async fn a_slow_provider_times_out_at_the_requests_deadline() {
    let mock = MockAi::start().await;
    mock.delay(Duration::from_secs(2));
    let mut slow = member_chat("Hello");
    slow.timeout = Duration::from_millis(200);

    let started = Instant::now();
    let answer = openai(&mock).complete(slow).await;

    assert_eq!(answer, Err(AiError::Timeout));
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "gave up after {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn an_unreachable_provider_fails() {
    // A port that was free a moment ago: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("a free port")
        .local_addr()
        .expect("local address")
        .port();
    let mock = MockAi::start().await;
    let mut settings = mock.settings();
    settings.base_url = Some(format!("http://127.0.0.1:{port}/v1"));
    let provider = OpenAiCompatible::new(&settings).expect("the provider builds");

    assert!(matches!(
        provider.complete(member_chat("Hello")).await,
        Err(AiError::Failed(_))
    ));
}

#[tokio::test]
async fn the_key_never_appears_in_debug_output() {
    let mock = MockAi::start().await;
    let provider = openai(&mock);

    for debug in [format!("{provider:?}"), format!("{provider:#?}")] {
        assert!(!debug.contains(API_KEY), "{debug}");
        assert!(debug.contains(MODEL), "the rest is still shown: {debug}");
    }
}

#[tokio::test]
async fn the_settings_choose_the_provider() {
    let mock = MockAi::start().await;

    let online = provider(&mock.settings()).expect("the OpenAI provider builds");
    assert_eq!(
        online.complete(member_chat("Hello")).await.as_deref(),
        Ok(DEFAULT_REPLY)
    );
    assert_eq!(mock.requests().len(), 1);

    let mut settings = mock.settings();
    settings.provider = AiProviderKind::Offline;
    let offline = provider(&settings).expect("the offline provider builds");
    assert_eq!(
        offline
            .complete(request(
                AiPurpose::IssueSummary,
                vec![AiMessage::user(
                    "my scanner is not detected. i use windows 11"
                )],
            ))
            .await
            .as_deref(),
        Ok("My scanner is not detected")
    );
    assert_eq!(
        offline.complete(member_chat("Hello")).await,
        Err(AiError::Offline)
    );
    assert_eq!(
        mock.requests().len(),
        1,
        "the offline provider calls no one"
    );
}

#[tokio::test]
async fn the_openai_provider_needs_a_key_and_a_usable_base_url() {
    let mock = MockAi::start().await;

    let mut settings = mock.settings();
    settings.api_key = None;
    assert!(matches!(
        provider(&settings),
        Err(AiSetupError::Missing("ai.api_key"))
    ));

    let mut settings = mock.settings();
    settings.base_url = Some("  ".to_owned());
    assert!(matches!(
        provider(&settings),
        Err(AiSetupError::Missing("ai.base_url"))
    ));

    for url in ["api.openai.com/v1", "ftp://api.openai.com/v1"] {
        let mut settings = mock.settings();
        settings.base_url = Some(url.to_owned());
        assert!(
            matches!(provider(&settings), Err(AiSetupError::InvalidBaseUrl(_))),
            "{url}"
        );
    }
}

//! The AI providers against a mock of OpenAI's chat-completions API.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use helpnow::ai::library::{HelpLibrary, STAND_IN_NOTE};
use helpnow::ai::{
    Ai, AiError, AiMessage, AiPurpose, AiRequest, AiSetupError, OpenAiCompatible, provider,
};
use helpnow::config::AiProviderKind;
use tracing::instrument::WithSubscriber;

use crate::ai_mock::{self, API_KEY, DEFAULT_REPLY, MODEL, MockAi};
use crate::helpers::project_root;

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

    let online =
        provider(&mock.settings(), library(), |ai| ai).expect("the OpenAI provider builds");
    assert_eq!(
        online.complete(member_chat("Hello")).await.as_deref(),
        Ok(DEFAULT_REPLY)
    );
    assert_eq!(mock.requests().len(), 1);

    let mut settings = mock.settings();
    settings.provider = AiProviderKind::Offline;
    let offline = provider(&settings, library(), |ai| ai).expect("the offline provider builds");
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
    // Members get the help library's guide, title first (the chat shows the offline notice).
    let guide = offline
        .complete(member_chat("my printer says offline"))
        .await
        .expect("a guide");
    assert!(guide.starts_with("**Printer says offline"), "{guide}");
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
        provider(&settings, library(), |ai| ai),
        Err(AiSetupError::Missing("ai.api_key"))
    ));

    let mut settings = mock.settings();
    settings.base_url = Some("  ".to_owned());
    assert!(matches!(
        provider(&settings, library(), |ai| ai),
        Err(AiSetupError::Missing("ai.base_url"))
    ));

    for url in ["api.openai.com/v1", "ftp://api.openai.com/v1"] {
        let mut settings = mock.settings();
        settings.base_url = Some(url.to_owned());
        assert!(
            matches!(
                provider(&settings, library(), |ai| ai),
                Err(AiSetupError::InvalidBaseUrl(_))
            ),
            "{url}"
        );
    }
}

/// Every item of a streamed reply, in order.
async fn stream_items(provider: &impl Ai, request: AiRequest) -> Vec<Result<String, AiError>> {
    provider.stream(request).collect().await
}

#[tokio::test]
async fn a_streamed_reply_comes_in_pieces_that_join_into_the_reply() {
    let mock = MockAi::start().await;

    let items = stream_items(&openai(&mock), member_chat("My printer will not print.")).await;

    let pieces: Vec<String> = items
        .into_iter()
        .collect::<Result<_, _>>()
        .expect("every piece arrives");
    assert!(pieces.len() > 3, "word by word, not at once: {pieces:?}");
    assert!(pieces.iter().all(|piece| !piece.is_empty()), "{pieces:?}");
    assert_eq!(pieces.concat(), DEFAULT_REPLY);
    let sent = &mock.requests()[0];
    assert_eq!(sent.body["stream"], true);
    assert_eq!(sent.body["model"], MODEL);
    assert_eq!(sent.contents(), ["My printer will not print."]);
    assert!(!mock.stream_cancelled(), "the reply was read to its end");
}

#[tokio::test]
async fn a_provider_that_ignores_stream_gives_its_reply_in_one_piece() {
    let mock = MockAi::start().await;
    mock.malformed(
        r#"{"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"All at once."},"finish_reason":"stop"}]}"#,
    );

    let items = stream_items(&openai(&mock), member_chat("Hello")).await;

    assert_eq!(items, [Ok("All at once.".to_owned())]);
}

#[tokio::test]
async fn a_stream_refused_before_its_first_piece_is_one_error_like_a_completion() {
    let mock = MockAi::start().await;
    let wrong_key = "sk-wrong-helpnow-key-that-must-stay-secret-4321";
    let mut settings = mock.settings();
    settings.api_key = Some(wrong_key.to_owned().into());
    let refused = OpenAiCompatible::new(&settings).expect("the provider builds");

    let (items, logs) = logs_of(stream_items(&refused, member_chat("Hello"))).await;
    assert_eq!(items, [Err(AiError::Unauthorized)]);
    assert!(logs.contains("ERROR") && logs.contains("API key"), "{logs}");
    assert!(!logs.contains("sk-wrong"), "{logs}");

    let provider = openai(&mock);
    mock.rate_limit(Some(20));
    assert_eq!(
        stream_items(&provider, member_chat("Hello")).await,
        [Err(AiError::RateLimited {
            retry_after: Duration::from_secs(20)
        })]
    );

    mock.fail_with(
        500,
        ai_mock::error_body("The server had an error.", "server_error", None),
    );
    assert_eq!(
        stream_items(&provider, member_chat("Hello")).await,
        [Err(AiError::Failed("status 500".to_owned()))]
    );
}

#[tokio::test]
async fn an_error_event_mid_stream_ends_it_with_an_error_after_the_pieces_so_far() {
    let mock = MockAi::start().await;
    mock.stream_error_after(
        2,
        ai_mock::error_body(
            "The server had an error while processing your request.",
            "server_error",
            None,
        ),
    );

    let (items, logs) = logs_of(stream_items(&openai(&mock), member_chat("Hello"))).await;

    assert_eq!(items.len(), 3, "{items:?}");
    assert_eq!(items[0].as_deref(), Ok("I "));
    assert_eq!(items[1].as_deref(), Ok("understand "));
    assert!(
        matches!(&items[2], Err(AiError::Failed(text)) if text.contains("while processing")),
        "{items:?}"
    );
    assert!(logs.contains("while processing your request"), "{logs}");
}

#[tokio::test]
async fn a_stream_that_ends_without_done_ends_with_an_error() {
    let mock = MockAi::start().await;
    mock.stream_cut_after(3);

    let items = stream_items(&openai(&mock), member_chat("Hello")).await;

    assert_eq!(items.len(), 4, "{items:?}");
    assert!(items[..3].iter().all(Result::is_ok), "{items:?}");
    assert!(matches!(items[3], Err(AiError::Failed(_))), "{items:?}");
}

#[tokio::test]
async fn a_stream_that_stalls_before_its_first_piece_times_out() {
    let mock = MockAi::start().await;
    mock.stream_stall(0, Duration::from_secs(3));
    let mut slow = member_chat("Hello");
    slow.timeout = Duration::from_millis(300);

    let started = Instant::now();
    let items = stream_items(&openai(&mock), slow).await;

    assert_eq!(items, [Err(AiError::Timeout)]);
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn the_time_out_bounds_each_gap_between_pieces_not_the_whole_reply() {
    let mock = MockAi::start().await;
    let provider = openai(&mock);
    let mut request = member_chat("Hello");
    request.timeout = Duration::from_millis(400);

    // Twelve words at 100 ms each take longer than the time-out, but no gap does.
    mock.stream_delay(Duration::from_millis(100));
    let started = Instant::now();
    let items = stream_items(&provider, request.clone()).await;
    assert!(started.elapsed() > request.timeout);
    let reply: String = items
        .into_iter()
        .collect::<Result<_, _>>()
        .expect("a steady stream is not cut off");
    assert_eq!(reply, DEFAULT_REPLY);

    // One gap longer than the time-out ends the stream after the pieces so far.
    mock.stream_delay(Duration::ZERO);
    mock.stream_stall(2, Duration::from_secs(3));
    let started = Instant::now();
    let items = stream_items(&provider, request).await;
    assert_eq!(
        items,
        [
            Ok("I ".to_owned()),
            Ok("understand ".to_owned()),
            Err(AiError::Timeout)
        ]
    );
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn dropping_the_stream_hangs_up_on_the_provider() {
    let mock = MockAi::start().await;
    mock.stream_delay(Duration::from_millis(100));
    let mut stream = openai(&mock).stream(member_chat("Hello"));

    let first = stream.next().await.expect("a first piece");
    assert_eq!(first.as_deref(), Ok("I "));
    assert!(!mock.stream_cancelled());

    // What the Stop button does.
    drop(stream);

    let deadline = Instant::now() + Duration::from_secs(5);
    while !mock.stream_cancelled() {
        assert!(
            Instant::now() < deadline,
            "the provider is still sending the reply"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn the_openai_provider_backs_off_after_a_rate_limit() {
    let mock = MockAi::start().await;
    let provider =
        provider(&mock.settings(), library(), |ai| ai).expect("the OpenAI provider builds");
    mock.rate_limit(Some(5));

    // A funnel reply: the offline provider has none, so the service's own answer shows.
    let follow_up = || request(AiPurpose::FunnelFollowUp, vec![AiMessage::user("Hello")]);
    assert_eq!(
        provider.complete(follow_up()).await,
        Err(AiError::RateLimited {
            retry_after: Duration::from_secs(5)
        })
    );
    mock.reply_with("Back again.");
    for refused in [
        provider.complete(follow_up()).await,
        provider.stream(follow_up()).next().await.expect("an item"),
    ] {
        match refused {
            Err(AiError::RateLimited { retry_after }) => assert!(
                retry_after > Duration::from_secs(25) && retry_after <= Duration::from_secs(30),
                "the spec's first backoff, 30 s, not the provider's 5 s: {retry_after:?}"
            ),
            other => panic!("refused during the backoff, got {other:?}"),
        }
    }
    assert_eq!(
        mock.requests().len(),
        1,
        "refused calls never reach the provider"
    );
    // A member meanwhile gets the help library's guide instead of an error.
    let guide = provider
        .complete(member_chat("my printer says offline"))
        .await
        .expect("the offline guide");
    assert!(guide.starts_with(STAND_IN_NOTE), "{guide}");
    assert!(guide.contains("Printer"), "{guide}");
    assert_eq!(mock.requests().len(), 1);
}

/// The project's help library, as the server loads it.
fn library() -> std::sync::Arc<HelpLibrary> {
    std::sync::Arc::new(
        HelpLibrary::load(&project_root().join("config/help-library"))
            .expect("the help library loads"),
    )
}

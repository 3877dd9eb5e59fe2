//! Any OpenAI-compatible chat-completion API (OpenAI itself, Azure-style gateways, local servers
//! such as Ollama or vLLM): `POST {base_url}/chat/completions`, Bearer auth, one non-streamed
//! answer.

use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use reqwest::StatusCode;
use reqwest::header::RETRY_AFTER;
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};

use super::{Ai, AiError, AiMessage, AiRequest, AiSetupError};
use crate::config::AiSettings;

/// How long to wait after a 429 that does not say (OpenAI normally sends `Retry-After`).
const DEFAULT_RETRY_AFTER: Duration = Duration::from_secs(30);

/// Calls an OpenAI-compatible chat-completion API. Cloning is cheap and shares the connection
/// pool. The API key is a [`SecretString`]: `Debug` prints it redacted, and it is only exposed
/// to set the `Authorization` header, which reqwest marks sensitive.
#[derive(Debug, Clone)]
pub struct OpenAiCompatible {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// One client for the provider's lifetime, so calls reuse pooled connections.
    client: reqwest::Client,
    /// `{base_url}/chat/completions`.
    endpoint: String,
    api_key: SecretString,
    model: String,
    temperature: f32,
}

impl OpenAiCompatible {
    pub fn new(settings: &AiSettings) -> Result<Self, AiSetupError> {
        let api_key = settings
            .api_key
            .clone()
            .filter(|key| !key.expose_secret().trim().is_empty())
            .ok_or(AiSetupError::Missing("ai.api_key"))?;
        let base_url = settings
            .base_url
            .as_deref()
            .map(str::trim)
            .filter(|url| !url.is_empty())
            .ok_or(AiSetupError::Missing("ai.base_url"))?;
        let parsed = url::Url::parse(base_url)
            .map_err(|err| AiSetupError::InvalidBaseUrl(format!("{base_url:?}: {err}")))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(AiSetupError::InvalidBaseUrl(format!("{base_url:?}")));
        }
        let client = reqwest::Client::builder()
            .tls_backend_preconfigured(tls_config()?)
            .build()
            .map_err(AiSetupError::Client)?;
        Ok(Self {
            inner: Arc::new(Inner {
                client,
                endpoint: format!("{}/chat/completions", base_url.trim_end_matches('/')),
                api_key,
                model: settings.model.clone(),
                temperature: settings.temperature,
            }),
        })
    }
}

/// rustls with ring and Mozilla's root certificates: the same roots on every machine, so a
/// fresh container without system certificates still reaches the provider. The crypto provider is passed explicitly: both ring and aws-lc are compiled in, so rustls
/// could not pick one by itself.
fn tls_config() -> Result<rustls::ClientConfig, AiSetupError> {
    let roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(AiSetupError::Tls)?
    .with_root_certificates(roots)
    .with_no_client_auth();
    Ok(config)
}

impl Ai for OpenAiCompatible {
    fn complete(&self, request: AiRequest) -> BoxFuture<'static, Result<String, AiError>> {
        let inner = Arc::clone(&self.inner);
        async move {
            // One deadline for connecting, sending and reading the whole answer.
            tokio::time::timeout(request.timeout, inner.chat_completion(&request.messages))
                .await
                .unwrap_or(Err(AiError::Timeout))
        }
        .boxed()
    }
}

#[derive(Serialize)]
struct ChatCompletionRequest<'a> {
    model: &'a str,
    messages: &'a [AiMessage],
    temperature: f32,
}

#[derive(Deserialize)]
struct ChatCompletion {
    choices: Vec<Choice>,
}

#[derive(Deserialize)]
struct Choice {
    message: ChoiceMessage,
}

#[derive(Deserialize)]
struct ChoiceMessage {
    /// `null` when the model answered with a tool call or a refusal instead of text.
    content: Option<String>,
}

/// OpenAI's error body: `{"error": {"message", "type", "code", "param"}}`.
#[derive(Deserialize)]
struct ErrorBody {
    error: ErrorDetail,
}

#[derive(Deserialize)]
struct ErrorDetail {
    message: String,
}

impl Inner {
    async fn chat_completion(&self, messages: &[AiMessage]) -> Result<String, AiError> {
        let response = self
            .client
            .post(&self.endpoint)
            .bearer_auth(self.api_key.expose_secret())
            .json(&ChatCompletionRequest {
                model: &self.model,
                messages,
                temperature: self.temperature,
            })
            .send()
            .await
            .map_err(|err| AiError::Failed(format!("cannot reach the AI provider: {err}")))?;
        let status = response.status();
        if !status.is_success() {
            return Err(self.refusal(response).await);
        }
        // A streaming reader (a later issue) replaces this: it yields the same content in parts.
        let body = response
            .bytes()
            .await
            .map_err(|err| AiError::Failed(format!("reading the AI provider's answer: {err}")))?;
        completion_text(&body)
    }

    /// The error for a non-2xx answer, logged here because only here is the provider's own
    /// explanation at hand.
    async fn refusal(&self, response: reqwest::Response) -> AiError {
        let status = response.status();
        match status {
            StatusCode::UNAUTHORIZED => {
                // The provider's message is not logged: OpenAI's quotes part of the key.
                tracing::error!(
                    endpoint = %self.endpoint,
                    "the AI provider refused the API key (401): check ai.api_key"
                );
                AiError::Unauthorized
            }
            StatusCode::TOO_MANY_REQUESTS => {
                let retry_after = retry_after(response.headers()).unwrap_or(DEFAULT_RETRY_AFTER);
                tracing::warn!(
                    endpoint = %self.endpoint,
                    ?retry_after,
                    "the AI provider is rate limiting us (429)"
                );
                AiError::RateLimited { retry_after }
            }
            _ => {
                let message = response
                    .bytes()
                    .await
                    .ok()
                    .and_then(|body| serde_json::from_slice::<ErrorBody>(&body).ok())
                    .map(|body| body.error.message);
                tracing::warn!(
                    endpoint = %self.endpoint,
                    status = status.as_u16(),
                    provider_message = message.as_deref().unwrap_or("(none)"),
                    "the AI call failed"
                );
                AiError::Failed(format!("status {}", status.as_u16()))
            }
        }
    }
}

/// `Retry-After` in seconds. The HTTP-date form is not used by chat-completion APIs, so it
/// falls back to the default like a missing header.
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let seconds: f64 = headers
        .get(RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()?;
    Duration::try_from_secs_f64(seconds).ok()
}

/// The first choice's text from a chat-completion body.
fn completion_text(body: &[u8]) -> Result<String, AiError> {
    let completion: ChatCompletion = serde_json::from_slice(body)
        .map_err(|err| AiError::UnexpectedResponse(format!("not a chat completion: {err}")))?;
    let content = completion
        .choices
        .into_iter()
        .next()
        .ok_or_else(|| AiError::UnexpectedResponse("no choices".to_owned()))?
        .message
        .content
        .filter(|content| !content.trim().is_empty())
        .ok_or_else(|| AiError::UnexpectedResponse("the first choice has no text".to_owned()))?;
    Ok(content)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_reads_whole_and_fractional_seconds() {
        let mut headers = reqwest::header::HeaderMap::new();
        assert_eq!(retry_after(&headers), None);
        headers.insert(RETRY_AFTER, "20".parse().expect("header"));
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(20)));
        headers.insert(RETRY_AFTER, "1.5".parse().expect("header"));
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(1500)));
        headers.insert(RETRY_AFTER, "-3".parse().expect("header"));
        assert_eq!(retry_after(&headers), None);
        headers.insert(
            RETRY_AFTER,
            "Wed, 21 Oct 2015 07:28:00 GMT".parse().expect("header"),
        );
        assert_eq!(retry_after(&headers), None);
    }

    #[test]
    fn blank_or_missing_content_is_an_unexpected_response() {
        for body in [
            r#"{"choices":[]}"#,
            r#"{"choices":[{"message":{"role":"assistant","content":null}}]}"#,
            r#"{"choices":[{"message":{"role":"assistant","content":"  "}}]}"#,
            r#"{"object":"chat.completion"}"#,
        ] {
            assert!(
                matches!(
                    completion_text(body.as_bytes()),
                    Err(AiError::UnexpectedResponse(_))
                ),
                "{body}"
            );
        }
    }
}

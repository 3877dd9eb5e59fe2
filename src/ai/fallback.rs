//! The configured provider with the offline one behind it: when the AI service fails (down,
//! refusing the key, rate limiting, too slow), members still get the help library's guide
//! instead of an error. Where the offline provider has nothing for a purpose (the funnels'
//! replies and intro), the service's own error comes back, so callers use their scripts.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use futures_util::stream::BoxStream;
use futures_util::{FutureExt, StreamExt};

use super::{Ai, AiError, AiRequest};

pub struct WithFallback {
    primary: Arc<dyn Ai>,
    fallback: Arc<dyn Ai>,
}

impl WithFallback {
    pub fn new(primary: Arc<dyn Ai>, fallback: Arc<dyn Ai>) -> Self {
        Self { primary, fallback }
    }
}

impl Ai for WithFallback {
    fn complete(&self, request: AiRequest) -> BoxFuture<'static, Result<String, AiError>> {
        let primary = self.primary.complete(request.clone());
        let fallback = self.fallback.clone();
        async move {
            match primary.await {
                Ok(text) => Ok(text),
                Err(error) => {
                    tracing::info!(%error, purpose = ?request.purpose, "the AI service failed; trying the offline provider");
                    fallback.complete(request).await.map_err(|_| error)
                }
            }
        }
        .boxed()
    }

    /// Falls back only when the service fails before its first piece: a reply already under way
    /// is not replaced half-way (its error ends the stream).
    fn stream(&self, request: AiRequest) -> BoxStream<'static, Result<String, AiError>> {
        let mut primary = self.primary.stream(request.clone());
        let fallback = self.fallback.clone();
        async move {
            match primary.next().await {
                Some(Ok(first)) => futures_util::stream::once(async { Ok(first) })
                    .chain(primary)
                    .boxed(),
                Some(Err(error)) => {
                    tracing::info!(%error, purpose = ?request.purpose, "the AI service failed; trying the offline provider");
                    let mut offline = fallback.stream(request);
                    match offline.next().await {
                        Some(Ok(first)) => futures_util::stream::once(async { Ok(first) })
                            .chain(offline)
                            .boxed(),
                        _ => futures_util::stream::once(async { Err(error) }).boxed(),
                    }
                }
                None => futures_util::stream::empty().boxed(),
            }
        }
        .flatten_stream()
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::ai::{AiMessage, AiPurpose};

    struct Fixed(Result<String, AiError>);

    impl Ai for Fixed {
        fn complete(&self, _: AiRequest) -> BoxFuture<'static, Result<String, AiError>> {
            futures_util::future::ready(self.0.clone()).boxed()
        }
    }

    fn request(purpose: AiPurpose) -> AiRequest {
        AiRequest {
            purpose,
            messages: vec![AiMessage::user("my printer is offline")],
            timeout: Duration::from_secs(1),
        }
    }

    fn pair(primary: Result<&str, AiError>, fallback: Result<&str, AiError>) -> WithFallback {
        WithFallback::new(
            Arc::new(Fixed(primary.map(str::to_owned))),
            Arc::new(Fixed(fallback.map(str::to_owned))),
        )
    }

    #[tokio::test]
    async fn the_service_answers_when_it_can() {
        let ai = pair(Ok("from the service"), Ok("from the library"));
        assert_eq!(
            ai.complete(request(AiPurpose::MemberChat)).await,
            Ok("from the service".to_owned())
        );
    }

    #[tokio::test]
    async fn a_failing_service_is_replaced_by_the_offline_answer() {
        let ai = pair(Err(AiError::Timeout), Ok("from the library"));
        assert_eq!(
            ai.complete(request(AiPurpose::MemberChat)).await,
            Ok("from the library".to_owned())
        );
        let pieces: Vec<_> = ai.stream(request(AiPurpose::MemberChat)).collect().await;
        assert_eq!(pieces, [Ok("from the library".to_owned())]);
    }

    #[tokio::test]
    async fn without_an_offline_answer_the_service_error_comes_back() {
        let ai = pair(Err(AiError::Unauthorized), Err(AiError::Offline));
        assert_eq!(
            ai.complete(request(AiPurpose::FunnelFollowUp)).await,
            Err(AiError::Unauthorized)
        );
        let pieces: Vec<_> = ai
            .stream(request(AiPurpose::FunnelFollowUp))
            .collect()
            .await;
        assert_eq!(pieces, [Err(AiError::Unauthorized)]);
    }
}

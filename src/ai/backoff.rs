//! Rate-limit backoff around a provider: after the provider says "slow down", calls are refused
//! here, at once and without reaching it, until the backoff has passed.
//!
//! The spec (section 9) says: "client backoff starts at 30 s and doubles per rate-limit hit.
//! Stored rate limit is 120000 ms times min(2^count, 120); the count resets to 0 on success."
//! The original app kept two numbers, a browser-side backoff and a stored limit; the server has
//! one gate, and reads the two sentences together as: the wait after consecutive hit number
//! `count` (1, 2, 3, ...) is
//!
//! ```text
//! min(30 s × 2^(count-1), 120000 ms × min(2^count, 120))
//! ```
//!
//! that is, the client's doubling schedule (30 s, 60 s, 120 s, ...), capped by the stored limit.
//! The stored limit only binds once it stops growing (at 120 × 120 s = 4 h), so in practice the
//! wait doubles from 30 s and stays at 4 h from the tenth consecutive hit on. A longer
//! `Retry-After` from the provider wins (up to the same 4 h, so a broken header cannot shut the
//! AI off for days). A successful call resets the count to 0; other failures (time-outs, server
//! errors) leave it as it is.
//!
//! A hit is what section 8 calls one: [`AiError::RateLimited`], or any error whose text says
//! "rate limit" or "429" (a gateway that reports the limit in a plain failure, or OpenAI's error
//! event in the middle of a stream).
//!
//! Calls already in flight when the backoff starts may come back rate limited too. Those extend
//! the wait to their `Retry-After` but are not counted as further hits: they are the same hit
//! seen again, and counting them would jump the schedule by several doublings at once.
//!
//! Why not `governor`, which the server uses for its request limits: a GCRA quota admits a steady
//! rate, while this gate opens on a schedule that grows with each refusal and resets on success.
//! The schedule is the few lines below, on tokio's clock so tests run it on paused time.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures_util::future::BoxFuture;
use futures_util::stream::BoxStream;
use futures_util::{FutureExt, StreamExt};
use tokio::time::Instant;

use super::{Ai, AiError, AiRequest};

/// The wait after the first hit; it doubles with each consecutive one.
const FIRST_BACKOFF: Duration = Duration::from_secs(30);
/// The spec's stored rate limit: this unit times min(2^count, [`STORED_LIMIT_MAX_FACTOR`]).
const STORED_LIMIT_UNIT: Duration = Duration::from_millis(120_000);
const STORED_LIMIT_MAX_FACTOR: u32 = 120;
/// The longest wait of all (4 h): the stored limit at its maximum.
const LONGEST_WAIT: Duration = STORED_LIMIT_UNIT.saturating_mul(STORED_LIMIT_MAX_FACTOR);

/// The spec's wait after consecutive rate-limit hit number `count` (from 1), before any
/// `Retry-After`.
fn backoff_after(count: u32) -> Duration {
    // 2^20 × 30 s is far past the cap, so larger exponents change nothing and cannot overflow.
    let doublings = count.saturating_sub(1).min(20);
    let client = FIRST_BACKOFF.saturating_mul(1 << doublings);
    let factor = 2u32
        .checked_pow(count)
        .map_or(STORED_LIMIT_MAX_FACTOR, |power| {
            power.min(STORED_LIMIT_MAX_FACTOR)
        });
    client.min(STORED_LIMIT_UNIT.saturating_mul(factor))
}

/// Wraps a provider in the spec's rate-limit backoff. Clones share one backoff, as do all
/// callers of the `Arc<dyn Ai>` that [`super::provider`] returns.
#[derive(Debug, Clone)]
pub struct WithBackoff<P> {
    provider: Arc<P>,
    gate: Arc<Mutex<Gate>>,
}

impl<P: Ai> WithBackoff<P> {
    pub fn new(provider: P) -> Self {
        Self {
            provider: Arc::new(provider),
            gate: Arc::default(),
        }
    }
}

impl<P: Ai> Ai for WithBackoff<P> {
    fn complete(&self, request: AiRequest) -> BoxFuture<'static, Result<String, AiError>> {
        if let Some(refusal) = lock(&self.gate).refusal(Instant::now()) {
            return futures_util::future::ready(Err(refusal)).boxed();
        }
        let gate = Arc::clone(&self.gate);
        self.provider
            .complete(request)
            .inspect(move |result| observe(&gate, result.as_ref().map(|_| ())))
            .boxed()
    }

    fn stream(&self, request: AiRequest) -> BoxStream<'static, Result<String, AiError>> {
        if let Some(refusal) = lock(&self.gate).refusal(Instant::now()) {
            return futures_util::stream::once(futures_util::future::ready(Err(refusal))).boxed();
        }
        let gate = Arc::clone(&self.gate);
        // The first piece shows the provider took the call: that is the success that resets the
        // count. Later pieces need not take the lock again.
        let mut succeeded = false;
        self.provider
            .stream(request)
            .inspect(move |item| match item {
                Ok(_) if succeeded => {}
                Ok(_) => {
                    succeeded = true;
                    observe(&gate, Ok(()));
                }
                Err(err) => observe(&gate, Err(err)),
            })
            .boxed()
    }
}

fn lock(gate: &Mutex<Gate>) -> std::sync::MutexGuard<'_, Gate> {
    // The gate's state is two plain fields updated together; a panic elsewhere cannot leave
    // them half-written, so a poisoned lock is still sound to use.
    gate.lock().unwrap_or_else(PoisonError::into_inner)
}

fn observe(gate: &Mutex<Gate>, outcome: Result<(), &AiError>) {
    let mut gate = lock(gate);
    match outcome {
        Ok(()) => gate.succeeded(),
        Err(err) => {
            if let Some(retry_after) = rate_limit(err) {
                gate.hit(Instant::now(), retry_after);
            }
        }
    }
}

/// `Some` when `err` is a rate-limit hit, with the provider's `Retry-After` when it gave one.
fn rate_limit(err: &AiError) -> Option<Duration> {
    match err {
        AiError::RateLimited { retry_after } => Some(*retry_after),
        AiError::Failed(text) | AiError::UnexpectedResponse(text) => {
            let text = text.to_lowercase();
            (text.contains("rate limit") || text.contains("429")).then_some(Duration::ZERO)
        }
        AiError::Offline | AiError::Timeout | AiError::Unauthorized => None,
    }
}

/// The backoff's state.
#[derive(Debug, Default)]
struct Gate {
    /// Consecutive rate-limit hits since the last success.
    count: u32,
    /// Calls are refused until then.
    closed_until: Option<Instant>,
}

impl Gate {
    /// The error a call gets now, if the backoff has not passed yet.
    fn refusal(&self, now: Instant) -> Option<AiError> {
        let until = self.closed_until?;
        (until > now).then(|| AiError::RateLimited {
            retry_after: until - now,
        })
    }

    fn hit(&mut self, now: Instant, retry_after: Duration) {
        let open = self.closed_until.is_none_or(|until| until <= now);
        if open {
            self.count = self.count.saturating_add(1);
        }
        let wait = if open {
            backoff_after(self.count)
        } else {
            Duration::ZERO
        }
        .max(retry_after.min(LONGEST_WAIT));
        let until = now + wait;
        self.closed_until = Some(
            self.closed_until
                .map_or(until, |current| current.max(until)),
        );
        tracing::warn!(
            count = self.count,
            wait = ?(self.closed_until.map_or(wait, |until| until - now)),
            "the AI provider is rate limiting us: AI calls wait"
        );
    }

    fn succeeded(&mut self) {
        self.count = 0;
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::ai::{AiMessage, AiPurpose};

    /// Answers from a script, one result per call, and counts the calls that reach it. Clones
    /// share the script, so a test keeps one while the backoff owns the other.
    #[derive(Clone, Default)]
    struct Scripted {
        answers: Arc<Mutex<VecDeque<Result<String, AiError>>>>,
        calls: Arc<AtomicUsize>,
    }

    impl Scripted {
        fn then(&self, answer: Result<&str, AiError>) -> &Self {
            self.answers
                .lock()
                .expect("script")
                .push_back(answer.map(str::to_owned));
            self
        }

        fn calls(&self) -> usize {
            self.calls.load(Ordering::SeqCst)
        }
    }

    impl Ai for Scripted {
        fn complete(&self, _: AiRequest) -> BoxFuture<'static, Result<String, AiError>> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            let answer = self
                .answers
                .lock()
                .expect("script")
                .pop_front()
                .expect("a scripted answer");
            futures_util::future::ready(answer).boxed()
        }
    }

    fn rate_limited(secs: u64) -> AiError {
        AiError::RateLimited {
            retry_after: Duration::from_secs(secs),
        }
    }

    fn request() -> AiRequest {
        AiRequest {
            purpose: AiPurpose::MemberChat,
            messages: vec![AiMessage::user("Hello")],
            timeout: Duration::from_secs(5),
        }
    }

    fn backoff() -> (WithBackoff<Scripted>, Scripted) {
        let inner = Scripted::default();
        (WithBackoff::new(inner.clone()), inner)
    }

    /// Asserts calls are refused for `wait` (minus a second) without reaching the provider.
    async fn refused_for(ai: &WithBackoff<Scripted>, inner: &Scripted, wait: Duration) {
        let calls = inner.calls();
        assert_eq!(
            ai.complete(request()).await,
            Err(AiError::RateLimited { retry_after: wait })
        );
        tokio::time::advance(wait - Duration::from_secs(1)).await;
        assert_eq!(
            ai.complete(request()).await,
            Err(AiError::RateLimited {
                retry_after: Duration::from_secs(1)
            })
        );
        assert_eq!(
            inner.calls(),
            calls,
            "refused calls do not reach the provider"
        );
        tokio::time::advance(Duration::from_secs(1)).await;
    }

    #[test]
    fn the_schedule_doubles_from_30_s_and_is_capped_by_the_stored_limit_at_4_h() {
        let minutes = |count| backoff_after(count).as_secs_f64() / 60.0;
        let schedule: Vec<f64> = (1..=11).map(minutes).collect();
        assert_eq!(
            schedule,
            [
                0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 240.0, 240.0
            ]
        );
        assert_eq!(backoff_after(u32::MAX), Duration::from_secs(4 * 3600));
    }

    #[tokio::test(start_paused = true)]
    async fn consecutive_hits_double_the_wait_and_refused_calls_do_not_reach_the_provider() {
        let (ai, inner) = backoff();
        inner
            .then(Err(rate_limited(1)))
            .then(Err(rate_limited(1)))
            .then(Err(rate_limited(1)))
            .then(Ok("finally"));

        for wait in [30, 60, 120] {
            assert_eq!(ai.complete(request()).await, Err(rate_limited(1)));
            refused_for(&ai, &inner, Duration::from_secs(wait)).await;
        }
        assert_eq!(ai.complete(request()).await.as_deref(), Ok("finally"));
        assert_eq!(inner.calls(), 4);
    }

    #[tokio::test(start_paused = true)]
    async fn a_success_resets_the_count() {
        let (ai, inner) = backoff();
        inner
            .then(Err(rate_limited(0)))
            .then(Err(rate_limited(0)))
            .then(Ok("fine"))
            .then(Err(rate_limited(0)));

        ai.complete(request()).await.expect_err("a hit");
        refused_for(&ai, &inner, Duration::from_secs(30)).await;
        ai.complete(request()).await.expect_err("a second hit");
        refused_for(&ai, &inner, Duration::from_secs(60)).await;
        ai.complete(request()).await.expect("a success");
        ai.complete(request())
            .await
            .expect_err("a hit after the success");
        refused_for(&ai, &inner, Duration::from_secs(30)).await;
    }

    #[tokio::test(start_paused = true)]
    async fn a_longer_retry_after_wins_up_to_4_h() {
        let (ai, inner) = backoff();
        inner
            .then(Err(rate_limited(45)))
            .then(Err(rate_limited(10)))
            .then(Err(rate_limited(100_000)));

        ai.complete(request()).await.expect_err("a hit");
        refused_for(&ai, &inner, Duration::from_secs(45)).await;
        ai.complete(request())
            .await
            .expect_err("a shorter Retry-After");
        refused_for(&ai, &inner, Duration::from_secs(60)).await;
        ai.complete(request())
            .await
            .expect_err("an absurd Retry-After");
        refused_for(&ai, &inner, Duration::from_secs(4 * 3600)).await;
    }

    #[tokio::test(start_paused = true)]
    async fn errors_that_mention_a_rate_limit_are_hits_and_others_are_not() {
        let (ai, inner) = backoff();
        inner
            .then(Err(AiError::Timeout))
            .then(Err(AiError::Failed("status 500".to_owned())))
            .then(Err(AiError::Failed(
                "the AI provider's stream failed: Rate limit reached for gpt-4o-mini".to_owned(),
            )))
            .then(Err(AiError::Failed("status 429".to_owned())));

        ai.complete(request()).await.expect_err("a time-out");
        ai.complete(request()).await.expect_err("a server error");
        assert_eq!(inner.calls(), 2, "neither closes the gate");
        ai.complete(request())
            .await
            .expect_err("a rate limit in words");
        refused_for(&ai, &inner, Duration::from_secs(30)).await;
        ai.complete(request())
            .await
            .expect_err("a 429 in a plain failure");
        refused_for(&ai, &inner, Duration::from_secs(60)).await;
    }

    #[tokio::test(start_paused = true)]
    async fn hits_from_calls_already_in_flight_are_not_counted_again() {
        let mut gate = Gate::default();
        let start = Instant::now();
        gate.hit(start, Duration::ZERO);
        gate.hit(start + Duration::from_secs(1), Duration::from_secs(40));
        assert_eq!(gate.count, 1);
        assert_eq!(
            gate.refusal(start + Duration::from_secs(1)),
            Some(AiError::RateLimited {
                retry_after: Duration::from_secs(40)
            }),
            "its Retry-After still counts"
        );
        gate.hit(start + Duration::from_secs(41), Duration::ZERO);
        assert_eq!(gate.count, 2);
    }

    #[tokio::test(start_paused = true)]
    async fn a_stream_is_refused_during_the_backoff_and_its_first_piece_is_a_success() {
        let (ai, inner) = backoff();
        inner
            .then(Err(rate_limited(0)))
            .then(Ok("streamed"))
            .then(Err(rate_limited(0)));

        let items: Vec<_> = ai.stream(request()).collect().await;
        assert_eq!(items, [Err(rate_limited(0))]);
        let items: Vec<_> = ai.stream(request()).collect().await;
        assert_eq!(items, [Err(rate_limited(30))], "refused at once");
        assert_eq!(inner.calls(), 1);

        tokio::time::advance(Duration::from_secs(30)).await;
        let items: Vec<_> = ai.stream(request()).collect().await;
        assert_eq!(items, [Ok("streamed".to_owned())]);
        ai.stream(request()).collect::<Vec<_>>().await;
        refused_for(&ai, &inner, Duration::from_secs(30)).await;
    }
}

//! Password hashing: argon2id with OWASP's parameters (19 MiB, 2 passes, 1 lane), on threads of
//! its own so a hash never stalls the async workers.
//!
//! One hashing thread per CPU, started on first use; hashes queue for them without holding a
//! thread or memory. On tokio's blocking pool a burst of sign-ups ran hundreds at once, each with
//! its own 19 MiB (1,000 sign-ups took the server to 18 GiB), and even two at a time the pool's
//! many threads each kept 19 MiB blocks in their own allocator arena (200 sign-ups left 1.1 GiB
//! resident). A few long-lived threads keep a few blocks (docs/benchmarks.md).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, LazyLock, Mutex, PoisonError};

use argon2::password_hash::phc::PasswordHash;
use argon2::password_hash::{PasswordHasher, PasswordVerifier};
use argon2::{Algorithm, Argon2, Params, Version};

use crate::domain::NewPassword;
use crate::error::ApiError;

#[derive(Debug, thiserror::Error)]
pub enum HashError {
    #[error("argon2: {0}")]
    Argon2(String),
    #[error("the password hashing thread stopped")]
    Stopped,
    #[error("too many passwords are waiting to be hashed")]
    Busy,
}

fn hasher() -> Result<Argon2<'static>, HashError> {
    let params =
        Params::new(19 * 1024, 2, 1, None).map_err(|e| HashError::Argon2(e.to_string()))?;
    Ok(Argon2::new(Algorithm::Argon2id, Version::V0x13, params))
}

/// A hash of a password nobody has, checked when an address is unknown, so that a wrong
/// address takes as long to refuse as a wrong password (no telling which accounts exist).
static DUMMY_HASH: LazyLock<Option<String>> =
    LazyLock::new(|| hash_now("not-a-real-password-7f3a").ok());

fn hash_now(password: &str) -> Result<String, HashError> {
    hasher()?
        .hash_password(password.as_bytes())
        .map(|hash| hash.to_string())
        .map_err(|e| HashError::Argon2(e.to_string()))
}

type Job = Box<dyn FnOnce() + Send>;

/// How many hashes may wait per hashing thread before more are refused at once (`Busy`): about
/// 16 x 50 ms, under a second, is the longest a sign-in may wait behind others. Without a bound,
/// a few hundred requests (password resets with made-up links, say) stalled sign-in for everyone.
const WAITING_PER_THREAD: usize = 16;

/// Hashing threads and their queue, with a bound on what may wait.
struct HashQueue {
    jobs: Mutex<mpsc::Sender<Job>>,
    /// Hashes queued or running.
    queued: Arc<AtomicUsize>,
    limit: usize,
}

impl HashQueue {
    fn start(threads: usize, limit: usize) -> Self {
        let (jobs, queue) = mpsc::channel::<Job>();
        let queue = Arc::new(Mutex::new(queue));
        for index in 0..threads {
            let queue = queue.clone();
            let started = std::thread::Builder::new()
                .name(format!("password-hash-{index}"))
                .spawn(move || {
                    loop {
                        // The lock is held only while taking a job, never while hashing.
                        let job = queue.lock().unwrap_or_else(PoisonError::into_inner).recv();
                        match job {
                            Ok(job) => job(),
                            Err(_) => return,
                        }
                    }
                });
            if let Err(error) = started {
                tracing::error!(%error, "cannot start a password hashing thread");
            }
        }
        Self {
            jobs: Mutex::new(jobs),
            queued: Arc::new(AtomicUsize::new(0)),
            limit,
        }
    }

    /// Runs `work` on a hashing thread when one is free; `Busy` at once when the queue is full.
    async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> Result<T, HashError> + Send + 'static,
    ) -> Result<T, HashError> {
        if self.queued.fetch_add(1, Ordering::AcqRel) >= self.limit {
            self.queued.fetch_sub(1, Ordering::AcqRel);
            return Err(HashError::Busy);
        }
        let queued = self.queued.clone();
        let (done, result) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move || {
            // Whoever asked is gone (the request was cut off): no hash for nobody.
            if !done.is_closed() {
                // A panicking hash fails its own request and leaves the thread serving the others.
                if let Ok(result) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)) {
                    let _ = done.send(result);
                }
            }
            queued.fetch_sub(1, Ordering::AcqRel);
        });
        if self
            .jobs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .send(job)
            .is_err()
        {
            self.queued.fetch_sub(1, Ordering::AcqRel);
            return Err(HashError::Stopped);
        }
        result.await.map_err(|_| HashError::Stopped)?
    }
}

/// The server's hashing threads: one per CPU (no more would finish sooner, and each holds
/// 19 MiB while it hashes).
static HASHERS: LazyLock<HashQueue> = LazyLock::new(|| {
    let cpus = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    HashQueue::start(cpus, cpus * WAITING_PER_THREAD)
});

/// Runs `work` on a hashing thread when one is free.
async fn in_turn<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, HashError> + Send + 'static,
) -> Result<T, HashError> {
    HASHERS.run(work).await
}

impl HashError {
    /// The answer to a request whose hash failed: 503 with Retry-After when the queue was full.
    pub fn into_api(self, doing: &str) -> ApiError {
        match self {
            HashError::Busy => ApiError::busy(),
            other => ApiError::internal(doing, other),
        }
    }
}

/// Hashes a new password to a PHC string (`$argon2id$v=19$m=19456,t=2,p=1$...`).
pub async fn hash_password(password: NewPassword) -> Result<String, HashError> {
    in_turn(move || hash_now(password.expose())).await
}

/// Whether `candidate` matches `stored` (a PHC string); `None` checks against a dummy hash and
/// answers false, taking the same time.
pub async fn verify_password(stored: Option<String>, candidate: String) -> Result<bool, HashError> {
    in_turn(move || {
        let (stored, real) = match stored {
            Some(hash) => (hash, true),
            None => match DUMMY_HASH.as_ref() {
                Some(dummy) => (dummy.clone(), false),
                None => return Ok(false),
            },
        };
        let Ok(parsed) = PasswordHash::new(&stored) else {
            tracing::error!("a stored password hash does not parse");
            return Ok(false);
        };
        // The parameters come from the stored hash, so older hashes keep verifying.
        let matches = hasher()?
            .verify_password(candidate.as_bytes(), &parsed)
            .is_ok();
        Ok(real && matches)
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn password(text: &str) -> NewPassword {
        NewPassword::parse(text.to_owned()).expect("valid password")
    }

    #[tokio::test]
    async fn a_hash_verifies_its_password_and_nothing_else() {
        let hash = hash_password(password("correct horse"))
            .await
            .expect("hash");
        assert!(
            hash.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"),
            "{hash}"
        );
        assert!(
            verify_password(Some(hash.clone()), "correct horse".to_owned())
                .await
                .expect("verify")
        );
        assert!(
            !verify_password(Some(hash), "correct horsE".to_owned())
                .await
                .expect("verify")
        );
    }

    #[tokio::test]
    async fn an_unknown_account_never_verifies() {
        assert!(
            !verify_password(None, "not-a-real-password-7f3a".to_owned())
                .await
                .expect("verify")
        );
    }

    #[tokio::test]
    async fn a_full_queue_refuses_at_once_and_takes_hashes_again_once_it_drains() {
        // A queue of its own: one thread, two places (the server's is shared by every test).
        let queue = HashQueue::start(1, 2);
        let slow = || {
            std::thread::sleep(std::time::Duration::from_millis(200));
            Ok(())
        };
        let (first, second, third) =
            tokio::join!(queue.run(slow), queue.run(slow), queue.run(slow));
        assert!(first.is_ok() && second.is_ok());
        assert!(matches!(third, Err(HashError::Busy)), "{third:?}");
        // Drained: a hash is taken again.
        assert!(queue.run(|| Ok(())).await.is_ok());
        assert_eq!(
            HashError::Busy.into_api("hashing").status,
            actix_web::http::StatusCode::SERVICE_UNAVAILABLE
        );
    }

    #[tokio::test]
    async fn two_hashes_of_one_password_differ() {
        let one = hash_password(password("secret1")).await.expect("hash");
        let two = hash_password(password("secret1")).await.expect("hash");
        assert_ne!(one, two, "each hash has its own salt");
    }
}

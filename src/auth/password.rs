//! Password hashing: argon2id with OWASP's parameters (19 MiB, 2 passes, 1 lane), on the blocking
//! pool so a hash never stalls the async workers.
//!
//! At most one hash per CPU runs at a time; the rest wait their turn without holding a thread or
//! memory. Unbounded, a burst of sign-ups ran hundreds at once on the blocking pool, each with its
//! own 19 MiB: a load test of 1,000 sign-ups took the server to 18 GiB (docs/benchmarks.md).

use std::sync::LazyLock;

use argon2::password_hash::phc::PasswordHash;
use argon2::password_hash::{PasswordHasher, PasswordVerifier};
use argon2::{Algorithm, Argon2, Params, Version};

use crate::domain::NewPassword;

#[derive(Debug, thiserror::Error)]
pub enum HashError {
    #[error("argon2: {0}")]
    Argon2(String),
    #[error("the hashing task failed: {0}")]
    Task(#[from] tokio::task::JoinError),
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

/// Turns to hash: one per CPU (no more would finish sooner, and each holds 19 MiB).
static TURNS: LazyLock<std::sync::Arc<tokio::sync::Semaphore>> = LazyLock::new(|| {
    let cpus = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    std::sync::Arc::new(tokio::sync::Semaphore::new(cpus))
});

/// Runs `work` on the blocking pool when a turn is free.
async fn in_turn<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, HashError> + Send + 'static,
) -> Result<T, HashError> {
    // The semaphore is never closed, so a permit always comes. The hash holds it to its end,
    // even when the request that asked for it is gone.
    let turn = TURNS.clone().acquire_owned().await.ok();
    tokio::task::spawn_blocking(move || {
        let result = work();
        drop(turn);
        result
    })
    .await?
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
    async fn two_hashes_of_one_password_differ() {
        let one = hash_password(password("secret1")).await.expect("hash");
        let two = hash_password(password("secret1")).await.expect("hash");
        assert_ne!(one, two, "each hash has its own salt");
    }
}

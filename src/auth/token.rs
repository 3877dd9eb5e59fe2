//! Random secrets handed to a client (session cookies, sign-in and reset tokens) and the hash the
//! store keeps instead: a leaked table holds nothing a client could present.

use sha2::{Digest, Sha256};

/// 256 random bits, URL-safe (43 characters).
pub fn new_secret() -> String {
    crate::ids::token(32)
}

/// The SHA-256 of a secret, hex. A fast hash is right here: the secret has 256 random bits, so
/// there is nothing to guess.
pub fn hash_secret(secret: &str) -> String {
    let digest = Sha256::digest(secret.as_bytes());
    digest.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// Whether a client-supplied value could be one of our secrets at all (before any lookup).
pub fn looks_like_secret(value: &str) -> bool {
    value.len() == 43
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_unique_url_safe_and_recognised() {
        let one = new_secret();
        let two = new_secret();
        assert_ne!(one, two);
        assert!(looks_like_secret(&one), "{one}");
        assert!(!looks_like_secret("short"));
        assert!(!looks_like_secret(&format!("{}=", &one[..42])));
    }

    #[test]
    fn the_hash_is_stable_hex() {
        assert_eq!(
            hash_secret("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}

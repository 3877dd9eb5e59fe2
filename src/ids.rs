//! The one source of random ids and secrets: every record key, item id, connection id and secret
//! handed to a client comes from here, from the operating system's generator seeded thread RNG
//! (`rand::rng()`, a CSPRNG).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rand::{Rng, RngCore};

/// `bytes` random bytes, URL-safe base64 without padding (4 characters per 3 bytes).
pub fn token(bytes: usize) -> String {
    let mut buffer = vec![0u8; bytes];
    rand::rng().fill_bytes(&mut buffer);
    URL_SAFE_NO_PAD.encode(buffer)
}

/// `len` random letters and digits (5.95 bits each).
pub fn alphanumeric(len: usize) -> String {
    let mut rng = rand::rng();
    (0..len)
        .map(|_| char::from(rng.sample(rand::distr::Alphanumeric)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_and_ids_have_their_length_and_alphabet() {
        let token = token(32);
        assert_eq!(token.len(), 43);
        assert!(
            token
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        );
        assert_eq!(super::token(15).len(), 20);
        let id = alphanumeric(20);
        assert_eq!(id.len(), 20);
        assert!(id.bytes().all(|b| b.is_ascii_alphanumeric()));
        assert_ne!(alphanumeric(20), alphanumeric(20));
    }
}

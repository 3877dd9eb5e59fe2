//! `NewPassword`: a password someone chooses. The auth provider's one rule is a minimum of 6
//! characters; an upper bound keeps a huge body from tying up the hashing pool.

use secrecy::{ExposeSecret, SecretString};

pub const MIN_CHARS: usize = 6;
/// Longer passwords gain nothing and cost hashing time.
pub const MAX_BYTES: usize = 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PasswordError {
    #[error("Password is required")]
    Missing,
    #[error("Password is too weak. Please use at least 6 characters.")]
    TooWeak,
    #[error("Password is too long. Please use at most 1024 characters.")]
    TooLong,
}

impl PasswordError {
    pub fn code(self) -> &'static str {
        match self {
            PasswordError::Missing => "password_required",
            PasswordError::TooWeak => "weak_password",
            PasswordError::TooLong => "password_too_long",
        }
    }
}

/// A password that meets the rules; kept secret so it never reaches a log.
#[derive(Debug, Clone)]
pub struct NewPassword(SecretString);

impl NewPassword {
    pub fn parse(raw: String) -> Result<Self, PasswordError> {
        if raw.is_empty() {
            return Err(PasswordError::Missing);
        }
        if raw.len() > MAX_BYTES {
            return Err(PasswordError::TooLong);
        }
        if raw.chars().count() < MIN_CHARS {
            return Err(PasswordError::TooWeak);
        }
        Ok(Self(SecretString::from(raw)))
    }

    pub fn expose(&self) -> &str {
        self.0.expose_secret()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn six_characters_is_enough() {
        assert!(NewPassword::parse("abcdef".to_owned()).is_ok());
        assert!(
            NewPassword::parse("pässwö".to_owned()).is_ok(),
            "characters, not bytes"
        );
    }

    #[test]
    fn short_empty_and_huge_passwords_are_refused_in_the_specs_words() {
        assert_eq!(
            NewPassword::parse("abcde".to_owned()).err(),
            Some(PasswordError::TooWeak)
        );
        assert_eq!(
            PasswordError::TooWeak.to_string(),
            "Password is too weak. Please use at least 6 characters."
        );
        assert_eq!(
            NewPassword::parse(String::new()).err(),
            Some(PasswordError::Missing)
        );
        assert_eq!(
            NewPassword::parse("x".repeat(MAX_BYTES + 1)).err(),
            Some(PasswordError::TooLong)
        );
    }
}

//! `Email`: a trimmed, lower-cased address of a plausible shape that the mailer takes (checked by
//! `lettre::Address` too, so an address that signs up can always be mailed). The auth and checkout
//! code only ever see this type, so one address is always spelled one way.

use std::fmt;

/// The longest address SMTP carries (RFC 5321's path limit).
const MAX_LEN: usize = 254;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Email(String);

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum EmailError {
    #[error("Please enter your email address")]
    Missing,
    #[error("Please enter a valid email address.")]
    Invalid,
}

impl EmailError {
    /// The stable code of the API's error body.
    pub fn code(self) -> &'static str {
        match self {
            EmailError::Missing => "email_required",
            EmailError::Invalid => "invalid_email",
        }
    }
}

impl Email {
    pub fn parse(raw: &str) -> Result<Self, EmailError> {
        let email = raw.trim().to_lowercase();
        if email.is_empty() {
            return Err(EmailError::Missing);
        }
        if email.len() > MAX_LEN || email.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(EmailError::Invalid);
        }
        let Some((local, domain)) = email.split_once('@') else {
            return Err(EmailError::Invalid);
        };
        let domain_ok = !domain.contains('@')
            && domain.contains('.')
            && domain
                .split('.')
                .all(|label| !label.is_empty() && !label.starts_with('-') && !label.ends_with('-'));
        if local.is_empty()
            || local.len() > 64
            || !domain_ok
            || email.contains(['<', '>', ',', ';'])
            || email.parse::<lettre::Address>().is_err()
        {
            return Err(EmailError::Invalid);
        }
        Ok(Self(email))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Email {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for Email {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_trimmed_and_lower_cased() {
        let email = Email::parse("  Ann.Lee@Example.COM ").expect("valid");
        assert_eq!(email.as_str(), "ann.lee@example.com");
    }

    #[test]
    fn an_empty_address_asks_for_one() {
        assert_eq!(Email::parse("   "), Err(EmailError::Missing));
        assert_eq!(
            EmailError::Missing.to_string(),
            "Please enter your email address"
        );
    }

    #[test]
    fn malformed_addresses_are_refused_in_the_specs_words() {
        for raw in [
            "ann",
            "ann@",
            "@example.com",
            "ann@example",
            "ann@@example.com",
            "ann lee@example.com",
            "ann@exa mple.com",
            "ann@.example.com",
            "ann@example..com",
            "<ann@example.com>",
            "a@b.c,d@e.f",
            // Shapes the mailer refuses: a quote or parenthesis out of place, a bracket domain.
            "ann\"lee@example.com",
            "ann(lee)@example.com",
            "ann@[example].com",
        ] {
            assert_eq!(Email::parse(raw), Err(EmailError::Invalid), "{raw}");
        }
        assert_eq!(
            EmailError::Invalid.to_string(),
            "Please enter a valid email address."
        );
    }

    #[test]
    fn overlong_addresses_are_refused() {
        let long = format!("{}@example.com", "a".repeat(250));
        assert_eq!(Email::parse(&long), Err(EmailError::Invalid));
    }
}

//! A visitor's id: the random token that the `vid` cookie (or a load tester's `auth.visitorId`)
//! carries, known valid once parsed.

use std::fmt;

/// Letters, digits, `-` and `_`, 16 to 64 of them. Taken as sent: a visitor id is a token, not
/// text to tidy up.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct VisitorId(String);

impl VisitorId {
    pub fn parse(value: &str) -> Option<Self> {
        let valid = (16..=64).contains(&value.len())
            && value
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        valid.then(|| Self(value.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

impl AsRef<str> for VisitorId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for VisitorId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::VisitorId;

    #[test]
    fn a_visitor_id_is_a_token_of_16_to_64_safe_characters() {
        assert!(VisitorId::parse("abcdefghijklmnop").is_some());
        assert!(VisitorId::parse(&"a".repeat(64)).is_some());
        assert!(VisitorId::parse("A-b_0123456789xy").is_some());
        assert!(
            VisitorId::parse("abcdefghijklmno").is_none(),
            "15 characters"
        );
        assert!(VisitorId::parse(&"a".repeat(65)).is_none());
        assert!(
            VisitorId::parse("abcdefghijklmnop ").is_none(),
            "not tidied"
        );
        assert!(VisitorId::parse("abcdefgh/ijklmnop").is_none());
        assert_eq!(
            VisitorId::parse("abcdefghijklmnop").map(|id| id.into_string()),
            Some("abcdefghijklmnop".to_owned())
        );
    }
}

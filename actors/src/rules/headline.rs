//! The headlines of the funnels. The keyword comes from the ad the user clicked, so echoing it back
//! in title case tells them they have landed in the right place.

use super::FunnelKind;
use super::text::{clean_query_value, title_case};

const HELP_DEFAULT: &str = "Need Instant Online Help?";
const REFUNDABLE_DEFAULT: &str = "Need Help? Get Instant Expert Help Now!";
const CHAT_DEFAULT: &str = "Need Help? Get Instant Expert Assistance Now!";

/// Help funnel step 1: "Need {Keyword} Help? Get Instant Expert Help Now!" with a keyword, else
/// "Need Instant Online Help?".
pub fn help_headline(keyword: Option<&str>) -> String {
    match display_keyword(keyword) {
        Some(keyword) => format!("Need {keyword} Help? Get Instant Expert Help Now!"),
        None => HELP_DEFAULT.to_owned(),
    }
}

/// A funnel's headline. The chat funnels' keyword headline has no final "!", as the spec writes
/// it; their defaults do.
pub fn funnel_headline(funnel: FunnelKind, keyword: Option<&str>) -> String {
    match (funnel, display_keyword(keyword)) {
        (FunnelKind::Help, _) => help_headline(keyword),
        (_, Some(keyword)) => {
            format!("Need {keyword} Assistance? Get Instant Expert Assistance Now")
        }
        (FunnelKind::Refundable, None) => REFUNDABLE_DEFAULT.to_owned(),
        (FunnelKind::Chat, None) => CHAT_DEFAULT.to_owned(),
    }
}

/// The keyword is cleaned like any query value, so a blank, control-character-only or huge
/// keyword cannot break the headline, then title-cased.
fn display_keyword(keyword: Option<&str>) -> Option<String> {
    keyword
        .and_then(clean_query_value)
        .map(|keyword| title_case(&keyword))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn help_headline_without_keyword() {
        assert_eq!(help_headline(None), "Need Instant Online Help?");
        assert_eq!(help_headline(Some("")), "Need Instant Online Help?");
        assert_eq!(help_headline(Some("  \t ")), "Need Instant Online Help?");
    }

    #[test]
    fn help_headline_with_keyword_is_title_cased() {
        assert_eq!(
            help_headline(Some("outlook email")),
            "Need Outlook Email Help? Get Instant Expert Help Now!"
        );
        assert_eq!(
            help_headline(Some("  gMAIL   login ")),
            "Need Gmail Login Help? Get Instant Expert Help Now!"
        );
    }

    #[test]
    fn chat_headline_with_keyword_has_no_final_bang() {
        let expected = "Need Outlook Email Assistance? Get Instant Expert Assistance Now";
        assert_eq!(
            funnel_headline(FunnelKind::Chat, Some("outlook email")),
            expected
        );
        assert_eq!(
            funnel_headline(FunnelKind::Refundable, Some("OUTLOOK  email")),
            expected
        );
    }

    #[test]
    fn chat_headline_defaults() {
        assert_eq!(
            funnel_headline(FunnelKind::Refundable, None),
            "Need Help? Get Instant Expert Help Now!"
        );
        assert_eq!(
            funnel_headline(FunnelKind::Chat, None),
            "Need Help? Get Instant Expert Assistance Now!"
        );
        assert_eq!(
            funnel_headline(FunnelKind::Chat, Some("   ")),
            "Need Help? Get Instant Expert Assistance Now!"
        );
        assert_eq!(
            funnel_headline(FunnelKind::Refundable, Some("")),
            "Need Help? Get Instant Expert Help Now!"
        );
    }

    #[test]
    fn help_funnel_headline_is_help_headline() {
        for keyword in [None, Some(""), Some("wifi"), Some("outlook email")] {
            assert_eq!(
                funnel_headline(FunnelKind::Help, keyword),
                help_headline(keyword)
            );
        }
    }

    #[test]
    fn control_chars_and_huge_keywords_are_tamed() {
        assert_eq!(
            help_headline(Some("wi\u{0}fi\n")),
            "Need Wifi Help? Get Instant Expert Help Now!"
        );
        assert_eq!(help_headline(Some("\u{7}\u{1b}")), HELP_DEFAULT);
        let huge = "a".repeat(10_000);
        let expected = format!(
            "Need A{} Help? Get Instant Expert Help Now!",
            "a".repeat(79)
        );
        assert_eq!(help_headline(Some(&huge)), expected);
    }

    #[test]
    fn non_ascii_keywords() {
        assert_eq!(
            funnel_headline(FunnelKind::Chat, Some("ñandú correo")),
            "Need Ñandú Correo Assistance? Get Instant Expert Assistance Now"
        );
        assert_eq!(
            help_headline(Some("📧 login")),
            "Need 📧 Login Help? Get Instant Expert Help Now!"
        );
    }
}

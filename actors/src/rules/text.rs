//! Small text helpers shared by the headlines, the summaries and the chat titles. Every length is
//! counted in chars, never bytes, so cutting never splits a character and never panics.

/// Query values end up in headlines and stored funnel records; longer ones are noise or abuse.
const MAX_QUERY_CHARS: usize = 80;

const ELLIPSIS: &str = "...";

/// Title case as the headlines show the keyword: each whitespace-separated word gets its first
/// character upper-cased and the rest lower-cased, and whitespace runs collapse to one space, so
/// "  gMAIL   login " reads "Gmail Login" whatever case the ad campaign used.
pub fn title_case(text: &str) -> String {
    text.split_whitespace()
        .map(capitalise)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Upper-casing may yield several chars ("ß" -> "SS"), hence the iterators rather than a swap.
fn capitalise(word: &str) -> String {
    let mut chars = word.chars();
    match chars.next() {
        Some(first) => first
            .to_uppercase()
            .chain(chars.flat_map(char::to_lowercase))
            .collect(),
        None => String::new(),
    }
}

/// A keyword or campaign id from the URL, made fit to keep: whitespace trimmed and collapsed,
/// control characters removed, at most 80 chars. `None` when nothing is left, so a blank
/// `?keyword=` counts as no keyword.
pub fn clean_query_value(text: &str) -> Option<String> {
    let collapsed = text
        .split_whitespace()
        .map(without_control_chars)
        .filter(|word| !word.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    let cut = first_chars(&collapsed, MAX_QUERY_CHARS).trim_end();
    (!cut.is_empty()).then(|| cut.to_owned())
}

fn without_control_chars(word: &str) -> String {
    word.chars().filter(|c| !c.is_control()).collect()
}

/// Shortens text for a title or preview only when it exceeds `limit` chars, to its first `keep`
/// chars (trailing whitespace dropped so the ellipsis hugs the last word) plus "...". Text within
/// the limit is returned unchanged, so short titles are never decorated.
pub fn truncate_with_ellipsis(text: &str, keep: usize, limit: usize) -> String {
    if text.chars().count() <= limit {
        return text.to_owned();
    }
    format!("{}{ELLIPSIS}", first_chars(text, keep).trim_end())
}

/// Slicing at a char boundary found by `char_indices` cannot panic.
fn first_chars(text: &str, count: usize) -> &str {
    match text.char_indices().nth(count) {
        Some((end, _)) => &text[..end],
        None => text,
    }
}

/// A keyword's words, in lower case.
pub fn words_of(text: &str) -> Vec<String> {
    text.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Whether a keyword (its `words`, [`words_of`]) holds `phrase`'s words together, in order:
/// the phrase's number of words if so. `laser printer` is in 'HP Laser Printer offline'.
pub fn holds_phrase(words: &[String], phrase: &str) -> Option<usize> {
    let phrase = words_of(phrase);
    (!phrase.is_empty()
        && words
            .windows(phrase.len())
            .any(|window| window == phrase.as_slice()))
    .then_some(phrase.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn title_case_examples() {
        assert_eq!(title_case("outlook email"), "Outlook Email");
        assert_eq!(title_case("  gMAIL   login "), "Gmail Login");
        assert_eq!(title_case("WIFI"), "Wifi");
        assert_eq!(title_case("printer\tnot\nworking"), "Printer Not Working");
        assert_eq!(title_case(""), "");
        assert_eq!(title_case("   "), "");
    }

    #[test]
    fn title_case_non_ascii() {
        assert_eq!(title_case("ñandú ÉCOLE"), "Ñandú École");
        assert_eq!(title_case("straße"), "Straße");
        assert_eq!(title_case("ß"), "SS");
        assert_eq!(title_case("🚀 launch"), "🚀 Launch");
        assert_eq!(title_case("日本語 help"), "日本語 Help");
    }

    #[test]
    fn clean_query_value_trims_and_collapses() {
        assert_eq!(
            clean_query_value("  outlook   email \n"),
            Some("outlook email".to_owned())
        );
        assert_eq!(clean_query_value("12345"), Some("12345".to_owned()));
    }

    #[test]
    fn clean_query_value_blank_is_none() {
        assert_eq!(clean_query_value(""), None);
        assert_eq!(clean_query_value("   \t\n "), None);
        assert_eq!(clean_query_value("\u{0}\u{7}\u{7f}"), None);
        assert_eq!(clean_query_value(" \u{0} \u{1b} "), None);
    }

    #[test]
    fn clean_query_value_removes_control_chars() {
        assert_eq!(
            clean_query_value("gm\u{0}ail\u{7f} \u{1b} login"),
            Some("gmail login".to_owned())
        );
    }

    #[test]
    fn clean_query_value_caps_at_80_chars() {
        let long = "x".repeat(200);
        assert_eq!(clean_query_value(&long), Some("x".repeat(80)));

        let accented = "é".repeat(100);
        let cleaned = clean_query_value(&accented).unwrap_or_default();
        assert_eq!(cleaned.chars().count(), 80);

        let emoji = "😀".repeat(81);
        let cleaned = clean_query_value(&emoji).unwrap_or_default();
        assert_eq!(cleaned, "😀".repeat(80));
    }

    #[test]
    fn clean_query_value_cut_drops_trailing_space() {
        let value = format!("{} tail", "a".repeat(79));
        assert_eq!(clean_query_value(&value), Some("a".repeat(79)));
    }

    #[test]
    fn truncate_within_limit_is_unchanged() {
        assert_eq!(truncate_with_ellipsis("short", 27, 30), "short");
        let exact = "a".repeat(30);
        assert_eq!(truncate_with_ellipsis(&exact, 27, 30), exact);
        assert_eq!(truncate_with_ellipsis("", 27, 30), "");
    }

    #[test]
    fn truncate_over_limit_keeps_then_adds_ellipsis() {
        let long = "a".repeat(31);
        assert_eq!(
            truncate_with_ellipsis(&long, 27, 30),
            format!("{}...", "a".repeat(27))
        );
        let preview = "b".repeat(100);
        assert_eq!(truncate_with_ellipsis(&preview, 57, 60).chars().count(), 60);
    }

    #[test]
    fn truncate_trims_before_ellipsis() {
        assert_eq!(truncate_with_ellipsis("abc defgh", 4, 5), "abc...");
    }

    #[test]
    fn truncate_counts_chars_not_bytes() {
        let accented = "ñ".repeat(20);
        assert_eq!(truncate_with_ellipsis(&accented, 27, 30), accented);
        let emoji = "😀".repeat(40);
        assert_eq!(
            truncate_with_ellipsis(&emoji, 27, 30),
            format!("{}...", "😀".repeat(27))
        );
    }

    #[test]
    fn truncate_with_odd_arguments_does_not_panic() {
        assert_eq!(truncate_with_ellipsis("abcdef", 10, 3), "abcdef...");
        assert_eq!(truncate_with_ellipsis("abcdef", 0, 3), "...");
        assert_eq!(truncate_with_ellipsis("abc", 0, 0), "...");
    }
}

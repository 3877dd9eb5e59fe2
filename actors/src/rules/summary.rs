//! Cleaning of the help funnel's AI-written summary and intro. The AI sometimes wraps its answer in
//! quotes, talks about its own answer ("Note: shortened to 58 characters") or refuses; the user
//! must see only a clean sentence or, failing that, our own text.

use super::text::truncate_with_ellipsis;

/// Shorter issues give the AI nothing to summarise; they go to step 2 with no summary.
pub const MIN_ISSUE_CHARS: usize = 5;

/// Shown when the AI gives no usable intro: warm, plain, no sales language.
pub const DEFAULT_INTRO: &str = "We've looked at the issue you described, and it's one our experts \
help people fix every day. The steps below walk you through the solution.";

/// The summary is asked for at 50-60 characters; past 100 it no longer fits its line.
const SUMMARY_LIMIT: usize = 100;
const SUMMARY_KEEP: usize = 97;

/// The fallback is a title-sized glimpse of the issue, not the issue itself.
const FALLBACK_WORDS: usize = 3;
const FALLBACK_LIMIT: usize = 50;
const FALLBACK_KEEP: usize = 47;

/// Phrases by which the AI talks about its summary instead of giving it, or refuses. Matched
/// case-insensitively at the start of a word, so "Keynote: slides" or "Where is my file" are kept.
/// "character count" rather than "character", so "special characters not showing" is kept too.
const SUMMARY_METADATA: &[&str] = &[
    "note:",
    "(note",
    "[note",
    "was modified",
    "was shortened",
    "was truncated",
    "here's",
    "here is",
    "summary:",
    "as an ai",
    "language model",
    "i cannot help",
    "i can't help",
    "i'm sorry",
    "i am sorry",
    "i'm unable",
    "i am unable",
    "character count",
    "characters long",
    "characters)",
    "in 50-60",
    "50-60 characters",
];

/// Phrases by which the AI presents or comments on its intro. An intro legitimately says
/// "here's what we found", so only "here's an introduction" and its variants are rejected.
const INTRO_METADATA: &[&str] = &[
    "note:",
    "(note",
    "[note",
    "was modified",
    "was shortened",
    "was rewritten",
    "here's an introduction",
    "here is an introduction",
    "here's the introduction",
    "here is the introduction",
    "here's your introduction",
    "here is your introduction",
    "here's an intro",
    "here is an intro",
    "introduction:",
    "intro:",
    "as an ai",
    "language model",
    "word count",
    "character count",
];

/// Quote pairs the AI wraps answers in; straight and typographic.
const QUOTE_PAIRS: &[(char, char)] = &[('"', '"'), ('\'', '\''), ('“', '”'), ('‘', '’')];

/// The summary the help funnel shows, or `None` to show none: trimmed, one pair of surrounding
/// quotes removed, discarded when empty (including just `""`) or when it contains a phrase of
/// [`SUMMARY_METADATA`], and cut past 100 chars to its first 97 plus "..." (trailing whitespace
/// before the ellipsis dropped).
pub fn clean_summary(raw: &str) -> Option<String> {
    let text = unquote(raw);
    if text.is_empty() || contains_any_phrase(text, SUMMARY_METADATA) {
        return None;
    }
    Some(truncate_with_ellipsis(text, SUMMARY_KEEP, SUMMARY_LIMIT))
}

/// What the help funnel shows when the AI gives no summary: the issue's first 3 words, so the user
/// still recognises their problem; over 50 chars, its first 47 plus "...". Empty for a blank
/// issue.
pub fn fallback_summary(issue: &str) -> String {
    let words = issue
        .split_whitespace()
        .take(FALLBACK_WORDS)
        .collect::<Vec<_>>()
        .join(" ");
    truncate_with_ellipsis(&words, FALLBACK_KEEP, FALLBACK_LIMIT)
}

/// The intro the help funnel shows, or `None` to show [`DEFAULT_INTRO`]: trimmed, one pair of
/// surrounding quotes removed, discarded when empty or when it contains a phrase of
/// [`INTRO_METADATA`].
pub fn clean_intro(raw: &str) -> Option<String> {
    let text = unquote(raw);
    if text.is_empty() || contains_any_phrase(text, INTRO_METADATA) {
        return None;
    }
    Some(text.to_owned())
}

/// Removes one matching pair of surrounding quotes, so `""` becomes empty and is discarded.
fn unquote(raw: &str) -> &str {
    let trimmed = raw.trim();
    QUOTE_PAIRS
        .iter()
        .find_map(|&(open, close)| trimmed.strip_prefix(open)?.strip_suffix(close))
        .map_or(trimmed, str::trim)
}

fn contains_any_phrase(text: &str, phrases: &[&str]) -> bool {
    let normalised = normalise(text);
    phrases
        .iter()
        .any(|phrase| contains_phrase(&normalised, phrase))
}

/// Lower-cased, with typographic apostrophes made straight, so "Here’s" matches "here's".
fn normalise(text: &str) -> String {
    text.to_lowercase().replace(['’', '‘'], "'")
}

/// A phrase counts only where it starts a word (and, when it ends in a letter or digit, where it
/// ends one), so "where is" does not match "here is" nor "as an aide" match "as an ai".
fn contains_phrase(haystack: &str, phrase: &str) -> bool {
    let needs_end_boundary = is_word_char(phrase.chars().next_back());
    haystack.match_indices(phrase).any(|(start, _)| {
        let starts_word = !is_word_char(haystack[..start].chars().next_back());
        let ends_word =
            !needs_end_boundary || !is_word_char(haystack[start + phrase.len()..].chars().next());
        starts_word && ends_word
    })
}

fn is_word_char(c: Option<char>) -> bool {
    c.is_some_and(char::is_alphanumeric)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn some(text: &str) -> Option<String> {
        Some(text.to_owned())
    }

    #[test]
    fn summary_is_trimmed_and_unquoted() {
        let plain = "Outlook emails not syncing on Windows laptop";
        assert_eq!(clean_summary(plain), some(plain));
        assert_eq!(clean_summary(&format!("  {plain}\n")), some(plain));
        assert_eq!(clean_summary(&format!("\"{plain}\"")), some(plain));
        assert_eq!(clean_summary(&format!("'{plain}'")), some(plain));
        assert_eq!(clean_summary(&format!("“{plain}”")), some(plain));
        assert_eq!(clean_summary(&format!("‘{plain}’")), some(plain));
        assert_eq!(clean_summary(&format!(" \" {plain} \" ")), some(plain));
    }

    #[test]
    fn only_one_pair_of_quotes_is_removed() {
        assert_eq!(
            clean_summary("\"\"Printer offline\"\""),
            some("\"Printer offline\"")
        );
        assert_eq!(
            clean_summary("\"Printer offline"),
            some("\"Printer offline")
        );
        assert_eq!(
            clean_summary("\"Printer offline'"),
            some("\"Printer offline'")
        );
    }

    #[test]
    fn empty_or_just_quotes_is_discarded() {
        for raw in ["", "   ", "\"\"", "''", "“”", " \" \" ", "‘’"] {
            assert_eq!(clean_summary(raw), None, "{raw:?}");
        }
    }

    #[test]
    fn a_lone_quote_is_kept() {
        assert_eq!(clean_summary("\""), some("\""));
    }

    #[test]
    fn metadata_summaries_are_discarded() {
        for raw in [
            "Note: this summary was shortened",
            "Printer offline (note: 52 chars)",
            "Printer offline [Note - trimmed]",
            "The text was modified to fit",
            "Here's a summary: printer offline",
            "Here’s the summary",
            "Here is the summary of the issue",
            "Summary: printer offline",
            "As an AI, I cannot see your screen",
            "I cannot help with that request",
            "I can't help with summarising this",
            "I’m sorry, but I need more details",
            "Printer offline (54 characters)",
            "Printer offline - character count: 54",
            "Printer offline, kept in 50-60 characters",
            "NOTE: PRINTER",
        ] {
            assert_eq!(clean_summary(raw), None, "{raw:?}");
        }
    }

    #[test]
    fn phrases_inside_other_words_are_kept() {
        for raw in [
            "Keynote: slides won't sync to iCloud",
            "Where is my downloaded file on Mac",
            "There's no sound from laptop speakers",
            "Special characters not showing in Word",
            "Game character won't load in Steam",
            "I can't log into Gmail",
            "I cannot print from my laptop",
            "Alias an aide account in Outlook",
        ] {
            assert_eq!(clean_summary(raw), some(raw), "{raw:?}");
        }
    }

    #[test]
    fn long_summary_is_cut_to_exactly_100_chars() {
        let long = "x".repeat(150);
        let cleaned = clean_summary(&long).unwrap_or_default();
        assert_eq!(cleaned.chars().count(), 100);
        assert_eq!(cleaned, format!("{}...", "x".repeat(97)));
    }

    #[test]
    fn summary_of_exactly_100_chars_is_kept() {
        let exact = "y".repeat(100);
        assert_eq!(clean_summary(&exact), some(&exact));
    }

    #[test]
    fn long_summary_cut_counts_chars_not_bytes() {
        let long = "ñ".repeat(101);
        assert_eq!(clean_summary(&long), Some(format!("{}...", "ñ".repeat(97))));
        let emoji = "📧".repeat(120);
        assert_eq!(
            clean_summary(&emoji),
            Some(format!("{}...", "📧".repeat(97)))
        );
    }

    #[test]
    fn long_summary_drops_space_before_ellipsis() {
        let text = format!("{} {}", "a".repeat(96), "b".repeat(20));
        assert_eq!(clean_summary(&text), Some(format!("{}...", "a".repeat(96))));
    }

    #[test]
    fn fallback_takes_first_three_words() {
        assert_eq!(
            fallback_summary("My computer keeps freezing when I open Chrome"),
            "My computer keeps"
        );
        assert_eq!(
            fallback_summary("  wifi\n\tdown   again "),
            "wifi down again"
        );
        assert_eq!(fallback_summary("printer offline"), "printer offline");
        assert_eq!(fallback_summary(""), "");
        assert_eq!(fallback_summary("   "), "");
    }

    #[test]
    fn fallback_over_50_chars_is_cut_to_47_plus_ellipsis() {
        let word = "a".repeat(30);
        let issue = format!("{word}{word} second third fourth");
        let fallback = fallback_summary(&issue);
        assert_eq!(fallback, format!("{}...", "a".repeat(47)));
        assert_eq!(fallback.chars().count(), 50);
    }

    #[test]
    fn fallback_of_exactly_50_chars_is_kept() {
        let issue = format!("{} b c d", "a".repeat(46));
        assert_eq!(fallback_summary(&issue), format!("{} b c", "a".repeat(46)));
    }

    #[test]
    fn fallback_non_ascii() {
        assert_eq!(
            fallback_summary("ñandú 🐦 está perdido hoy"),
            "ñandú 🐦 está"
        );
        let emoji = "😀".repeat(60);
        assert_eq!(fallback_summary(&emoji), format!("{}...", "😀".repeat(47)));
    }

    #[test]
    fn intro_is_trimmed_and_unquoted() {
        let intro = "Printers go offline for a few common reasons. Here's what we found.";
        assert_eq!(clean_intro(intro), some(intro));
        assert_eq!(clean_intro(&format!("  \"{intro}\"  ")), some(intro));
        assert_eq!(clean_intro(&format!("“{intro}”")), some(intro));
    }

    #[test]
    fn intro_empty_is_none() {
        for raw in ["", "  ", "\"\"", "''", "“”"] {
            assert_eq!(clean_intro(raw), None, "{raw:?}");
        }
    }

    #[test]
    fn intro_metadata_is_discarded() {
        for raw in [
            "Note: I kept it to two sentences.",
            "Your issue is common. (Note: friendly tone)",
            "Your issue is common. [note: edited]",
            "This text was modified for clarity.",
            "Here's an introduction: your printer is offline.",
            "Here’s an introduction for you",
            "Here is an introduction to the fix.",
            "Here's the introduction you asked for.",
            "Here is your introduction:",
            "Here's an intro: relax.",
            "Introduction: printers fail often.",
            "Intro: printers fail often.",
            "As an AI, I can help.",
            "Two warm sentences (word count: 24).",
        ] {
            assert_eq!(clean_intro(raw), None, "{raw:?}");
        }
    }

    #[test]
    fn intro_ordinary_text_is_kept() {
        for raw in [
            "Here's what usually causes this, and how to fix it.",
            "There is a simple fix for this. Let's walk through it.",
            "Note-taking apps can lose sync; we'll restore it.",
            "ñandú 🐦 — no te preocupes, esto tiene solución.",
        ] {
            assert_eq!(clean_intro(raw), some(raw), "{raw:?}");
        }
    }

    #[test]
    fn default_intro_is_two_plain_sentences() {
        assert_eq!(DEFAULT_INTRO.matches(". ").count(), 1);
        assert!(DEFAULT_INTRO.ends_with('.'));
        assert_eq!(clean_intro(DEFAULT_INTRO), some(DEFAULT_INTRO));
    }
}

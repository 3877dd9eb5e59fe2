//! The spec's junk input rule. The chat funnels count junk messages and hand the conversation to
//! scripts after the second one, so the AI is not spent on keyboard mashing.

/// Messages this short, or with this few letters, carry no question the AI could answer.
const MIN_CHARS: usize = 3;
const MIN_LETTERS: usize = 3;

/// Whether a chat message is junk: under 3 characters after trimming, no letters or only 1-2 of
/// them, one character repeated (ignoring whitespace and case), or no word longer than one
/// character. Characters are counted as chars so that accented and non-Latin text is judged by
/// what the user typed, not by its byte length.
pub fn is_junk(text: &str) -> bool {
    let trimmed = text.trim();
    trimmed.chars().count() < MIN_CHARS
        || letter_count(trimmed) < MIN_LETTERS
        || is_one_repeated_char(trimmed)
        || !has_real_word(trimmed)
}

/// Any script's letters count, so "日本語" or "ñandú" are words like "wifi".
fn letter_count(text: &str) -> usize {
    text.chars().filter(|c| c.is_alphabetic()).count()
}

/// "aaaa", "A a A" and "!!!!" are mashing, whatever their length.
fn is_one_repeated_char(text: &str) -> bool {
    let mut chars = text
        .chars()
        .filter(|c| !c.is_whitespace())
        .flat_map(char::to_lowercase);
    match chars.next() {
        Some(first) => chars.all(|c| c == first),
        None => true,
    }
}

/// "a b c d" has letters enough but no word a person would write.
fn has_real_word(text: &str) -> bool {
    text.split_whitespace().any(|word| word.chars().count() > 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_examples_are_junk() {
        for text in [
            "hi", "123", "a1!", "zzzz", "a b c d", "?!?!", "", "   ", "ab", "!!!!",
        ] {
            assert!(is_junk(text), "{text:?} should be junk");
        }
    }

    #[test]
    fn real_messages_are_not_junk() {
        for text in [
            "my printer is broken",
            "wifi",
            "help",
            "  help  ",
            "ab cd",
            "My email won't sync!",
        ] {
            assert!(!is_junk(text), "{text:?} should not be junk");
        }
    }

    #[test]
    fn under_three_chars_after_trimming_is_junk() {
        assert!(is_junk("  ok  "));
        assert!(is_junk("\n\tno\n"));
        assert!(!is_junk(" yes "));
    }

    #[test]
    fn one_or_two_letters_is_junk() {
        assert!(is_junk("a1!"));
        assert!(is_junk("ab 12345"));
        assert!(is_junk("?? x ??"));
        assert!(!is_junk("abc 12345"));
    }

    #[test]
    fn one_repeated_char_ignores_case_and_whitespace() {
        assert!(is_junk("aaaa"));
        assert!(is_junk("AaAa"));
        assert!(is_junk("aa aa aa"));
        assert!(is_junk("ÑÑñ ñ"));
        assert!(!is_junk("aaab"));
    }

    #[test]
    fn no_word_longer_than_one_char_is_junk() {
        assert!(is_junk("a b c"));
        assert!(is_junk("x y z w v"));
        assert!(!is_junk("a b cd"));
    }

    #[test]
    fn non_ascii_is_judged_by_chars() {
        assert!(!is_junk("ñandú"));
        assert!(!is_junk("日本語"));
        assert!(!is_junk("Привет мир"));
        // Two letters but four bytes: still junk.
        assert!(is_junk("ñú"));
        assert!(is_junk("é é é"));
    }

    #[test]
    fn emoji_alone_is_junk_and_never_panics() {
        assert!(is_junk("😀"));
        assert!(is_junk("😀😀😀"));
        assert!(is_junk("🔥🚀💻"));
        assert!(is_junk("👍 ok"));
        assert!(!is_junk("my 💻 is slow"));
        assert!(is_junk("\u{0}\u{0}\u{0}"));
        assert!(is_junk("\u{200b}\u{200b}\u{200b}"));
    }
}

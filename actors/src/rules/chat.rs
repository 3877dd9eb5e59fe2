//! The members' chat rules from the spec (sections 4 and 5): the greeting, the affirmative-reply
//! shortcut, and how chat titles and previews are cut.

use super::text::truncate_with_ellipsis;

/// The spec's greeting of a new chat.
pub const GREETING: &str = "Hello! How can I help you today?";

/// A title over this many characters is cut.
const TITLE_LIMIT: usize = 30;
/// Messages longer than this are titled by their first words instead.
const LONG_MESSAGE_LIMIT: usize = 150;
const LONG_MESSAGE_WORDS: usize = 10;
/// The history list's cuts: 27 plus dots past 30, 57 plus dots past 60.
const LIST_TITLE_KEEP: usize = 27;
const PREVIEW_LIMIT: usize = 60;
const PREVIEW_KEEP: usize = 57;
/// The affirmative-reply shortcut: a reply under this many characters counts.
const SHORT_REPLY_CHARS: usize = 10;
const AFFIRMATIVE_WORDS: &[&str] = &["yes", "ok", "okay", "please", "sure", "help"];

/// The greeting after a funnel checkout names the issue the member came with.
pub fn greeting(funnel_issue: Option<&str>) -> String {
    match funnel_issue
        .map(str::trim)
        .filter(|issue| !issue.is_empty())
    {
        Some(issue) => format!(
            "Hello! I see you came to us about \"{issue}\". Would you like me to walk you through fixing it, step by step?"
        ),
        None => GREETING.to_owned(),
    }
}

/// The spec's shortcut after the funnel greeting: a short or affirmative first reply (yes, ok,
/// please, sure, help; under 10 characters; or no question mark) asks for the solution.
pub fn is_affirmative_reply(text: &str) -> bool {
    let text = text.trim();
    if text.is_empty() {
        return false;
    }
    let lower = text.to_lowercase();
    let says_yes = lower
        .split(|c: char| !c.is_alphanumeric())
        .any(|word| AFFIRMATIVE_WORDS.contains(&word));
    says_yes || text.chars().count() < SHORT_REPLY_CHARS || !text.contains('?')
}

/// A chat's title from its first message: the message itself up to 30 characters, else its
/// first 30 plus an ellipsis; a message over 150 characters gives its first 10 words instead.
pub fn chat_title(message: &str) -> String {
    let message = message.split_whitespace().collect::<Vec<_>>().join(" ");
    let chars = message.chars().count();
    if chars <= TITLE_LIMIT {
        return message;
    }
    if chars > LONG_MESSAGE_LIMIT {
        let words: Vec<&str> = message.split(' ').take(LONG_MESSAGE_WORDS).collect();
        return format!("{}...", words.join(" "));
    }
    truncate_with_ellipsis(&message, TITLE_LIMIT, TITLE_LIMIT)
}

/// A title as the history list shows it: past 30 characters, the first 27 plus dots.
pub fn list_title(title: &str) -> String {
    truncate_with_ellipsis(title, LIST_TITLE_KEEP, TITLE_LIMIT)
}

/// The history list's preview of a chat's last message: past 60 characters, 57 plus dots.
pub fn preview(text: &str) -> String {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    truncate_with_ellipsis(&text, PREVIEW_KEEP, PREVIEW_LIMIT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_greeting_names_the_funnel_issue_when_there_is_one() {
        assert_eq!(greeting(None), "Hello! How can I help you today?");
        assert_eq!(greeting(Some("  ")), GREETING);
        let adapted = greeting(Some("Outlook keeps asking for the password"));
        assert!(
            adapted.contains("Outlook keeps asking for the password"),
            "{adapted}"
        );
    }

    #[test]
    fn affirmative_replies_ask_for_the_solution() {
        for reply in [
            "yes",
            "Yes please!",
            "ok",
            "sure thing",
            "help me",
            "go",
            "I tried everything already",
        ] {
            assert!(is_affirmative_reply(reply), "{reply}");
        }
        for reply in ["", "   ", "How do I change my Wi-Fi password?"] {
            assert!(!is_affirmative_reply(reply), "{reply:?}");
        }
    }

    #[test]
    fn a_short_message_is_its_own_title() {
        assert_eq!(chat_title("Printer offline"), "Printer offline");
        assert_eq!(chat_title(&"a".repeat(30)), "a".repeat(30));
    }

    #[test]
    fn a_longer_message_is_cut_at_30_characters() {
        let title = chat_title("My computer keeps freezing when I open Chrome");
        assert_eq!(title, "My computer keeps freezing whe...");
        assert_eq!(title.chars().count(), 33);
    }

    #[test]
    fn a_message_over_150_characters_gives_its_first_10_words() {
        let message = "one two three four five six seven eight nine ten eleven ".repeat(4);
        assert!(message.chars().count() > 150);
        assert_eq!(
            chat_title(&message),
            "one two three four five six seven eight nine ten..."
        );
    }

    #[test]
    fn the_history_list_cuts_titles_at_30_and_previews_at_60() {
        assert_eq!(list_title("Short title"), "Short title");
        // The cut drops the space before the dots.
        let cut = list_title("My computer keeps freezing whe...");
        assert_eq!(cut, "My computer keeps freezing...");
        assert_eq!(preview("Fine."), "Fine.");
        let long = preview(&"word ".repeat(20));
        assert_eq!(long.chars().count(), 60);
        assert!(long.ends_with("..."));
    }
}

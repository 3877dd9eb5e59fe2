//! The provider used when no AI service is configured (and behind a failing one): it works from
//! the visitor's own words and the help library.

use std::sync::Arc;

use std::time::Duration;

use futures_util::future::BoxFuture;
use futures_util::stream::BoxStream;
use futures_util::{FutureExt, StreamExt};

use super::library::{HelpLibrary, STAND_IN_NOTE};
use super::{Ai, AiError, AiMessage, AiPurpose, AiRequest, Role};

/// The summary rule of the spec ("over 100 characters is cut to 97 plus an ellipsis", applied by
/// the help funnel's `clean_summary` to whatever the AI returns). This provider keeps the whole
/// first sentence of the issue when it fits, since a complete sentence reads best after
/// "Solution Found:", and cuts a longer one on a word boundary itself, with the ellipsis, so a
/// summary never stops mid-sentence or mid-word without one.
const SUMMARY_LIMIT: usize = 100;
const SUMMARY_KEEP: usize = 97;
const ELLIPSIS: &str = "...";

/// A streamed answer comes a few words at a time, paced like someone typing quickly, so the
/// members' chat reads the same (and Stop works the same) offline as with an AI service.
const STREAM_WORDS_PER_PIECE: usize = 4;
const STREAM_PAUSE: Duration = Duration::from_millis(40);

/// Punctuation that ends a clause; a summary never ends with it. Closing brackets and quotes are
/// left alone, or "My app (v2)" would lose its ")".
const TRAILING_PUNCTUATION: &[char] = &['.', ',', ';', ':', '!', '?', '…', '-', '–', '—'];

/// Answers without a network: the issue summary is extracted from the visitor's last message;
/// members' questions (chat, task help, the funnel solution) get the help library's best guide;
/// the funnels' replies and intro are declined with [`AiError::Offline`] so the caller uses its
/// script or default text.
///
/// As the configured provider its answers start with the guide: the members' chat shows one
/// calm notice that answers come from the help library. Standing in for a failing service
/// ([`OfflineAi::standing_in`]) it says so first, since the chat shows no notice then.
#[derive(Debug, Clone, Default)]
pub struct OfflineAi {
    library: Arc<HelpLibrary>,
    stand_in: bool,
}

impl OfflineAi {
    pub fn new(library: Arc<HelpLibrary>) -> Self {
        Self {
            library,
            stand_in: false,
        }
    }

    /// The provider behind an AI service: members' answers start with [`STAND_IN_NOTE`].
    pub fn standing_in(library: Arc<HelpLibrary>) -> Self {
        Self {
            library,
            stand_in: true,
        }
    }

    fn member_answer(&self, messages: &[AiMessage]) -> String {
        let answer = self.library.answer(&question(messages));
        if self.stand_in {
            format!("{STAND_IN_NOTE}\n\n{answer}")
        } else {
            answer
        }
    }
}

impl Ai for OfflineAi {
    fn complete(&self, request: AiRequest) -> BoxFuture<'static, Result<String, AiError>> {
        let answer = match request.purpose {
            AiPurpose::IssueSummary => summarise_issue(&request.messages).ok_or(AiError::Offline),
            AiPurpose::MemberChat | AiPurpose::TaskHelp | AiPurpose::FunnelSolution => {
                Ok(self.member_answer(&request.messages))
            }
            AiPurpose::FunnelFollowUp | AiPurpose::FunnelIntro => Err(AiError::Offline),
        };
        futures_util::future::ready(answer).boxed()
    }

    fn stream(&self, request: AiRequest) -> BoxStream<'static, Result<String, AiError>> {
        let answer = self.complete(request);
        futures_util::stream::once(answer)
            .flat_map(|answer| match answer {
                Ok(text) => futures_util::stream::iter(pieces(&text).into_iter().map(Ok))
                    .enumerate()
                    .then(|(index, piece)| async move {
                        if index > 0 {
                            tokio::time::sleep(STREAM_PAUSE).await;
                        }
                        piece
                    })
                    .boxed(),
                Err(error) => futures_util::stream::once(async { Err(error) }).boxed(),
            })
            .boxed()
    }
}

/// `text` in pieces of a few words, each with the whitespace after it, so they join back into it.
fn pieces(text: &str) -> Vec<String> {
    let words: Vec<&str> = text.split_inclusive(char::is_whitespace).collect();
    words
        .chunks(STREAM_WORDS_PER_PIECE)
        .map(|chunk| chunk.concat())
        .collect()
}

/// What the member is asking: their last message, with the one before it when the last is a
/// short reply ("yes", "still not working") that names no problem by itself.
fn question(messages: &[AiMessage]) -> String {
    let mut asked = messages
        .iter()
        .rev()
        .filter(|message| message.role == Role::User)
        .map(|message| message.content.as_str());
    let last = asked.next().unwrap_or_default();
    match asked.next() {
        Some(before) if last.split_whitespace().count() < 4 => format!("{before} {last}"),
        _ => last.to_owned(),
    }
}

/// The first sentence of the last user message, tidied into a title-like line: whole when it
/// has at most [`SUMMARY_LIMIT`] characters, else cut on a word boundary to at most
/// [`SUMMARY_KEEP`] plus [`ELLIPSIS`]. `None` when there is no user text to work from.
fn summarise_issue(messages: &[AiMessage]) -> Option<String> {
    let text = messages
        .iter()
        .rev()
        .find(|message| message.role == Role::User)?
        .content
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let sentence = trim_trailing_punctuation(first_sentence(&text));
    let summary = if sentence.chars().count() <= SUMMARY_LIMIT {
        sentence.to_owned()
    } else {
        let kept = trim_trailing_punctuation(cut_on_word_boundary(sentence, SUMMARY_KEEP));
        format!("{kept}{ELLIPSIS}")
    };
    let mut chars = summary.chars();
    let first = chars.next()?;
    Some(first.to_uppercase().chain(chars).collect())
}

/// Up to the first `.`, `!`, `?` or `…` that is followed by a space or ends the text, so that
/// "v1.2" or "e-mail.com" do not end a sentence.
fn first_sentence(text: &str) -> &str {
    let mut chars = text.char_indices().peekable();
    while let Some((index, c)) = chars.next() {
        let ends_sentence = matches!(c, '.' | '!' | '?' | '…')
            && chars.peek().is_none_or(|(_, next)| next.is_whitespace());
        if ends_sentence {
            return &text[..index + c.len_utf8()];
        }
    }
    text
}

fn trim_trailing_punctuation(text: &str) -> &str {
    text.trim_end_matches(|c: char| c.is_whitespace() || TRAILING_PUNCTUATION.contains(&c))
}

/// At most `max_chars` characters, ending at a word's end. A single word longer than that is cut
/// hard, since there is no better place to cut it.
fn cut_on_word_boundary(text: &str, max_chars: usize) -> &str {
    let Some((limit, _)) = text.char_indices().nth(max_chars) else {
        return text;
    };
    let kept = &text[..limit];
    if text[limit..].starts_with(char::is_whitespace) {
        return kept;
    }
    match kept.rfind(char::is_whitespace) {
        Some(space) => &kept[..space],
        None => kept,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    async fn summary(messages: Vec<AiMessage>) -> Result<String, AiError> {
        OfflineAi::default()
            .complete(AiRequest {
                purpose: AiPurpose::IssueSummary,
                messages,
                timeout: Duration::from_secs(3),
            })
            .await
    }

    async fn summary_of(text: &str) -> String {
        summary(vec![AiMessage::user(text)])
            .await
            .expect("a summary")
    }

    #[tokio::test]
    async fn the_summary_is_the_first_sentence_without_its_full_stop() {
        assert_eq!(
            summary_of("My printer shows error 5. I tried restarting it twice.").await,
            "My printer shows error 5"
        );
        assert_eq!(
            summary_of("why won't my laptop charge?? it is plugged in").await,
            "Why won't my laptop charge"
        );
    }

    #[tokio::test]
    async fn whitespace_is_collapsed_and_the_first_letter_capitalised() {
        assert_eq!(
            summary_of("  \n my   wifi\tkeeps\n\ndropping  ").await,
            "My wifi keeps dropping"
        );
        assert_eq!(summary_of("élan app crashes").await, "Élan app crashes");
    }

    #[tokio::test]
    async fn dots_inside_words_do_not_end_the_sentence() {
        assert_eq!(
            summary_of("Version 2.1 of the app will not open. Help").await,
            "Version 2.1 of the app will not open"
        );
    }

    #[tokio::test]
    async fn closing_brackets_survive_the_punctuation_trim() {
        assert_eq!(
            summary_of("The app (v2) freezes on start...").await,
            "The app (v2) freezes on start"
        );
    }

    #[tokio::test]
    async fn a_first_sentence_that_fits_the_line_is_kept_whole() {
        let text = "I cannot get my new wireless printer to connect to the office network, \
                    whatever I try. It is an HP.";
        let summary = summary_of(text).await;
        assert_eq!(
            summary,
            "I cannot get my new wireless printer to connect to the office network, whatever I try"
        );
        // Exactly the limit: still whole, and the funnel's rule leaves it alone.
        let hundred = "a".repeat(49) + " " + &"b".repeat(50);
        assert_eq!(hundred.chars().count(), SUMMARY_LIMIT);
        assert_eq!(summary_of(&hundred).await, format!("A{}", &hundred[1..]));
    }

    /// An everyday run-on message: no full stop for well over 100 characters.
    const RUN_ON: &str = "my printer was working fine yesterday but today it keeps saying \
                          offline and i have turned it off and on again and nothing happens";

    #[tokio::test]
    async fn a_longer_sentence_is_cut_on_a_word_boundary_with_an_ellipsis() {
        let summary = summary_of(RUN_ON).await;
        assert_eq!(
            summary,
            "My printer was working fine yesterday but today it keeps saying offline and i have \
             turned it off..."
        );
        assert!(summary.chars().count() <= SUMMARY_LIMIT);
        let kept = summary
            .strip_suffix(ELLIPSIS)
            .expect("ends with the ellipsis");
        // Cut between words, never inside one.
        assert!(RUN_ON[1..].starts_with(&kept[1..]));
        assert!(RUN_ON[kept.len()..].starts_with(' '));
    }

    #[tokio::test]
    async fn the_funnels_summary_rule_leaves_the_offline_summary_as_it_is() {
        for text in [RUN_ON, "Version 2.1 of the app will not open. Help"] {
            let summary = summary_of(text).await;
            assert_eq!(
                helpnow_actors::rules::summary::clean_summary(&summary),
                Some(summary)
            );
        }
    }

    #[tokio::test]
    async fn a_summary_never_ends_mid_sentence_without_an_ellipsis() {
        let texts = [
            RUN_ON,
            "My phone, my tablet, my laptop, my watch, my speaker, my headphones, my printer, my \
             camera, my television and my radio all stopped",
            "short",
            "The app (v2) freezes on start...",
        ];
        for text in texts {
            let summary = summary_of(text).await;
            let whole = trim_trailing_punctuation(first_sentence(text));
            assert!(
                summary.ends_with(ELLIPSIS) || summary[1..] == whole[1..],
                "{text:?} gave {summary:?}"
            );
        }
    }

    #[tokio::test]
    async fn a_cut_just_before_a_space_keeps_the_whole_last_word() {
        // 97 characters exactly, then more words: the cut falls on the space.
        let kept = "a".repeat(10) + " " + &"b".repeat(86);
        assert_eq!(kept.chars().count(), SUMMARY_KEEP);
        let summary = summary_of(&format!("{kept} and more words")).await;
        assert_eq!(summary, format!("A{}...", &kept[1..]));
    }

    #[tokio::test]
    async fn a_cut_never_leaves_a_trailing_comma_before_the_ellipsis() {
        let text = "My phone, my tablet, my laptop, my watch, my speaker, my headphones, my \
                    printer, my new camera, television and radio";
        assert_eq!(
            summary_of(text).await,
            "My phone, my tablet, my laptop, my watch, my speaker, my headphones, my printer, \
             my new camera..."
        );
    }

    #[tokio::test]
    async fn one_very_long_word_is_cut_hard() {
        let word = "x".repeat(120);
        let summary = summary_of(&word).await;
        assert_eq!(summary, "X".to_owned() + &"x".repeat(96) + "...");
        assert_eq!(summary.chars().count(), SUMMARY_LIMIT);
    }

    #[tokio::test]
    async fn multibyte_text_is_cut_on_characters_not_bytes() {
        let text = "ü".repeat(60) + " " + &"ö".repeat(60);
        let summary = summary_of(&text).await;
        assert_eq!(summary, "Ü".to_owned() + &"ü".repeat(59) + "...");
    }

    #[tokio::test]
    async fn the_last_user_message_is_summarised() {
        let messages = vec![
            AiMessage::system("Summarise the issue in 50-60 characters."),
            AiMessage::user("My email stopped syncing."),
            AiMessage::assistant("Which app do you use?"),
            AiMessage::user("outlook on windows keeps asking for my password. Again!"),
        ];
        assert_eq!(
            summary(messages).await,
            Ok("Outlook on windows keeps asking for my password".to_owned())
        );
    }

    #[tokio::test]
    async fn no_user_text_means_no_summary() {
        assert_eq!(
            summary(vec![AiMessage::system("Summarise.")]).await,
            Err(AiError::Offline)
        );
        assert_eq!(
            summary(vec![AiMessage::user(" ... !? ")]).await,
            Err(AiError::Offline)
        );
    }

    #[tokio::test]
    async fn members_get_the_library_guide_which_says_so_only_when_standing_in() {
        let library = crate::ai::library::HelpLibrary::new(vec![
            crate::ai::library::parse_article(
                "printer",
                "---\ntitle: Printer says offline\nkeywords: printer, offline\n---\nWhy.\n\n1. Turn it off and on.\n",
            )
            .expect("parses"),
        ]);
        let offline = OfflineAi::new(Arc::new(library));
        for purpose in [
            AiPurpose::MemberChat,
            AiPurpose::TaskHelp,
            AiPurpose::FunnelSolution,
        ] {
            let answer = offline
                .complete(AiRequest {
                    purpose,
                    messages: vec![
                        AiMessage::user("My printer is offline again."),
                        AiMessage::assistant("Is it switched on?"),
                        AiMessage::user("yes it is"),
                    ],
                    timeout: Duration::from_secs(3),
                })
                .await
                .expect("an answer");
            assert!(
                answer.starts_with("**Printer says offline**\n\nWhy.\n\n1. Turn it off and on."),
                "{purpose:?}: {answer}"
            );
            let standing_in = OfflineAi::standing_in(offline.library.clone())
                .complete(AiRequest {
                    purpose,
                    messages: vec![AiMessage::user("My printer is offline again.")],
                    timeout: Duration::from_secs(3),
                })
                .await
                .expect("an answer");
            assert_eq!(
                standing_in,
                format!("{STAND_IN_NOTE}\n\n{answer}"),
                "{purpose:?}"
            );
        }
    }

    #[tokio::test]
    async fn the_funnels_replies_and_intro_are_declined() {
        for purpose in [AiPurpose::FunnelFollowUp, AiPurpose::FunnelIntro] {
            let answer = OfflineAi::default()
                .complete(AiRequest {
                    purpose,
                    messages: vec![AiMessage::user("My printer is broken.")],
                    timeout: Duration::from_secs(3),
                })
                .await;
            assert_eq!(answer, Err(AiError::Offline), "{purpose:?}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_streamed_answer_comes_a_few_words_at_a_time_and_joins_back() {
        let library = crate::ai::library::HelpLibrary::new(vec![
            crate::ai::library::parse_article(
                "printer",
                "---\ntitle: Printer says offline\nkeywords: printer, offline\n---\nWhy it happens.\n\n1. Turn it off and on.\n2. Check the cable.\n",
            )
            .expect("parses"),
        ]);
        let offline = OfflineAi::new(Arc::new(library));
        let request = AiRequest {
            purpose: AiPurpose::MemberChat,
            messages: vec![AiMessage::user("my printer is offline")],
            timeout: Duration::from_secs(30),
        };
        let whole = offline.complete(request.clone()).await.expect("an answer");
        let started = tokio::time::Instant::now();
        let pieces: Vec<String> = offline
            .stream(request)
            .map(|piece| piece.expect("a piece"))
            .collect()
            .await;
        assert!(pieces.len() > 3, "{pieces:?}");
        assert_eq!(pieces.concat(), whole);
        assert_eq!(started.elapsed(), STREAM_PAUSE * (pieces.len() as u32 - 1));

        let declined = offline
            .stream(AiRequest {
                purpose: AiPurpose::FunnelIntro,
                messages: vec![AiMessage::user("hi")],
                timeout: Duration::from_secs(3),
            })
            .collect::<Vec<_>>()
            .await;
        assert_eq!(declined, vec![Err(AiError::Offline)]);
    }
}

//! The help funnel's step 1 -> 2: the visitor's issue becomes a short summary and a friendly
//! intro. Both AI calls run at once; each has its fallback (the spec's first-3-words summary, the
//! default intro after 3 s), so the visitor always reaches step 2.

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use helpnow_actors::funnel::Attribution;
use helpnow_actors::ports::{Ai, AiError, AiMessage, AiPurpose, AiRequest};
use helpnow_actors::rules::headline::help_headline;
use helpnow_actors::rules::summary::{
    DEFAULT_INTRO, MIN_ISSUE_CHARS, clean_intro, clean_summary, fallback_summary,
};
use rand::Rng;
use serde::Serialize;
use serde_json::{Value, json};

/// The spec's intro time-out.
pub const INTRO_TIMEOUT: Duration = Duration::from_secs(3);
/// The summary has no spec time-out; it may not hold the visitor longer than the intro by much.
pub const SUMMARY_TIMEOUT: Duration = Duration::from_secs(5);
/// Longer issues are cut before they reach the AI or the store.
pub const MAX_ISSUE_CHARS: usize = 4000;

const NO_SALES: &str = "Do not mention prices, money, trials, subscriptions, payments, plans, \
offers or anything that sounds like sales or marketing.";

fn summary_prompt() -> String {
    format!(
        "Summarise the computer or online problem the user describes in 50 to 60 characters, as \
a short plain title (for example: Outlook keeps asking for the password). Reply with the title \
only: no quotes, no notes, no explanation. {NO_SALES}"
    )
}

/// The spec's intro prompt has a formal and a friendly variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum IntroStyle {
    Formal,
    Friendly,
}

fn intro_prompt(style: IntroStyle) -> String {
    let voice = match style {
        IntroStyle::Formal => "a courteous, professional tone",
        IntroStyle::Friendly => "a warm, friendly and reassuring tone",
    };
    format!(
        "Write a 2-3 sentence introduction, in {voice}, for a person who is not technical and \
has just described the problem below. Acknowledge their problem in plain words and tell them the \
steps that follow will help them fix it. Do not give the steps themselves. Reply with the \
introduction only: no heading, no notes, no quotes. {NO_SALES}"
    )
}

/// One AI call, for the debug overlay.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AiCallEvent {
    pub time: DateTime<Utc>,
    pub kind: &'static str,
    /// `ok`, `fallback` (the answer was unusable), `timeout`, `offline` or `error`.
    pub outcome: &'static str,
    pub duration_ms: u64,
}

/// What step 2 shows.
#[derive(Debug, Clone)]
pub struct HelpAnswer {
    pub summary: Option<String>,
    pub intro: String,
    pub intro_style: IntroStyle,
    pub ai_events: Vec<AiCallEvent>,
}

impl HelpAnswer {
    /// The spec's help funnel record (section 3).
    pub fn record(
        &self,
        issue: &str,
        headline: &str,
        attribution: &Attribution,
        now: DateTime<Utc>,
    ) -> Value {
        json!({
            "funnel": "help_funnel",
            "timestamp": now,
            "userIssue": self.summary,
            "rawUserInput": issue,
            "aiIntro": self.intro,
            "campaignid": attribution.campaignid,
            "keyword": attribution.keyword,
            "headline": headline,
        })
    }
}

/// The help funnel's headline for this visit.
pub fn headline(attribution: &Attribution) -> String {
    help_headline(attribution.keyword.as_deref())
}

async fn call(
    ai: &dyn Ai,
    kind: &'static str,
    purpose: AiPurpose,
    system: String,
    issue: &str,
    timeout: Duration,
) -> (Result<String, AiError>, AiCallEvent) {
    let started = Instant::now();
    let time = Utc::now();
    let request = AiRequest {
        purpose,
        messages: vec![AiMessage::system(system), AiMessage::user(issue)],
        timeout,
    };
    let result = tokio::time::timeout(timeout, ai.complete(request))
        .await
        .unwrap_or(Err(AiError::Timeout));
    let outcome = match &result {
        Ok(_) => "ok",
        Err(AiError::Timeout) => "timeout",
        Err(AiError::Offline) => "offline",
        Err(_) => "error",
    };
    let event = AiCallEvent {
        time,
        kind,
        outcome,
        duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
    };
    (result, event)
}

/// Summarises the issue (unless it is under 5 characters) and writes the intro, at once.
/// `default_intro`: what step 2 says when the AI's intro is unusable (the routed flow's; none:
/// the spec's default).
pub async fn answer(ai: Arc<dyn Ai>, issue: &str, default_intro: Option<String>) -> HelpAnswer {
    let style = if rand::rng().random_bool(0.5) {
        IntroStyle::Friendly
    } else {
        IntroStyle::Formal
    };
    let summarise = issue.trim().chars().count() >= MIN_ISSUE_CHARS;
    let summary_call = async {
        if summarise {
            Some(
                call(
                    ai.as_ref(),
                    "summary",
                    AiPurpose::IssueSummary,
                    summary_prompt(),
                    issue,
                    SUMMARY_TIMEOUT,
                )
                .await,
            )
        } else {
            None
        }
    };
    let intro_call = call(
        ai.as_ref(),
        "intro",
        AiPurpose::FunnelIntro,
        intro_prompt(style),
        issue,
        INTRO_TIMEOUT,
    );
    let (summary, (intro, mut intro_event)) = tokio::join!(summary_call, intro_call);

    let mut ai_events = Vec::new();
    let summary = summary.map(|(result, mut event)| {
        let cleaned = result.ok().and_then(|text| clean_summary(&text));
        if cleaned.is_none() && event.outcome == "ok" {
            event.outcome = "fallback";
        }
        ai_events.push(event);
        cleaned.unwrap_or_else(|| fallback_summary(issue))
    });
    let cleaned_intro = intro.ok().and_then(|text| clean_intro(&text));
    if cleaned_intro.is_none() && intro_event.outcome == "ok" {
        intro_event.outcome = "fallback";
    }
    ai_events.push(intro_event);
    HelpAnswer {
        summary: summary.filter(|s| !s.is_empty()),
        intro: cleaned_intro
            .or(default_intro)
            .unwrap_or_else(|| DEFAULT_INTRO.to_owned()),
        intro_style: style,
        ai_events,
    }
}

#[cfg(test)]
mod tests {
    use futures_util::FutureExt;
    use futures_util::future::BoxFuture;

    use super::*;

    /// Answers by purpose.
    struct ByPurpose {
        summary: Result<String, AiError>,
        intro: Result<String, AiError>,
        intro_delay: Duration,
    }

    impl Ai for ByPurpose {
        fn complete(&self, request: AiRequest) -> BoxFuture<'static, Result<String, AiError>> {
            let (answer, delay) = match request.purpose {
                AiPurpose::IssueSummary => (self.summary.clone(), Duration::ZERO),
                _ => (self.intro.clone(), self.intro_delay),
            };
            async move {
                tokio::time::sleep(delay).await;
                answer
            }
            .boxed()
        }
    }

    fn ai(summary: Result<&str, AiError>, intro: Result<&str, AiError>) -> Arc<dyn Ai> {
        Arc::new(ByPurpose {
            summary: summary.map(str::to_owned),
            intro: intro.map(str::to_owned),
            intro_delay: Duration::ZERO,
        })
    }

    #[tokio::test]
    async fn a_good_answer_is_kept() {
        let answer = answer(
            ai(
                Ok("\"Outlook keeps asking for the password\""),
                Ok("That sounds frustrating. The steps below will help."),
            ),
            "my outlook keeps asking me for my password every time",
            None,
        )
        .await;
        assert_eq!(
            answer.summary.as_deref(),
            Some("Outlook keeps asking for the password")
        );
        assert_eq!(
            answer.intro,
            "That sounds frustrating. The steps below will help."
        );
        assert_eq!(answer.ai_events.len(), 2);
        assert!(answer.ai_events.iter().all(|e| e.outcome == "ok"));
    }

    #[tokio::test]
    async fn unusable_answers_fall_back() {
        let answer = answer(
            ai(
                Ok("Note: this summary was shortened"),
                Ok("Here's an introduction: hello"),
            ),
            "My computer keeps freezing when I open Chrome",
            None,
        )
        .await;
        assert_eq!(answer.summary.as_deref(), Some("My computer keeps"));
        assert_eq!(answer.intro, DEFAULT_INTRO);
        assert!(answer.ai_events.iter().all(|e| e.outcome == "fallback"));
    }

    #[tokio::test]
    async fn an_offline_ai_still_gives_step_2() {
        let answer = answer(
            ai(Err(AiError::Offline), Err(AiError::Offline)),
            "printer offline again",
            None,
        )
        .await;
        assert_eq!(answer.summary.as_deref(), Some("printer offline again"));
        assert_eq!(answer.intro, DEFAULT_INTRO);
        // The routed flow's intro, when it has one.
        let answer = super::answer(
            ai(Err(AiError::Offline), Err(AiError::Offline)),
            "printer offline again",
            Some("The flow's own intro.".into()),
        )
        .await;
        assert_eq!(answer.intro, "The flow's own intro.");
    }

    #[tokio::test]
    async fn a_short_issue_is_not_summarised() {
        let answer = answer(ai(Ok("never asked"), Ok("An intro.")), " wifi ", None).await;
        assert_eq!(answer.summary, None);
        assert_eq!(answer.ai_events.len(), 1, "only the intro was asked for");
    }

    #[tokio::test(start_paused = true)]
    async fn the_intro_gives_up_after_3_seconds() {
        let slow: Arc<dyn Ai> = Arc::new(ByPurpose {
            summary: Ok("Printer is offline".into()),
            intro: Ok("Too late.".into()),
            intro_delay: Duration::from_secs(10),
        });
        let started = tokio::time::Instant::now();
        let answer = answer(slow, "my printer is offline", None).await;
        assert_eq!(answer.intro, DEFAULT_INTRO);
        assert!(started.elapsed() < Duration::from_millis(3100));
        assert_eq!(answer.ai_events.last().map(|e| e.outcome), Some("timeout"));
    }
}
